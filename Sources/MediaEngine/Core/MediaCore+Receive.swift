extension MediaCore {
    /// Takes one datagram that arrived on the transport's socket `socket` from `source`: RTP
    /// goes to its stream (after SRTP), RTCP is authenticated and acted on, STUN checks are
    /// answered. Anything unusable is counted and dropped. The buffer is decrypted in place.
    ///
    /// - Parameters:
    ///   - now: The current time, which runs the core's timers.
    ///   - arrival: When the datagram reached the host (`ArrivalClock`), if the caller read
    ///     it later: what transport-wide feedback and the receive statistics' jitter report.
    ///     Never after `now`; `now` when nil.
    /// - Returns: The decrypted packet when it belongs to a forwarding stream (valid until
    ///   the buffer is reused); nil otherwise.
    @discardableResult
    public func handleDatagram(_ datagram: UnsafeMutableRawBufferPointer, from source: SocketAddress, socket: Int = 0,
                               now: Duration, arrival: Duration? = nil) -> ForwardedPacket? {
        if paths.hasRelay, handleFromRelay(datagram, from: source, socket: socket, now: now) { return nil }
        let bytes = UnsafeRawBufferPointer(datagram)
        switch DatagramKind(bytes) {
        case .stun:
            handleSTUN(bytes, from: source, socket: socket, now: now)
        case .dtls:
            handleDTLS(bytes, from: source, socket: socket, now: now)
        case .rtp:
            guard acceptsPath(source), keysAgreed() else { return nil }
            return receive.handleRTP(datagram, from: source, socket: socket, now: now, arrival: min(arrival ?? now, now),
                                     path: selectedPath, random: &random) { ssrc in
                send.owns(ssrc: ssrc)
            }
        case .rtcp:
            guard acceptsPath(source), keysAgreed() else { return nil }
            handleRTCP(datagram, from: source, socket: socket, now: now)
        default:
            counters.unknownDatagrams += 1
        }
        return nil
    }

    /// Whether media can be read: not while DTLS has not agreed keys (what comes then is
    /// counted and dropped, so nothing unauthenticated is taken for the peer's).
    @inline(__always)
    private func keysAgreed() -> Bool {
        guard paths.awaitsKeys else { return true }
        counters.mediaBeforeKeys += 1
        return false
    }

    /// Whether media from `source` is taken (`PathController.accepts`); what is not is counted.
    private func acceptsPath(_ source: SocketAddress) -> Bool {
        guard paths.accepts(source) else {
            counters.foreignPathDatagrams += 1
            return false
        }
        return true
    }

    /// Asks the sender of a video stream for a keyframe now (a recording starting mid-call).
    public func requestKeyframe(_ id: ReceiveStreamID) {
        guard let stream = receive.stream(id), stream.configuration.kind == .video else { return }
        receive.sendPictureLoss(stream, path: selectedPath)
    }

    /// Records that the decoder found a frame of `id` corrupt: no delta frame follows until
    /// a keyframe, which is requested.
    public func decoderReportedCorruption(_ id: ReceiveStreamID, now: Duration) {
        receive.decoderReportedCorruption(id, now: now, path: selectedPath)
    }

    /// Records a decoded frame of `id`, shown at `shownAt` (after any lip-sync hold).
    public func videoDecoded(_ id: ReceiveStreamID, timestamp: UInt32, isKeyframe: Bool, shownAt: Duration) {
        receive.videoDecoded(id, timestamp: timestamp, isKeyframe: isKeyframe, shownAt: shownAt)
    }

    /// How long decoded pictures of `id` wait so they play no earlier than their audio.
    public func videoHold(for id: ReceiveStreamID) -> Duration { receive.videoHold(for: id) }

    /// How far a participant's video plays behind its audio (positive: video late), once
    /// both streams' sender reports and playout were seen.
    public func audioVideoOffset(participant: String = "") -> Duration? { receive.lipSyncs[participant]?.offset }

    /// The extra delays lip sync gives a participant's audio and video.
    public func synchronizationDelays(participant: String = "") -> (audio: Duration, video: Duration) {
        guard let sync = receive.lipSyncs[participant] else { return (.zero, .zero) }
        return (sync.audioExtraDelay, sync.videoExtraDelay)
    }

    /// The RFC 6464 level a receive stream's sender stamped last, if within `window` (and
    /// the stream has not said BYE).
    public func recentAudioLevel(_ id: ReceiveStreamID, now: Duration, window: Duration = .milliseconds(500)) -> AudioLevel? {
        receive.recentAudioLevel(id, now: now, window: window)
    }

    // MARK: Audio playout

    /// Plays every audio frame due by `now`, one playout tick at a time: `block` gets each
    /// playing stream's frame of the tick (decoded, concealment included), then `tickEnded`
    /// the tick's time. Streams play in step (a stream that starts joins the running
    /// tick), so a mixer sums the blocks of one tick. A stream whose buffer ran dry with no
    /// packet for three frames goes idle (no output) until packets come again, so a paused
    /// sender does not fill recordings with concealment.
    /// - Parameter scratch: Room for one frame of the widest stream (at least 60 ms stereo).
    public func playAudio(now: Duration, scratch: UnsafeMutableBufferPointer<Int16>,
                          block: (ReceiveStreamID, UnsafeBufferPointer<Int16>) throws -> Void,
                          tickEnded: (Duration) throws -> Void) rethrows {
        try receive.playAudio(now: now, scratch: scratch, block: block, tickEnded: tickEnded)
    }

    /// Pulls one frame of an audio stream at `now` on the caller's own playout clock (a
    /// simulation's, or a mixer that paces itself), with no idle rule: concealment when
    /// nothing is there.
    /// - Returns: what the jitter buffer produced, or nil for an unknown or video stream.
    public func pullAudio(_ id: ReceiveStreamID, now: Duration, into output: UnsafeMutableBufferPointer<Int16>) -> AudioJitterBuffer.PullResult? {
        guard let stream = receive.stream(id), let jitter = stream.jitter else { return nil }
        return jitter.pull(now: now, into: output)
    }

    /// Plays out what the jitter buffers still hold (at most 10 s each), so the end of a
    /// stream is not lost; every stream goes idle.
    public func drainAudio(scratch: UnsafeMutableBufferPointer<Int16>,
                           block: (ReceiveStreamID, UnsafeBufferPointer<Int16>) throws -> Void) rethrows {
        try receive.drainAudio(scratch: scratch, block: block)
    }
}
