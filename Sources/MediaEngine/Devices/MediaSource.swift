import CYUV
/// Where captured or synthetic audio comes from. Sources deliver 48 kHz frames of a
/// caller-chosen length and may end (files).
public protocol AudioSource: AnyObject {
    /// Mono or stereo.
    var layout: ChannelLayout { get }
    /// What the source is, for logs and errors (`sine:440`, a path, a device name).
    var name: String { get }
    /// Fills `frame.samples` (whose length the caller chose) with the next audio.
    /// - Returns: false at the end of the source.
    func read(into frame: inout AudioFrame) throws -> Bool
    /// For a microphone: how long ago the first sample of the frame just read was captured
    /// (what waited in the device and in queues). Nil for sources that are not live
    /// devices (files, tones): the capture path processes audio only from microphones.
    var captureDelay: Duration? { get }
}

extension AudioSource {
    public var captureDelay: Duration? { nil }
}

/// Where video comes from. Frames are I420 at a fixed size and nominal rate.
public protocol VideoSource: AnyObject {
    var width: Int { get }
    var height: Int { get }
    /// Nominal frames per second.
    var frameRate: Int { get }
    var name: String { get }
    /// Fills `frame` with the next picture.
    /// - Returns: false at the end of the source.
    func read(into frame: inout VideoFrame) throws -> Bool
}

/// A bad source description given by the user.
public struct SourceError: Error, Sendable, Hashable, CustomStringConvertible {
    public let message: String
    public init(_ message: String) { self.message = message }
    public var description: String { message }
}

/// Builds sources from the spellings the CLI takes.
public enum MediaSources {
    /// `sine:FREQ`, `tones:F1,F2,...`, `silence`, `file:PATH` (48 kHz WAV, FLAC, ...) or
    /// `alsa:NAME` (a capture PCM: `default`, `hw:1,0`, `plughw:CARD=x`, a name from
    /// asound.conf), captured in 20 ms frames.
    public static func audio(_ spec: String, layout: ChannelLayout = .mono) throws -> any AudioSource {
        let (kind, argument) = split(spec)
        switch kind {
        case "alsa":
            guard let argument, !argument.isEmpty else {
                throw SourceError("audio source '\(spec)': alsa needs a PCM name, as in alsa:default or alsa:hw:1,0")
            }
            var options = ALSACapture.Options()
            options.layout = layout
            return try ALSACapture(name: argument, options: options)
        case "sine":
            guard let argument, let frequency = Double(argument), (1...20_000).contains(frequency) else {
                throw SourceError("audio source '\(spec)': sine needs a frequency of 1 to 20000 Hz, as in sine:440")
            }
            return ToneSource(ToneGenerator(.sine(frequency)), name: spec)
        case "tones":
            let frequencies = argument?.split(separator: ",").compactMap { Double($0) } ?? []
            guard !frequencies.isEmpty, frequencies.count == argument?.split(separator: ",").count,
                  frequencies.allSatisfy({ (1...20_000).contains($0) }) else {
                throw SourceError("audio source '\(spec)': tones needs frequencies of 1 to 20000 Hz, as in tones:440,880")
            }
            return ToneSource(ToneGenerator(.multiTone(frequencies)), name: spec)
        case "silence" where argument == nil:
            return ToneSource(ToneGenerator(.silence), name: spec)
        case "file":
            guard let argument, !argument.isEmpty else { throw SourceError("audio source '\(spec)': file needs a path") }
            return try AudioFileSource(path: argument)
        default:
            throw SourceError("audio source '\(spec)' is not one of sine:FREQ, tones:F1,F2, silence, file:PATH, alsa:NAME")
        }
    }

    /// `null` (discard), `alsa:NAME` (a playback PCM) or `file:PATH.wav` (what would be
    /// played, kept in a WAV file: a headless bot's ears), for decoded audio.
    public static func audioSink(_ spec: String, layout: ChannelLayout = .mono) throws -> any AudioSink {
        let (kind, argument) = split(spec)
        switch kind {
        case "null" where argument == nil:
            return NullAudioSink(layout: layout)
        case "file":
            guard let argument, argument.hasSuffix(".wav") else {
                throw SourceError("audio sink '\(spec)': file needs a .wav path, as in file:heard.wav")
            }
            return try WAVFileSink(path: argument, layout: layout)
        case "alsa":
            guard let argument, !argument.isEmpty else {
                throw SourceError("audio sink '\(spec)': alsa needs a PCM name, as in alsa:default")
            }
            var options = ALSAPlayback.Options()
            options.layout = layout
            return try ALSAPlayback(name: argument, options: options)
        default:
            throw SourceError("audio sink '\(spec)' is not one of null, alsa:NAME, file:PATH.wav")
        }
    }

    /// `testsrc[:WxH[@FPS]]`, `color:RRGGBB[:WxH[@FPS]]` (a solid picture),
    /// `v4l2:/dev/videoN[:WxH[@FPS]]` or `file:PATH.y4m`.
    /// - Parameter io: the V4L2 ioctl layer (tests pass a scripted device).
    public static func video(_ spec: String, io: any V4L2DeviceIO = SystemV4L2IO()) throws -> any VideoSource {
        let (kind, argument) = split(spec)
        switch kind {
        case "testsrc":
            let (width, height, rate) = try sizeAndRate(argument, spec: spec, example: "testsrc:640x480@30")
            return TestPatternSource(TestPattern(width: width, height: height, frameRate: rate), name: spec)
        case "color":
            let parts = argument.map { $0.split(separator: ":", maxSplits: 1).map(String.init) } ?? []
            guard let hex = parts.first, hex.count == 6, let rgb = UInt32(hex, radix: 16) else {
                throw SourceError("video source '\(spec)': color needs RRGGBB in hex, as in color:FF0000:640x360@30")
            }
            let (width, height, rate) = try sizeAndRate(parts.count > 1 ? parts[1] : nil, spec: spec, example: "color:FF0000:640x360@30")
            return ColorSource(red: UInt8(rgb >> 16), green: UInt8((rgb >> 8) & 0xFF), blue: UInt8(rgb & 0xFF),
                               width: width, height: height, frameRate: rate, name: spec)
        case "v4l2":
            guard let argument, argument.hasPrefix("/") else {
                throw SourceError("video source '\(spec)': v4l2 needs a device path, as in v4l2:/dev/video0:1280x720@30")
            }
            let path = argument.split(separator: ":", maxSplits: 1).first.map(String.init) ?? argument
            let size = argument.count > path.count ? String(argument.dropFirst(path.count + 1)) : nil
            let (width, height, rate) = try sizeAndRate(size, spec: spec, example: "v4l2:/dev/video0:1280x720@30")
            return try V4L2Capture(path: path, width: width, height: height, frameRate: rate, io: io)
        case "file":
            guard let argument, !argument.isEmpty else { throw SourceError("video source '\(spec)': file needs a path") }
            return try Y4MFileSource(path: argument)
        default:
            throw SourceError("video source '\(spec)' is not one of testsrc[:WxH[@FPS]], color:RRGGBB[:WxH[@FPS]], v4l2:/dev/videoN[:WxH[@FPS]], file:PATH.y4m")
        }
    }

    /// `WxH` or `WxH@FPS` (default 640x480@30).
    private static func sizeAndRate(_ text: String?, spec: String, example: String) throws -> (Int, Int, Int) {
        guard let text else { return (640, 480, 30) }
        let parts = text.split(separator: "@", omittingEmptySubsequences: false)
        guard parts.count <= 2, let size = SpecValue.resolution(String(parts[0])),
              size.width % 2 == 0, size.height % 2 == 0, size.width <= 4_096, size.height <= 4_096,
              parts.count == 1 || Int(parts[1]).map({ (1...120).contains($0) }) == true else {
            throw SourceError("video source '\(spec)': use WxH@FPS with even sizes up to 4096 and 1 to 120 fps, as in \(example)")
        }
        return (size.width, size.height, parts.count == 2 ? Int(parts[1])! : 30)
    }

    private static func split(_ spec: String) -> (String, String?) {
        guard let colon = spec.firstIndex(of: ":") else { return (spec, nil) }
        return (String(spec[..<colon]), String(spec[spec.index(after: colon)...]))
    }
}

/// A `ToneGenerator` as an endless source.
public final class ToneSource: AudioSource {
    private var generator: ToneGenerator
    public let name: String
    public var layout: ChannelLayout { generator.layout }

    public init(_ generator: ToneGenerator, name: String) {
        self.generator = generator
        self.name = name
    }

    public func read(into frame: inout AudioFrame) throws -> Bool {
        frame.samples.withUnsafeMutableBufferPointer { generator.fill($0) }
        return true
    }
}

/// A whole audio file, read once, served frame by frame; the last frame is padded with
/// silence.
public final class AudioFileSource: AudioSource {
    private let audio: AudioFrame
    private var position = 0
    public let name: String
    public var layout: ChannelLayout { audio.layout }

    public init(path: String) throws {
        audio = try AudioFile.read(path: path)
        name = path
    }

    public func read(into frame: inout AudioFrame) throws -> Bool {
        guard position < audio.samples.count else { return false }
        let count = min(frame.samples.count, audio.samples.count - position)
        frame.samples.withUnsafeMutableBufferPointer { out in
            audio.samples.withUnsafeBufferPointer { source in
                for index in 0..<count { out[index] = source[position + index] }
                for index in count..<out.count { out[index] = 0 }
            }
        }
        position += count
        return true
    }
}

/// The moving test pattern as an endless source.
public final class TestPatternSource: VideoSource {
    private var pattern: TestPattern
    public let name: String
    public var width: Int { pattern.width }
    public var height: Int { pattern.height }
    public var frameRate: Int { pattern.frameRate }

    public init(_ pattern: TestPattern, name: String) {
        self.pattern = pattern
        self.name = name
    }

    public func read(into frame: inout VideoFrame) throws -> Bool {
        if frame.width != width || frame.height != height { frame.reshape(width: width, height: height) }
        pattern.render(into: &frame)
        return true
    }
}

/// One solid colour, every frame: layouts are easy to check by eye and by pixel
/// averages. The colour is converted to BT.601 limited-range YUV by libyuv once.
public final class ColorSource: VideoSource {
    public let name: String
    public let width: Int
    public let height: Int
    public let frameRate: Int
    /// The colour's Y, U and V.
    public let yuv: (y: UInt8, u: UInt8, v: UInt8)
    private var index = 0

    public init(red: UInt8, green: UInt8, blue: UInt8, width: Int, height: Int, frameRate: Int, name: String) {
        precondition(width > 0 && height > 0 && frameRate > 0, "a colour source needs a positive size and rate")
        self.name = name
        self.width = width
        self.height = height
        self.frameRate = frameRate
        // A 2x2 RGB picture (libyuv's RAW: R, G, B in memory) to one 4:2:0 sample.
        let raw = [UInt8](repeating: 0, count: 12).enumerated().map { [red, green, blue][$0.offset % 3] }
        var y = [UInt8](repeating: 0, count: 4)
        var u: UInt8 = 128
        var v: UInt8 = 128
        raw.withUnsafeBufferPointer { source in
            y.withUnsafeMutableBufferPointer { luma in
                _ = RAWToI420(source.baseAddress, 6, luma.baseAddress, 2, &u, 1, &v, 1, 2, 2)
            }
        }
        yuv = (y[0], u, v)
    }

    public func read(into frame: inout VideoFrame) throws -> Bool {
        if frame.width != width || frame.height != height { frame.reshape(width: width, height: height) }
        frame.timestamp = .nanoseconds(Int64(index) * 1_000_000_000 / Int64(frameRate))
        index += 1
        let (strideY, strideUV) = (Int32(frame.strideY), Int32(frame.strideUV))
        let (w, h) = (Int32(width), Int32(height))
        let color = yuv
        _ = frame.withMutablePlanes { y, u, v in
            I420Rect(y.baseAddress, strideY, u.baseAddress, strideUV, v.baseAddress, strideUV, 0, 0, w, h,
                     Int32(color.y), Int32(color.u), Int32(color.v))
        }
        return true
    }
}

/// A Y4M file, frame by frame.
public final class Y4MFileSource: VideoSource {
    private let reader: Y4M.Reader
    public var name: String { reader.path }
    public var width: Int { reader.width }
    public var height: Int { reader.height }
    /// The file's rate, rounded to whole frames per second (at least 1).
    public var frameRate: Int { max(1, Int((Double(reader.frameRate.numerator) / Double(reader.frameRate.denominator)).rounded())) }

    public init(path: String) throws {
        reader = try Y4M.Reader(path: path)
    }

    public func read(into frame: inout VideoFrame) throws -> Bool {
        try reader.read(into: &frame)
    }
}
