/// A token-bucket rate limiter for per-connection message rates, driven by the caller's
/// clock (sans-I/O: no timers, no sleeps).
///
/// `rate` tokens are added per second up to `burst`; each admitted message takes one.
/// Value type; not shared between connections.
public struct TokenBucket: Sendable, Hashable {
    /// Tokens added per second.
    public let rate: Double
    /// Largest number of tokens held, the longest burst admitted at once.
    public let burst: Double
    private var tokens: Double
    private var last: Duration?

    /// Creates a full bucket.
    /// - Precondition: `rate` and `burst` are positive.
    public init(rate: Double, burst: Double) {
        precondition(rate > 0 && burst >= 1, "a token bucket needs a positive rate and a burst of at least 1")
        self.rate = rate
        self.burst = burst
        self.tokens = burst
    }

    /// Takes one token if there is one.
    /// - Parameter now: the current time on any monotonic clock (never earlier than a
    ///   previous call's).
    /// - Returns: true when the message is admitted.
    public mutating func admit(now: Duration) -> Bool {
        if let last {
            let elapsed = max(0, (now - last) / .seconds(1))
            tokens = min(burst, tokens + elapsed * rate)
        }
        last = now
        // Refills are sums of fractions; allow for their rounding so rate r admits r per second.
        guard tokens >= 1 - 1e-9 else { return false }
        tokens = max(0, tokens - 1)
        return true
    }
}
