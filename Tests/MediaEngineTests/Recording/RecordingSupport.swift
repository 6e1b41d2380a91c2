import Foundation
import MediaEngine
import TestSupport

/// A tone that ends after `seconds`.
final class FiniteTone: AudioSource {
    let layout = ChannelLayout.mono
    let name = "finite tone"
    private var generator: ToneGenerator
    private var remaining: Int

    init(_ signal: ToneGenerator.Signal, seconds: Double) {
        generator = ToneGenerator(signal)
        remaining = Int(seconds * 48_000)
    }

    /// The samples this source sends, for comparison.
    static func samples(_ signal: ToneGenerator.Signal, seconds: Double) -> [Int16] {
        var generator = ToneGenerator(signal)
        return generator.clip(seconds: seconds).samples
    }

    func read(into frame: inout AudioFrame) throws -> Bool {
        guard remaining >= frame.samples.count else { return false }
        frame.samples.withUnsafeMutableBufferPointer { generator.fill($0) }
        remaining -= frame.samples.count
        return true
    }
}

/// A moving test pattern that ends after `frames` pictures.
final class FinitePattern: VideoSource {
    let width: Int
    let height: Int
    let frameRate: Int
    let name = "finite pattern"
    private var pattern: TestPattern
    private var remaining: Int

    init(width: Int, height: Int, frameRate: Int, frames: Int) {
        self.width = width
        self.height = height
        self.frameRate = frameRate
        pattern = TestPattern(width: width, height: height, frameRate: frameRate)
        remaining = frames
    }

    func read(into frame: inout VideoFrame) throws -> Bool {
        guard remaining > 0 else { return false }
        remaining -= 1
        pattern.render(into: &frame)
        return true
    }
}


extension Tool {
    /// The file's audio, decoded by ffmpeg to mono 48 kHz.
    static func decodedAudio(_ path: String) throws -> [Int16] {
        let output = FileManager.default.temporaryDirectory.appendingPathComponent("decoded-\(UUID().uuidString).wav").path
        defer { try? FileManager.default.removeItem(atPath: output) }
        try decodeAudio(path, to: output)
        return try AudioFile.read(path: output).samples
    }
}

/// Correlation of a recording's decoded audio with its source: one clock on both ends of
/// a file, so a single lag, then the whole file.
func fileCorrelation(_ decoded: [Int16], source: [Int16]) -> Double {
    source.withUnsafeBufferPointer { reference in
        decoded.withUnsafeBufferPointer { test in
            let lag = AudioQuality.bestLag(reference: reference, test: test, range: -2_400...2_400, start: 9_600)
            return AudioQuality.correlation(reference: reference, test: test, lag: lag)
        }
    }
}
