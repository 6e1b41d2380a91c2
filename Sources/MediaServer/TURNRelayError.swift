/// Why a TURN relay's settings were refused. Messages name the URL, the file or the value,
/// never the secret.
public struct TURNRelayError: Error, Sendable, Hashable, CustomStringConvertible {
    /// What was wrong. New kinds may be added without breaking callers.
    public struct Code: Sendable, Hashable, CustomStringConvertible {
        private enum Base: String, Sendable, Hashable {
            case badURL = "bad URL"
            case unreadableSecretFile = "unreadable secret file"
            case emptySecret = "empty secret"
            case badSecret = "bad secret"
            case badLifetime = "bad lifetime"
        }

        private let base: Base
        private init(_ base: Base) { self.base = base }

        /// Not a `turn:` URL over UDP (`turn:HOST:PORT`, optionally `?transport=udp`).
        public static let badURL = Code(.badURL)
        /// The secret file does not exist or cannot be read.
        public static let unreadableSecretFile = Code(.unreadableSecretFile)
        /// The secret is empty (or only white space).
        public static let emptySecret = Code(.emptySecret)
        /// The secret holds a line break or another control character, or is too long:
        /// it must fit on coturn's `static-auth-secret=` line.
        public static let badSecret = Code(.badSecret)
        /// The credentials' lifetime is not a positive number of seconds.
        public static let badLifetime = Code(.badLifetime)

        public var description: String { base.rawValue }
    }

    public let code: Code
    /// A sentence naming what is wrong; never holds the secret.
    public let message: String

    public init(_ code: Code, _ message: String) {
        self.code = code
        self.message = message
    }

    public var description: String { message }
}
