/// A capture or playback device failed: it does not exist, is busy, refuses access,
/// cannot do any format the engine takes, or went away mid-stream. The message names
/// the device and the reason.
public struct DeviceError: CodedError {
    public typealias Code = ErrorCode<DeviceError>

    public let code: Code
    /// The device as the user named it (`default`, `hw:1,0`, `/dev/video0`).
    public let device: String
    /// "DEVICE: reason".
    public let message: String

    public init(_ code: Code, device: String, _ reason: String) {
        self.code = code
        self.device = device
        self.message = "\(device): \(reason)"
    }
}

extension ErrorCode where Domain == DeviceError {
    /// No such device (unknown ALSA name, missing /dev/videoN).
    public static var notFound: Self { Self("not found") }
    /// Another program holds the device (EBUSY).
    public static var busy: Self { Self("busy") }
    /// The user may not open the device (EACCES, EPERM).
    public static var permissionDenied: Self { Self("permission denied") }
    /// The device offers no format, rate or channel count the engine can take.
    public static var unsupportedFormat: Self { Self("unsupported format") }
    /// The device went away mid-stream (ENODEV, unplugged).
    public static var disconnected: Self { Self("disconnected") }
    /// Any other failure of a device call.
    public static var ioFailed: Self { Self("I/O failed") }
}

/// Where decoded or captured audio goes: a playback device, a file, or nowhere.
public protocol AudioSink: AnyObject {
    /// Mono or stereo.
    var layout: ChannelLayout { get }
    /// What the sink is, for logs and errors.
    var name: String { get }
    /// Plays or stores interleaved 48 kHz samples.
    func write(_ samples: UnsafeBufferPointer<Int16>) throws
    /// Flushes and releases the sink.
    func close() throws
    /// For a loudspeaker: how long audio written now waits before it is heard (what the
    /// device still holds). Nil for sinks that play nothing aloud (files, the null PCM):
    /// there is no echo to cancel.
    var playbackDelay: Duration? { get }
}

extension AudioSink {
    public var playbackDelay: Duration? { nil }
}

/// Discards audio, for headless runs.
public final class NullAudioSink: AudioSink {
    public let layout: ChannelLayout
    public let name = "null"
    /// Samples per channel written.
    public private(set) var samplesWritten = 0

    public init(layout: ChannelLayout = .mono) { self.layout = layout }

    public func write(_ samples: UnsafeBufferPointer<Int16>) throws { samplesWritten += samples.count / layout.count }
    public func close() throws {}
}

/// Keeps what would be played in a WAV file (48 kHz, 16-bit): a headless participant's
/// record of what it heard.
public final class WAVFileSink: AudioSink {
    public let layout: ChannelLayout
    public let name: String
    private let writer: WAVWriter

    /// Creates the file.
    /// - Throws: When it cannot be created (the error names the path).
    public init(path: String, layout: ChannelLayout = .mono) throws {
        self.layout = layout
        name = "file:\(path)"
        writer = try WAVWriter(path: path, layout: layout)
    }

    public func write(_ samples: UnsafeBufferPointer<Int16>) throws { try writer.write(samples) }

    public func close() throws { try writer.close() }
}
