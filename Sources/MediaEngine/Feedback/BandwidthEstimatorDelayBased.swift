/// How the one-way delay is moving, as the overuse detector sees it.
public enum BandwidthUsage: Sendable, Hashable {
    /// Delay steady: the link keeps up.
    case normal
    /// Delay growing: queues fill, the send rate is above the link's.
    case overusing
    /// Delay shrinking: queues drain.
    case underusing
}

/// Groups packets into send bursts and gives the send- and arrival-time differences
/// between consecutive complete groups (GCC's inter-arrival filter, as libwebrtc's
/// `InterArrivalDelta`).
///
/// A group is the packets sent within 5 ms of its first; a packet that arrives within
/// 5 ms of the group's last and sooner than its send spacing (a burst the network
/// delivered at once) joins the group, up to 100 ms of arrivals. A packet sent before the
/// current group is ignored; three groups in a row arriving out of order, or an arrival
/// clock that drifts 3 s from the local clock, reset the filter.
struct InterArrival: Sendable {
    /// Differences between two consecutive groups.
    struct Deltas: Sendable, Hashable {
        var send: Duration
        var arrival: Duration
        var size: Int
    }

    private struct Group: Sendable {
        var firstSend: Duration
        var send: Duration
        var firstArrival: Duration
        var complete: Duration
        var size: Int
        var lastSystem: Duration
    }

    static let groupLength = Duration.milliseconds(5)
    static let burstDelta = Duration.milliseconds(5)
    static let maximumBurstDuration = Duration.milliseconds(100)
    static let arrivalOffsetThreshold = Duration.seconds(3)
    static let reorderedResetThreshold = 3

    private var current: Group?
    private var previous: Group?
    private var reorderedInARow = 0

    /// Adds one acknowledged packet, in send order.
    ///
    /// - Parameters:
    ///   - send: Its send time (sender clock).
    ///   - arrival: Its arrival time (receiver clock).
    ///   - system: When its feedback was handled (sender clock).
    ///   - size: Its size in bytes.
    /// - Returns: The deltas between the last two complete groups when this packet opened
    ///   a new group, else nil.
    mutating func add(send: Duration, arrival: Duration, system: Duration, size: Int) -> Deltas? {
        guard var group = current else {
            current = Group(firstSend: send, send: send, firstArrival: arrival, complete: arrival, size: size, lastSystem: system)
            return nil
        }
        guard send >= group.firstSend else { return nil }
        var result: Deltas?
        if startsNewGroup(group, send: send, arrival: arrival) {
            if let previous {
                let deltas = Deltas(send: group.send - previous.send, arrival: group.complete - previous.complete,
                                    size: group.size - previous.size)
                if deltas.arrival - (group.lastSystem - previous.lastSystem) >= Self.arrivalOffsetThreshold {
                    reset()
                    return nil
                }
                if deltas.arrival < .zero {
                    reorderedInARow += 1
                    if reorderedInARow >= Self.reorderedResetThreshold { reset() }
                    return nil
                }
                reorderedInARow = 0
                result = deltas
            }
            previous = group
            group = Group(firstSend: send, send: send, firstArrival: arrival, complete: arrival, size: 0, lastSystem: system)
        } else {
            group.send = max(group.send, send)
        }
        group.size += size
        group.complete = arrival
        group.lastSystem = system
        current = group
        return result
    }

    mutating func reset() {
        current = nil
        previous = nil
        reorderedInARow = 0
    }

    private func startsNewGroup(_ group: Group, send: Duration, arrival: Duration) -> Bool {
        if belongsToBurst(group, send: send, arrival: arrival) { return false }
        return send - group.firstSend > Self.groupLength
    }

    private func belongsToBurst(_ group: Group, send: Duration, arrival: Duration) -> Bool {
        let arrivalDelta = arrival - group.complete
        let sendDelta = send - group.send
        if sendDelta == .zero { return true }
        let propagationDelta = arrivalDelta - sendDelta
        return propagationDelta < .zero && arrivalDelta <= Self.burstDelta
            && arrival - group.firstArrival < Self.maximumBurstDuration
    }
}

/// GCC's delay-gradient detector as libwebrtc's `TrendlineEstimator` builds it: a
/// trendline filter over accumulated delay gradients feeding an overuse detector with an
/// adaptive threshold.
///
/// Each group delta adds `arrival - send` (ms) to an accumulated delay, smoothed
/// exponentially (coefficient 0.9); the slope of a least-squares line through the last
/// 20 (arrival time, smoothed delay) points is the trend. The trend times
/// min(deltas seen, 60) times a gain of 4 is compared with a threshold γ that starts at
/// 12.5 and follows |trend| (up at 0.0087/ms, down at 0.039/ms, clamped to 6...600, not
/// moved by jumps more than 15 above it). Above γ for more than 10 ms and two deltas,
/// with the trend not falling, is overuse; below -γ is underuse; otherwise normal.
struct TrendlineOveruseDetector: Sendable {
    static let windowSize = 20
    static let smoothingCoefficient = 0.9
    static let thresholdGain = 4.0
    static let deltaCountCap = 60
    static let initialThreshold = 12.5
    static let thresholdRange = 6.0...600.0
    static let thresholdUp = 0.0087
    static let thresholdDown = 0.039
    static let maximumAdaptOffset = 15.0
    static let overusingTime = 10.0
    static let maximumThresholdStep = 100.0

    private(set) var usage = BandwidthUsage.normal
    private(set) var threshold = initialThreshold
    private(set) var trend = 0.0
    private var deltaCount = 0
    private var firstArrival: Duration?
    private var accumulatedDelay = 0.0
    private var smoothedDelay = 0.0
    private var points: [(x: Double, y: Double)] = []
    private var previousTrend = 0.0
    private var lastThresholdUpdate: Double?
    private var timeOverusing = -1.0
    private var overuseCounter = 0

    /// Adds one group delta and returns the new usage state.
    ///
    /// - Parameters:
    ///   - deltas: Send and arrival differences between two groups.
    ///   - arrival: The later group's arrival time.
    @discardableResult
    mutating func update(_ deltas: InterArrival.Deltas, arrival: Duration) -> BandwidthUsage {
        let sendDelta = deltas.send.fractionalMilliseconds
        let delta = deltas.arrival.fractionalMilliseconds - sendDelta
        deltaCount = min(deltaCount + 1, 1_000)
        let first = firstArrival ?? arrival
        firstArrival = first
        accumulatedDelay += delta
        smoothedDelay = Self.smoothingCoefficient * smoothedDelay + (1 - Self.smoothingCoefficient) * accumulatedDelay
        let now = (arrival - first).fractionalMilliseconds
        points.append((now, smoothedDelay))
        if points.count > Self.windowSize { points.removeFirst() }
        if points.count == Self.windowSize, let slope = Self.slope(points) { trend = slope }
        detect(sendDelta: sendDelta, now: now)
        return usage
    }

    private mutating func detect(sendDelta: Double, now: Double) {
        guard deltaCount >= 2 else {
            usage = .normal
            return
        }
        let modifiedTrend = Double(min(deltaCount, Self.deltaCountCap)) * trend * Self.thresholdGain
        if modifiedTrend > threshold {
            timeOverusing = timeOverusing < 0 ? sendDelta / 2 : timeOverusing + sendDelta
            overuseCounter += 1
            if timeOverusing > Self.overusingTime, overuseCounter > 1, trend >= previousTrend {
                timeOverusing = 0
                overuseCounter = 0
                usage = .overusing
            }
        } else if modifiedTrend < -threshold {
            timeOverusing = -1
            overuseCounter = 0
            usage = .underusing
        } else {
            timeOverusing = -1
            overuseCounter = 0
            usage = .normal
        }
        previousTrend = trend
        adaptThreshold(modifiedTrend, now: now)
    }

    private mutating func adaptThreshold(_ modifiedTrend: Double, now: Double) {
        let last = lastThresholdUpdate ?? now
        lastThresholdUpdate = now
        // A sudden capacity drop gives a huge trend; the threshold must not chase it.
        guard abs(modifiedTrend) <= threshold + Self.maximumAdaptOffset else { return }
        let gain = abs(modifiedTrend) < threshold ? Self.thresholdDown : Self.thresholdUp
        let elapsed = min(now - last, Self.maximumThresholdStep)
        threshold += gain * (abs(modifiedTrend) - threshold) * elapsed
        threshold = min(max(threshold, Self.thresholdRange.lowerBound), Self.thresholdRange.upperBound)
    }

    private static func slope(_ points: [(x: Double, y: Double)]) -> Double? {
        let count = Double(points.count)
        let meanX = points.reduce(0) { $0 + $1.x } / count
        let meanY = points.reduce(0) { $0 + $1.y } / count
        var numerator = 0.0
        var denominator = 0.0
        for point in points {
            numerator += (point.x - meanX) * (point.y - meanY)
            denominator += (point.x - meanX) * (point.x - meanX)
        }
        return denominator == 0 ? nil : numerator / denominator
    }
}

extension Duration {
    /// The duration in milliseconds, fractional.
    fileprivate var fractionalMilliseconds: Double { self / .milliseconds(1) }
}
