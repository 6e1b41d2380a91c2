import Testing
@testable import MediaEngine

extension RTCPTests {
    @Suite struct SenderReportTests {
        /// The report block of `ReceptionReportTests` ("2% lost, 17 packets").
        static let block = ReceptionReportTests.valid[0]

        /// SSRC, NTP 0xE98C3B2F.40000000, RTP 1000000, 1000 packets, 160000 octets.
        static let senderInfo: [UInt8] = [
            0x4E, 0x21, 0x7A, 0x10,  // SSRC of sender 0x4E217A10
            0xE9, 0x8C, 0x3B, 0x2F,  // NTP timestamp, seconds since 1900
            0x40, 0x00, 0x00, 0x00,  // NTP timestamp, fraction: 0.25 s
            0x00, 0x0F, 0x42, 0x40,  // RTP timestamp 1000000
            0x00, 0x00, 0x03, 0xE8,  // sender's packet count 1000
            0x00, 0x02, 0x71, 0x00,  // sender's octet count 160000
        ]

        static func report(
            _ reports: [ReceptionReport] = [], extensions: [UInt8] = [], padding: UInt8 = 0
        ) -> SenderReport {
            SenderReport(
                ssrc: 0x4E21_7A10, ntpTimestamp: 0xE98C_3B2F_4000_0000, rtpTimestamp: 1_000_000, packetCount: 1_000,
                octetCount: 160_000, reports: reports, profileExtensions: extensions, paddingSize: padding
            )
        }

        static let valid: [Vector<SenderReport>] = [
            Vector("no report blocks", [
                0x80,                    // V=2 P=0 RC=0
                0xC8,                    // PT=200 SR
                0x00, 0x06,              // length 6 (28 bytes)
            ] + senderInfo, report()),
            Vector("one report block", [
                0x81,                    // V=2 P=0 RC=1
                0xC8,                    // PT=200 SR
                0x00, 0x0C,              // length 12 (52 bytes)
            ] + senderInfo + block.bytes, report([block.packet])),
            Vector("profile-specific extension", [
                0x80, 0xC8, 0x00, 0x08,  // V=2 P=0 RC=0, SR, length 8 (36 bytes)
            ] + senderInfo + [
                0xCA, 0xFE, 0x00, 0x01,  // profile extension, word 1
                0x00, 0x00, 0x00, 0x02,  // profile extension, word 2
            ], report(extensions: [0xCA, 0xFE, 0x00, 0x01, 0x00, 0x00, 0x00, 0x02])),
            Vector("padding", [
                0xA0,                    // V=2 P=1 RC=0
                0xC8, 0x00, 0x07,        // SR, length 7 (32 bytes)
            ] + senderInfo + [
                0x00, 0x00, 0x00, 0x04,  // 4 padding octets, the last one the count
            ], report(padding: 4)),
            Vector("two blocks, extension and 8 octets of padding", [
                0xA2,                    // V=2 P=1 RC=2
                0xC8, 0x00, 0x15,        // SR, length 21 (88 bytes)
            ] + senderInfo + block.bytes + [
                0x00, 0x00, 0x00, 0x09,  // block 2: SSRC 9
                0x00, 0x00, 0x00, 0x00,  // fraction lost 0, cumulative lost 0
                0x00, 0x00, 0x00, 0x64,  // extended highest seq 100
                0x00, 0x00, 0x00, 0x03,  // jitter 3
                0x3B, 0x2F, 0x40, 0x00,  // LSR: middle of the NTP timestamp above
                0x00, 0x00, 0x20, 0x00,  // DLSR 0.125 s
                0x01, 0x02, 0x03, 0x04,  // profile extension
                0x00, 0x00, 0x00, 0x00,  // padding
                0x00, 0x00, 0x00, 0x08,  // padding, count 8
            ], report([
                block.packet,
                ReceptionReport(
                    ssrc: 9, extendedHighestSequenceNumber: 100, jitter: 3, lastSenderReport: 0x3B2F_4000,
                    delaySinceLastSenderReport: 0x2000
                ),
            ], extensions: [1, 2, 3, 4], padding: 8)),
        ]

        @Test(arguments: valid)
        func parseThenSerializeGivesTheBytesBack(vector: Vector<SenderReport>) throws {
            try checkRoundTrip(vector)
            #expect(try RTCPPacket.parseCompound(vector.bytes) == [.senderReport(vector.packet)])
        }

        static let malformed: [ErrorRow] = [
            ErrorRow("three bytes", [0x80, 0xC8, 0x00], .tooShort, mentions: ["3 < 4"]),
            ErrorRow("version 1", [0x40, 0xC8, 0x00, 0x06] + senderInfo, .badVersion, mentions: ["1 != 2"]),
            ErrorRow("length past the end", [
                0x81, 0xC8, 0x00, 0x0C,  // RC=1, length 12 (52 bytes)
            ] + senderInfo, .badLength, mentions: ["52", "28"]),
            ErrorRow("report count 2, length has room for 1", [
                0x82, 0xC8, 0x00, 0x0C,  // RC=2, length 12 (52 bytes)
            ] + senderInfo + block.bytes, .badLength, mentions: ["2 report blocks", "72", "48"]),
            ErrorRow("report count 31 in an empty report", [
                0x9F, 0xC8, 0x00, 0x06,  // RC=31, length 6 (28 bytes)
            ] + senderInfo, .badLength, mentions: ["31 report blocks", "768", "24"]),
            ErrorRow("no room for the sender info", [
                0x80, 0xC8, 0x00, 0x03,  // RC=0, length 3 (16 bytes)
            ] + senderInfo[..<12], .tooShort, mentions: ["12 < 24"]),
            ErrorRow("padding count 0", [
                0xA0, 0xC8, 0x00, 0x07,  // P=1, length 7 (32 bytes)
            ] + senderInfo + [0x00, 0x00, 0x00, 0x00], .badPadding, mentions: ["0"]),
            ErrorRow("padding count not a multiple of 4", [
                0xA0, 0xC8, 0x00, 0x07,  // P=1, length 7 (32 bytes)
            ] + senderInfo + [0x00, 0x00, 0x00, 0x03], .badPadding, mentions: ["3"]),
            ErrorRow("padding longer than the packet", [
                0xA0, 0xC8, 0x00, 0x07,  // P=1, length 7 (32 bytes)
            ] + senderInfo + [0x00, 0x00, 0x00, 0x40], .badPadding, mentions: ["64 > 28"]),
            ErrorRow("padding eats the sender info", [
                0xA0, 0xC8, 0x00, 0x07,  // P=1, length 7 (32 bytes)
            ] + senderInfo + [0x00, 0x00, 0x00, 0x08], .tooShort, mentions: ["20 < 24"]),
        ]

        @Test(arguments: malformed)
        func malformedReportsAreTypedErrors(row: ErrorRow) {
            checkRejects(SenderReport.self, row)
            checkCompoundRejects(row)
        }

        @Test func otherTypesAndLengthsThatDisagreeWithTheBufferAreRefused() {
            // An RR handed to the SR parser.
            checkRejects(SenderReport.self, ErrorRow("receiver report", [
                0x80, 0xC9, 0x00, 0x01, 0x00, 0x00, 0x00, 0x01,
            ], .badField, mentions: ["201"]))
            // A length shorter than the buffer: init(parsing:) takes exactly one packet.
            checkRejects(SenderReport.self, ErrorRow("trailing word", [
                0x80, 0xC8, 0x00, 0x06,
            ] + Self.senderInfo + [0, 0, 0, 0], .badLength, mentions: ["28", "32"]))
        }

        @Test func limitsAreCheckedWhenSerializing() throws {
            let full = Self.report(Array(repeating: Self.block.packet, count: 31))
            #expect(try SenderReport(parsing: full.serialized()) == full)
            #expect(full.serializedSize == 4 + 24 + 31 * 24)

            var buffer = [UInt8](repeating: 0, count: 1_024)
            let tooMany = Self.report(Array(repeating: Self.block.packet, count: 32))
            let countError = #expect(throws: PacketError.self) { try buffer.withUnsafeMutableBytes { try tooMany.serialize(into: $0) } }
            #expect(countError?.code == .badField)
            #expect(countError?.message.contains("32 > 31") == true)

            let ragged = Self.report(extensions: [1, 2, 3])
            let lengthError = #expect(throws: PacketError.self) { try buffer.withUnsafeMutableBytes { try ragged.serialize(into: $0) } }
            #expect(lengthError?.code == .badLength)
            #expect(lengthError?.message.contains("31 bytes") == true)

            let oddPadding = Self.report(padding: 2)
            let paddingError = #expect(throws: PacketError.self) { try buffer.withUnsafeMutableBytes { try oddPadding.serialize(into: $0) } }
            #expect(paddingError?.code == .badPadding)
        }
    }
}
