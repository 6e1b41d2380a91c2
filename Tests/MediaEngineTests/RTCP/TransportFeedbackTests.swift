import Testing
@testable import MediaEngine

extension RTCPTests {
    @Suite struct TransportFeedbackTests {
        typealias Chunk = TransportFeedback.PacketChunk
        static let n = TransportFeedback.StatusSymbol.notReceived
        static let s = TransportFeedback.StatusSymbol.receivedSmallDelta
        static let l = TransportFeedback.StatusSymbol.receivedLargeDelta

        static let valid: [Vector<TransportFeedback>] = [
            Vector("run of 3 small deltas, zero alignment", [
                0x8F,                    // V=2 P=0 FMT=15
                0xCD,                    // PT=205 RTPFB
                0x00, 0x06,              // length 6 (28 bytes)
                0x00, 0x00, 0x00, 0x01,  // SSRC of packet sender 1
                0x7E, 0x55, 0x00, 0x01,  // SSRC of media source
                0x00, 0x64,              // base sequence number 100
                0x00, 0x03,              // packet status count 3
                0x00, 0x01, 0x02,        // reference time 258 (16.512 s)
                0x07,                    // feedback packet count 7
                0x20, 0x03,              // run length chunk: T=0 S=01 (small) length 3
                0x04, 0x00, 0xFF,        // deltas 1 ms, 0 ms, 63.75 ms
                0x00, 0x00, 0x00,        // zero padding to 32 bits (P clear)
            ], TransportFeedback(
                senderSSRC: 1, mediaSSRC: 0x7E55_0001, baseSequenceNumber: 100, packetStatusCount: 3, referenceTime: 258,
                feedbackPacketCount: 7, chunks: [.runLength(s, count: 3)], receiveDeltas: [4, 0, 255]
            )),
            Vector("one-bit vector across the wrap, P-bit padding of 3 (libwebrtc)", [
                0xAF, 0xCD, 0x00, 0x06,  // V=2 P=1 FMT=15, RTPFB, length 6 (28 bytes)
                0x00, 0x00, 0x00, 0x01,  // SSRC of packet sender
                0x7E, 0x55, 0x00, 0x01,  // SSRC of media source
                0xFF, 0xFE, 0x00, 0x05,  // base 65534, status count 5
                0xFF, 0xFF, 0xFF,        // reference time -1 (-64 ms)
                0xFF,                    // feedback packet count 255
                0xAC, 0x00,              // T=1 S=0: 1 0 1 1 0, then 9 unused 0 bits
                0x08, 0x10, 0x01,        // deltas 2 ms, 4 ms, 0.25 ms
                0x00, 0x00, 0x03,        // RTCP padding, count 3
            ], TransportFeedback(
                senderSSRC: 1, mediaSSRC: 0x7E55_0001, baseSequenceNumber: 65534, packetStatusCount: 5, referenceTime: -1,
                feedbackPacketCount: 255, chunks: [.oneBitVector([s, n, s, s, n] + Array(repeating: n, count: 9))],
                receiveDeltas: [8, 16, 1], paddingSize: 3
            )),
            Vector("two-bit vector with a large and a negative delta", [
                0x8F, 0xCD, 0x00, 0x07,  // V=2 P=0 FMT=15, RTPFB, length 7 (32 bytes)
                0x00, 0x00, 0x00, 0x01,  // SSRC of packet sender
                0x7E, 0x55, 0x00, 0x01,  // SSRC of media source
                0x03, 0xE8, 0x00, 0x07,  // base 1000, status count 7
                0x7F, 0xFF, 0xFF,        // reference time 8388607, the largest
                0x01,                    // feedback packet count 1
                0xD8, 0x91,              // T=1 S=1: 01 10 00 10 01 00 01
                0x02,                    // small delta 0.5 ms
                0x04, 0x00,              // large delta 1024 ticks (256 ms)
                0xFF, 0xF0,              // large delta -16 ticks (-4 ms): reordered
                0x05,                    // small delta 1.25 ms
                0x00,                    // small delta 0
                0x00, 0x00, 0x00,        // zero padding
            ], TransportFeedback(
                senderSSRC: 1, mediaSSRC: 0x7E55_0001, baseSequenceNumber: 1000, packetStatusCount: 7, referenceTime: 8_388_607,
                feedbackPacketCount: 1, chunks: [.twoBitVector([s, l, n, l, s, n, s])], receiveDeltas: [2, 1024, -16, 5, 0]
            )),
            Vector("three runs: lost, large, small; no padding needed", [
                0x8F, 0xCD, 0x00, 0x0B,  // V=2 P=0 FMT=15, RTPFB, length 11 (48 bytes)
                0x00, 0x00, 0x00, 0x01,  // SSRC of packet sender
                0x7E, 0x55, 0x00, 0x01,  // SSRC of media source
                0x00, 0x0A, 0x00, 0x1E,  // base 10, status count 30
                0x00, 0x00, 0x40, 0x00,  // reference time 64 (4.096 s), feedback packet count 0
                0x00, 0x0A,              // run: S=00 (not received) x 10
                0x40, 0x02,              // run: S=10 (large) x 2
                0x20, 0x12,              // run: S=01 (small) x 18
                0x01, 0x00, 0x01, 0x00,  // large deltas 64 ms, 64 ms
                0x01, 0x01, 0x01, 0x01,  // 18 small deltas of 0.25 ms
                0x01, 0x01, 0x01, 0x01,
                0x01, 0x01, 0x01, 0x01,
                0x01, 0x01, 0x01, 0x01,
                0x01, 0x01,
            ], TransportFeedback(
                senderSSRC: 1, mediaSSRC: 0x7E55_0001, baseSequenceNumber: 10, packetStatusCount: 30, referenceTime: 64,
                feedbackPacketCount: 0, chunks: [.runLength(n, count: 10), .runLength(l, count: 2), .runLength(s, count: 18)],
                receiveDeltas: [256, 256] + Array(repeating: 1, count: 18)
            )),
            Vector("last run reaches past the count", [
                0x8F, 0xCD, 0x00, 0x05,  // V=2 P=0 FMT=15, RTPFB, length 5 (24 bytes)
                0x00, 0x00, 0x00, 0x01,  // SSRC of packet sender
                0x7E, 0x55, 0x00, 0x01,  // SSRC of media source
                0x00, 0x05, 0x00, 0x02,  // base 5, status count 2
                0x00, 0x00, 0x00, 0x00,  // reference time 0, feedback packet count 0
                0x20, 0x05,              // run: small x 5, only 2 counted
                0x01, 0x02,              // deltas 0.25 ms, 0.5 ms
            ], TransportFeedback(
                senderSSRC: 1, mediaSSRC: 0x7E55_0001, baseSequenceNumber: 5, packetStatusCount: 2, referenceTime: 0,
                feedbackPacketCount: 0, chunks: [.runLength(s, count: 5)], receiveDeltas: [1, 2]
            )),
            Vector("longest run of losses", [
                0x8F, 0xCD, 0x00, 0x06,  // V=2 P=0 FMT=15, RTPFB, length 6 (28 bytes)
                0x00, 0x00, 0x00, 0x01,  // SSRC of packet sender
                0x7E, 0x55, 0x00, 0x01,  // SSRC of media source
                0x9C, 0x40, 0x20, 0x00,  // base 40000, status count 8192
                0x00, 0x00, 0x00, 0x02,  // reference time 0, feedback packet count 2
                0x1F, 0xFF,              // run: not received x 8191
                0x20, 0x01,              // run: small x 1
                0x00,                    // delta 0
                0x00, 0x00, 0x00,        // zero padding
            ], TransportFeedback(
                senderSSRC: 1, mediaSSRC: 0x7E55_0001, baseSequenceNumber: 40_000, packetStatusCount: 8_192, referenceTime: 0,
                feedbackPacketCount: 2, chunks: [.runLength(n, count: 8_191), .runLength(s, count: 1)], receiveDeltas: [0]
            )),
            Vector("zero alignment and RFC 3550 padding of 4", [
                0xAF, 0xCD, 0x00, 0x07,  // V=2 P=1 FMT=15, RTPFB, length 7 (32 bytes)
                0x00, 0x00, 0x00, 0x01,  // SSRC of packet sender
                0x7E, 0x55, 0x00, 0x01,  // SSRC of media source
                0x00, 0x64, 0x00, 0x03,  // base 100, status count 3
                0x00, 0x01, 0x02, 0x07,  // reference time 258, feedback packet count 7
                0x20, 0x03,              // run: small x 3
                0x04, 0x00, 0xFF,        // deltas
                0x00, 0x00, 0x00,        // zero padding to 32 bits
                0x00, 0x00, 0x00, 0x04,  // RTCP padding, count 4
            ], TransportFeedback(
                senderSSRC: 1, mediaSSRC: 0x7E55_0001, baseSequenceNumber: 100, packetStatusCount: 3, referenceTime: 258,
                feedbackPacketCount: 7, chunks: [.runLength(s, count: 3)], receiveDeltas: [4, 0, 255], paddingSize: 4
            )),
        ]

        @Test(arguments: valid)
        func parseThenSerializeGivesTheBytesBack(vector: Vector<TransportFeedback>) throws {
            try checkRoundTrip(vector)
            #expect(try RTCPPacket.parseCompound(vector.bytes) == [.transportFeedback(vector.packet)])
        }

        @Test func packetsGiveEachSequenceNumberItsArrival() throws {
            let ms = Duration.milliseconds
            let wrap = try TransportFeedback(parsing: Self.valid[1].bytes)
            #expect(wrap.referenceTimestamp == .milliseconds(-64))
            #expect(wrap.packets == [
                .init(sequenceNumber: 65534, receiveOffset: ms(2)),
                .init(sequenceNumber: 65535, receiveOffset: nil),
                .init(sequenceNumber: 0, receiveOffset: ms(6)),
                .init(sequenceNumber: 1, receiveOffset: .microseconds(6_250)),
                .init(sequenceNumber: 2, receiveOffset: nil),
            ])
            let reordered = try TransportFeedback(parsing: Self.valid[2].bytes)
            #expect(reordered.referenceTimestamp == .milliseconds(64 * 8_388_607))
            #expect(reordered.packets.map(\.receiveOffset) == [
                .microseconds(500), .microseconds(256_500), nil, .microseconds(252_500), .microseconds(253_750), nil,
                .microseconds(253_750),
            ])
            let overshoot = try TransportFeedback(parsing: Self.valid[4].bytes)
            #expect(overshoot.packets.map(\.sequenceNumber) == [5, 6])
            let longRun = try TransportFeedback(parsing: Self.valid[5].bytes)
            #expect(longRun.packets.count == 8_192)
            let received: [UInt16] = longRun.packets.filter { $0.receiveOffset != nil }.map(\.sequenceNumber)
            #expect(received == [UInt16(40_000 + 8_191)])
        }

        static let builds: [(name: String, deltas: [Int16?], chunks: [Chunk])] = [
            ("one received", [3], [.runLength(s, count: 1)]),
            ("20 small: one run", Array(repeating: 4, count: 20), [.runLength(s, count: 20)]),
            ("alternating small and lost: one-bit vector", (0..<14).map { $0 % 2 == 0 ? 4 : nil },
             [.oneBitVector((0..<14).map { $0 % 2 == 0 ? s : n })]),
            ("a large delta needs two bits", [4, 300, nil, 4], [.twoBitVector([s, l, n, s, n, n, n])]),
            ("negative delta is large", [-1, 0], [.twoBitVector([l, s, n, n, n, n, n])]),
            ("lost run then small run", Array(repeating: nil, count: 30) + Array(repeating: 1, count: 30),
             [.runLength(n, count: 30), .runLength(s, count: 30)]),
            ("runs longer than 8191 split", Array(repeating: nil, count: 8_192), [.runLength(n, count: 8_191), .runLength(n, count: 1)]),
            ("mixed 1-bit then large", [1, nil, 1, nil, 1, nil, 1, nil, 1, 1000],
             [.twoBitVector([s, n, s, n, s, n, s]), .twoBitVector([n, s, l, n, n, n, n])]),
        ]

        @Test(arguments: builds)
        func deltasPackIntoChunks(name: String, deltas: [Int16?], chunks: [Chunk]) throws {
            let feedback = TransportFeedback(
                senderSSRC: 1, mediaSSRC: 2, baseSequenceNumber: 65_530, referenceTime: 10, feedbackPacketCount: 3, packetDeltas: deltas
            )
            #expect(feedback.chunks == chunks, "\(name)")
            #expect(feedback.receiveDeltas == deltas.compactMap { $0 }, "\(name)")
            #expect(try TransportFeedback(parsing: feedback.serialized()) == feedback, "\(name)")
        }

        @Test func randomStatusListsRoundTripThroughTheWire() throws {
            var random = SplitMix64(seed: 0x7477_6363)
            for round in 0..<400 {
                let count = Int.random(in: 1...600, using: &random)
                let lossChance = Double.random(in: 0...1, using: &random)
                let deltas: [Int16?] = (0..<count).map { _ in
                    if Double.random(in: 0..<1, using: &random) < lossChance { return nil }
                    return Bool.random(using: &random) ? Int16.random(in: 0...255, using: &random) : Int16.random(in: .min ... .max, using: &random)
                }
                let base = UInt16.random(in: .min ... .max, using: &random)
                let feedback = TransportFeedback(
                    senderSSRC: 1, mediaSSRC: 2, baseSequenceNumber: base, referenceTime: -5, feedbackPacketCount: 0, packetDeltas: deltas
                )
                let bytes = feedback.serialized()
                #expect(bytes.count % 4 == 0)
                let parsed = try TransportFeedback(parsing: bytes)
                #expect(parsed == feedback, "round \(round)")
                // The model gives back each status with the running sum of the deltas.
                var sum = 0
                let expected: [Duration?] = deltas.map { delta in
                    guard let delta else { return nil }
                    sum += Int(delta)
                    return TransportFeedback.deltaTick * sum
                }
                #expect(parsed.packets.map(\.receiveOffset) == expected, "round \(round)")
                #expect(parsed.packets.first?.sequenceNumber == base)
                #expect(parsed.packets.last?.sequenceNumber == base &+ UInt16(count - 1))
                // Every chunk but the last carries at least 7 statuses.
                #expect(parsed.chunks.count <= (count + 6) / 7 + 1, "round \(round): \(parsed.chunks.count) chunks for \(count)")
            }
        }

        static let header: [UInt8] = [
            0x00, 0x00, 0x00, 0x01,  // SSRC of packet sender
            0x7E, 0x55, 0x00, 0x01,  // SSRC of media source
        ]

        static let malformed: [ErrorRow] = [
            ErrorRow("fixed part cut short", [0x8F, 0xCD, 0x00, 0x03] + header + [
                0x00, 0x01, 0x00, 0x00,  // base 1, status count 0; no reference time
            ], .tooShort, mentions: ["12 < 16"]),
            ErrorRow("status count 0", [0x8F, 0xCD, 0x00, 0x04] + header + [
                0x00, 0x01, 0x00, 0x00,  // base 1, status count 0
                0x00, 0x00, 0x00, 0x00,  // reference time, feedback packet count
            ], .badField, mentions: ["count is 0"]),
            ErrorRow("chunks run out before the count", [0x8F, 0xCD, 0x00, 0x05] + header + [
                0x00, 0x01, 0x00, 0x14,  // base 1, status count 20
                0x00, 0x00, 0x00, 0x00,  // reference time, feedback packet count
                0x20, 0x05, 0x00, 0x00,  // run: small x 5, run: lost x 0, then nothing
            ], .badLength, mentions: ["5 of 20"]),
            ErrorRow("deltas run past the end", [0x8F, 0xCD, 0x00, 0x05] + header + [
                0x00, 0x01, 0x00, 0x03,  // base 1, status count 3
                0x00, 0x00, 0x00, 0x00,  // reference time, feedback packet count
                0x20, 0x03, 0x01, 0x01,  // run: small x 3, two of three deltas
            ], .badLength, mentions: ["need 3", "2 remain"]),
            ErrorRow("reserved symbol in a run", [0x8F, 0xCD, 0x00, 0x05] + header + [
                0x00, 0x01, 0x00, 0x01,  // base 1, status count 1
                0x00, 0x00, 0x00, 0x00,  // reference time, feedback packet count
                0x60, 0x01, 0x00, 0x00,  // run: S=11 x 1
            ], .badField, mentions: ["reserved symbol 3"]),
            ErrorRow("reserved symbol in a two-bit vector", [0x8F, 0xCD, 0x00, 0x05] + header + [
                0x00, 0x01, 0x00, 0x01,  // base 1, status count 1
                0x00, 0x00, 0x00, 0x00,  // reference time, feedback packet count
                0xF0, 0x00, 0x00, 0x00,  // T=1 S=1, slot 0 = 11
            ], .badField, mentions: ["reserved symbol 3 in slot 0"]),
            ErrorRow("non-zero alignment byte", [0x8F, 0xCD, 0x00, 0x06] + header + [
                0x00, 0x64, 0x00, 0x03, 0x00, 0x01, 0x02, 0x07,
                0x20, 0x03, 0x04, 0x00, 0xFF, 0x00, 0x00, 0x01,  // last alignment byte 1
            ], .badPadding, mentions: ["byte 2 is 1"]),
            ErrorRow("a word of junk after the deltas", [0x8F, 0xCD, 0x00, 0x07] + header + [
                0x00, 0x64, 0x00, 0x03, 0x00, 0x01, 0x02, 0x07,
                0x20, 0x03, 0x04, 0x00, 0xFF, 0x00, 0x00, 0x00,
                0x00, 0x00, 0x00, 0x00,
            ], .badLength, mentions: ["7 bytes after"]),
            ErrorRow("padding count 0", [0xAF, 0xCD, 0x00, 0x06] + header + [
                0x00, 0x64, 0x00, 0x03, 0x00, 0x01, 0x02, 0x07,
                0x20, 0x03, 0x04, 0x00, 0xFF, 0x00, 0x00, 0x00,  // P=1 but the count octet is 0
            ], .badPadding, mentions: ["count 0"]),
            ErrorRow("padding count past the body", [0xAF, 0xCD, 0x00, 0x06] + header + [
                0x00, 0x64, 0x00, 0x03, 0x00, 0x01, 0x02, 0x07,
                0x20, 0x03, 0x04, 0x00, 0xFF, 0x00, 0x00, 0xFF,  // padding count 255 > 24
            ], .badPadding, mentions: ["255", "24"]),
            ErrorRow("padding eats the fixed part", [0xAF, 0xCD, 0x00, 0x06] + header + [
                0x00, 0x64, 0x00, 0x03, 0x00, 0x01, 0x02, 0x07,
                0x20, 0x03, 0x04, 0x00, 0xFF, 0x00, 0x00, 0x10,  // padding count 16
            ], .tooShort, mentions: ["8 < 16"]),
            ErrorRow("length past the end", [0x8F, 0xCD, 0x00, 0x07] + header + [
                0x00, 0x64, 0x00, 0x03, 0x00, 0x01, 0x02, 0x07,
                0x20, 0x03, 0x04, 0x00, 0xFF, 0x00, 0x00, 0x00,  // 28 bytes, length claims 32
            ], .badLength, mentions: ["32", "28"]),
        ]

        @Test(arguments: malformed)
        func malformedFeedbackIsATypedError(row: ErrorRow) {
            checkRejects(TransportFeedback.self, row)
            checkCompoundRejects(row)
        }

        @Test func otherFeedbackIsNotTransportFeedback() throws {
            let nack = GenericNACKTests.valid[0].bytes
            checkRejects(TransportFeedback.self, ErrorRow("NACK", nack, .badField, mentions: ["205", "FMT/count 1"]))
        }

        static let unserializable: [(name: String, packet: TransportFeedback, mentions: String)] = [
            ("status count 0", TransportFeedback(
                senderSSRC: 1, mediaSSRC: 2, baseSequenceNumber: 0, packetStatusCount: 0, referenceTime: 0,
                feedbackPacketCount: 0, chunks: [], receiveDeltas: []), "count is 0"),
            ("chunks fall short", TransportFeedback(
                senderSSRC: 1, mediaSSRC: 2, baseSequenceNumber: 0, packetStatusCount: 5, referenceTime: 0,
                feedbackPacketCount: 0, chunks: [.runLength(n, count: 4)], receiveDeltas: []), "cover 4 of 5"),
            ("a chunk too many", TransportFeedback(
                senderSSRC: 1, mediaSSRC: 2, baseSequenceNumber: 0, packetStatusCount: 4, referenceTime: 0,
                feedbackPacketCount: 0, chunks: [.runLength(n, count: 4), .runLength(n, count: 1)], receiveDeltas: []),
             "chunk 1 of 2"),
            ("run over 13 bits", TransportFeedback(
                senderSSRC: 1, mediaSSRC: 2, baseSequenceNumber: 0, packetStatusCount: 1, referenceTime: 0,
                feedbackPacketCount: 0, chunks: [.runLength(n, count: 8_192)], receiveDeltas: []), "8192"),
            ("short one-bit vector", TransportFeedback(
                senderSSRC: 1, mediaSSRC: 2, baseSequenceNumber: 0, packetStatusCount: 1, referenceTime: 0,
                feedbackPacketCount: 0, chunks: [.oneBitVector([n])], receiveDeltas: []), "has 1"),
            ("large symbol in a one-bit vector", TransportFeedback(
                senderSSRC: 1, mediaSSRC: 2, baseSequenceNumber: 0, packetStatusCount: 1, referenceTime: 0,
                feedbackPacketCount: 0, chunks: [.oneBitVector([l] + Array(repeating: n, count: 13))], receiveDeltas: [300]),
             "small-or-lost"),
            ("long two-bit vector", TransportFeedback(
                senderSSRC: 1, mediaSSRC: 2, baseSequenceNumber: 0, packetStatusCount: 1, referenceTime: 0,
                feedbackPacketCount: 0, chunks: [.twoBitVector(Array(repeating: n, count: 8))], receiveDeltas: []), "has 8"),
            ("delta missing", TransportFeedback(
                senderSSRC: 1, mediaSSRC: 2, baseSequenceNumber: 0, packetStatusCount: 2, referenceTime: 0,
                feedbackPacketCount: 0, chunks: [.runLength(s, count: 2)], receiveDeltas: [1]), "1 receive deltas for 2"),
            ("small delta out of range", TransportFeedback(
                senderSSRC: 1, mediaSSRC: 2, baseSequenceNumber: 0, packetStatusCount: 1, referenceTime: 0,
                feedbackPacketCount: 0, chunks: [.runLength(s, count: 1)], receiveDeltas: [256]), "256 ticks"),
            ("reference time over 24 bits", TransportFeedback(
                senderSSRC: 1, mediaSSRC: 2, baseSequenceNumber: 0, packetStatusCount: 1, referenceTime: 1 << 23,
                feedbackPacketCount: 0, chunks: [.runLength(n, count: 1)], receiveDeltas: []), "8388608"),
        ]

        @Test(arguments: unserializable)
        func inconsistentFieldsCannotBeSerialized(name: String, packet: TransportFeedback, mentions: String) {
            var buffer = [UInt8](repeating: 0, count: 256)
            let error = #expect(throws: PacketError.self, "\(name)") {
                try buffer.withUnsafeMutableBytes { try packet.serialize(into: $0) }
            }
            #expect(error?.code == .badField, "\(name): \(String(describing: error))")
            #expect(error?.message.contains(mentions) == true, "\(name): \(String(describing: error))")
        }

        @Test func feedbackTravelsInACompoundWithOtherFeedback() throws {
            let twcc = Self.valid[2]
            let remb = ReceiverEstimatedMaxBitrateTests.valid[0]
            let nack = GenericNACKTests.valid[0]
            let bytes = nack.bytes + twcc.bytes + remb.bytes
            let packets = try RTCPPacket.parseCompound(bytes)
            #expect(packets == [.genericNACK(nack.packet), .transportFeedback(twcc.packet), .receiverEstimatedMaxBitrate(remb.packet)])
            #expect(RTCPPacket.serializedCompound(packets) == bytes)
        }
    }
}

extension TransportFeedback: RTCPTests.WireFormat {}
