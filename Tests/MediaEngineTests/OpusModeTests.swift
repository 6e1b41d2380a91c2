import Testing
@testable import MediaEngine

@Suite struct OpusModes {
    private func packetSizes(_ configuration: Opus.Configuration, _ signal: ToneGenerator.Signal, frames: Int) throws -> [Int] {
        let encoder = try Opus.Encoder(configuration: configuration)
        var source = ToneGenerator(signal, layout: configuration.layout)
        return try (0..<frames).map { _ in try encoder.encode(source.nextFrame(samplesPerChannel: configuration.samplesPerFrame)).count }
    }

    @Test func dtxSendsAlmostNothingDuringSilence() throws {
        var configuration = Opus.Configuration()
        configuration.discontinuousTransmission = true
        let sizes = try packetSizes(configuration, .silence, frames: 50)
        // After the encoder notices the silence, frames shrink to 1-2 byte DTX packets,
        // with a comfort-noise update every 400 ms (20 frames).
        let tail = sizes.suffix(30)
        #expect(tail.filter { $0 > 2 }.count <= 2, "\(tail)")
        #expect(tail.reduce(0, +) < 120, "\(tail)")

        configuration.discontinuousTransmission = false
        let withoutDTX = try packetSizes(configuration, .silence, frames: 50)
        #expect(withoutDTX.suffix(30).allSatisfy { $0 >= 3 }, "\(withoutDTX.suffix(30))")
    }

    @Test func cbrPacketsAllHaveTheSameSizeAndVBRPacketsDoNot() throws {
        var configuration = Opus.Configuration()
        configuration.application = .audio
        configuration.bitrate = 48_000
        configuration.variableBitrate = false
        let signal = ToneGenerator.Signal.multiTone([200, 1_500, 7_000])
        let cbr = try packetSizes(configuration, signal, frames: 25)
        // 48 kb/s at 20 ms is 120 bytes per packet.
        #expect(Set(cbr.dropFirst()) == [120], "\(cbr)")
        configuration.variableBitrate = true
        let vbr = try packetSizes(configuration, .multiTone([200, 1_500, 7_000]), frames: 25)
        #expect(Set(vbr).count > 1)
    }

    @Test func liveBitrateChangeChangesPacketSizes() throws {
        var configuration = Opus.Configuration()
        configuration.application = .audio
        configuration.variableBitrate = false
        configuration.bitrate = 64_000
        let encoder = try Opus.Encoder(configuration: configuration)
        var source = ToneGenerator(.sine(440))
        let before = try encoder.encode(source.nextFrame()).count
        try encoder.setBitrate(16_000)
        let after = try encoder.encode(source.nextFrame()).count
        #expect(before == 160 && after == 40, "\(before) -> \(after) bytes")
    }

    @Test func decoderResetForgetsHistoryAndKeepsDecoding() throws {
        let encoder = try Opus.Encoder(configuration: Opus.Configuration())
        let decoder = try Opus.Decoder()
        var source = ToneGenerator(.sine(440))
        for _ in 0..<5 { _ = try decoder.decode(try encoder.encode(source.nextFrame())) }
        try decoder.reset()
        // Concealment right after a reset has no history to extrapolate: silence.
        let concealed = try decoder.decodeLost(samplesPerChannel: 960)
        #expect(concealed.samples.allSatisfy { $0 == 0 })
        #expect(try decoder.decode(try encoder.encode(source.nextFrame())).samplesPerChannel == 960)
        try encoder.reset()
    }
}

@Suite struct Sources {
    @Test func testPatternChangesEveryFrameAndIsDeterministic() {
        var a = TestPattern(width: 160, height: 120, frameRate: 25)
        var b = TestPattern(width: 160, height: 120, frameRate: 25)
        var previous = a.nextFrame()
        _ = b.nextFrame()
        for index in 1..<50 {
            let frame = a.nextFrame()
            #expect(frame.data != previous.data, "frame \(index) repeats the one before")
            #expect(frame.timestamp == .milliseconds(40 * index))
            #expect(b.nextFrame().data == frame.data)
            previous = frame
        }
    }

    @Test func toneGeneratorIsContinuousAcrossFrames() {
        var split = ToneGenerator(.sine(1_000))
        var whole = ToneGenerator(.sine(1_000))
        let joined = split.nextFrame(samplesPerChannel: 480).samples + split.nextFrame(samplesPerChannel: 480).samples
        #expect(joined == whole.nextFrame(samplesPerChannel: 960).samples)
        var silence = ToneGenerator(.silence, layout: .stereo)
        let quiet = silence.nextFrame()
        #expect(quiet.samples.count == 1_920 && quiet.samples.allSatisfy { $0 == 0 })
        var loud = ToneGenerator(.sine(1_000), amplitude: 1)
        #expect(loud.nextFrame().samples.max() == 32_767)
    }
}
