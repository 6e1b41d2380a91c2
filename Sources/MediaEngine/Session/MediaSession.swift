import Foundation
import Synchronization

/// The media of one P2P call: our audio (and video) to the peer, the peer's back to us,
/// each direction an SRTP session under its sender's own key (SDES-style: each side
/// announces its key and where it listens through signaling).
///
/// Sockets: one to receive on (its address is a candidate in `local`), one to send from.
/// `start(remote:)` starts the receiver at once (it also answers the peer's STUN checks),
/// then checks connectivity to the peer's candidates with STUN binding requests (which
/// measure the first RTT), then sends. Two threads: receive (jitter buffers, decoding,
/// feedback) and send (capture pacing, encoding, answering feedback). Events come from
/// both threads through `events`; keep the handler short.
public final class MediaSession: Sendable {
    /// What one side announces: where it receives, its SRTP key, the SSRCs it sends
    /// from, and the token its receiver answers STUN checks for. Holds a key: never print.
    public struct Endpoint: Sendable, Hashable, CustomStringConvertible {
        public var candidates: [SocketAddress]
        public var keying: SRTPKeyingMaterial
        public var audioSSRC: UInt32
        public var videoSSRC: UInt32?
        public var checkToken: String

        public init(candidates: [SocketAddress], keying: SRTPKeyingMaterial, audioSSRC: UInt32, videoSSRC: UInt32?, checkToken: String) {
            self.candidates = candidates
            self.keying = keying
            self.audioSSRC = audioSSRC
            self.videoSSRC = videoSSRC
            self.checkToken = checkToken
        }

        public var description: String { "Endpoint(\(candidates), key redacted)" }
    }

    public struct Configuration {
        public var audio: any AudioSource
        public var video: (any VideoSource)?
        /// Where remote audio plays (nil: nowhere; `remoteAudio` still sees it).
        public var audioSink: (any AudioSink)?
        /// Address to bind; "0.0.0.0" offers every IPv4 interface as a candidate.
        public var host = "0.0.0.0"
        public var audioBitrate = 32_000
        public var videoBitrate = 800_000
        public var profile: SRTPProfile = .aesCM128HMACSHA1_80
        /// Longest wait for a STUN answer from the peer.
        public var connectTimeout: Duration = .seconds(10)
        /// No media from the peer for this long: `disconnected`.
        public var mediaTimeout: Duration = .seconds(10)
        /// The app's capture hooks (audio and video processing before encoding).
        public var captureHooks: CaptureHooks?
        /// Sees every block of decoded remote audio, on the receive thread.
        public var remoteAudio: (@Sendable (UnsafeBufferPointer<Int16>) -> Void)?

        public init(audio: any AudioSource, video: (any VideoSource)?) {
            self.audio = audio
            self.video = video
        }
    }

    public enum Event: Sendable {
        /// The peer answered a connectivity check; media flows.
        case connected(remote: SocketAddress, roundTripTime: Duration)
        /// No candidate answered within `connectTimeout`.
        case connectFailed(String)
        /// Media from the peer stopped for `mediaTimeout`.
        case disconnected(String)
        /// Once a second: what arrived so far.
        case statistics(MediaReceiver.Statistics)
        case remoteVideoFrame(VideoFrame)
        case localVideoFrame(VideoFrame)
        /// Level of the audio being sent (after mute), 0...1 (RMS of full scale).
        case localAudioLevel(Double)
        /// Level of the audio being played, 0...1.
        case remoteAudioLevel(Double)
        /// The audio-file mix task played its last pass.
        case audioMixTaskCompleted(AudioFileMixTask)
        /// A WebM recording of `target` began writing to `path`.
        case recordStarted(RecordingTarget, path: String)
        /// A recording ended early (a full disk); what was written stays playable.
        case recordError(RecordingTarget, RecordingError)
        /// A recording was stopped and its file closed.
        case recordStopped(RecordingTarget, MediaRecorder.Summary)
        /// The recorded video's picture size changed (the recording goes on).
        case recordVideoSizeChanged(RecordingTarget, width: Int, height: Int)
    }

    /// Whose media a per-user recording holds.
    public enum RecordingTarget: Sendable, Hashable, CustomStringConvertible {
        /// What this side sends.
        case local
        /// What the peer sends.
        case remote

        public var description: String { self == .local ? "local" : "remote" }
    }

    /// Final figures of both directions.
    public struct Summary: Sendable {
        public var sent: MediaSender.Statistics?
        public var received: MediaReceiver.Statistics?
        public var connectivity: ConnectivityCheck.Result?
        /// Why a direction stopped early, if one did.
        public var failure: String?
    }

    /// What to announce to the peer.
    public let local: Endpoint
    /// Live mute, video pause and bitrate cap.
    public let controls = SenderControls()

    private let receiveSocket: UDPSocket
    private let sendSocket: UDPSocket
    private let parts: Parts
    private let stopping = Atomic<Bool>(false)
    private let state = Mutex(State())

    struct State {
        var started = false
        var remote: Endpoint?
        var summary = Summary()
        var threads = 0
    }

    /// The sources and sinks, handed from the caller's thread to the session's two
    /// threads: the sender thread alone uses `audio` and `video`, the receiver thread alone
    /// `audioSink`; `start` runs once. That single ownership is what makes this safe.
    final class Parts: @unchecked Sendable {
        let configuration: Configuration
        init(_ configuration: Configuration) { self.configuration = configuration }
    }

    private let finished = DispatchSemaphore(value: 0)
    private let sinkHandoff = Mutex<SinkHandoff?>(nil)

    /// A sink handed from the app's thread to the receive thread, which alone uses it from
    /// then on (why the unchecked Sendable is safe).
    final class SinkHandoff: @unchecked Sendable {
        let sink: (any AudioSink)?
        init(_ sink: (any AudioSink)?) { self.sink = sink }
    }

    /// Plays remote audio on `sink` from the next block on (nil: nowhere); the old sink is closed.
    public func replaceAudioSink(_ sink: sending (any AudioSink)?) {
        let box = SinkHandoff(sink)
        sinkHandoff.withLock { $0 = box }
    }

    /// Sends pictures from `source` from the next frame on (see `SenderControls.replaceVideoSource`).
    public func replaceVideoSource(_ source: sending any VideoSource) {
        controls.replaceVideoSource(source)
    }

    private let mixTask = Mutex<AudioFileMixTask?>(nil)
    private let localRecording = Mutex<MediaRecorder?>(nil)
    private let remoteRecording = Mutex<MediaRecorder?>(nil)
    private let remoteKeyframeWanted = Atomic<Bool>(false)
    private let eventHandler = Mutex<(@Sendable (Event) -> Void)?>(nil)
    private let localAudioChannels: Int

    private func withRecording<R: Sendable>(_ target: RecordingTarget, _ body: (inout sending MediaRecorder?) -> sending R) -> R {
        target == .local ? localRecording.withLock(body) : remoteRecording.withLock(body)
    }

    /// Records `target`'s media to WebM as the call carries it (Opus and VP8, not
    /// re-encoded), from the next keyframe on; a keyframe is asked for at once. Events:
    /// `recordStarted` now, `recordVideoSizeChanged` and `recordError` as they happen,
    /// `recordStopped` at `stopRecording` or when the session stops.
    /// - Parameters:
    ///   - path: A .webm file; nil picks one in the temporary directory. Its directory
    ///     must exist.
    ///   - videoBitrate: For this side's video only: record it re-encoded at this rate
    ///     (from the captured pictures) instead of as sent. Nil, or the rate being sent,
    ///     records what is sent.
    /// - Returns: The path recorded to.
    /// - Throws: `RecordingError`: already recording that user, a remote user before the
    ///   call started, a missing directory, a file that cannot be created.
    @discardableResult
    public func startRecording(_ target: RecordingTarget, path: String? = nil, videoBitrate: Int? = nil) throws(RecordingError) -> String {
        let chosen = path ?? OutputFile.temporary("\(target)", extension: "webm")
        if let videoBitrate, !VP8.bitrates.contains(videoBitrate) {
            throw RecordingError(.invalidOptions, "recording \(chosen): video bitrate \(videoBitrate) b/s is outside \(VP8.bitrates)")
        }
        let (audioChannels, video): (Int?, Bool)
        switch target {
        case .local:
            (audioChannels, video) = (localAudioChannels, sendsVideo)
        case .remote:
            if videoBitrate != nil {
                throw RecordingError(.invalidOptions, "recording \(chosen): the peer's video is recorded as received; a video bitrate applies to this side only")
            }
            guard let remote = state.withLock({ $0.remote }) else {
                throw RecordingError(.nothingToRecord, "recording \(chosen): the call has not started; the peer's media is not known yet")
            }
            (audioChannels, video) = (1, remote.videoSSRC != nil)
        }
        if let running = withRecording(target, { $0 }) {
            throw RecordingError(.alreadyRecording, "a recording of the \(target) user is already running (\(running.path))")
        }
        let sendingRate = controls.current.videoBitrate ?? parts.configuration.videoBitrate
        let reencode = target == .local && video && videoBitrate != nil && videoBitrate != sendingRate ? videoBitrate : nil
        let recorder = try MediaRecorder(path: chosen, audioChannels: audioChannels, video: video, reencodeVideoAt: reencode) { [self] notice in
            switch notice {
            case .keyframeNeeded:
                if target == .local {
                    controls.update { $0.keyframeRequested = true }
                } else {
                    remoteKeyframeWanted.store(true, ordering: .relaxed)
                }
            case .videoSizeChanged(let width, let height):
                eventHandler.withLock { $0 }?(.recordVideoSizeChanged(target, width: width, height: height))
            case .failed(let error):
                eventHandler.withLock { $0 }?(.recordError(target, error))
            }
        }
        let raced = withRecording(target) { current in
            guard current == nil else { return true }
            current = recorder
            return false
        }
        if raced {
            recorder.stop()
            try? FileManager.default.removeItem(atPath: chosen)
            throw RecordingError(.alreadyRecording, "a recording of the \(target) user is already running")
        }
        eventHandler.withLock { $0 }?(.recordStarted(target, path: chosen))
        return chosen
    }

    /// Stops `target`'s recording: what is queued is written, then the cues and duration.
    /// - Returns: What was recorded (with `failure` set if it had ended early).
    /// - Throws: `RecordingError` `.notRecording` when none runs.
    @discardableResult
    public func stopRecording(_ target: RecordingTarget) throws(RecordingError) -> MediaRecorder.Summary {
        guard let recorder = withRecording(target, { current in defer { current = nil }; return current }) else {
            throw RecordingError(.notRecording, "no recording of the \(target) user is running")
        }
        let summary = recorder.stop()
        eventHandler.withLock { $0 }?(.recordStopped(target, summary))
        return summary
    }

    /// The file `target`'s recording writes to, while one runs.
    public func currentRecordingPath(_ target: RecordingTarget) -> String? { withRecording(target) { $0?.path } }

    /// Stops every recording still running (the session is ending).
    private func stopRecordings() {
        for target in [RecordingTarget.local, .remote] where withRecording(target, { $0 }) != nil {
            _ = try? stopRecording(target)
        }
    }
    private let snapshots = Mutex<(next: Int, waiting: [Int: CheckedContinuation<VideoFrame?, Never>])>((0, [:]))

    /// The next picture to be sent (captured, before encoding), or nil when none comes
    /// within `timeout` (no video source, or the session is not sending).
    public func snapshotLocalVideo(timeout: Duration = .seconds(2)) async -> VideoFrame? {
        guard sendsVideo else { return nil }
        return await withCheckedContinuation { (continuation: CheckedContinuation<VideoFrame?, Never>) in
            let id = snapshots.withLock { state in
                defer { state.next += 1 }
                state.waiting[state.next] = continuation
                return state.next
            }
            Thread.detachNewThread { [self] in
                Thread.sleep(forTimeInterval: timeout / .seconds(1))
                // Still waiting after the timeout: nothing came.
                snapshots.withLock { $0.waiting.removeValue(forKey: id) }?.resume(returning: nil)
            }
        }
    }
    private let recorder = Mutex<CallAudioRecorder?>(nil)

    /// Records the call's audio (this side's sent audio with the file mix, and the peer's)
    /// to `path`, WAV or Ogg Opus by extension; nil picks a WAV in the temporary directory.
    /// - Returns: The path recorded to.
    /// - Throws: `MixError` for a missing directory, an unsupported extension, a file that
    ///   cannot be created, or a recording already running.
    @discardableResult
    public func startAudioRecording(path: String? = nil) throws(MixError) -> String {
        guard recorder.withLock({ $0 }) == nil else { throw MixError("a call audio recording is already running") }
        let chosen = path ?? OutputFile.temporary("call", extension: "wav")
        let started = try CallAudioRecorder(path: chosen)
        recorder.withLock { $0 = started }
        return chosen
    }

    /// Stops the call audio recording.
    /// - Throws: `MixError` when none runs, or writing failed (what was written stays).
    public func stopAudioRecording() throws(MixError) {
        guard let running = recorder.withLock({ current in defer { current = nil }; return current }) else {
            throw MixError("no call audio recording is running")
        }
        try running.stop()
    }

    /// The file the call audio recording writes to, while one runs.
    public var currentAudioRecordingFilePath: String? { recorder.withLock { $0?.path } }
    private let playbackMix = PlaybackMixRing()

    /// Mixes `task`'s file into what is sent from the next frame on; a running task ends
    /// (it is stopped, without a completion event).
    public func startAudioMix(_ task: AudioFileMixTask) {
        let previous = mixTask.withLock { current in
            defer { current = task }
            return current
        }
        previous?.stop()
    }

    /// The task mixing now, if any.
    public var currentAudioMixTask: AudioFileMixTask? { mixTask.withLock { $0 } }

    /// Ends the running task, if any.
    public func stopAudioMix() {
        mixTask.withLock { current in
            current?.stop()
            current = nil
        }
    }

    /// Whether this side sends video (a video source was configured).
    public var sendsVideo: Bool { local.videoSSRC != nil }

    /// Binds both sockets and draws this side's key, SSRCs and check token.
    /// - Throws: `TransportError` when `host` cannot be bound.
    public init(configuration: Configuration) throws {
        parts = Parts(configuration)
        localAudioChannels = configuration.audio.layout.count
        receiveSocket = try UDPSocket(bindTo: SocketAddress(host: configuration.host, port: 0))
        sendSocket = try UDPSocket(bindTo: SocketAddress(host: configuration.host, port: 0))
        let port = receiveSocket.localAddress.port
        let hosts = configuration.host == "0.0.0.0" ? LocalAddresses.ipv4() : [receiveSocket.localAddress.host]
        var random = SystemRandomNumberGenerator()
        let token = (0..<16).map { _ in String(UInt8.random(in: 0...255, using: &random), radix: 16) }.joined()
        local = Endpoint(candidates: try hosts.map { try SocketAddress(host: $0, port: port) },
                         keying: SRTPKeyingMaterial.random(profile: configuration.profile),
                         audioSSRC: UInt32.random(in: 1 ... .max, using: &random),
                         videoSSRC: configuration.video == nil ? nil : UInt32.random(in: 1 ... .max, using: &random),
                         checkToken: token)
    }

    /// Starts both directions toward `remote`; returns at once. Call once.
    ///
    /// - Parameter events: Gets every event, on the session's threads.
    public func start(remote: Endpoint, events: @escaping @Sendable (Event) -> Void) throws {
        let alreadyStarted = state.withLock { state in
            defer {
                state.started = true
                state.remote = state.remote ?? remote
            }
            return state.started
        }
        if !alreadyStarted { eventHandler.withLock { $0 = events } }
        guard !alreadyStarted else { return }
        var streams = [MediaReceiver.StreamDescription(kind: .audio, payloadType: 111, clockRate: 48_000, port: 0, rtcpPort: 0,
                                                       keying: remote.keying, ssrc: remote.audioSSRC, transportSequenceExtensionID: 3)]
        if let video = remote.videoSSRC {
            streams.append(MediaReceiver.StreamDescription(kind: .video, payloadType: 96, clockRate: 90_000, port: 0, rtcpPort: 0,
                                                           keying: remote.keying, ssrc: video, transportSequenceExtensionID: 3))
        }
        let receiver = try MediaReceiver(streams: streams, socket: receiveSocket)
        receiver.connectivityToken = local.checkToken
        receiver.encodedMedia = { [self] media in remoteRecording.withLock { $0 }?.offer(media) }
        receiver.keyframeWanted = { [self] in remoteKeyframeWanted.exchange(false, ordering: .relaxed) }
        let box = ReceiverBox(receiver)
        state.withLock { $0.threads = 2 }
        Thread.detachNewThread { [self] in
            receive(box.receiver, events: events)
            threadEnded()
        }
        Thread.detachNewThread { [self] in
            send(remote: remote, events: events)
            threadEnded()
        }
    }

    /// The receiver, handed to the receive thread alone.
    final class ReceiverBox: @unchecked Sendable {
        let receiver: MediaReceiver
        init(_ receiver: MediaReceiver) { self.receiver = receiver }
    }

    private func threadEnded() {
        let last = state.withLock { state in
            state.threads -= 1
            return state.threads == 0
        }
        if last { finished.signal() }
    }

    private func receive(_ receiver: MediaReceiver, events: @escaping @Sendable (Event) -> Void) {
        let configuration = parts.configuration
        var lastPackets = 0
        var lastProgress = Duration.zero
        var timedOut = false
        var level = LevelMeter()
        var sink = configuration.audioSink
        var playing = [Int16](repeating: 0, count: 1_920)
        do {
            let statistics = try receiver.run(duration: nil, stop: { [self] in stopping.load(ordering: .relaxed) }, audio: { [self] pcm in
                configuration.remoteAudio?(pcm)
                recorder.withLock { $0 }?.remote(pcm)
                if let replacement = sinkHandoff.withLock({ pending in defer { pending = nil }; return pending }) {
                    try? sink?.close()
                    sink = replacement.sink
                }
                if let sink, !playbackMix.isEmpty {
                    // The file mix plays locally at its playback volume, mixed into the peer's audio.
                    if playing.count < pcm.count { playing = [Int16](repeating: 0, count: pcm.count) }
                    try playing.withUnsafeMutableBufferPointer { buffer in
                        let block = UnsafeMutableBufferPointer(rebasing: buffer[0..<pcm.count])
                        _ = block.initialize(from: pcm)
                        playbackMix.mix(into: block, channels: sink.layout.count)
                        try sink.write(UnsafeBufferPointer(block))
                    }
                } else {
                    try sink?.write(pcm)
                }
                if let value = level.add(pcm) { events(.remoteAudioLevel(value)) }
            }, video: { frame in
                events(.remoteVideoFrame(frame))
            }, report: { [self] elapsed, statistics in
                events(.statistics(statistics))
                let packets = statistics.streams.reduce(0) { $0 + $1.packetsReceived }
                if packets != lastPackets {
                    lastPackets = packets
                    lastProgress = elapsed
                } else if !timedOut, elapsed - lastProgress >= configuration.mediaTimeout {
                    timedOut = true
                    events(.disconnected("no media from the peer for \(configuration.mediaTimeout)"))
                }
                _ = self
            })
            state.withLock { $0.summary.received = statistics }
            if !stopping.load(ordering: .relaxed) && !timedOut {
                events(.disconnected("the peer ended its media (RTCP BYE)"))
            }
        } catch {
            state.withLock { $0.summary.failure = "receive: \(error)" }
        }
    }

    private func send(remote: Endpoint, events: @escaping @Sendable (Event) -> Void) {
        let configuration = parts.configuration
        do {
            guard let result = try ConnectivityCheck.run(socket: sendSocket, candidates: remote.candidates, token: remote.checkToken,
                                                         timeout: configuration.connectTimeout,
                                                         stop: { [self] in stopping.load(ordering: .relaxed) }) else {
                if !stopping.load(ordering: .relaxed) {
                    events(.connectFailed("no answer from \(remote.candidates.map(\.description).joined(separator: ", ")) "
                        + "within \(configuration.connectTimeout)"))
                }
                stopping.store(true, ordering: .relaxed)
                return
            }
            state.withLock { $0.summary.connectivity = result }
            events(.connected(remote: result.remote, roundTripTime: result.roundTripTime))
            var settings = MediaSender.Configuration(audio: configuration.audio, video: configuration.video,
                                                     audioDestination: result.remote, videoDestination: result.remote)
            settings.rtcpMux = true
            settings.keying = local.keying
            settings.audioSSRC = local.audioSSRC
            settings.videoSSRC = local.videoSSRC
            settings.audioBitrate = configuration.audioBitrate
            settings.videoBitrate = configuration.videoBitrate
            settings.socket = sendSocket
            settings.controls = controls
            settings.captureHooks = configuration.captureHooks
            settings.encodedMedia = { [self] media in localRecording.withLock { $0 }?.offer(media) }
            var level = LevelMeter()
            settings.capturedAudio = { [self] frame in
                if let value = frame.samples.withUnsafeBufferPointer({ level.add($0) }) { events(.localAudioLevel(value)) }
                recorder.withLock { $0 }?.local(frame)
            }
            settings.capturedVideo = { [self] frame in
                events(.localVideoFrame(frame))
                localRecording.withLock { $0 }?.offerPicture(frame)
                let waiting = snapshots.withLock { state in
                    defer { state.waiting.removeAll() }
                    return state.waiting.values
                }
                for continuation in waiting { continuation.resume(returning: frame) }
            }
            var mixer = FrameFileMixer()
            settings.audioMix = { [self] frame in
                guard let task = mixTask.withLock({ $0 }) else { return }
                let completed = mixer.mix(task, into: &frame) { block, playback in playbackMix.push(block, gain: playback) }
                if completed {
                    mixTask.withLock { if $0 === task { $0 = nil } }
                    events(.audioMixTaskCompleted(task))
                }
            }
            let sender = try MediaSender(configuration: settings)
            let statistics = try sender.run(duration: nil, stop: { [self] in stopping.load(ordering: .relaxed) })
            state.withLock { $0.summary.sent = statistics }
        } catch {
            state.withLock { $0.summary.failure = "send: \(error)" }
        }
    }

    /// Stops both directions (BYE is sent, the jitter buffers drain) and returns the figures.
    /// Safe to call more than once and before `start`.
    @discardableResult
    public func stop() -> Summary {
        stopping.store(true, ordering: .relaxed)
        let running = state.withLock { $0.started && $0.threads > 0 }
        if running {
            finished.wait()
            finished.signal()
        }
        stopRecordings()
        return state.withLock { $0.summary }
    }

    /// Waits until both directions have ended on their own (a source ran out, or the
    /// connectivity check failed), without stopping them.
    public func wait() -> Summary {
        let running = state.withLock { $0.started && $0.threads > 0 }
        if running {
            finished.wait()
            finished.signal()
        }
        return state.withLock { $0.summary }
    }
}

/// RMS level over 100 ms blocks, 0...1 of full scale.
struct LevelMeter {
    private var sum = 0.0
    private var count = 0

    mutating func add(_ samples: UnsafeBufferPointer<Int16>) -> Double? {
        for sample in samples { sum += Double(sample) * Double(sample) }
        count += samples.count
        guard count >= 4_800 else { return nil }
        defer {
            sum = 0
            count = 0
        }
        return (sum / Double(count)).squareRoot() / 32_768
    }
}
