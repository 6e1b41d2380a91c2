import Testing
@testable import MediaEngine

@Suite struct VP8Descriptors {
    /// RFC 7741 descriptors, field by field.
    static let vectors: [(name: String, bytes: [UInt8], descriptor: VP8PayloadDescriptor)] = [
        ("minimal, start of partition 0", [
            0x10,                    // X=0 R=0 N=0 S=1 R=0 PID=0
        ], VP8PayloadDescriptor(startOfPartition: true)),
        ("non-reference continuation of partition 2", [
            0x22,                    // N=1 S=0 PID=2
        ], VP8PayloadDescriptor(nonReference: true, startOfPartition: false, partitionIndex: 2)),
        ("7-bit PictureID", [
            0x90,                    // X=1 S=1
            0x80,                    // I=1
            0x7F,                    // M=0 PictureID 127
        ], VP8PayloadDescriptor(startOfPartition: true, pictureID: .short(127))),
        ("15-bit PictureID", [
            0x90,                    // X=1 S=1
            0x80,                    // I=1
            0x92, 0x34,              // M=1 PictureID 0x1234
        ], VP8PayloadDescriptor(startOfPartition: true, pictureID: .long(0x1234))),
        ("everything", [
            0xB0,                    // X=1 N=1 S=1 PID=0
            0xF0,                    // I=1 L=1 T=1 K=1
            0xFF, 0xFF,              // M=1 PictureID 32767
            0x2A,                    // TL0PICIDX 42
            0xB7,                    // TID=2 Y=1 KEYIDX=23
        ], VP8PayloadDescriptor(nonReference: true, startOfPartition: true, pictureID: .long(0x7FFF), tl0PictureIndex: 42,
                                temporalLayerID: 2, layerSync: true, keyIndex: 23)),
        ("TID without KEYIDX", [
            0x81,                    // X=1 S=0 PID=1
            0x20,                    // T=1
            0x40,                    // TID=1 Y=0
        ], VP8PayloadDescriptor(startOfPartition: false, partitionIndex: 1, temporalLayerID: 1)),
    ]

    @Test(arguments: vectors)
    func parseThenSerializeGivesTheBytesBack(name: String, bytes: [UInt8], descriptor: VP8PayloadDescriptor) throws {
        let (parsed, length) = try bytes.withUnsafeBytes { try VP8PayloadDescriptor.parse($0) }
        #expect(parsed == descriptor, "\(name)")
        #expect(length == bytes.count)
        #expect(descriptor.size == bytes.count)
        var out = [UInt8](repeating: 0, count: bytes.count)
        let written = try out.withUnsafeMutableBytes { try descriptor.serialize(into: $0) }
        #expect(written == bytes.count && out == bytes, "\(name)")
    }

    @Test(arguments: [
        ([UInt8](), "0 < 1"),
        ([0x80], "the X byte"),
        ([0x80, 0x80], "PictureID"),
        ([0x80, 0x80, 0x80], "the 15-bit PictureID"),
        ([0x80, 0x40], "TL0PICIDX"),
        ([0x80, 0x10], "TID/KEYIDX"),
    ])
    func truncatedDescriptorsAreTooShort(bytes: [UInt8], field: String) {
        let error = #expect(throws: PacketError.self) { try bytes.withUnsafeBytes { try VP8PayloadDescriptor.parse($0) } }
        #expect(error?.code == .tooShort)
        #expect(error?.message.contains(field) == true, "\(String(describing: error))")
    }
}

/// RTP packets for `frame`, as a sender would build them.
func vp8Packets(_ frame: [UInt8], payloader: inout VP8Payloader, timestamp: UInt32, firstSequence: UInt16) throws -> [[UInt8]] {
    var packets: [[UInt8]] = []
    var sequence = firstSequence
    for fragment in payloader.fragments(frameSize: frame.count) {
        var payload = [UInt8](repeating: 0, count: fragment.payloadSize)
        _ = try frame.withUnsafeBytes { source in
            try payload.withUnsafeMutableBytes { try VP8Payloader.write(fragment, of: source, into: $0) }
        }
        let header = RTPHeader(marker: fragment.isLast, payloadType: 96, sequenceNumber: sequence, timestamp: timestamp, ssrc: 5)
        packets.append(try RTPPacket(header: header, payload: payload).serialized())
        sequence &+= 1
    }
    return packets
}

@Suite struct VP8Packetization {
    @Test func framesSplitIntoEvenPayloadsWithinTheMTU() throws {
        var payloader = VP8Payloader(maximumPayloadSize: 1_200, firstPictureID: 32_767)
        let fragments = Array(payloader.fragments(frameSize: 5_000))
        // 1196 data bytes fit beside the 4-byte descriptor: 5 payloads of 1000.
        #expect(fragments.count == 5)
        #expect(fragments.map(\.range.count) == [1_000, 1_000, 1_000, 1_000, 1_000])
        #expect(fragments.allSatisfy { $0.payloadSize <= 1_200 })
        #expect(fragments.map(\.descriptor.startOfPartition) == [true, false, false, false, false])
        #expect(fragments.map(\.isLast) == [false, false, false, false, true])
        #expect(fragments[0].descriptor.pictureID == .long(32_767))
        // The PictureID wraps at 15 bits.
        #expect(payloader.fragments(frameSize: 10).first { _ in true }?.descriptor.pictureID == .long(0))
        let odd = Array(payloader.fragments(frameSize: 2_393))
        // One byte too many for two payloads: three, sizes within a byte of each other.
        #expect(odd.map(\.range.count) == [798, 798, 797])
        #expect(odd.allSatisfy { $0.payloadSize <= 1_200 })
    }

    @Test func assemblerRebuildsReorderedFramesAndSpotsKeyframes() throws {
        var payloader = VP8Payloader(maximumPayloadSize: 300)
        var assembler = VP8FrameAssembler()
        // A keyframe (tag bit 0 clear) and a delta frame (bit 0 set), 1000 bytes each.
        let keyframe = [0x10] + (1..<1_000).map { UInt8(truncatingIfNeeded: $0) }
        let delta = [0x11] + (1..<1_000).map { UInt8(truncatingIfNeeded: $0 * 3) }
        var first = try vp8Packets(keyframe, payloader: &payloader, timestamp: 3_000, firstSequence: 65_534)
        first.swapAt(1, 3)
        let second = try vp8Packets(delta, payloader: &payloader, timestamp: 6_000, firstSequence: 65_534 &+ UInt16(first.count))
        var frames: [([UInt8], Bool, UInt32)] = []
        for packet in first + second {
            try packet.withUnsafeBytes { bytes in
                assembler.insert(try RTPPacketView(bytes)) { frames.append((Array($0.data), $0.isKeyframe, $0.timestamp)) }
            }
        }
        #expect(frames.count == 2)
        #expect(frames.first?.0 == keyframe && frames.first?.1 == true && frames.first?.2 == 3_000)
        #expect(frames.last?.0 == delta && frames.last?.1 == false)
        #expect(assembler.statistics.framesAssembled == 2 && assembler.statistics.keyFramesAssembled == 1)
    }

    @Test func missingFragmentDropsTheFrameAndDeltasWaitForAKeyframe() throws {
        var payloader = VP8Payloader(maximumPayloadSize: 300)
        var assembler = VP8FrameAssembler()
        let key = [0x10] + [UInt8](repeating: 7, count: 899)
        let delta = [0x11] + [UInt8](repeating: 8, count: 899)
        var sequence: UInt16 = 100
        var timestamp: UInt32 = 0
        var delivered: [Bool] = []
        func send(_ frame: [UInt8], dropping: Int? = nil) throws {
            var packets = try vp8Packets(frame, payloader: &payloader, timestamp: timestamp, firstSequence: sequence)
            sequence &+= UInt16(packets.count)
            timestamp &+= 3_000
            if let dropping { packets.remove(at: dropping) }
            for packet in packets {
                try packet.withUnsafeBytes { bytes in assembler.insert(try RTPPacketView(bytes)) { delivered.append($0.isKeyframe) } }
            }
        }
        try send(delta)               // before any keyframe: held back
        try send(key)
        try send(delta)
        try send(delta, dropping: 1)  // loses its middle fragment
        try send(delta)               // would reference the lost frame: held back
        try send(key)
        try send(delta)
        #expect(delivered == [true, false, true, false])
        #expect(assembler.statistics.framesDropped == 1)
        #expect(assembler.statistics.framesSkippedAwaitingKeyframe == 2)
        #expect(!assembler.isAwaitingKeyframe)
    }

    @Test func latePacketsDuplicatesAndBadDescriptorsAreCounted() throws {
        var payloader = VP8Payloader(maximumPayloadSize: 300)
        var assembler = VP8FrameAssembler()
        let key = [0x10] + [UInt8](repeating: 1, count: 599)
        let one = try vp8Packets(key, payloader: &payloader, timestamp: 90_000, firstSequence: 10)
        let two = try vp8Packets(key, payloader: &payloader, timestamp: 93_000, firstSequence: 13)
        var count = 0
        func feed(_ packet: [UInt8]) throws {
            try packet.withUnsafeBytes { bytes in assembler.insert(try RTPPacketView(bytes)) { _ in count += 1 } }
        }
        try feed(one[0])
        try feed(one[0])                      // duplicate
        try feed(one[1]); try feed(one[2])    // completes frame 1
        try feed(one[1])                      // late: its frame is done
        try feed(two[0])
        let empty = try RTPPacket(header: RTPHeader(payloadType: 96, sequenceNumber: 14, timestamp: 93_000, ssrc: 5),
                                  payload: []).serialized()
        try feed(empty)                       // no descriptor
        try feed(two[1]); try feed(two[2])
        #expect(count == 2)
        #expect(assembler.statistics.duplicatePackets == 1)
        #expect(assembler.statistics.latePackets == 1)
        #expect(assembler.statistics.malformedPackets == 1)
    }

    @Test func realEncoderFramesSurviveTheRoundTrip() throws {
        let encoder = try VP8.Encoder(configuration: VP8.Configuration(width: 320, height: 240, bitrate: 500_000))
        let decoder = try VP8.Decoder()
        var pattern = TestPattern(width: 320, height: 240)
        var payloader = VP8Payloader()
        var assembler = VP8FrameAssembler()
        var sequence: UInt16 = 0
        var decoded = 0
        for index in 0..<15 {
            let source = pattern.nextFrame()
            let encoded = try #require(try encoder.encode(source, forceKeyframe: index == 0))
            let packets = try vp8Packets(encoded.data, payloader: &payloader, timestamp: UInt32(index * 3_000), firstSequence: sequence)
            sequence &+= UInt16(packets.count)
            for packet in packets {
                try packet.withUnsafeBytes { bytes in
                    assembler.insert(try RTPPacketView(bytes)) { frame in
                        #expect(Array(frame.data) == encoded.data)
                        if let picture = try? decoder.decode(Array(frame.data)) {
                            #expect(VideoQuality.psnr(source, picture) > 35)
                            decoded += 1
                        }
                    }
                }
            }
        }
        #expect(decoded == 15)
    }
}
