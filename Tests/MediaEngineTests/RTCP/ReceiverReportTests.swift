import Testing
@testable import MediaEngine

extension RTCPTests {
    @Suite struct ReceiverReportTests {
        static let block = ReceptionReportTests.valid[0]
        static let negativeLossBlock = ReceptionReportTests.valid[1]

        static let valid: [Vector<ReceiverReport>] = [
            Vector("nothing received yet", [
                0x80,                    // V=2 P=0 RC=0
                0xC9,                    // PT=201 RR
                0x00, 0x01,              // length 1 (8 bytes)
                0x0B, 0xAD, 0xF0, 0x0D,  // SSRC of packet sender 0x0BADF00D
            ], ReceiverReport(ssrc: 0x0BAD_F00D)),
            Vector("one report block", [
                0x81,                    // V=2 P=0 RC=1
                0xC9,                    // PT=201 RR
                0x00, 0x07,              // length 7 (32 bytes)
                0x0B, 0xAD, 0xF0, 0x0D,  // SSRC of packet sender
            ] + block.bytes, ReceiverReport(ssrc: 0x0BAD_F00D, reports: [block.packet])),
            Vector("two blocks, one with negative loss", [
                0x82, 0xC9, 0x00, 0x0D,  // V=2 P=0 RC=2, RR, length 13 (56 bytes)
                0x0B, 0xAD, 0xF0, 0x0D,  // SSRC of packet sender
            ] + block.bytes + negativeLossBlock.bytes,
                ReceiverReport(ssrc: 0x0BAD_F00D, reports: [block.packet, negativeLossBlock.packet])),
            Vector("extension and padding", [
                0xA0, 0xC9, 0x00, 0x03,  // V=2 P=1 RC=0, RR, length 3 (16 bytes)
                0x0B, 0xAD, 0xF0, 0x0D,  // SSRC of packet sender
                0xAB, 0xCD, 0xEF, 0x01,  // profile-specific extension
                0x00, 0x00, 0x00, 0x04,  // padding, count 4
            ], ReceiverReport(ssrc: 0x0BAD_F00D, profileExtensions: [0xAB, 0xCD, 0xEF, 0x01], paddingSize: 4)),
        ]

        @Test(arguments: valid)
        func parseThenSerializeGivesTheBytesBack(vector: Vector<ReceiverReport>) throws {
            try checkRoundTrip(vector)
            #expect(try RTCPPacket.parseCompound(vector.bytes) == [.receiverReport(vector.packet)])
        }

        static let malformed: [ErrorRow] = [
            ErrorRow("header only", [0x80, 0xC9, 0x00, 0x00], .tooShort, mentions: ["0 < 4"]),
            ErrorRow("wrong version", [0x80 ^ 0xC0, 0xC9, 0x00, 0x01, 0, 0, 0, 1], .badVersion, mentions: ["1 != 2"]),
            ErrorRow("length past the end", [
                0x81, 0xC9, 0x00, 0x07,  // RC=1, length 7 (32 bytes)
                0x0B, 0xAD, 0xF0, 0x0D,  // SSRC; the block is missing
            ], .badLength, mentions: ["32", "8"]),
            ErrorRow("report count 1, no block", [
                0x81, 0xC9, 0x00, 0x01,  // RC=1, length 1 (8 bytes)
                0x0B, 0xAD, 0xF0, 0x0D,  // SSRC
            ], .badLength, mentions: ["1 report blocks", "28", "4"]),
            ErrorRow("report count 2, one block", [
                0x82, 0xC9, 0x00, 0x07,  // RC=2, length 7 (32 bytes)
                0x0B, 0xAD, 0xF0, 0x0D,  // SSRC
            ] + block.bytes, .badLength, mentions: ["2 report blocks", "52", "28"]),
            ErrorRow("padding bigger than the body", [
                0xA0, 0xC9, 0x00, 0x01,  // P=1, length 1 (8 bytes)
                0x00, 0x00, 0x00, 0x08,  // "SSRC" whose last octet claims 8 padding octets
            ], .badPadding, mentions: ["8 > 4"]),
        ]

        @Test(arguments: malformed)
        func malformedReportsAreTypedErrors(row: ErrorRow) {
            checkRejects(ReceiverReport.self, row)
            checkCompoundRejects(row)
        }
    }
}
