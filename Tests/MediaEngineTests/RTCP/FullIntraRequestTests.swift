import Testing
@testable import MediaEngine

extension RTCPTests {
    @Suite struct FullIntraRequestTests {
        typealias Entry = FullIntraRequest.Entry

        static let valid: [Vector<FullIntraRequest>] = [
            Vector("one request", [
                0x84,                    // V=2 P=0 FMT=4
                0xCE,                    // PT=206 PSFB
                0x00, 0x04,              // length 4 (20 bytes)
                0x00, 0x00, 0x00, 0x01,  // SSRC of packet sender 1
                0x00, 0x00, 0x00, 0x00,  // SSRC of media source: 0, as RFC 5104 says
                0x4B, 0xC4, 0xFC, 0xB4,  // FCI: SSRC of the media sender asked
                0x2A,                    // command sequence number 42
                0x00, 0x00, 0x00,        // reserved
            ], FullIntraRequest(senderSSRC: 1, entries: [Entry(ssrc: 0x4BC4_FCB4, sequenceNumber: 42)])),
            Vector("two requests, sequence number wrapped", [
                0x84, 0xCE, 0x00, 0x06,  // V=2 P=0 FMT=4, PSFB, length 6 (28 bytes)
                0x00, 0x00, 0x00, 0x01,  // SSRC of packet sender
                0x00, 0x00, 0x00, 0x00,  // SSRC of media source
                0x00, 0x00, 0x00, 0x0A,  // entry 1: SSRC 10
                0xFF, 0x00, 0x00, 0x00,  // sequence number 255, reserved
                0x00, 0x00, 0x00, 0x0B,  // entry 2: SSRC 11
                0x00, 0x00, 0x00, 0x00,  // sequence number 0, reserved
            ], FullIntraRequest(senderSSRC: 1, entries: [
                Entry(ssrc: 10, sequenceNumber: 255), Entry(ssrc: 11, sequenceNumber: 0),
            ])),
            Vector("non-zero media SSRC and padding are kept", [
                0xA4, 0xCE, 0x00, 0x05,  // V=2 P=1 FMT=4, PSFB, length 5 (24 bytes)
                0x00, 0x00, 0x00, 0x01,  // SSRC of packet sender
                0x00, 0x00, 0x00, 0x0A,  // SSRC of media source 10 (should be 0)
                0x00, 0x00, 0x00, 0x0A,  // SSRC 10
                0x01, 0x00, 0x00, 0x00,  // sequence number 1, reserved
                0x00, 0x00, 0x00, 0x04,  // padding, count 4
            ], FullIntraRequest(senderSSRC: 1, mediaSSRC: 10, entries: [Entry(ssrc: 10, sequenceNumber: 1)], paddingSize: 4)),
        ]

        @Test(arguments: valid)
        func parseThenSerializeGivesTheBytesBack(vector: Vector<FullIntraRequest>) throws {
            try checkRoundTrip(vector)
            #expect(try RTCPPacket.parseCompound(vector.bytes) == [.fullIntraRequest(vector.packet)])
        }

        @Test func reservedBitsAreIgnoredOnReceiptAndSentAsZero() throws {
            var bytes = Self.valid[0].bytes
            bytes[17...19] = [0xAB, 0xCD, 0xEF]
            let packet = try FullIntraRequest(parsing: bytes)
            #expect(packet == Self.valid[0].packet)
            #expect(packet.serialized() == Self.valid[0].bytes)
        }

        static let malformed: [ErrorRow] = [
            ErrorRow("no FCI entry", [
                0x84, 0xCE, 0x00, 0x02,  // FMT=4, PSFB, length 2 (12 bytes)
                0x00, 0x00, 0x00, 0x01,  // SSRC of packet sender
                0x00, 0x00, 0x00, 0x00,  // SSRC of media source
            ], .tooShort, mentions: ["8 < 16"]),
            ErrorRow("half an entry", [
                0x84, 0xCE, 0x00, 0x05,  // FMT=4, PSFB, length 5 (24 bytes)
                0x00, 0x00, 0x00, 0x01,  // SSRC of packet sender
                0x00, 0x00, 0x00, 0x00,  // SSRC of media source
                0x00, 0x00, 0x00, 0x0A,  // entry 1: SSRC 10
                0x01, 0x00, 0x00, 0x00,  // sequence number 1, reserved
                0x00, 0x00, 0x00, 0x0B,  // entry 2: SSRC 11, and no second word
            ], .badLength, mentions: ["12 bytes", "8-byte"]),
            ErrorRow("length past the end", [
                0x84, 0xCE, 0x00, 0x06,  // FMT=4, PSFB, length 6 (28 bytes)
                0x00, 0x00, 0x00, 0x01,  // SSRC of packet sender
                0x00, 0x00, 0x00, 0x00,  // SSRC of media source
                0x00, 0x00, 0x00, 0x0A,  // entry 1: SSRC 10
                0x01, 0x00, 0x00, 0x00,  // sequence number 1, reserved
            ], .badLength, mentions: ["28", "20"]),
        ]

        @Test(arguments: malformed)
        func malformedFIRsAreTypedErrors(row: ErrorRow) {
            checkRejects(FullIntraRequest.self, row)
            checkCompoundRejects(row)
        }

        @Test func aFIRWithoutEntriesCannotBeSerialized() {
            var buffer = [UInt8](repeating: 0, count: 64)
            let error = #expect(throws: PacketError.self) {
                try buffer.withUnsafeMutableBytes { try FullIntraRequest(senderSSRC: 1, entries: []).serialize(into: $0) }
            }
            #expect(error?.code == .badField)
        }
    }
}
