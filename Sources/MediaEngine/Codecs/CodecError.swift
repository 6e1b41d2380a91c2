/// An error from an encoder or decoder: a bad configuration, a packet that cannot be
/// decoded, or a failure reported by the C library.
///
/// The message names the offending value and, for library failures, the library's own
/// words; it never contains media data.
public struct CodecError: CodedError {
    /// What kind of failure this is. New kinds may be added without breaking callers.
    public typealias Code = ErrorCode<CodecError>

    /// The kind of failure.
    public let code: Code
    /// A sentence for the user that names the problem.
    public let message: String
    /// The C library's status code, when the error came from one.
    public let status: Int32?

    public init(_ code: Code, _ message: String, status: Int32? = nil) {
        self.code = code
        self.message = message
        self.status = status
    }
}

extension ErrorCode where Domain == CodecError {
    /// A configuration value is out of range or inconsistent.
    public static var invalidConfiguration: Self { Self("invalid configuration") }
    /// A frame handed to an encoder does not match its configuration.
    public static var invalidInput: Self { Self("invalid input") }
    /// A packet is truncated or corrupt; a video receiver should ask for a keyframe.
    public static var corruptPacket: Self { Self("corrupt packet") }
    /// An output buffer cannot hold the result.
    public static var bufferTooSmall: Self { Self("buffer too small") }
    /// The library does not support the requested feature or bitstream.
    public static var unsupported: Self { Self("unsupported") }
    /// The library could not allocate memory.
    public static var outOfMemory: Self { Self("out of memory") }
    /// The library reported an error that is none of the above.
    public static var internalFailure: Self { Self("internal failure") }
}
