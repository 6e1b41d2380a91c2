/// An error reading or writing a media file. The message names the file and the
/// problem.
public struct MediaFileError: Error, Sendable, Hashable, CustomStringConvertible {
    /// What kind of failure this is. New kinds may be added without breaking callers.
    public struct Code: Hashable, Sendable, CustomStringConvertible {
        private enum Base: String, Hashable, Sendable {
            case cannotOpen = "cannot open"
            case corrupt = "corrupt"
            case unsupportedFormat = "unsupported format"
            case unsupportedSampleRate = "unsupported sample rate"
            case writeFailed = "write failed"
        }

        private let base: Base
        private init(_ base: Base) { self.base = base }

        /// The file does not exist, is not readable, or cannot be created.
        public static let cannotOpen = Code(.cannotOpen)
        /// The file is malformed or truncated.
        public static let corrupt = Code(.corrupt)
        /// The file is valid but holds something the engine does not take (such as
        /// 4:4:4 video or 6-channel audio).
        public static let unsupportedFormat = Code(.unsupportedFormat)
        /// The audio is not at 48 kHz.
        public static let unsupportedSampleRate = Code(.unsupportedSampleRate)
        /// Writing failed (disk full, I/O error).
        public static let writeFailed = Code(.writeFailed)

        public var description: String { base.rawValue }
    }

    public let code: Code
    /// The file concerned.
    public let path: String
    /// A sentence naming the problem, starting with the path.
    public let message: String

    public init(_ code: Code, path: String, _ detail: String) {
        self.code = code
        self.path = path
        self.message = "\(path): \(detail)"
    }

    public var description: String { message }
}
