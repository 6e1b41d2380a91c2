/// Learns how late packets arrive relative to their RTP timestamps and turns that into
/// a target playout delay.
///
/// Each packet's transit is `arrival - timestamp / 48 kHz`. A running mean of the transit
/// follows the network's base delay and any clock drift between sender and receiver; a
/// packet's *relative delay* is its transit minus that mean. A histogram of relative
/// delays with exponential forgetting gives a quantile (the 97th percentile by default),
/// and the target is that quantile plus one packet, so the buffer holds the packet being
/// decoded plus enough to absorb all but the latest few percent of arrivals.
///
/// Fixed storage, allocated once; nothing per packet.
struct ArrivalDelayEstimator {
    /// Width of one histogram bin, seconds.
    static let binWidth = 0.002
    /// The mean transit follows changes with a time constant of this many packets (about
    /// 1.3 s of 20 ms packets): slow enough to average jitter, fast enough to follow drift.
    static let transitSmoothing = 64.0
    /// Each new packet scales older histogram weight by this (a memory of about 330 packets,
    /// 6.7 s of 20 ms packets), so a target raised by a jitter spike comes back down within
    /// some 20 s of calm.
    static let forgetting = 0.997
    /// Packets observed before the histogram replaces the initial target (half a second
    /// of 20 ms packets: enough for a first quantile, short enough for a call's start).
    static let warmUpPackets = 25

    private(set) var transitMean: Double?
    private var transitCount = 0.0
    private var bins: [Double]
    private var totalWeight = 0.0
    private var observed = 0
    private let quantile: Double

    /// - Parameters:
    ///   - range: largest relative delay the histogram resolves, seconds (later ones land
    ///     in the last bin).
    ///   - quantile: share of packets the target should cover, 0.5...0.999.
    init(range: Double, quantile: Double) {
        bins = [Double](repeating: 0, count: max(1, Int((range / Self.binWidth).rounded(.up)) + 1))
        self.quantile = quantile
    }

    /// The relative delay `transit` would have, in seconds; 0 before the first packet.
    func relativeDelay(transit: Double) -> Double {
        transitMean.map { transit - $0 } ?? 0
    }

    /// Records one packet's transit (seconds).
    mutating func record(transit: Double) {
        guard let mean = transitMean else {
            transitMean = transit
            transitCount = 1
            return
        }
        let relative = transit - mean
        // Early packets (negative relative delay) never need waiting for: bin 0.
        let bin = min(bins.count - 1, max(0, Int(relative / Self.binWidth)))
        for index in bins.indices { bins[index] *= Self.forgetting }
        bins[bin] += 1 - Self.forgetting
        totalWeight = totalWeight * Self.forgetting + (1 - Self.forgetting)
        observed += 1
        transitCount = min(transitCount + 1, Self.transitSmoothing)
        transitMean = mean + relative / transitCount
    }

    /// The relative delay that `quantile` of recent packets stay under, seconds, or nil
    /// while too few packets have been seen.
    var delayQuantile: Double? {
        guard observed >= Self.warmUpPackets, totalWeight > 0 else { return nil }
        let needed = quantile * totalWeight
        var sum = 0.0
        for index in bins.indices {
            sum += bins[index]
            if sum >= needed { return Double(index + 1) * Self.binWidth }
        }
        return Double(bins.count) * Self.binWidth
    }

    /// Forgets the transit reference (a new stream has new timestamps) but keeps the
    /// histogram: the network path, and so its jitter, is the same.
    mutating func restartTransit() {
        transitMean = nil
        transitCount = 0
    }
}
