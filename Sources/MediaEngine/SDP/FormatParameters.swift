extension MediaDescription {
    /// `a=fmtp:<format> <format specific parameters>` (RFC 8866 6.15), such as
    /// `a=fmtp:111 minptime=10;useinbandfec=1` or ffmpeg's
    /// `a=fmtp:96 packetization-mode=1; sprop-parameter-sets=Z0IAH...,aM4=`.
    public struct FormatParameters: Hashable, Sendable {
        /// The format the parameters apply to; a payload type for RTP.
        public var format: String
        /// The parameters as written.
        public var parameterString: String

        /// Creates format parameters from their written form.
        /// - Parameters:
        ///   - format: The format token, a payload type number for RTP.
        ///   - parameterString: The text after the format, such as `minptime=10;useinbandfec=1`.
        public init(format: String, parameterString: String) {
            self.format = format
            self.parameterString = parameterString
        }

        /// Creates format parameters for an RTP payload type from key-value pairs,
        /// written `key=value;key=value` in the order given.
        /// - Parameters:
        ///   - payloadType: The payload type.
        ///   - parameters: The pairs; a pair with an empty value is written as the key alone.
        public init(payloadType: UInt8, parameters: KeyValuePairs<String, String>) {
            let text = parameters.map { $0.value.isEmpty ? $0.key : "\($0.key)=\($0.value)" }.joined(separator: ";")
            self.init(format: String(payloadType), parameterString: text)
        }

        /// Parses the value after `a=fmtp:`.
        /// - Parameter payloadTypes: Whether the format must be an RTP payload type.
        /// - Throws: `SDPError` with code `badAttribute`.
        public init(attributeValue value: String, payloadTypes: Bool = true) throws(SDPError) {
            let (format, rest) = SDPScanning.firstField(value[...])
            guard !format.isEmpty else { throw SDPError(.badAttribute, "fmtp needs <format> <parameters>") }
            if payloadTypes {
                guard let payloadType = SDPScanning.decimal(format, as: UInt8.self), payloadType <= 127 else {
                    throw SDPError(.badAttribute, "fmtp format is not a payload type in 0...127")
                }
            }
            self.init(format: String(format), parameterString: String(rest))
        }

        /// The payload type, when the format is one.
        public var payloadType: UInt8? {
            SDPScanning.decimal(format, as: UInt8.self).flatMap { $0 <= 127 ? $0 : nil }
        }

        /// The parameters split at `;` into `key=value` pairs, blanks around each trimmed.
        /// A parameter without `=` (such as telephone-event's `0-15`) maps to "". When a key
        /// repeats, the first value wins. Values keep any further `=` (base64 padding).
        public var parameters: [String: String] {
            var result: [String: String] = [:]
            for item in SDPScanning.split(parameterString[...], at: ";") {
                let item = SDPScanning.trimmed(item)
                guard !item.isEmpty else { continue }
                let key: Substring
                let value: Substring
                if let parts = SDPScanning.cut(item, at: "=") {
                    key = SDPScanning.trimmed(parts.before)
                    value = SDPScanning.trimmed(parts.after)
                } else {
                    key = item
                    value = ""
                }
                if result[String(key)] == nil { result[String(key)] = String(value) }
            }
            return result
        }

        /// The value after `a=fmtp:`.
        public var attributeValue: String {
            parameterString.isEmpty ? SDPScanning.token(format) : "\(SDPScanning.token(format)) \(parameterString)"
        }
    }

    /// The `a=fmtp` lines, in order.
    public var formatParameters: [FormatParameters] {
        let numeric = transportProtocol.isRTP
        return attributes(named: "fmtp").compactMap { $0.value.flatMap { try? FormatParameters(attributeValue: $0, payloadTypes: numeric) } }
    }

    /// The `a=fmtp` line for `payloadType`, or nil.
    public func formatParameters(for payloadType: UInt8) -> FormatParameters? {
        formatParameters.first { $0.payloadType == payloadType }
    }
}

extension SessionDescription.Attribute {
    /// `a=fmtp:<value>`.
    public static func formatParameters(_ parameters: MediaDescription.FormatParameters) -> SessionDescription.Attribute {
        SessionDescription.Attribute(name: "fmtp", value: parameters.attributeValue)
    }
}
