/// An error from an encoder or decoder: a bad configuration, a packet that cannot be
/// decoded, or a failure reported by the C library.
///
/// The message names the offending value and, for library failures, the library's own
/// words; it never contains media data.
public struct CodecError: Error, Hashable, Sendable, CustomStringConvertible {
    /// What kind of failure this is. New kinds may be added without breaking callers.
    public struct Code: Hashable, Sendable, CustomStringConvertible {
        private enum Base: String, Hashable, Sendable {
            case invalidConfiguration = "invalid configuration"
            case invalidInput = "invalid input"
            case corruptPacket = "corrupt packet"
            case bufferTooSmall = "buffer too small"
            case unsupported = "unsupported"
            case outOfMemory = "out of memory"
            case internalFailure = "internal failure"
        }

        private let base: Base
        private init(_ base: Base) { self.base = base }

        /// A configuration value is out of range or inconsistent.
        public static let invalidConfiguration = Code(.invalidConfiguration)
        /// A frame handed to an encoder does not match its configuration.
        public static let invalidInput = Code(.invalidInput)
        /// A packet is truncated or corrupt; a video receiver should ask for a keyframe.
        public static let corruptPacket = Code(.corruptPacket)
        /// An output buffer cannot hold the result.
        public static let bufferTooSmall = Code(.bufferTooSmall)
        /// The library does not support the requested feature or bitstream.
        public static let unsupported = Code(.unsupported)
        /// The library could not allocate memory.
        public static let outOfMemory = Code(.outOfMemory)
        /// The library reported an error that is none of the above.
        public static let internalFailure = Code(.internalFailure)

        public var description: String { base.rawValue }
    }

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

    public var description: String { message }
}
