import Testing
@testable import MediaEngine

extension RTCPTests {
    @Suite struct RTCPHeaderTests {
        static let valid: [Vector<RTCPHeader>] = [
            Vector("SR, one report block", [
                0x81,        // V=2 P=0 RC=1
                0xC8,        // PT=200 SR
                0x00, 0x0C,  // length 12 words (52 bytes)
            ], RTCPHeader(count: 1, packetType: .senderReport, length: 12)),
            Vector("PSFB FMT 15 with padding", [
                0xAF,        // V=2 P=1 FMT=15
                0xCE,        // PT=206 PSFB
                0x00, 0x06,  // length 6 words (28 bytes)
            ], RTCPHeader(padding: true, count: 15, packetType: .payloadSpecificFeedback, length: 6)),
            Vector("XR, count 31, largest length", [
                0x9F,        // V=2 P=0 count=31
                0xCF,        // PT=207 XR
                0xFF, 0xFF,  // length 65535 words
            ], RTCPHeader(count: 31, packetType: .extendedReport, length: 0xFFFF)),
        ]

        @Test(arguments: valid)
        func parseThenSerializeGivesTheBytesBack(vector: Vector<RTCPHeader>) throws {
            try checkRoundTrip(vector)
        }

        @Test func packetSizeCountsHeaderAndWords() throws {
            #expect(RTCPHeader(count: 0, packetType: .receiverReport, length: 1).packetSize == 8)
            #expect(RTCPHeader(count: 0, packetType: .goodbye, length: 0xFFFF).packetSize == RTCPHeader.maximumPacketSize)
            #expect(RTCPHeader.maximumPacketSize == 262_144)
            // Only the first four bytes are read; a body after them is ignored here.
            let header = try RTCPHeader(parsing: [0x80, 0xC9, 0x00, 0x01, 0xDE, 0xAD, 0xBE, 0xEF])
            #expect(header.packetType == .receiverReport && header.packetSize == 8)
        }

        @Test func packetTypeConstantsAreTheRFCNumbers() {
            let types: [(RTCPHeader.PacketType, UInt8)] = [
                (.senderReport, 200), (.receiverReport, 201), (.sourceDescription, 202), (.goodbye, 203),
                (.applicationDefined, 204), (.transportLayerFeedback, 205), (.payloadSpecificFeedback, 206),
                (.extendedReport, 207),
            ]
            for (type, number) in types {
                #expect(type.rawValue == number)
                #expect(type.description == String(number))
            }
        }

        static let malformed: [ErrorRow] = [
            ErrorRow("empty", [], .tooShort, mentions: ["0 < 4"]),
            ErrorRow("three bytes", [0x80, 0xC8, 0x00], .tooShort, mentions: ["3 < 4"]),
            ErrorRow("version 0", [0x00, 0xC8, 0x00, 0x06], .badVersion, mentions: ["0 != 2"]),
            ErrorRow("version 1", [0x41, 0xC9, 0x00, 0x01], .badVersion, mentions: ["1 != 2"]),
            ErrorRow("version 3", [0xC0, 0xC9, 0x00, 0x01], .badVersion, mentions: ["3 != 2"]),
        ]

        @Test(arguments: malformed)
        func malformedHeadersAreTypedErrors(row: ErrorRow) {
            checkRejects(RTCPHeader.self, row)
            checkCompoundRejects(row)
        }

        @Test func countAbove31CannotBeSerialized() {
            var buffer = [UInt8](repeating: 0, count: 4)
            let error = #expect(throws: PacketError.self) {
                try buffer.withUnsafeMutableBytes {
                    try RTCPHeader(count: 32, packetType: .goodbye, length: 0).serialize(into: $0)
                }
            }
            #expect(error?.code == .badField)
            #expect(error?.message.contains("32 > 31") == true)
        }
    }
}
