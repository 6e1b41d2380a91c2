import Foundation
import Testing
@testable import MediaEngine

/// A fresh directory under the system temporary directory, removed by the caller.
func temporaryDirectory() throws -> URL {
    let url = FileManager.default.temporaryDirectory.appendingPathComponent("mediaengine-\(UUID().uuidString)")
    try FileManager.default.createDirectory(at: url, withIntermediateDirectories: true)
    return url
}

@Suite struct WAVFiles {
    @Test(arguments: ChannelLayout.allCases)
    func roundTripIsBitExact(layout: ChannelLayout) throws {
        let directory = try temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        var tone = ToneGenerator(.multiTone([440, 1_000]), layout: layout)
        let frame = tone.clip(seconds: 0.25)
        let path = directory.appendingPathComponent("tone.wav").path
        try AudioFile.writeWAV(frame, path: path)
        let read = try AudioFile.read(path: path)
        #expect(read.layout == layout)
        #expect(read.samples == frame.samples)
        // 44-byte canonical header plus 2 bytes per sample.
        let size = try FileManager.default.attributesOfItem(atPath: path)[.size] as? Int
        #expect(size == 44 + frame.samples.count * 2)
    }

    @Test func missingFileIsCannotOpenNamingThePath() {
        let error = #expect(throws: MediaFileError.self) { try AudioFile.read(path: "/nonexistent/speech.wav") }
        #expect(error?.code == .cannotOpen)
        #expect(error?.message.hasPrefix("/nonexistent/speech.wav") == true)
    }

    @Test func garbageAndTruncatedHeadersAreCorrupt() throws {
        let directory = try temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let garbage = directory.appendingPathComponent("garbage.wav")
        try Data((0..<2_000).map { UInt8(truncatingIfNeeded: $0 &* 31) }).write(to: garbage)
        let error = #expect(throws: MediaFileError.self) { try AudioFile.read(path: garbage.path) }
        #expect(error?.code == .corrupt)
        #expect(error?.path == garbage.path)

        let good = directory.appendingPathComponent("good.wav").path
        var tone = ToneGenerator(.sine(440))
        try AudioFile.writeWAV(tone.clip(seconds: 0.1), path: good)
        let truncated = directory.appendingPathComponent("truncated.wav")
        try Data(try Data(contentsOf: URL(fileURLWithPath: good)).prefix(30)).write(to: truncated)
        #expect(throws: MediaFileError.self) { try AudioFile.read(path: truncated.path) }
    }

    @Test func anotherSampleRateIsRefusedWithTheRateInTheMessage() throws {
        let directory = try temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let path = directory.appendingPathComponent("cd.wav").path
        try writeWAV(path: path, sampleRate: 44_100, channels: 1, samples: [Int16](repeating: 100, count: 441))
        let error = #expect(throws: MediaFileError.self) { try AudioFile.read(path: path) }
        #expect(error?.code == .unsupportedSampleRate)
        #expect(error?.message.contains("44100") == true)
    }

    @Test func moreThanTwoChannelsIsUnsupported() throws {
        let directory = try temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let path = directory.appendingPathComponent("surround.wav").path
        try writeWAV(path: path, sampleRate: 48_000, channels: 6, samples: [Int16](repeating: 0, count: 600))
        let error = #expect(throws: MediaFileError.self) { try AudioFile.read(path: path) }
        #expect(error?.code == .unsupportedFormat)
        #expect(error?.message.contains("6 channels") == true)
    }

    /// A canonical PCM WAV built byte by byte, independent of the code under test.
    private func writeWAV(path: String, sampleRate: Int, channels: Int, samples: [Int16]) throws {
        func le32(_ v: Int) -> [UInt8] { (0..<4).map { UInt8(truncatingIfNeeded: v >> (8 * $0)) } }
        func le16(_ v: Int) -> [UInt8] { (0..<2).map { UInt8(truncatingIfNeeded: v >> (8 * $0)) } }
        let dataSize = samples.count * 2
        var bytes: [UInt8] = Array("RIFF".utf8) + le32(36 + dataSize) + Array("WAVEfmt ".utf8)
        bytes += le32(16) + le16(1) + le16(channels) + le32(sampleRate) + le32(sampleRate * channels * 2)
        bytes += le16(channels * 2) + le16(16) + Array("data".utf8) + le32(dataSize)
        for sample in samples { bytes += le16(Int(sample)) }
        try Data(bytes).write(to: URL(fileURLWithPath: path))
    }
}

@Suite struct Y4MFiles {
    @Test func roundTripKeepsEveryPixelAndTheFrameRate() throws {
        let directory = try temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let path = directory.appendingPathComponent("pattern.y4m").path
        var pattern = TestPattern(width: 176, height: 144, frameRate: 15)
        let frames = (0..<5).map { _ in pattern.nextFrame() }
        let writer = try Y4M.Writer(path: path, width: 176, height: 144, frameRate: 15)
        for frame in frames { try writer.write(frame) }
        try writer.close()

        let reader = try Y4M.Reader(path: path)
        #expect(reader.width == 176 && reader.height == 144)
        #expect(reader.frameRate.numerator == 15 && reader.frameRate.denominator == 1)
        var read: [VideoFrame] = []
        while let frame = try reader.read() { read.append(frame) }
        #expect(read.count == 5)
        #expect(read.map(\.data) == frames.map(\.data))
        #expect(read[2].timestamp == .nanoseconds(2 * 1_000_000_000 / 15))
    }

    @Test func paddedStridesAreWrittenWithoutPadding() throws {
        let directory = try temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let path = directory.appendingPathComponent("padded.y4m").path
        var frame = VideoFrame(width: 6, height: 4, strideY: 16, strideUV: 8)
        frame.withMutablePlanes { y, _, _ in for i in 0..<y.count { y[i] = UInt8(i % 16) } }
        let writer = try Y4M.Writer(path: path, width: 6, height: 4, frameRate: 30)
        try writer.write(frame)
        try writer.close()
        let read = try #require(try Y4M.Reader(path: path).read())
        #expect(read.data.prefix(6) == [0, 1, 2, 3, 4, 5])
        #expect(read.data[6..<12] == [0, 1, 2, 3, 4, 5])
        #expect(read.data.count == 6 * 4 + 2 * 3 * 2)
    }

    @Test(arguments: [
        ("not a header\n", "does not start with YUV4MPEG2"),
        ("YUV4MPEG2 W640 F30:1\nFRAME\n", "needs W and H"),
        ("YUV4MPEG2 W0 H480\n", "needs W and H"),
        ("YUV4MPEG2 W99999 H480\n", "needs W and H"),
        ("YUV4MPEG2 W64 H48 Fabc\n", "frame rate"),
        ("YUV4MPEG2 W64 H48 C444\n", "C444"),
        ("YUV4MPEG2 W64 H48 C420p10\n", "C420p10"),
        ("", "no YUV4MPEG2 header"),
    ])
    func badHeadersAreTypedErrors(contents: String, mentions: String) throws {
        let directory = try temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let path = directory.appendingPathComponent("bad.y4m").path
        try Data(contents.utf8).write(to: URL(fileURLWithPath: path))
        let error = #expect(throws: MediaFileError.self) { try Y4M.Reader(path: path) }
        #expect(error?.message.contains(mentions) == true, "\(String(describing: error))")
        #expect(error?.path == path)
    }

    @Test func truncatedFrameAndBadFrameLineAreCorruptAfterGoodFramesWereRead() throws {
        let directory = try temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let header = "YUV4MPEG2 W4 H2 F30:1 C420jpeg\n"
        let frame = "FRAME\n" + String(repeating: "a", count: 4 * 2 + 2 * 2)
        for (name, body, message) in [
            ("truncated", frame + "FRAME\n" + "abc", "frame 1 is truncated: 3 of 12 bytes"),
            ("badline", frame + "JUNK\n", "frame 1 does not start with a FRAME line"),
        ] {
            let path = directory.appendingPathComponent("\(name).y4m").path
            try Data((header + body).utf8).write(to: URL(fileURLWithPath: path))
            let reader = try Y4M.Reader(path: path)
            #expect(try reader.read() != nil)
            let error = #expect(throws: MediaFileError.self) { try reader.read() }
            #expect(error?.code == .corrupt)
            #expect(error?.message.contains(message) == true, "\(String(describing: error))")
        }
    }

    @Test func unknownFrameRateAsGStreamerWritesItReadsAs30() throws {
        let directory = try temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let path = directory.appendingPathComponent("gst.y4m").path
        try Data(("YUV4MPEG2 W2 H2 F0:1 C420jpeg\nFRAME\n" + "abcdef").utf8).write(to: URL(fileURLWithPath: path))
        let reader = try Y4M.Reader(path: path)
        #expect(reader.frameRate.numerator == 30 && reader.frameRate.denominator == 1)
        #expect(try reader.read()?.data == Array("abcdef".utf8))
    }

    @Test func missingFileAndUnwritableDirectoryAreCannotOpen() {
        #expect(throws: MediaFileError.self) { try Y4M.Reader(path: "/nonexistent/in.y4m") }
        let error = #expect(throws: MediaFileError.self) {
            try Y4M.Writer(path: "/nonexistent/out.y4m", width: 64, height: 48, frameRate: 30)
        }
        #expect(error?.code == .cannotOpen)
    }
}
