/// Maps an RTP timestamp of one stream to the sender's wall clock, from its latest RTCP
/// sender report (NTP time and RTP timestamp taken at the same instant).
public struct SenderClockMapping: Sendable, Hashable {
    public let ntp: UInt64
    public let rtpTimestamp: UInt32
    public let clockRate: Int

    public init(ntp: UInt64, rtpTimestamp: UInt32, clockRate: Int) {
        self.ntp = ntp
        self.rtpTimestamp = rtpTimestamp
        self.clockRate = clockRate
    }

    /// Sender wall-clock time (seconds since 1900) at which media with `timestamp` was
    /// captured. Timestamps within half the 32-bit range of the report's are taken as the
    /// nearest ones, so wrap is handled.
    public func captureTime(of timestamp: UInt32) -> Double {
        let reportSeconds = Double(ntp >> 32) + Double(ntp & 0xFFFF_FFFF) / 4_294_967_296
        let delta = Double(Int32(bitPattern: timestamp &- rtpTimestamp)) / Double(clockRate)
        return reportSeconds + delta
    }
}

/// Lip sync of a remote audio and video stream (the receiver's side): measures how long
/// each stream takes from capture (sender wall clock, through the SR mapping) to playout
/// here, and says how much extra delay to give the faster one so both play with the same
/// end-to-end delay. Adjustments move in bounded steps so the change is not audible or
/// visible, and are limited to `maximumExtraDelay`.
///
/// Pure: the caller feeds playout events with its own clock.
public struct LipSync: Sendable, Hashable {
    /// Largest extra delay ever asked of one stream.
    public var maximumExtraDelay: Duration = .seconds(1)
    /// Most the extra delay moves per `update`.
    public var step: Duration = .milliseconds(40)
    /// Offsets below this are left alone.
    public var tolerance: Duration = .milliseconds(20)
    public private(set) var audioMapping: SenderClockMapping?
    public private(set) var videoMapping: SenderClockMapping?
    /// Smoothed capture-to-playout delay of each stream, seconds (sender clock to local clock,
    /// so it includes an unknown constant clock offset common to both).
    public private(set) var audioDelay: Double?
    public private(set) var videoDelay: Double?
    /// Extra delay currently asked of the audio (the jitter buffer's minimum delay).
    public private(set) var audioExtraDelay: Duration = .zero
    /// Extra delay currently asked of the video (held before rendering).
    public private(set) var videoExtraDelay: Duration = .zero

    public init() {}

    public mutating func audioSenderReport(_ mapping: SenderClockMapping) { audioMapping = mapping }
    public mutating func videoSenderReport(_ mapping: SenderClockMapping) { videoMapping = mapping }

    /// Audio with `timestamp` was played at `localTime` (seconds on the local wall clock).
    public mutating func audioPlayed(timestamp: UInt32, localTime: Double) {
        guard let audioMapping else { return }
        audioDelay = Self.smooth(audioDelay, localTime - audioMapping.captureTime(of: timestamp))
    }

    /// The video frame with `timestamp` was shown at `localTime`.
    public mutating func videoShown(timestamp: UInt32, localTime: Double) {
        guard let videoMapping else { return }
        videoDelay = Self.smooth(videoDelay, localTime - videoMapping.captureTime(of: timestamp))
    }

    /// How far video plays behind audio (positive: video late), once both are measured.
    public var offset: Duration? {
        guard let audioDelay, let videoDelay else { return nil }
        return .nanoseconds(Int64((videoDelay - audioDelay) * 1e9))
    }

    /// Moves the extra delays one step toward equal end-to-end delay. Call about once a
    /// second; returns the new (audio, video) extra delays.
    @discardableResult
    public mutating func update() -> (audio: Duration, video: Duration) {
        guard let offset else { return (audioExtraDelay, videoExtraDelay) }
        if abs(offset / .seconds(1)) < tolerance / .seconds(1) { return (audioExtraDelay, videoExtraDelay) }
        // Delays already added are part of the measured delays; first take back any
        // extra delay on the late stream, then add to the early one.
        let correction = min(max(offset, .zero - step), step)
        if correction > .zero {
            // Video late: remove video extra delay first, then delay audio.
            let fromVideo = min(videoExtraDelay, correction)
            videoExtraDelay -= fromVideo
            audioExtraDelay = min(maximumExtraDelay, audioExtraDelay + (correction - fromVideo))
        } else {
            let late = .zero - correction
            let fromAudio = min(audioExtraDelay, late)
            audioExtraDelay -= fromAudio
            videoExtraDelay = min(maximumExtraDelay, videoExtraDelay + (late - fromAudio))
        }
        // Calls about a second apart let the smoothed delays (1/8 per sample, dozens of
        // samples a second) reflect this step before the next one.
        return (audioExtraDelay, videoExtraDelay)
    }

    private static func smooth(_ old: Double?, _ sample: Double) -> Double {
        guard let old else { return sample }
        return old + (sample - old) / 8
    }
}
