/// Server-reflexive candidate gathering (RFC 8445 §5.1.1.2), sans-I/O: a padded STUN
/// Binding request to each STUN server, retransmitted (RTO `initialRTO`, doubling) until
/// it is answered or `maximumSends` went unanswered; each answer's XOR-MAPPED-ADDRESS is a
/// server-reflexive candidate (once per distinct address). The caller sends what `poll`
/// gives, feeds answers to `receive`, and reports the candidates.
struct ReflexiveGathering: Sendable {
    struct Request: Sendable {
        var server: SocketAddress
        var transaction: STUNTransactionID
        var sends = 0
        var nextSend: Duration
        var rto: Duration
        var done = false
    }

    static let initialRTO: Duration = .milliseconds(250)
    /// 250 + 500 + 1,000 + 2,000 ms: a server that has not answered in about 4 s is skipped.
    static let maximumSends = 4

    private(set) var requests: [Request]
    /// Addresses found so far.
    private(set) var found: [SocketAddress] = []

    init(servers: [SocketAddress], now: Duration, random: inout SeededRandom) {
        requests = servers.map { Request(server: $0, transaction: STUNTransactionID.random(using: &random), nextSend: now, rto: Self.initialRTO) }
    }

    /// True once every server answered or gave up.
    var isComplete: Bool { requests.allSatisfy(\.done) }

    var nextDeadline: Duration? { requests.lazy.filter { !$0.done }.map(\.nextSend).min() }

    /// The requests due at `now` (server, bytes); a server whose last send went unanswered
    /// for its RTO is given up.
    mutating func poll(now: Duration) -> [(SocketAddress, [UInt8])] {
        var due: [(SocketAddress, [UInt8])] = []
        for index in requests.indices where !requests[index].done && requests[index].nextSend <= now {
            if requests[index].sends >= Self.maximumSends {
                requests[index].done = true
                continue
            }
            if requests[index].sends > 0 { requests[index].rto = requests[index].rto * 2 }
            requests[index].sends += 1
            requests[index].nextSend = now + requests[index].rto
            due.append((requests[index].server, STUNBinding.request(transactionID: requests[index].transaction).serialized()))
        }
        return due
    }

    /// Whether `message` from `source` answers one of the requests.
    func owns(_ message: STUNMessage, from source: SocketAddress) -> Bool {
        requests.contains { $0.server == source && $0.transaction == message.transactionID && !$0.done }
    }

    /// The answer to a request: its mapped address when it is new, nil otherwise (an
    /// error, a repeated address).
    mutating func receive(_ message: STUNMessage, from source: SocketAddress) -> SocketAddress? {
        guard let index = requests.firstIndex(where: { $0.server == source && $0.transaction == message.transactionID && !$0.done })
        else { return nil }
        requests[index].done = true
        guard message.type == .bindingSuccess, let mapped = message.xorMappedAddress, !found.contains(mapped) else { return nil }
        found.append(mapped)
        return mapped
    }
}
