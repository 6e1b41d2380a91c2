import Testing
@testable import MediaEngine

extension RTCPTests {
    @Suite struct GenericNACKTests {
        typealias Entry = GenericNACK.Entry

        static let valid: [Vector<GenericNACK>] = [
            Vector("one entry: 100, 101 and 103 lost", [
                0x81,                    // V=2 P=0 FMT=1
                0xCD,                    // PT=205 RTPFB
                0x00, 0x03,              // length 3 (16 bytes)
                0x00, 0x00, 0x00, 0x01,  // SSRC of packet sender 1
                0x7E, 0x55, 0x00, 0x01,  // SSRC of media source 0x7E550001
                0x00, 0x64,              // PID 100
                0x00, 0x05,              // BLP 0b101: 101 and 103
            ], GenericNACK(senderSSRC: 1, mediaSSRC: 0x7E55_0001, entries: [Entry(packetID: 100, lostBitmask: 0x0005)])),
            Vector("two entries", [
                0x81, 0xCD, 0x00, 0x04,  // V=2 P=0 FMT=1, RTPFB, length 4 (20 bytes)
                0x00, 0x00, 0x00, 0x01,  // SSRC of packet sender
                0x7E, 0x55, 0x00, 0x01,  // SSRC of media source
                0x00, 0x64, 0x80, 0x00,  // PID 100, BLP bit 15: 116
                0x00, 0xC8, 0x00, 0x00,  // PID 200 alone
            ], GenericNACK(senderSSRC: 1, mediaSSRC: 0x7E55_0001, entries: [
                Entry(packetID: 100, lostBitmask: 0x8000), Entry(packetID: 200),
            ])),
            Vector("run across the wrap", [
                0x81, 0xCD, 0x00, 0x03,  // V=2 P=0 FMT=1, RTPFB, length 3 (16 bytes)
                0x00, 0x00, 0x00, 0x01,  // SSRC of packet sender
                0x7E, 0x55, 0x00, 0x01,  // SSRC of media source
                0xFF, 0xFE,              // PID 65534
                0x00, 0x07,              // BLP 0b111: 65535, 0, 1
            ], GenericNACK(senderSSRC: 1, mediaSSRC: 0x7E55_0001, entries: [Entry(packetID: 65534, lostBitmask: 0x0007)])),
            Vector("padding", [
                0xA1, 0xCD, 0x00, 0x04,  // V=2 P=1 FMT=1, RTPFB, length 4 (20 bytes)
                0x00, 0x00, 0x00, 0x01,  // SSRC of packet sender
                0x7E, 0x55, 0x00, 0x01,  // SSRC of media source
                0x12, 0x34, 0x00, 0x00,  // PID 4660
                0x00, 0x00, 0x00, 0x04,  // padding, count 4
            ], GenericNACK(senderSSRC: 1, mediaSSRC: 0x7E55_0001, entries: [Entry(packetID: 0x1234)], paddingSize: 4)),
        ]

        @Test(arguments: valid)
        func parseThenSerializeGivesTheBytesBack(vector: Vector<GenericNACK>) throws {
            try checkRoundTrip(vector)
            #expect(try RTCPPacket.parseCompound(vector.bytes) == [.genericNACK(vector.packet)])
        }

        @Test func entriesExpandToTheirSequenceNumbers() throws {
            #expect(try GenericNACK(parsing: Self.valid[0].bytes).lostSequenceNumbers == [100, 101, 103])
            #expect(try GenericNACK(parsing: Self.valid[1].bytes).lostSequenceNumbers == [100, 116, 200])
            #expect(try GenericNACK(parsing: Self.valid[2].bytes).lostSequenceNumbers == [65534, 65535, 0, 1])
            #expect(Entry(packetID: 65535, lostBitmask: 0xFFFF).sequenceNumbers == [65535] + Array(0...15))
        }

        static let builds: [(lost: [UInt16], entries: [Entry])] = [
            ([], []),
            ([100, 101, 103], [Entry(packetID: 100, lostBitmask: 0x0005)]),
            ([103, 100, 101, 100, 103], [Entry(packetID: 100, lostBitmask: 0x0005)]),
            ([65534, 65535, 0, 1], [Entry(packetID: 65534, lostBitmask: 0x0007)]),
            ([1, 65535, 0, 65534], [Entry(packetID: 65534, lostBitmask: 0x0007)]),
            ([0, 65535], [Entry(packetID: 65535, lostBitmask: 0x0001)]),
            ([15, 65535], [Entry(packetID: 65535, lostBitmask: 0x8000)]),           // 16 after the PID: bit 15
            ([16, 65535], [Entry(packetID: 65535), Entry(packetID: 16)]),           // 17 after: a new entry
            (Array(0...16), [Entry(packetID: 0, lostBitmask: 0xFFFF)]),
            (Array(0...17), [Entry(packetID: 0, lostBitmask: 0xFFFF), Entry(packetID: 17)]),
            ([5_000, 10], [Entry(packetID: 10), Entry(packetID: 5_000)]),
            // 40000 -> 10 across the wrap is the shorter way round, so 40000 comes first.
            ([10, 40_000], [Entry(packetID: 40_000), Entry(packetID: 10)]),
        ]

        @Test(arguments: builds)
        func lostSequenceNumbersPackIntoEntries(lost: [UInt16], entries: [Entry]) {
            let nack = GenericNACK(senderSSRC: 1, mediaSSRC: 2, lostSequenceNumbers: lost)
            #expect(nack.entries == entries)
            #expect(Set(nack.lostSequenceNumbers) == Set(lost))
        }

        @Test func runsNeedOneEntryPer17Packets() {
            for length in 1...100 {
                let start: UInt16 = 65_500
                let run = (0..<length).map { start &+ UInt16($0) }
                let nack = GenericNACK(senderSSRC: 1, mediaSSRC: 2, lostSequenceNumbers: run.reversed())
                #expect(nack.entries.count == (length + 16) / 17, "run of \(length)")
                #expect(nack.lostSequenceNumbers == run, "run of \(length)")
            }
        }

        @Test func randomLossPatternsRoundTripThroughTheWire() throws {
            var random = SplitMix64(seed: 0x4E41_434B)
            for round in 0..<500 {
                let base = UInt16.random(in: .min ... .max, using: &random)
                let offsets = Set((0..<Int.random(in: 1...60, using: &random)).map { _ in UInt16.random(in: 0..<400, using: &random) })
                let expected = offsets.sorted().map { base &+ $0 }
                let nack = GenericNACK(senderSSRC: 9, mediaSSRC: 10, lostSequenceNumbers: expected.shuffled(using: &random))
                #expect(nack.lostSequenceNumbers == expected, "round \(round), base \(base)")
                #expect(try GenericNACK(parsing: nack.serialized()) == nack, "round \(round)")
            }
        }

        static let malformed: [ErrorRow] = [
            ErrorRow("no FCI entry", [
                0x81, 0xCD, 0x00, 0x02,  // FMT=1, RTPFB, length 2 (12 bytes)
                0x00, 0x00, 0x00, 0x01,  // SSRC of packet sender
                0x7E, 0x55, 0x00, 0x01,  // SSRC of media source
            ], .tooShort, mentions: ["8 < 12"]),
            ErrorRow("length past the end", [
                0x81, 0xCD, 0x00, 0x05,  // FMT=1, RTPFB, length 5 (24 bytes)
                0x00, 0x00, 0x00, 0x01,  // SSRC of packet sender
                0x7E, 0x55, 0x00, 0x01,  // SSRC of media source
                0x00, 0x64, 0x00, 0x05,  // one entry of the two the length claims
            ], .badLength, mentions: ["24", "16"]),
            ErrorRow("padding eats the only entry", [
                0xA1, 0xCD, 0x00, 0x03,  // P=1 FMT=1, RTPFB, length 3 (16 bytes)
                0x00, 0x00, 0x00, 0x01,  // SSRC of packet sender
                0x7E, 0x55, 0x00, 0x01,  // SSRC of media source
                0x00, 0x00, 0x00, 0x04,  // padding, count 4
            ], .tooShort, mentions: ["8 < 12"]),
        ]

        @Test(arguments: malformed)
        func malformedNACKsAreTypedErrors(row: ErrorRow) {
            checkRejects(GenericNACK.self, row)
            checkCompoundRejects(row)
        }

        @Test func otherFeedbackIsNotANACK() throws {
            // Transport-wide congestion control feedback (RTPFB FMT 15) has its own type.
            let twcc = TransportFeedbackTests.valid[0]
            checkRejects(GenericNACK.self, ErrorRow("TWCC", twcc.bytes, .badField, mentions: ["205", "15"]))
            #expect(try RTCPPacket.parseCompound(twcc.bytes) == [.transportFeedback(twcc.packet)])
        }

        @Test func aNACKWithoutEntriesCannotBeSerialized() {
            let empty = GenericNACK(senderSSRC: 1, mediaSSRC: 2, lostSequenceNumbers: [UInt16]())
            var buffer = [UInt8](repeating: 0, count: 64)
            let error = #expect(throws: PacketError.self) { try buffer.withUnsafeMutableBytes { try empty.serialize(into: $0) } }
            #expect(error?.code == .badField)
        }
    }
}
