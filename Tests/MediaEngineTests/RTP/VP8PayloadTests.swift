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

    /// The payloader's packets, rebuilt by the receive side's frame assembly
    /// (`VideoReceiveStream`, as the media core runs it), decode to the source pictures.
    @Test func realEncoderFramesSurviveTheRoundTrip() throws {
        let encoder = try VP8.Encoder(configuration: VP8.Configuration(width: 320, height: 240, bitrate: 500_000))
        let decoder = try VP8.Decoder()
        var pattern = TestPattern(width: 320, height: 240)
        var payloader = VP8Payloader()
        var stream = VideoReceiveStream()
        var sequence: UInt16 = 65_530  // wraps within the run
        var decoded = 0
        for index in 0..<15 {
            let source = pattern.nextFrame()
            let encoded = try #require(try encoder.encode(source, forceKeyframe: index == 0))
            let packets = try vp8Packets(encoded.data, payloader: &payloader, timestamp: UInt32(index * 3_000), firstSequence: sequence)
            sequence &+= UInt16(packets.count)
            let now = Duration.milliseconds(33 * index)
            for packet in packets {
                try packet.withUnsafeBytes { bytes in _ = stream.insert(try RTPPacketView(bytes), arrival: now) }
            }
            for case .decode(let frame) in stream.process(now: now) {
                #expect(frame.data == encoded.data && frame.isKeyframe == (index == 0))
                if let picture = try? decoder.decode(frame.data) {
                    #expect(VideoQuality.psnr(source, picture) > 35)
                    decoded += 1
                }
            }
        }
        #expect(decoded == 15)
    }
}
