import Testing
@testable import MediaEngine

extension RTCPTests {
    @Suite struct ReceptionReportTests {
        static let valid: [Vector<ReceptionReport>] = [
            Vector("2% lost, 17 packets", [
                0x5A, 0x1B, 0x2C, 0x3D,  // SSRC of source 0x5A1B2C3D
                0x05,                    // fraction lost 5/256
                0x00, 0x00, 0x11,        // cumulative lost 17
                0x00, 0x01, 0x30, 0x39,  // extended highest seq: 1 cycle, seq 12345
                0x00, 0x00, 0x00, 0x5C,  // jitter 92
                0x8A, 0x3C, 0x40, 0x00,  // LSR 0x8A3C4000
                0x00, 0x01, 0x80, 0x00,  // DLSR 1.5 s (98304/65536)
            ], ReceptionReport(
                ssrc: 0x5A1B_2C3D, fractionLost: 5, cumulativeLost: 17, extendedHighestSequenceNumber: 0x0001_3039,
                jitter: 92, lastSenderReport: 0x8A3C_4000, delaySinceLastSenderReport: 0x0001_8000
            )),
            Vector("duplicates make the cumulative loss negative", [
                0x00, 0x00, 0x00, 0x07,  // SSRC 7
                0x00,                    // fraction lost 0 (clamped, negative loss)
                0xFF, 0xFF, 0xFE,        // cumulative lost -2 (24-bit two's complement)
                0x00, 0x00, 0xFF, 0xFF,  // extended highest seq 65535
                0x00, 0x00, 0x00, 0x00,  // jitter 0
                0x00, 0x00, 0x00, 0x00,  // LSR 0: no SR received yet
                0x00, 0x00, 0x00, 0x00,  // DLSR 0
            ], ReceptionReport(ssrc: 7, cumulativeLost: -2, extendedHighestSequenceNumber: 0xFFFF)),
            Vector("most negative 24-bit loss", [
                0xFF, 0xFF, 0xFF, 0xFF,  // SSRC 0xFFFFFFFF
                0xFF,                    // fraction lost 255/256
                0x80, 0x00, 0x00,        // cumulative lost -8388608
                0xFF, 0xFF, 0xFF, 0xFF,  // extended highest seq, all ones
                0xFF, 0xFF, 0xFF, 0xFF,  // jitter
                0xFF, 0xFF, 0xFF, 0xFF,  // LSR
                0xFF, 0xFF, 0xFF, 0xFF,  // DLSR
            ], ReceptionReport(
                ssrc: .max, fractionLost: 255, cumulativeLost: -0x80_0000, extendedHighestSequenceNumber: .max,
                jitter: .max, lastSenderReport: .max, delaySinceLastSenderReport: .max
            )),
            Vector("largest positive 24-bit loss", [
                0x00, 0x00, 0x00, 0x01,  // SSRC 1
                0x80,                    // fraction lost 128/256
                0x7F, 0xFF, 0xFF,        // cumulative lost 8388607
                0x00, 0x00, 0x00, 0x00,  // extended highest seq 0
                0x00, 0x00, 0x00, 0x00,  // jitter
                0x00, 0x00, 0x00, 0x00,  // LSR
                0x00, 0x00, 0x00, 0x00,  // DLSR
            ], ReceptionReport(ssrc: 1, fractionLost: 128, cumulativeLost: 0x7F_FFFF)),
        ]

        @Test(arguments: valid)
        func parseThenSerializeGivesTheBytesBack(vector: Vector<ReceptionReport>) throws {
            try checkRoundTrip(vector)
        }

        @Test func blocksOtherThan24BytesAreRefused() {
            checkRejects(ReceptionReport.self, ErrorRow("23 bytes", Array(repeating: 0, count: 23), .tooShort, mentions: ["23 < 24"]))
            checkRejects(ReceptionReport.self, ErrorRow("28 bytes", Array(repeating: 0, count: 28), .badLength, mentions: ["28"]))
        }

        @Test(arguments: [Int32(0x80_0000), -0x80_0001, .max, .min])
        func lossOutside24SignedBitsCannotBeSerialized(lost: Int32) {
            let report = ReceptionReport(ssrc: 1, cumulativeLost: lost)
            var buffer = [UInt8](repeating: 0, count: ReceptionReport.size)
            let error = #expect(throws: PacketError.self) { try buffer.withUnsafeMutableBytes { try report.serialize(into: $0) } }
            #expect(error?.code == .badField)
            #expect(error?.message.contains("\(lost)") == true)
            // Clamping to the documented range, as RFC 3550 A.3 does, makes it serializable.
            let clamped = min(max(lost, ReceptionReport.cumulativeLostRange.lowerBound), ReceptionReport.cumulativeLostRange.upperBound)
            let back = try? ReceptionReport(parsing: ReceptionReport(ssrc: 1, cumulativeLost: clamped).serialized())
            #expect(back?.cumulativeLost == clamped)
        }
    }
}
