/// Finds which of a peer's candidate addresses answers STUN binding requests, sans-I/O:
/// requests go to every candidate every `interval`, each with a fresh transaction ID and
/// the peer's token as USERNAME (the peer answers only its own token); the first success
/// response whose transaction ID was sent to its source address wins and measures the
/// first round trip. Gives up at `deadline`.
///
/// Bounds: at most `maximumOutstanding` transactions are remembered (the oldest go
/// first), so a long check with many candidates cannot grow without limit.
struct ConnectivityChecker {
    struct Result: Sendable, Hashable {
        var remote: SocketAddress
        var roundTripTime: Duration
        var mappedAddress: SocketAddress?
    }

    static let maximumOutstanding = 256

    let candidates: [SocketAddress]
    let token: String
    let interval: Duration
    let deadline: Duration
    private(set) var nextRound: Duration
    private var outstanding: [(id: STUNTransactionID, candidate: SocketAddress, sentAt: Duration)] = []

    init(candidates: [SocketAddress], token: String, now: Duration, timeout: Duration, interval: Duration = .milliseconds(50)) {
        self.candidates = candidates
        self.token = token
        self.interval = interval
        deadline = now + timeout
        nextRound = now
    }

    /// The requests due at `now`: one per candidate, handed to `send` already serialized.
    mutating func requestsDue(now: Duration, send: (SocketAddress, STUNMessage) -> Void) {
        guard now >= nextRound, now < deadline else { return }
        for candidate in candidates {
            let id = STUNTransactionID.random()
            if outstanding.count >= Self.maximumOutstanding { outstanding.removeFirst() }
            outstanding.append((id, candidate, now))
            send(candidate, STUNMessage(type: .bindingRequest, transactionID: id, attributes: [.username(token)]))
        }
        nextRound = now + interval
    }

    /// The check's outcome when `answer` (from `source`) is the success response to one of
    /// its requests to that very address; nil otherwise.
    func result(of answer: STUNMessage, from source: SocketAddress, now: Duration) -> Result? {
        guard answer.type == .bindingSuccess,
              let request = outstanding.first(where: { $0.id == answer.transactionID }), request.candidate == source else { return nil }
        return Result(remote: source, roundTripTime: now - request.sentAt, mappedAddress: answer.xorMappedAddress)
    }

    /// When the check next has work: the next round, or the deadline.
    var nextTime: Duration { min(nextRound, deadline) }
}

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
