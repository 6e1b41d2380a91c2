#if canImport(Glibc)
import Glibc
#endif

/// One ICE server URL, parsed:
///
///     stun-URI = ("stun" / "stuns") ":" host [ ":" port ]                      RFC 7064
///     turn-URI = ("turn" / "turns") ":" host [ ":" port ] [ "?transport=" ("udp" / "tcp") ]
///                                                                               RFC 7065
///
/// `host` is a name, an IPv4 address or an IPv6 address in brackets. There is no `//` and
/// no user info: a TURN server's username and password travel beside the URL
/// (`ICEServer.username`, `.credential`), never in it.
public struct ICEServerURL: Sendable, Hashable, CustomStringConvertible {
    public enum Scheme: String, Sendable, Hashable, CaseIterable {
        case stun, stuns, turn, turns

        /// A TURN server (it relays); otherwise STUN only.
        public var isRelay: Bool { self == .turn || self == .turns }
        /// Over TLS or DTLS.
        public var isSecure: Bool { self == .stuns || self == .turns }
        /// 3478, or 5349 over TLS (RFC 7064 §3.2, RFC 7065 §3.2).
        public var defaultPort: Int { isSecure ? 5_349 : 3_478 }
    }

    /// The transport to the TURN server (`?transport=`).
    public enum Transport: String, Sendable, Hashable {
        case udp, tcp
    }

    /// The longest URL parsed.
    public static let maximumLength = 512

    public var scheme: Scheme
    /// A name or an address; an IPv6 address without its brackets.
    public var host: String
    public var port: Int
    /// Only on TURN URLs; nil: unspecified (UDP for `turn:`, TCP for `turns:`).
    public var transport: Transport?

    /// A URL from its parts.
    /// - Parameters:
    ///   - scheme: STUN or TURN, plain or secure.
    ///   - host: A name or an address (IPv6 without brackets).
    ///   - port: Nil: the scheme's default port.
    ///   - transport: For TURN URLs: `?transport=`.
    public init(scheme: Scheme, host: String, port: Int? = nil, transport: Transport? = nil) {
        self.scheme = scheme
        self.host = host
        self.port = port ?? scheme.defaultPort
        self.transport = transport
    }

    /// Parses a `stun:`, `stuns:`, `turn:` or `turns:` URL; the scheme and the transport
    /// are case-insensitive.
    /// - Parameter text: The URL, such as `turn:turn.example.com:3478?transport=udp`.
    /// - Throws: `ICEServerError` `.malformedURL`, naming the URL (unless it holds user
    ///   info, which may be a password) and what is wrong.
    public init(parsing text: String) throws(ICEServerError) {
        guard text.utf8.count <= Self.maximumLength else {
            throw ICEServerError(.malformedURL, "an ICE server URL is longer than \(Self.maximumLength) bytes")
        }
        guard !text.contains("@") else {
            throw ICEServerError(.malformedURL,
                                 "an ICE server URL takes no user info ('...@'): the username and credential go beside the URL")
        }
        func malformed(_ problem: String) -> ICEServerError { ICEServerError(.malformedURL, "'\(text)': \(problem)") }
        guard let colon = text.firstIndex(of: ":"), let scheme = Scheme(rawValue: text[..<colon].lowercased()) else {
            throw malformed("not a stun:, stuns:, turn: or turns: URL")
        }
        var rest = text[text.index(after: colon)...]
        guard !rest.hasPrefix("//") else { throw malformed("no '//' after the scheme (\(scheme.rawValue):HOST:PORT)") }
        var transport: Transport?
        if let question = rest.firstIndex(of: "?") {
            let query = rest[rest.index(after: question)...].lowercased()
            rest = rest[..<question]
            guard scheme.isRelay else { throw malformed("a \(scheme.rawValue): URL takes no query") }
            guard query.hasPrefix("transport="), let value = Transport(rawValue: String(query.dropFirst("transport=".count))) else {
                throw malformed("the only query is transport=udp or transport=tcp")
            }
            transport = value
        }
        let host: Substring
        var port: Substring?
        if rest.hasPrefix("[") {
            guard let close = rest.firstIndex(of: "]") else { throw malformed("'[' without ']'") }
            host = rest[rest.index(after: rest.startIndex)..<close]
            let after = rest[rest.index(after: close)...]
            if !after.isEmpty {
                guard after.hasPrefix(":") else { throw malformed("only ':PORT' may follow ']'") }
                port = after.dropFirst()
            }
            guard Self.isIPv6Address(host) else { throw malformed("no IPv6 address between '[' and ']'") }
        } else {
            let parts = rest.split(separator: ":", omittingEmptySubsequences: false)
            guard parts.count <= 2 else { throw malformed("an IPv6 address goes in brackets ([::1]:3478)") }
            host = parts[0]
            port = parts.count == 2 ? parts[1] : nil
            guard Self.isHostName(host) else {
                throw malformed("the host must be 1 to 253 letters, digits, '-', '.' or '_'")
            }
        }
        var number: Int?
        if let port {
            guard (1...5).contains(port.utf8.count), port.utf8.allSatisfy({ (0x30...0x39).contains($0) }), let value = Int(port),
                  (1...65_535).contains(value) else {
                throw malformed("port '\(port)' is not 1...65535")
            }
            number = value
        }
        self.init(scheme: scheme, host: String(host), port: number, transport: transport)
    }

    /// The URL as text, with the port always given: `stun:192.0.2.1:3478`,
    /// `turn:[2001:db8::1]:3478?transport=udp`.
    public var description: String {
        let text = "\(scheme.rawValue):\(host.contains(":") ? "[\(host)]" : host):\(port)"
        return transport.map { "\(text)?transport=\($0.rawValue)" } ?? text
    }

    /// Plain UDP to the server, the only transport the engine speaks: `stun:`, or `turn:`
    /// without `?transport=tcp`.
    public var isUDP: Bool { !scheme.isSecure && transport != .tcp }

    /// A DNS name or an IPv4 address: letters, digits, '-', '.' and '_' (names in other
    /// scripts come punycoded).
    static func isHostName(_ host: Substring) -> Bool {
        (1...253).contains(host.utf8.count) && host.utf8.allSatisfy { byte in
            (0x30...0x39).contains(byte) || (0x41...0x5A).contains(byte) || (0x61...0x7A).contains(byte) || byte == 0x2D || byte == 0x2E
                || byte == 0x5F
        }
    }

    static func isIPv6Address(_ host: Substring) -> Bool {
        var address = in6_addr()
        return inet_pton(AF_INET6, String(host), &address) == 1
    }
}
