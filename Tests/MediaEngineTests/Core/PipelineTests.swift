import Testing
@testable import MediaEngine
@testable import MediaSimulation

private let aliceAddress = try! SocketAddress(parsing: "10.0.0.1:5000")
private let bobAddress = try! SocketAddress(parsing: "10.0.0.2:6000")

/// One datagram a pipeline queued, copied out of the queue.
private struct Sent {
    var bytes: [UInt8]
    var destination: SocketAddress
    var kind: Transmit.Kind

    var rtp: (sequenceNumber: UInt16, timestamp: UInt32)? {
        guard kind == .rtp || kind == .retransmission else { return nil }
        return bytes.withUnsafeBytes { raw in (try? RTPPacketView(raw)).map { ($0.sequenceNumber, $0.timestamp) } }
    }

    var rtcp: [RTCPPacket] { (try? RTCPPacket.parseCompound(bytes)) ?? [] }
}

private func drain(_ output: CoreOutput) -> [Sent] {
    var sent: [Sent] = []
    while let transmit = output.transmits.dequeue() {
        sent.append(Sent(bytes: Array(transmit.bytes), destination: transmit.destination, kind: transmit.kind))
    }
    return sent
}

private func configuration(seed: UInt64, outbound: SRTPKeyingMaterial? = nil, inbound: SRTPKeyingMaterial? = nil) -> MediaCore.Configuration {
    var configuration = MediaCore.Configuration()
    configuration.seed = seed
    configuration.rtcpSSRC = UInt32(truncatingIfNeeded: seed) &+ 0x1000
    configuration.ntpEpoch = NTPTime.from(seconds: 1_800_000_000, nanoseconds: 0)
    configuration.outboundKeying = outbound
    configuration.inboundKeying = inbound
    return configuration
}

/// The send pipeline alone, on a manual clock: what it queues is read back from its output.
@Suite struct SendPipelines {
    @Test func packetsCarryTheStreamsNumberingAndSenderReportsMapItsMediaClock() throws {
        let settings = configuration(seed: 1)
        let output = CoreOutput(transmitCapacity: 64)
        var pipeline = SendPipeline(configuration: settings, output: output)
        var random = SeededRandom(seed: 1)
        var stream = SendStreamConfiguration.opus(ssrc: 0x1234)
        stream.firstSequenceNumber = 1_000
        stream.timestampOffset = 5_000
        let id = SendStreamID(value: 0)
        try pipeline.add(stream, id: id, key: nil, random: &random)
        #expect(throws: MediaCoreError.self) { try pipeline.add(stream, id: SendStreamID(value: 1), key: nil, random: &random) }

        let payload = [UInt8](repeating: 0xAB, count: 60)
        for index in 0..<3 {
            let sent = payload.withUnsafeBytes {
                pipeline.sendAudio(id, payload: $0, mediaTimestamp: UInt32(index * 960), marker: false, audioLevel: nil,
                                   captureTime: nil, now: .milliseconds(20 * index), path: bobAddress, random: &random)
            }
            #expect(sent)
        }
        let sent = drain(output)
        // The first packet gets its sender report right behind it.
        #expect(sent.map(\.kind) == [.rtp, .rtcp, .rtp, .rtp])
        #expect(sent.allSatisfy { $0.destination == bobAddress })
        #expect(sent.compactMap(\.rtp).map(\.sequenceNumber) == [1_000, 1_001, 1_002])
        #expect(sent.compactMap(\.rtp).map(\.timestamp) == [5_000, 5_960, 6_920])
        guard case .senderReport(let first)? = sent[1].rtcp.first else { Issue.record("no sender report: \(sent[1].rtcp)"); return }
        #expect(first.ssrc == 0x1234 && first.rtpTimestamp == 5_000 && first.packetCount == 1 && first.ntpTimestamp == settings.ntpEpoch)

        // The next report: RFC 3550's 5 s minimum, randomized (0.5 to 1.5 times, over e - 3/2).
        let due = try #require(pipeline.nextSenderReport)
        #expect(due >= .seconds(2) && due <= .seconds(7), "next report at \(due)")
        pipeline.handleTimeout(now: due - .milliseconds(1), path: bobAddress, random: &random)
        #expect(drain(output).isEmpty)
        pipeline.handleTimeout(now: due, path: bobAddress, random: &random)
        let reports = drain(output)
        #expect(reports.count == 1)
        guard case .senderReport(let report)? = reports.first?.rtcp.first else { Issue.record("no sender report"); return }
        // The media clock runs on from the last packet's: 6,920 at 40 ms, 48 per ms since.
        let expected = 6_920 + Int((due - .milliseconds(40)) / .seconds(1) * 48_000)
        #expect(abs(Int(report.rtpTimestamp) - expected) <= 1, "\(report.rtpTimestamp) against \(expected)")
        #expect(report.packetCount == 3 && report.octetCount == 180)
        #expect(try #require(pipeline.nextSenderReport) > due)

        // Without a path nothing goes out, and that is counted.
        let stranded = payload.withUnsafeBytes {
            pipeline.sendAudio(id, payload: $0, mediaTimestamp: 2_880, marker: false, audioLevel: nil, captureTime: nil,
                               now: due, path: nil, random: &random)
        }
        #expect(!stranded && pipeline.counters.packetsWithoutPath == 1 && drain(output).isEmpty)
    }

    @Test func aNACKIsAnsweredFromTheHistoryAndAPLIForcesOneKeyframe() throws {
        let output = CoreOutput(transmitCapacity: 64)
        var pipeline = SendPipeline(configuration: configuration(seed: 2), output: output)
        var random = SeededRandom(seed: 2)
        var stream = SendStreamConfiguration.vp8(ssrc: 0x5678)
        stream.firstSequenceNumber = 200
        stream.maximumPayloadSize = 500
        let id = SendStreamID(value: 0)
        try pipeline.add(stream, id: id, key: nil, random: &random)
        let frame = (0..<1_400).map { UInt8(truncatingIfNeeded: $0 &* 7) }
        let sent = frame.withUnsafeBytes {
            pipeline.sendVideo(id, frame: $0, mediaTimestamp: 0, isKeyframe: true, temporalLayer: nil, captureTime: nil,
                               now: .zero, path: bobAddress, random: &random)
        }
        #expect(sent)
        let packets = drain(output).filter { $0.kind == .rtp }
        #expect(packets.compactMap(\.rtp).map(\.sequenceNumber) == [200, 201, 202])

        // A NACK for the second: the stored packet goes out again, byte for byte.
        let nack = RTCPPacket.genericNACK(GenericNACK(senderSSRC: 9, mediaSSRC: 0x5678, lostSequenceNumbers: [201]))
        _ = pipeline.handle(nack, now: .milliseconds(50), path: bobAddress)
        let resent = drain(output)
        #expect(resent.count == 1 && resent.first?.kind == .retransmission && resent.first?.bytes == packets[1].bytes)
        #expect(pipeline.statistics(of: id)?.retransmittedPacketsSent == 1 && pipeline.statistics(of: id)?.nackCount == 1)

        // A PLI (past the keyframe interval): exactly one forced keyframe.
        #expect(!pipeline.shouldForceKeyframe(id, now: .milliseconds(400)))
        let pli = RTCPPacket.pictureLossIndication(PictureLossIndication(senderSSRC: 9, mediaSSRC: 0x5678))
        _ = pipeline.handle(pli, now: .milliseconds(400), path: bobAddress)
        #expect(pipeline.shouldForceKeyframe(id, now: .milliseconds(400)))
        #expect(!pipeline.shouldForceKeyframe(id, now: .milliseconds(401)))

        // Feedback about an SSRC this side does not send changes nothing and is counted.
        _ = pipeline.handle(.pictureLossIndication(PictureLossIndication(senderSSRC: 9, mediaSSRC: 0xDEAD)), now: .milliseconds(500),
                            path: bobAddress)
        #expect(pipeline.counters.feedbackForUnknownStreams == 1)
        #expect(!pipeline.shouldForceKeyframe(id, now: .milliseconds(500)))
    }

    @Test func aReportBlockGivesTheRoundTripAndTheLoss() throws {
        let settings = configuration(seed: 3)
        let output = CoreOutput(transmitCapacity: 64)
        var pipeline = SendPipeline(configuration: settings, output: output)
        var random = SeededRandom(seed: 3)
        let id = SendStreamID(value: 0)
        try pipeline.add(.opus(ssrc: 0x42), id: id, key: nil, random: &random)
        let sentAt = Duration.milliseconds(1_000)
        _ = [UInt8](repeating: 1, count: 40).withUnsafeBytes {
            pipeline.sendAudio(id, payload: $0, mediaTimestamp: 0, marker: false, audioLevel: nil, captureTime: nil,
                               now: sentAt, path: bobAddress, random: &random)
        }
        guard case .senderReport(let report)? = drain(output).last?.rtcp.first else { Issue.record("no sender report"); return }
        // The receiver held the report 60 ms and answered; it arrives 100 ms after it left: 40 ms of network.
        let block = ReceptionReport(ssrc: 0x42, fractionLost: 64, cumulativeLost: 3, extendedHighestSequenceNumber: 10, jitter: 480,
                                    lastSenderReport: NTPTime.compact(report.ntpTimestamp),
                                    delaySinceLastSenderReport: UInt32(0.060 * 65_536))
        let measured = pipeline.handle(.receiverReport(ReceiverReport(ssrc: 7, reports: [block])), now: sentAt + .milliseconds(100),
                                       path: bobAddress)
        let rtt = try #require(measured)
        #expect(abs(rtt / .milliseconds(1) - 40) < 0.1, "RTT \(rtt)")
        let remote = try #require(pipeline.statistics(of: id)?.remoteReport)
        #expect(remote.packetsLost == 3 && remote.fractionLost == 0.25 && remote.jitter == 0.01)
        #expect(pipeline.takeBandwidthUpdate() != nil, "a report's loss moves the estimate")
        #expect(pipeline.takeBandwidthUpdate() == nil, "and is taken once")
    }
}

/// The receive pipeline alone, on a manual clock, fed by a send pipeline: every datagram is
/// delivered (or dropped) by hand.
@Suite struct ReceivePipelines {
    /// A sender and a receiver of one stream, no network: `deliver` hands the receiver what
    /// the sender queued, minus the packets `drop` names.
    struct Pair {
        let sending = CoreOutput(transmitCapacity: 256)
        let receiving = CoreOutput(transmitCapacity: 256)
        var sender: SendPipeline
        var receiver: ReceivePipeline
        var random = SeededRandom(seed: 9)
        let path = SelectedPath(address: aliceAddress, isPinned: true)

        init(outbound: SRTPKeyingMaterial? = nil, inbound: SRTPKeyingMaterial? = nil) throws {
            sender = SendPipeline(configuration: configuration(seed: 4, outbound: outbound), output: sending)
            receiver = try ReceivePipeline(configuration: configuration(seed: 5, inbound: inbound), output: receiving)
        }

        /// What the sender queued, RTP first in order; returns the RTP sequence numbers delivered.
        @discardableResult
        mutating func deliver(at now: Duration, drop: Set<UInt16> = []) -> [UInt16] {
            var delivered: [UInt16] = []
            for var sent in drain(sending) where sent.kind == .rtp || sent.kind == .retransmission {
                if let number = sent.rtp?.sequenceNumber, drop.contains(number) { continue }
                sent.rtp.map { delivered.append($0.sequenceNumber) }
                deliver(&sent.bytes, at: now)
            }
            return delivered
        }

        mutating func deliver(_ bytes: inout [UInt8], at now: Duration) {
            let path = path
            bytes.withUnsafeMutableBytes { datagram in
                _ = receiver.handleRTP(datagram, from: aliceAddress, socket: 0, now: now, arrival: now, path: path, random: &random) { $0 == 0x0BAD }
            }
        }
    }

    /// Datagrams a late reader takes in one batch still arrived apart: transport-wide
    /// feedback reports the arrivals it is given (the socket's stamps), not the time of the
    /// read. Reported at the read's time, a sender's probe burst arrived in 0 µs, and Chrome
    /// throws such a probe away.
    @Test func transportFeedbackReportsWhenPacketsArrivedNotWhenTheyWereRead() throws {
        var pair = try Pair()
        let out = SendStreamID(value: 0)
        try pair.sender.add(.opus(ssrc: 0x1234), id: out, key: nil, random: &pair.random)
        try pair.receiver.add(ReceiveStreamConfiguration(kind: .audio, payloadType: 111, clockRate: 48_000, ssrc: 0x1234),
                              id: ReceiveStreamID(value: 0), feedbackKeying: nil)
        let payload = [UInt8](repeating: 0xF8, count: 40)
        for index in 0..<5 {
            payload.withUnsafeBytes {
                pair.sender.sendAudio(out, payload: $0, mediaTimestamp: UInt32(index * 480), marker: false, audioLevel: nil,
                                      captureTime: nil, now: .milliseconds(10 * index), path: aliceAddress, random: &pair.random)
            }
        }
        // Sent 10 ms apart, arriving 10 ms apart (5 ms on the way), all read at 60 ms.
        let read = Duration.milliseconds(60)
        let path = pair.path
        for (index, var sent) in drain(pair.sending).filter({ $0.kind == .rtp }).enumerated() {
            sent.bytes.withUnsafeMutableBytes { datagram in
                _ = pair.receiver.handleRTP(datagram, from: aliceAddress, socket: 0, now: read, arrival: .milliseconds(10 * index + 5),
                                            path: path, random: &pair.random) { _ in false }
            }
        }
        pair.receiver.handleTimeout(now: read + .milliseconds(100), path: path, random: &pair.random)
        let feedback = drain(pair.receiving).flatMap(\.rtcp).compactMap { packet -> TransportFeedback? in
            if case .transportFeedback(let feedback) = packet { return feedback }
            return nil
        }
        let offsets = try #require(feedback.first).packets.compactMap(\.receiveOffset)
        let gaps = zip(offsets.dropFirst(), offsets).map { $0 - $1 }
        #expect(feedback.count == 1 && gaps == Array(repeating: .milliseconds(10), count: 4), "\(gaps)")
    }

    @Test func audioPlaysOnTheClockALossIsConcealedAndTheReportCarriesIt() throws {
        var pair = try Pair()
        let out = SendStreamID(value: 0)
        try pair.sender.add(.opus(ssrc: 0x1234), id: out, key: nil, random: &pair.random)
        let id = ReceiveStreamID(value: 0)
        try pair.receiver.add(ReceiveStreamConfiguration(kind: .audio, payloadType: 111, clockRate: 48_000, ssrc: 0x1234), id: id,
                              feedbackKeying: nil)
        let encoder = try Opus.Encoder(configuration: Opus.Configuration())
        var tone = ToneGenerator(.sine(440))
        var pcm = [Int16](repeating: 0, count: 960)
        var packet = [UInt8](repeating: 0, count: 1_500)
        var scratch = [Int16](repeating: 0, count: 5_760)
        var played: [Int16] = []
        for index in 0..<100 {
            let now = Duration.milliseconds(20 * index)
            pcm.withUnsafeMutableBufferPointer { tone.fill($0) }
            let size = try pcm.withUnsafeBufferPointer { samples in try packet.withUnsafeMutableBytes { try encoder.encode(samples, into: $0) } }
            _ = packet.withUnsafeBytes {
                pair.sender.sendAudio(out, payload: UnsafeRawBufferPointer(rebasing: $0[0..<size]), mediaTimestamp: UInt32(index * 960),
                                      marker: false, audioLevel: nil, captureTime: nil, now: now, path: aliceAddress, random: &pair.random)
            }
            // 10 ms on the way; the 41st packet never arrives.
            if index == 40 {
                #expect(drain(pair.sending).contains { $0.kind == .rtp })
            } else {
                pair.deliver(at: now + .milliseconds(10))
            }
            scratch.withUnsafeMutableBufferPointer { buffer in
                pair.receiver.playAudio(now: now + .milliseconds(10), scratch: buffer, block: { _, frame in played.append(contentsOf: frame) },
                                        tickEnded: { _ in })
            }
        }
        let statistics = try #require(pair.receiver.statistics(of: id))
        #expect(statistics.packetsReceived == 99 && statistics.packetsLost == 1, "\(statistics.packetsReceived) received, \(statistics.packetsLost) lost")
        #expect(statistics.concealmentEvents >= 1 && statistics.concealedSamples >= 960)
        // Playout starts with the first packet and runs one frame per 20 ms of the clock.
        #expect(played.count == 100 * 960, "\(played.count) samples played")
        let heard = played.dropFirst(9_600).withUnsafeBufferPointer { AudioQuality.toneFrequency($0) }
        #expect(abs((heard ?? 0) - 440) < 2, "tone at \(heard ?? 0) Hz")

        // The receiver report is due on the clock, goes to the pinned path, and says one was lost.
        let due = try #require(pair.receiver.nextReceiverReport)
        pair.receiver.handleTimeout(now: max(due, .seconds(2)), path: pair.path, random: &pair.random)
        let reports = drain(pair.receiving).filter { $0.kind == .rtcp }
        let blocks = reports.flatMap(\.rtcp).compactMap { packet -> ReceptionReport? in
            if case .receiverReport(let report) = packet { return report.reports.first }
            return nil
        }
        #expect(reports.allSatisfy { $0.destination == aliceAddress })
        #expect(blocks.count == 1 && blocks.first?.ssrc == 0x1234 && blocks.first?.cumulativeLost == 1)
        #expect(reports.flatMap(\.rtcp).contains { if case .extendedReport = $0 { true } else { false } }, "an RRTR asks for the round trip")
    }

    @Test func forgedReplayedLoopedAndShortPacketsAreCountedAndNeverPlayed() throws {
        let key = SRTPKeyingMaterial.random()
        var pair = try Pair(outbound: key, inbound: key)
        let keyIndex = try pair.sending.key(for: key)
        let out = SendStreamID(value: 0)
        try pair.sender.add(.opus(ssrc: 0x1234), id: out, key: keyIndex, random: &pair.random)
        let id = ReceiveStreamID(value: 0)
        try pair.receiver.add(ReceiveStreamConfiguration(kind: .audio, payloadType: 111, clockRate: 48_000, ssrc: 0x1234), id: id,
                              feedbackKeying: nil)
        // A stranger who knows the SSRC but not the key.
        let strangerOutput = CoreOutput(transmitCapacity: 8)
        var stranger = SendPipeline(configuration: configuration(seed: 6), output: strangerOutput)
        try stranger.add(.opus(ssrc: 0x1234), id: out, key: try strangerOutput.key(for: .random()), random: &pair.random)

        let payload: [UInt8] = [0xF8, 0xFF, 0xFE]  // an Opus packet of silence (20 ms, CELT)
        func send(_ pipeline: inout SendPipeline, at now: Duration, random: inout SeededRandom) {
            _ = payload.withUnsafeBytes {
                pipeline.sendAudio(out, payload: $0, mediaTimestamp: 0, marker: false, audioLevel: nil, captureTime: nil, now: now,
                                   path: aliceAddress, random: &random)
            }
        }
        send(&stranger, at: .zero, random: &pair.random)
        for var forged in drain(strangerOutput) where forged.kind == .rtp { pair.deliver(&forged.bytes, at: .milliseconds(5)) }
        send(&pair.sender, at: .milliseconds(20), random: &pair.random)
        let genuine = try #require(drain(pair.sending).first { $0.kind == .rtp })
        var copy = genuine.bytes
        pair.deliver(&copy, at: .milliseconds(30))
        copy = genuine.bytes
        pair.deliver(&copy, at: .milliseconds(31))
        // This side's own SSRC coming back, and a datagram too short for a header.
        var looped = genuine.bytes
        looped.replaceSubrange(8..<12, with: [0, 0, 0x0B, 0xAD])
        pair.deliver(&looped, at: .milliseconds(32))
        var short: [UInt8] = [0x80, 111, 0, 1, 0]
        pair.deliver(&short, at: .milliseconds(33))

        let statistics = try #require(pair.receiver.statistics(of: id))
        #expect(statistics.authenticationFailures == 1 && statistics.replays == 1 && statistics.packetsReceived == 1)
        #expect(pair.receiver.counters.ssrcCollisions == 1 && pair.receiver.counters.unknownStreamPackets == 1)
        #expect(pair.receiver.lastAuthenticatedArrival == .milliseconds(30))
    }

    @Test func aLostVideoPacketIsNACKedAndTheFrameReleasedWhenItsRetransmissionComes() throws {
        var pair = try Pair()
        let out = SendStreamID(value: 0)
        var stream = SendStreamConfiguration.vp8(ssrc: 0x5678)
        stream.maximumPayloadSize = 300
        try pair.sender.add(stream, id: out, key: nil, random: &pair.random)
        let id = ReceiveStreamID(value: 0)
        try pair.receiver.add(ReceiveStreamConfiguration(kind: .video, payloadType: 96, clockRate: 90_000, ssrc: 0x5678), id: id,
                              feedbackKeying: nil)
        let encoder = try VP8.Encoder(configuration: VP8.Configuration(width: 320, height: 240, bitrate: 400_000))
        var picture = VideoFrame(width: 320, height: 240)
        var pattern = TestPattern(width: 320, height: 240)
        pattern.render(into: &picture)
        var encoded = [UInt8](repeating: 0, count: 200_000)
        let info = try #require(try encoded.withUnsafeMutableBytes { try encoder.encode(picture, forceKeyframe: true, into: $0) })
        _ = encoded.withUnsafeBytes {
            pair.sender.sendVideo(out, frame: UnsafeRawBufferPointer(rebasing: $0[0..<info.byteCount]), mediaTimestamp: 0, isKeyframe: true,
                                  temporalLayer: nil, captureTime: nil, now: .zero, path: aliceAddress, random: &pair.random)
        }
        let packets = drain(pair.sending).filter { $0.kind == .rtp }
        #expect(packets.count >= 3, "\(info.byteCount) bytes in \(packets.count) packets")
        let missing = try #require(packets[1].rtp?.sequenceNumber)
        for var packet in packets where packet.rtp?.sequenceNumber != missing { pair.deliver(&packet.bytes, at: .milliseconds(10)) }

        // The receiver NACKs the hole on its own clock; nothing is released meanwhile.
        var nacked: Duration?
        var now = Duration.milliseconds(10)
        while nacked == nil && now < .seconds(1) {
            pair.receiver.handleTimeout(now: now, path: pair.path, random: &pair.random)
            for sent in drain(pair.receiving) {
                for case .genericNACK(let nack) in sent.rtcp where nack.lostSequenceNumbers.contains(missing) { nacked = now }
            }
            #expect(pair.receiving.nextEvent() == nil, "a frame with a hole was released")
            now += .milliseconds(5)
        }
        let asked = try #require(nacked)
        #expect(asked <= .milliseconds(100), "NACK at \(asked)")
        #expect(pair.receiver.statistics(of: id)?.nackSent ?? 0 >= 1)

        // The sender answers from its history; the frame is whole and released for decoding.
        _ = pair.sender.handle(.genericNACK(GenericNACK(senderSSRC: 1, mediaSSRC: 0x5678, lostSequenceNumbers: [missing])), now: asked,
                               path: aliceAddress)
        #expect(pair.deliver(at: asked + .milliseconds(10)) == [missing])
        guard case .videoFrame(let stream, let frame)? = pair.receiving.nextEvent() else { Issue.record("no frame released"); return }
        #expect(stream == id && frame.isKeyframe && frame.data == Array(encoded[0..<info.byteCount]))
        #expect(pair.receiver.statistics(of: id)?.packetsLost == 0)
    }
}
