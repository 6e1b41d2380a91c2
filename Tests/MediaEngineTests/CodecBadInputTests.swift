import Testing
@testable import MediaEngine

private func opusConfiguration(_ change: (inout Opus.Configuration) -> Void) -> Opus.Configuration {
    var configuration = Opus.Configuration()
    change(&configuration)
    return configuration
}

@Suite struct OpusBadInput {
    static let invalid: [(Opus.Configuration, String)] = [
        (opusConfiguration { $0.bitrate = 0 }, "bitrate 0 b/s"),
        (opusConfiguration { $0.bitrate = 600_000 }, "bitrate 600000 b/s"),
        (opusConfiguration { $0.sampleRate = 44_100 }, "sample rate 44100 Hz"),
        (opusConfiguration { $0.complexity = 11 }, "complexity 11"),
        (opusConfiguration { $0.expectedPacketLossPercent = -1 }, "loss -1 %"),
    ]

    @Test(arguments: invalid)
    func invalidConfigurationIsATypedErrorNamingTheValue(configuration: Opus.Configuration, named: String) throws {
        let error = try #require(throws: CodecError.self) { try Opus.Encoder(configuration: configuration) }
        #expect(error.code == .invalidConfiguration)
        #expect(error.message.contains(named), "\(error.message)")
    }

    @Test func frameDurationsOpusCannotCodeDoNotExist() {
        #expect(Opus.FrameDuration(milliseconds: 30) == nil)
        #expect(Opus.FrameDuration(milliseconds: 0) == nil)
        #expect(Opus.FrameDuration(milliseconds: 2.5) == .ms2_5)
        #expect(Opus.FrameDuration(milliseconds: 60)?.samplesPerChannel() == 2_880)
    }

    @Test func decoderRefusesUnsupportedRate() {
        let error = #expect(throws: CodecError.self) { try Opus.Decoder(sampleRate: 44_100) }
        #expect(error?.message.contains("44100") == true)
    }

    @Test func liveBitrateChangeRejectsZeroAndKeepsTheOldRate() throws {
        let encoder = try Opus.Encoder(configuration: Opus.Configuration())
        #expect(throws: CodecError.self) { try encoder.setBitrate(0) }
        #expect(encoder.configuration.bitrate == 32_000)
        try encoder.setBitrate(12_000)
        #expect(encoder.configuration.bitrate == 12_000)
    }

    @Test func frameOfTheWrongLengthIsInvalidInput() throws {
        let encoder = try Opus.Encoder(configuration: Opus.Configuration())
        let error = try #require(throws: CodecError.self) {
            try encoder.encode(AudioFrame(layout: .mono, samplesPerChannel: 961))
        }
        #expect(error.code == .invalidInput)
        #expect(error.message.contains("961"))
        #expect(throws: CodecError.self) { try encoder.encode(AudioFrame(layout: .stereo, samplesPerChannel: 960)) }
    }

    @Test func emptyTruncatedAndCorruptPacketsAreCorruptPacketErrorsAndTheDecoderGoesOn() throws {
        let encoder = try Opus.Encoder(configuration: Opus.Configuration())
        let decoder = try Opus.Decoder()
        var tone = ToneGenerator(.sine(440))
        let good = try encoder.encode(tone.nextFrame())
        // Code 3 packet (TOC 0x03) whose frame count byte says 0 frames: invalid per RFC 6716 3.2.5.
        let bad: [[UInt8]] = [[], [0x03], [0x03, 0x00], [0xFB, 0x83] + [UInt8](repeating: 0xFF, count: 3)]
        for packet in bad {
            let error = try #require(throws: CodecError.self, "\(packet)") { try decoder.decode(packet) }
            #expect(error.code == .corruptPacket, "\(packet): \(error)")
        }
        #expect(try decoder.decode(good).samplesPerChannel == 960)
        #expect(throws: CodecError.self) { try decoder.decodeLost(samplesPerChannel: 7) }
    }

    @Test func outputBufferTooSmallIsTyped() throws {
        let encoder = try Opus.Encoder(configuration: Opus.Configuration())
        let decoder = try Opus.Decoder()
        var tone = ToneGenerator(.sine(440))
        let packet = try encoder.encode(tone.nextFrame())
        var pcm = [Int16](repeating: 0, count: 480)
        let error = try #require(throws: CodecError.self) {
            try packet.withUnsafeBytes { bytes in try pcm.withUnsafeMutableBufferPointer { try decoder.decode(bytes, into: $0) } }
        }
        #expect(error.code == .bufferTooSmall)
    }
}

@Suite struct VP8BadInput {
    @Test(arguments: [
        (0, 480, 1_000_000, "width 0"), (641, 480, 1_000_000, "width 641"), (640, 0, 1_000_000, "height 0"),
        (640, 481, 1_000_000, "height 481"), (640, 480, 0, "bitrate 0"), (20_000, 480, 1_000_000, "width 20000"),
    ])
    func invalidConfigurationIsATypedErrorNamingTheValue(width: Int, height: Int, bitrate: Int, named: String) {
        let error = #expect(throws: CodecError.self) {
            try VP8.Encoder(configuration: VP8.Configuration(width: width, height: height, bitrate: bitrate))
        }
        #expect(error?.code == .invalidConfiguration)
        #expect(error?.message.contains(named) == true, "\(error?.message ?? "")")
    }

    @Test func otherRangesAreChecked() {
        var configuration = VP8.Configuration(width: 320, height: 240, bitrate: 300_000)
        configuration.cpuUsed = 17
        #expect(throws: CodecError.self) { try VP8.Encoder(configuration: configuration) }
        configuration.cpuUsed = -6
        configuration.threads = 0
        #expect(throws: CodecError.self) { try VP8.Encoder(configuration: configuration) }
        configuration.threads = 1
        configuration.frameRate = 0
        #expect(throws: CodecError.self) { try VP8.Encoder(configuration: configuration) }
        #expect(throws: CodecError.self) { try VP8.Decoder(threads: 0) }
    }

    @Test func frameOfAnotherSizeIsInvalidInput() throws {
        let encoder = try VP8.Encoder(configuration: VP8.Configuration(width: 320, height: 240, bitrate: 300_000))
        let error = try #require(throws: CodecError.self) { try encoder.encode(VideoFrame(width: 640, height: 480)) }
        #expect(error.code == .invalidInput)
        #expect(error.message.contains("640x480"))
    }

    @Test func badResolutionChangeKeepsTheWorkingEncoder() throws {
        let encoder = try VP8.Encoder(configuration: VP8.Configuration(width: 320, height: 240, bitrate: 300_000))
        #expect(throws: CodecError.self) { try encoder.setResolution(width: 321, height: 240) }
        #expect(encoder.configuration.width == 320)
        var pattern = TestPattern(width: 320, height: 240)
        #expect(try encoder.encode(pattern.nextFrame()) != nil)
    }

    @Test func corruptTruncatedAndForeignDataAreCorruptPacketErrorsAndDecodingRecovers() throws {
        let encoder = try VP8.Encoder(configuration: VP8.Configuration(width: 320, height: 240, bitrate: 300_000))
        var pattern = TestPattern(width: 320, height: 240)
        let keyframe = try #require(try encoder.encode(pattern.nextFrame()))
        let delta = try #require(try encoder.encode(pattern.nextFrame()))
        #expect(keyframe.isKeyframe && !delta.isKeyframe)

        let decoder = try VP8.Decoder()
        // A delta frame before any keyframe has no reference to build on.
        #expect(throws: CodecError.self) { try decoder.decode(delta.data) }
        let cases: [(String, [UInt8])] = [
            ("empty", []),
            ("truncated keyframe header", Array(keyframe.data.prefix(6))),
            ("keyframe with a wrong start code", { var d = keyframe.data; d[3] = 0x00; return d }()),
            ("random bytes", (0..<500).map { UInt8(truncatingIfNeeded: $0 &* 37 &+ 11) }),
        ]
        for (name, data) in cases {
            let error = #expect(throws: CodecError.self, "\(name)") { try decoder.decode(data) }
            #expect(error?.code == .corruptPacket, "\(name): \(String(describing: error))")
        }
        // The decoder keeps working once a good keyframe arrives.
        let recovered = try #require(try decoder.decode(keyframe.data))
        #expect(recovered.width == 320)
        #expect(try decoder.decode(delta.data) != nil)
    }
}
