#if canImport(Glibc)
import Glibc
#endif

/// Finds which of a peer's candidate addresses answers STUN binding requests sent from
/// `socket`, and how long the answer takes (the first RTT of the call).
///
/// Requests go to every candidate every `interval`, each with a fresh transaction ID and
/// the peer's token as USERNAME (the peer answers only its own token); the first success
/// response whose transaction ID was sent to its source address wins. Anything else
/// arriving on the socket meanwhile is dropped. Blocks the calling thread.
public enum ConnectivityCheck {
    public struct Result: Sendable, Hashable {
        /// The candidate that answered.
        public var remote: SocketAddress
        public var roundTripTime: Duration
        /// Our address as the peer saw it (XOR-MAPPED-ADDRESS).
        public var mappedAddress: SocketAddress?
    }

    /// Runs the check.
    ///
    /// - Parameters:
    ///   - candidates: The peer's addresses, tried in parallel.
    ///   - token: The peer's connectivity token.
    ///   - timeout: When to give up.
    ///   - stop: Polled between rounds; true abandons the check.
    /// - Returns: The first candidate that answered, or nil when none did in time.
    /// - Throws: `TransportError` when the socket fails.
    public static func run(socket: UDPSocket, candidates: [SocketAddress], token: String, interval: Duration = .milliseconds(50),
                           timeout: Duration, stop: () -> Bool = { false }) throws(TransportError) -> Result? {
        let clock = ContinuousClock()
        let start = clock.now
        var sent: [STUNTransactionID: (candidate: SocketAddress, at: ContinuousClock.Instant)] = [:]
        var buffer = [UInt8](repeating: 0, count: 1_500)
        var nextRound = start
        while clock.now - start < timeout, !stop() {
            if clock.now >= nextRound {
                for candidate in candidates {
                    let id = STUNTransactionID.random()
                    let request = STUNMessage(type: .bindingRequest, transactionID: id, attributes: [.username(token)]).serialized()
                    // An unreachable candidate (no route, refused) is just one that does not answer.
                    // Bounded: at most candidates x timeout / interval transactions.
                    do throws(TransportError) {
                        try request.withUnsafeBufferPointer { bytes throws(TransportError) in
                            try socket.send(UnsafeRawBufferPointer(bytes), to: candidate)
                        }
                        sent[id] = (candidate, clock.now)
                    } catch {
                        if error.code == .closed { throw error }
                    }
                }
                nextRound = clock.now + interval
            }
            let wait = max(.milliseconds(1), nextRound - clock.now)
            let received = try buffer.withUnsafeMutableBufferPointer { bytes throws(TransportError) in
                try socket.receive(into: UnsafeMutableRawBufferPointer(bytes), timeout: wait)
            }
            guard let (count, source) = received else { continue }
            let arrival = clock.now
            let answer = buffer.withUnsafeBytes { bytes in try? STUNMessage(parsing: UnsafeRawBufferPointer(rebasing: bytes[0..<count])) }
            guard let answer, answer.type == .bindingSuccess, let request = sent[answer.transactionID],
                  request.candidate == source else { continue }
            return Result(remote: source, roundTripTime: arrival - request.at, mappedAddress: answer.xorMappedAddress)
        }
        return nil
    }
}

/// The host's own addresses, for candidates.
public enum LocalAddresses {
    /// IPv4 addresses of interfaces that are up, loopback last; `127.0.0.1` when there are none.
    public static func ipv4() -> [String] {
        var list: UnsafeMutablePointer<ifaddrs>?
        guard getifaddrs(&list) == 0, let first = list else { return ["127.0.0.1"] }
        defer { freeifaddrs(list) }
        var addresses: [String] = []
        var loopback: [String] = []
        var entry: UnsafeMutablePointer<ifaddrs>? = first
        while let current = entry {
            defer { entry = current.pointee.ifa_next }
            guard let address = current.pointee.ifa_addr, address.pointee.sa_family == sa_family_t(AF_INET),
                  current.pointee.ifa_flags & UInt32(IFF_UP) != 0 else { continue }
            var text = [CChar](repeating: 0, count: Int(INET_ADDRSTRLEN))
            var ipv4 = address.withMemoryRebound(to: sockaddr_in.self, capacity: 1) { $0.pointee.sin_addr }
            guard inet_ntop(AF_INET, &ipv4, &text, socklen_t(text.count)) != nil else { continue }
            let string = String(decoding: text.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
            if current.pointee.ifa_flags & UInt32(IFF_LOOPBACK) != 0 { loopback.append(string) } else { addresses.append(string) }
        }
        let all = addresses + loopback
        return all.isEmpty ? ["127.0.0.1"] : all
    }
}
