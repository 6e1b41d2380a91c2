#if canImport(Glibc)
import Glibc
#endif

/// The `candidate` attribute (RFC 8839 §5.1), as candidates travel over signaling:
///
///     candidate:<foundation> <component> <transport> <priority> <address> <port> typ <type>
///               [raddr <address> rport <port>] *(<extension name> <extension value>)
///
/// Only UDP with literal IP addresses is taken: TCP candidates and names (mDNS `.local`
/// hosts) are typed errors, which a caller skips. Extensions (`generation`, `ufrag`, ...)
/// are read past.
extension ICECandidate {
    /// The longest attribute value taken: far above any real candidate line.
    static let maximumAttributeLength = 512

    /// Parses a candidate, with or without its `a=` / `candidate:` prefix.
    /// - Throws: `SDPError` (`badAttribute` or `unsupported`) naming the field.
    public init(attribute text: String) throws(SDPError) {
        guard text.utf8.count <= Self.maximumAttributeLength else {
            throw SDPError(.tooLarge, "candidate: longer than \(Self.maximumAttributeLength) bytes")
        }
        var value = Substring(text)
        if value.hasPrefix("a=") { value = value.dropFirst(2) }
        if value.hasPrefix("candidate:") { value = value.dropFirst("candidate:".count) }
        let fields = SDPScanning.split(value, at: " ")  // at scalars, as SDP is split
        guard fields.count >= 8 else { throw SDPError(.badAttribute, "candidate: \(fields.count) fields, at least 8 needed") }
        let foundation = String(fields[0])
        guard (1...32).contains(foundation.utf8.count),
              foundation.utf8.allSatisfy({ Self.isICEChar($0) }) else {
            throw SDPError(.badAttribute, "candidate: the foundation must be 1 to 32 letters, digits, '+' or '/'")
        }
        guard let component = Int(fields[1]), (1...256).contains(component) else {
            throw SDPError(.badAttribute, "candidate: component '\(fields[1].prefix(8))' is not 1...256")
        }
        guard fields[2].lowercased() == "udp" else {
            throw SDPError(.unsupported, "candidate: transport '\(fields[2].prefix(8))' (only UDP)")
        }
        guard let priority = UInt32(fields[3]), priority > 0 else {
            throw SDPError(.badAttribute, "candidate: priority '\(fields[3].prefix(12))' is not 1...4294967295")
        }
        let address = try Self.address(fields[4], port: fields[5], field: "connection address")
        guard fields[6] == "typ", let kind = Kind(rawValue: String(fields[7])) else {
            throw SDPError(.badAttribute, "candidate: 'typ' must be host, srflx, prflx or relay")
        }
        var related: SocketAddress?
        var index = 8
        var relatedHost: Substring?
        var relatedPort: Substring?
        while index + 1 < fields.count {
            switch fields[index] {
            case "raddr": relatedHost = fields[index + 1]
            case "rport": relatedPort = fields[index + 1]
            default: break
            }
            index += 2
        }
        guard index == fields.count else { throw SDPError(.badAttribute, "candidate: an extension without a value") }
        if let relatedHost, let relatedPort {
            // Browsers hide the base as 0.0.0.0 (or ::) port 0 (RFC 8839 §5.1): no related
            // address, however the zeros are spelled ("0::" and "::" are one address).
            let address = try Self.address(relatedHost, port: relatedPort, field: "raddr/rport")
            if !address.isUnspecified { related = address }
        } else if (relatedHost == nil) != (relatedPort == nil) {
            throw SDPError(.badAttribute, "candidate: raddr and rport go together")
        }
        self.init(foundation: foundation, component: component, priority: priority, address: address, kind: kind, relatedAddress: related)
    }

    /// The attribute value (without `a=`), as `init(attribute:)` reads it.
    public var attribute: String {
        var text = "candidate:\(foundation) \(component) udp \(priority) \(address.host) \(address.port) typ \(kind.rawValue)"
        if let relatedAddress { text += " raddr \(relatedAddress.host) rport \(relatedAddress.port)" }
        return text
    }

    /// RFC 8839's ice-char: letters, digits, '+' and '/'.
    static func isICEChar(_ byte: UInt8) -> Bool {
        (0x30...0x39).contains(byte) || (0x41...0x5A).contains(byte) || (0x61...0x7A).contains(byte) || byte == 0x2B || byte == 0x2F
    }

    private static func address(_ host: Substring, port: Substring, field: String) throws(SDPError) -> SocketAddress {
        guard let number = Int(port), (0...65_535).contains(number) else {
            throw SDPError(.badAttribute, "candidate: \(field) port '\(port.prefix(8))' is not 0...65535")
        }
        // A literal address only: a name from a stranger must never make us query DNS.
        guard Self.isLiteralIP(String(host)), let address = try? SocketAddress(host: String(host), port: number) else {
            throw SDPError(.unsupported, "candidate: \(field) '\(host.prefix(64))' is not a literal IP address")
        }
        return address
    }

    private static func isLiteralIP(_ host: String) -> Bool {
        var buffer = [UInt8](repeating: 0, count: 16)
        return inet_pton(AF_INET, host, &buffer) == 1 || inet_pton(AF_INET6, host, &buffer) == 1
    }
}
