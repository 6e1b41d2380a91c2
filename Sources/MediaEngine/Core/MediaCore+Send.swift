extension MediaCore {
    /// Sends one encoded audio packet (an Opus packet: RFC 7587 puts it in the payload as is).
    ///
    /// - Parameters:
    ///   - payload: The encoded packet.
    ///   - mediaTimestamp: Its timestamp in clock-rate units since the stream's first (the
    ///     stream adds its random offset).
    ///   - audioLevel: The RFC 6464 level to stamp.
    ///   - captureTime: When the audio was captured, on the core's clock (defaults to
    ///     `now`): sender reports map the NTP clock to the media clock from it.
    ///   - now: The current time.
    /// - Returns: false when the packet could not go out (no path yet, unknown stream, a full queue).
    @discardableResult
    public func sendAudio(_ id: SendStreamID, payload: UnsafeRawBufferPointer, mediaTimestamp: UInt32, marker: Bool = false,
                          audioLevel: AudioLevel? = nil, captureTime: Duration? = nil, now: Duration) -> Bool {
        send.sendAudio(id, payload: payload, mediaTimestamp: mediaTimestamp, marker: marker, audioLevel: audioLevel,
                       captureTime: captureTime, now: now, path: mediaPath, random: &random)
    }

    /// Sends one encoded VP8 frame, split into RTP packets (RFC 7741) that all go into the
    /// retransmission history.
    ///
    /// - Parameters:
    ///   - frame: The whole encoded frame.
    ///   - mediaTimestamp: 90 kHz units since the stream's first frame.
    ///   - isKeyframe: Whether the encoder made a keyframe.
    ///   - temporalLayer: The frame's temporal layer and whether it is a sync frame, when
    ///     the encoder makes layers (`VP8.Configuration.temporalLayers`).
    ///   - captureTime: When the picture was captured, on the core's clock (defaults to `now`).
    /// - Returns: false when nothing could go out (no path yet, unknown stream).
    @discardableResult
    public func sendVideo(_ id: SendStreamID, frame: UnsafeRawBufferPointer, mediaTimestamp: UInt32, isKeyframe: Bool,
                          temporalLayer: (id: UInt8, sync: Bool)? = nil, captureTime: Duration? = nil, now: Duration) -> Bool {
        send.sendVideo(id, frame: frame, mediaTimestamp: mediaTimestamp, isKeyframe: isKeyframe, temporalLayer: temporalLayer,
                       captureTime: captureTime, now: now, path: mediaPath, random: &random)
    }

    /// Relays one packet on a forwarded send stream: the packet (another core's
    /// `ForwardedPacket`) is copied with this stream's next sequence number and this
    /// transport's transport-wide number, `rewritePayload` may change its payload in place
    /// (a VP8 descriptor's picture numbering), and it is protected with this side's key.
    /// Video goes into the retransmission history, so NACKs are answered from here.
    /// Allocates nothing.
    ///
    /// - Parameters:
    ///   - sequenceNumber: The number it goes out with (a `StreamRewriter`'s); nil: the
    ///     stream's next.
    /// - Returns: false when it could not go out (no path, not a forwarded stream, a full queue).
    @discardableResult
    public func forward(_ id: SendStreamID, packet: RTPPacketView, sequenceNumber: UInt16? = nil, timestampShift: UInt32 = 0,
                        isKeyframe: Bool = false, now: Duration,
                        rewritePayload: (UnsafeMutableRawBufferPointer) -> Void = { _ in }) -> Bool {
        send.forward(id, packet: packet, sequenceNumber: sequenceNumber, timestampShift: timestampShift, isKeyframe: isKeyframe,
                     now: now, path: mediaPath,
                     random: &random, rewritePayload: rewritePayload)
    }

    /// Sends a packet again on a forwarded video stream's RTX stream (`SendStreamConfiguration.rtx`):
    /// `original` is the publisher's plain packet, `sequenceNumber` the number it went out
    /// with on this stream (the OSN), and `rewritePayload` renumbers its payload as the
    /// original was (the payload after the OSN). Allocates nothing.
    /// - Returns: false when it could not go out (no RTX stream, no path, a full queue, too long).
    @discardableResult
    public func retransmit(_ id: SendStreamID, original: RTPPacketView, sequenceNumber: UInt16, timestampShift: UInt32 = 0,
                           now: Duration, rewritePayload: (UnsafeMutableRawBufferPointer) -> Void = { _ in }) -> Bool {
        send.retransmit(id, original: original, sequenceNumber: sequenceNumber, timestampShift: timestampShift, now: now,
                        path: mediaPath, rewritePayload: rewritePayload)
    }

    /// Sends a padding-only packet of `paddingLength` bytes (1...255) on a stream's RTX
    /// stream, to probe the link (the SFU's probes toward a higher simulcast layer).
    /// - Returns: the bytes sent; 0 when the stream has no RTX stream or transport-wide
    ///   sequence numbers (feedback could not tell what the link carried).
    @discardableResult
    public func sendPadding(_ id: SendStreamID, paddingLength: Int = 255, now: Duration) -> Int {
        send.sendPadding(id, paddingLength: paddingLength, now: now, path: mediaPath)
    }

    /// Hands `body` each sequence number the receiver NACKed on a stream with RTX since the
    /// last call (at most `RTXStream.maximumPendingRequests`), oldest first.
    public func takeRetransmissionRequests(_ id: SendStreamID, _ body: (UInt16) -> Void) {
        send.takeRetransmissionRequests(id, body)
    }

    /// States a forwarded stream's media clock as its sender reported it: RTP timestamp
    /// `timestamp` at local time `at` (when the sender's report arrived). This side's
    /// sender reports then keep the sender's mapping, so receivers keep lip sync.
    public func setSenderClock(_ id: SendStreamID, timestamp: UInt32, at: Duration) {
        send.setSenderClock(id, timestamp: timestamp, at: at)
    }

    /// The media clock a forwarding receive stream's sender last reported (RTP timestamp,
    /// arrival of the report).
    public func senderClock(of id: ReceiveStreamID) -> (timestamp: UInt32, arrival: Duration)? {
        receive.stream(id)?.senderClock
    }

    /// The (NTP, RTP timestamp) pair of the last sender report on a receive stream: two
    /// streams of one sender (simulcast layers) relate their timestamps through these.
    public func senderMapping(of id: ReceiveStreamID) -> SenderClockMapping? {
        receive.stream(id)?.senderMapping
    }

    /// Whether the next frame of a video stream should be a keyframe (a PLI or FIR came,
    /// coalesced to at most one per minimum interval); true consumes the request.
    public func shouldForceKeyframe(_ id: SendStreamID, now: Duration) -> Bool {
        send.shouldForceKeyframe(id, now: now)
    }
}
