import Testing
@testable import MediaEngine

extension RTCPTests {
    @Suite struct ReceiverEstimatedMaxBitrateTests {
        static let valid: [Vector<ReceiverEstimatedMaxBitrate>] = [
            Vector("one SSRC, 1234560 b/s", [
                0x8F,                    // V=2 P=0 FMT=15
                0xCE,                    // PT=206 PSFB
                0x00, 0x05,              // length 5 (24 bytes)
                0x00, 0x00, 0x00, 0x01,  // SSRC of packet sender 1
                0x00, 0x00, 0x00, 0x00,  // SSRC of media source: always 0
                0x52, 0x45, 0x4D, 0x42,  // unique identifier "REMB"
                0x01,                    // num SSRC 1
                0x0E,                    // BR Exp 3 (000011), mantissa bits 17-16 = 10
                0x5A, 0xD0,              // mantissa bits 15-0: mantissa 0x25AD0 = 154320
                0x4B, 0xC4, 0xFC, 0xB4,  // SSRC feedback 0x4BC4FCB4
            ], ReceiverEstimatedMaxBitrate(senderSSRC: 1, exponent: 3, mantissa: 154_320, ssrcs: [0x4BC4_FCB4])),
            Vector("two SSRCs, 99999744 b/s", [
                0x8F, 0xCE, 0x00, 0x06,  // V=2 P=0 FMT=15, PSFB, length 6 (28 bytes)
                0x00, 0x00, 0x00, 0x01,  // SSRC of packet sender
                0x00, 0x00, 0x00, 0x00,  // SSRC of media source
                0x52, 0x45, 0x4D, 0x42,  // "REMB"
                0x02,                    // num SSRC 2
                0x26,                    // BR Exp 9 (001001), mantissa bits 17-16 = 10
                0xFA, 0xF0,              // mantissa 0x2FAF0 = 195312
                0x00, 0x00, 0x00, 0x0A,  // SSRC feedback 10
                0x00, 0x00, 0x00, 0x0B,  // SSRC feedback 11
            ], ReceiverEstimatedMaxBitrate(senderSSRC: 1, exponent: 9, mantissa: 195_312, ssrcs: [10, 11])),
            Vector("no SSRCs, 1000 b/s", [
                0x8F, 0xCE, 0x00, 0x04,  // V=2 P=0 FMT=15, PSFB, length 4 (20 bytes)
                0x00, 0x00, 0x00, 0x01,  // SSRC of packet sender
                0x00, 0x00, 0x00, 0x00,  // SSRC of media source
                0x52, 0x45, 0x4D, 0x42,  // "REMB"
                0x00,                    // num SSRC 0
                0x00,                    // BR Exp 0, mantissa bits 17-16 = 00
                0x03, 0xE8,              // mantissa 1000
            ], ReceiverEstimatedMaxBitrate(senderSSRC: 1, exponent: 0, mantissa: 1_000, ssrcs: [])),
            Vector("largest exponent and mantissa, padding", [
                0xAF, 0xCE, 0x00, 0x06,  // V=2 P=1 FMT=15, PSFB, length 6 (28 bytes)
                0x00, 0x00, 0x00, 0x01,  // SSRC of packet sender
                0x00, 0x00, 0x00, 0x00,  // SSRC of media source
                0x52, 0x45, 0x4D, 0x42,  // "REMB"
                0x01,                    // num SSRC 1
                0xFF,                    // BR Exp 63, mantissa bits 17-16 = 11
                0xFF, 0xFF,              // mantissa 262143
                0x00, 0x00, 0x00, 0x0A,  // SSRC feedback 10
                0x00, 0x00, 0x00, 0x04,  // padding, count 4
            ], ReceiverEstimatedMaxBitrate(
                senderSSRC: 1, exponent: 63, mantissa: 262_143, ssrcs: [10], paddingSize: 4
            )),
        ]

        @Test(arguments: valid)
        func parseThenSerializeGivesTheBytesBack(vector: Vector<ReceiverEstimatedMaxBitrate>) throws {
            try checkRoundTrip(vector)
            #expect(try RTCPPacket.parseCompound(vector.bytes) == [.receiverEstimatedMaxBitrate(vector.packet)])
        }

        static let bitrates: [(bitrate: UInt64, exponent: UInt8, mantissa: UInt32, decoded: UInt64)] = [
            (0, 0, 0, 0),
            (1_000, 0, 1_000, 1_000),
            (1_234_567, 3, 154_320, 1_234_560),
            (100_000_000, 9, 195_312, 99_999_744),
            (262_143, 0, 262_143, 262_143),                          // largest mantissa, exponent 0
            (262_144, 1, 131_072, 262_144),                          // one more needs exponent 1
            (524_287, 1, 262_143, 524_286),                          // largest mantissa, exponent 1
            (UInt64.max, 46, 262_143, 262_143 << 46),
        ]

        @Test(arguments: bitrates)
        func bitratesEncodeWithTheSmallestExponent(bitrate: UInt64, exponent: UInt8, mantissa: UInt32, decoded: UInt64) throws {
            let remb = ReceiverEstimatedMaxBitrate(senderSSRC: 1, bitrate: bitrate, ssrcs: [2])
            #expect(remb.exponent == exponent)
            #expect(remb.mantissa == mantissa)
            #expect(remb.bitrate == decoded)
            #expect(try ReceiverEstimatedMaxBitrate(parsing: remb.serialized()).bitrate == decoded)
        }

        @Test func encodingNeverOverstatesAndLosesLessThanOneStep() {
            var random = SplitMix64(seed: 0x5245_4D42)
            for _ in 0..<2_000 {
                let bitrate = random.next() >> UInt64.random(in: 0...63, using: &random)
                var remb = ReceiverEstimatedMaxBitrate(senderSSRC: 1, exponent: 0, mantissa: 0, ssrcs: [])
                remb.bitrate = bitrate
                #expect(remb.mantissa <= ReceiverEstimatedMaxBitrate.maximumMantissa)
                #expect(remb.bitrate <= bitrate)
                #expect(bitrate - remb.bitrate < UInt64(1) << remb.exponent, "\(bitrate)")
                // Smallest exponent: one less would overflow the mantissa.
                if remb.exponent > 0 { #expect(remb.mantissa >= 1 << 17, "\(bitrate)") }
                let decoded = remb.bitrate
                remb.bitrate = decoded
                #expect(remb.bitrate == decoded)
            }
        }

        @Test func exponentsBeyondUInt64Saturate() {
            #expect(ReceiverEstimatedMaxBitrate(senderSSRC: 1, exponent: 63, mantissa: 1, ssrcs: []).bitrate == 1 << 63)
            #expect(ReceiverEstimatedMaxBitrate(senderSSRC: 1, exponent: 63, mantissa: 2, ssrcs: []).bitrate == .max)
            #expect(ReceiverEstimatedMaxBitrate(senderSSRC: 1, exponent: 63, mantissa: 0, ssrcs: []).bitrate == 0)
        }

        static let malformed: [ErrorRow] = [
            ErrorRow("num SSRC 2, room for 1", [
                0x8F, 0xCE, 0x00, 0x05,  // FMT=15, PSFB, length 5 (24 bytes)
                0x00, 0x00, 0x00, 0x01,  // SSRC of packet sender
                0x00, 0x00, 0x00, 0x00,  // SSRC of media source
                0x52, 0x45, 0x4D, 0x42,  // "REMB"
                0x02, 0x0E, 0x5A, 0xD0,  // num SSRC 2, exponent 3, mantissa 154320
                0x4B, 0xC4, 0xFC, 0xB4,  // one SSRC
            ], .badLength, mentions: ["num SSRC 2", "24", "20"]),
            ErrorRow("num SSRC 0, one SSRC present", [
                0x8F, 0xCE, 0x00, 0x05,  // FMT=15, PSFB, length 5 (24 bytes)
                0x00, 0x00, 0x00, 0x01,  // SSRC of packet sender
                0x00, 0x00, 0x00, 0x00,  // SSRC of media source
                0x52, 0x45, 0x4D, 0x42,  // "REMB"
                0x00, 0x0E, 0x5A, 0xD0,  // num SSRC 0
                0x4B, 0xC4, 0xFC, 0xB4,  // SSRC the count does not cover
            ], .badLength, mentions: ["num SSRC 0", "16", "20"]),
            ErrorRow("identifier but no bitrate", [
                0x8F, 0xCE, 0x00, 0x03,  // FMT=15, PSFB, length 3 (16 bytes)
                0x00, 0x00, 0x00, 0x01,  // SSRC of packet sender
                0x00, 0x00, 0x00, 0x00,  // SSRC of media source
                0x52, 0x45, 0x4D, 0x42,  // "REMB"
            ], .tooShort, mentions: ["12 < 16"]),
            ErrorRow("length past the end", [
                0x8F, 0xCE, 0x00, 0x09,  // FMT=15, PSFB, length 9 (40 bytes)
                0x00, 0x00, 0x00, 0x01,  // SSRC of packet sender
                0x00, 0x00, 0x00, 0x00,  // SSRC of media source
                0x52, 0x45, 0x4D, 0x42,  // "REMB"
                0x05, 0x0E, 0x5A, 0xD0,  // num SSRC 5
                0x4B, 0xC4, 0xFC, 0xB4,  // one of the five
            ], .badLength, mentions: ["40", "24"]),
        ]

        @Test(arguments: malformed)
        func malformedREMBsAreTypedErrors(row: ErrorRow) {
            checkRejects(ReceiverEstimatedMaxBitrate.self, row)
            checkCompoundRejects(row)
        }

        @Test func otherApplicationLayerFeedbackIsUnsupportedHereAndUnknownInACompound() throws {
            let other: [UInt8] = [
                0x8F, 0xCE, 0x00, 0x04,  // FMT=15, PSFB, length 4 (20 bytes)
                0x00, 0x00, 0x00, 0x01,  // SSRC of packet sender
                0x00, 0x00, 0x00, 0x00,  // SSRC of media source
                0x47, 0x4F, 0x4F, 0x47,  // "GOOG", not "REMB"
                0x01, 0x02, 0x03, 0x04,  // its own data
            ]
            checkRejects(ReceiverEstimatedMaxBitrate.self, ErrorRow("other AFB", other, .unsupported))
            #expect(try RTCPPacket.parseCompound(other) == [
                .unknown(type: .payloadSpecificFeedback, count: 15, body: Array(other[4...]), paddingSize: 0),
            ])
        }

        @Test func limitsAreCheckedWhenSerializing() {
            var buffer = [UInt8](repeating: 0, count: 2_048)
            let cases: [(ReceiverEstimatedMaxBitrate, String)] = [
                (ReceiverEstimatedMaxBitrate(senderSSRC: 1, exponent: 64, mantissa: 1, ssrcs: []), "exponent 64"),
                (ReceiverEstimatedMaxBitrate(senderSSRC: 1, exponent: 0, mantissa: 1 << 18, ssrcs: []), "mantissa 262144"),
                (ReceiverEstimatedMaxBitrate(senderSSRC: 1, exponent: 0, mantissa: 1, ssrcs: Array(0..<256)), "256 SSRCs"),
            ]
            for (packet, named) in cases {
                let error = #expect(throws: PacketError.self) { try buffer.withUnsafeMutableBytes { try packet.serialize(into: $0) } }
                #expect(error?.code == .badField)
                #expect(error?.message.contains(named) == true, "\(String(describing: error))")
            }
        }
    }
}
