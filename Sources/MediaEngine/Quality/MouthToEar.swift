import Foundation

/// A tone with markers, for measuring mouth-to-ear delay through a whole call: a quiet
/// sine (amplitude `base`) whose level jumps to `marker` for `markerLength` samples at the
/// start of every `period`. A marker's onset is unmistakable after the codec, the jitter
/// buffer's stretching and packet loss, and the signal stays continuous for correlation.
public struct MarkedTone: Sendable, Hashable {
    public var frequency: Double
    public var base = 0.1
    public var marker = 0.6
    /// Samples between marker onsets (1 s).
    public var period = 48_000
    /// Samples each marker lasts (100 ms).
    public var markerLength = 4_800

    public init(frequency: Double) { self.frequency = frequency }

    /// Sample `index` (from 0 at the start of the signal).
    public func sample(at index: Int) -> Int16 {
        let amplitude = index % period < markerLength ? marker : base
        let phase = 2 * Double.pi * frequency * Double(index) / Double(AudioFrame.sampleRate)
        return Int16((amplitude * 32_767 * sin(phase)).rounded())
    }

    /// The level an onset detector should trip at: between the base and the marker.
    public var threshold: Int16 { Int16((base + marker) / 2 * 32_767) }
}

/// Sends a `MarkedTone` and notes, on the monotonic clock, when each marker's first
/// sample was read by the sender (the "mouth" time).
public final class MarkedToneSource: AudioSource, Sendable {
    public let tone: MarkedTone
    public var name: String { "marked-tone:\(Int(tone.frequency))" }
    public var layout: ChannelLayout { .mono }
    private let state = Locked<(position: Int, onsets: [ContinuousClock.Instant])>((0, []))

    public init(_ tone: MarkedTone) { self.tone = tone }

    public func read(into frame: inout AudioFrame) throws -> Bool {
        let now = ContinuousClock.now
        let start = state.withLock { state in
            defer { state.position += frame.samples.count }
            return state.position
        }
        for offset in frame.samples.indices {
            let index = start + offset
            frame.samples[offset] = tone.sample(at: index)
            if index % tone.period == 0 {
                let onset = now + .nanoseconds(Int64(offset) * 1_000_000_000 / Int64(AudioFrame.sampleRate))
                state.withLock { $0.onsets.append(onset) }
            }
        }
        return true
    }

    /// When each marker left, in order.
    public var markerTimes: [ContinuousClock.Instant] { state.withLock { $0.onsets } }
}

/// Finds marker onsets in played audio (the "ear" time): the first sample above the
/// threshold after at least `quiet` samples below it.
public struct OnsetDetector: Sendable {
    public let threshold: Int16
    public let quiet: Int
    private var quietRun: Int
    public private(set) var onsets: [ContinuousClock.Instant] = []

    public init(threshold: Int16, quiet: Int = 24_000) {
        self.threshold = threshold
        self.quiet = quiet
        quietRun = quiet
    }

    /// Feeds a block that starts playing at `time`.
    public mutating func add(_ samples: UnsafeBufferPointer<Int16>, playedAt time: ContinuousClock.Instant) {
        for (offset, sample) in samples.enumerated() {
            if sample.magnitude > threshold.magnitude {
                if quietRun >= quiet {
                    onsets.append(time + .nanoseconds(Int64(offset) * 1_000_000_000 / Int64(AudioFrame.sampleRate)))
                }
                quietRun = 0
            } else {
                quietRun += 1
            }
        }
    }

    /// Delay of each onset after the latest marker sent before it (within `limit`).
    public static func delays(markers: [ContinuousClock.Instant], onsets: [ContinuousClock.Instant],
                              limit: Duration = .seconds(1)) -> [Duration] {
        onsets.compactMap { onset in
            guard let marker = markers.last(where: { $0 <= onset }), onset - marker <= limit else { return nil }
            return onset - marker
        }
    }
}

/// Matches decoded pictures to the source sequence they came from (a deterministic
/// pattern), allowing for dropped frames: each picture is compared with the next
/// `window` source frames after the previous match, and its PSNR is the best match's.
/// Keeps `window` source frames, not the whole sequence.
public struct SequenceMatcher {
    private var source: () -> VideoFrame
    private var upcoming: [VideoFrame] = []
    private let window: Int
    public private(set) var psnrs: [Double] = []

    public init(window: Int = 8, source: @escaping () -> VideoFrame) {
        self.window = window
        self.source = source
    }

    public mutating func add(_ picture: VideoFrame) {
        while upcoming.count < window { upcoming.append(source()) }
        var best = (index: 0, psnr: -Double.infinity)
        for (index, candidate) in upcoming.enumerated() {
            let value = VideoQuality.psnr(candidate, picture)
            if value > best.psnr { best = (index, value) }
        }
        psnrs.append(best.psnr)
        upcoming.removeFirst(best.index + 1)
    }

    public var meanPSNR: Double { psnrs.isEmpty ? 0 : psnrs.reduce(0, +) / Double(psnrs.count) }
}
