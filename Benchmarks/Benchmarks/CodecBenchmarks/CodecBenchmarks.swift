// MediaEngine's Swift codec wrappers against the same libopus/libvpx calls made from C
// (the CodecBaseline target), in one run, on identical inputs prepared before measuring.
//
// One benchmark iteration is one frame. Opus runs 1000 frames per sample (scalingFactor
// .kilo) so that per-sample overhead vanishes; VP8 runs one frame per sample. Both sides
// of a pair run the same warm-up and the same number of frames, so their encoders see
// the same rate-control history. See README.md for how to run and read the results.

import Benchmark
import MediaEngine

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

let benchmarks: @Sendable () -> Void = {
    // CPU time of this thread, in nanoseconds, in place of cpuTotal: cpuTotal is read from
    // /proc in 10 ms scheduler ticks, too coarse for one frame, and the framework reads
    // it inside its malloc window, adding 16 mallocs to every sample (README.md).
    let threadCPU = BenchmarkMetric.custom("CPU time, this thread (ns)")
    let metrics: [BenchmarkMetric] = [.wallClock, .throughput, .mallocCountTotal, threadCPU]

    // Iteration counts, not durations, bound every run, so that both sides of a pair
    // encode exactly the same frames; maxDuration is only a safety net.
    let opus = Benchmark.Configuration(metrics: metrics, timeUnits: .nanoseconds, warmupIterations: 1,
                                       scalingFactor: .kilo, maxDuration: .seconds(30), maxIterations: 40)
    let vp8Encode = Benchmark.Configuration(metrics: metrics, timeUnits: .nanoseconds, warmupIterations: 30,
                                            scalingFactor: .one, maxDuration: .seconds(30), maxIterations: 900)
    let vp8Decode = Benchmark.Configuration(metrics: metrics, timeUnits: .nanoseconds, warmupIterations: 30,
                                            scalingFactor: .one, maxDuration: .seconds(30), maxIterations: 1_500)

    /// Runs `operation` once per scaled iteration inside the measured window, then
    /// records this thread's CPU time for the sample.
    @inline(__always)
    func measure<Result>(_ benchmark: Benchmark, _ operation: () throws -> Result) rethrows {
        benchmark.startMeasurement()
        let cpuStart = threadCPUNanoseconds()
        for _ in benchmark.scaledIterations {
            blackHole(try operation())
        }
        let cpuUsed = threadCPUNanoseconds() - cpuStart
        benchmark.stopMeasurement()
        benchmark.measurement(threadCPU, cpuUsed)
    }

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

/// CPU time consumed by the calling thread.
func threadCPUNanoseconds() -> Int {
    var time = timespec()
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &time)
    return time.tv_sec * 1_000_000_000 + time.tv_nsec
}
