import Testing
@testable import MediaEngine

@Suite struct RetransmissionHistoryTests {
    static let ssrc: UInt32 = 0xCAFE_0001
    let rtt = Duration.milliseconds(100)

    /// A plain RTP packet of `ssrc` with a 100-byte payload derived from its number.
    static func packet(_ sequenceNumber: UInt16, ssrc: UInt32 = ssrc) throws -> [UInt8] {
        let payload = (0..<100).map { UInt8(truncatingIfNeeded: Int(sequenceNumber) &* 31 &+ $0) }
        return try RTPPacket(header: RTPHeader(payloadType: 96, sequenceNumber: sequenceNumber, timestamp: 9, ssrc: ssrc),
                             payload: payload).serialized()
    }

    /// A history holding packets `numbers`, sent at t = 0.
    static func history(holding numbers: some Sequence<UInt16>,
                        configuration: RetransmissionHistory.Configuration = .init()) throws -> RetransmissionHistory {
        var history = RetransmissionHistory(ssrc: ssrc, configuration: configuration)
        for number in numbers {
            let bytes = try packet(number)
            bytes.withUnsafeBytes { _ = history.store($0, sentAt: .zero) }
        }
        return history
    }

    @Test func resendsTheIdenticalSRTPPacketWhichTheReceiverAcceptsOnlyWhenTheOriginalWasLost() throws {
        let keying = SRTPKeyingMaterial.random()
        let sender = try SRTPContext(keying: keying, direction: .outbound)
        let receiver = try SRTPContext(keying: keying, direction: .inbound)
        var history = RetransmissionHistory(ssrc: Self.ssrc)
        var sent: [[UInt8]] = []
        for number in UInt16(1)...3 {
            var buffer = try Self.packet(number) + [UInt8](repeating: 0, count: SRTPContext.trailerCapacity)
            let length = try buffer.withUnsafeMutableBytes { try sender.protect($0, length: $0.count - SRTPContext.trailerCapacity) }
            let wire = Array(buffer[0..<length])
            #expect(wire.withUnsafeBytes { history.store($0, sentAt: .zero) })
            sent.append(wire)
        }
        func unprotect(_ wire: [UInt8]) -> [UInt8]? {
            var copy = wire
            guard let length = try? copy.withUnsafeMutableBytes({ try receiver.unprotect($0, length: $0.count) }) else { return nil }
            return Array(copy[0..<length])
        }
        // Packet 2 is lost on the way; 1 and 3 arrive.
        #expect(unprotect(sent[0]) == (try Self.packet(1)))
        #expect(unprotect(sent[2]) == (try Self.packet(3)))
        var resent: [[UInt8]] = []
        history.retransmissions(for: GenericNACK(senderSSRC: 7, mediaSSRC: Self.ssrc, lostSequenceNumbers: [1, 2]),
                                now: .milliseconds(60), rtt: rtt) { resent.append(Array($0)) }
        #expect(resent == [sent[0], sent[1]])                          // byte for byte what went on the wire
        #expect(unprotect(resent[1]) == (try Self.packet(2)))          // the lost one is accepted
        #expect(unprotect(resent[0]) == nil)                           // the copy of a received one is a replay
        #expect(receiver.statistics.replays == 1)
    }

    @Test func eachPacketIsResentAtMostOncePerRTTWhateverTheNACKRate() throws {
        var history = try Self.history(holding: 0..<1_024)
        let nack = GenericNACK(senderSSRC: 7, mediaSSRC: Self.ssrc, lostSequenceNumbers: 0..<1_024)
        var resent = 0
        // A storm: 5000 NACKs for every stored packet, one per 0.1 ms, over 500 ms.
        for step in 0..<5_000 {
            resent += history.retransmissions(for: nack, now: .microseconds(100 * step), rtt: rtt) { _ in }
        }
        // 0, 100, 200, 300 and 400 ms: five rounds of 1024 at most.
        #expect(resent == 5 * 1_024)
        #expect(history.statistics.suppressedByRateLimit == 5_000 * 1_024 - resent)
        #expect(history.statistics.bytesRetransmitted == resent * 112)
    }

    @Test func unknownOverwrittenAndExpiredNumbersAreSkipped() throws {
        var configuration = RetransmissionHistory.Configuration()
        configuration.capacity = 1_000  // rounded up to 1024
        var history = try Self.history(holding: 0..<1_100, configuration: configuration)
        #expect(history.configuration.capacity == 1_024)
        var resent: [UInt16] = []
        let collect: (UnsafeRawBufferPointer) -> Void = { resent.append($0.uint16(at: 2)) }
        // 5 was overwritten by 1029; 2000 was never sent.
        history.retransmissions(for: [5, 2_000, 1_099], now: .milliseconds(10), rtt: rtt, collect)
        #expect(resent == [1_099])
        // A second later everything is too old.
        history.retransmissions(for: [1_098], now: .milliseconds(1_001), rtt: rtt, collect)
        #expect(resent == [1_099])
        #expect(history.statistics.unknownOrExpired == 3)
        #expect(history.storedCount(now: .milliseconds(1_001)) == 0)
    }

    @Test func sequenceNumbersAcrossTheWrapAreFound() throws {
        var history = try Self.history(holding: [65_534, 65_535, 0, 1])
        var resent: [UInt16] = []
        history.retransmissions(for: GenericNACK(senderSSRC: 7, mediaSSRC: Self.ssrc, lostSequenceNumbers: [65_535, 0]),
                                now: .milliseconds(10), rtt: rtt) { resent.append($0.uint16(at: 2)) }
        #expect(resent == [65_535, 0])
    }

    @Test func feedbackAndPacketsOfOtherSSRCsAreIgnored() throws {
        var history = try Self.history(holding: 0..<10)
        let foreign = try Self.packet(3, ssrc: 0xBAD)
        #expect(!foreign.withUnsafeBytes { history.store($0, sentAt: .zero) })
        let resent = history.retransmissions(for: GenericNACK(senderSSRC: 7, mediaSSRC: 0xBAD, lostSequenceNumbers: 0..<10),
                                             now: .milliseconds(10), rtt: rtt) { _ in }
        #expect(resent == 0)
        #expect(history.statistics.nacksForOtherSSRCs == 1 && history.statistics.foreignPackets == 1)
        #expect(history.statistics.sequenceNumbersRequested == 0)
        let tooLarge = try RTPPacket(header: RTPHeader(payloadType: 96, sequenceNumber: 11, timestamp: 9, ssrc: Self.ssrc),
                                     payload: [UInt8](repeating: 1, count: 1_489)).serialized()
        #expect(tooLarge.count == 1_501)
        #expect(!tooLarge.withUnsafeBytes { history.store($0, sentAt: .zero) })
        #expect(history.statistics.oversizedPackets == 1)
    }
}
