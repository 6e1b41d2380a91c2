#if canImport(Glibc)
import Glibc
#endif

/// Sends synthetic, file or device media as (S)RTP to a peer, paced to the wall clock: a
/// one-way session over the engine's media core. Opus audio in 20 ms frames and VP8 video
/// at the source's rate, RTCP sender reports at the RFC 3550 interval, BYE at the end.
/// Answers NACK from the retransmission history and PLI/FIR with a keyframe; once
/// transport-wide feedback arrives, follows the bandwidth estimate (VP8 bitrate, Opus
/// expected loss) within the set maximum. Feedback must be SRTCP under the SDP key when
/// the media is SRTP (what the engine's receivers and ffmpeg send); RTCP that does not
/// authenticate is counted and ignored.
///
/// Runs on the calling thread until the duration passes, the sources end or `stop`
/// returns true. Per packet it allocates nothing.
public final class MediaSender {
    /// What to send and where.
    public struct Configuration {
        public var audio: (any AudioSource)?
        public var video: (any VideoSource)?
        /// RTP destination of the audio.
        public var audioDestination: SocketAddress
        /// RTP destination of the video (the audio's when bundled).
        public var videoDestination: SocketAddress
        /// Send RTCP to the RTP port (RFC 5761) instead of the next port up.
        public var rtcpMux = false
        /// SRTP key, or nil for plain RTP.
        public var keying: SRTPKeyingMaterial?
        /// Fixed SSRCs (for receivers such as GStreamer's srtpdec that key by SSRC);
        /// random when nil.
        public var audioSSRC: UInt32?
        public var videoSSRC: UInt32?
        public var audioPayloadType: UInt8 = 111
        public var videoPayloadType: UInt8 = 96
        public var audioBitrate = 48_000
        public var videoBitrate = 1_000_000
        /// Seconds between periodic keyframes, for receivers that join late and never
        /// send PLI.
        public var keyframeInterval: Double = 2
        /// VP8 temporal layers (1 to 3): a forwarding server thins them per subscriber.
        public var temporalLayers = 1
        public var extensions = RTPExtensionMap.standard
        /// RTCP CNAME.
        public var cname = "mediaengine"
        /// Local address to send from (port 0 picks one).
        public var localAddress: SocketAddress?
        /// A bound socket to send from instead (one that already ran connectivity checks).
        public var socket: UDPSocket?
        /// Live mute, video pause, bitrate cap and keyframe requests.
        public var controls: SenderControls?
        /// Mixes more audio into each captured frame (after muting), on the sending thread:
        /// audio-file mixing.
        public var audioMix: ((inout AudioFrame) -> Void)?
        /// Sees each captured audio frame as it will be sent (after muting and mixing), on
        /// the sending thread: for level meters.
        public var capturedAudio: ((AudioFrame) -> Void)?
        /// Sees each picture about to be encoded (after the video hook), on the sending
        /// thread: for previews and snapshots.
        public var capturedVideo: ((VideoFrame) -> Void)?
        /// The app's audio and video hooks, run between capture and encoding.
        public var captureHooks: CaptureHooks?
        /// Processes each captured audio frame first (echo cancellation and the rest), on
        /// the sending thread; returns whether it holds voice (nil: not processed). The
        /// answer is the RFC 6464 voice flag of its packet.
        public var audioProcessing: ((inout AudioFrame) -> Bool?)?
        /// Sees each Opus packet and VP8 frame as encoded, on the sending thread: for recordings.
        public var encodedMedia: ((EncodedMedia) -> Void)?

        public init(audio: (any AudioSource)?, video: (any VideoSource)?, audioDestination: SocketAddress,
                    videoDestination: SocketAddress) {
            self.audio = audio
            self.video = video
            self.audioDestination = audioDestination
            self.videoDestination = videoDestination
        }
    }

    /// What was sent.
    public struct Statistics: Sendable, Hashable {
        public var audioPackets = 0
        public var audioBytes = 0
        public var audioFrames = 0
        public var videoPackets = 0
        public var videoBytes = 0
        public var videoFrames = 0
        public var keyframes = 0
        public var rtcpSent = 0
        /// PLI and FIR requests answered.
        public var keyframeRequests = 0
        /// The receiver's latest report on the audio stream, if it sent one.
        public var audioReport: RemoteReport?
        /// The receiver's latest report on the video stream, if it sent one.
        public var videoReport: RemoteReport?
        /// Why the audio source stopped early (a device that failed), if it did.
        public var audioFailure: String?
        /// Why the video source stopped early, if it did.
        public var videoFailure: String?
        /// Video packets sent again in answer to NACKs.
        public var retransmissions = 0
        /// RRTR blocks answered with DLRR (the receiver's round-trip measurement).
        public var referenceTimesAnswered = 0
        /// NACK packets received.
        public var nacksReceived = 0
        /// Transport-wide feedback packets received (bandwidth estimation is active once
        /// the first arrives).
        public var transportFeedbackReceived = 0
        /// The bandwidth estimate the encoders last followed, b/s (nil without feedback).
        public var targetBitrate: Int?
        /// The VP8 target bitrate in force at the end, b/s.
        public var videoBitrate = 0
        /// Times the video source was replaced by one of another size.
        public var videoResolutionChanges = 0
    }

    /// What a receiver's RTCP report block said.
    public typealias RemoteReport = MediaEngine.RemoteReport

    public let configuration: Configuration
    public private(set) var statistics = Statistics()
    private let transport: PeerTransport
    /// Whether this sender reads the socket itself (a one-way session), or shares the
    /// transport with a receiving thread that does (a call).
    private let readsFeedback: Bool
    private let audioID: SendStreamID?
    private let videoID: SendStreamID?
    private let opus: Opus.Encoder?
    private var opusPayloader = OpusPayloader()
    private let vp8: VP8.Encoder?
    /// A simulcast video's encoder and streams (then `vp8` is nil).
    private let simulcast: SimulcastSender?
    /// Feedback changed the estimate: the encoders follow it (peers that give none get the
    /// configured bitrate).
    private var followsEstimate = false
    /// The live cap and target from `controls`, as last applied.
    private var bitrateCap: Int?
    private var bitrateTarget: Int?
    /// Where pictures come from (the configured source until `controls` replaces it).
    private var videoSource: (any VideoSource)?
    /// Video was paused by `controls` at the last frame.
    private var videoPaused = false
    /// Simulcast: the layers whose receivers asked for a keyframe, and the bitrate all
    /// layers share now.
    private var layerKeyframes: VP8.SimulcastEncoder.LayerSet = []
    private var simulcastRate = 0

    /// The local address media leaves from.
    public var localAddress: SocketAddress { transport.sockets[0].localAddress }

    public convenience init(configuration: Configuration) throws {
        let local = try configuration.localAddress
            ?? SocketAddress(host: configuration.audioDestination.isIPv6 ? "::" : "0.0.0.0", port: 0)
        let socket = try configuration.socket ?? UDPSocket(bindTo: local)
        func rtcp(_ address: SocketAddress) -> SocketAddress {
            configuration.rtcpMux ? address : address.with(port: address.port + 1)
        }
        let audioRate = configuration.audio != nil ? configuration.audioBitrate : 0
        let videoRate = configuration.video != nil ? configuration.videoBitrate : 0
        var settings = MediaCore.Configuration()
        // Receivers protect their feedback with the SDP key (RFC 3711 allows one master key
        // for several SSRCs), so the same key reads it back.
        settings.outboundKeying = configuration.keying
        settings.inboundKeying = configuration.keying
        settings.cname = configuration.cname
        settings.extensions = configuration.extensions
        // The SDP profile is RTP/SAVP, not AVPF: RFC 3550's 5 s minimum applies to sender reports.
        settings.sendBandwidth = audioRate + videoRate
        settings.bandwidth = Self.bandwidthLimits(configuration)
        let core = try MediaCore(configuration: settings)
        var random = SystemRandomNumberGenerator()
        var audioID: SendStreamID?
        var videoID: SendStreamID?
        if configuration.audio != nil {
            var stream = SendStreamConfiguration(kind: .audio, ssrc: configuration.audioSSRC ?? UInt32.random(in: 1 ... .max, using: &random),
                                                 payloadType: configuration.audioPayloadType, clockRate: 48_000)
            stream.destination = configuration.audioDestination
            stream.rtcpDestination = rtcp(configuration.audioDestination)
            audioID = try core.addSendStream(stream)
        }
        if configuration.video != nil {
            var stream = SendStreamConfiguration(kind: .video, ssrc: configuration.videoSSRC ?? UInt32.random(in: 1 ... .max, using: &random),
                                                 payloadType: configuration.videoPayloadType, clockRate: VP8.clockRate)
            stream.destination = configuration.videoDestination
            stream.rtcpDestination = rtcp(configuration.videoDestination)
            videoID = try core.addSendStream(stream)
        }
        try self.init(configuration: configuration, transport: PeerTransport(core: core, sockets: [socket]),
                      audio: audioID, video: videoID, readsFeedback: true)
    }

    /// The bandwidth estimate's bounds: the configured rates at most, video's 50 kb/s floor.
    static func bandwidthLimits(_ configuration: Configuration) -> SendSideBandwidthEstimator.Configuration {
        let audioRate = configuration.audio != nil ? configuration.audioBitrate : 0
        let videoRate = configuration.video != nil ? configuration.videoBitrate : 0
        return SendSideBandwidthEstimator.Configuration(startBitrate: audioRate + videoRate,
                                                        minimumBitrate: audioRate + (videoRate > 0 ? 50_000 : 0),
                                                        maximumBitrate: audioRate + videoRate)
    }

    /// Sends on streams of a transport the caller set up and reads (a call: the receiving
    /// thread feeds the core; this one only sends). The destinations in `configuration`
    /// are not used.
    /// - Parameter videoLayers: A simulcast video's streams, lowest first (the first is
    ///   `video`): each gets a layer, half the size of the next, the last at the source's.
    init(configuration: Configuration, transport: PeerTransport, audio: SendStreamID?, video: SendStreamID?,
         videoLayers: [SendStreamID] = [], readsFeedback: Bool) throws {
        self.configuration = configuration
        self.transport = transport
        self.readsFeedback = readsFeedback
        videoSource = configuration.video
        audioID = audio
        videoID = video
        if let source = configuration.audio {
            var codec = Opus.Configuration()
            codec.layout = source.layout
            codec.bitrate = configuration.audioBitrate
            codec.inbandFEC = true
            opus = try Opus.Encoder(configuration: codec)
        } else {
            opus = nil
        }
        if let source = configuration.video, videoLayers.count > 1 {
            let sizes = MediaSession.simulcastSizes(width: source.width, height: source.height, layers: videoLayers.count)
            guard sizes.count == videoLayers.count else {
                throw CodecError(.invalidConfiguration, "vp8 simulcast: a \(source.width)x\(source.height) source has \(sizes.count) layers of 160x90 or more, not \(videoLayers.count)")
            }
            simulcast = try SimulcastSender(sizes: sizes, streams: videoLayers, bitrate: configuration.videoBitrate, frameRate: source.frameRate,
                                            temporalLayers: configuration.temporalLayers,
                                            keyframeInterval: max(1, Int(configuration.keyframeInterval * Double(source.frameRate))))
            vp8 = nil
        } else if let source = configuration.video {
            simulcast = nil
            var codec = VP8.Configuration(width: source.width, height: source.height, bitrate: configuration.videoBitrate)
            codec.frameRate = source.frameRate
            codec.keyframeInterval = max(1, Int(configuration.keyframeInterval * Double(source.frameRate)))
            codec.temporalLayers = configuration.temporalLayers
            vp8 = try VP8.Encoder(configuration: codec)
        } else {
            vp8 = nil
            simulcast = nil
        }
        statistics.videoBitrate = configuration.video != nil ? configuration.videoBitrate : 0
        simulcastRate = configuration.videoBitrate
        if let simulcast { statistics.videoBitrate = try simulcast.setBitrate(configuration.videoBitrate) }
    }

    /// Sends for `duration` (nil: until the sources end), or until `stop()`. Every audio
    /// frame due before `duration` goes out, also when a loaded machine fell behind and
    /// the clock passed it first (a run of 2 s sends 2 s of audio); video gets the
    /// pictures sent by then, as a camera on a slow encoder gives fewer.
    public func run(duration: Duration?, stop: () -> Bool = { false }) throws -> Statistics {
        let clock = ContinuousClock()
        let start = clock.now
        let base = transport.now
        let frameSamples = 960
        var audioFrame = AudioFrame(layout: configuration.audio?.layout ?? .mono, samplesPerChannel: frameSamples)
        var videoFrame = VideoFrame(width: configuration.video?.width ?? 2, height: configuration.video?.height ?? 2)
        var encoded = [UInt8](repeating: 0, count: vp8?.maximumFrameSize ?? 0)
        var packet = [UInt8](repeating: 0, count: Opus.maxPacketSize)
        var poller = transport.makePoller()
        var audioIndex = 0
        var videoIndex = 0
        var audioLive = configuration.audio != nil
        var videoLive = configuration.video != nil
        var forceKeyframe = false
        var scaled = VideoFrame(width: 2, height: 2)
        let videoRate = Int64(max(1, configuration.video?.frameRate ?? 30))

        while audioLive || videoLive {
            let elapsed = clock.now - start
            if stop() { break }
            let nextAudio = audioLive ? Duration.milliseconds(20 * audioIndex) : .seconds(1 << 40)
            // Each picture's time from its index (not a rounded period added up): 30 fps for
            // 2 s is 60 pictures, the 61st due at 2 s exactly.
            let nextVideo = videoLive ? Duration.nanoseconds(Int64(videoIndex) * 1_000_000_000 / videoRate) : .seconds(1 << 40)
            let due = min(nextAudio, nextVideo)
            let ended = duration.map { elapsed >= $0 } ?? false
            if ended, !(audioLive && duration.map({ nextAudio < $0 }) == true) { break }
            // Feedback is read every turn, not only while ahead of schedule: a sender that
            // falls behind (a loaded machine) must still answer NACK and PLI, or the
            // receiver stalls waiting for a keyframe that never comes.
            forceKeyframe = try handleFeedback() || forceKeyframe
            if due > elapsed {
                // Wait in short steps so PLI is answered promptly and stop() is honoured.
                let wait = min(due - elapsed, .milliseconds(5))
                if readsFeedback {
                    _ = try transport.waitForDatagrams(timeout: wait, poller: &poller)
                } else {
                    Self.sleep(wait)
                }
                continue
            }
            // Every audio frame that is due goes before the next picture: a slow video encode
            // (a loaded machine, a large picture) delays video, never audio behind it. A
            // few at a time, though: a device that clocks its own reads (a microphone whose
            // clock is a little slower than this one) keeps frames due for good, and
            // feedback, pictures and stop() must still get their turn between them.
            var burst = 0
            while audioLive, burst < 3, let source = configuration.audio, let opus, let audioID {
                let nextAudio = Duration.milliseconds(20 * audioIndex)
                guard nextAudio <= clock.now - start, duration.map({ nextAudio < $0 }) ?? true, !stop() else { break }
                burst += 1
                if readAudio(source, into: &audioFrame) {
                    var voice = configuration.audioProcessing?(&audioFrame) ?? nil
                    configuration.captureHooks?.process(&audioFrame)
                    if configuration.controls?.current.audioMuted == true {
                        for index in audioFrame.samples.indices { audioFrame.samples[index] = 0 }
                        if voice != nil { voice = false }
                    }
                    configuration.audioMix?(&audioFrame)
                    configuration.capturedAudio?(audioFrame)
                    if configuration.controls?.current.audioPaused != true {
                        try sendAudio(audioFrame, encoder: opus, stream: audioID, packet: &packet, captureTime: base + nextAudio, voice: voice)
                    }
                    audioIndex += 1
                } else {
                    // A source that ends or fails ends only its own track.
                    audioLive = false
                    endStream(audioID)
                }
            }
            if videoLive && nextVideo <= elapsed && !ended, vp8 != nil || simulcast != nil, let videoID {
                if let replacement = configuration.controls?.takeVideoSource() {
                    if let vp8 {
                        try switchVideoSource(to: replacement, encoder: vp8, frame: &videoFrame, buffer: &encoded)
                    } else {
                        // Simulcast layers' sizes were announced: pictures of another size are scaled to them.
                        videoSource = replacement
                    }
                    forceKeyframe = true
                }
                if let source = videoSource, readVideo(source, into: &videoFrame) {
                    let controls = configuration.controls?.current ?? SenderControls.State()
                    if configuration.controls?.takeKeyframeRequest() == true { forceKeyframe = true }
                    try applyVideoBitrate(controls)
                    try simulcast?.setServerActive(controls.videoLayersActive)
                    // With a video hook, what is sent is the latest picture it handed back, if any.
                    let hooked = configuration.captureHooks?.process(&videoFrame) ?? true
                    if hooked { configuration.capturedVideo?(videoFrame) }
                    let keyframe = forceKeyframe || statistics.videoFrames == 0 || videoPaused
                    if controls.videoPaused {
                        // Resuming starts with a keyframe: the receiver's decoder lost its references.
                        videoPaused = true
                    } else if hooked, let simulcast {
                        forceKeyframe = false
                        videoPaused = false
                        try sendSimulcast(simulcast.fitting(videoFrame, scratch: &scaled), index: videoIndex,
                                          keyframes: keyframe ? .all : layerKeyframes, encoder: simulcast, captureTime: base + nextVideo)
                        layerKeyframes = []
                    } else if hooked, let vp8, videoFrame.width == vp8.configuration.width && videoFrame.height == vp8.configuration.height {
                        forceKeyframe = false
                        videoPaused = false
                        try sendVideo(videoFrame, index: videoIndex, keyframe: keyframe, encoder: vp8, stream: videoID,
                                      buffer: &encoded, captureTime: base + nextVideo)
                    }
                    videoIndex += 1
                } else {
                    videoLive = false
                    for stream in simulcast?.streams ?? [videoID] { endStream(stream) }
                }
            }
        }
        transport.withCore { core, now in
            // Only this sender's streams end: others may share the transport.
            for id in [audioID, videoID].compactMap({ $0 }) + (simulcast?.streams.dropFirst() ?? []) { core.close(only: id, now: now) }
            collectStatistics(core)
        }
        return statistics
    }

    /// Ends one stream (its source ended or failed): BYE for it; its figures are kept.
    private func endStream(_ id: SendStreamID) {
        transport.withCore { core, now in
            collectStatistics(core)
            core.close(only: id, now: now)
        }
    }

    /// Copies the core's figures into `statistics`.
    private func collectStatistics(_ core: MediaCore) {
        let transportStatistics = core.transportStatistics
        statistics.rtcpSent = transportStatistics.rtcpSent
        statistics.transportFeedbackReceived = transportStatistics.transportFeedbackReceived
        statistics.referenceTimesAnswered = transportStatistics.referenceTimesAnswered
        if let audioID, let audio = core.statistics(of: audioID) {
            statistics.audioReport = audio.remoteReport
        }
        if let videoID, let video = core.statistics(of: videoID) {
            statistics.videoReport = video.remoteReport
            statistics.nacksReceived = video.nackCount
            statistics.retransmissions = video.retransmittedPacketsSent
            statistics.keyframeRequests = video.keyframesForced
        }
        for stream in simulcast?.streams.dropFirst() ?? [] {
            guard let layer = core.statistics(of: stream) else { continue }
            statistics.nacksReceived += layer.nackCount
            statistics.retransmissions += layer.retransmittedPacketsSent
            statistics.keyframeRequests += layer.keyframesForced
        }
        if followsEstimate { statistics.targetBitrate = core.bandwidthEstimator.targetBitrate }
    }

    /// Encodes one picture into each active simulcast layer and sends each on its stream,
    /// all with one timestamp; the recording gets the top layer.
    private func sendSimulcast(_ frame: VideoFrame, index: Int, keyframes: VP8.SimulcastEncoder.LayerSet, encoder: SimulcastSender,
                               captureTime: Duration) throws {
        let rate = configuration.video?.frameRate ?? 30
        let timestamp = UInt32(truncatingIfNeeded: index * VP8.clockRate / rate)
        let temporal = configuration.temporalLayers > 1
        var sentAny = false
        try encoder.encode(frame, forceKeyframe: keyframes) { layer, stream, info, bytes in
            if layer == encoder.layerCount - 1 {
                configuration.encodedMedia?(EncodedMedia(kind: .video, data: bytes, rtpTimestamp: timestamp, isKeyframe: info.isKeyframe,
                                                         width: frame.width, height: frame.height, time: .now))
                if info.isKeyframe { statistics.keyframes += 1 }
            }
            let packets = transport.withCore { core, now in
                let before = core.statistics(of: stream)?.packetsSent ?? 0
                core.sendVideo(stream, frame: bytes, mediaTimestamp: timestamp, isKeyframe: info.isKeyframe,
                               temporalLayer: temporal ? (info.temporalLayer, info.layerSync) : nil, captureTime: captureTime, now: now)
                return (core.statistics(of: stream)?.packetsSent ?? 0) - before
            }
            statistics.videoPackets += packets
            statistics.videoBytes += info.byteCount
            sentAny = true
        }
        if sentAny { statistics.videoFrames += 1 }
    }

    /// The highest VP8 bitrate allowed now: the configured one, or the live target and cap.
    private var videoCeiling: Int {
        min(configuration.videoBitrate, bitrateTarget ?? .max, bitrateCap ?? .max)
    }

    /// Applies a changed live target or cap at once (the estimate may be above them).
    private func applyVideoBitrate(_ controls: SenderControls.State) throws {
        let cap = controls.maximumVideoBitrate.map { max(50_000, $0) }
        let target = controls.videoBitrate.map { max(50_000, $0) }
        guard cap != bitrateCap || target != bitrateTarget else { return }
        bitrateCap = cap
        bitrateTarget = target
        if let simulcast {
            simulcast.setTargets(total: videoCeiling)
            let total = followsEstimate ? min(videoCeiling, simulcastRate) : videoCeiling
            statistics.videoBitrate = try simulcast.setBitrate(total)
            simulcastRate = total
            return
        }
        guard let vp8 else { return }
        // Under an estimate, a lower ceiling applies now and a higher one with the next feedback.
        try vp8.setBitrate(followsEstimate ? min(videoCeiling, vp8.configuration.bitrate) : videoCeiling)
        statistics.videoBitrate = vp8.configuration.bitrate
    }

    /// Reads from another source from now on; a new size rebuilds the encoder (a new libvpx
    /// context) and the buffers for it.
    private func switchVideoSource(to source: any VideoSource, encoder: VP8.Encoder, frame: inout VideoFrame,
                                   buffer: inout [UInt8]) throws {
        videoSource = source
        guard source.width != frame.width || source.height != frame.height else { return }
        try encoder.setResolution(width: source.width, height: source.height)
        frame.reshape(width: source.width, height: source.height)
        if buffer.count < encoder.maximumFrameSize { buffer = [UInt8](repeating: 0, count: encoder.maximumFrameSize) }
        statistics.videoResolutionChanges += 1
    }

    /// Reads the next audio frame; false at the end of the source or when it failed,
    /// with the failure recorded in `statistics`.
    private func readAudio(_ source: any AudioSource, into frame: inout AudioFrame) -> Bool {
        do {
            return try source.read(into: &frame)
        } catch {
            statistics.audioFailure = "\(error)"
            return false
        }
    }

    /// Reads the next picture; false at the end of the source or when it failed.
    private func readVideo(_ source: any VideoSource, into frame: inout VideoFrame) -> Bool {
        do {
            return try source.read(into: &frame)
        } catch {
            statistics.videoFailure = "\(error)"
            return false
        }
    }

    private func sendAudio(_ frame: AudioFrame, encoder: Opus.Encoder, stream: SendStreamID, packet: inout [UInt8],
                           captureTime: Duration, voice: Bool?) throws {
        var level = frame.samples.withUnsafeBufferPointer { AudioLevel(samples: $0) }
        // The voice detector's call, where it ran, instead of the level's.
        if let voice { level.voiceActivity = voice }
        let size = try frame.samples.withUnsafeBufferPointer { pcm in
            try packet.withUnsafeMutableBytes { try encoder.encode(pcm, into: $0) }
        }
        let (timestamp, _) = opusPayloader.next(samples: frame.samplesPerChannel, payloadSize: size)
        try packet.withUnsafeBytes { bytes in
            let payload = UnsafeRawBufferPointer(rebasing: bytes[0..<size])
            configuration.encodedMedia?(EncodedMedia(kind: .audio, data: payload, rtpTimestamp: timestamp, time: .now))
            let sent = transport.withCore { core, now in
                core.sendAudio(stream, payload: payload, mediaTimestamp: timestamp, audioLevel: level, captureTime: captureTime, now: now)
            }
            if !sent { throw PacketError(.bufferTooSmall, "audio packet of \(size) bytes could not be sent") }
        }
        statistics.audioFrames += 1
        statistics.audioPackets += 1
        statistics.audioBytes += size
    }

    private func sendVideo(_ frame: VideoFrame, index: Int, keyframe: Bool, encoder: VP8.Encoder, stream: SendStreamID,
                           buffer: inout [UInt8], captureTime: Duration) throws {
        guard let info = try buffer.withUnsafeMutableBytes({ try encoder.encode(frame, forceKeyframe: keyframe, into: $0) }) else {
            return
        }
        let rate = configuration.video?.frameRate ?? 30
        let timestamp = UInt32(truncatingIfNeeded: index * VP8.clockRate / rate)
        let packets = buffer.withUnsafeBytes { bytes in
            let frameBytes = UnsafeRawBufferPointer(rebasing: bytes[0..<info.byteCount])
            configuration.encodedMedia?(EncodedMedia(kind: .video, data: frameBytes, rtpTimestamp: timestamp, isKeyframe: info.isKeyframe,
                                                     width: frame.width, height: frame.height, time: .now))
            return transport.withCore { core, now in
                let before = core.statistics(of: stream)?.packetsSent ?? 0
                core.sendVideo(stream, frame: frameBytes, mediaTimestamp: timestamp, isKeyframe: info.isKeyframe,
                               temporalLayer: encoder.configuration.temporalLayers > 1 ? (info.temporalLayer, info.layerSync) : nil,
                               captureTime: captureTime, now: now)
                return (core.statistics(of: stream)?.packetsSent ?? 0) - before
            }
        }
        statistics.videoPackets += packets
        statistics.videoFrames += 1
        statistics.videoBytes += info.byteCount
        if info.isKeyframe { statistics.keyframes += 1 }
    }

    /// Reads the RTCP receivers sent back into the core (reports, NACK answered from the
    /// history, PLI/FIR, transport feedback), and makes the encoders follow a new
    /// estimate at once: a queue building up at a bottleneck must be relieved within a
    /// round trip or two. Returns true when a keyframe is due.
    private func handleFeedback() throws -> Bool {
        let (update, keyframe) = try transport.withCore { core, now in
            if readsFeedback { try transport.receivePending(into: core, now: now) }
            if let simulcast {
                // A PLI on a layer's stream keyframes that layer only.
                for (layer, stream) in simulcast.streams.enumerated() where core.shouldForceKeyframe(stream, now: now) {
                    layerKeyframes.insert(.layer(layer))
                }
                return (core.takeBandwidthUpdate(), false)
            }
            let keyframe = videoID.map { core.shouldForceKeyframe($0, now: now) } ?? false
            return (core.takeBandwidthUpdate(), keyframe)
        }
        if let update {
            followsEstimate = true
            try followEstimate(update)
        }
        return keyframe
    }

    /// Sets the encoders to the bandwidth estimate: VP8 gets what audio leaves (changed
    /// only when it moves by 5 % or more), Opus the loss to plan FEC for.
    private func followEstimate(_ update: MediaCore.BandwidthUpdate) throws {
        statistics.targetBitrate = update.targetBitrate
        let audioRate = configuration.audio != nil ? configuration.audioBitrate : 0
        if let simulcast {
            let video = min(videoCeiling, max(50_000, update.targetBitrate - audioRate))
            if abs(video - simulcastRate) * 20 >= simulcastRate {
                simulcastRate = video
                statistics.videoBitrate = try simulcast.setBitrate(video)
            }
        }
        if let vp8 {
            let video = min(videoCeiling, max(50_000, update.targetBitrate - audioRate))
            if abs(video - vp8.configuration.bitrate) * 20 >= vp8.configuration.bitrate {
                try vp8.setBitrate(video)
            }
            statistics.videoBitrate = vp8.configuration.bitrate
        }
        if let opus {
            try opus.setExpectedPacketLoss(percent: update.opusExpectedLossPercent)
        }
    }

    private static func sleep(_ duration: Duration) {
        let (seconds, attoseconds) = duration.components
        var request = timespec(tv_sec: Int(seconds), tv_nsec: Int(attoseconds / 1_000_000_000))
        var remaining = timespec()
        while nanosleep(&request, &remaining) != 0 && errno == EINTR { request = remaining }
    }
}
