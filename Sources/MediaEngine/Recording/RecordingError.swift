/// Why a WebM recording could not start, or stopped early. The message names the file
/// and the cause; a recording that fails keeps every cluster already written.
public struct RecordingError: Error, Sendable, Hashable, CustomStringConvertible {
    public enum Kind: Sendable, Hashable {
        /// The directory does not exist (the SDK never creates it).
        case missingDirectory
        /// The file cannot be created (permissions, a directory in the way, a bad name).
        case cannotCreate
        /// The disk filled up while writing.
        case diskFull
        /// Any other write failure.
        case writeFailed
        /// A recording of that user is already running.
        case alreadyRecording
        /// No recording of that user is running.
        case notRecording
        /// Nothing to record: the user sends no media in this call.
        case nothingToRecord
        /// Bad options (an extension other than .webm, a video bitrate out of range).
        case invalidOptions
    }

    public let kind: Kind
    public let message: String

    public init(_ kind: Kind, _ message: String) {
        self.kind = kind
        self.message = message
    }

    public var description: String { message }
}
