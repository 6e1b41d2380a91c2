import Testing
@testable import MediaEngine

@Suite struct VP8Quality {
    @Test func vga1MbpsKeepsMeanPSNRAbove35dB() throws {
        var configuration = VP8.Configuration(width: 640, height: 480, bitrate: 1_000_000)
        configuration.frameRate = 30
        let encoder = try VP8.Encoder(configuration: configuration)
        let decoder = try VP8.Decoder()
        var pattern = TestPattern(width: 640, height: 480, frameRate: 30)
        var psnrs: [Double] = []
        for _ in 0..<60 {
            let source = pattern.nextFrame()
            let encoded = try #require(try encoder.encode(source))
            let decoded = try #require(try decoder.decode(encoded.data))
            psnrs.append(VideoQuality.psnr(source, decoded))
        }
        let mean = psnrs.reduce(0, +) / Double(psnrs.count)
        print("vp8 640x480 1 Mb/s: mean PSNR \(mean) dB over 60 frames, min \(psnrs.min()!)")
        #expect(mean >= 35, "mean PSNR \(mean) dB")
    }

    @Test func achievedBitrateIsWithin15PercentOfTargetOver10Seconds() throws {
        let configuration = VP8.Configuration(width: 640, height: 480, bitrate: 1_000_000)
        let encoder = try VP8.Encoder(configuration: configuration)
        var pattern = TestPattern(width: 640, height: 480, frameRate: 30)
        var frame = VideoFrame(width: 640, height: 480)
        var output = [UInt8](repeating: 0, count: encoder.maximumFrameSize)
        var bytes = 0
        for _ in 0..<300 {
            pattern.render(into: &frame)
            let info = try output.withUnsafeMutableBytes { try encoder.encode(frame, into: $0) }
            bytes += info?.byteCount ?? 0
        }
        let achieved = Double(bytes * 8) / 10
        let error = abs(achieved - 1_000_000) / 1_000_000
        print("vp8 640x480 1 Mb/s target: achieved \(Int(achieved)) b/s over 10 s (\(String(format: "%.1f", error * 100)) % off)")
        #expect(error <= 0.15, "achieved \(achieved) b/s")
    }

    @Test func forcedKeyframeIsAKeyframe() throws {
        let encoder = try VP8.Encoder(configuration: VP8.Configuration(width: 320, height: 240, bitrate: 300_000))
        let decoder = try VP8.Decoder()
        var pattern = TestPattern(width: 320, height: 240)
        var kinds: [Bool] = []
        for index in 0..<20 {
            let encoded = try #require(try encoder.encode(pattern.nextFrame(), forceKeyframe: index == 12))
            kinds.append(encoded.isKeyframe)
            // The VP8 frame tag's bit 0 is 0 for keyframes (RFC 6386 section 9.1).
            #expect((encoded.data[0] & 1 == 0) == encoded.isKeyframe)
            _ = try decoder.decode(encoded.data)
        }
        #expect(kinds[0] == true)
        #expect(kinds[12] == true)
        #expect(kinds.enumerated().filter { $0.element }.map(\.offset) == [0, 12])
    }

    @Test func resolutionChangeMidStreamDecodes() throws {
        let encoder = try VP8.Encoder(configuration: VP8.Configuration(width: 640, height: 480, bitrate: 800_000))
        let decoder = try VP8.Decoder()
        var large = TestPattern(width: 640, height: 480)
        var small = TestPattern(width: 320, height: 240)
        for index in 0..<30 {
            if index == 15 { try encoder.setResolution(width: 320, height: 240) }
            let source = index < 15 ? large.nextFrame() : small.nextFrame()
            let encoded = try #require(try encoder.encode(source))
            if index == 15 { #expect(encoded.isKeyframe) }
            let decoded = try #require(try decoder.decode(encoded.data))
            #expect(decoded.width == source.width && decoded.height == source.height)
            let psnr = VideoQuality.psnr(source, decoded)
            #expect(psnr >= 30, "frame \(index) at \(source.width)x\(source.height): PSNR \(psnr)")
        }
        #expect(encoder.configuration.width == 320)
    }

    @Test func liveBitrateChangeMovesTheOutputRate() throws {
        let encoder = try VP8.Encoder(configuration: VP8.Configuration(width: 320, height: 240, bitrate: 600_000))
        var pattern = TestPattern(width: 320, height: 240)
        func secondOfBytes() throws -> Int {
            var total = 0
            for _ in 0..<30 { total += try encoder.encode(pattern.nextFrame())?.data.count ?? 0 }
            return total
        }
        _ = try secondOfBytes()
        let high = try secondOfBytes()
        try encoder.setBitrate(150_000)
        _ = try secondOfBytes()
        let low = try secondOfBytes()
        #expect(Double(low * 8) < 150_000 * 1.3, "after the change: \(low * 8) b/s")
        #expect(Double(high) > Double(low) * 2.5)
        #expect(encoder.configuration.bitrate == 150_000)
    }
}

@Suite struct VP8Modes {
    @Test func errorResilientMultiThreadedEncodingDecodes() throws {
        var configuration = VP8.Configuration(width: 640, height: 480, bitrate: 800_000)
        configuration.errorResilient = true
        configuration.threads = 2
        configuration.cpuUsed = -8
        let encoder = try VP8.Encoder(configuration: configuration)
        let decoder = try VP8.Decoder(threads: 2)
        var pattern = TestPattern(width: 640, height: 480)
        for _ in 0..<20 {
            let source = pattern.nextFrame()
            let encoded = try #require(try encoder.encode(source))
            let decoded = try #require(try decoder.decode(encoded.data))
            #expect(VideoQuality.psnr(source, decoded) > 33)
        }
    }

    /// Regression: with temporal layers and frame drops, the first frame after a dropped
    /// upper-layer frame decoded as corrupt (libvpx restored a stale entropy context).
    @Test func droppedFramesWithTemporalLayersKeepTheStreamDecodable() throws {
        var configuration = VP8.Configuration(width: 640, height: 360, bitrate: 40_000)
        configuration.temporalLayers = 3
        configuration.allowsFrameDrops = true
        let encoder = try VP8.Encoder(configuration: configuration)
        let decoder = try VP8.Decoder()
        var pattern = TestPattern(width: 640, height: 360)
        var drops = 0
        for index in 0..<40 {
            guard let encoded = try encoder.encode(pattern.nextFrame()) else {
                drops += 1
                continue
            }
            #expect(throws: Never.self, "frame \(index)") { _ = try decoder.decode(encoded.data) }
        }
        #expect(drops > 10, "40 kb/s for 640x360 should drop frames, dropped \(drops)")
    }

    @Test func keyframeIntervalIsHonoured() throws {
        var configuration = VP8.Configuration(width: 160, height: 120, bitrate: 200_000)
        configuration.keyframeInterval = 10
        let encoder = try VP8.Encoder(configuration: configuration)
        var pattern = TestPattern(width: 160, height: 120)
        let keys = try (0..<35).compactMap { index in try encoder.encode(pattern.nextFrame())?.isKeyframe == true ? index : nil }
        #expect(keys.first == 0)
        #expect(zip(keys, keys.dropFirst()).allSatisfy { $1 - $0 <= 10 }, "\(keys)")
        #expect(keys.count >= 4)
    }
}

@Suite struct VP8BorrowedDecode {
    /// Row by row, the visible bytes of a copied frame and of borrowed planes.
    static func samePlanes(_ frame: VideoFrame, _ planes: VideoPlanes) -> Bool {
        guard frame.width == planes.width, frame.height == planes.height else { return false }
        return frame.withPlanes { y, u, v in
            func same(_ copy: UnsafeBufferPointer<UInt8>, _ copyStride: Int, _ borrowed: UnsafePointer<UInt8>,
                      _ borrowedStride: Int, _ width: Int, _ height: Int) -> Bool {
                (0..<height).allSatisfy { row in
                    (0..<width).allSatisfy { copy[row * copyStride + $0] == borrowed[row * borrowedStride + $0] }
                }
            }
            return same(y, frame.strideY, planes.y, planes.strideY, frame.width, frame.height)
                && same(u, frame.strideUV, planes.u, planes.strideU, frame.chromaWidth, frame.chromaHeight)
                && same(v, frame.strideUV, planes.v, planes.strideV, frame.chromaWidth, frame.chromaHeight)
        }
    }

    @Test func borrowedPlanesEqualTheCopiedFrame() throws {
        let encoder = try VP8.Encoder(configuration: VP8.Configuration(width: 320, height: 240, bitrate: 400_000))
        let copying = try VP8.Decoder()
        let borrowing = try VP8.Decoder()
        var pattern = TestPattern(width: 320, height: 240)
        for index in 0..<12 {
            let source = pattern.nextFrame()
            let encoded = try #require(try encoder.encode(source))
            let copy = try #require(try copying.decode(encoded.data))
            #expect(VideoQuality.psnr(source, copy) > 30)
            let same = try encoded.data.withUnsafeBytes { bytes in
                try borrowing.decode(bytes) { planes in Self.samePlanes(copy, planes) }
            }
            #expect(same == true, "frame \(index): borrowed planes differ from the copy (nil: no picture)")
        }
    }

    @Test func borrowedDecodeOfCorruptDataThrowsWithoutCallingTheBody() throws {
        let decoder = try VP8.Decoder()
        var called = false
        #expect(throws: CodecError.self) {
            _ = try [UInt8](repeating: 0xFF, count: 40).withUnsafeBytes { bytes in
                try decoder.decode(bytes) { _ in called = true }
            }
        }
        #expect(!called)
    }

    @Test func theBodysErrorPassesThrough() throws {
        struct Stop: Error {}
        let encoder = try VP8.Encoder(configuration: VP8.Configuration(width: 160, height: 120, bitrate: 200_000))
        var pattern = TestPattern(width: 160, height: 120)
        let encoded = try #require(try encoder.encode(pattern.nextFrame()))
        let decoder = try VP8.Decoder()
        #expect(throws: Stop.self) {
            _ = try encoded.data.withUnsafeBytes { bytes in try decoder.decode(bytes) { _ in throw Stop() } }
        }
    }
}
