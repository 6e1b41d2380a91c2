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
        guard let stream = sendStream(id), !stream.isEnded, payload.count <= stream.payloadCapacity else { return false }
        let sent = sendPacket(stream, mediaTimestamp: mediaTimestamp, marker: marker, audioLevel: audioLevel,
                              payloadSize: payload.count, now: now) { room in
            UnsafeMutableRawBufferPointer(rebasing: room[0..<payload.count]).copyMemory(from: payload)
        }
        guard sent else { return false }
        stream.statistics.framesSent += 1
        stream.lastMedia = (mediaTimestamp, captureTime ?? now)
        afterFirstPacket(stream, now: now)
        return true
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
        guard let stream = sendStream(id), !stream.isEnded, stream.configuration.kind == .video else { return false }
        var sentAny = false
        let fragments = stream.payloader.fragments(frameSize: frame.count, temporalLayer: temporalLayer?.id,
                                                   layerSync: temporalLayer?.sync ?? false)
        for fragment in fragments {
            let sent = sendPacket(stream, mediaTimestamp: mediaTimestamp, marker: fragment.isLast, audioLevel: nil,
                                  payloadSize: fragment.payloadSize, now: now) { room in
                _ = try? VP8Payloader.write(fragment, of: frame, into: room)
            }
            sentAny = sentAny || sent
        }
        guard sentAny else { return false }
        stream.statistics.framesSent += 1
        if isKeyframe {
            stream.statistics.keyFramesSent += 1
            stream.responder?.keyframeSent(now: now)
        }
        stream.lastMedia = (mediaTimestamp, captureTime ?? now)
        afterFirstPacket(stream, now: now)
        return true
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
    public func forward(_ id: SendStreamID, packet: RTPPacketView, sequenceNumber: UInt16? = nil, isKeyframe: Bool = false,
                        now: Duration, rewritePayload: (UnsafeMutableRawBufferPointer) -> Void = { _ in }) -> Bool {
        guard let stream = sendStream(id), stream.configuration.forwarded, !stream.isEnded,
              packet.bytes.count + SRTPContext.trailerCapacity <= TransmitQueue.slotSize else { return false }
        guard let destination = stream.configuration.destination ?? path else {
            counters.packetsWithoutPath += 1
            return false
        }
        var transportOffset: Int?
        if let extensionID = stream.transportSequenceID, let value = packet.extensionValue(id: extensionID), value.count == 2,
           let start = value.baseAddress, let base = packet.bytes.baseAddress {
            transportOffset = start - base
        }
        let transportSequence = nextTransportSequence
        let outgoing = sequenceNumber ?? stream.sequenceNumber
        let context = stream.outboundKey.map { outbound[$0].context }
        var written: UnsafeRawBufferPointer?
        let queued = transmits.enqueue(to: destination, socket: stream.configuration.socket, kind: .rtp) { slot in
            let length = packet.bytes.count
            slot.copyMemory(from: packet.bytes)
            slot.storeBytes(of: outgoing.bigEndian, toByteOffset: 2, as: UInt16.self)
            if let transportOffset { slot.storeBytes(of: transportSequence.bigEndian, toByteOffset: transportOffset, as: UInt16.self) }
            rewritePayload(UnsafeMutableRawBufferPointer(rebasing: slot[packet.payloadRange]))
            let size = context.map { (try? $0.protect(slot, length: length)) ?? 0 } ?? length
            written = UnsafeRawBufferPointer(rebasing: slot[0..<max(size, 0)])
            return size
        }
        guard queued, let bytes = written else { return false }
        if sequenceNumber == nil { stream.sequenceNumber &+= 1 }
        if transportOffset != nil {
            nextTransportSequence &+= 1
            estimator.packetSent(transportSequenceNumber: transportSequence, size: bytes.count, now: now)
        }
        stream.responder?.packetSent(bytes, now: now)
        let payloadSize = packet.payloadRange.count
        stream.packetsSent &+= 1
        stream.octetsSent &+= UInt32(truncatingIfNeeded: payloadSize)
        stream.statistics.packetsSent += 1
        stream.statistics.bytesSent += payloadSize
        if stream.configuration.kind == .audio || packet.marker { stream.statistics.framesSent += 1 }
        if isKeyframe && packet.marker {
            stream.statistics.keyFramesSent += 1
            stream.responder?.keyframeSent(now: now)
        }
        if !stream.hasSenderClock { stream.lastMedia = (packet.timestamp, now) }
        afterFirstPacket(stream, now: now)
        return true
    }

    /// States a forwarded stream's media clock as its sender reported it: RTP timestamp
    /// `timestamp` at local time `at` (when the sender's report arrived). This side's
    /// sender reports then keep the sender's mapping, so receivers keep lip sync.
    public func setSenderClock(_ id: SendStreamID, timestamp: UInt32, at: Duration) {
        guard let stream = sendStream(id), stream.configuration.forwarded else { return }
        stream.lastMedia = (timestamp, at)
        stream.hasSenderClock = true
    }

    /// The media clock a forwarding receive stream's sender last reported (RTP timestamp,
    /// arrival of the report).
    public func senderClock(of id: ReceiveStreamID) -> (timestamp: UInt32, arrival: Duration)? {
        receiveStream(id)?.senderClock
    }

    /// Whether the next frame of a video stream should be a keyframe (a PLI or FIR came,
    /// coalesced to at most one per minimum interval); true consumes the request.
    public func shouldForceKeyframe(_ id: SendStreamID, now: Duration) -> Bool {
        guard let stream = sendStream(id), var responder = stream.responder else { return false }
        defer { stream.responder = responder }
        return responder.shouldForceKeyframe(now: now)
    }

    /// Writes one packet (header, payload, SRTP) into the transmit queue, and records it in
    /// the history and the bandwidth estimator. Allocates nothing.
    private func sendPacket(_ stream: SendStreamState, mediaTimestamp: UInt32, marker: Bool, audioLevel: AudioLevel?,
                            payloadSize: Int, now: Duration, writePayload: (UnsafeMutableRawBufferPointer) -> Void) -> Bool {
        guard let destination = stream.configuration.destination ?? path else {
            counters.packetsWithoutPath += 1
            return false
        }
        let transportSequence = stream.transportSequenceID == nil ? nil : nextTransportSequence
        let context = stream.outboundKey.map { outbound[$0].context }
        var written: UnsafeRawBufferPointer?
        let queued = transmits.enqueue(to: destination, socket: stream.configuration.socket, kind: .rtp) { slot in
            guard let headerSize = try? stream.writeHeader(into: slot, mediaTimestamp: mediaTimestamp, marker: marker,
                                                           audioLevel: audioLevel, transportSequence: transportSequence) else { return 0 }
            writePayload(UnsafeMutableRawBufferPointer(rebasing: slot[headerSize..<(headerSize + payloadSize)]))
            let length = headerSize + payloadSize
            let size = context.map { (try? $0.protect(slot, length: length)) ?? 0 } ?? length
            written = UnsafeRawBufferPointer(rebasing: slot[0..<max(size, 0)])
            return size
        }
        guard queued, let bytes = written else { return false }
        if let transportSequence {
            nextTransportSequence &+= 1
            estimator.packetSent(transportSequenceNumber: transportSequence, size: bytes.count, now: now)
        }
        stream.responder?.packetSent(bytes, now: now)
        stream.packetsSent &+= 1
        stream.octetsSent &+= UInt32(truncatingIfNeeded: payloadSize)
        stream.statistics.packetsSent += 1
        stream.statistics.bytesSent += payloadSize
        return true
    }

    /// The first packet of a stream gets a sender report right behind it, and starts the
    /// report timer.
    func afterFirstPacket(_ stream: SendStreamState, now: Duration) {
        guard stream.needsFirstReport else { return }
        stream.needsFirstReport = false
        queueSenderReport(for: stream, now: now, goodbye: false)
        if nextSenderReport == nil { nextSenderReport = now + senderReports.nextInterval(using: &random) }
    }

    /// Queues a sender report with SDES (and BYE) for one stream, to its RTCP destination.
    func queueSenderReport(for stream: SendStreamState, now: Duration, goodbye: Bool) {
        var packets: [RTCPPacket] = [.senderReport(stream.senderReport(ntp: ntpTime(now), now: now)),
                                     .sourceDescription(SourceDescription(ssrc: stream.configuration.ssrc, cname: configuration.cname))]
        if goodbye { packets.append(.goodbye(Goodbye(sources: [stream.configuration.ssrc]))) }
        guard let destination = stream.configuration.rtcpDestination ?? stream.configuration.destination ?? path else { return }
        if queueRTCP(packets, to: destination, socket: stream.configuration.socket, key: stream.outboundKey) {
            senderReports.reportSent(size: RTCPPacket.compoundSize(of: packets))
        }
    }

    /// Serializes `packets` as one compound packet, protects it (SRTCP) with `key` and queues it.
    @discardableResult
    func queueRTCP(_ packets: [RTCPPacket], to destination: SocketAddress, socket: Int, key: Int?) -> Bool {
        let context = key.map { outbound[$0].context }
        let queued = transmits.enqueue(to: destination, socket: socket, kind: .rtcp) { slot in
            guard RTCPPacket.compoundSize(of: packets) + SRTPContext.trailerCapacity <= slot.count,
                  let written = try? RTCPPacket.serializeCompound(packets, into: slot) else { return 0 }
            guard let context else { return written }
            return (try? context.protectRTCP(slot, length: written)) ?? 0
        }
        if queued { counters.rtcpSent += 1 }
        return queued
    }

    /// The NTP wall-clock time at `now`.
    func ntpTime(_ now: Duration) -> UInt64 {
        let (seconds, attoseconds) = now.components
        let fraction = UInt64(max(0, attoseconds) / 1_000_000_000) << 32 / 1_000_000_000
        return configuration.ntpEpoch &+ (UInt64(max(0, seconds)) << 32) &+ fraction
    }
}
