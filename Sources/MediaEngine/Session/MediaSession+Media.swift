import Foundation

extension MediaSession {
    /// The receiving thread: drives the transport (datagrams in, the core's timers), then,
    /// outside the core's lock, decodes video, plays the mix and reports.
    func receive() {
        let configuration = parts.configuration
        let decoding = VideoDecoding()
        var sink = configuration.audioSink
        var scratch = [Int16](repeating: 0, count: Opus.maxSamplesPerPacket * 2)
        var accumulator = [Int32](repeating: 0, count: Opus.maxSamplesPerPacket * 2)
        var tickLength = 0
        // The mix of each tick, written to the sink outside the lock.
        var playout = [Int16](repeating: 0, count: 0)
        playout.reserveCapacity(48_000)
        var playing = [Int16](repeating: 0, count: 1_920)
        // Stereo playback as mono for the echo canceller.
        var downmix = [Int16](repeating: 0, count: 1_920)
        var frames: [(ReceiveStreamID, VideoReceiveStream.Frame)] = []
        frames.reserveCapacity(64)
        var events: [Notice] = []
        events.reserveCapacity(16)
        var meters: [String: LevelMeter] = [:]
        var levels: [(String, Double)] = []
        var speaking: [String: Double] = [:]
        var speakingChanged = false
        var nextSpeakingCheck = Duration.zero
        var report: MediaReceiver.Statistics?
        var nextReport = Duration.seconds(1)
        var lastPackets = 0
        var lastProgress = Duration.zero
        var disconnected = false
        // The tables of this pass, read once under the session's lock: the unlocked half
        // names the owners of the frames the locked half collected with the same copy.
        var pass = ReceivePass(keyframes: [], participants: [:], owners: [:], meetingLeg: false, connected: false)

        transport.withCore { core, _ in
            core.acceptedAudio = { [weak self] id, payload, timestamp in
                guard let self, let recording = state.withLock({ $0.recording(ofStream: id) }) else { return }
                recording.offer(EncodedMedia(kind: .audio, data: payload, rtpTimestamp: timestamp, time: .now))
            }
        }
        do {
            try transport.run(stop: { stopping.load(ordering: .relaxed) }, wake: { decoding.nextRelease }, locked: { core, now in
                while let event = core.pollEvent() {
                    if case .videoFrame(let id, let frame) = event { frames.append((id, frame)) } else { events.append(.core(event)) }
                }
                pass = state.withLock { $0.receivePass() }
                for video in pass.keyframes { core.requestKeyframe(video) }
                scratch.withUnsafeMutableBufferPointer { buffer in
                    core.playAudio(now: now, scratch: buffer, block: { id, pcm in
                        let owner = pass.owner(of: id)
                        configuration.participantAudio?(owner, pcm)
                        if let level = meters[owner, default: LevelMeter()].add(pcm) { levels.append((owner, level)) }
                        accumulator.withUnsafeMutableBufferPointer { AudioMixer.accumulate(pcm, gain: pass.volume(of: owner), into: $0) }
                        tickLength = max(tickLength, pcm.count)
                    }, tickEnded: { _ in
                        let start = playout.count
                        playout.append(contentsOf: repeatElement(0, count: tickLength))
                        accumulator.withUnsafeMutableBufferPointer { sum in
                            playout.withUnsafeMutableBufferPointer { out in
                                AudioMixer.finish(UnsafeBufferPointer(rebasing: sum[0..<tickLength]),
                                                  into: UnsafeMutableBufferPointer(rebasing: out[start..<(start + tickLength)]))
                                for index in 0..<tickLength { sum[index] = 0 }
                            }
                        }
                        tickLength = 0
                    })
                }
                if now >= nextSpeakingCheck {
                    nextSpeakingCheck = now + .milliseconds(200)
                    var current: [String: Double] = [:]
                    for id in core.receiveStreamIDs {
                        guard let level = core.recentAudioLevel(id, now: now), level.voiceActivity else { continue }
                        current[pass.owner(of: id), default: 0] = level.amplitude
                    }
                    speakingChanged = !current.isEmpty || !speaking.isEmpty
                    speaking = current
                }
                if now >= nextReport {
                    nextReport = now + .seconds(1)
                    let statistics = sessionStatistics(core)
                    let packets = statistics.streams.reduce(0) { $0 + $1.packetsReceived }
                    if packets != lastPackets {
                        lastPackets = packets
                        lastProgress = now
                    } else if !disconnected, !pass.meetingLeg, pass.connected, now - lastProgress >= configuration.mediaTimeout {
                        disconnected = true
                        events.append(.mediaTimedOut)
                    }
                    report = statistics
                }
                let ids = core.receiveStreamIDs
                // On a meeting leg, silence and BYEs are participants leaving or listening:
                // only consent (the server answering) says whether the leg is up.
                if !disconnected, !pass.meetingLeg, !ids.isEmpty, ids.allSatisfy({ core.statistics(of: $0)?.endedByGoodbye == true }) {
                    disconnected = true
                    events.append(.everyStreamEnded)
                }
                return true
            }, unlocked: { [self] in
                // Audio first: its delay is what a listener hears; pictures can wait a decode.
                if !playout.isEmpty {
                    try play(&playout, sink: &sink, playing: &playing, downmix: &downmix)
                    playout.removeAll(keepingCapacity: true)
                }
                let now = transport.now
                for (id, frame) in frames {
                    let owner = pass.owner(of: id)
                    try decoding.decode(id, frame, now: now, withCore: { body in transport.withCore { core, _ in body(core) } },
                                        video: { _, picture in show(picture, participant: owner) },
                                        encodedMedia: { _, media in self.recording(of: owner)?.offer(media) })
                }
                frames.removeAll(keepingCapacity: true)
                try decoding.releaseDue(now: now) { id, picture in show(picture, participant: pass.owner(of: id)) }
                for event in events { handle(event) }
                events.removeAll(keepingCapacity: true)
                for (owner, level) in levels { emit(.remoteAudioLevel(level, participant: owner)) }
                levels.removeAll(keepingCapacity: true)
                if speakingChanged {
                    speakingChanged = false
                    emit(.speakingUsers(speaking))
                }
                if let statistics = report {
                    report = nil
                    emit(.statistics(statistics))
                }
            })
            transport.withCore { core, _ in
                scratch.withUnsafeMutableBufferPointer { buffer in
                    core.drainAudio(scratch: buffer) { _, pcm in playout.append(contentsOf: pcm) }
                }
                core.acceptedAudio = nil
            }
            if !playout.isEmpty { try play(&playout, sink: &sink, playing: &playing, downmix: &downmix) }
            let owners = state.withLock { $0.streamOwners }
            try decoding.releaseAll { id, picture in show(picture, participant: owners[id] ?? "") }
        } catch {
            state.withLock { $0.summary.failure = "receive: \(error)" }
        }
        let (statistics, ice, relay) = transport.withCore { core, _ in (sessionStatistics(core), core.iceStatistics, core.relayStatistics) }
        state.withLock {
            $0.summary.received = statistics
            $0.summary.ice = ice
            $0.summary.relay = relay
        }
    }

    /// Hands a decoded picture to the app: its YUV callback, then the event.
    private func show(_ picture: VideoFrame, participant: String) {
        parts.configuration.remoteVideo?(participant, picture)
        emit(.remoteVideoFrame(picture, participant: participant))
    }

    /// What the receiving loop found, acted on off the core's lock.
    enum Notice {
        case core(MediaCore.Event)
        /// No packet for `mediaTimeout`.
        case mediaTimedOut
        /// Every remote stream said BYE.
        case everyStreamEnded
    }

    private func handle(_ notice: Notice) {
        let configuration = parts.configuration
        let stopped = stopping.load(ordering: .relaxed)
        switch notice {
        case .core(.connected(let pair, let roundTripTime)):
            state.withLock { state in
                state.summary.connectivity = ConnectivityResult(pair: pair, roundTripTime: roundTripTime)
                state.connected = true
            }
            emit(.connected(pair, roundTripTime: roundTripTime))
        case .core(.pathChanged(let pair)):
            state.withLock { $0.summary.connectivity?.pair = pair }
            emit(.pathChanged(pair))
        case .core(.localCandidate(let candidate, _)):
            emit(.localCandidate(candidate))
        case .core(.gatheringComplete):
            emit(.gatheringComplete)
        case .core(.relayFailed(let why)):
            state.withLock { $0.summary.relayFailure = why }
        case .core(.connectFailed(let why)):
            if !stopped {
                let explained = ignoredCandidatesExplained().map { "; \($0)" } ?? ""
                emit(.connectFailed("ICE found no path within \(configuration.connectTimeout): \(why)\(explained)"))
            }
            stopping.store(true, ordering: .relaxed)
        case .core(.dtlsConnected(let profile)):
            state.withLock { $0.keyed = true }
            emit(.dtlsConnected(profile))
        case .core(.dtlsFailed(let error)):
            // No keys, no media: the leg failed as a path that never answered does.
            if !stopped { emit(.connectFailed("DTLS: \(error.message)")) }
            stopping.store(true, ordering: .relaxed)
        case .core(.dtlsClosed):
            if !stopped { emit(.disconnected("the peer closed the DTLS association")) }
            stopping.store(true, ordering: .relaxed)
        case .core(.consentExpired):
            if !stopped { emit(.disconnected("the peer stopped answering consent checks (RFC 7675) for \(configuration.consent.timeout)")) }
        case .mediaTimedOut:
            if !stopped { emit(.disconnected("no media from the peer for \(configuration.mediaTimeout)")) }
        case .everyStreamEnded:
            if !stopped { emit(.disconnected("the peer ended its media (RTCP BYE)")) }
        case .core:
            break
        }
    }

    /// Plays one batch of mixed remote audio: the app's tap, the call recording, the file
    /// mix at its playback volume, the sink (which may block: outside the core's lock).
    private func play(_ samples: inout [Int16], sink: inout (any AudioSink)?, playing: inout [Int16], downmix: inout [Int16]) throws {
        let configuration = parts.configuration
        try samples.withUnsafeBufferPointer { pcm in
            let (recorder, replacement) = state.withLock { $0.playback() }
            configuration.remoteAudio?(pcm)
            recorder?.remote(pcm)
            if let replacement {
                try? sink?.close()
                sink = replacement.sink
            }
            guard let output = sink else { return }
            if !playbackMix.isEmpty {
                if playing.count < pcm.count { playing = [Int16](repeating: 0, count: pcm.count) }
                try playing.withUnsafeMutableBufferPointer { buffer in
                    let block = UnsafeMutableBufferPointer(rebasing: buffer[0..<pcm.count])
                    _ = block.initialize(from: pcm)
                    playbackMix.mix(into: block, channels: output.layout.count)
                    renderEcho(UnsafeBufferPointer(block), sink: output, downmix: &downmix)
                    try output.write(UnsafeBufferPointer(block))
                }
            } else {
                renderEcho(pcm, sink: output, downmix: &downmix)
                try output.write(pcm)
            }
        }
    }

    /// Hands the echo canceller exactly what the speaker is about to play, with what the
    /// speaker still holds (mono: a stereo block is averaged). Only loudspeakers have an
    /// echo: sinks that report no playback delay are skipped.
    private func renderEcho(_ block: UnsafeBufferPointer<Int16>, sink: any AudioSink, downmix: inout [Int16]) {
        guard let delay = sink.playbackDelay, let processor = processing.renderProcessor() else { return }
        guard sink.layout == .stereo else { return processor.render(block, playbackDelay: delay) }
        let frames = block.count / 2
        if downmix.count < frames { downmix = [Int16](repeating: 0, count: frames) }
        downmix.withUnsafeMutableBufferPointer { mono in
            for index in 0..<frames {
                mono[index] = Int16((Int32(block[2 * index]) + Int32(block[2 * index + 1])) / 2)
            }
            processor.render(UnsafeBufferPointer(rebasing: mono[0..<frames]), playbackDelay: delay)
        }
    }

    /// What arrived so far, every participant's streams named.
    func sessionStatistics(_ core: MediaCore) -> MediaReceiver.Statistics { MediaReceiver.Statistics(core) }

    /// What arrived so far, per stream (each names its participant).
    public var receiveStatistics: MediaReceiver.Statistics { transport.withCore { core, _ in sessionStatistics(core) } }

    /// The sending thread: once the path is selected, captures, encodes and sends until
    /// the session stops (then BYE).
    func send() {
        let configuration = parts.configuration
        while !state.withLock({ $0.connected && $0.keyed }) && !stopping.load(ordering: .relaxed) {
            Thread.sleep(forTimeInterval: 0.002)
        }
        guard !stopping.load(ordering: .relaxed) else { return }
        var settings = MediaSender.Configuration(audio: configuration.audio, video: configuration.video,
                                                 audioDestination: .unspecified, videoDestination: .unspecified)
        settings.audioBitrate = configuration.audioBitrate
        settings.videoBitrate = configuration.videoBitrate
        settings.temporalLayers = configuration.temporalLayers
        settings.controls = controls
        settings.captureHooks = configuration.captureHooks
        settings.encodedMedia = { [self] media in state.withLock { $0.recordings[.local] }?.offer(media) }
        var level = LevelMeter()
        // The voice detector's call on the frame being sent (nil while processing is off).
        var voice: Bool?
        let source = configuration.audio
        settings.audioProcessing = { [self] frame in
            let (processor, failure) = processing.captureProcessor()
            if let failure { emit(.audioProcessingFailed(failure)) }
            voice = processor?.process(&frame, captureDelay: source.captureDelay ?? .zero)
            return voice
        }
        settings.capturedAudio = { [self] frame in
            // The level a user sees counts only voice when the detector runs: a fan or a
            // keyboard is not someone speaking.
            let value = voice == false ? level.addSilence(frame.samples.count)
                                       : frame.samples.withUnsafeBufferPointer({ level.add($0) })
            if let value { emit(.localAudioLevel(value)) }
            state.withLock { $0.audioRecorder }?.local(frame)
        }
        settings.capturedVideo = { [self] frame in
            let (handler, recording, snapshots) = state.withLock { $0.capturedPicture() }
            handler?.call(.localVideoFrame(frame))
            recording?.offerPicture(frame)
            for continuation in snapshots { continuation.resume(returning: frame) }
        }
        var mixer = FrameFileMixer()
        settings.audioMix = { [self] frame in
            guard let task = state.withLock({ $0.mixTask }) else { return }
            let completed = mixer.mix(task, into: &frame) { block, playback in playbackMix.push(block, gain: playback) }
            if completed {
                state.withLock { if $0.mixTask === task { $0.mixTask = nil } }
                emit(.audioMixTaskCompleted(task))
            }
        }
        do {
            let sender = try MediaSender(configuration: settings, transport: transport, audio: audioStream, video: videoStream,
                                         videoLayers: videoLayerStreams, readsFeedback: false)
            let statistics = try sender.run(duration: nil, stop: { [self] in stopping.load(ordering: .relaxed) })
            state.withLock { $0.summary.sent = statistics }
        } catch {
            state.withLock { $0.summary.failure = "send: \(error)" }
        }
        let processed = processing.statistics
        state.withLock { $0.summary.audioProcessing = processed }
    }
}
