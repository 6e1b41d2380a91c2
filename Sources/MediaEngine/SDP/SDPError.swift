/// A session description the parser refused, or a value that cannot go into one.
///
/// Messages start with the line number when there is one ("line 7: m= line needs at
/// least 4 fields") and describe the problem without echoing the input: an SDP may carry
/// SRTP master keys (`a=crypto` `inline:` parameters, `k=` lines), and those must never
/// reach a log through an error.
public struct SDPError: CodedError, CustomDebugStringConvertible {
    /// What was wrong. New kinds may be added without breaking callers.
    public typealias Code = ErrorCode<SDPError>

    /// The kind of problem.
    public let code: Code
    /// A sentence naming the line and the problem. Never contains key material.
    public let message: String
    /// The 1-based line the problem is on, when it is on one line.
    public let line: Int?

    /// Creates an error.
    /// - Parameters:
    ///   - code: The kind of problem.
    ///   - message: What is wrong, without the line prefix. Must not contain input text
    ///     that could be key material.
    ///   - line: The 1-based line number; when given, the message is prefixed "line N: ".
    public init(_ code: Code, _ message: String, line: Int? = nil) {
        self.code = code
        self.line = line
        self.message = line.map { "line \($0): \(message)" } ?? message
    }

    /// The same error attributed to `line`. Accessor parsers throw without a line; the
    /// document parser adds it.
    func at(line: Int) -> SDPError {
        guard self.line == nil else { return self }
        return SDPError(code, message, line: line)
    }

    /// The message.
    public var description: String { message }
    /// The code and the message.
    public var debugDescription: String { "SDPError(\(code): \(message))" }
}

extension ErrorCode where Domain == SDPError {
    /// A line does not have the shape its type requires: no `=`, too few fields, a
    /// number that is not a number, a line in a section where it is not allowed.
    public static var malformedLine: Self { Self("malformed line") }
    /// A mandatory line is absent: `v=`, `o=`, `s=`, `t=`, or a `c=` for a media
    /// section when the session has none.
    public static var missingField: Self { Self("missing field") }
    /// A known attribute (`rtpmap`, `fmtp`, `extmap`, `ssrc`, `rtcp`, `mid`, a
    /// direction) has a malformed value or contradicts another one.
    public static var badAttribute: Self { Self("bad attribute") }
    /// An `a=crypto` line (RFC 4568) is malformed, its key is not base64, or the key
    /// length does not fit the suite.
    public static var badCrypto: Self { Self("bad crypto") }
    /// Well-formed, but outside what this parser handles (an SDP version other than 0,
    /// several `c=` lines in one section).
    public static var unsupported: Self { Self("unsupported") }
    /// The text exceeds the size or line-count limit.
    public static var tooLarge: Self { Self("too large") }
}
