import CBatchIO

/// Turns the kernel's arrival stamps on received datagrams (CLOCK_REALTIME, see
/// `UDPSocket`) into times on a caller's monotonic clock, from one reading of both clocks
/// taken together right after a read.
///
/// A datagram's arrival is when the kernel took it, not when a thread got round to reading
/// it: a reader held off the processor for 20 ms reads that time's datagrams in one batch,
/// and stamping them all with the read's time would report them as arriving at once.
/// Transport-wide feedback built from that tells the sender its packets came at an infinite
/// rate (Chrome discards such a probe, "receive interval: 0 us", and its estimate stays at
/// its 300 kb/s start), and makes the receive statistics' jitter the reader's scheduling.
public struct ArrivalClock {
    /// The longest wait an arrival is placed before `now`: a stamp further back is a step
    /// of the wall clock (an NTP correction), not a datagram that waited, and is capped.
    public static let maximumWait = Duration.seconds(1)

    /// The caller's time of the reading.
    public let now: Duration
    private let realtime: Int64

    /// Reads the wall clock to pair with `now`, the caller's monotonic time read just before.
    public init(now: Duration) {
        self.now = now
        realtime = CBatchIO_realtime()
    }

    /// A reading of both clocks made elsewhere (tests).
    public init(now: Duration, realtimeNanoseconds: Int64) {
        self.now = now
        realtime = realtimeNanoseconds
    }

    /// When a datagram stamped `stamp` (nanoseconds of CLOCK_REALTIME) arrived, on the
    /// caller's clock: `now` less its wait, never after `now` (one that came after the
    /// reading) and never more than `maximumWait` before it; `now` when it has no stamp (0).
    @inline(__always)
    public func arrival(stamp: Int64) -> Duration {
        guard stamp > 0 else { return now }
        let waited = min(max(realtime &- stamp, 0), Int64(Self.maximumWait / .nanoseconds(1)))
        return now - .nanoseconds(waited)
    }
}
