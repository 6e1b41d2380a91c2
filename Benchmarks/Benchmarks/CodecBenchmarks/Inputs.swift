import BenchmarkSupport
import MediaEngine

/// The settings every benchmark pair uses, on both sides.
enum Settings {
    /// 20 ms mono frames at 32 kb/s, complexity 9, VoIP: a typical call.
    static var opus: Opus.Configuration {
        var configuration = Opus.Configuration()
        configuration.sampleRate = 48_000
        configuration.layout = .mono
        configuration.application = .voip
        configuration.bitrate = 32_000
        configuration.complexity = 9
        configuration.frameDuration = .ms20
        return configuration
    }

    /// Frames of audio encoded in turn: one second.
    static let opusFrameCount = 50

    /// 640x480 at 1 Mb/s, realtime, cpu-used -6, one thread.
    static func vp8(keyframeInterval: Int = 3_000) -> VP8.Configuration {
        var configuration = VP8.Configuration(width: 640, height: 480, bitrate: 1_000_000)
        configuration.frameRate = 30
        configuration.cpuUsed = -6
        configuration.threads = 1
        configuration.keyframeInterval = keyframeInterval
        configuration.deadline = .realtime
        return configuration
    }

    /// Frames of video encoded (or decoded) in turn: one second.
    static let vp8FrameCount = 30
}

/// Interleaved PCM for `frameCount` frames back to back, in memory that never moves.
final class PCMClip {
    let samples: UnsafeMutableBufferPointer<Int16>
    let samplesPerFrame: Int
    let frameCount: Int

    init(frameCount: Int, samplesPerFrame: Int) {
        self.frameCount = frameCount
        self.samplesPerFrame = samplesPerFrame
        samples = .allocate(capacity: frameCount * samplesPerFrame)
        samples.initialize(repeating: 0)
        var tone = ToneGenerator(.sine(440))
        tone.fill(samples)
    }

    deinit { samples.deallocate() }

    func frame(_ index: Int) -> UnsafeBufferPointer<Int16> {
        UnsafeBufferPointer(rebasing: samples[index * samplesPerFrame..<(index + 1) * samplesPerFrame])
    }
}

/// Test pattern frames rendered once. Timestamps are zero so that `VP8.Encoder` stamps
/// frame n at n * 3000 ticks of 90 kHz, exactly as the C baseline counts.
func renderTestPattern(count: Int, width: Int, height: Int) -> [VideoFrame] {
    var pattern = TestPattern(width: width, height: height, frameRate: 30)
    return (0..<count).map { _ in
        var frame = VideoFrame(width: width, height: height)
        pattern.render(into: &frame)
        frame.timestamp = .zero
        return frame
    }
}
