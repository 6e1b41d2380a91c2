import Foundation
import MediaEngine

/// Real speech for the audio-processing tests: espeak-ng (Debian) speaks sentences, which
/// are resampled to 48 kHz and set to a level.
public enum Speech {
    /// Sentences read for a far end and a near end: different texts, so neither predicts the other.
    public static let farText = """
        Every serious stack processes captured audio before encoding it. The far end hears itself late, \
        which makes a call unusable. Echo cancellation learns the room from what the speaker plays, \
        then removes that echo from what the microphone captures. Noise suppression and gain control follow.
        """
    public static let nearText = """
        Good morning, this is the near end speaking in a small room. I am reading a short paragraph \
        about the weather, which has been cold and wet all week. Tomorrow should be brighter, with some \
        sunshine in the afternoon and a light wind from the west.
        """

    /// `text` spoken by espeak-ng in `voice` at `wordsPerMinute`, mono 48 kHz, scaled so its
    /// active part (the 10 ms blocks within 40 dB of the loudest) has RMS `level` dBFS.
    public static func say(_ text: String, voice: String = "en-us", wordsPerMinute: Int = 160, level: Double = -20) throws -> AudioFrame {
        let path = FileManager.default.temporaryDirectory.appendingPathComponent("speech-\(UUID().uuidString).wav").path
        defer { try? FileManager.default.removeItem(atPath: path) }
        let run = try Tool.run("espeak-ng", ["-v", voice, "-s", "\(wordsPerMinute)", "-w", path, text])
        guard run.status == 0 else { throw ToolFailure("espeak-ng failed: \(run.stderr)") }
        var frame = try AudioFile.read(path: path, resampling: true)
        let active = activeLevel(frame.samples)
        let gain = pow(10, (level - active) / 20)
        for index in frame.samples.indices {
            frame.samples[index] = Int16(max(-32_768, min(32_767, (Double(frame.samples[index]) * gain).rounded())))
        }
        return frame
    }

    /// `frame` repeated or cut to `seconds`, starting `offset` seconds late (silence before).
    public static func fit(_ frame: AudioFrame, seconds: Double, offset: Double = 0) -> AudioFrame {
        let count = Int(seconds * Double(AudioFrame.sampleRate))
        let start = Int(offset * Double(AudioFrame.sampleRate))
        var samples = [Int16](repeating: 0, count: count)
        guard !frame.samples.isEmpty else { return AudioFrame(layout: .mono, samples: samples) }
        for index in start..<count { samples[index] = frame.samples[(index - start) % frame.samples.count] }
        return AudioFrame(layout: .mono, samples: samples)
    }

    /// Per 10 ms block: whether it is active speech (within 40 dB of the loudest block and
    /// above -60 dBFS).
    public static func activity(_ samples: [Int16]) -> [Bool] {
        let levels = blockLevels(samples)
        let loudest = levels.max() ?? -150
        return levels.map { $0 > max(loudest - 40, -60) }
    }

    /// RMS dBFS of each 10 ms block.
    public static func blockLevels(_ samples: [Int16]) -> [Double] {
        stride(from: 0, to: samples.count, by: 480).map { start in
            let block = samples[start..<min(samples.count, start + 480)]
            return 20 * log10(max(rms(block) / 32_768, 1e-8))
        }
    }

    /// RMS dBFS over the active blocks.
    public static func activeLevel(_ samples: [Int16]) -> Double {
        level(samples, blocks: activity(samples))
    }

    /// RMS dBFS of `samples` over the 10 ms blocks marked true (-150 for none).
    public static func level(_ samples: [Int16], blocks: [Bool]) -> Double {
        var sum = 0.0
        var count = 0
        for (block, chosen) in blocks.enumerated() where chosen {
            for sample in samples[min(samples.count, block * 480)..<min(samples.count, block * 480 + 480)] {
                sum += Double(sample) * Double(sample)
                count += 1
            }
        }
        return count == 0 ? -150 : 10 * log10(max(sum / Double(count), 1e-6) / (32_768 * 32_768))
    }
}
