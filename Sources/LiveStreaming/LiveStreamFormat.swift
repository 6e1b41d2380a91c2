import MediaEngine

/// How a URL output that failed is retried: after `initialDelay`, then each delay
/// `multiplier` times the last, up to `maximumDelay`, for as long as the output exists
/// and is enabled. A successful connection starts the sequence over. Files are not
/// retried.
public struct LiveRetryPolicy: Sendable, Hashable {
    /// The wait before the first retry.
    public var initialDelay: Duration
    /// The longest wait between retries.
    public var maximumDelay: Duration
    /// How much each wait grows.
    public var multiplier: Double

    /// 0.25 s, doubling, at most 2 s.
    public static let `default` = LiveRetryPolicy(initialDelay: .milliseconds(250), maximumDelay: .seconds(2), multiplier: 2)

    /// Creates a policy.
    public init(initialDelay: Duration, maximumDelay: Duration, multiplier: Double) {
        self.initialDelay = initialDelay
        self.maximumDelay = maximumDelay
        self.multiplier = multiplier
    }

    /// The wait before retry number `retry` (0 for the first).
    public func delay(retry: Int) -> Duration {
        var delay = initialDelay
        for _ in 0..<min(retry, 64) {
            delay = delay * max(multiplier, 1)
            if delay >= maximumDelay { break }
        }
        return min(delay, maximumDelay)
    }
}

/// What one output has done since it was added (or switched to its current target).
public struct LiveOutputStatistics: Sendable, Hashable {
    /// Its current state.
    public var status: LiveStreamStatus = .initial
    /// Encoded packets handed to the muxer, audio and video.
    public var packetsWritten = 0
    /// Bytes of those packets (payload, before container overhead).
    public var bytesWritten = 0
    /// Video key frames among them.
    public var videoKeyframes = 0
    /// Connection attempts after the first (retries after failures, reconnects after
    /// being re-enabled).
    public var reconnects = 0
    /// Packets dropped because the output's queue was full (the output then waits for
    /// the next key frame).
    public var droppedPackets = 0
    /// Time spent connected, over all connections.
    public var connectedDuration: Duration = .zero

    /// Creates zeroed statistics.
    public init() {}
}

/// The picture, sound and rates of a live stream. Every output of a streamer shares it.
public struct LiveStreamFormat: Sendable, Hashable {
    /// Canvas width in pixels (even).
    public var width = 1280
    /// Canvas height in pixels (even).
    public var height = 720
    /// Frames per second the composing thread submits.
    public var frameRate = 30
    /// Video bit rate, bits per second (constant for H.264).
    public var videoBitrate = 2_500_000
    /// Audio bit rate, bits per second.
    public var audioBitrate = 128_000
    /// Sample rate of the submitted PCM and of the encoded audio (48 kHz suits AAC and Opus).
    public var sampleRate = 48_000
    /// Channels of the submitted PCM (1 or 2, interleaved).
    public var channels = 1
    /// Time between video key frames.
    public var keyframeInterval: Duration = .seconds(2)

    /// 1280x720 at 30 fps, 2.5 Mbit/s video, 128 kbit/s mono 48 kHz audio, a key frame
    /// every 2 s.
    public init() {}

    /// Video frames between key frames.
    var keyframeFrames: Int {
        max(1, Int((Double(frameRate) * Double(keyframeInterval.components.seconds) +
                    Double(frameRate) * Double(keyframeInterval.components.attoseconds) / 1e18).rounded()))
    }

    /// Why this format cannot be encoded, or nil.
    var problem: String? {
        if width <= 0 || height <= 0 || width % 2 != 0 || height % 2 != 0 { return "the canvas \(width)x\(height) is not a positive even size" }
        if frameRate <= 0 || frameRate > 240 { return "the frame rate \(frameRate) is not in 1...240" }
        if videoBitrate < 10_000 || audioBitrate < 6_000 { return "the bit rates \(videoBitrate)/\(audioBitrate) are too low" }
        if sampleRate != 48_000 { return "the sample rate \(sampleRate) is not 48000 (what AAC and Opus share)" }
        if !(1...2).contains(channels) { return "\(channels) channels (1 or 2 are supported)" }
        if keyframeInterval <= .zero { return "the key frame interval \(keyframeInterval) is not positive" }
        return nil
    }
}
