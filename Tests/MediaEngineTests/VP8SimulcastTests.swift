import Testing
@testable import MediaEngine

/// 160x90 / 320x180 / 640x360 at about 64 / 250 / 1200 kb/s, 3 temporal layers each: the
/// client's simulcast ladder on a 2-core test machine (docs/simulcast-notes.md section 1).
private let ladder = [
    VP8.SimulcastEncoder.Layer(width: 160, height: 90, bitrate: 64_000),
    VP8.SimulcastEncoder.Layer(width: 320, height: 180, bitrate: 250_000),
    VP8.SimulcastEncoder.Layer(width: 640, height: 360, bitrate: 1_200_000),
]

/// An encoder, a reusable output buffer per layer and a moving picture at the top size.
private final class SimulcastRig {
    let encoder: VP8.SimulcastEncoder
    private var storage: [UnsafeMutableRawBufferPointer]
    var pattern = TestPattern(width: 640, height: 360, frameRate: 30)
    var source = VideoFrame(width: 640, height: 360)

    init(temporalLayers: Int = 3) throws {
        let encoder = try VP8.SimulcastEncoder(layers: ladder, frameRate: 30, temporalLayers: temporalLayers)
        self.encoder = encoder
        storage = (0..<encoder.layerCount).map {
            UnsafeMutableRawBufferPointer.allocate(byteCount: encoder.maximumFrameSize(layer: $0), alignment: 16)
        }
    }

    deinit { for buffer in storage { buffer.deallocate() } }

    /// Encodes the next picture; `frames[layer]` is then that layer's bytes.
    func next(forceKeyframe: VP8.SimulcastEncoder.LayerSet = []) throws -> VP8.SimulcastEncoder.EncodedLayers {
        pattern.render(into: &source)
        return try encoder.encode(source, forceKeyframe: forceKeyframe, into: storage)
    }

    func bytes(_ layer: Int, _ info: VP8.EncodedFrameInfo) -> [UInt8] {
        Array(UnsafeRawBufferPointer(rebasing: storage[layer][..<info.byteCount]))
    }

    func keyframeSize(_ layer: Int, _ info: VP8.EncodedFrameInfo) -> (width: Int, height: Int)? {
        VP8.keyframeSize(UnsafeRawBufferPointer(rebasing: storage[layer][..<info.byteCount]))
    }
}

@Suite struct VP8SimulcastEncoding {
    @Test func everyLayerDecodesToItsOwnSizeAbove30dB() throws {
        let rig = try SimulcastRig()
        let decoders = try (0..<3).map { _ in try VP8.Decoder() }
        var references = ladder.map { VideoFrame(width: $0.width, height: $0.height) }
        var psnrs: [[Double]] = [[], [], []]
        #expect(VP8.SimulcastEncoder.libraryHasMultiResolution, "Debian 12's libvpx is built with multi-res encoding")
        #expect(rig.encoder.usesSharedMotionSearch == VP8.SimulcastEncoder.libraryHasMultiResolution)
        for index in 0..<60 {
            let output = try rig.next()
            #expect(output.count == 3)
            for layer in 0..<3 {
                let info = try #require(output[layer], "frame \(index) layer \(layer): no output")
                if info.isKeyframe {
                    let size = try #require(rig.keyframeSize(layer, info))
                    #expect(size.width == ladder[layer].width && size.height == ladder[layer].height, "\(size)")
                } else {
                    #expect(rig.keyframeSize(layer, info) == nil)
                }
                #expect(index > 0 || info.isKeyframe, "each layer starts with a keyframe")
                let decoded = try #require(try decoders[layer].decode(rig.bytes(layer, info)))
                #expect(decoded.width == ladder[layer].width && decoded.height == ladder[layer].height)
                rig.source.scale(into: &references[layer])
                psnrs[layer].append(VideoQuality.psnr(references[layer], decoded))
            }
        }
        for layer in 0..<3 {
            let mean = psnrs[layer].reduce(0, +) / Double(psnrs[layer].count)
            print("vp8 simulcast layer \(layer) \(ladder[layer].width)x\(ladder[layer].height) at \(ladder[layer].bitrate / 1000) kb/s: mean PSNR \(String(format: "%.2f", mean)) dB, min \(String(format: "%.2f", psnrs[layer].min()!)) over 60 frames")
            #expect(mean >= 30, "layer \(layer): mean PSNR \(mean) dB")
        }
    }

    @Test func eachLayerFollowsTheTemporalPatternAndItsBaseLayerDecodesAlone() throws {
        let rig = try SimulcastRig()
        var ids: [[UInt8]] = [[], [], []]
        let baseDecoders = try (0..<3).map { _ in try VP8.Decoder() }
        for _ in 0..<12 {
            let output = try rig.next()
            for layer in 0..<3 {
                let info = try #require(output[layer])
                ids[layer].append(info.temporalLayer)
                #expect(info.layerSync == (info.temporalLayer != 2))
                // What a server forwards to a subscriber that takes only temporal layer 0.
                if info.temporalLayer == 0 {
                    #expect(try baseDecoders[layer].decode(rig.bytes(layer, info)) != nil)
                }
            }
        }
        for layer in 0..<3 { #expect(ids[layer] == [0, 2, 1, 2, 0, 2, 1, 2, 0, 2, 1, 2], "layer \(layer): \(ids[layer])") }
    }

    @Test func aKeyframeRequestForOneLayerKeyframesOnlyThatLayer() throws {
        let rig = try SimulcastRig()
        var ids: [[UInt8]] = [[], [], []]
        var keyframes: [[Int]] = [[], [], []]
        let decoder = try VP8.Decoder()
        for index in 0..<18 {
            let output = try rig.next(forceKeyframe: index == 13 ? .layer(1) : [])
            for layer in 0..<3 {
                let info = try #require(output[layer])
                if info.isKeyframe { keyframes[layer].append(index) }
                if index >= 13 { ids[layer].append(info.temporalLayer) }
                if layer == 1 { #expect(try decoder.decode(rig.bytes(1, info)) != nil) }
            }
        }
        #expect(keyframes == [[0], [0, 13], [0]])
        // The keyframe restarts layer 1's pattern; the others go on where they were.
        #expect(ids[1] == [0, 2, 1, 2, 0])
        #expect(ids[0] == [2, 1, 2, 0, 2] && ids[2] == [2, 1, 2, 0, 2], "\(ids)")
    }

    @Test(arguments: [0, 1, 2])
    func aPausedLayerYieldsNothingAndResumesWithItsOwnKeyframe(paused: Int) throws {
        let rig = try SimulcastRig()
        let decoders = try (0..<3).map { _ in try VP8.Decoder() }
        func step() throws -> VP8.SimulcastEncoder.EncodedLayers {
            let output = try rig.next()
            for layer in 0..<3 {
                if let info = output[layer] { #expect(try decoders[layer].decode(rig.bytes(layer, info)) != nil) }
            }
            return output
        }
        for _ in 0..<10 { _ = try step() }
        try rig.encoder.setActive(false, layer: paused)
        #expect(!rig.encoder.isActive(layer: paused))
        for index in 10..<18 {
            let output = try step()
            // libvpx's packet list still holds the last frame: it must not come out again.
            #expect(output[paused] == nil, "frame \(index): paused layer \(paused) produced output")
            for layer in 0..<3 where layer != paused {
                let info = try #require(output[layer], "frame \(index): layer \(layer) stopped")
                #expect(!info.isKeyframe)
            }
        }
        try rig.encoder.setActive(true, layer: paused)
        let resumed = try step()
        for layer in 0..<3 {
            let info = try #require(resumed[layer])
            #expect(info.isKeyframe == (layer == paused), "layer \(layer) keyframe: \(info.isKeyframe)")
            if layer == paused {
                let size = try #require(rig.keyframeSize(layer, info))
                #expect(size.width == ladder[layer].width)
            }
        }
        for _ in 19..<24 {
            let output = try step()
            for layer in 0..<3 { #expect(output[layer]?.isKeyframe == false) }
        }
    }

    /// Each layer against its target, and against a lone `VP8.Encoder` with the same settings
    /// fed the same downscaled pictures: the shared encode call must not upset rate control.
    /// (On this synthetic pattern the top layer reaches its quality floor below 1.2 Mb/s.)
    @Test func eachLayerKeepsNearItsTargetBitrateAndALoneEncodersRate() throws {
        let rig = try SimulcastRig()
        let alone = try ladder.map { layer in
            var configuration = VP8.Configuration(width: layer.width, height: layer.height, bitrate: layer.bitrate)
            configuration.temporalLayers = 3
            return try VP8.Encoder(configuration: configuration)
        }
        var scaled = ladder.map { VideoFrame(width: $0.width, height: $0.height) }
        var bytes = [0, 0, 0]
        var aloneBytes = [0, 0, 0]
        for _ in 0..<90 {
            let output = try rig.next()
            for layer in 0..<3 {
                bytes[layer] += output[layer]?.byteCount ?? 0
                rig.source.scale(into: &scaled[layer])
                aloneBytes[layer] += try alone[layer].encode(scaled[layer])?.data.count ?? 0
            }
        }
        for layer in 0..<3 {
            let kbps = Double(bytes[layer] * 8) / 3 / 1000
            let aloneKbps = Double(aloneBytes[layer] * 8) / 3 / 1000
            let target = Double(ladder[layer].bitrate) / 1000
            print("vp8 simulcast layer \(layer) \(ladder[layer].width)x\(ladder[layer].height): \(String(format: "%.1f", kbps)) kb/s over 3 s (target \(Int(target)), a lone encoder \(String(format: "%.1f", aloneKbps)))")
            #expect(kbps >= target * 0.6 && kbps <= target * 1.3, "layer \(layer): \(kbps) kb/s for \(target)")
            #expect(abs(kbps - aloneKbps) <= aloneKbps * 0.15, "layer \(layer): \(kbps) kb/s, alone \(aloneKbps)")
        }
    }

    @Test func aLiveBitrateChangeMovesOnlyThatLayer() throws {
        let rig = try SimulcastRig()
        func secondOfBytes() throws -> [Int] {
            var bytes = [0, 0, 0]
            for _ in 0..<30 {
                let output = try rig.next()
                for layer in 0..<3 { bytes[layer] += output[layer]?.byteCount ?? 0 }
            }
            return bytes
        }
        _ = try secondOfBytes()
        let before = try secondOfBytes()
        try rig.encoder.setBitrate(300_000, layer: 2)
        _ = try secondOfBytes()
        let after = try secondOfBytes()
        #expect(Double(after[2] * 8) < 300_000 * 1.3, "top layer after the change: \(after[2] * 8) b/s")
        #expect(Double(before[2]) > Double(after[2]) * 2.5)
        #expect(abs(Double(after[1] - before[1])) < Double(before[1]) * 0.25, "layer 1: \(before[1]) then \(after[1]) bytes/s")
        #expect(rig.encoder.configurations[2].bitrate == 300_000)
    }

    /// libvpx places automatic keyframes on its lowest level only; every layer must still
    /// keep its own keyframe interval.
    @Test func everyLayerKeepsTheKeyframeInterval() throws {
        let encoder = try VP8.SimulcastEncoder(layers: ladder, temporalLayers: 3, keyframeInterval: 10)
        var pattern = TestPattern(width: 640, height: 360)
        var keyframes: [[Int]] = [[], [], []]
        for index in 0..<25 {
            let frames = try encoder.encode(pattern.nextFrame(), forceKeyframe: index == 4 ? .layer(2) : [])
            for layer in 0..<3 where try #require(frames[layer]).isKeyframe { keyframes[layer].append(index) }
        }
        // A requested keyframe starts layer 2's interval again.
        #expect(keyframes == [[0, 10, 20], [0, 10, 20], [0, 4, 14, 24]])
    }

    /// A layer whose rate control drops frames yields nil for them; the frames it does
    /// send still decode in order, and the other layers carry on.
    @Test func aStarvedLayerDropsFramesAloneAndStaysDecodable() throws {
        var starved = ladder
        starved[2].bitrate = 40_000
        let encoder = try VP8.SimulcastEncoder(layers: starved, temporalLayers: 3, allowsFrameDrops: true)
        let decoder = try VP8.Decoder()
        var pattern = TestPattern(width: 640, height: 360)
        var drops = [0, 0, 0]
        for _ in 0..<60 {
            let frames = try encoder.encode(pattern.nextFrame())
            for layer in 0..<3 where frames[layer] == nil { drops[layer] += 1 }
            if let top = frames[2] { #expect(try decoder.decode(top.data) != nil) }
        }
        print("vp8 simulcast with the top layer at 40 kb/s: dropped \(drops) frames of 60 per layer")
        #expect(drops[2] > 0)
        #expect(drops[0] == 0 && drops[1] == 0)
    }

    @Test func theConvenienceEncodeGivesEveryLayerLowestFirst() throws {
        let encoder = try VP8.SimulcastEncoder(layers: ladder, temporalLayers: 1)
        var pattern = TestPattern(width: 640, height: 360)
        let frames = try encoder.encode(pattern.nextFrame())
        #expect(frames.count == 3)
        for layer in 0..<3 {
            let frame = try #require(frames[layer])
            #expect(frame.isKeyframe)
            let size = frame.data.withUnsafeBytes { VP8.keyframeSize($0) }
            #expect(size?.width == ladder[layer].width && size?.height == ladder[layer].height)
        }
    }
}

@Suite struct VP8SimulcastBadInput {
    private static func configuration(_ width: Int, _ height: Int, _ bitrate: Int) -> VP8.Configuration {
        VP8.Configuration(width: width, height: height, bitrate: bitrate)
    }

    @Test(arguments: [
        ([], "0 layers"),
        (ladder + [VP8.SimulcastEncoder.Layer(width: 1280, height: 720, bitrate: 2_500_000)], "4 layers"),
        ([ladder[1], ladder[0]], "layer 1 is 160x90, not larger than layer 0's 320x180"),
        ([ladder[0], VP8.SimulcastEncoder.Layer(width: 160, height: 180, bitrate: 250_000)], "layer 1 is 160x180"),
        ([ladder[0], VP8.SimulcastEncoder.Layer(width: 321, height: 180, bitrate: 250_000)], "layer 1 of 2: width 321 is odd"),
        ([VP8.SimulcastEncoder.Layer(width: 0, height: 90, bitrate: 64_000), ladder[1]], "layer 0 of 2: width 0"),
        ([ladder[0], VP8.SimulcastEncoder.Layer(width: 320, height: 180, bitrate: 5_000)], "layer 1 of 2: bitrate 5000"),
    ])
    func badLaddersAreTypedErrorsNamingTheValue(layers: [VP8.SimulcastEncoder.Layer], named: String) {
        let error = #expect(throws: CodecError.self) { try VP8.SimulcastEncoder(layers: layers) }
        #expect(error?.code == .invalidConfiguration)
        #expect(error?.message.contains(named) == true, "\(error?.message ?? "")")
    }

    @Test func sharedSettingsMustAgree() {
        var low = Self.configuration(160, 90, 64_000)
        var high = Self.configuration(320, 180, 250_000)
        low.temporalLayers = 3
        var error = #expect(throws: CodecError.self) { try VP8.SimulcastEncoder(configurations: [low, high]) }
        #expect(error?.message.contains("temporal layers 1") == true, "\(error?.message ?? "")")
        high.temporalLayers = 3
        high.frameRate = 15
        error = #expect(throws: CodecError.self) { try VP8.SimulcastEncoder(configurations: [low, high]) }
        #expect(error?.message.contains("frame rate 15") == true, "\(error?.message ?? "")")
        #expect(throws: CodecError.self) { try VP8.SimulcastEncoder(layers: ladder, temporalLayers: 4) }
    }

    @Test func framesBuffersAndLayerIndicesAreChecked() throws {
        let encoder = try VP8.SimulcastEncoder(layers: ladder)
        var error = #expect(throws: CodecError.self) { try encoder.encode(VideoFrame(width: 320, height: 180)) }
        #expect(error?.code == .invalidInput)
        #expect(error?.message.contains("320x180") == true, "\(error?.message ?? "")")

        let small = UnsafeMutableRawBufferPointer.allocate(byteCount: 100, alignment: 16)
        defer { small.deallocate() }
        error = #expect(throws: CodecError.self) {
            try encoder.encode(VideoFrame(width: 640, height: 360), into: [small, small])
        }
        #expect(error?.code == .invalidInput)
        error = #expect(throws: CodecError.self) {
            try encoder.encode(VideoFrame(width: 640, height: 360), into: [small, small, small])
        }
        #expect(error?.code == .bufferTooSmall)

        error = #expect(throws: CodecError.self) { try encoder.setActive(false, layer: 3) }
        #expect(error?.message.contains("layer 3") == true, "\(error?.message ?? "")")
        error = #expect(throws: CodecError.self) { try encoder.setBitrate(1_000, layer: 1) }
        #expect(error?.message.contains("bitrate 1000") == true, "\(error?.message ?? "")")
        #expect(encoder.configurations[1].bitrate == 250_000)
        // Still a working encoder.
        #expect(try encoder.encode(VideoFrame(width: 640, height: 360)).allSatisfy { $0?.isKeyframe == true })
    }
}

@Suite struct VP8KeyframeSize {
    /// A keyframe's first 10 bytes (RFC 6386 section 9.1).
    static let header: [UInt8] = [
        0x50, 0x2A, 0x00, // frame tag: bit 0 = 0 keyframe, version 0, show_frame 1, first partition size
        0x9D, 0x01, 0x2A, // start code
        0x80, 0x02,       // width 640 (0x0280), horizontal scale 0
        0x68, 0x01,       // height 360 (0x0168), vertical scale 0
    ]

    static func size(_ bytes: [UInt8]) -> (width: Int, height: Int)? {
        bytes.withUnsafeBytes { VP8.keyframeSize($0) }
    }

    static func replacing(_ index: Int, with value: UInt8) -> [UInt8] {
        var bytes = header
        bytes[index] = value
        return bytes
    }

    @Test func readsTheSizeOfAKeyframeHeader() throws {
        let size = try #require(Self.size(Self.header))
        #expect(size.width == 640 && size.height == 360)
        // The scale bits (the top two of each field) are not part of the size.
        let scaled = try #require(Self.size(Self.replacing(7, with: 0x42)))
        #expect(scaled.width == 640)
        // Bytes after the header (the rest of the frame) change nothing.
        #expect(Self.size(Self.header + [1, 2, 3])?.height == 360)
    }

    @Test(arguments: [
        ([], "empty"),
        ([0x50], "one byte"),
        (Array(VP8KeyframeSize.header.prefix(9)), "header cut before the last byte"),
        (VP8KeyframeSize.replacing(0, with: 0x51), "interframe: frame tag bit 0 set"),
        (VP8KeyframeSize.replacing(4, with: 0x02), "wrong start code"),
        (VP8KeyframeSize.replacing(6, with: 0x00).enumerated().map { $0.offset == 7 ? 0xC0 : $0.element }, "width 0, scale bits only"),
        (VP8KeyframeSize.replacing(8, with: 0x00).enumerated().map { $0.offset == 9 ? 0x00 : $0.element }, "height 0"),
        ([UInt8](repeating: 0xFF, count: 40), "garbage"),
    ])
    func isNilForWhatIsNoKeyframeHeader(bytes: [UInt8], what: String) {
        #expect(Self.size(bytes) == nil, "\(what)")
    }

    @Test func randomBytesNeverCrashIt() {
        var generator = SystemRandomNumberGenerator()
        for _ in 0..<2_000 {
            let bytes = (0..<Int.random(in: 0..<16, using: &generator)).map { _ in UInt8.random(in: 0...255, using: &generator) }
            if let size = Self.size(bytes) {
                #expect(bytes[0] & 1 == 0 && bytes[3...5] == [0x9D, 0x01, 0x2A] && size.width > 0 && size.height > 0)
            }
        }
    }

    @Test func anInterframeFromTheEncoderIsNil() throws {
        let encoder = try VP8.Encoder(configuration: VP8.Configuration(width: 320, height: 240, bitrate: 300_000))
        var pattern = TestPattern(width: 320, height: 240)
        let key = try #require(try encoder.encode(pattern.nextFrame()))
        let inter = try #require(try encoder.encode(pattern.nextFrame()))
        #expect(Self.size(key.data).map { [$0.width, $0.height] } == [320, 240])
        #expect(!inter.isKeyframe && Self.size(inter.data) == nil)
    }
}
