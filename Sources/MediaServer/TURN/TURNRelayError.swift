import MediaEngine

/// Why a TURN relay's settings were refused. Messages name the URL, the file or the value,
/// never the secret.
public struct TURNRelayError: CodedError {
    /// What was wrong. New kinds may be added without breaking callers.
    public typealias Code = ErrorCode<TURNRelayError>

    public let code: Code
    /// A sentence naming what is wrong; never holds the secret.
    public let message: String

    public init(_ code: Code, _ message: String) {
        self.code = code
        self.message = message
    }
}

extension ErrorCode where Domain == TURNRelayError {
    /// Not a `turn:` URL over UDP (`turn:HOST:PORT`, optionally `?transport=udp`).
    public static var badURL: Self { Self("bad URL") }
    /// The secret file does not exist or cannot be read.
    public static var unreadableSecretFile: Self { Self("unreadable secret file") }
    /// The secret is empty (or only white space).
    public static var emptySecret: Self { Self("empty secret") }
    /// The secret holds a line break or another control character, or is too long:
    /// it must fit on coturn's `static-auth-secret=` line.
    public static var badSecret: Self { Self("bad secret") }
    /// The credentials' lifetime is not a positive number of seconds.
    public static var badLifetime: Self { Self("bad lifetime") }
}
