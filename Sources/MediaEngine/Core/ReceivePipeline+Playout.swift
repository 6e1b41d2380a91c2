// Audio playout, lip sync and what the decoders report back.
extension ReceivePipeline {
    /// Lip sync pairs each participant's first audio and first video stream.
    func isLipSyncAudio(_ stream: ReceiveStreamState) -> Bool {
        streams.first { $0.configuration.kind == .audio && $0.configuration.participant == stream.configuration.participant } === stream
    }

    func isLipSyncVideo(_ stream: ReceiveStreamState) -> Bool {
        streams.first { $0.configuration.kind == .video && $0.configuration.participant == stream.configuration.participant } === stream
    }

    /// Moves each participant's lip sync one step: audio gets extra jitter-buffer delay when
    /// video lags, video is held back when audio lags.
    mutating func synchronize() {
        for (participant, var sync) in lipSyncs {
            guard let audio = streams.first(where: { isLipSyncAudio($0) && $0.configuration.participant == participant }),
                  streams.contains(where: { isLipSyncVideo($0) && $0.configuration.participant == participant }) else { continue }
            let (audioDelay, _) = sync.update()
            audio.jitter?.synchronizationDelay = audioDelay
            lipSyncs[participant] = sync
        }
    }

    /// Records a decoded frame of `id`, shown at `shownAt` (after any lip-sync hold).
    mutating func videoDecoded(_ id: ReceiveStreamID, timestamp: UInt32, isKeyframe: Bool, shownAt: Duration) {
        guard let stream = stream(id) else { return }
        stream.statistics.framesDecoded += 1
        if isKeyframe { stream.statistics.keyFramesDecoded += 1 }
        if isLipSyncVideo(stream) {
            lipSyncs[stream.configuration.participant, default: LipSync()].videoShown(timestamp: timestamp, localTime: shownAt / .seconds(1))
        }
    }

    /// Records that the decoder found a frame corrupt: no delta frame follows until a
    /// keyframe, which is requested.
    mutating func decoderReportedCorruption(_ id: ReceiveStreamID, now: Duration, path: SelectedPath) {
        guard let stream = stream(id) else { return }
        stream.statistics.decodeErrors += 1
        stream.video?.decoderReportedCorruption(now: now)
        processVideo(stream, now: now, path: path)
    }

    /// How long decoded pictures of `id` wait so they play no earlier than their audio.
    func videoHold(for id: ReceiveStreamID) -> Duration {
        guard let stream = stream(id), isLipSyncVideo(stream) else { return .zero }
        return lipSyncs[stream.configuration.participant]?.videoExtraDelay ?? .zero
    }

    /// The RFC 6464 level a stream's sender stamped last, if within `window` (and the
    /// stream has not said BYE).
    func recentAudioLevel(_ id: ReceiveStreamID, now: Duration, window: Duration) -> AudioLevel? {
        guard let stream = stream(id), let level = stream.audioLevel, !stream.statistics.endedByGoodbye,
              now - level.at <= window else { return nil }
        return level.level
    }

    /// Plays every audio frame due by `now`, one playout tick at a time (`MediaCore.playAudio`).
    mutating func playAudio(now: Duration, scratch: UnsafeMutableBufferPointer<Int16>,
                            block: (ReceiveStreamID, UnsafeBufferPointer<Int16>) throws -> Void,
                            tickEnded: (Duration) throws -> Void) rethrows {
        while let due = streams.lazy.compactMap(\.nextPull).min(), due <= now {
            var played = false
            for stream in streams where stream.nextPull == due {
                guard let jitter = stream.jitter else { continue }
                let period = stream.framePeriod
                if jitter.packetsHeld == 0 && now - stream.lastArrival > period * 3 {
                    stream.nextPull = nil
                    continue
                }
                if isLipSyncAudio(stream), let timestamp = jitter.playoutTimestamp {
                    lipSyncs[stream.configuration.participant, default: LipSync()].audioPlayed(timestamp: timestamp,
                                                                                               localTime: due / .seconds(1))
                }
                let result = jitter.pull(now: due, into: scratch)
                try block(stream.id, UnsafeBufferPointer(rebasing: scratch[0..<(result.samplesPerChannel * stream.configuration.layout.count)]))
                stream.nextPull = due + period
                played = true
            }
            if played { try tickEnded(due) }
        }
    }

    /// Plays out what the jitter buffers still hold (at most 10 s each); every stream goes idle.
    func drainAudio(scratch: UnsafeMutableBufferPointer<Int16>,
                    block: (ReceiveStreamID, UnsafeBufferPointer<Int16>) throws -> Void) rethrows {
        for stream in streams {
            guard let jitter = stream.jitter, var due = stream.nextPull else { continue }
            var frames = 0
            while jitter.packetsHeld > 0 && frames < 500 {
                let result = jitter.pull(now: due, into: scratch)
                try block(stream.id, UnsafeBufferPointer(rebasing: scratch[0..<(result.samplesPerChannel * stream.configuration.layout.count)]))
                due += stream.framePeriod
                frames += 1
            }
            stream.nextPull = nil
        }
    }
}
