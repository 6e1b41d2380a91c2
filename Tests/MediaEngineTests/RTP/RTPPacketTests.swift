import Testing
@testable import MediaEngine

private func view<R>(_ bytes: [UInt8], _ body: (RTPPacketView) throws -> R) throws -> R {
    try bytes.withUnsafeBytes { try body(try RTPPacketView($0)) }
}

@Suite struct RTPPackets {
    /// Real packets, field by field.
    static let vectors: [(name: String, bytes: [UInt8])] = [
        ("Opus, no extension", [
            0x80,                    // V=2 P=0 X=0 CC=0
            0xE0,                    // M=1 PT=96
            0x12, 0x34,              // sequence number 4660
            0x00, 0x00, 0x03, 0xC0,  // timestamp 960
            0xDE, 0xAD, 0xBE, 0xEF,  // SSRC
            0xFC, 0xFF, 0xFE,        // payload (an Opus TOC byte and data)
        ]),
        ("two CSRCs and padding", [
            0xA2,                    // V=2 P=1 X=0 CC=2
            0x6F,                    // M=0 PT=111
            0xFF, 0xFF,              // sequence number 65535
            0xFF, 0xFF, 0xFF, 0xFF,  // timestamp 2^32-1
            0x00, 0x00, 0x00, 0x01,  // SSRC 1
            0x00, 0x00, 0x00, 0x02,  // CSRC 2
            0x00, 0x00, 0x00, 0x03,  // CSRC 3
            0x01, 0x02,              // payload
            0x00, 0x00, 0x03,        // 3 bytes of padding, the last one the count
        ]),
        ("one-byte extensions: audio level and transport-wide sequence", [
            0x90,                    // V=2 P=0 X=1 CC=0
            0x6F,                    // PT=111
            0x00, 0x01,              // sequence number 1
            0x00, 0x00, 0x00, 0x00,  // timestamp 0
            0x11, 0x22, 0x33, 0x44,  // SSRC
            0xBE, 0xDE, 0x00, 0x02,  // one-byte profile, 2 words
            0x10, 0xAA,              // ID 1, 1 byte: V=1 level 42
            0x31, 0x00, 0x07,        // ID 3, 2 bytes: transport-wide sequence 7
            0x00, 0x00, 0x00,        // padding to the word boundary
            0x01,                    // payload
        ]),
        ("two-byte extension with a padding byte between elements", [
            0x90, 0x60, 0x00, 0x02, 0x00, 0x00, 0x00, 0x10, 0x00, 0x00, 0x00, 0x05,
            0x10, 0x00, 0x00, 0x03,  // two-byte profile, 3 words
            0x05, 0x03, 0x61, 0x62, 0x63,  // ID 5, 3 bytes "abc"
            0x00,                    // padding byte (ID 0)
            0x10, 0x00,              // ID 16, 0 bytes (allowed in the two-byte form)
            0xF0, 0x02, 0x01, 0x02,  // ID 240, 2 bytes
            0x09, 0x09,              // payload
        ]),
        ("extension of another profile is kept opaque", [
            0x90, 0x60, 0x00, 0x03, 0x00, 0x00, 0x00, 0x20, 0x00, 0x00, 0x00, 0x06,
            0x12, 0x34, 0x00, 0x01,  // profile 0x1234, 1 word
            0xFF, 0xFF, 0xFF, 0xFF,  // profile-defined data
        ]),
    ]

    @Test(arguments: vectors)
    func parseThenSerializeGivesTheBytesBack(name: String, bytes: [UInt8]) throws {
        let packet = try RTPPacket(parsing: bytes)
        #expect(try packet.serialized() == bytes, "\(name)")
    }

    @Test func fieldsOfTheOpusPacket() throws {
        try view(Self.vectors[0].bytes) { packet in
            #expect(packet.marker && packet.payloadType == 96)
            #expect(packet.sequenceNumber == 4_660 && packet.timestamp == 960 && packet.ssrc == 0xDEAD_BEEF)
            #expect(Array(packet.payload) == [0xFC, 0xFF, 0xFE])
            #expect(packet.headerSize == 12 && packet.extensionProfile == nil)
        }
    }

    @Test func csrcsAndPaddingAreRemovedFromThePayload() throws {
        try view(Self.vectors[1].bytes) { packet in
            #expect(packet.csrcCount == 2 && packet.csrc(at: 0) == 2 && packet.csrc(at: 1) == 3)
            #expect(packet.paddingLength == 3)
            #expect(Array(packet.payload) == [0x01, 0x02])
            #expect(packet.sequenceNumber == 65_535 && packet.timestamp == .max)
        }
    }

    @Test func extensionElementsAreFoundByID() throws {
        try view(Self.vectors[2].bytes) { packet in
            #expect(packet.extensionProfile == 0xBEDE)
            let level = try #require(packet.extensionValue(id: 1))
            #expect(AudioLevel(byte: level[0]) == AudioLevel(level: 42, voiceActivity: true))
            let sequence = try #require(packet.extensionValue(id: 3))
            #expect(sequence.uint16(at: 0) == 7)
            #expect(packet.extensionValue(id: 2) == nil)
            #expect(Array(packet.payload) == [0x01])
        }
        try view(Self.vectors[3].bytes) { packet in
            #expect(packet.extensionValue(id: 5).map(Array.init) == Array("abc".utf8))
            #expect(packet.extensionValue(id: 16)?.count == 0)
            #expect(packet.extensionValue(id: 240).map(Array.init) == [1, 2])
        }
        let block = try RTPPacket(parsing: Self.vectors[3].bytes).header.extensionBlock
        #expect(block?.form == .twoByte)
        #expect(block?.elements.map(\.id) == [5, 16, 240])
    }

    @Test func builtExtensionBlocksRoundTripAndOverwriteInPlace() throws {
        var block = try RTPHeaderExtensionBlock(form: .oneByte, elements: [
            RTPHeaderExtension(id: 1, value: [AudioLevel(level: 30, voiceActivity: true).byte]),
            RTPHeaderExtension(id: 3, value: [0x00, 0x01]),
        ])
        #expect(block.data == [0x10, 0x9E, 0x31, 0x00, 0x01, 0x00, 0x00, 0x00])
        let replacement: [UInt8] = [0x12, 0x34]
        #expect(replacement.withUnsafeBytes { block.overwrite(id: 3, with: $0) })
        #expect(block.value(id: 3) == [0x12, 0x34])
        #expect(!replacement.withUnsafeBytes { block.overwrite(id: 1, with: $0) }, "length differs")
        let header = RTPHeader(payloadType: 111, sequenceNumber: 9, timestamp: 48_000, ssrc: 77, extensionBlock: block)
        let packet = RTPPacket(header: header, payload: [1, 2, 3])
        #expect(try RTPPacket(parsing: packet.serialized()) == packet)

        #expect(throws: PacketError.self) {
            try RTPHeaderExtensionBlock(form: .oneByte, elements: [RTPHeaderExtension(id: 15, value: [0])])
        }
        #expect(throws: PacketError.self) {
            try RTPHeaderExtensionBlock(form: .oneByte, elements: [RTPHeaderExtension(id: 2, value: Array(repeating: 0, count: 17))])
        }
    }

    static let malformed: [(name: String, bytes: [UInt8], code: PacketError.Code, message: String)] = [
        ("empty", [], .tooShort, "RTP packet too short: 0 < 12"),
        ("eleven bytes", Array(repeating: 0x80, count: 11), .tooShort, "11 < 12"),
        ("version 1", [0x40] + Array(repeating: 0, count: 11), .badVersion, "RTP version 1"),
        ("version 0 (a STUN message)", [0x00, 0x01, 0x00, 0x00] + Array(repeating: 0, count: 16), .badVersion, "version 0"),
        ("15 CSRCs announced, none present", [0x8F] + Array(repeating: 0, count: 15), .badLength, "CSRC count 15 needs 72 bytes"),
        ("extension header cut off", [0x90] + Array(repeating: 0, count: 13), .badLength, "extension header at 12"),
        ("extension length past the end", [0x90, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xBE, 0xDE, 0x00, 0x05, 0, 0, 0, 0],
         .badLength, "extension of 5 words ends at 36"),
        ("one-byte element longer than the block",
         [0x90, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xBE, 0xDE, 0x00, 0x01, 0x1F, 0, 0, 0], .badExtension, "element 1 of 16 bytes"),
        ("two-byte element longer than the block",
         [0x90, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0x10, 0x00, 0x00, 0x01, 0x02, 0x09, 0, 0], .badExtension, "element 2 of 9 bytes"),
        ("padding count 0", [0xA0] + Array(repeating: 0, count: 12), .badPadding, "padding of 0 bytes"),
        ("padding longer than the payload", [0xA0] + Array(repeating: 0, count: 10) + [0x05, 0x09], .badPadding,
         "padding of 9 bytes"),
    ]

    @Test(arguments: malformed)
    func malformedPacketsAreTypedErrorsWithNumbers(name: String, bytes: [UInt8], code: PacketError.Code, message: String) {
        let error = #expect(throws: PacketError.self, "\(name)") { try view(bytes) { _ in } }
        #expect(error?.code == code, "\(name): \(String(describing: error))")
        #expect(error?.message.contains(message) == true, "\(name): \(String(describing: error))")
    }

    @Test func randomBytesNeverCrashTheParser() {
        var state: UInt64 = 0x9E37_79B9_7F4A_7C15
        var parsed = 0
        for round in 0..<20_000 {
            let length = round % 80
            var bytes = [UInt8](repeating: 0, count: length)
            for index in bytes.indices {
                state = state &* 6_364_136_223_846_793_005 &+ 1_442_695_040_888_963_407
                bytes[index] = UInt8(truncatingIfNeeded: state >> 33)
            }
            if length > 0 { bytes[0] = 0x80 | (bytes[0] & 0x3F) }  // mostly version 2, to reach the deeper checks
            if let packet = try? RTPPacket(parsing: bytes) {
                parsed += 1
                #expect((try? packet.serialized())?.count == bytes.count)
                _ = packet.header.extensionBlock?.elements
            }
        }
        #expect(parsed > 1_000)
    }

    @Test func serializationChecksItsFields() {
        var header = RTPHeader(payloadType: 128, sequenceNumber: 0, timestamp: 0, ssrc: 0)
        #expect(throws: PacketError.self) { try RTPPacket(header: header, payload: []).serialized() }
        header.payloadType = 96
        header.csrcs = Array(repeating: 1, count: 16)
        #expect(throws: PacketError.self) { try RTPPacket(header: header, payload: []).serialized() }
        header.csrcs = []
        let packet = RTPPacket(header: header, payload: [1, 2, 3])
        var small = [UInt8](repeating: 0, count: 14)
        let error = #expect(throws: PacketError.self) {
            try small.withUnsafeMutableBytes { try packet.serialize(into: $0) }
        }
        #expect(error?.code == .bufferTooSmall)
    }
}

@Suite struct Unwrapping {
    @Test func sequenceNumbersUnwrapAcrossTheWrapInBothDirections() {
        var unwrapper = SequenceNumberUnwrapper()
        let input: [UInt16] = [65_533, 65_534, 65_535, 0, 65_534, 1, 2, 65_535, 3]
        let output = input.map { unwrapper.unwrap($0) }
        #expect(output == [65_533, 65_534, 65_535, 65_536, 65_534, 65_537, 65_538, 65_535, 65_539])
    }

    @Test func timestampsUnwrap() {
        var unwrapper = TimestampUnwrapper()
        #expect(unwrapper.unwrap(UInt32.max - 959) == Int64(UInt32.max) - 959)
        #expect(unwrapper.unwrap(0) == Int64(UInt32.max) + 1)
        #expect(unwrapper.unwrap(960) == Int64(UInt32.max) + 961)
        #expect(unwrapper.unwrap(UInt32.max) == Int64(UInt32.max))
    }

    @Test func receiveStatisticsCountLossDuplicatesAndJitter() {
        var stats = RTPReceiveStatistics(clockRate: 48_000)
        // 20 ms packets, 65533...5 across the wrap, 65535 and 2 lost, 3 duplicated, perfectly paced.
        let sequences: [UInt16] = [65_533, 65_534, 0, 1, 3, 3, 4, 5]
        for sequence in sequences {
            let index = Int(sequence &- 65_533)
            stats.record(sequenceNumber: sequence, timestamp: UInt32(index * 960), payloadBytes: 100,
                         arrival: .milliseconds(20 * index))
        }
        #expect(stats.packetsReceived == 7)
        #expect(stats.packetsDuplicated == 1)
        #expect(stats.packetsExpected == 9)
        #expect(stats.packetsLost == 2)
        #expect(stats.jitter < 0.0001)
        // A packet 10 ms late moves jitter by (480 samples / 16).
        stats.record(sequenceNumber: 6, timestamp: 9 * 960, payloadBytes: 100, arrival: .milliseconds(20 * 9 + 10))
        #expect(abs(stats.jitter - 480.0 / 16 / 48_000) < 1e-6)
        #expect(stats.extendedHighestSequenceNumber == 65_536 + 6)
        // The report block: 2 lost of 10 expected is 51/256; the next interval lost nothing.
        let first = stats.receptionReport(ssrc: 9, lastSenderReport: 0x1234_5678, delaySinceLastSenderReport: 65_536)
        #expect(first.fractionLost == 51 && first.cumulativeLost == 2 && first.ssrc == 9)
        #expect(first.extendedHighestSequenceNumber == 65_542 && first.lastSenderReport == 0x1234_5678)
        #expect(first.jitter == 30)
        stats.record(sequenceNumber: 7, timestamp: 10 * 960, payloadBytes: 100, arrival: .milliseconds(20 * 10 + 10))
        #expect(stats.receptionReport(ssrc: 9).fractionLost == 0)
    }

    @Test func audioLevelFollowsRFC6464() {
        var full = [Int16](repeating: 32_767, count: 480)
        for index in stride(from: 1, to: 480, by: 2) { full[index] = -32_767 }
        #expect(full.withUnsafeBufferPointer { AudioLevel(samples: $0) }.level == 0)
        let silence = [Int16](repeating: 0, count: 480)
        #expect(silence.withUnsafeBufferPointer { AudioLevel(samples: $0) } == AudioLevel(level: 127, voiceActivity: false))
        var tone = ToneGenerator(.sine(1_000), amplitude: 0.1)
        let frame = tone.nextFrame()
        // A sine at 0.1 of full scale: RMS 0.0707 -> 23 dBov.
        #expect(frame.samples.withUnsafeBufferPointer { AudioLevel(samples: $0) }.level == 23)
        #expect(AudioLevel(byte: 0x9E) == AudioLevel(level: 30, voiceActivity: true))
    }
}
