import Testing
@testable import MediaEngine

extension RTCPTests {
    @Suite struct PictureLossIndicationTests {
        static let valid: [Vector<PictureLossIndication>] = [
            Vector("PLI", [
                0x81,                    // V=2 P=0 FMT=1
                0xCE,                    // PT=206 PSFB
                0x00, 0x02,              // length 2 (12 bytes), as RFC 4585 requires
                0x00, 0x00, 0x00, 0x01,  // SSRC of packet sender 1
                0x4B, 0xC4, 0xFC, 0xB4,  // SSRC of media source 0x4BC4FCB4
            ], PictureLossIndication(senderSSRC: 1, mediaSSRC: 0x4BC4_FCB4)),
            Vector("PLI with padding", [
                0xA1, 0xCE, 0x00, 0x03,  // V=2 P=1 FMT=1, PSFB, length 3 (16 bytes)
                0x00, 0x00, 0x00, 0x01,  // SSRC of packet sender
                0x4B, 0xC4, 0xFC, 0xB4,  // SSRC of media source
                0x00, 0x00, 0x00, 0x04,  // padding, count 4
            ], PictureLossIndication(senderSSRC: 1, mediaSSRC: 0x4BC4_FCB4, paddingSize: 4)),
        ]

        @Test(arguments: valid)
        func parseThenSerializeGivesTheBytesBack(vector: Vector<PictureLossIndication>) throws {
            try checkRoundTrip(vector)
            #expect(try RTCPPacket.parseCompound(vector.bytes) == [.pictureLossIndication(vector.packet)])
        }

        static let malformed: [ErrorRow] = [
            ErrorRow("no media SSRC", [
                0x81, 0xCE, 0x00, 0x01,  // FMT=1, PSFB, length 1 (8 bytes)
                0x00, 0x00, 0x00, 0x01,  // SSRC of packet sender
            ], .tooShort, mentions: ["4 < 8"]),
            ErrorRow("FCI where none belongs", [
                0x81, 0xCE, 0x00, 0x03,  // FMT=1, PSFB, length 3 (16 bytes)
                0x00, 0x00, 0x00, 0x01,  // SSRC of packet sender
                0x4B, 0xC4, 0xFC, 0xB4,  // SSRC of media source
                0x00, 0x00, 0x00, 0x00,  // stray word
            ], .badLength, mentions: ["4 FCI bytes"]),
            ErrorRow("length past the end", [
                0x81, 0xCE, 0x00, 0x02,  // FMT=1, PSFB, length 2 (12 bytes)
                0x00, 0x00, 0x00, 0x01,  // SSRC of packet sender, then nothing
            ], .badLength, mentions: ["12", "8"]),
            ErrorRow("version 0", [
                0x01, 0xCE, 0x00, 0x02,  // V=0
                0x00, 0x00, 0x00, 0x01, 0x4B, 0xC4, 0xFC, 0xB4,
            ], .badVersion, mentions: ["0 != 2"]),
        ]

        @Test(arguments: malformed)
        func malformedPLIsAreTypedErrors(row: ErrorRow) {
            checkRejects(PictureLossIndication.self, row)
            checkCompoundRejects(row)
        }

        @Test func aFIRIsNotAPLI() {
            let fir = FullIntraRequestTests.valid[0].bytes
            checkRejects(PictureLossIndication.self, ErrorRow("FIR", fir, .badField, mentions: ["206", "4"]))
        }
    }
}
