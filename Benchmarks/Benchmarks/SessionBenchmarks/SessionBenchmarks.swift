// The media core's per-packet paths, sans-I/O (two cores back to back, no sockets): a
// packet sent through one core and received by the other, with everything the engine does
// per packet but decoding. Against libsrtp2 alone protecting and unprotecting packets of
// the same size from C (SRTPBaseline), in the same run: SRTP is most of the work, and the
// ratio shows what the core adds. One iteration is one packet; each sample runs 1000
// (scalingFactor .kilo). See README.md.

import Benchmark
import BenchmarkSupport
import MediaEngine
import SRTPFixtures

let benchmarks: @Sendable () -> Void = {
    let configuration = Benchmark.Configuration(metrics: standardMetrics, timeUnits: .nanoseconds, warmupIterations: 2,
                                                scalingFactor: .kilo, maxDuration: .seconds(30), maxIterations: 200)

    Benchmark("Core audio packet (Swift)", configuration: configuration) { (benchmark: Benchmark, path: CoreAudioPath) throws in
        measure(benchmark) { path.sendNext() }
        try path.afterSample()
    } setup: {
        let path = try CoreAudioPath()
        let before = path.packetsReceived
        for _ in 0..<100 { path.sendNext() }
        guard path.packetsReceived == before + 100 else { throw BenchmarkFailure("audio: \(path.packetsReceived - before) of 100 packets arrived") }
        try path.afterSample()
        return path
    }

    Benchmark("Core audio packet: SRTP alone (C)", configuration: configuration) { (benchmark: Benchmark, srtp: BaselineSRTPRoundTrip) throws in
        try measure(benchmark) { try srtp.roundTripNext() }
    } setup: {
        try BaselineSRTPRoundTrip(profile: .aesCM128HMACSHA1_80, size: try averageRTPSize { try CoreAudioPath().pair } )
    }

    Benchmark("Core video packet (Swift)", configuration: configuration) { (benchmark: Benchmark, path: CoreVideoPath) in
        measure(benchmark) { path.sendNext() }
    } setup: {
        let path = try CoreVideoPath()
        let before = path.framesAssembled
        for _ in 0..<300 { path.sendNext() }
        guard path.framesAssembled > before else { throw BenchmarkFailure("video: no frame was assembled") }
        return path
    }

    Benchmark("Core video packet, no RTCP (Swift)", configuration: configuration) { (benchmark: Benchmark, path: CoreVideoPath) in
        measure(benchmark) { path.sendNext() }
    } setup: {
        let path = try CoreVideoPath(feedback: false)
        for _ in 0..<300 { path.sendNext() }
        return path
    }

    Benchmark("Core video packet: SRTP alone (C)", configuration: configuration) { (benchmark: Benchmark, srtp: BaselineSRTPRoundTrip) throws in
        try measure(benchmark) { try srtp.roundTripNext() }
    } setup: {
        try BaselineSRTPRoundTrip(profile: .aesCM128HMACSHA1_80, size: try averageRTPSize { try CoreVideoPath().pair })
    }

    // The forwarding server's per-packet path: one publisher packet in, one out per
    // subscriber (3), against a C forwarder making the same libsrtp calls. Iterations are
    // packets in; forwarded packets are three times as many.
    for (kind, video) in [("audio", false), ("video", true)] {
        Benchmark("SFU \(kind) packet to 3 subscribers (Swift)", configuration: configuration) { (benchmark: Benchmark, path: RouterForwardingPath) in
            measure(benchmark) { path.forwardNext() }
            path.packets.refill()
        } setup: {
            let path = try RouterForwardingPath(subscribers: 3, video: video)
            for _ in 0..<60 { path.forwardNext() }
            guard path.datagramsOut >= 150 else { throw BenchmarkFailure("SFU \(kind): \(path.datagramsOut) of 180 packets forwarded in setup") }
            path.packets.refill()
            return path
        }

        // The same to our clients' legs and to WebRTC legs (each copy's payload type and
        // header extension IDs rewritten to the leg's, the MID erased), interleaved.
        let browsers = Benchmark.Configuration(metrics: [.mallocCountTotal] + BrowserLegMetrics.all, timeUnits: .nanoseconds,
                                               warmupIterations: 5, maxDuration: .seconds(20), maxIterations: 400)
        Benchmark("SFU \(kind) packet to 3 subscribers: ours, then browsers'", configuration: browsers) { (benchmark: Benchmark, pair: BrowserLegForwardingPair) in
            benchmark.startMeasurement()
            for _ in benchmark.scaledIterations { pair.next(benchmark) }
            benchmark.stopMeasurement()
        } setup: {
            try BrowserLegForwardingPair(video: video)
        }

        Benchmark("SFU \(kind) packet to 3 subscribers: C forwarder", configuration: configuration) { (benchmark: Benchmark, path: BaselineForwardingPath) throws in
            try measure(benchmark) { try path.forwardNext() }
            path.packets.refill()
        } setup: {
            try BaselineForwardingPath(subscribers: 3, video: video)
        }

        // One router on one thread against two forwarding workers on two (WorkerScaling):
        // a run is 512 packets of each of 2 publishers to 6 subscribers, wall-clock time,
        // the two alternating. 1 worker's time ÷ 2 workers' is the speed-up.
        let scaling = Benchmark.Configuration(metrics: WorkerScalingMetrics.all, timeUnits: .microseconds, warmupIterations: 3,
                                              maxDuration: .seconds(20), maxIterations: 200)
        Benchmark("SFU \(kind): 2 publishers to 6 subscribers, 1 worker then 2", configuration: scaling) { (benchmark: Benchmark, scaling: WorkerScaling) throws in
            for _ in benchmark.scaledIterations { try scaling.next(benchmark) }
        } setup: {
            try WorkerScaling(video: video)
        }
    }
}

/// The mean RTP size (before SRTP) of the packets a fixture's sender put on the wire in setup.
func averageRTPSize(_ fixture: () throws -> CorePair) throws -> Int {
    let pair = try fixture()
    guard pair.packetsCarried > 0 else { throw BenchmarkFailure("no packet crossed in setup") }
    return pair.bytesCarried / pair.packetsCarried - SRTPProfile.aesCM128HMACSHA1_80.rtpOverhead
}
