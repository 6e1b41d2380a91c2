import MediaEngine

#if canImport(Glibc)
import Glibc
#endif
import Foundation

/// What a long run samples once an interval: the process's resident memory, open file
/// descriptors and threads, and the media's loss and delay so far.
public struct SoakSample: Codable, Sendable, Hashable {
    /// Seconds since the media connected.
    public var elapsedSeconds: Double
    public var residentBytes: Int
    public var openFileDescriptors: Int
    public var threads: Int
    /// Audio packets received and lost since the start, over every receiver.
    public var audioPacketsReceived: Int
    public var audioPacketsLost: Int
    /// The largest round trip any receiver measured (RRTR/DLRR), milliseconds.
    public var roundTripMilliseconds: Double?
    /// The largest mean audio playout delay (jitter buffer), milliseconds.
    public var playoutDelayMilliseconds: Double?

    public init(elapsedSeconds: Double, residentBytes: Int, openFileDescriptors: Int, threads: Int, audioPacketsReceived: Int = 0,
                audioPacketsLost: Int = 0, roundTripMilliseconds: Double? = nil, playoutDelayMilliseconds: Double? = nil) {
        self.elapsedSeconds = elapsedSeconds
        self.residentBytes = residentBytes
        self.openFileDescriptors = openFileDescriptors
        self.threads = threads
        self.audioPacketsReceived = audioPacketsReceived
        self.audioPacketsLost = audioPacketsLost
        self.roundTripMilliseconds = roundTripMilliseconds
        self.playoutDelayMilliseconds = playoutDelayMilliseconds
    }
}

/// This process's resident memory, open descriptors and threads, from /proc/self.
public enum ProcessResources {
    public struct Usage: Sendable, Hashable {
        public var residentBytes: Int
        public var openFileDescriptors: Int
        public var threads: Int
    }

    /// - Throws: `SourceError` when /proc/self cannot be read (not Linux, no procfs).
    public static func current() throws -> Usage {
        guard let status = try? String(contentsOfFile: "/proc/self/status", encoding: .utf8) else {
            throw SourceError("cannot read /proc/self/status")
        }
        func field(_ name: String) -> Int? {
            guard let line = status.split(separator: "\n").first(where: { $0.hasPrefix(name + ":") }) else { return nil }
            return line.split(whereSeparator: { $0 == " " || $0 == "\t" }).dropFirst().first.flatMap { Int($0) }
        }
        guard let residentKiB = field("VmRSS"), let threads = field("Threads") else {
            throw SourceError("/proc/self/status has no VmRSS or Threads")
        }
        guard let descriptors = try? FileManager.default.contentsOfDirectory(atPath: "/proc/self/fd") else {
            throw SourceError("cannot list /proc/self/fd")
        }
        // The listing's own descriptor is among them while it runs.
        return Usage(residentBytes: residentKiB * 1_024, openFileDescriptors: max(0, descriptors.count - 1), threads: threads)
    }
}

/// Whether a long run stayed flat: the least-squares slope of resident memory after the
/// warm-up, the growth of descriptors and threads from the first sample after it, and the
/// audio loss over the run, each against a limit.
public struct SoakVerdict: Codable, Sendable, Hashable {
    public struct Limits: Codable, Sendable, Hashable {
        /// Resident memory growth, MB (10^6 bytes) per hour.
        public var residentSlopeMBPerHour = 20.0
        /// Descriptors and threads more than at the first sample after the warm-up.
        public var descriptorGrowth = 2
        public var threadGrowth = 2
        /// Audio packets lost, percent of those sent (on loopback nothing should be).
        public var audioLossPercent = 1.0
        public init() {}
    }

    /// Samples before this are left out (buffers and caches filling up), seconds.
    public var warmUpSeconds: Double
    public var samplesJudged: Int
    public var residentSlopeMBPerHour: Double
    public var descriptorGrowth: Int
    public var threadGrowth: Int
    public var audioLossPercent: Double
    /// What went over its limit; empty when the run passed.
    public var failures: [String]

    public var passed: Bool { failures.isEmpty }

    /// Judges `samples` (in time order) against `limits`, leaving out those taken before
    /// `warmUpSeconds`. Fewer than 3 judged samples fail: no slope can be told.
    public static func judge(_ samples: [SoakSample], warmUpSeconds: Double, limits: Limits = Limits()) -> SoakVerdict {
        let judged = samples.filter { $0.elapsedSeconds >= warmUpSeconds }
        var verdict = SoakVerdict(warmUpSeconds: warmUpSeconds, samplesJudged: judged.count, residentSlopeMBPerHour: 0,
                                  descriptorGrowth: 0, threadGrowth: 0, audioLossPercent: 0, failures: [])
        guard judged.count >= 3, let first = judged.first, let last = judged.last else {
            verdict.failures.append("\(judged.count) samples after the \(Int(warmUpSeconds)) s warm-up: at least 3 are needed")
            return verdict
        }
        verdict.residentSlopeMBPerHour = slope(judged.map { ($0.elapsedSeconds / 3_600, Double($0.residentBytes) / 1e6) })
        verdict.descriptorGrowth = last.openFileDescriptors - first.openFileDescriptors
        verdict.threadGrowth = last.threads - first.threads
        let expected = last.audioPacketsReceived + last.audioPacketsLost
        verdict.audioLossPercent = expected == 0 ? 100 : Double(last.audioPacketsLost) * 100 / Double(expected)
        if verdict.residentSlopeMBPerHour > limits.residentSlopeMBPerHour {
            verdict.failures.append(String(format: "resident memory grows %.1f MB/h (limit %.1f)", verdict.residentSlopeMBPerHour,
                                           limits.residentSlopeMBPerHour))
        }
        if verdict.descriptorGrowth > limits.descriptorGrowth {
            verdict.failures.append("open descriptors grew by \(verdict.descriptorGrowth) (limit \(limits.descriptorGrowth))")
        }
        if verdict.threadGrowth > limits.threadGrowth {
            verdict.failures.append("threads grew by \(verdict.threadGrowth) (limit \(limits.threadGrowth))")
        }
        if verdict.audioLossPercent > limits.audioLossPercent {
            verdict.failures.append(String(format: "audio loss %.2f %% (limit %.2f %%)", verdict.audioLossPercent, limits.audioLossPercent))
        }
        return verdict
    }

    /// Least-squares slope of y over x; 0 when x does not vary.
    static func slope(_ points: [(x: Double, y: Double)]) -> Double {
        let n = Double(points.count)
        let meanX = points.reduce(0) { $0 + $1.x } / n
        let meanY = points.reduce(0) { $0 + $1.y } / n
        let covariance = points.reduce(0) { $0 + ($1.x - meanX) * ($1.y - meanY) }
        let variance = points.reduce(0) { $0 + ($1.x - meanX) * ($1.x - meanX) }
        return variance == 0 ? 0 : covariance / variance
    }
}
