/// One ICE candidate (RFC 8445 §5.1): a transport address a peer may be reached at, with
/// how it was found. Only UDP and one component (RTP and RTCP share the address, RFC 8843
/// bundle with rtcp-mux) are spoken here.
public struct ICECandidate: Sendable, Hashable, CustomStringConvertible {
    /// How the address was found, with its RFC 8445 §5.1.2.2 type preference.
    public enum Kind: String, Sendable, Hashable, CaseIterable, CustomStringConvertible {
        /// An address of one of the host's own interfaces.
        case host
        /// The address a NAT maps the host's to, as a STUN or TURN server saw it.
        case serverReflexive = "srflx"
        /// An address learned from a peer's connectivity check (a NAT between the two).
        case peerReflexive = "prflx"
        /// An address on a TURN server that relays to the host.
        case relayed = "relay"

        /// RFC 8445's recommended type preferences: direct paths first, the relay last.
        public var typePreference: UInt32 {
            switch self {
            case .host: 126
            case .peerReflexive: 110
            case .serverReflexive: 100
            case .relayed: 0
            }
        }

        public var description: String { rawValue }
    }

    /// Candidates with the same foundation share a type, base IP and server: their checks
    /// tend to succeed or fail together (RFC 8445 §5.1.1.3).
    public var foundation: String
    /// 1: RTP (and, bundled, everything).
    public var component: Int
    public var priority: UInt32
    public var address: SocketAddress
    public var kind: Kind
    /// For reflexive and relayed candidates: the address they were derived from
    /// (`raddr`/`rport`).
    public var relatedAddress: SocketAddress?

    public init(foundation: String, component: Int = 1, priority: UInt32, address: SocketAddress, kind: Kind,
                relatedAddress: SocketAddress? = nil) {
        self.foundation = foundation
        self.component = component
        self.priority = priority
        self.address = address
        self.kind = kind
        self.relatedAddress = relatedAddress
    }

    /// A candidate of this host with its priority from RFC 8445 §5.1.2.1:
    /// `2^24 * type preference + 2^8 * local preference + (256 - component)`.
    /// - Parameter localPreference: 0...65535; higher for preferred interfaces (IPv6 over
    ///   IPv4, RFC 8421, see `localPreference(for:index:)`).
    public static func local(_ kind: Kind, address: SocketAddress, base: SocketAddress? = nil, localPreference: UInt32,
                             server: SocketAddress? = nil, component: Int = 1) -> ICECandidate {
        ICECandidate(foundation: foundation(kind, base: base ?? address, server: server), component: component,
                     priority: priority(kind, localPreference: localPreference, component: component), address: address, kind: kind,
                     relatedAddress: kind == .host ? nil : base)
    }

    /// RFC 8445 §5.1.2.1's formula.
    public static func priority(_ kind: Kind, localPreference: UInt32, component: Int = 1) -> UInt32 {
        (kind.typePreference << 24) + (min(localPreference, 65_535) << 8) + UInt32(256 - max(1, min(component, 256)))
    }

    /// A local preference that puts IPv6 before IPv4 (RFC 8421 §4) and, within a family,
    /// earlier interfaces first.
    public static func localPreference(for address: SocketAddress, index: Int) -> UInt32 {
        (address.isIPv6 ? 60_000 : 30_000) - UInt32(min(max(index, 0), 1_000)) * 10
    }

    /// The same type, base IP and (for reflexive and relayed) server give the same
    /// foundation; a short stable digest keeps it within the grammar's 32 characters.
    static func foundation(_ kind: Kind, base: SocketAddress, server: SocketAddress?) -> String {
        var hash: UInt64 = 0xcbf2_9ce4_8422_2325  // FNV-1a: stable across runs, unlike Hasher.
        for byte in Array(kind.rawValue.utf8) + base.addressBytes + (server.map { $0.addressBytes + [UInt8(truncatingIfNeeded: $0.port >> 8), UInt8(truncatingIfNeeded: $0.port)] } ?? []) {
            hash = (hash ^ UInt64(byte)) &* 0x100_0000_01b3
        }
        return String(hash % 1_000_000_000)
    }

    /// Why no one should send to a remote candidate, if so.
    public enum Unusable: String, Sendable, Hashable {
        case badPort = "port 0"
        case server = "one of this side's STUN or TURN servers, where checks reach only the server"
        case unspecified = "the unspecified address"
        case loopback = "loopback, used only with a peer known to be on this host"
        case linkLocal = "a link-local address"
        case multicast = "a multicast, broadcast or reserved address"
        case mappedIPv4 = "an IPv4-mapped IPv6 address"
    }

    /// Whether a remote candidate is worth checking: not loopback, unspecified, link-local,
    /// multicast or broadcast, nor one of `excluded` (the server's own addresses, where
    /// checks would only reach the server), and on a port a peer can use.
    public func isUsable(excluding excluded: Set<SocketAddress> = []) -> Bool {
        unusable(excluding: excluded) == nil
    }

    /// Why `isUsable` refuses this candidate; nil when it does not.
    public func unusable(excluding excluded: Set<SocketAddress> = []) -> Unusable? {
        guard (1...65_535).contains(address.port) else { return .badPort }
        guard !excluded.contains(address) else { return .server }
        let bytes = address.addressBytes
        if address.isIPv6 {
            if address.isUnspecified { return .unspecified }
            if address.isLoopback { return .loopback }
            if bytes[0] == 0xFE && bytes[1] & 0xC0 == 0x80 { return .linkLocal }
            if bytes[0] == 0xFF { return .multicast }
            if bytes[0..<10].allSatisfy({ $0 == 0 }) && bytes[10] == 0xFF && bytes[11] == 0xFF { return .mappedIPv4 }
            return nil
        }
        if bytes[0] == 0 { return .unspecified }
        if bytes[0] == 127 { return .loopback }
        if bytes[0] == 169 && bytes[1] == 254 { return .linkLocal }
        if bytes[0] >= 224 { return .multicast }
        return nil
    }

    public var description: String { "\(kind) \(address) (priority \(priority))" }
}

/// A local and a remote candidate to check (RFC 8445 §6.1.2).
public struct ICECandidatePair: Sendable, Hashable, CustomStringConvertible {
    public var local: ICECandidate
    public var remote: ICECandidate

    public init(local: ICECandidate, remote: ICECandidate) {
        self.local = local
        self.remote = remote
    }

    /// RFC 8445 §6.1.2.3: `2^32 * min(G, D) + 2 * max(G, D) + (G > D ? 1 : 0)`, where G is
    /// the controlling agent's candidate priority and D the controlled one's.
    public func priority(controlling: Bool) -> UInt64 {
        let (g, d) = controlling ? (UInt64(local.priority), UInt64(remote.priority)) : (UInt64(remote.priority), UInt64(local.priority))
        return (min(g, d) << 32) + 2 * max(g, d) + (g > d ? 1 : 0)
    }

    /// Which kind of path it is, as reported to the app: the less direct of the two ends
    /// (a relay on either side makes a relayed path).
    public var pathKind: ICECandidate.Kind {
        [local.kind, remote.kind].min { $0.typePreference < $1.typePreference } ?? .host
    }

    public var description: String { "\(local.kind) \(local.address) -> \(remote.kind) \(remote.address)" }
}

extension ICECandidatePair {
    /// The checklist (RFC 8445 §6.1.2): every local and remote candidate of one family
    /// paired, a server-reflexive local candidate replaced by its base (its checks leave
    /// from there), redundant pairs (same local base and remote address) pruned keeping the
    /// highest priority, sorted by priority, at most `limit` pairs (RFC 8445 §6.1.2.5
    /// suggests 100).
    public static func checklist(local: [ICECandidate], remote: [ICECandidate], controlling: Bool, limit: Int = 100) -> [ICECandidatePair] {
        var best: [Key: ICECandidatePair] = [:]
        for localCandidate in local {
            var sending = localCandidate
            if localCandidate.kind == .serverReflexive {
                guard let base = localCandidate.relatedAddress,
                      let host = local.first(where: { $0.kind == .host && $0.address == base }) else { continue }
                sending = host
            }
            for remoteCandidate in remote where remoteCandidate.address.isIPv6 == sending.address.isIPv6 {
                let pair = ICECandidatePair(local: sending, remote: remoteCandidate)
                let key = Key(pair)
                if let existing = best[key], existing.priority(controlling: controlling) >= pair.priority(controlling: controlling) { continue }
                best[key] = pair
            }
        }
        // Equal priorities (possible across families) fall back to the addresses, so the
        // order never depends on a dictionary's.
        let sorted = best.values.sorted { a, b in
            let (pa, pb) = (a.priority(controlling: controlling), b.priority(controlling: controlling))
            return pa != pb ? pa > pb : a.description < b.description
        }
        return Array(sorted.prefix(max(0, limit)))
    }

    /// A pair's identity: the addresses it goes from and to.
    struct Key: Hashable, Sendable {
        var local: SocketAddress
        var remote: SocketAddress
        init(_ pair: ICECandidatePair) {
            local = pair.local.address
            remote = pair.remote.address
        }
    }
}
