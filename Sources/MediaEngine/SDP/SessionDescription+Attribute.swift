extension SessionDescription {
    /// One `a=` line: `a=<name>` (a flag) or `a=<name>:<value>` (RFC 8866 5.13).
    ///
    /// Attributes are kept in the order written, known or not, so a description
    /// re-serializes without losing anything. Typed accessors on `MediaDescription` read
    /// the known ones. `description`, `debugDescription` and the mirror hide key material
    /// of `crypto` and `key-mgmt` values.
    public struct Attribute: Hashable, Sendable, CustomStringConvertible, CustomDebugStringConvertible, CustomReflectable {
        /// The name before the colon, such as `rtpmap`.
        public var name: String
        /// The text after the first colon; nil for a flag such as `a=rtcp-mux`.
        public var value: String?

        /// Creates an attribute.
        /// - Parameters:
        ///   - name: The attribute name; it must not contain `:` or blanks.
        ///   - value: The value, or nil for a flag attribute.
        public init(name: String, value: String? = nil) {
            self.name = name
            self.value = value
        }

        /// Attributes whose values carry keys; their values never appear in descriptions.
        static let secretNames: Set<String> = ["crypto", "key-mgmt"]

        /// The line after `a=`.
        var text: String {
            let name = SDPScanning.token(name)
            guard let value else { return name }
            return "\(name):\(SDPScanning.singleLine(value))"
        }

        var redactedValue: String? {
            guard let value, Self.secretNames.contains(name) else { return value }
            return name == "crypto" ? MediaDescription.Crypto.redacted(value) : "<redacted>"
        }

        /// `a=name:value`, with key material replaced by `<redacted>`.
        public var description: String {
            let name = SDPScanning.token(name)
            guard let redactedValue else { return "a=\(name)" }
            return "a=\(name):\(SDPScanning.singleLine(redactedValue))"
        }

        /// Like `description`; no key material.
        public var debugDescription: String { "Attribute(\(description))" }

        /// Children without key material, for `dump` and debuggers.
        public var customMirror: Mirror {
            Mirror(self, children: ["name": name, "value": redactedValue as Any], displayStyle: .struct)
        }
    }

    /// A line of a type this parser does not model: `k=` (obsolete, RFC 8866 5.12) or a
    /// letter no RFC defines.
    ///
    /// RFC 8866 section 5 lets a parser ignore or reject such lines; this one keeps them,
    /// because ffmpeg and GStreamer skip them too and refusing a whole file over one line
    /// helps nobody. They are written back after the section's `a=` lines. A `k=` value
    /// is a key and is hidden from descriptions.
    public struct Line: Hashable, Sendable, CustomStringConvertible, CustomDebugStringConvertible, CustomReflectable {
        /// The type letter, `a` to `z`.
        public var type: Character
        /// Everything after `=`.
        public var value: String

        /// Creates a line.
        /// - Parameters:
        ///   - type: The type letter.
        ///   - value: Everything after `=`.
        public init(type: Character, value: String) {
            self.type = type
            self.value = value
        }

        var redactedValue: String { type == "k" ? "<redacted>" : value }

        var text: String { "\(SDPScanning.singleLine(String(type)))=\(SDPScanning.singleLine(value))" }

        /// `x=value`, with a `k=` key replaced by `<redacted>`.
        public var description: String { "\(SDPScanning.singleLine(String(type)))=\(SDPScanning.singleLine(redactedValue))" }

        /// Like `description`; no `k=` key.
        public var debugDescription: String { "Line(\(description))" }

        /// Children without key material, for `dump` and debuggers.
        public var customMirror: Mirror {
            Mirror(self, children: ["type": type, "value": redactedValue], displayStyle: .struct)
        }
    }
}

extension SessionDescription.Attribute {
    /// `a=rtcp-mux` (RFC 5761): RTP and RTCP share one port.
    public static let rtcpMux = SessionDescription.Attribute(name: "rtcp-mux")

    /// `a=sendrecv`, `a=sendonly`, `a=recvonly` or `a=inactive`.
    public static func direction(_ direction: MediaDescription.Direction) -> SessionDescription.Attribute {
        SessionDescription.Attribute(name: direction.rawValue)
    }

    /// `a=mid:<identification-tag>` (RFC 9143 / 5888).
    public static func mid(_ tag: String) -> SessionDescription.Attribute {
        SessionDescription.Attribute(name: "mid", value: tag)
    }
}
