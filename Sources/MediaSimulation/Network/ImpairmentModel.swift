import MediaEngine

/// What a network does to packets, as settings: random or bursty loss, a rate cap with
/// a bounded queue, delay with jitter, explicit reordering and duplication.
public struct ImpairmentSettings: Sendable, Hashable, Codable {
    /// Share of packets lost, 0...100 %.
    public var lossPercent: Double = 0
    /// Mean length of a loss burst in packets (Gilbert-Elliott); 1 or less means
    /// independent losses. A loss above N/(N+1) needs longer bursts than N, and gets them.
    public var burstLength: Double = 1
    /// One-way delay added to every packet.
    public var delay: Duration = .zero
    /// Standard deviation of the delay (normal, clamped at zero). Packets reorder when it
    /// exceeds their spacing, as on a real network.
    public var jitter: Duration = .zero
    /// Share of packets sent at once, skipping the delay, 0...100 % (netem's reorder).
    public var reorderPercent: Double = 0
    /// Share of packets delivered twice, 0...100 %.
    public var duplicatePercent: Double = 0
    /// Link rate in kilobits per second; nil for no cap.
    public var rateKbps: Int?
    /// Longest a packet may wait in the rate cap's queue before it is dropped.
    public var queueLimit: Duration = .milliseconds(300)
    /// Seed of the random choices; the same seed and input give the same run.
    public var seed: UInt64 = 1

    public init() {}

    /// Throws when a value is out of range, naming it.
    public func validate() throws(ImpairmentError) {
        for (name, value) in [("loss", lossPercent), ("reorder", reorderPercent), ("duplicate", duplicatePercent)] {
            guard value.isFinite, (0...100).contains(value) else {
                throw ImpairmentError("\(name) \(value) % is outside 0...100")
            }
        }
        guard burstLength.isFinite, burstLength >= 0, burstLength <= 1_000 else {
            throw ImpairmentError("burst length \(burstLength) is outside 0...1000 packets")
        }
        guard delay >= .zero, delay <= .seconds(60), jitter >= .zero, jitter <= .seconds(60) else {
            throw ImpairmentError("delay and jitter must be between 0 and 60 s")
        }
        if let rateKbps, !(1...10_000_000).contains(rateKbps) {
            throw ImpairmentError("rate \(rateKbps) kb/s is outside 1...10000000")
        }
        guard queueLimit > .zero else { throw ImpairmentError("queue limit must be positive") }
    }
}

/// A bad impairment setting.
public struct ImpairmentError: Error, Sendable, Hashable, CustomStringConvertible {
    public let message: String
    public init(_ message: String) { self.message = message }
    public var description: String { message }
}

/// The decisions of an impaired link for one direction, driven by the caller's clock
/// (sans-I/O): for each packet it says when, if ever, the packet arrives.
///
/// Order: loss (independent or Gilbert-Elliott bursts), then the rate cap (a FIFO link
/// of `rateKbps` with tail drop past `queueLimit`), then delay and jitter (or none for a
/// reordered packet), then duplication (the copy gets its own delay). Not thread-safe.
public struct ImpairmentModel: Sendable {
    /// What happened to one packet.
    public enum Fate: Sendable, Hashable {
        /// Arrives at `at`; a duplicate also arrives at `duplicateAt`.
        case delivered(at: Duration, duplicateAt: Duration?)
        /// Lost to random or burst loss.
        case lost
        /// Dropped because the rate cap's queue was full.
        case queueDropped
    }

    /// Counts and delays of everything processed.
    public struct Statistics: Sendable, Hashable {
        public var packets = 0
        public var lost = 0
        public var queueDropped = 0
        public var duplicated = 0
        /// Packets sent at once by explicit reordering.
        public var reordered = 0
        public var delivered = 0
        /// Delays of delivered packets (queueing + propagation + jitter), in arrival order of processing.
        public private(set) var delays: [Duration] = []
        /// At most this many delays are kept (for percentiles).
        public static let delaySampleLimit = 100_000

        mutating func record(delay: Duration) {
            if delays.count < Self.delaySampleLimit { delays.append(delay) }
        }

        /// The `fraction` (0...1) quantile of the recorded delays.
        public func delayPercentile(_ fraction: Double) -> Duration {
            guard !delays.isEmpty else { return .zero }
            let sorted = delays.sorted()
            return sorted[min(sorted.count - 1, max(0, Int((Double(sorted.count - 1) * fraction).rounded())))]
        }

        /// Mean delay of delivered packets.
        public var meanDelay: Duration {
            guard !delays.isEmpty else { return .zero }
            return delays.reduce(.zero, +) / delays.count
        }

        /// Standard deviation of the delays, in seconds.
        public var delayDeviation: Double {
            guard delays.count > 1 else { return 0 }
            let values = delays.map { $0 / .seconds(1) }
            let mean = values.reduce(0, +) / Double(values.count)
            return (values.map { ($0 - mean) * ($0 - mean) }.reduce(0, +) / Double(values.count - 1)).squareRoot()
        }

        /// Lost and queue-dropped packets as a share of all, in %.
        public var lossPercent: Double { packets == 0 ? 0 : Double(lost + queueDropped) * 100 / Double(packets) }
    }

    public private(set) var settings: ImpairmentSettings
    public private(set) var statistics = Statistics()
    private var random: SeededRandom
    private var inBurst = false
    private var linkFreeAt: Duration = .zero

    /// - Throws: `ImpairmentError` for settings out of range.
    public init(settings: ImpairmentSettings) throws(ImpairmentError) {
        try settings.validate()
        self.settings = settings
        random = SeededRandom(seed: settings.seed)
    }

    /// Changes the link rate (nil: no cap) for packets from now on; those queued keep the
    /// times they were given (a link whose capacity changes, as a radio's does).
    /// - Throws: `ImpairmentError` for a rate out of range.
    public mutating func setRate(_ kbps: Int?) throws(ImpairmentError) {
        var next = settings
        next.rateKbps = kbps
        try next.validate()
        settings = next
    }

    /// Decides the fate of a packet of `size` bytes entering the link at `now`.
    public mutating func process(size: Int, now: Duration) -> Fate {
        statistics.packets += 1
        if isLost() {
            statistics.lost += 1
            return .lost
        }
        var departure = now
        if let rate = settings.rateKbps {
            let start = max(now, linkFreeAt)
            let transmission = Duration.nanoseconds(Int64(size) * 8 * 1_000_000 / Int64(rate))
            if start - now > settings.queueLimit {
                statistics.queueDropped += 1
                return .queueDropped
            }
            departure = start + transmission
            linkFreeAt = departure
        }
        let first = arrival(after: departure)
        var duplicate: Duration?
        if random.chance(settings.duplicatePercent / 100) {
            statistics.duplicated += 1
            duplicate = arrival(after: departure)
        }
        statistics.delivered += 1
        statistics.record(delay: first - now)
        return .delivered(at: first, duplicateAt: duplicate)
    }

    private mutating func isLost() -> Bool {
        let loss = settings.lossPercent / 100
        guard loss > 0 else { return false }
        guard settings.burstLength > 1 else { return random.chance(loss) }
        // Gilbert-Elliott with a lossless good state and an all-loss bad state: bursts
        // last `burstLength` packets on average, and the stationary loss is `loss`.
        guard loss < 1 else { return true }
        var leave = 1 / settings.burstLength
        var enter = loss * leave / (1 - loss)
        if enter > 1 {
            // A good run lasts at least one packet, so a loss above N/(N+1) cannot come
            // from bursts of N: lengthen them to loss/(1-loss) and keep the loss.
            enter = 1
            leave = (1 - loss) / loss
        }
        if inBurst {
            if random.chance(leave) { inBurst = false }
        } else if random.chance(enter) {
            inBurst = true
        }
        return inBurst
    }

    private mutating func arrival(after departure: Duration) -> Duration {
        if random.chance(settings.reorderPercent / 100) {
            statistics.reordered += 1
            return departure
        }
        let jitterSeconds = settings.jitter / .seconds(1)
        let extra = jitterSeconds > 0 ? random.normal() * jitterSeconds : 0
        let delay = max(0, settings.delay / .seconds(1) + extra)
        return departure + .nanoseconds(Int64(delay * 1e9))
    }
}
