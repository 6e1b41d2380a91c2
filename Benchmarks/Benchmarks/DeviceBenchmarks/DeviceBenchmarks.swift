// Camera frame conversion: V4L2FrameConverter against the same libyuv and TurboJPEG calls
// made from C (the DeviceBaseline target), for 1280x720 YUYV and 4:2:2 MJPEG (quality
// 90), on identical inputs prepared before measuring. One iteration is one frame. Also
// the ALSA capture path's allocations per frame.

import Benchmark
import BenchmarkSupport
import DeviceBaseline
import MediaEngine

let benchmarks: @Sendable () -> Void = {
    let configuration = Benchmark.Configuration(metrics: standardMetrics, timeUnits: .microseconds, warmupIterations: 20,
                                                scalingFactor: .one, maxDuration: .seconds(30), maxIterations: 1_000)

    Benchmark("YUYV 1280x720 to I420 (Swift)", configuration: configuration) { (benchmark: Benchmark, fixture: SwiftConversion) in
        measure(benchmark) { fixture.convert() }
    } setup: {
        try SwiftConversion(.yuyv)
    }

    Benchmark("YUYV 1280x720 to I420 (C)", configuration: configuration) { (benchmark: Benchmark, fixture: BaselineConversion) in
        measure(benchmark) { fixture.convert() }
    } setup: {
        try BaselineConversion(.yuyv)
    }

    Benchmark("MJPEG 1280x720 to I420 (Swift)", configuration: configuration) { (benchmark: Benchmark, fixture: SwiftConversion) in
        measure(benchmark) { fixture.convert() }
    } setup: {
        try SwiftConversion(.mjpeg)
    }

    Benchmark("MJPEG 1280x720 to I420 (C)", configuration: configuration) { (benchmark: Benchmark, fixture: BaselineConversion) in
        measure(benchmark) { fixture.convert() }
    } setup: {
        try BaselineConversion(.mjpeg)
    }

    // Paced to real time (20 ms per frame): 150 frames take 3 s. Mallocs of both the
    // capture thread and the reader are counted (the interposer counts the process).
    let capture = Benchmark.Configuration(metrics: [.wallClock, .mallocCountTotal], timeUnits: .milliseconds,
                                          warmupIterations: 25, scalingFactor: .one, maxDuration: .seconds(30),
                                          maxIterations: 150)
    Benchmark("ALSA capture 20 ms frame (Swift, paced)", configuration: capture) { (benchmark: Benchmark, fixture: ALSACaptureFixture) throws in
        try measure(benchmark) { try fixture.read() }
    } setup: {
        try ALSACaptureFixture()
    }
}
