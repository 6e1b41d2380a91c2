import Testing
@testable import MediaEngine

@Suite struct OpusPayloads {
    @Test func timestampsAdvanceAt48kHzAndTalkspurtsAreMarked() {
        var payloader = OpusPayloader()
        // 20 ms speech, speech, then DTX (1 byte), DTX, then speech again.
        let packets = [(960, 80), (960, 75), (960, 1), (960, 1), (480, 60), (960, 70)]
        let results = packets.map { payloader.next(samples: $0.0, payloadSize: $0.1) }
        #expect(results.map(\.timestamp) == [0, 960, 1_920, 2_880, 3_840, 4_320])
        #expect(results.map(\.marker) == [true, false, false, false, true, false])
    }

    @Test(arguments: [
        ([0xFC, 0x01, 0x02] as [UInt8], 960),   // config 31 (CELT FB 20 ms), code 0: one frame
        ([0xF9], 1_920),                         // config 31, code 1: two 20 ms frames of 0 bytes
        ([0x48, 0x00], 960),                     // config 9 (SILK MB 20 ms), code 0
        ([0x1B, 0x02, 0x00, 0x00], 5_760),        // config 3 (SILK NB 60 ms), code 3, 2 frames: the 120 ms maximum
        ([0xE3, 0x02, 0x00, 0x00], 240),          // config 28 (CELT FB 2.5 ms), code 3, 2 frames
    ])
    func validPayloadsReportTheirLength(payload: [UInt8], samples: Int) throws {
        #expect(try payload.withUnsafeBytes { try OpusDepayloader.samples(in: $0) } == samples)
    }

    @Test(arguments: [
        ([] as [UInt8], "empty"),
        ([0x03], "not a valid Opus packet"),            // code 3 without its frame-count byte
        ([0x03, 0x00], "not a valid Opus packet"),      // code 3 with zero frames
        ([0x1B, 0x03], "not a valid Opus packet"),      // config 3 (SILK NB 60 ms), code 3, 3 frames = 180 ms
    ])
    func invalidPayloadsAreRefusedWithTheReason(payload: [UInt8], message: String) {
        let error = #expect(throws: PacketError.self) { try payload.withUnsafeBytes { try OpusDepayloader.samples(in: $0) } }
        #expect(error?.message.contains(message) == true, "\(String(describing: error))")
    }
}
