import Foundation

/// Synthetic audio for tests and demos without a microphone: a sine, a sum of tones, or
/// silence, at 48 kHz.
///
/// Phase is carried from frame to frame, so consecutive frames join without clicks.
public struct ToneGenerator: Sendable {
    /// What to generate.
    public enum Signal: Sendable, Hashable {
        /// One sine at a frequency in Hz.
        case sine(Double)
        /// Equal-amplitude sines at these frequencies, summed (scaled to stay in range).
        case multiTone([Double])
        /// Digital silence.
        case silence
    }

    public let signal: Signal
    public let layout: ChannelLayout
    /// Peak level as a fraction of full scale (0 to 1).
    public let amplitude: Double
    private var phases: [Double]
    private var increments: [Double]
    private var samplesGenerated: Int64 = 0

    /// Creates a generator.
    /// - Precondition: `amplitude` is within 0...1 and every frequency is within 0...24 kHz.
    public init(_ signal: Signal, layout: ChannelLayout = .mono, amplitude: Double = 0.5) {
        precondition((0...1).contains(amplitude), "amplitude must be within 0...1")
        self.signal = signal
        self.layout = layout
        self.amplitude = amplitude
        let frequencies: [Double] = switch signal {
        case .sine(let frequency): [frequency]
        case .multiTone(let frequencies): frequencies
        case .silence: []
        }
        precondition(frequencies.allSatisfy { (0...Double(AudioFrame.sampleRate / 2)).contains($0) },
                     "tone frequencies must be within 0...24000 Hz")
        increments = frequencies.map { 2 * Double.pi * $0 / Double(AudioFrame.sampleRate) }
        phases = Array(repeating: 0, count: frequencies.count)
    }

    /// Writes the next `buffer.count / layout.count` sampling instants into `buffer`
    /// (interleaved, same value in every channel); allocates nothing.
    public mutating func fill(_ buffer: UnsafeMutableBufferPointer<Int16>) {
        let channels = layout.count
        let instants = buffer.count / channels
        let scale = increments.isEmpty ? 0 : amplitude * 32_767 / Double(increments.count)
        for instant in 0..<instants {
            var value = 0.0
            for tone in phases.indices {
                value += sin(phases[tone])
                phases[tone] += increments[tone]
                if phases[tone] >= 2 * Double.pi { phases[tone] -= 2 * Double.pi }
            }
            let sample = Int16((value * scale).rounded())
            for channel in 0..<channels { buffer[instant * channels + channel] = sample }
        }
        samplesGenerated += Int64(instants)
    }

    /// The next frame of `samplesPerChannel` samples, timestamped from zero.
    public mutating func nextFrame(samplesPerChannel: Int = 960) -> AudioFrame {
        let timestamp = AudioFrame.duration(samplesPerChannel: Int(samplesGenerated))
        var frame = AudioFrame(layout: layout, samplesPerChannel: samplesPerChannel, timestamp: timestamp)
        frame.samples.withUnsafeMutableBufferPointer { fill($0) }
        return frame
    }

    /// `seconds` of signal as one frame.
    public mutating func clip(seconds: Double) -> AudioFrame {
        nextFrame(samplesPerChannel: Int(seconds * Double(AudioFrame.sampleRate)))
    }
}
