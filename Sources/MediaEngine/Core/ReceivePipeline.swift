/// The path media goes on, as the pipelines need it: the selected address, and whether
/// it is pinned (feedback then goes there, not to where a stream's packets came from).
struct SelectedPath {
    var address: SocketAddress?
    var isPinned: Bool
}

/// Everything one side receives on a transport, sans-I/O: its receive streams (SRTP,
/// binding by SSRC or MID, reception statistics, jitter buffers and audio playout, frame
/// assembly and loss recovery), what the senders' reports say (lip sync, BYE), and the
/// feedback this side owes them: receiver reports with RRTR, transport-wide feedback,
/// NACK, PLI and FIR.
///
/// Datagrams and time come in with the selected path; feedback is queued in `output`,
/// frames and BYEs become its events. The core composes it with the path controller and
/// the send pipeline; tests drive it alone on a manual clock. Per media packet it
/// allocates nothing once warm. Not thread-safe.
struct ReceivePipeline {
    let output: CoreOutput
    private(set) var streams: [ReceiveStreamState] = []
    /// Counters this side keeps (merged into the core's `TransportStatistics`).
    private(set) var counters = TransportStatistics()
    /// The key the peer protects with, for streams added without one of their own.
    private(set) var inboundKeying: SRTPKeyingMaterial?
    /// When an authenticated RTP packet last came.
    private(set) var lastAuthenticatedArrival: Duration?
    /// Sees every Opus packet a jitter buffer accepts (stream, payload, RTP timestamp).
    var acceptedAudio: ((ReceiveStreamID, UnsafeRawBufferPointer, UInt32) -> Void)?
    private(set) var nextReceiverReport: Duration?
    private(set) var nextSynchronization: Duration?
    private(set) var roundTripTime: Duration
    private var bySSRC: [UInt32: ReceiveStreamState] = [:]
    /// Video streams by their sender's RTX SSRC.
    private var byRTXSSRC: [UInt32: ReceiveStreamState] = [:]
    private var keys: [(keying: SRTPKeyingMaterial, context: SRTPContext)] = []
    private var feedback: TransportFeedbackGenerator
    private var feedbackDestination: (address: SocketAddress, socket: Int)?
    private var receiverReports: RTCPInterval
    var lipSyncs: [String: LipSync] = [:]
    /// Reused for every video stream's actions, so releasing frames allocates nothing.
    private var videoActions: [VideoReceiveStream.Action] = []
    /// Reused for forwarding streams' NACK lists.
    private var forwardingNACKs: [UInt16] = []
    /// Scratch for trying one SRTCP packet against several keys.
    private var rtcpScratch = [UInt8](repeating: 0, count: TransmitQueue.slotSize)
    /// Where transport-wide feedback goes when no stream's source names a key (this side's own).
    private var defaultFeedbackKey: Int?
    private let extensions: RTPExtensionMap
    private let rtcpSSRC: UInt32
    private let ntpEpoch: UInt64
    private let replayWindow: Int

    /// - Throws: `SRTPError` when the configuration's inbound key is refused.
    init(configuration: MediaCore.Configuration, output: CoreOutput) throws(SRTPError) {
        self.output = output
        roundTripTime = configuration.initialRoundTripTime
        receiverReports = RTCPInterval(sessionBandwidth: max(configuration.receiveBandwidth, 8_000), weSent: false)
        feedback = TransportFeedbackGenerator(configuration: TransportFeedbackGenerator.Configuration(senderSSRC: configuration.rtcpSSRC))
        defaultFeedbackKey = configuration.outboundKeying.flatMap(output.keyIndex(of:))
        extensions = configuration.extensions
        rtcpSSRC = configuration.rtcpSSRC
        ntpEpoch = configuration.ntpEpoch
        replayWindow = configuration.replayWindow
        videoActions.reserveCapacity(16)
        forwardingNACKs.reserveCapacity(256)
        if let keying = configuration.inboundKeying {
            _ = try key(for: keying)
            inboundKeying = keying
        }
    }

    private mutating func key(for keying: SRTPKeyingMaterial) throws(SRTPError) -> Int {
        if let index = keys.firstIndex(where: { $0.keying == keying }) { return index }
        keys.append((keying, try SRTPContext(keying: keying, direction: .inbound, replayWindow: replayWindow)))
        return keys.count - 1
    }

    /// Sets the key the peer protects with; streams added from now on use it.
    mutating func setInboundKeying(_ keying: SRTPKeyingMaterial) throws(SRTPError) {
        _ = try key(for: keying)
        inboundKeying = keying
    }

    /// The keys a DTLS handshake agreed, for the streams there are and those to come: the
    /// peer protects with `inbound`, this side's feedback with `feedback` (an index into the
    /// output's keys). Streams that brought keys of their own keep them.
    mutating func useKeys(inbound: SRTPKeyingMaterial, feedback: Int) throws(SRTPError) {
        let index = try key(for: inbound)
        inboundKeying = inbound
        defaultFeedbackKey = feedback
        for stream in streams where stream.configuration.keying == nil {
            stream.inboundKey = index
            stream.feedbackKey = feedback
        }
    }

    // MARK: Streams

    /// Adds a stream; `feedbackKeying` protects this side's feedback about it (nil: plain).
    /// - Throws: `MediaCoreError` when its SSRC or MID is taken, or its key or jitter
    ///   buffer cannot be set up.
    mutating func add(_ configuration: ReceiveStreamConfiguration, id: ReceiveStreamID,
                      feedbackKeying: SRTPKeyingMaterial?) throws(MediaCoreError) {
        if let ssrc = configuration.ssrc, bySSRC[ssrc] != nil {
            throw MediaCoreError(.ssrcCollision, "receive stream SSRC \(ssrc) is already bound to another stream")
        }
        if let mid = configuration.mid,
           streams.contains(where: { $0.configuration.mid == mid
               && ($0.configuration.rid == nil || configuration.rid == nil || $0.configuration.rid == configuration.rid) }) {
            throw MediaCoreError(.ssrcCollision, "receive stream MID '\(mid)'\(configuration.rid.map { " RID '\($0)'" } ?? "") is already used by another stream")
        }
        let inboundKey: Int?
        let feedbackKey: Int?
        do {
            inboundKey = try (configuration.keying ?? inboundKeying).map { (keying) throws(SRTPError) in try key(for: keying) }
            feedbackKey = try (configuration.keying ?? feedbackKeying).map { (keying) throws(SRTPError) in try output.key(for: keying) }
        } catch {
            throw MediaCoreError(.srtp, "receive stream: \(error.message)")
        }
        let state: ReceiveStreamState
        do {
            state = try ReceiveStreamState(id: id, configuration: configuration, inboundKey: inboundKey, feedbackKey: feedbackKey)
        } catch {
            throw MediaCoreError(.configuration, "receive stream: \(error.message)")
        }
        state.video?.roundTripTime = roundTripTime
        streams.append(state)
        if let ssrc = configuration.ssrc { bySSRC[ssrc] = state }
        if configuration.kind == .video, let rtx = configuration.rtx { byRTXSSRC[rtx.ssrc] = state }
    }

    /// Removes a stream: its packets are counted as unknown from now on.
    mutating func remove(_ id: ReceiveStreamID) {
        guard let index = streams.firstIndex(where: { $0.id == id }) else { return }
        let stream = streams.remove(at: index)
        if let ssrc = stream.ssrc, bySSRC[ssrc] === stream { bySSRC[ssrc] = nil }
        if let rtx = stream.configuration.rtx, byRTXSSRC[rtx.ssrc] === stream { byRTXSSRC[rtx.ssrc] = nil }
        let participant = stream.configuration.participant
        if !streams.contains(where: { $0.configuration.participant == participant }) { lipSyncs[participant] = nil }
    }

    @inline(__always)
    func stream(_ id: ReceiveStreamID) -> ReceiveStreamState? { streams.first { $0.id == id } }

    /// Whether some stream takes plain RTP (an SDP session without keys).
    var hasPlainStream: Bool { streams.contains { $0.inboundKey == nil } }

    /// Whether no key is in use at all.
    var hasNoKeys: Bool { keys.isEmpty }

    // MARK: RTP

    /// Takes one RTP datagram from `source` (the path already accepted it): SRTP, the
    /// stream's statistics and transport feedback, then its jitter buffer, frame assembly,
    /// or (forwarding) the caller. Anything unusable is counted and dropped. `isOwn` tells
    /// this side's own SSRCs (a loop or a collision, never media to play).
    /// - Returns: The decrypted packet when it belongs to a forwarding stream.
    mutating func handleRTP(_ datagram: UnsafeMutableRawBufferPointer, from source: SocketAddress, socket: Int, now: Duration,
                            arrival: Duration, path: SelectedPath, random: inout SeededRandom, isOwn: (UInt32) -> Bool) -> ForwardedPacket? {
        guard datagram.count >= RTPPacketView.fixedHeaderSize else {
            counters.unknownStreamPackets += 1
            return nil
        }
        let payloadType = datagram[1] & 0x7F
        let ssrc = UnsafeRawBufferPointer(datagram).uint32(at: 8)
        if let original = byRTXSSRC[ssrc], original.configuration.rtx?.payloadType == payloadType {
            return handleRTX(datagram, for: original, from: source, socket: socket, now: now, arrival: arrival, path: path,
                             random: &random)
        }
        var target = stream(ssrc: ssrc, payloadType: payloadType, socket: socket)
        var binding = false
        if target == nil {
            if bySSRC[ssrc] == nil, isOwn(ssrc) {
                counters.ssrcCollisions += 1
                return nil
            }
            guard bySSRC[ssrc] == nil, let open = openStream(payloadType: payloadType, socket: socket) else {
                counters.unknownStreamPackets += 1
                return nil
            }
            target = open
            binding = open.configuration.mid != nil
        }
        guard let stream = target else { return nil }
        guard let length = unprotect(datagram, for: stream) else { return nil }
        let packet: RTPPacketView
        do {
            packet = try RTPPacketView(UnsafeRawBufferPointer(rebasing: datagram[0..<length]))
        } catch {
            stream.statistics.malformedPackets += 1
            return nil
        }
        recordTransportSequence(packet, from: source, socket: socket, arrival: arrival)
        let receiving: ReceiveStreamState
        if binding {
            guard let bound = bind(packet, ssrc: ssrc, payloadType: payloadType) else { return nil }
            receiving = bound
        } else {
            receiving = stream
        }
        lastAuthenticatedArrival = now
        receive(packet, on: receiving, from: source, socket: socket, now: now, arrival: arrival, path: path, random: &random)
        return receiving.configuration.forwarding ? ForwardedPacket(stream: receiving.id, packet: packet) : nil
    }

    /// The length of `datagram` once its stream's key took it (in place), or nil, counted as
    /// the stream's authentication failure, replay or malformed packet.
    private func unprotect(_ datagram: UnsafeMutableRawBufferPointer, for stream: ReceiveStreamState) -> Int? {
        guard let key = stream.inboundKey else { return datagram.count }
        do {
            return try keys[key].context.unprotect(datagram, length: datagram.count)
        } catch {
            switch error.code {
            case .authenticationFailed: stream.statistics.authenticationFailures += 1
            case .replayed, .tooOld: stream.statistics.replays += 1
            default: stream.statistics.malformedPackets += 1
            }
            return nil
        }
    }

    /// A packet of a video stream's RTX stream: authenticated under its own SSRC, then made
    /// the original again in place (the OSN its sequence number, the stream's SSRC and
    /// payload type, padding left out) and received as a late original.
    private mutating func handleRTX(_ datagram: UnsafeMutableRawBufferPointer, for stream: ReceiveStreamState, from source: SocketAddress,
                                    socket: Int, now: Duration, arrival: Duration, path: SelectedPath,
                                    random: inout SeededRandom) -> ForwardedPacket? {
        guard (stream.configuration.socket ?? socket) == socket, let ssrc = stream.ssrc ?? stream.configuration.ssrc else {
            counters.unknownStreamPackets += 1
            return nil
        }
        guard let length = unprotect(datagram, for: stream) else { return nil }
        guard let carried = try? RTPPacketView(UnsafeRawBufferPointer(rebasing: datagram[0..<length])) else {
            stream.statistics.malformedPackets += 1
            return nil
        }
        recordTransportSequence(carried, from: source, socket: socket, arrival: arrival)
        guard carried.payloadRange.count >= 2 else {
            stream.statistics.rtxPaddingReceived += 1
            return nil
        }
        let headerSize = carried.headerSize
        let originalSequence = carried.payload.uint16(at: 0)
        let payloadSize = carried.payloadRange.count - 2
        let payloadStart = headerSize + 2
        // copyMemory is a memmove: the two ranges overlap.
        if let base = datagram.baseAddress { (base + headerSize).copyMemory(from: base + payloadStart, byteCount: payloadSize) }
        datagram[0] &= ~0x20
        datagram[1] = datagram[1] & 0x80 | stream.configuration.payloadType
        datagram.storeBytes(of: originalSequence.bigEndian, toByteOffset: 2, as: UInt16.self)
        datagram.storeBytes(of: ssrc.bigEndian, toByteOffset: 8, as: UInt32.self)
        guard let packet = try? RTPPacketView(UnsafeRawBufferPointer(rebasing: datagram[0..<(headerSize + payloadSize)])) else {
            stream.statistics.malformedPackets += 1
            return nil
        }
        stream.statistics.retransmittedPacketsReceived += 1
        lastAuthenticatedArrival = now
        receive(packet, on: stream, from: source, socket: socket, now: now, arrival: arrival, path: path, random: &random,
                retransmitted: true)
        return stream.configuration.forwarding ? ForwardedPacket(stream: stream.id, packet: packet) : nil
    }

    /// The stream a packet belongs to by SSRC (in the clear even under SRTP), when its
    /// payload type and socket match.
    private func stream(ssrc: UInt32, payloadType: UInt8, socket: Int) -> ReceiveStreamState? {
        if let stream = bySSRC[ssrc] {
            return stream.configuration.payloadType == payloadType && (stream.configuration.socket ?? socket) == socket ? stream : nil
        }
        return nil
    }

    /// A stream announced without SSRC that takes packets of payload type `payloadType`:
    /// one with a MID binds by it, one without takes any SSRC (an SDP without `a=ssrc`).
    private func openStream(payloadType: UInt8, socket: Int) -> ReceiveStreamState? {
        func takes(_ stream: ReceiveStreamState) -> Bool {
            stream.configuration.ssrc == nil && stream.configuration.payloadType == payloadType
                && (stream.configuration.socket ?? socket) == socket
        }
        return streams.first { takes($0) && $0.configuration.mid == nil }
            ?? streams.first { takes($0) && $0.configuration.mid != nil }
    }

    /// Binds an authenticated packet of an unknown SSRC to the stream its MID (and, for a
    /// simulcast layer, its RID) names; one bound to another SSRC already is a collision
    /// (counted, dropped). A packet without them is dropped: the sender stamps them until
    /// this side's receiver reports acknowledge the SSRC, and none are sent before binding.
    private mutating func bind(_ packet: RTPPacketView, ssrc: UInt32, payloadType: UInt8) -> ReceiveStreamState? {
        func carries(_ text: String?, uri: String) -> Bool {
            guard let text else { return true }
            guard let id = extensions.id(for: uri), let value = packet.extensionValue(id: id) else { return false }
            return text.utf8.count == value.count && text.utf8.elementsEqual(value)
        }
        guard let stream = streams.first(where: { candidate in
                  candidate.configuration.mid != nil && candidate.configuration.payloadType == payloadType
                      && carries(candidate.configuration.mid, uri: RTPExtensionMap.midURI)
                      && carries(candidate.configuration.rid, uri: RTPExtensionMap.ridURI)
              }) else {
            counters.unknownStreamPackets += 1
            return nil
        }
        guard stream.ssrc == nil else {
            counters.ssrcCollisions += 1
            return nil
        }
        stream.ssrc = ssrc
        stream.statistics.ssrc = ssrc
        bySSRC[ssrc] = stream
        output.emit(.streamBound(stream.id, ssrc: ssrc))
        return stream
    }

    /// Transport-wide feedback covers every authenticated packet on the transport, one no
    /// stream takes included: a browser's probe padding on a simulcast layer it has not
    /// sent media on yet (so not bound) would otherwise be reported lost, and its estimate
    /// would fall for it.
    private mutating func recordTransportSequence(_ packet: RTPPacketView, from source: SocketAddress, socket: Int, arrival: Duration) {
        guard let id = extensions.id(for: RTPExtensionMap.transportSequenceNumberURI),
              let value = packet.extensionValue(id: id), value.count == 2 else { return }
        feedback.packetReceived(transportSequenceNumber: value.uint16(at: 0), now: arrival)
        // Named in the feedback: a browser takes feedback only about a stream of its own.
        feedback.mediaSSRC = packet.ssrc
        feedbackDestination = (source, socket)
    }

    private mutating func receive(_ packet: RTPPacketView, on stream: ReceiveStreamState, from source: SocketAddress, socket: Int,
                                  now: Duration, arrival: Duration, path: SelectedPath, random: inout SeededRandom,
                                  retransmitted: Bool = false) {
        stream.statistics.ssrc = packet.ssrc
        stream.source = (source, socket)
        if stream.configuration.kind == .audio, let id = extensions.id(for: RTPExtensionMap.audioLevelURI),
           let value = packet.extensionValue(id: id), value.count >= 1 {
            stream.audioLevel = (AudioLevel(byte: value[0]), now)
        }
        stream.reception.record(sequenceNumber: packet.sequenceNumber, timestamp: packet.timestamp,
                                payloadBytes: packet.payloadRange.count, arrival: arrival)
        if nextReceiverReport == nil { nextReceiverReport = now + receiverReports.nextInterval(using: &random) }
        if stream.configuration.forwarding {
            stream.lastArrival = now
            // Relayed as is: only losses are tracked here, to NACK them to the sender.
            let sequence = stream.unwrapper.unwrap(packet.sequenceNumber)
            stream.nacks?.insert(sequence, retransmitted: retransmitted, now: now)
            return
        }
        if nextSynchronization == nil { nextSynchronization = now + .seconds(1) }
        switch stream.configuration.kind {
        case .audio:
            guard let jitter = stream.jitter else { return }
            let outcome = jitter.insert(sequenceNumber: packet.sequenceNumber, timestamp: packet.timestamp,
                                        payload: packet.payload, arrival: now)
            guard outcome == .accepted || outcome == .restarted else { return }
            acceptedAudio?(stream.id, packet.payload, packet.timestamp)
            stream.lastArrival = now
            // The playout clock starts with the first packet (or after an idle spell), in
            // step with the other streams already playing, so one mix serves them all.
            if stream.nextPull == nil {
                stream.nextPull = streams.lazy.compactMap { $0 === stream ? nil : $0.nextPull }.min() ?? now
            }
        case .video:
            _ = stream.video?.insert(packet, arrival: now, retransmitted: retransmitted)
            processVideo(stream, now: now, path: path)
        }
    }

    // MARK: RTCP

    /// Checks and decrypts an SRTCP packet in place with the first inbound key that takes it
    /// (several keys only in SDP sessions whose sections differ); nil (counted) when none
    /// does and plain RTCP is not allowed.
    mutating func unprotectRTCP(_ datagram: UnsafeMutableRawBufferPointer, plainAllowed: Bool) -> Int? {
        var failure: SRTPError?
        if keys.count == 1 {
            do throws(SRTPError) {
                return try keys[0].context.unprotectRTCP(datagram, length: datagram.count)
            } catch {
                failure = error
            }
        } else if !keys.isEmpty, datagram.count <= rtcpScratch.count {
            // Each key is tried on a copy, so a failed attempt leaves the bytes intact.
            for entry in keys {
                let attempt: Int? = rtcpScratch.withUnsafeMutableBytes { scratch in
                    UnsafeMutableRawBufferPointer(rebasing: scratch[0..<datagram.count]).copyMemory(from: UnsafeRawBufferPointer(datagram))
                    do throws(SRTPError) {
                        let length = try entry.context.unprotectRTCP(scratch, length: datagram.count)
                        datagram.copyMemory(from: UnsafeRawBufferPointer(rebasing: scratch[0..<length]))
                        return length
                    } catch {
                        if failure == nil || error.code != .authenticationFailed { failure = error }
                        return nil
                    }
                }
                if let attempt { return attempt }
            }
        }
        if plainAllowed { return datagram.count }
        switch failure?.code {
        case .replayed?, .tooOld?: counters.rtcpReplays += 1
        default: counters.rtcpAuthenticationFailures += 1
        }
        return nil
    }

    /// A sender's report: the LSR/DLSR figures, its media clock, lip sync's mapping.
    mutating func handle(_ report: SenderReport, now: Duration) {
        for stream in streams where stream.ssrc == report.ssrc || stream.statistics.ssrc == report.ssrc {
            stream.statistics.rtcpReceived += 1
            stream.lastSenderReport = (NTPTime.compact(report.ntpTimestamp), now)
            stream.senderClock = (report.rtpTimestamp, now)
            let mapping = SenderClockMapping(ntp: report.ntpTimestamp, rtpTimestamp: report.rtpTimestamp,
                                             clockRate: stream.configuration.clockRate)
            stream.senderMapping = mapping
            if isLipSyncAudio(stream) { lipSyncs[stream.configuration.participant, default: LipSync()].audioSenderReport(mapping) }
            if isLipSyncVideo(stream) { lipSyncs[stream.configuration.participant, default: LipSync()].videoSenderReport(mapping) }
        }
    }

    /// A BYE: each stream of its sources ends (an event each).
    mutating func handle(_ bye: Goodbye) {
        for stream in streams where !stream.statistics.endedByGoodbye {
            guard let ssrc = stream.ssrc ?? stream.statistics.ssrc, bye.sources.contains(ssrc) else { continue }
            stream.statistics.endedByGoodbye = true
            counters.goodbyesReceived += 1
            output.emit(.goodbye(stream.id))
        }
    }

    /// The round-trip estimate video recovery and NACK timing use.
    mutating func setRoundTripTime(_ rtt: Duration) {
        roundTripTime = rtt
        for stream in streams { stream.video?.roundTripTime = rtt }
    }

    // MARK: Time

    /// When `handleTimeout` (or playout) next has work, or nil.
    var nextTimeout: Duration? {
        var next: Duration?
        func consider(_ time: Duration?) {
            guard let time else { return }
            next = next.map { min($0, time) } ?? time
        }
        consider(nextReceiverReport)
        consider(nextSynchronization)
        consider(feedback.nextFeedbackTime)
        for stream in streams {
            consider(stream.nextPull)
            consider(stream.video?.nextProcessTime())
            consider(stream.nacks?.nextProcessTime(rtt: roundTripTime))
        }
        return next
    }

    /// Receiver reports, lip sync, transport feedback, video deadlines and NACKs that are due.
    mutating func handleTimeout(now: Duration, path: SelectedPath, random: inout SeededRandom) {
        if let due = nextReceiverReport, now >= due {
            queueReceiverReports(now: now, path: path)
            nextReceiverReport = now + receiverReports.nextInterval(using: &random)
        }
        if let due = nextSynchronization, now >= due {
            synchronize()
            nextSynchronization = due + .seconds(1)
        }
        queueTransportFeedback(now: now, path: path)
        for stream in streams where stream.video?.nextProcessTime().map({ $0 <= now }) == true {
            processVideo(stream, now: now, path: path)
        }
        for stream in streams where stream.nacks?.nextProcessTime(rtt: roundTripTime).map({ $0 <= now }) == true {
            processForwardingLosses(stream, now: now, path: path)
        }
    }

    // MARK: Feedback this side sends

    /// Sends the NACKs a forwarding video stream has due.
    private mutating func processForwardingLosses(_ stream: ReceiveStreamState, now: Duration, path: SelectedPath) {
        guard stream.nacks != nil, let media = stream.statistics.ssrc else { return }
        var lost = forwardingNACKs
        // In place: a copy taken out and stored back would copy its list on each change.
        stream.nacks?.process(now: now, rtt: roundTripTime, into: &lost)
        if !lost.isEmpty {
            let nack = GenericNACK(senderSSRC: rtcpSSRC, mediaSSRC: media, lostSequenceNumbers: lost[...])
            if queueFeedback(.genericNACK(nack), for: stream, path: path) { stream.statistics.nackSent += 1 }
        }
        forwardingNACKs = lost
    }

    /// Runs a video stream's recovery: frames it releases become events, NACK, PLI and
    /// FIR are queued.
    mutating func processVideo(_ stream: ReceiveStreamState, now: Duration, path: SelectedPath) {
        guard stream.video != nil else { return }
        stream.video?.process(now: now, into: &videoActions)
        defer { videoActions.removeAll(keepingCapacity: true) }
        for action in videoActions {
            switch action {
            case .decode(let frame):
                output.emit(.videoFrame(stream.id, frame))
            case .sendNACK(let sequenceNumbers):
                guard let media = stream.statistics.ssrc else { continue }
                // At most 256 numbers per NACK keeps each datagram well under the MTU.
                var start = 0
                while start < sequenceNumbers.count {
                    let chunk = sequenceNumbers[start..<min(sequenceNumbers.count, start + 256)]
                    let nack = GenericNACK(senderSSRC: rtcpSSRC, mediaSSRC: media, lostSequenceNumbers: chunk)
                    if queueFeedback(.genericNACK(nack), for: stream, path: path) { stream.statistics.nackSent += 1 }
                    start += 256
                }
            case .sendPLI:
                sendPictureLoss(stream, path: path)
            case .sendFIR(let sequenceNumber):
                guard let media = stream.statistics.ssrc else { continue }
                let fir = FullIntraRequest(senderSSRC: rtcpSSRC, entries: [FullIntraRequest.Entry(ssrc: media, sequenceNumber: sequenceNumber)])
                if queueFeedback(.fullIntraRequest(fir), for: stream, path: path) { stream.statistics.firSent += 1 }
            }
        }
    }

    /// Asks a video stream's sender for a keyframe.
    func sendPictureLoss(_ stream: ReceiveStreamState, path: SelectedPath) {
        guard let media = stream.statistics.ssrc else { return }
        let pli = PictureLossIndication(senderSSRC: rtcpSSRC, mediaSSRC: media)
        if queueFeedback(.pictureLossIndication(pli), for: stream, path: path) { stream.statistics.pliSent += 1 }
    }

    /// Queues feedback about a stream to its sender, protected with the stream's feedback
    /// key. Best effort: the stream asks again.
    @discardableResult
    private func queueFeedback(_ packet: RTCPPacket, for stream: ReceiveStreamState, path: SelectedPath) -> Bool {
        guard let destination = feedbackRoute(for: stream, path: path) else { return false }
        return output.queueRTCP([packet], to: destination.address, socket: destination.socket, key: stream.feedbackKey)
    }

    /// Where feedback about a stream goes: the pinned path, else where its RTP comes from
    /// (symmetric RTP).
    private func feedbackRoute(for stream: ReceiveStreamState, path: SelectedPath) -> (address: SocketAddress, socket: Int)? {
        if path.isPinned, let address = path.address { return (address, stream.source?.socket ?? 0) }
        return stream.source ?? path.address.map { ($0, 0) }
    }

    /// Each stream's reception report, with an RRTR so this side learns its RTT.
    private mutating func queueReceiverReports(now: Duration, path: SelectedPath) {
        let ntp = NTPTime.at(now, epoch: ntpEpoch)
        for stream in streams {
            guard let ssrc = stream.statistics.ssrc, let destination = feedbackRoute(for: stream, path: path) else { continue }
            var delay: UInt32 = 0
            if let last = stream.lastSenderReport {
                delay = UInt32(clamping: Int64((now - last.arrival) / .seconds(1) * 65_536))
            }
            let block = stream.reception.receptionReport(ssrc: ssrc, lastSenderReport: stream.lastSenderReport?.ntp ?? 0,
                                                         delaySinceLastSenderReport: delay)
            let reference = ExtendedReport(senderSSRC: rtcpSSRC, blocks: [.receiverReferenceTime(ntp: ntp)])
            let packets: [RTCPPacket] = [.receiverReport(ReceiverReport(ssrc: rtcpSSRC, reports: [block])),
                                         .extendedReport(reference)]
            if output.queueRTCP(packets, to: destination.address, socket: destination.socket, key: stream.feedbackKey) {
                receiverReports.reportSent(size: RTCPPacket.compoundSize(of: packets))
            }
        }
    }

    /// The transport-wide feedback that is due, to where the numbered packets come from.
    private mutating func queueTransportFeedback(now: Duration, path: SelectedPath) {
        guard let destination = feedbackDestination else { return }
        let route = path.isPinned ? (path.address ?? destination.address) : destination.address
        let key = streams.first(where: { $0.source?.address == destination.address })?.feedbackKey ?? defaultFeedbackKey
        for packet in feedback.feedback(now: now) {
            if output.queueRTCP([.transportFeedback(packet)], to: route, socket: destination.socket, key: key) {
                counters.transportFeedbackSent += 1
            }
        }
    }

    // MARK: Figures

    /// A stream's counters, with its jitter buffer's or video recovery's.
    func statistics(of id: ReceiveStreamID) -> InboundRTPStreamStatistics? {
        guard let stream = stream(id) else { return nil }
        var statistics = stream.statistics
        statistics.packetsReceived = stream.reception.packetsReceived
        statistics.bytesReceived = stream.reception.bytesReceived
        statistics.packetsLost = stream.reception.packetsLost
        statistics.jitter = stream.reception.jitter
        if let video = stream.video {
            statistics.packetsDiscarded = video.statistics.packetsDiscarded + video.statistics.latePackets
                + video.statistics.duplicatePackets
            statistics.malformedPackets += video.statistics.malformedPackets + video.statistics.oversizedPackets
            statistics.packetsRecovered = video.statistics.packetsRecovered
        }
        if let jitter = stream.jitter {
            let audio = jitter.statistics
            statistics.packetsDiscarded = audio.packetsDiscarded
            statistics.malformedPackets += audio.packetsMalformed
            statistics.totalSamplesReceived = audio.totalSamplesReceived
            statistics.concealedSamples = audio.concealedSamples
            statistics.concealmentEvents = audio.concealmentEvents
            statistics.insertedSamplesForDeceleration = audio.insertedSamplesForDeceleration
            statistics.removedSamplesForAcceleration = audio.removedSamplesForAcceleration
            statistics.fecRecoveredFrames = audio.fecRecoveredFrames
            statistics.meanJitterBufferDelay = audio.meanPlayoutDelay
            statistics.jitterBufferDelay = audio.jitterBufferDelay
            statistics.jitterBufferEmittedCount = audio.jitterBufferEmittedCount
            statistics.jitterBufferTargetDelay = jitter.targetDelay / .seconds(1)
        }
        if let level = stream.audioLevel { statistics.audioLevel = level.level.amplitude }
        return statistics
    }
}
