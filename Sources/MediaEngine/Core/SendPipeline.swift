/// Everything one side sends on a transport, sans-I/O: its send streams (numbering, header
/// extensions, SRTP, the VP8 payloader, the retransmission history), sender reports and
/// BYE, the transport-wide numbering and the bandwidth estimate it feeds, and the answers
/// to what receivers say about these streams (report blocks, NACK, PLI, FIR, transport
/// feedback, REMB, RRTR).
///
/// Media and time come in with the path they go on (`path`: the core's selected one); what
/// goes out is queued in `output`. The core composes it with the path controller and the
/// receive pipeline; tests drive it alone on a manual clock. Per media packet it allocates
/// nothing. Not thread-safe.
struct SendPipeline {
    let output: CoreOutput
    private(set) var streams: [SendStreamState] = []
    /// Counters this side keeps (merged into the core's `TransportStatistics`).
    private(set) var counters = TransportStatistics()
    private(set) var estimator: SendSideBandwidthEstimator
    private(set) var nextSenderReport: Duration?
    private var nextTransportSequence: UInt16 = 0
    private var followsEstimate = false
    private var estimateUpdated = false
    private var senderReports: RTCPInterval
    private var roundTripTime: Duration
    private let cname: String
    private let ntpEpoch: UInt64
    private let extensions: RTPExtensionMap
    private let rtcpSSRC: UInt32
    private let bandwidth: SendSideBandwidthEstimator.Configuration

    init(configuration: MediaCore.Configuration, output: CoreOutput) {
        self.output = output
        estimator = SendSideBandwidthEstimator(configuration: configuration.bandwidth)
        senderReports = RTCPInterval(sessionBandwidth: max(configuration.sendBandwidth, 8_000), weSent: true, reducedMinimum: false)
        roundTripTime = configuration.initialRoundTripTime
        cname = configuration.cname
        ntpEpoch = configuration.ntpEpoch
        extensions = configuration.extensions
        rtcpSSRC = configuration.rtcpSSRC
        bandwidth = configuration.bandwidth
    }

    // MARK: Streams

    /// Adds a stream protected with `key` (an index into `output`'s keys; nil: plain).
    /// - Throws: `MediaCoreError` when the SSRC is taken on this side.
    mutating func add(_ configuration: SendStreamConfiguration, id: SendStreamID, key: Int?,
                      random: inout SeededRandom) throws(MediaCoreError) {
        guard configuration.ssrc != 0, !owns(ssrc: configuration.ssrc), configuration.ssrc != rtcpSSRC else {
            throw MediaCoreError(.ssrcCollision, "send stream SSRC \(configuration.ssrc) is already in use on this side")
        }
        streams.append(SendStreamState(id: id, configuration: configuration, outboundKey: key, extensions: extensions,
                                       midID: extensions.id(for: RTPExtensionMap.midURI), random: &random))
    }

    /// Removes a stream: a BYE for its SSRC goes out (when it sent anything); feedback about
    /// it counts as unknown from now on.
    mutating func remove(_ id: SendStreamID, now: Duration, path: SocketAddress?) {
        guard let index = streams.firstIndex(where: { $0.id == id }) else { return }
        let stream = streams.remove(at: index)
        if stream.packetsSent > 0 { queueSenderReport(for: stream, now: now, path: path, goodbye: true) }
    }

    @inline(__always)
    func stream(_ id: SendStreamID) -> SendStreamState? { streams.first { $0.id == id } }

    /// Whether `ssrc` is one of this side's streams.
    func owns(ssrc: UInt32) -> Bool { streams.contains { $0.configuration.ssrc == ssrc } }

    /// Whether some stream sends plain RTP (an SDP session without keys).
    var hasPlainStream: Bool { streams.contains { $0.outboundKey == nil } }

    /// Protects every stream with `key` from now on: the keys a DTLS handshake agreed after
    /// the streams were added (nothing went out before, the core had no path for media).
    mutating func useKey(_ key: Int) {
        for stream in streams { stream.outboundKey = key }
    }

    /// Ends one stream (its source ended): a BYE for it, if it sent anything; its figures
    /// stay readable, nothing more is sent on it.
    mutating func close(_ id: SendStreamID, now: Duration, path: SocketAddress?) {
        guard let stream = stream(id), !stream.isEnded else { return }
        stream.isEnded = true
        if stream.packetsSent > 0 { queueSenderReport(for: stream, now: now, path: path, goodbye: true) }
    }

    // MARK: Media

    /// One encoded audio packet (RFC 7587: the Opus packet is the payload). False when it
    /// could not go out (no path, unknown or ended stream, too large, a full queue).
    mutating func sendAudio(_ id: SendStreamID, payload: UnsafeRawBufferPointer, mediaTimestamp: UInt32, marker: Bool,
                            audioLevel: AudioLevel?, captureTime: Duration?, now: Duration, path: SocketAddress?,
                            random: inout SeededRandom) -> Bool {
        guard let stream = stream(id), !stream.isEnded, payload.count <= stream.payloadCapacity else { return false }
        let sent = sendPacket(stream, mediaTimestamp: mediaTimestamp, marker: marker, audioLevel: audioLevel,
                              payloadSize: payload.count, now: now, path: path) { room in
            UnsafeMutableRawBufferPointer(rebasing: room[0..<payload.count]).copyMemory(from: payload)
        }
        guard sent else { return false }
        stream.statistics.framesSent += 1
        stream.lastMedia = (mediaTimestamp, captureTime ?? now)
        afterFirstPacket(stream, now: now, path: path, random: &random)
        return true
    }

    /// One encoded VP8 frame, split into RTP packets (RFC 7741) that all go into the
    /// retransmission history. False when nothing could go out.
    mutating func sendVideo(_ id: SendStreamID, frame: UnsafeRawBufferPointer, mediaTimestamp: UInt32, isKeyframe: Bool,
                            temporalLayer: (id: UInt8, sync: Bool)?, captureTime: Duration?, now: Duration, path: SocketAddress?,
                            random: inout SeededRandom) -> Bool {
        guard let stream = stream(id), !stream.isEnded, stream.configuration.kind == .video else { return false }
        var sentAny = false
        let fragments = stream.payloader.fragments(frameSize: frame.count, temporalLayer: temporalLayer?.id,
                                                   layerSync: temporalLayer?.sync ?? false)
        for fragment in fragments {
            let sent = sendPacket(stream, mediaTimestamp: mediaTimestamp, marker: fragment.isLast, audioLevel: nil,
                                  payloadSize: fragment.payloadSize, now: now, path: path) { room in
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
        afterFirstPacket(stream, now: now, path: path, random: &random)
        return true
    }

    /// Relays another core's packet on a forwarded stream (`MediaCore.forward`).
    mutating func forward(_ id: SendStreamID, packet: RTPPacketView, sequenceNumber: UInt16?, timestampShift: UInt32 = 0,
                          isKeyframe: Bool, now: Duration, path: SocketAddress?, random: inout SeededRandom,
                          rewritePayload: (UnsafeMutableRawBufferPointer) -> Void) -> Bool {
        guard let stream = stream(id), stream.configuration.forwarded, !stream.isEnded,
              packet.bytes.count + SRTPContext.trailerCapacity <= TransmitQueue.slotSize else { return false }
        guard let destination = stream.configuration.destination ?? path else {
            counters.packetsWithoutPath += 1
            return false
        }
        let translation = stream.configuration.forwardedExtensions
        let transportOffset = transportSequenceOffset(in: packet, for: stream)
        let payloadType = stream.configuration.payloadType
        let ssrc = stream.configuration.ssrc
        let transportSequence = nextTransportSequence
        let outgoing = sequenceNumber ?? stream.sequenceNumber
        let context = output.context(stream.outboundKey)
        var written: UnsafeRawBufferPointer?
        let queued = output.transmits.enqueue(to: destination, socket: stream.configuration.socket, kind: .rtp) { slot in
            let length = packet.bytes.count
            slot.copyMemory(from: packet.bytes)
            slot.storeBytes(of: outgoing.bigEndian, toByteOffset: 2, as: UInt16.self)
            slot[1] = slot[1] & 0x80 | payloadType
            // One stream to the receiver whichever simulcast layer it carries now.
            slot.storeBytes(of: ssrc.bigEndian, toByteOffset: 8, as: UInt32.self)
            if timestampShift != 0 {
                slot.storeBytes(of: (packet.timestamp &- timestampShift).bigEndian, toByteOffset: 4, as: UInt32.self)
            }
            if let translation, let profile = packet.extensionProfile {
                translation.apply(to: slot, range: packet.extensionRange, profile: profile)
            }
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
        if stream.rtx == nil { stream.responder?.packetSent(bytes, now: now) }
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
        afterFirstPacket(stream, now: now, path: path, random: &random)
        return true
    }

    /// Where, in a packet relayed on `stream`, the receiver's transport-wide sequence
    /// number goes: the element the sender wrote under the ID that becomes the receiver's.
    private func transportSequenceOffset(in packet: RTPPacketView, for stream: SendStreamState) -> Int? {
        let arrivingTransportID = stream.configuration.forwardedExtensions.map { table in
            stream.transportSequenceID.flatMap { table.sourceID(of: $0) }
        } ?? stream.transportSequenceID
        guard let extensionID = arrivingTransportID, let value = packet.extensionValue(id: extensionID), value.count == 2,
              let start = value.baseAddress, let base = packet.bytes.baseAddress else { return nil }
        return start - base
    }

    /// Sends `original` (the publisher's plain packet) again on a forwarded stream's RTX
    /// stream (`MediaCore.retransmit`): its header with the RTX SSRC, payload type and next
    /// sequence number, padding left out, a fresh transport-wide number; then the OSN and
    /// the payload, which `rewritePayload` renumbers as the original was. Allocates nothing.
    mutating func retransmit(_ id: SendStreamID, original packet: RTPPacketView, sequenceNumber: UInt16, timestampShift: UInt32 = 0,
                             now: Duration, path: SocketAddress?, rewritePayload: (UnsafeMutableRawBufferPointer) -> Void) -> Bool {
        guard let stream = stream(id), let rtx = stream.rtx, !stream.isEnded else { return false }
        let headerSize = packet.headerSize
        let payloadSize = packet.payloadRange.count
        let length = headerSize + 2 + payloadSize
        // Within an Ethernet MTU once protected, as originals are (2 bytes longer than theirs).
        guard length <= SendStreamState.maximumPacketSize, length + SRTPContext.trailerCapacity <= TransmitQueue.slotSize else { return false }
        guard let destination = stream.configuration.destination ?? path else {
            counters.packetsWithoutPath += 1
            return false
        }
        let translation = stream.configuration.forwardedExtensions
        let transportOffset = transportSequenceOffset(in: packet, for: stream)
        let transportSequence = nextTransportSequence
        let rtxSequence = stream.rtxSequenceNumber
        let context = output.context(stream.outboundKey)
        var written: UnsafeRawBufferPointer?
        let queued = output.transmits.enqueue(to: destination, socket: stream.configuration.socket, kind: .retransmission) { slot in
            slot.copyMemory(from: UnsafeRawBufferPointer(rebasing: packet.bytes[0..<headerSize]))
            slot[0] &= ~0x20
            slot[1] = slot[1] & 0x80 | rtx.payloadType
            slot.storeBytes(of: rtxSequence.bigEndian, toByteOffset: 2, as: UInt16.self)
            slot.storeBytes(of: rtx.ssrc.bigEndian, toByteOffset: 8, as: UInt32.self)
            if timestampShift != 0 {
                slot.storeBytes(of: (packet.timestamp &- timestampShift).bigEndian, toByteOffset: 4, as: UInt32.self)
            }
            if let translation, let profile = packet.extensionProfile {
                translation.apply(to: slot, range: packet.extensionRange, profile: profile)
            }
            if let transportOffset { slot.storeBytes(of: transportSequence.bigEndian, toByteOffset: transportOffset, as: UInt16.self) }
            slot.storeBytes(of: sequenceNumber.bigEndian, toByteOffset: headerSize, as: UInt16.self)
            let payload = UnsafeMutableRawBufferPointer(rebasing: slot[(headerSize + 2)..<length])
            payload.copyMemory(from: packet.payload)
            rewritePayload(payload)
            let size = context.map { (try? $0.protect(slot, length: length)) ?? 0 } ?? length
            written = UnsafeRawBufferPointer(rebasing: slot[0..<max(size, 0)])
            return size
        }
        guard queued, let bytes = written else { return false }
        stream.rtxSequenceNumber &+= 1
        if transportOffset != nil {
            nextTransportSequence &+= 1
            estimator.packetSent(transportSequenceNumber: transportSequence, size: bytes.count, now: now)
        }
        stream.statistics.retransmittedPacketsSent += 1
        stream.statistics.retransmittedBytesSent += payloadSize + 2
        return true
    }

    /// Sends a padding-only packet on a stream's RTX stream (RFC 4588 allows one; browsers
    /// probe this way): the stream's header with the RTX SSRC, payload type and next sequence
    /// number, a fresh transport-wide number, no payload and `paddingLength` bytes of padding
    /// (1...255). Its transport-wide feedback tells the bandwidth estimate what the link
    /// carried; receivers drop it. Allocates nothing.
    /// - Returns: the bytes sent (0 when the stream has no RTX or transport-wide numbers).
    mutating func sendPadding(_ id: SendStreamID, paddingLength: Int, now: Duration, path: SocketAddress?) -> Int {
        guard let stream = stream(id), let rtx = stream.rtx, !stream.isEnded, let transportSequenceID = stream.transportSequenceID,
              (1...255).contains(paddingLength) else { return 0 }
        guard let destination = stream.configuration.destination ?? path else {
            counters.packetsWithoutPath += 1
            return 0
        }
        let transportSequence = nextTransportSequence
        let context = output.context(stream.outboundKey)
        // The template header in place (a class's stored struct: no copy), restored after.
        let media = (stream.header.ssrc, stream.header.payloadType, stream.header.sequenceNumber, stream.header.marker)
        stream.header.ssrc = rtx.ssrc
        stream.header.payloadType = rtx.payloadType
        stream.header.sequenceNumber = stream.rtxSequenceNumber
        stream.header.marker = false
        withUnsafeBytes(of: transportSequence.bigEndian) { _ = stream.header.extensionBlock?.overwrite(id: transportSequenceID, with: $0) }
        var written = 0
        let queued = output.transmits.enqueue(to: destination, socket: stream.configuration.socket, kind: .padding) { slot in
            guard let headerSize = try? stream.header.serialize(into: slot, padding: true),
                  headerSize + paddingLength + SRTPContext.trailerCapacity <= slot.count else { return 0 }
            let length = headerSize + paddingLength
            for index in headerSize..<(length - 1) { slot[index] = 0 }
            slot[length - 1] = UInt8(paddingLength)
            let size = context.map { (try? $0.protect(slot, length: length)) ?? 0 } ?? length
            written = max(size, 0)
            return size
        }
        (stream.header.ssrc, stream.header.payloadType, stream.header.sequenceNumber, stream.header.marker) = media
        guard queued, written > 0 else { return 0 }
        stream.rtxSequenceNumber &+= 1
        nextTransportSequence &+= 1
        estimator.packetSent(transportSequenceNumber: transportSequence, size: written, now: now)
        stream.statistics.paddingPacketsSent += 1
        stream.statistics.paddingBytesSent += written
        return written
    }

    mutating func applyProbeResult(_ bitrate: Int, now: Duration) {
        estimator.applyProbeResult(bitrate, now: now)
        estimateUpdated = true
    }

    /// Hands `body` each NACKed sequence number of an RTX stream waiting for the forwarding
    /// server, oldest first, and forgets them.
    func takeRetransmissionRequests(_ id: SendStreamID, _ body: (UInt16) -> Void) {
        guard let stream = stream(id), !stream.retransmissionRequests.isEmpty else { return }
        for sequenceNumber in stream.retransmissionRequests { body(sequenceNumber) }
        stream.retransmissionRequests.removeAll(keepingCapacity: true)
    }

    /// A NACK about a stream with RTX: its numbers wait for the forwarding server.
    private func queueRetransmissionRequests(_ nack: GenericNACK, for stream: SendStreamState) {
        nack.forEachSequenceNumber { sequenceNumber in
            if stream.retransmissionRequests.count < RTXStream.maximumPendingRequests {
                stream.retransmissionRequests.append(sequenceNumber)
            } else {
                stream.statistics.retransmissionRequestsDropped += 1
            }
        }
    }

    /// A forwarded stream's media clock as its sender reported it.
    func setSenderClock(_ id: SendStreamID, timestamp: UInt32, at: Duration) {
        guard let stream = stream(id), stream.configuration.forwarded else { return }
        stream.lastMedia = (timestamp, at)
        stream.hasSenderClock = true
    }

    /// Whether the next frame of a video stream should be a keyframe; true consumes the request.
    func shouldForceKeyframe(_ id: SendStreamID, now: Duration) -> Bool {
        guard let stream = stream(id), var responder = stream.responder else { return false }
        defer { stream.responder = responder }
        return responder.shouldForceKeyframe(now: now)
    }

    /// Writes one packet (header, payload, SRTP) into the transmit queue, and records it in
    /// the history and the bandwidth estimator. Allocates nothing.
    private mutating func sendPacket(_ stream: SendStreamState, mediaTimestamp: UInt32, marker: Bool, audioLevel: AudioLevel?,
                                     payloadSize: Int, now: Duration, path: SocketAddress?,
                                     writePayload: (UnsafeMutableRawBufferPointer) -> Void) -> Bool {
        guard let destination = stream.configuration.destination ?? path else {
            counters.packetsWithoutPath += 1
            return false
        }
        let transportSequence = stream.transportSequenceID == nil ? nil : nextTransportSequence
        let context = output.context(stream.outboundKey)
        var written: UnsafeRawBufferPointer?
        let queued = output.transmits.enqueue(to: destination, socket: stream.configuration.socket, kind: .rtp) { slot in
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

    // MARK: Reports

    /// The first packet of a stream gets a sender report right behind it, and starts the
    /// report timer.
    private mutating func afterFirstPacket(_ stream: SendStreamState, now: Duration, path: SocketAddress?,
                                           random: inout SeededRandom) {
        guard stream.needsFirstReport else { return }
        stream.needsFirstReport = false
        queueSenderReport(for: stream, now: now, path: path, goodbye: false)
        if nextSenderReport == nil { nextSenderReport = now + senderReports.nextInterval(using: &random) }
    }

    /// Sender reports when they are due.
    mutating func handleTimeout(now: Duration, path: SocketAddress?, random: inout SeededRandom) {
        guard let due = nextSenderReport, now >= due else { return }
        for stream in streams where stream.packetsSent > 0 && !stream.isEnded {
            queueSenderReport(for: stream, now: now, path: path, goodbye: false)
        }
        nextSenderReport = now + senderReports.nextInterval(using: &random)
    }

    /// Queues a sender report with SDES (and BYE) for one stream, to its RTCP destination.
    private mutating func queueSenderReport(for stream: SendStreamState, now: Duration, path: SocketAddress?, goodbye: Bool) {
        var packets: [RTCPPacket] = [.senderReport(stream.senderReport(ntp: NTPTime.at(now, epoch: ntpEpoch), now: now)),
                                     .sourceDescription(SourceDescription(ssrc: stream.configuration.ssrc, cname: cname))]
        if goodbye { packets.append(.goodbye(Goodbye(sources: [stream.configuration.ssrc]))) }
        guard let destination = stream.configuration.rtcpDestination ?? stream.configuration.destination ?? path else { return }
        if output.queueRTCP(packets, to: destination, socket: stream.configuration.socket, key: stream.outboundKey) {
            senderReports.reportSent(size: RTCPPacket.compoundSize(of: packets))
        }
    }

    // MARK: What receivers say

    /// Acts on one authenticated RTCP packet about this side's streams: report blocks,
    /// transport feedback and REMB, NACK (answered from the history), PLI and FIR, RRTR
    /// (answered with a DLRR).
    /// - Returns: The round trip a report block measured (LSR/DLSR), if one did.
    mutating func handle(_ packet: RTCPPacket, now: Duration, path: SocketAddress?) -> Duration? {
        switch packet {
        case .senderReport(let report):
            return record(report.reports, now: now)
        case .receiverReport(let report):
            return record(report.reports, now: now)
        case .extendedReport(let report):
            answerReferenceTimes(report, path: path)
        case .transportFeedback(let feedback):
            counters.transportFeedbackReceived += 1
            if !streams.contains(where: { $0.configuration.ssrc == feedback.mediaSSRC || $0.rtx?.ssrc == feedback.mediaSSRC }) {
                counters.transportFeedbackNamingNoStream += 1
            }
            followsEstimate = true
            _ = estimator.handle(feedback, now: now)
            estimateUpdated = true
        case .receiverEstimatedMaxBitrate:
            _ = estimator.handle(packet, now: now)
            estimateUpdated = true
        case .genericNACK(let nack):
            guard let stream = streams.first(where: { $0.configuration.ssrc == nack.mediaSSRC }) else {
                counters.feedbackForUnknownStreams += 1
                return nil
            }
            stream.statistics.nackCount += 1
            if stream.rtx != nil {
                queueRetransmissionRequests(nack, for: stream)
            } else {
                resend(packet, for: stream, now: now, path: path)
            }
        case .pictureLossIndication(let pli):
            guard let stream = streams.first(where: { $0.configuration.ssrc == pli.mediaSSRC }) else {
                counters.feedbackForUnknownStreams += 1
                return nil
            }
            stream.responder?.handle(packet, now: now, rtt: roundTripTime) { _ in }
        case .fullIntraRequest(let fir):
            guard let stream = streams.first(where: { sender in fir.entries.contains { $0.ssrc == sender.configuration.ssrc } }) else {
                counters.feedbackForUnknownStreams += 1
                return nil
            }
            stream.responder?.handle(packet, now: now, rtt: roundTripTime) { _ in }
        default:
            break
        }
        return nil
    }

    /// Answers a NACK from the stream's history: the stored packets go out again as they were.
    private func resend(_ nack: RTCPPacket, for stream: SendStreamState, now: Duration, path: SocketAddress?) {
        guard var responder = stream.responder,
              let destination = stream.configuration.destination ?? path else { return }
        let transmits = output.transmits
        responder.handle(nack, now: now, rtt: roundTripTime) { bytes in
            transmits.enqueue(copying: bytes, to: destination, socket: stream.configuration.socket, kind: .retransmission)
        }
        stream.responder = responder
    }

    /// Reception report blocks about this side's streams: loss, jitter and the round trip
    /// from LSR/DLSR (RFC 3550 6.4.1).
    private mutating func record(_ blocks: [ReceptionReport], now: Duration) -> Duration? {
        let compactNow = NTPTime.compact(NTPTime.at(now, epoch: ntpEpoch))
        var measured: Duration?
        for block in blocks {
            guard let stream = streams.first(where: { $0.configuration.ssrc == block.ssrc }) else { continue }
            var rtt: Duration?
            if block.lastSenderReport != 0 {
                rtt = MediaCore.roundTrip(now: compactNow, sent: block.lastSenderReport, delay: block.delaySinceLastSenderReport)
                if let rtt {
                    setRoundTripTime(rtt)
                    measured = rtt
                }
            }
            // Loss from reports only while no transport-wide feedback has come: that feedback
            // carries the same losses per packet, and the estimator takes one source.
            if counters.transportFeedbackReceived == 0 {
                _ = estimator.handleReceiverReport(fractionLost: block.fractionLost, now: now)
                followsEstimate = true
                estimateUpdated = true
            }
            stream.statistics.remoteReport = RemoteReport(
                packetsLost: Int(block.cumulativeLost), jitter: Double(block.jitter) / Double(stream.configuration.clockRate),
                roundTripTime: rtt.map { $0 / .seconds(1) }, fractionLost: Double(block.fractionLost) / 256)
        }
        return measured
    }

    /// Answers each RRTR block (RFC 3611 4.4) at once with a DLRR whose delay is zero, so
    /// a receiver that sends no media (and so gets no report blocks) learns its RTT. Sent
    /// alone (reduced-size RTCP, RFC 5506) to where this side's RTCP goes.
    private mutating func answerReferenceTimes(_ report: ExtendedReport, path: SocketAddress?) {
        for case .receiverReferenceTime(let ntp) in report.blocks {
            guard let stream = streams.first(where: { $0.configuration.kind == .video }) ?? streams.first,
                  let destination = stream.configuration.rtcpDestination ?? stream.configuration.destination ?? path else { return }
            let answer = ExtendedReport(senderSSRC: stream.configuration.ssrc, blocks: [.dlrr([ExtendedReport.DLRRSubBlock(
                ssrc: report.senderSSRC, lastReceiverReport: NTPTime.compact(ntp), delaySinceLastReceiverReport: 0)])])
            if output.queueRTCP([.extendedReport(answer)], to: destination, socket: stream.configuration.socket, key: stream.outboundKey) {
                counters.referenceTimesAnswered += 1
            }
        }
    }

    /// The round-trip estimate this side uses (the estimator's, the PLI coalescing's).
    mutating func setRoundTripTime(_ rtt: Duration) {
        roundTripTime = max(rtt, .milliseconds(1))
        estimator.setRoundTripTime(roundTripTime)
    }

    // MARK: The estimate

    /// The latest estimate, when it changed since the last call and feedback has arrived.
    mutating func takeBandwidthUpdate() -> MediaCore.BandwidthUpdate? {
        guard followsEstimate, estimateUpdated else { return nil }
        estimateUpdated = false
        return MediaCore.BandwidthUpdate(targetBitrate: estimator.targetBitrate, opusExpectedLossPercent: estimator.opusExpectedLossPercent)
    }

    /// Sets the bounds of the estimate; a start restarts it.
    mutating func setBandwidthLimits(start: Int?, minimum: Int, maximum: Int) {
        if let start {
            var settings = bandwidth
            settings.startBitrate = start
            settings.minimumBitrate = minimum
            settings.maximumBitrate = maximum
            estimator = SendSideBandwidthEstimator(configuration: settings)
            estimator.setRoundTripTime(roundTripTime)
        } else {
            estimator.setBitrateLimits(minimum: minimum, maximum: maximum)
        }
    }

    /// A stream's counters, with its responder's.
    func statistics(of id: SendStreamID) -> OutboundRTPStreamStatistics? {
        guard let stream = stream(id) else { return nil }
        var statistics = stream.statistics
        if let responder = stream.responder {
            statistics.pliCount = responder.statistics.pliReceived
            statistics.firCount = responder.statistics.firReceived
            statistics.keyframesForced = responder.statistics.keyframesForced
            if stream.rtx == nil {
                statistics.retransmittedPacketsSent = responder.history.statistics.packetsRetransmitted
                statistics.retransmittedBytesSent = responder.history.statistics.bytesRetransmitted
            }
        }
        return statistics
    }
}
