/// Why a `MediaSession` could not be created. The message is the failing part's own,
/// which names what it refused (the address to bind, the key, the SSRC), so it reads the
/// same as the error the part threw; the code says which part that was.
public struct MediaSessionError: CodedError {
    public typealias Code = ErrorCode<MediaSessionError>

    public let code: Code
    public let message: String
    /// The `errno` behind a socket that could not be bound (`.socket`).
    public let systemError: Int32?

    public init(_ code: Code, _ message: String, systemError: Int32? = nil) {
        self.code = code
        self.message = message
        self.systemError = systemError
    }

    /// The host could not be bound or named no usable address.
    init(_ error: TransportError) {
        self.init(.socket, error.message, systemError: error.systemError)
    }

    /// The SRTP context refused this side's key (`Configuration.localKeying`).
    init(_ error: SRTPError) {
        self.init(.keying, error.message)
    }

    /// A send stream could not be added (`Configuration.localAudioSSRC` refused).
    init(_ error: MediaCoreError) {
        self.init(.streams, error.message)
    }
}

extension ErrorCode where Domain == MediaSessionError {
    /// The socket could not be bound to `Configuration.host`, or an address did not parse.
    public static var socket: Self { Self("socket") }
    /// This side's SRTP key or profile was refused.
    public static var keying: Self { Self("keying") }
    /// This side's send streams could not be set up.
    public static var streams: Self { Self("streams") }
    /// A WebRTC peer's offer could not be answered (the message says why).
    public static var negotiation: Self { Self("negotiation") }
}
