extension MediaDescription {
    /// `a=extmap:<id>[/<direction>] <URI> [<extension attributes>]` (RFC 8285 8): which
    /// header extension an ID carries.
    public struct ExtensionMap: Hashable, Sendable {
        /// RFC 6464 client-to-mixer audio level.
        public static let audioLevelURI = "urn:ietf:params:rtp-hdrext:ssrc-audio-level"
        /// Transport-wide sequence number for congestion control (draft-holmer-rmcat-transport-wide-cc-extensions-01).
        public static let transportWideSequenceNumberURI = "http://www.ietf.org/id/draft-holmer-rmcat-transport-wide-cc-extensions-01"

        /// The local ID: 1...14 fit the one-byte header form, 15...255 need the two-byte form.
        public var id: UInt8
        /// The direction, when it differs from the section's.
        public var direction: Direction?
        /// The extension's URI.
        public var uri: String
        /// Extension attributes after the URI (`vad=on` for audio level), as written.
        public var extensionAttributes: String?

        /// Creates an extmap.
        /// - Parameters:
        ///   - id: 1...255; 1...14 keep the one-byte header form.
        ///   - direction: A direction narrower than the section's.
        ///   - uri: The extension's URI.
        ///   - extensionAttributes: Text after the URI.
        public init(id: UInt8, direction: Direction? = nil, uri: String, extensionAttributes: String? = nil) {
            self.id = id
            self.direction = direction
            self.uri = uri
            self.extensionAttributes = extensionAttributes
        }

        /// Parses the value after `a=extmap:`.
        /// - Throws: `SDPError` with code `badAttribute`.
        public init(attributeValue value: String) throws(SDPError) {
            let (head, afterHead) = SDPScanning.firstField(value[...])
            let (uri, extensionAttributes) = SDPScanning.firstField(afterHead)
            let parts = SDPScanning.split(head, at: "/", maxSplits: 1, omittingEmptySubsequences: false)
            guard let id = SDPScanning.decimal(parts[0], as: UInt8.self), id >= 1 else {
                throw SDPError(.badAttribute, "extmap id is not a number in 1...255")
            }
            var direction: Direction?
            if parts.count == 2 {
                guard let parsed = Direction(rawValue: String(parts[1])) else {
                    throw SDPError(.badAttribute, "extmap \(id) direction is not sendrecv, sendonly, recvonly or inactive")
                }
                direction = parsed
            }
            guard !uri.isEmpty else { throw SDPError(.badAttribute, "extmap \(id) has no URI") }
            self.init(id: id, direction: direction, uri: String(uri), extensionAttributes: extensionAttributes.isEmpty ? nil : String(extensionAttributes))
        }

        /// Whether the one-byte header form (RFC 8285 4.2) can carry this ID.
        public var fitsOneByteHeader: Bool { (1...14).contains(id) }

        /// The value after `a=extmap:`.
        public var attributeValue: String {
            var text = String(id)
            if let direction { text += "/\(direction.rawValue)" }
            text += " " + SDPScanning.token(uri)
            if let extensionAttributes, !extensionAttributes.isEmpty { text += " " + extensionAttributes }
            return text
        }
    }

    /// The `a=extmap` lines, in order.
    public var extensionMaps: [ExtensionMap] {
        attributes(named: "extmap").compactMap { $0.value.flatMap { try? ExtensionMap(attributeValue: $0) } }
    }

    /// The ID mapped to `uri`, or nil.
    public func extensionID(for uri: String) -> UInt8? {
        extensionMaps.first { $0.uri == uri }?.id
    }
}

extension SessionDescription.Attribute {
    /// `a=extmap:<value>`.
    public static func extensionMap(_ map: MediaDescription.ExtensionMap) -> SessionDescription.Attribute {
        SessionDescription.Attribute(name: "extmap", value: map.attributeValue)
    }
}
