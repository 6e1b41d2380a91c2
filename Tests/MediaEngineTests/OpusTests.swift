import Testing
@testable import MediaEngine

/// Encodes `signal` frame by frame and returns the packets.
private func encode(_ signal: AudioFrame, with encoder: Opus.Encoder) throws -> [[UInt8]] {
    let frameLength = encoder.configuration.samplesPerFrame * signal.layout.count
    var packets: [[UInt8]] = []
    var offset = 0
    while offset + frameLength <= signal.samples.count {
        let frame = AudioFrame(layout: signal.layout, samples: Array(signal.samples[offset..<(offset + frameLength)]))
        packets.append(try encoder.encode(frame))
        offset += frameLength
    }
    return packets
}

private func correlation(_ reference: [Int16], _ test: [Int16], lag: Int, start: Int = 0, count: Int = .max) -> Double {
    reference.withUnsafeBufferPointer { r in
        test.withUnsafeBufferPointer { t in AudioQuality.correlation(reference: r, test: t, lag: lag, start: start, count: count) }
    }
}

@Suite struct OpusRoundTrip {
    @Test func sineSurvivesWithHighCorrelationAfterDelayAlignment() throws {
        var configuration = Opus.Configuration()
        configuration.bitrate = 64_000
        configuration.application = .audio
        let encoder = try Opus.Encoder(configuration: configuration)
        let decoder = try Opus.Decoder()
        var tone = ToneGenerator(.sine(440))
        let source = tone.clip(seconds: 2)

        var output: [Int16] = []
        for packet in try encode(source, with: encoder) {
            output += try decoder.decode(packet).samples
        }
        #expect(output.count == source.samples.count)
        // Opus output lags its input by exactly the encoder's lookahead.
        let score = correlation(source.samples, output, lag: encoder.lookahead, start: 960)
        print("opus 440 Hz sine at 64 kb/s: correlation \(score)")
        #expect(score >= 0.99, "correlation \(score)")
    }

    @Test func correlationSearchFindsTheCodecDelay() throws {
        // Tones with no common period, so only the true delay lines up.
        var configuration = Opus.Configuration()
        configuration.bitrate = 64_000
        let encoder = try Opus.Encoder(configuration: configuration)
        let decoder = try Opus.Decoder()
        var tones = ToneGenerator(.multiTone([313, 797, 1_231, 2_917]))
        let source = tones.clip(seconds: 1)
        var output: [Int16] = []
        for packet in try encode(source, with: encoder) { output += try decoder.decode(packet).samples }
        let lag = source.samples.withUnsafeBufferPointer { r in
            output.withUnsafeBufferPointer { t in AudioQuality.bestLag(reference: r, test: t, range: 0...960, start: 4_800) }
        }
        #expect(lag == encoder.lookahead)
    }

    @Test(arguments: Opus.FrameDuration.allCases, ChannelLayout.allCases)
    func everyFrameDurationAndLayoutRoundTrips(duration: Opus.FrameDuration, layout: ChannelLayout) throws {
        var configuration = Opus.Configuration()
        configuration.frameDuration = duration
        configuration.layout = layout
        configuration.bitrate = 96_000
        configuration.application = .restrictedLowDelay
        let encoder = try Opus.Encoder(configuration: configuration)
        let decoder = try Opus.Decoder(layout: layout)
        var tone = ToneGenerator(.sine(1_000), layout: layout)
        let source = tone.clip(seconds: 0.6)
        var output: [Int16] = []
        for packet in try encode(source, with: encoder) {
            let frame = try decoder.decode(packet)
            #expect(frame.samplesPerChannel == duration.samplesPerChannel())
            output += frame.samples
        }
        // Compare the left channel (every channel carries the same tone).
        let left = { (s: [Int16]) in stride(from: 0, to: s.count, by: layout.count).map { s[$0] } }
        let score = correlation(left(source.samples), left(output), lag: encoder.lookahead, start: 4_800)
        #expect(score >= 0.98, "\(duration) \(layout): correlation \(score)")
    }

    @Test func concealedFrameKeepsTheOutputLength() throws {
        let encoder = try Opus.Encoder(configuration: Opus.Configuration())
        let decoder = try Opus.Decoder()
        var tone = ToneGenerator(.sine(440))
        let packets = try encode(tone.clip(seconds: 0.5), with: encoder)
        var total = 0
        for (index, packet) in packets.enumerated() {
            let frame = index == 10 ? try decoder.decodeLost(samplesPerChannel: 960) : try decoder.decode(packet)
            #expect(frame.samplesPerChannel == 960)
            total += frame.samplesPerChannel
        }
        #expect(total == packets.count * 960)
    }

    @Test func inBandFECRecoversALostFrameBetterThanConcealment() throws {
        var configuration = Opus.Configuration()
        configuration.bitrate = 24_000
        configuration.inbandFEC = true
        configuration.expectedPacketLossPercent = 20
        let encoder = try Opus.Encoder(configuration: configuration)
        // A tone whose pitch changes every 60 ms, so concealment cannot just extrapolate.
        var source: [Int16] = []
        for frequency in [300.0, 520, 410, 660, 350, 480, 590, 330] {
            var tone = ToneGenerator(.sine(frequency), amplitude: 0.4)
            source += tone.clip(seconds: 0.06).samples
        }
        source = Array(repeating: source, count: 3).flatMap { $0 }
        let packets = try encode(AudioFrame(layout: .mono, samples: source), with: encoder)
        let lost = Set(stride(from: 6, to: packets.count - 1, by: 7))

        func decodeAll(useFEC: Bool) throws -> [Int16] {
            let decoder = try Opus.Decoder()
            var output: [Int16] = []
            for (index, packet) in packets.enumerated() {
                if lost.contains(index) {
                    output += useFEC ? try decoder.decodeFEC(from: packets[index + 1], samplesPerChannel: 960).samples
                        : try decoder.decodeLost(samplesPerChannel: 960).samples
                } else {
                    output += try decoder.decode(packet).samples
                }
            }
            return output
        }
        let concealed = try decodeAll(useFEC: false)
        let recovered = try decodeAll(useFEC: true)
        #expect(concealed.count == recovered.count)
        func lostFrameCorrelation(_ output: [Int16]) -> Double {
            let scores = lost.map { correlation(source, output, lag: encoder.lookahead, start: $0 * 960, count: 960) }
            return scores.reduce(0, +) / Double(scores.count)
        }
        let plc = lostFrameCorrelation(concealed)
        let fec = lostFrameCorrelation(recovered)
        print("opus lost-frame correlation: FEC \(fec), PLC \(plc)")
        #expect(fec > plc + 0.05, "FEC \(fec) vs PLC \(plc)")
        #expect(fec >= 0.75, "FEC \(fec)")
    }
}
