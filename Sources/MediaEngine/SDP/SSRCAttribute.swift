extension MediaDescription {
    /// `a=ssrc:<ssrc-id> <attribute>[:<value>]` (RFC 5576 4.1), such as
    /// `a=ssrc:3735928559 cname:engine@host`.
    public struct SSRCAttribute: Hashable, Sendable {
        /// The synchronization source.
        public var ssrc: UInt32
        /// The source attribute's name: `cname`, `msid`, ...
        public var name: String
        /// The text after the first colon, or nil for a flag.
        public var value: String?

        /// Creates a source attribute.
        public init(ssrc: UInt32, name: String, value: String? = nil) {
            self.ssrc = ssrc
            self.name = name
            self.value = value
        }

        /// `a=ssrc:<ssrc> cname:<cname>`, the RTCP canonical name (RFC 3550 6.5.1).
        public static func cname(_ cname: String, ssrc: UInt32) -> SSRCAttribute {
            SSRCAttribute(ssrc: ssrc, name: "cname", value: cname)
        }

        /// Parses the value after `a=ssrc:`.
        /// - Throws: `SDPError` with code `badAttribute`.
        public init(attributeValue value: String) throws(SDPError) {
            let (id, rest) = SDPScanning.firstField(value[...])
            guard let ssrc = SDPScanning.decimal(id, as: UInt32.self) else {
                throw SDPError(.badAttribute, "ssrc is not a number in 0...4294967295")
            }
            guard !rest.isEmpty, rest.unicodeScalars.first != ":" else {
                throw SDPError(.badAttribute, "ssrc \(ssrc) needs a source attribute such as cname:<name>")
            }
            if let parts = SDPScanning.cut(rest, at: ":") {
                self.init(ssrc: ssrc, name: String(parts.before), value: String(parts.after))
            } else {
                self.init(ssrc: ssrc, name: String(rest))
            }
        }

        /// The value after `a=ssrc:`.
        public var attributeValue: String {
            let head = "\(ssrc) \(SDPScanning.token(name))"
            return value.map { "\(head):\(SDPScanning.singleLine($0))" } ?? head
        }
    }

    /// The `a=ssrc` lines, in order.
    public var ssrcAttributes: [SSRCAttribute] {
        attributes(named: "ssrc").compactMap { $0.value.flatMap { try? SSRCAttribute(attributeValue: $0) } }
    }

    /// The SSRCs the section names, each once, in order of first mention.
    public var ssrcs: [UInt32] {
        var seen = Set<UInt32>()
        return ssrcAttributes.map(\.ssrc).filter { seen.insert($0).inserted }
    }

    /// The `cname` of `ssrc`, or nil.
    public func cname(ofSSRC ssrc: UInt32) -> String? {
        ssrcAttributes.first { $0.ssrc == ssrc && $0.name == "cname" }?.value
    }
}

extension SessionDescription.Attribute {
    /// `a=ssrc:<value>`.
    public static func ssrc(_ attribute: MediaDescription.SSRCAttribute) -> SessionDescription.Attribute {
        SessionDescription.Attribute(name: "ssrc", value: attribute.attributeValue)
    }
}
