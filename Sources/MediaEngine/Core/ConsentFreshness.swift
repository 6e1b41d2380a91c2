/// Consent freshness (RFC 7675), sans-I/O: once a path is selected, a STUN binding request
/// goes to the peer every `interval` (randomised by ±20 %, RFC 7675 section 5.1); an
/// answer from the selected address to one of the recent requests renews consent. With no
/// answer for `timeout` the consent has expired: the peer is gone (or no longer wants the
/// media) and the transport stops sending.
public struct ConsentFreshness: Sendable {
    /// Timing.
    public struct Configuration: Sendable, Hashable {
        /// Mean time between checks (RFC 7675: 5 s).
        public var interval: Duration = .seconds(5)
        /// Silence after which consent expires (RFC 7675: 30 s).
        public var timeout: Duration = .seconds(30)

        public init() {}
    }

    /// Requests whose answers still count.
    static let remembered = 8

    public let configuration: Configuration
    /// When consent was last granted (the path's selection, or the last answer).
    public private(set) var lastGranted: Duration
    /// When the next request goes out.
    public private(set) var nextCheck: Duration
    /// True once `timeout` passed without an answer.
    public private(set) var isExpired = false
    /// Requests sent and answers accepted.
    public private(set) var requestsSent = 0
    public private(set) var answersReceived = 0
    private var recent: [STUNTransactionID] = []

    init(configuration: Configuration, now: Duration, random: inout SeededRandom) {
        self.configuration = configuration
        lastGranted = now
        nextCheck = now
        nextCheck = now + jittered(using: &random)
    }

    private func jittered(using random: inout SeededRandom) -> Duration {
        configuration.interval * (0.8 + 0.4 * random.unit())
    }

    /// A request to send now, or nil when none is due (or consent expired).
    mutating func requestDue(now: Duration, random: inout SeededRandom) -> STUNTransactionID? {
        guard !isExpired else { return nil }
        if now - lastGranted >= configuration.timeout {
            isExpired = true
            return nil
        }
        guard now >= nextCheck else { return nil }
        nextCheck = now + jittered(using: &random)
        let id = STUNTransactionID.random()
        if recent.count >= Self.remembered { recent.removeFirst() }
        recent.append(id)
        requestsSent += 1
        return id
    }

    /// Renews consent when `id` answers one of the recent requests.
    /// - Returns: whether it did.
    mutating func answered(_ id: STUNTransactionID, now: Duration) -> Bool {
        guard !isExpired, let index = recent.firstIndex(of: id) else { return false }
        recent.remove(at: index)
        lastGranted = now
        answersReceived += 1
        return true
    }

    /// When the next request or the expiry is due.
    var nextTime: Duration? { isExpired ? nil : min(nextCheck, lastGranted + configuration.timeout) }
}
