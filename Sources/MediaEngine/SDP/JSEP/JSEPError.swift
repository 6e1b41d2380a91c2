/// A WebRTC peer's offer or answer this side cannot use as a whole (JSEP, RFC 8829).
///
/// What one media section lacks is not an error: the answer refuses that section (port 0)
/// and says why in `WebRTCNegotiation.refusals`. These errors are for what every section
/// shares (the BUNDLE transport: ICE credentials, fingerprints, setup role) or for an
/// offer of which no section is usable. Messages name the problem and never echo key
/// material (an SDP may carry `a=crypto` keys).
public struct JSEPError: CodedError, CustomDebugStringConvertible {
    public typealias Code = ErrorCode<JSEPError>

    public let code: Code
    /// A sentence naming the section (by index and mid) and the problem.
    public let message: String

    public init(_ code: Code, _ message: String) {
        self.code = code
        self.message = message
    }

    public var debugDescription: String { "JSEPError(\(code): \(message))" }
}

extension ErrorCode where Domain == JSEPError {
    /// The SDP text itself is malformed (see `SDPError`): too large, a bad line.
    public static var malformed: Self { Self("malformed") }
    /// No `a=fingerprint` for the transport: DTLS could not authenticate the peer.
    public static var noFingerprint: Self { Self("no fingerprint") }
    /// Keys by SDES (`a=crypto`) only: WebRTC peers are keyed by DTLS-SRTP.
    public static var sdesOnly: Self { Self("SDES only") }
    /// `ice-ufrag` / `ice-pwd` missing or outside RFC 8839's lengths (4 and 22 to 256).
    public static var iceCredentials: Self { Self("ICE credentials") }
    /// `a=setup` other than actpass, active or passive, or one that leaves no role.
    public static var setup: Self { Self("setup") }
    /// No section could be accepted; the message lists each section's reason.
    public static var noUsableMedia: Self { Self("no usable media") }
    /// An answer that does not match the offer it answers (section count, kinds, mids).
    public static var mismatch: Self { Self("mismatch") }
}
