import Testing
@testable import MediaEngine

extension RTCPTests {
    @Suite struct GoodbyeTests {
        static let valid: [Vector<Goodbye>] = [
            Vector("one source, no reason", [
                0x81,                    // V=2 P=0 SC=1
                0xCB,                    // PT=203 BYE
                0x00, 0x01,              // length 1 (8 bytes)
                0x90, 0x2F, 0x9E, 0x2E,  // SSRC 0x902F9E2E
            ], Goodbye(sources: [0x902F_9E2E])),
            Vector("two sources, reason filling its word", [
                0x82, 0xCB, 0x00, 0x03,  // V=2 P=0 SC=2, BYE, length 3 (16 bytes)
                0x90, 0x2F, 0x9E, 0x2E,  // SSRC
                0x00, 0x00, 0x00, 0x2A,  // CSRC 42
                0x03,                    // reason length 3
                0x62, 0x79, 0x65,        // "bye"
            ], Goodbye(sources: [0x902F_9E2E, 42], reasonText: "bye")),
            Vector("reason with alignment octet", [
                0x81, 0xCB, 0x00, 0x04,  // V=2 P=0 SC=1, BYE, length 4 (20 bytes)
                0x90, 0x2F, 0x9E, 0x2E,  // SSRC
                0x0A,                    // reason length 10
            ] + Array("camera off".utf8) + [
                0x00,                    // null octet to the word boundary
            ], Goodbye(sources: [0x902F_9E2E], reasonText: "camera off")),
            Vector("empty reason is not an absent one", [
                0x81, 0xCB, 0x00, 0x02,  // V=2 P=0 SC=1, BYE, length 2 (12 bytes)
                0x90, 0x2F, 0x9E, 0x2E,  // SSRC
                0x00, 0x00, 0x00, 0x00,  // reason length 0, three null octets
            ], Goodbye(sources: [0x902F_9E2E], reason: [])),
            Vector("no sources", [
                0x80, 0xCB, 0x00, 0x00,  // V=2 P=0 SC=0, BYE, length 0 (4 bytes)
            ], Goodbye(sources: [])),
            Vector("padding", [
                0xA1, 0xCB, 0x00, 0x02,  // V=2 P=1 SC=1, BYE, length 2 (12 bytes)
                0x90, 0x2F, 0x9E, 0x2E,  // SSRC
                0x00, 0x00, 0x00, 0x04,  // padding, count 4
            ], Goodbye(sources: [0x902F_9E2E], paddingSize: 4)),
        ]

        @Test(arguments: valid)
        func parseThenSerializeGivesTheBytesBack(vector: Vector<Goodbye>) throws {
            try checkRoundTrip(vector)
            #expect(try RTCPPacket.parseCompound(vector.bytes) == [.goodbye(vector.packet)])
        }

        @Test func reasonTextDistinguishesEmptyFromAbsent() throws {
            #expect(try Goodbye(parsing: Self.valid[0].bytes).reasonText == nil)
            #expect(try Goodbye(parsing: Self.valid[3].bytes).reasonText == "")
            #expect(try Goodbye(parsing: Self.valid[2].bytes).reasonText == "camera off")
        }

        static let malformed: [ErrorRow] = [
            ErrorRow("source count 2, one source", [
                0x82, 0xCB, 0x00, 0x01,  // SC=2, length 1 (8 bytes)
                0x90, 0x2F, 0x9E, 0x2E,  // SSRC
            ], .badLength, mentions: ["2 sources", "8", "4"]),
            ErrorRow("source count 31 in an empty packet", [
                0x9F, 0xCB, 0x00, 0x00,  // SC=31, length 0 (4 bytes)
            ], .badLength, mentions: ["31 sources", "124", "0"]),
            ErrorRow("reason length past the end", [
                0x81, 0xCB, 0x00, 0x02,  // SC=1, length 2 (12 bytes)
                0x90, 0x2F, 0x9E, 0x2E,  // SSRC
                0x14, 0x62, 0x79, 0x65,  // reason claiming 20 octets
            ], .badLength, mentions: ["20", "25 > 8"]),
            ErrorRow("alignment octet not null", [
                0x81, 0xCB, 0x00, 0x02,  // SC=1, length 2 (12 bytes)
                0x90, 0x2F, 0x9E, 0x2E,  // SSRC
                0x01, 0x62, 0x00, 0x79,  // reason "b", then a stray octet
            ], .badField, mentions: ["7"]),
            ErrorRow("a word after the reason", [
                0x81, 0xCB, 0x00, 0x03,  // SC=1, length 3 (16 bytes)
                0x90, 0x2F, 0x9E, 0x2E,  // SSRC
                0x03, 0x62, 0x79, 0x65,  // reason "bye"
                0x00, 0x00, 0x00, 0x00,  // not part of anything
            ], .badLength, mentions: ["4 bytes", "8"]),
            ErrorRow("length past the end", [
                0x82, 0xCB, 0x00, 0x02,  // SC=2, length 2 (12 bytes)
                0x90, 0x2F, 0x9E, 0x2E,  // SSRC
            ], .badLength, mentions: ["12", "8"]),
        ]

        @Test(arguments: malformed)
        func malformedGoodbyesAreTypedErrors(row: ErrorRow) {
            checkRejects(Goodbye.self, row)
            checkCompoundRejects(row)
        }

        @Test func limitsAreCheckedWhenSerializing() {
            var buffer = [UInt8](repeating: 0, count: 1_024)
            let longReason = Goodbye(sources: [1], reason: Array(repeating: 0x61, count: 256))
            let reasonError = #expect(throws: PacketError.self) { try buffer.withUnsafeMutableBytes { try longReason.serialize(into: $0) } }
            #expect(reasonError?.code == .badField)
            #expect(reasonError?.message.contains("256") == true)
            let crowd = Goodbye(sources: Array(0..<32))
            let countError = #expect(throws: PacketError.self) { try buffer.withUnsafeMutableBytes { try crowd.serialize(into: $0) } }
            #expect(countError?.code == .badField)
            #expect(countError?.message.contains("32 > 31") == true)
        }
    }
}
