import Foundation
import Testing
@testable import MediaEngine

/// A 16-bit mono WAV at any rate, written byte by byte (AudioFile writes 48 kHz only).
func writeWAV(_ samples: [Int16], rate: Int, to path: String) throws {
    var bytes = Array("RIFF".utf8)
    func le32(_ value: Int) { bytes += withUnsafeBytes(of: UInt32(value).littleEndian, Array.init) }
    func le16(_ value: Int) { bytes += withUnsafeBytes(of: UInt16(value).littleEndian, Array.init) }
    le32(36 + samples.count * 2)
    bytes += Array("WAVEfmt ".utf8)
    le32(16); le16(1); le16(1); le32(rate); le32(rate * 2); le16(2); le16(16)
    bytes += Array("data".utf8)
    le32(samples.count * 2)
    for sample in samples { le16(Int(UInt16(bitPattern: sample))) }
    try Data(bytes).write(to: URL(fileURLWithPath: path))
}

func sine(_ frequency: Double, rate: Int, seconds: Double, amplitude: Double = 0.8) -> [Int16] {
    (0..<Int(Double(rate) * seconds)).map { Int16(amplitude * 32_767 * sin(2 * .pi * frequency * Double($0) / Double(rate))) }
}

@Suite struct AudioMixing {
    @Test func theMixerSaturatesInsteadOfWrappingAndAppliesGains() {
        let loud = [Int16](repeating: 30_000, count: 4)
        var frame = [Int16](repeating: 10_000, count: 4)
        let clipped = frame.withUnsafeMutableBufferPointer { out in loud.withUnsafeBufferPointer { AudioMixer.add($0, gain: 1, into: out) } }
        #expect(frame == [32_767, 32_767, 32_767, 32_767] && clipped == 4)
        var half = [Int16](repeating: 0, count: 4)
        _ = half.withUnsafeMutableBufferPointer { out in loud.withUnsafeBufferPointer { AudioMixer.add($0, gain: 0.5, into: out) } }
        #expect(half == [15_000, 15_000, 15_000, 15_000])
        var accumulator = [Int32](repeating: 0, count: 4)
        let negative = [Int16](repeating: -30_000, count: 4)
        accumulator.withUnsafeMutableBufferPointer { acc in
            for input in [negative, negative, loud] { input.withUnsafeBufferPointer { AudioMixer.accumulate($0, gain: 1, into: acc) } }
        }
        var out = [Int16](repeating: 0, count: 4)
        let count = out.withUnsafeMutableBufferPointer { o in accumulator.withUnsafeBufferPointer { AudioMixer.finish($0, into: o) } }
        #expect(out == [-30_000, -30_000, -30_000, -30_000] && count == 0, "three inputs sum in 32 bits before saturating")
    }

    @Test func aFileAtAnotherRateIsResampledLoopedPausedAndResumed() throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("mix-\(UInt32.random(in: 0 ... .max))")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let path = directory.appendingPathComponent("tone.wav").path
        try writeWAV(sine(1_000, rate: 44_100, seconds: 0.1), rate: 44_100, to: path)
        let task = try AudioFileMixTask(fileURL: URL(fileURLWithPath: path))
        #expect(abs(task.audio.count - 4_800) <= 2, "0.1 s at 48 kHz: \(task.audio.count)")
        let frequency = task.audio.withUnsafeBufferPointer { AudioQuality.toneFrequency($0) }
        #expect(abs((frequency ?? 0) - 1_000) < 2, "resampled with libsoxr: \(frequency ?? 0) Hz")

        task.numberOfLoops = 1
        var block = [Int16](repeating: 0, count: 960)
        var pulled = 0
        var completions = 0
        while pulled < 20 * 960 {
            let (_, _, completed) = block.withUnsafeMutableBufferPointer { task.pull(into: $0) }
            if completed { completions += 1 }
            pulled += 960
            if completed { #expect(abs(pulled - 2 * task.audio.count) < 960, "two passes, then done: at \(pulled)") }
        }
        #expect(completions == 1 && task.isFinished)
        #expect(block.allSatisfy { $0 == 0 }, "silence once finished")

        let second = try AudioFileMixTask(fileURL: URL(fileURLWithPath: path))
        _ = block.withUnsafeMutableBufferPointer { second.pull(into: $0) }
        second.pause()
        _ = block.withUnsafeMutableBufferPointer { second.pull(into: $0) }
        #expect(block.allSatisfy { $0 == 0 } && second.position == 960, "paused: silence, the position kept")
        second.resume()
        _ = block.withUnsafeMutableBufferPointer { second.pull(into: $0) }
        #expect(Array(block) == Array(second.audio[960..<1_920]), "resumed where it paused")
        second.numberOfLoops = -1
        for _ in 0..<100 { _ = block.withUnsafeMutableBufferPointer { second.pull(into: $0) } }
        #expect(!second.isFinished, "negative loops: forever")
    }

    @Test func badFilesAndVolumesAreNamed() throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("mixbad-\(UInt32.random(in: 0 ... .max))")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        func message(_ path: String) -> String {
            do {
                _ = try AudioFileMixTask(fileURL: URL(fileURLWithPath: path))
                return "opened"
            } catch {
                return error.message
            }
        }
        #expect(message("/nonexistent/song.wav").contains("/nonexistent/song.wav"))
        let empty = directory.appendingPathComponent("empty.wav").path
        try writeWAV([], rate: 48_000, to: empty)
        #expect(message(empty).contains("has no audio"), "\(message(empty))")
        let zero = directory.appendingPathComponent("zero.wav").path
        _ = FileManager.default.createFile(atPath: zero, contents: Data())
        #expect(message(zero).contains(zero))
        let garbage = directory.appendingPathComponent("garbage.mp3").path
        try Data((0..<4_000).map { UInt8(truncatingIfNeeded: $0 &* 37) }).write(to: URL(fileURLWithPath: garbage))
        #expect(message(garbage).contains(garbage))
        // Unreadable: a directory where the file should be.
        let folder = directory.appendingPathComponent("folder.wav").path
        try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: false)
        #expect(message(folder).contains(folder), "\(message(folder))")
        // Unsupported: a real file of a format that is not audio (a PNG picture).
        let picture = directory.appendingPathComponent("picture.png").path
        try VideoFrame(width: 16, height: 16).writePNG(path: picture)
        #expect(message(picture).contains(picture), "\(message(picture))")
        let good = directory.appendingPathComponent("good.wav").path
        try writeWAV(sine(440, rate: 48_000, seconds: 0.1), rate: 48_000, to: good)
        let task = try AudioFileMixTask(fileURL: URL(fileURLWithPath: good))
        #expect(throws: MixError.self) { try task.setVolumes(send: 1.5) }
        #expect(throws: MixError.self) { try task.setVolumes(playback: -0.1) }
        try task.setVolumes(send: 0.25, playback: 0.75)
        #expect(task.sendVolume == 0.25 && task.playbackVolume == 0.75)
    }
}
