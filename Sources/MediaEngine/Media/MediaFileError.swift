/// An error reading or writing a media file. The message names the file and the
/// problem.
public struct MediaFileError: CodedError {
    /// What kind of failure this is. New kinds may be added without breaking callers.
    public typealias Code = ErrorCode<MediaFileError>

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
}

extension ErrorCode where Domain == MediaFileError {
    /// The file does not exist, is not readable, or cannot be created.
    public static var cannotOpen: Self { Self("cannot open") }
    /// The file is malformed or truncated.
    public static var corrupt: Self { Self("corrupt") }
    /// The file is valid but holds something the engine does not take (such as
    /// 4:4:4 video or 6-channel audio).
    public static var unsupportedFormat: Self { Self("unsupported format") }
    /// The audio is not at 48 kHz.
    public static var unsupportedSampleRate: Self { Self("unsupported sample rate") }
    /// Writing failed (disk full, I/O error).
    public static var writeFailed: Self { Self("write failed") }
}
