#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// GCC's delay-based AIMD rate controller, after libwebrtc's `AimdRateControl`.
///
/// States hold / increase / decrease follow the detector: normal moves hold to
/// increase, overuse moves to decrease, underuse to hold (let the queues drain).
/// - Increase: multiplicative, 8 % per second, while the link capacity is unknown;
///   additive near a known capacity (about one average packet per response time,
///   rtt + 100 ms, at least 4 kb/s per second). Never above 1.5 × acknowledged + 10 kb/s.
///   An acknowledged rate above the capacity's upper bound (mean + 3 σ) forgets it.
/// - Decrease: to β = 0.85 × the acknowledged bitrate (β × the capacity if that would be
///   an increase), never up; the acknowledged rate is folded into the capacity estimate
///   (EWMA 0.05, normalised variance clamped to 0.4...2.5 kb/s), which is reset first
///   when the rate fell below its lower bound. Then hold.
/// - Decreases repeat at most once per rtt (clamped to 10...200 ms), sooner only when the
///   acknowledged rate is below half the estimate.
struct AIMDRateController: Sendable {
    static let beta = 0.85
    static let multiplicativeIncreasePerSecond = 1.08
    static let minimumAdditiveIncrease = 4_000.0
    static let throughputHeadroom = 1.5
    static let throughputSlack = 10_000.0
    static let assumedFrameRate = 30.0
    static let assumedPacketBits = 1_200.0 * 8

    private enum State { case hold, increase, decrease }

    private(set) var bitrate: Double
    private(set) var minimum: Double
    private(set) var maximum: Double
    var roundTripTime = Duration.milliseconds(200)
    private(set) var linkCapacity = LinkCapacityEstimator()
    private var state = State.hold
    private var lastChange: Duration?

    init(start: Double, minimum: Double, maximum: Double) {
        self.minimum = minimum
        self.maximum = maximum
        bitrate = min(max(start, minimum), maximum)
    }

    /// Runs the controller for the detector's latest `usage`.
    ///
    /// - Parameters:
    ///   - usage: The overuse detector's state.
    ///   - acknowledged: The acknowledged (received) bitrate, if measured yet.
    ///   - now: The current time.
    mutating func update(_ usage: BandwidthUsage, acknowledged: Double?, now: Duration) {
        switch usage {
        case .normal:
            if state == .hold {
                lastChange = now
                state = .increase
            }
        case .overusing:
            state = .decrease
        case .underusing:
            state = .hold
        }
        var next = bitrate
        switch state {
        case .hold:
            break
        case .increase:
            if let acknowledged, acknowledged > linkCapacity.upperBound { linkCapacity.reset() }
            let elapsed = min(max((now - (lastChange ?? now)).seconds, 0), 1)
            if linkCapacity.estimate != nil {
                next += max(Self.minimumAdditiveIncrease, nearCapacityIncreaseRate) * elapsed
            } else {
                next += max(bitrate * (pow(Self.multiplicativeIncreasePerSecond, elapsed) - 1), 1_000 * elapsed)
            }
            if let acknowledged {
                let limit = Self.throughputHeadroom * acknowledged + Self.throughputSlack
                if next > limit { next = max(bitrate, limit) }
            }
            lastChange = now
        case .decrease:
            if let acknowledged {
                var decreased = Self.beta * acknowledged
                if decreased > bitrate, let capacity = linkCapacity.estimate { decreased = Self.beta * capacity }
                next = min(bitrate, decreased)
                if acknowledged < linkCapacity.lowerBound { linkCapacity.reset() }
                linkCapacity.overuseDetected(acknowledged: acknowledged)
            } else {
                next = bitrate * Self.beta
            }
            state = .hold
            lastChange = now
        }
        bitrate = min(max(next, minimum), maximum)
    }

    /// A probe showed the link carries `bitrate`: the estimate rises to it (never falls),
    /// the capacity learnt at earlier overuse is forgotten (it was below this), and the
    /// controller holds until the detector next says normal.
    mutating func probed(_ bitrate: Double, now: Duration) {
        guard bitrate > self.bitrate else { return }
        self.bitrate = min(bitrate, maximum)
        linkCapacity.reset()
        state = .hold
        lastChange = now
    }

    /// Sets new limits and brings the estimate within them.
    mutating func setLimits(minimum: Double, maximum: Double) {
        self.minimum = minimum
        self.maximum = maximum
        bitrate = min(max(bitrate, minimum), maximum)
    }

    /// Whether an overuse may cut the rate again now.
    func mayReduceFurther(now: Duration, acknowledged: Double?) -> Bool {
        guard let lastChange else { return true }
        let interval = min(max(roundTripTime, .milliseconds(10)), .milliseconds(200))
        if now - lastChange >= interval { return true }
        guard let acknowledged else { return false }
        return acknowledged < 0.5 * bitrate
    }

    /// Halves the estimate, for overuse before any acknowledged bitrate is known.
    mutating func halve(now: Duration) {
        bitrate = max(bitrate / 2, minimum)
        lastChange = now
        state = .hold
    }

    /// Bits per second to add per second near the capacity: one average packet of a
    /// 30 fps stream per response time (rtt + 100 ms).
    private var nearCapacityIncreaseRate: Double {
        let frameBits = bitrate / Self.assumedFrameRate
        let packetsPerFrame = max(1, (frameBits / Self.assumedPacketBits).rounded(.up))
        let responseTime = (roundTripTime + .milliseconds(100)).seconds
        return frameBits / packetsPerFrame / responseTime
    }
}

/// The link capacity seen at overuse events, with its spread (libwebrtc's
/// `LinkCapacityEstimator`): an EWMA of the acknowledged rate at each overuse and a
/// variance normalised by the estimate, in kb/s.
struct LinkCapacityEstimator: Sendable, Hashable {
    static let smoothing = 0.05
    static let deviationRange = 0.4...2.5

    private var estimateKbps: Double?
    private var deviationKbps = 0.4

    /// The estimate in bits per second, nil before the first overuse or after a reset.
    var estimate: Double? { estimateKbps.map { $0 * 1_000 } }

    /// Estimate plus three standard deviations, in bits per second; infinite when unknown.
    var upperBound: Double {
        guard let estimateKbps else { return .infinity }
        return (estimateKbps + 3 * (estimateKbps * deviationKbps).squareRoot()) * 1_000
    }

    /// Estimate minus three standard deviations, in bits per second; 0 when unknown.
    var lowerBound: Double {
        guard let estimateKbps else { return 0 }
        return max(0, estimateKbps - 3 * (estimateKbps * deviationKbps).squareRoot()) * 1_000
    }

    mutating func overuseDetected(acknowledged: Double) {
        let sample = acknowledged / 1_000
        let estimate = estimateKbps.map { (1 - Self.smoothing) * $0 + Self.smoothing * sample } ?? sample
        estimateKbps = estimate
        let error = estimate - sample
        deviationKbps = (1 - Self.smoothing) * deviationKbps + Self.smoothing * error * error / max(estimate, 1)
        deviationKbps = min(max(deviationKbps, Self.deviationRange.lowerBound), Self.deviationRange.upperBound)
    }

    mutating func reset() { estimateKbps = nil }
}

/// The bitrate the receiver acknowledged: bytes of packets reported received whose
/// arrival falls in the last 500 ms of the receiver's clock, over that span (over the
/// span seen so far, once it reaches 150 ms, at the start). Holds at most 4096 samples.
struct AcknowledgedBitrateEstimator: Sendable {
    static let window = Duration.milliseconds(500)
    static let minimumSpan = Duration.milliseconds(150)
    static let sampleLimit = 4_096

    private var samples: [(arrival: Duration, bits: Int)] = []
    private var head = 0
    private var first: Duration?
    private var latest: Duration?

    mutating func add(arrival: Duration, size: Int) {
        let latest = max(self.latest ?? arrival, arrival)
        self.latest = latest
        if first == nil { first = arrival }
        guard arrival > latest - Self.window else { return }
        samples.append((arrival, size * 8))
        while head < samples.count, samples[head].arrival <= latest - Self.window || samples.count - head > Self.sampleLimit {
            head += 1
        }
        if head > 1_024 {
            samples.removeFirst(head)
            head = 0
        }
    }

    /// Bits per second, nil until 150 ms of arrivals were seen.
    var bitrate: Double? {
        guard let first, let latest else { return nil }
        let span = min(latest - first, Self.window)
        guard span >= Self.minimumSpan else { return nil }
        var bits = 0
        for index in head..<samples.count where samples[index].arrival > latest - span {
            bits += samples[index].bits
        }
        return Double(bits) / span.seconds
    }

    mutating func reset() {
        samples.removeAll()
        head = 0
        first = nil
        latest = nil
    }
}
