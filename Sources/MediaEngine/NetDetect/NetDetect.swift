import Foundation

/// What a net-detect task probes like: the packet size and rate of the media it stands
/// for (NIM's audio and video presets).
public enum NetDetectKind: String, Sendable, Hashable, CaseIterable, Codable {
    case audio
    case video = "video-default"
    case videoLow = "video-low"
    case videoMedium = "video-medium"
    case videoHigh = "video-high"
    case video480p = "video-480p"
    case video540p = "video-540p"
    case video720p = "video-720p"

    /// Probe size in bytes and the interval between probes: audio as 20 ms Opus packets
    /// with RTP/SRTP/UDP headers, video as 1,000-byte packets at the preset's bitrate.
    public var probe: (size: Int, interval: Duration) {
        switch self {
        case .audio: (172, .milliseconds(20))
        case .videoLow: (1_000, .microseconds(53_333))
        case .videoMedium: (1_000, .milliseconds(20))
        case .video, .video480p: (1_000, .milliseconds(10))
        case .videoHigh: (1_000, .microseconds(6_667))
        case .video540p: (1_000, .microseconds(5_333))
        case .video720p: (1_000, .milliseconds(4))
        }
    }
}

/// Why a net-detect task failed; when a result has one, its other fields mean nothing.
public struct NetDetectError: Error, Sendable, Hashable, Codable, CustomStringConvertible {
    public enum Code: String, Sendable, Hashable, Codable {
        case unresolvable
        case noReply
        case notAnEchoResponder
        case stopped
        case invalidOptions
        case socketFailed
    }

    public var code: Code
    public var message: String

    public init(_ code: Code, _ message: String) {
        self.code = code
        self.message = message
    }

    public var description: String { message }
}

/// The quality index of NIM's net-detect and its four classes.
public enum NetQuality: String, Sendable, Hashable, Codable, CaseIterable {
    case veryGood = "very good"
    case good
    case poor
    case veryPoor = "very poor"

    /// `(lossRate / 20) * 0.5 + (rttAverage / 1200) * 0.25 + (rttMeanDeviation / 150) * 0.25`,
    /// loss in percent, times in milliseconds.
    ///
    /// Computed as `(120 loss + rtt + 8 mdev) / 4800`, the same sum over one denominator with
    /// a single rounding, so NIM's reference points come out exactly (3 %, 500, 50 -> 0.2625;
    /// 10 %, 800, 80 -> 0.55; 20 %, 1200, 150 -> 1) and land in the class they bound.
    public static func index(lossRate: Double, rttAverage: Double, rttMeanDeviation: Double) -> Double {
        (120 * lossRate + rttAverage + 8 * rttMeanDeviation) / 4_800
    }

    /// <= 0.2625 very good, <= 0.55 good, <= 1 poor, above very poor.
    public init(index: Double) {
        switch index {
        case ...0.2625: self = .veryGood
        case ...0.55: self = .good
        case ...1: self = .poor
        default: self = .veryPoor
        }
    }
}

/// The outcome of one task, with NIM's field names.
public struct NetDetectResult: Sendable, Hashable, Codable {
    public struct ExpandInfo: Sendable, Hashable, Codable {
        public var sent = 0
        public var received = 0
        public var duplicated = 0
        public var reordered = 0
        /// Replies with another task's token or a send time we never used.
        public var forged = 0
        /// Datagrams that were not probe replies.
        public var malformed = 0
        /// Replies from an address other than the target.
        public var foreign = 0
        /// Smoothed variation of consecutive RTTs (RFC 3550 A.8 style), ms.
        public var jitter = 0.0
        public var target = ""
        public var kind = NetDetectKind.audio
        public var probeSize = 0
        public var intervalMilliseconds = 0.0
    }

    public var taskId: UInt64
    public var error: NetDetectError?
    /// Percent of probes without a reply.
    public var lossRate = 0.0
    public var rttMaximal = 0.0
    public var rttMinimal = 0.0
    public var rttAverage = 0.0
    /// As ping's mdev: sqrt(mean(rtt^2) - mean(rtt)^2), ms.
    public var rttMeanDeviation = 0.0
    public var expandInfo = ExpandInfo()
    /// One entry per probe: its RTT in ms, or nil when it was lost (for plots).
    public var rtts: [Double?] = []

    public init(taskId: UInt64) { self.taskId = taskId }

    public var qualityIndex: Double {
        NetQuality.index(lossRate: lossRate, rttAverage: rttAverage, rttMeanDeviation: rttMeanDeviation)
    }

    public var quality: NetQuality { NetQuality(index: qualityIndex) }
}

/// The statistics of one task, sans-I/O: probes sent, replies arriving (checked against
/// the token, the target address and the send times actually used), RTTs.
public struct NetDetectMeasurement: Sendable {
    public let token: UInt64
    public let target: SocketAddress
    private var sendTimes: [UInt64?]
    private var rtt: [Double?]
    private var highest: Int = -1
    private var lastRTT: Double?
    public private(set) var info = NetDetectResult.ExpandInfo()

    public init(token: UInt64, target: SocketAddress, count: Int) {
        self.token = token
        self.target = target
        sendTimes = Array(repeating: nil, count: count)
        rtt = Array(repeating: nil, count: count)
        info.target = target.description
    }

    /// Records probe `sequence` sent at `time` (ns on the monotonic clock).
    public mutating func sent(_ sequence: Int, at time: UInt64) {
        guard sendTimes.indices.contains(sequence) else { return }
        sendTimes[sequence] = time
        info.sent += 1
    }

    /// Records a datagram that arrived at `time` from `source`.
    public mutating func received(_ datagram: UnsafeRawBufferPointer, from source: SocketAddress, at time: UInt64) {
        guard source == target else {
            info.foreign += 1
            return
        }
        guard let probe = try? ProbePacket(parsing: datagram), probe.kind == .reply else {
            info.malformed += 1
            return
        }
        let sequence = Int(probe.sequence)
        guard probe.token == token, sendTimes.indices.contains(sequence), let sent = sendTimes[sequence], sent == probe.sendTime else {
            info.forged += 1
            return
        }
        guard rtt[sequence] == nil else {
            info.duplicated += 1
            return
        }
        let milliseconds = Double(time &- sent) / 1e6
        rtt[sequence] = milliseconds
        info.received += 1
        if sequence < highest { info.reordered += 1 }
        highest = max(highest, sequence)
        if let lastRTT { info.jitter += (abs(milliseconds - lastRTT) - info.jitter) / 16 }
        lastRTT = milliseconds
    }

    /// The largest RTT seen so far, ms.
    public var maximumRTT: Double { rtt.compactMap { $0 }.max() ?? 0 }

    /// The result for the probes sent so far.
    public func result(taskId: UInt64) -> NetDetectResult {
        var result = NetDetectResult(taskId: taskId)
        result.expandInfo = info
        let sentCount = info.sent
        result.rtts = Array(rtt.prefix(sentCount))
        let values = rtt.compactMap { $0 }
        result.lossRate = sentCount == 0 ? 0 : Double(sentCount - values.count) * 100 / Double(sentCount)
        guard !values.isEmpty else { return result }
        let mean = values.reduce(0, +) / Double(values.count)
        let meanSquare = values.reduce(0) { $0 + $1 * $1 } / Double(values.count)
        result.rttAverage = mean
        result.rttMinimal = values.min() ?? 0
        result.rttMaximal = values.max() ?? 0
        result.rttMeanDeviation = max(0, meanSquare - mean * mean).squareRoot()
        return result
    }
}

/// Runs one net-detect task on the calling thread: `count` probes of the kind's size, one
/// per interval, to an echo responder; then waits for stragglers (at least 1 s, or twice
/// the largest RTT) and returns the result. Never hangs: the whole run is bounded by
/// count x interval plus the straggler wait (at most 5 s).
public enum NetDetectRunner {
    public struct Options: Sendable, Hashable {
        public var kind: NetDetectKind = .audio
        public var count = 50
        /// Nil: the kind's interval.
        public var interval: Duration?

        public init(kind: NetDetectKind = .audio, count: Int = 50, interval: Duration? = nil) {
            self.kind = kind
            self.count = count
            self.interval = interval
        }
    }

    public static func run(taskId: UInt64, target: String, options: Options, stop: () -> Bool = { false },
                           progress: (Int, Int) -> Void = { _, _ in }) -> NetDetectResult {
        var failed = NetDetectResult(taskId: taskId)
        guard options.count > 0 && options.count <= 100_000 else {
            failed.error = NetDetectError(.invalidOptions, "count \(options.count) must be within 1...100000")
            return failed
        }
        let interval = options.interval ?? options.kind.probe.interval
        guard interval > .zero && interval <= .seconds(10) else {
            failed.error = NetDetectError(.invalidOptions, "interval \(interval) must be within 0...10 s")
            return failed
        }
        let address: SocketAddress
        do {
            address = try SocketAddress(parsing: target)
        } catch {
            failed.error = NetDetectError(.unresolvable, "\(target): \(error.message)")
            return failed
        }
        let socket: UDPSocket
        do {
            socket = try UDPSocket(bindTo: SocketAddress(host: address.isIPv6 ? "::" : "0.0.0.0", port: 0))
        } catch {
            failed.error = NetDetectError(.socketFailed, "\(error.message)")
            return failed
        }
        defer { socket.close() }
        let size = options.kind.probe.size
        var measurement = NetDetectMeasurement(token: UInt64.random(in: 1 ... .max), target: address, count: options.count)
        var buffer = [UInt8](repeating: 0, count: 2_048)
        var probe = [UInt8](repeating: 0, count: size)
        let clock = ContinuousClock()
        let start = clock.now
        func nanoseconds() -> UInt64 { UInt64((clock.now - start) / .nanoseconds(1)) }
        var next = 0
        var stopped = false
        var lastSend = Duration.zero
        while true {
            if stop() {
                stopped = true
                break
            }
            let elapsed = clock.now - start
            if next < options.count, elapsed >= interval * next {
                let sendTime = nanoseconds()
                let packet = ProbePacket(kind: .request, token: measurement.token, sequence: UInt32(next), sendTime: sendTime)
                _ = probe.withUnsafeMutableBytes { try? packet.serialize(into: $0, size: size) }
                // An unreachable target refuses with ICMP, which the socket ignores: it is just silence.
                try? probe.withUnsafeBytes { try socket.send($0, to: address) }
                measurement.sent(next, at: sendTime)
                next += 1
                lastSend = clock.now - start
                progress(next, options.count)
                continue
            }
            let straggle: Duration = min(.seconds(5), max(.seconds(1), .milliseconds(Int64(2 * measurement.maximumRTT))))
            if next >= options.count, elapsed - lastSend >= straggle || measurement.info.received == options.count { break }
            let wait: Duration = next < options.count ? max(.microseconds(100), interval * next - elapsed) : .milliseconds(20)
            guard let (count, source) = (try? buffer.withUnsafeMutableBytes { try socket.receive(into: $0, timeout: min(wait, .milliseconds(20))) }) ?? nil else {
                continue
            }
            buffer.withUnsafeBytes { bytes in
                measurement.received(UnsafeRawBufferPointer(rebasing: bytes[0..<count]), from: source, at: nanoseconds())
            }
        }
        var result = measurement.result(taskId: taskId)
        result.expandInfo.kind = options.kind
        result.expandInfo.probeSize = size
        result.expandInfo.intervalMilliseconds = interval / .milliseconds(1)
        if stopped {
            result.error = NetDetectError(.stopped, "stopped after \(measurement.info.sent) of \(options.count) probes")
        } else if measurement.info.received == 0 {
            let other = measurement.info.malformed + measurement.info.forged
            result.error = other > 0
                ? NetDetectError(.notAnEchoResponder, "\(target) answered \(other) times, never with a valid probe reply: not an echo responder")
                : NetDetectError(.noReply, "no reply from \(target) to \(options.count) probes: unreachable, or not an echo responder")
        }
        return result
    }
}
