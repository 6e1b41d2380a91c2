// Writing a call to WebM: WebMMuxer (what MediaRecorder's writer thread runs) against the
// same libavformat calls made from C (the RecordingBaseline target), in one run, on the
// same packets prepared before measuring. One iteration is one second of a call: 50 Opus
// packets and 30 VP8 frames (640x480, 1 Mb/s), interleaved by time, each flushed as the
// recorder does. Each side keeps one file open for the whole run.

import Benchmark
import BenchmarkSupport
import Foundation
import MediaEngine
import RecordingBaseline

let benchmarks: @Sendable () -> Void = {
    let configuration = Benchmark.Configuration(metrics: standardMetrics, timeUnits: .microseconds, warmupIterations: 3,
                                                scalingFactor: .one, maxDuration: .seconds(30), maxIterations: 300)

    Benchmark("WebM mux 1 s of call (Swift)", configuration: configuration) { (benchmark: Benchmark, fixture: SwiftRecording) throws in
        try measure(benchmark) { try fixture.writeSecond() }
    } setup: {
        try checkRecordingAgreement()
        return try SwiftRecording()
    }

    Benchmark("WebM mux 1 s of call (C)", configuration: configuration) { (benchmark: Benchmark, fixture: BaselineRecording) throws in
        try measure(benchmark) { try fixture.writeSecond() }
    } setup: {
        try BaselineRecording()
    }
}

