// Camera frame conversion: V4L2FrameConverter against the same libyuv and TurboJPEG calls
// made from C (the DeviceBaseline target), for 1280x720 YUYV and 4:2:2 MJPEG (quality
// 90), on identical inputs prepared before measuring. One iteration is one frame.

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
}
