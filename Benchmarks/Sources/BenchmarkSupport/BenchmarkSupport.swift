// What every benchmark executable here shares: the metrics, the measured loop with the
// per-thread CPU clock, and packets laid out in one block that never moves.

import Benchmark

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// CPU time of the measuring thread, in place of cpuTotal: cpuTotal is read from /proc
/// in 10 ms scheduler ticks, too coarse for one frame, and the framework reads it inside
/// its malloc window, adding 16 mallocs to every sample (README.md).
public let threadCPU = BenchmarkMetric.custom("CPU time, this thread (ns)")

/// The metrics every benchmark records.
public let standardMetrics: [BenchmarkMetric] = [.wallClock, .throughput, .mallocCountTotal, threadCPU]

/// Runs `operation` once per scaled iteration inside the measured window, then records
/// this thread's CPU time for the sample.
@inline(__always)
public func measure<Result>(_ benchmark: Benchmark, _ operation: () throws -> Result) rethrows {
    benchmark.startMeasurement()
    let cpuStart = threadCPUNanoseconds()
    for _ in benchmark.scaledIterations {
        blackHole(try operation())
    }
    let cpuUsed = threadCPUNanoseconds() - cpuStart
    benchmark.stopMeasurement()
    benchmark.measurement(threadCPU, cpuUsed)
}

/// CPU time consumed by the calling thread.
public func threadCPUNanoseconds() -> Int {
    var time = timespec()
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &time)
    return time.tv_sec * 1_000_000_000 + time.tv_nsec
}

/// Packets back to back in one block that never moves, so both sides of a comparison
/// read the same memory.
public final class PacketSequence {
    private let bytes: UnsafeMutableRawBufferPointer
    private let ranges: [Range<Int>]

    public init(_ packets: [[UInt8]]) {
        bytes = .allocate(byteCount: max(1, packets.reduce(0) { $0 + $1.count }), alignment: 16)
        var ranges: [Range<Int>] = []
        var offset = 0
        for packet in packets {
            bytes.baseAddress!.advanced(by: offset).copyMemory(from: packet, byteCount: packet.count)
            ranges.append(offset..<offset + packet.count)
            offset += packet.count
        }
        self.ranges = ranges
    }

    deinit { bytes.deallocate() }

    public var count: Int { ranges.count }

    public subscript(index: Int) -> UnsafeRawBufferPointer { UnsafeRawBufferPointer(rebasing: bytes[ranges[index]]) }
}

/// Why a fixture could not be built, or a call failed during a run.
public struct BenchmarkFailure: Error, CustomStringConvertible {
    public let description: String
    public init(_ description: String) { self.description = description }
}

/// Deterministic bytes that look random (a 32-bit LCG), so payloads are not all zero.
public func pseudoRandomBytes(count: Int, seed: UInt32) -> [UInt8] {
    var state = seed
    return (0..<count).map { _ in
        state = state &* 1_664_525 &+ 1_013_904_223
        return UInt8(truncatingIfNeeded: state >> 24)
    }
}
