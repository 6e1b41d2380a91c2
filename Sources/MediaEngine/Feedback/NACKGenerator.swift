/// Decides which lost RTP packets of one video stream to ask for again (RFC 4585 Generic
/// NACK), sans-I/O: the caller reports each arriving packet's unwrapped sequence number
/// and calls `process(now:rtt:)` on a timer and after arrivals; it returns the sequence
/// numbers to put in a NACK now.
///
/// Policy, per missing packet (all times from the caller's clock):
/// - the first request waits `reorderingWait(rtt:)` so a packet that is only reordered is
///   not asked for: a tenth of the RTT, or longer when packets were seen arriving that
///   late in the last 10 s (out-of-order arrivals measured from when their gap was noticed),
///   within 5...30 ms by default;
/// - a retry waits `retryInterval(rtt)` after the previous request: RTT + 5 ms, at least
///   20 ms, the earliest a retransmission answering the previous one could arrive;
/// - after `maximumRetries` (10) retries, or `maximumAge` (1 s) after the gap was
///   noticed, the packet is given up;
/// - a gap noticed after more than `maximumAge` of silence is given up at once: its packets
///   were sent before the silence, beyond what a sender keeps (`RetransmissionHistory`);
/// - the list holds at most `maximumListSize` (1000) packets: on overflow, entries before the
///   last keyframe's first packet go first; if that is not enough the list is cleared and
///   `process` reports that a keyframe is needed.
///
/// Memory is bounded by `maximumListSize` entries, reserved up front; inserting and
/// processing allocate nothing except the array `process(now:rtt:)` returns (the
/// `into:` form reuses the caller's). Sequence numbers are unwrapped by the caller
/// (`VideoReceiveStream` does it), so this type never guesses across the 16-bit wrap.
/// Not thread-safe.
public struct NACKGenerator: Sendable {
    /// Timing and bounds. The defaults suit 20...500 ms RTTs.
    public struct Configuration: Sendable, Hashable {
        /// Shortest wait before the first request.
        public var minimumReorderingWait: Duration = .milliseconds(5)
        /// Longest wait before the first request, however late reordered packets come.
        /// Measured with `VideoNetworkSimulation` (5 % loss, 100 ms RTT, 10 ms jitter): 30 ms
        /// cut retransmissions from 5x to 1.4x the losses at no cost in frames; 50 ms
        /// began to make retries miss the frame deadline.
        public var maximumReorderingWait: Duration = .milliseconds(30)
        /// How long an observed reordering delay keeps raising the wait.
        public var reorderingMemory: Duration = .seconds(10)
        /// Share of the RTT to wait before the first request, within the bounds above.
        public var reorderingFraction = 0.1
        /// Added to the RTT between two requests for the same packet.
        public var retryMargin: Duration = .milliseconds(5)
        /// Shortest time between two requests for the same packet.
        public var minimumRetryInterval: Duration = .milliseconds(20)
        /// Requests after the first one, per packet.
        public var maximumRetries = 10
        /// How long after a gap was noticed its packets are still asked for.
        public var maximumAge: Duration = .seconds(1)
        /// Most missing packets tracked at once.
        public var maximumListSize = 1_000

        /// The defaults.
        public init() {}
    }

    /// Counters over the generator's life.
    public struct Statistics: Sendable, Hashable {
        /// `process` calls that returned at least one sequence number (one NACK each).
        public var nacksSent = 0
        /// Distinct packets asked for at least once.
        public var nackedPackets = 0
        /// Sequence numbers requested, first requests and retries together.
        public var requests = 0
        /// Requests after the first for the same packet.
        public var retries = 0
        /// Packets that arrived after being asked for.
        public var recovered = 0
        /// Missing packets that arrived before they were asked for (reordering).
        public var reordered = 0
        /// Requested packets that arrived too soon after the request to be its answer
        /// (less than half an RTT): reordered originals asked for in vain.
        public var spuriousRequests = 0
        /// Packets given up (retries exhausted, too old, or after a long silence).
        public var givenUp = 0
        /// Times the list overflowed and was cleared.
        public var overflows = 0
        /// Entries removed by `clear(before:)` (a keyframe made them useless).
        public var cleared = 0
    }

    /// What one arrival meant to the generator.
    public enum Arrival: Sendable, Hashable {
        /// The newest packet so far (possibly after a gap, now being tracked).
        case inOrder
        /// A tracked missing packet that arrived before it was asked for, or so soon after
        /// that it cannot be the retransmission.
        case reordered
        /// A tracked missing packet that arrived after being asked for (half an RTT or more).
        case recovered
        /// Older than the newest and not missing: a duplicate, or a packet given up or cleared.
        case old
    }

    /// What a `process` call found besides the sequence numbers to request.
    public struct Events: Sendable, Hashable {
        /// Packets given up in this call.
        public var givenUp = 0
        /// The list overflowed since the last call, so it was cleared.
        public var overflowed = false
        /// Whether the caller should ask for a keyframe.
        public var needsKeyframe: Bool { givenUp > 0 || overflowed }
    }

    private struct Entry: Sendable {
        var sequence: Int64
        var noticedAt: Duration
        var lastRequestAt: Duration
        var requests: Int
    }

    /// The settings in force.
    public let configuration: Configuration
    /// Counters so far.
    public private(set) var statistics = Statistics()
    /// The newest sequence number seen, or nil before the first packet.
    public private(set) var highestSequence: Int64?
    /// The newest sequence number given up or dropped by an overflow; packets at or
    /// before it that are still missing will not be asked for again.
    public private(set) var highestAbandoned: Int64?
    private var entries: [Entry] = []
    private var lastArrival: Duration?
    private var lastKeyframeStart: Int64?
    private var pendingEvents = Events()
    private var lastRoundTripTime: Duration = .zero
    /// Recent reordering delays (when seen, how late), a ring of `reorderingSampleCount`.
    private var reorderingSamples: [(at: Duration, lateness: Duration)] = []
    private var nextReorderingSample = 0
    private var observedReordering: Duration = .zero
    private static let reorderingSampleCount = 32

    /// Creates a generator, reserving room for `maximumListSize` entries.
    /// - Precondition: `maximumListSize` is at least 1 and `maximumRetries` at least 0.
    public init(configuration: Configuration = Configuration()) {
        precondition(configuration.maximumListSize >= 1 && configuration.maximumRetries >= 0,
                     "a NACK list needs room for one entry and a non-negative retry count")
        self.configuration = configuration
        entries.reserveCapacity(configuration.maximumListSize)
        reorderingSamples.reserveCapacity(Self.reorderingSampleCount)
    }

    /// Missing packets currently tracked.
    public var missingCount: Int { entries.count }

    /// The wait before a missing packet is first requested, given the reordering observed
    /// up to the last `process` call.
    public func reorderingWait(rtt: Duration) -> Duration {
        // Whole nanoseconds, so 10 % of 100 ms is exactly 10 ms.
        let share = Duration.nanoseconds(Int64((max(0, rtt / .nanoseconds(1)) * configuration.reorderingFraction).rounded()))
        return min(max(share, observedReordering, configuration.minimumReorderingWait), configuration.maximumReorderingWait)
    }

    /// The wait between two requests for the same packet.
    public func retryInterval(rtt: Duration) -> Duration {
        max(rtt + configuration.retryMargin, configuration.minimumRetryInterval)
    }

    /// Records the arrival of packet `sequence` (unwrapped).
    ///
    /// - Parameters:
    ///   - sequence: The unwrapped RTP sequence number.
    ///   - startsKeyframe: The packet starts a keyframe; an overflow may then drop entries before it.
    ///   - retransmitted: It came on an RTX stream: an answer to a request, however soon.
    ///   - now: Arrival time.
    /// - Returns: What the packet was to the generator.
    @discardableResult
    public mutating func insert(_ sequence: Int64, startsKeyframe: Bool = false, retransmitted: Bool = false, now: Duration) -> Arrival {
        defer { lastArrival = now }
        if startsKeyframe, sequence > (lastKeyframeStart ?? .min) { lastKeyframeStart = sequence }
        guard let highest = highestSequence else {
            highestSequence = sequence
            return .inOrder
        }
        if sequence <= highest {
            guard let index = index(of: sequence) else { return .old }
            let entry = entries.remove(at: index)
            if entry.requests > 0, retransmitted || now - entry.lastRequestAt >= lastRoundTripTime / 2 {
                statistics.recovered += 1
                return .recovered
            }
            if entry.requests > 0 { statistics.spuriousRequests += 1 } else { statistics.reordered += 1 }
            recordReordering(now - entry.noticedAt, at: now)
            return .reordered
        }
        highestSequence = sequence
        let gap = sequence - highest - 1
        guard gap > 0 else { return .inOrder }
        if let lastArrival, now - lastArrival > configuration.maximumAge {
            abandon(through: sequence - 1, givenUp: Int(clamping: gap))
            return .inOrder
        }
        if entries.count + Int(clamping: gap) > configuration.maximumListSize {
            if let keyframe = lastKeyframeStart {
                clear(before: keyframe)
            }
            if entries.count + Int(clamping: gap) > configuration.maximumListSize {
                statistics.overflows += 1
                pendingEvents.overflowed = true
                entries.removeAll(keepingCapacity: true)
                highestAbandoned = sequence - 1
                return .inOrder
            }
        }
        for missing in (highest + 1)..<sequence {
            entries.append(Entry(sequence: missing, noticedAt: now, lastRequestAt: now, requests: 0))
        }
        return .inOrder
    }

    /// The sequence numbers (16-bit, as on the wire) to request now, oldest first.
    ///
    /// - Parameters:
    ///   - now: The current time.
    ///   - rtt: The current round-trip estimate.
    /// - Returns: The numbers for one NACK; empty when nothing is due.
    public mutating func process(now: Duration, rtt: Duration) -> [UInt16] {
        var output: [UInt16] = []
        process(now: now, rtt: rtt, into: &output)
        return output
    }

    /// Appends the sequence numbers to request now to `output` (cleared first), oldest
    /// first, without allocating when `output` has room.
    ///
    /// - Returns: Packets given up and overflows since the last call.
    @discardableResult
    public mutating func process(now: Duration, rtt: Duration, into output: inout [UInt16]) -> Events {
        output.removeAll(keepingCapacity: true)
        lastRoundTripTime = rtt
        observedReordering = .zero
        for sample in reorderingSamples where now - sample.at <= configuration.reorderingMemory {
            observedReordering = max(observedReordering, sample.lateness)
        }
        let firstWait = reorderingWait(rtt: rtt)
        let retryWait = retryInterval(rtt: rtt)
        var kept = 0
        var givenUp = 0
        for index in entries.indices {
            var entry = entries[index]
            let tooOld = now - entry.noticedAt >= configuration.maximumAge
            let exhausted = entry.requests > configuration.maximumRetries && now - entry.lastRequestAt >= retryWait
            if tooOld || exhausted {
                givenUp += 1
                highestAbandoned = max(highestAbandoned ?? .min, entry.sequence)
                continue
            }
            let due = entry.requests == 0 ? entry.noticedAt + firstWait : entry.lastRequestAt + retryWait
            if now >= due, entry.requests <= configuration.maximumRetries {
                if entry.requests == 0 {
                    statistics.nackedPackets += 1
                } else {
                    statistics.retries += 1
                }
                entry.requests += 1
                entry.lastRequestAt = now
                statistics.requests += 1
                output.append(UInt16(truncatingIfNeeded: entry.sequence))
            }
            entries[kept] = entry
            kept += 1
        }
        entries.removeSubrange(kept...)
        statistics.givenUp += givenUp
        if !output.isEmpty { statistics.nacksSent += 1 }
        var events = pendingEvents
        events.givenUp += givenUp
        pendingEvents = Events()
        return events
    }

    /// When `process` next has something to do (a request or a give-up), or nil when
    /// nothing is tracked.
    public func nextProcessTime(rtt: Duration) -> Duration? {
        let firstWait = reorderingWait(rtt: rtt)
        let retryWait = retryInterval(rtt: rtt)
        var earliest: Duration?
        for entry in entries {
            let due = entry.requests == 0 ? entry.noticedAt + firstWait : entry.lastRequestAt + retryWait
            let next = min(due, entry.noticedAt + configuration.maximumAge)
            earliest = min(earliest ?? next, next)
        }
        return earliest
    }

    /// Stops tracking missing packets before `sequence`: a keyframe starting there made
    /// them useless, or the caller gave up on their frames.
    public mutating func clear(before sequence: Int64) {
        let end = firstIndex(atOrAfter: sequence)
        statistics.cleared += end
        entries.removeSubrange(0..<end)
    }

    /// Forgets everything but the counters (a new stream: SSRC change or resync).
    public mutating func reset() {
        entries.removeAll(keepingCapacity: true)
        highestSequence = nil
        highestAbandoned = nil
        lastArrival = nil
        lastKeyframeStart = nil
        pendingEvents = Events()
        reorderingSamples.removeAll(keepingCapacity: true)
        nextReorderingSample = 0
        observedReordering = .zero
    }

    /// Whether `sequence` is tracked as missing.
    public func isMissing(_ sequence: Int64) -> Bool { index(of: sequence) != nil }

    private mutating func recordReordering(_ lateness: Duration, at now: Duration) {
        if reorderingSamples.count < Self.reorderingSampleCount {
            reorderingSamples.append((now, lateness))
        } else {
            reorderingSamples[nextReorderingSample] = (now, lateness)
        }
        nextReorderingSample = (nextReorderingSample + 1) % Self.reorderingSampleCount
        observedReordering = max(observedReordering, lateness)
    }

    private mutating func abandon(through sequence: Int64, givenUp: Int) {
        statistics.givenUp += givenUp
        pendingEvents.givenUp += givenUp
        highestAbandoned = max(highestAbandoned ?? .min, sequence)
    }

    private func index(of sequence: Int64) -> Int? {
        let index = firstIndex(atOrAfter: sequence)
        return index < entries.count && entries[index].sequence == sequence ? index : nil
    }

    /// Binary search: entries are kept in sequence order.
    private func firstIndex(atOrAfter sequence: Int64) -> Int {
        var low = 0
        var high = entries.count
        while low < high {
            let middle = low + (high - low) / 2
            if entries[middle].sequence >= sequence {
                high = middle
            } else {
                low = middle + 1
            }
        }
        return low
    }
}
