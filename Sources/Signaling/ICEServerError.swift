/// Why an ICE server's URL or entry cannot be used. Messages name the URL and the problem,
/// never a credential.
public struct ICEServerError: Error, Sendable, Hashable, CustomStringConvertible {
    /// What was wrong. New kinds may be added without breaking callers.
    public struct Code: Sendable, Hashable, CustomStringConvertible {
        private enum Base: String, Sendable, Hashable {
            case malformedURL = "malformed URL"
            case missingCredentials = "missing credentials"
            case unresolvable = "unresolvable"
        }

        private let base: Base
        private init(_ base: Base) { self.base = base }

        /// The URL is not a `stun:`, `stuns:`, `turn:` or `turns:` URL of RFC 7064 or
        /// RFC 7065: another scheme, a `//`, no host, a port outside 1...65535, an IPv6
        /// address without brackets, a query other than `?transport=udp|tcp` on a TURN URL.
        public static let malformedURL = Code(.malformedURL)
        /// A TURN entry without a username or credential.
        public static let missingCredentials = Code(.missingCredentials)
        /// The host name does not resolve.
        public static let unresolvable = Code(.unresolvable)

        public var description: String { base.rawValue }
    }

    public let code: Code
    /// A sentence naming the URL and the problem.
    public let message: String

    public init(_ code: Code, _ message: String) {
        self.code = code
        self.message = message
    }

    public var description: String { message }
}
