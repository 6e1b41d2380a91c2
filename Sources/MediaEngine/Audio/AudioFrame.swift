/// The channel layouts the engine carries.
public enum ChannelLayout: Int, Sendable, Hashable, CaseIterable, CustomStringConvertible {
    case mono = 1
    case stereo = 2

    /// Samples per sampling instant.
    public var count: Int { rawValue }

    public var description: String { self == .mono ? "mono" : "stereo" }
}

/// A block of 48 kHz audio: interleaved signed 16-bit samples and the time it was
/// captured.
///
/// Value type; copying shares storage until one copy is written (copy on write), so
/// passing frames between stages does not copy samples.
public struct AudioFrame: Sendable, Equatable {
    /// The engine's one audio clock rate. Devices and files at other rates are converted
    /// at the edge.
    public static let sampleRate = 48_000

    /// Mono or stereo.
    public var layout: ChannelLayout
    /// Interleaved samples (`L R L R ...` for stereo).
    public var samples: [Int16]
    /// Capture time of the first sample, on the capturing clock. Synthetic and file
    /// sources start at zero and advance by the frame duration.
    public var timestamp: Duration

    /// Creates a frame.
    /// - Precondition: `samples.count` is a multiple of the channel count.
    public init(layout: ChannelLayout, samples: [Int16], timestamp: Duration = .zero) {
        precondition(samples.count % layout.count == 0, "interleaved samples must fill every channel")
        self.layout = layout
        self.samples = samples
        self.timestamp = timestamp
    }

    /// A silent frame of `samplesPerChannel` samples per channel.
    public init(layout: ChannelLayout, samplesPerChannel: Int, timestamp: Duration = .zero) {
        self.init(layout: layout, samples: [Int16](repeating: 0, count: samplesPerChannel * layout.count),
                  timestamp: timestamp)
    }

    /// Samples per channel.
    public var samplesPerChannel: Int { samples.count / layout.count }

    /// How long the frame plays.
    public var duration: Duration { AudioFrame.duration(samplesPerChannel: samplesPerChannel) }

    /// The duration of `samplesPerChannel` samples at 48 kHz.
    public static func duration(samplesPerChannel: Int) -> Duration {
        .nanoseconds(Int64(samplesPerChannel) * 1_000_000_000 / Int64(sampleRate))
    }
}
