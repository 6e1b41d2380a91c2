/// A typed signaling failure, sent to peers as `{ "code": ..., "message": ... }`.
///
/// Codes are stable numbers; the message names the problem and never contains tokens
/// or keys.
public struct SignalingError: Error, Sendable, Hashable, CustomStringConvertible {
    /// A stable numeric code. New codes may be added without breaking callers.
    public struct Code: Hashable, Sendable, CustomStringConvertible {
        /// The number carried on the wire.
        public let rawValue: Int
        private init(_ rawValue: Int) { self.rawValue = rawValue }

        /// The message is not JSON or not a valid envelope.
        public static let malformedMessage = Code(400)
        /// The message exceeds the size limit.
        public static let messageTooLarge = Code(413)
        /// The envelope's version is not spoken here.
        public static let unsupportedVersion = Code(426)
        /// The sender exceeded its message rate.
        public static let rateLimited = Code(429)

        public var description: String {
            switch rawValue {
            case 400: "malformed message"
            case 413: "message too large"
            case 426: "unsupported version"
            case 429: "rate limited"
            default: "error \(rawValue)"
            }
        }
    }

    public let code: Code
    public let message: String

    public init(_ code: Code, _ message: String) {
        self.code = code
        self.message = message
    }

    public var description: String { "\(code) (\(code.rawValue)): \(message)" }
}
