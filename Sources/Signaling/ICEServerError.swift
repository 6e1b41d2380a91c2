import MediaEngine

/// Why an ICE server's URL or entry cannot be used. Messages name the URL and the problem,
/// never a credential.
public struct ICEServerError: CodedError {
    /// What was wrong. New kinds may be added without breaking callers.
    public typealias Code = ErrorCode<ICEServerError>

    public let code: Code
    /// A sentence naming the URL and the problem.
    public let message: String

    public init(_ code: Code, _ message: String) {
        self.code = code
        self.message = message
    }
}

extension ErrorCode where Domain == ICEServerError {
    /// The URL is not a `stun:`, `stuns:`, `turn:` or `turns:` URL of RFC 7064 or
    /// RFC 7065: another scheme, a `//`, no host, a port outside 1...65535, an IPv6
    /// address without brackets, a query other than `?transport=udp|tcp` on a TURN URL.
    public static var malformedURL: Self { Self("malformed URL") }
    /// A TURN entry without a username or credential.
    public static var missingCredentials: Self { Self("missing credentials") }
    /// The host name does not resolve.
    public static var unresolvable: Self { Self("unresolvable") }
}
