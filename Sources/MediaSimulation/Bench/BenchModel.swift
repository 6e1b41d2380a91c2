import MediaEngine

/// One Opus configuration to measure.
public struct OpusBenchCase: Sendable, Hashable, Codable {
    /// Target bitrate, b/s.
    public var bitrate: Int
    /// Encoder complexity 0...10.
    public var complexity: Int
    /// Frame duration in milliseconds (2.5 to 60).
    public var frameMilliseconds: Double
    /// `voip`, `audio` or `restricted-low-delay`.
    public var application: String

    public init(bitrate: Int, complexity: Int, frameMilliseconds: Double, application: String) {
        self.bitrate = bitrate
        self.complexity = complexity
        self.frameMilliseconds = frameMilliseconds
        self.application = application
    }
}

/// One VP8 configuration to measure.
public struct VP8BenchCase: Sendable, Hashable, Codable {
    public var width: Int
    public var height: Int
    /// Target bitrate, b/s.
    public var bitrate: Int
    /// libvpx cpu-used, -16...16.
    public var cpuUsed: Int
    public var frameRate: Int
    public var threads: Int

    public init(width: Int, height: Int, bitrate: Int, cpuUsed: Int, frameRate: Int, threads: Int) {
        self.width = width
        self.height = height
        self.bitrate = bitrate
        self.cpuUsed = cpuUsed
        self.frameRate = frameRate
        self.threads = threads
    }
}

/// What one Opus case measured.
public struct OpusBenchResult: Sendable, Hashable, Codable {
    public var setup: OpusBenchCase
    /// Channels of the input.
    public var channels: Int
    /// Seconds of audio coded.
    public var seconds: Double
    /// Audio seconds encoded per second of CPU-bound wall time (x real time).
    public var encodeSpeed: Double
    /// Audio seconds decoded per wall second (x real time).
    public var decodeSpeed: Double
    /// Decoded vs source after removing the codec delay, first channel, dB.
    public var snr: Double
    /// Pearson correlation of decoded vs source after delay alignment.
    public var correlation: Double
    /// Codec delay removed before comparing, in samples at 48 kHz.
    public var delaySamples: Int
    /// Bits sent per second of audio.
    public var achievedBitrate: Double
}

/// What one VP8 case measured.
public struct VP8BenchResult: Sendable, Hashable, Codable {
    public var setup: VP8BenchCase
    /// Frames fed to the encoder.
    public var frames: Int
    /// Frames the rate control dropped.
    public var droppedFrames: Int
    public var keyframes: Int
    /// Frames encoded per wall second.
    public var encodeSpeed: Double
    /// Frames decoded per wall second.
    public var decodeSpeed: Double
    /// Mean PSNR of decoded vs source (dB, libyuv I420Psnr).
    public var psnr: Double
    /// Mean SSIM of decoded vs source (libyuv I420Ssim).
    public var ssim: Double
    /// Bits sent per second of video.
    public var achievedBitrate: Double
}

/// Everything one `bench` run measured.
public struct BenchReport: Sendable, Hashable, Codable {
    /// Where the audio came from (`synthetic multi-tone` or a path).
    public var audioInput: String
    /// Where the video came from (`synthetic test pattern` or a path).
    public var videoInput: String
    public var opus: [OpusBenchResult]
    public var vp8: [VP8BenchResult]

    public init(audioInput: String, videoInput: String, opus: [OpusBenchResult] = [], vp8: [VP8BenchResult] = []) {
        self.audioInput = audioInput
        self.videoInput = videoInput
        self.opus = opus
        self.vp8 = vp8
    }
}
