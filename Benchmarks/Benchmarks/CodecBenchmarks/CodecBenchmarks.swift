// MediaEngine's Swift codec wrappers against the same libopus/libvpx calls made from C
// (the CodecBaseline target), in one run, on identical inputs prepared before measuring.
//
// One benchmark iteration is one frame. Opus runs 1000 frames per sample (scalingFactor
// .kilo) so that per-sample overhead vanishes; VP8 runs one frame per sample. Both sides
// of a pair run the same warm-up and the same number of frames, so their encoders see
// the same rate-control history. See README.md for how to run and read the results.

import Benchmark
import BenchmarkSupport
import MediaEngine

let benchmarks: @Sendable () -> Void = {
    let metrics = standardMetrics

    // Iteration counts, not durations, bound every run, so that both sides of a pair
    // encode exactly the same frames; maxDuration is only a safety net.
    let opus = Benchmark.Configuration(metrics: metrics, timeUnits: .nanoseconds, warmupIterations: 1,
                                       scalingFactor: .kilo, maxDuration: .seconds(30), maxIterations: 40)
    let vp8Encode = Benchmark.Configuration(metrics: metrics, timeUnits: .nanoseconds, warmupIterations: 30,
                                            scalingFactor: .one, maxDuration: .seconds(30), maxIterations: 900)
    let vp8Decode = Benchmark.Configuration(metrics: metrics, timeUnits: .nanoseconds, warmupIterations: 30,
                                            scalingFactor: .one, maxDuration: .seconds(30), maxIterations: 1_500)

    // MARK: Opus: 20 ms mono, 32 kb/s, complexity 9, VoIP

    Benchmark("Opus encode (Swift)", configuration: opus) { (benchmark: Benchmark, fixture: SwiftOpusEncoding) throws in
        try measure(benchmark) { try fixture.encodeNext() }
    } setup: {
        try SwiftOpusEncoding()
    }

    Benchmark("Opus encode (C)", configuration: opus) { (benchmark: Benchmark, fixture: BaselineOpusEncoding) throws in
        try measure(benchmark) { try fixture.encodeNext() }
    } setup: {
        try checkOpusAgreement(try encodeOpusClip())
        return try BaselineOpusEncoding()
    }

    Benchmark("Opus decode (Swift)", configuration: opus) { (benchmark: Benchmark, fixture: SwiftOpusDecoding) throws in
        try measure(benchmark) { try fixture.decodeNext() }
    } setup: {
        try SwiftOpusDecoding(try encodeOpusClip())
    }

    Benchmark("Opus decode (C)", configuration: opus) { (benchmark: Benchmark, fixture: BaselineOpusDecoding) throws in
        try measure(benchmark) { try fixture.decodeNext() }
    } setup: {
        let packets = try encodeOpusClip()
        try checkOpusAgreement(packets)
        return try BaselineOpusDecoding(packets)
    }

    // MARK: VP8: 640x480, 1 Mb/s, realtime, cpu-used -6, one thread

    Benchmark("VP8 encode (Swift)", configuration: vp8Encode) { (benchmark: Benchmark, fixture: SwiftVP8Encoding) throws in
        try measure(benchmark) { try fixture.encodeNext() }
    } setup: {
        try SwiftVP8Encoding(testPattern())
    }

    Benchmark("VP8 encode (C)", configuration: vp8Encode) { (benchmark: Benchmark, fixture: BaselineVP8Encoding) throws in
        try measure(benchmark) { try fixture.encodeNext() }
    } setup: {
        let frames = testPattern()
        try checkVP8Agreement(frames, try encodeVP8Sequence(frames))
        return try BaselineVP8Encoding(frames)
    }

    Benchmark("VP8 decode (Swift)", configuration: vp8Decode) { (benchmark: Benchmark, fixture: SwiftVP8Decoding) throws in
        try measure(benchmark) { try fixture.decodeNext() }
    } setup: {
        try SwiftVP8Decoding(try encodeVP8Sequence(testPattern()))
    }

    Benchmark("VP8 decode (C)", configuration: vp8Decode) { (benchmark: Benchmark, fixture: BaselineVP8Decoding) throws in
        try measure(benchmark) { try fixture.decodeNext() }
    } setup: {
        let frames = testPattern()
        let packets = try encodeVP8Sequence(frames)
        try checkVP8Agreement(frames, packets)
        return try BaselineVP8Decoding(packets)
    }
}

/// One second of the 640x480 test pattern.
func testPattern() -> [VideoFrame] {
    renderTestPattern(count: Settings.vp8FrameCount, width: Settings.vp8().width, height: Settings.vp8().height)
}

