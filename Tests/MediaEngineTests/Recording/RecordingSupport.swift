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
        var samples = [Int16](repeating: 0, count: Int(seconds * 48_000))
        samples.withUnsafeMutableBufferPointer { generator.fill($0) }
        return samples
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

/// What ffprobe says about a media file.
struct Probe {
    struct Stream {
        var codec: String
        var kind: String
        var width: Int?
        var height: Int?
    }

    var streams: [Stream]
    var duration: Double?

    init(path: String) throws {
        let run = try Tool.run("ffprobe", ["-v", "error", "-show_entries", "stream=codec_name,codec_type,width,height:format=duration",
                                           "-of", "json", path])
        guard run.status == 0, let json = try JSONSerialization.jsonObject(with: Data(run.stdout.utf8)) as? [String: Any] else {
            throw ToolFailure("ffprobe \(path): \(run.stderr)")
        }
        streams = ((json["streams"] as? [[String: Any]]) ?? []).map {
            Stream(codec: $0["codec_name"] as? String ?? "", kind: $0["codec_type"] as? String ?? "",
                   width: $0["width"] as? Int, height: $0["height"] as? Int)
        }
        duration = ((json["format"] as? [String: Any])?["duration"] as? String).flatMap(Double.init)
    }

    /// The size of every decoded video frame, in order.
    static func frameSizes(path: String) throws -> [String] {
        let run = try Tool.run("ffprobe", ["-v", "error", "-select_streams", "v:0", "-show_entries", "frame=width,height",
                                           "-of", "csv=p=0", path])
        guard run.status == 0 else { throw ToolFailure("ffprobe \(path): \(run.stderr)") }
        return run.stdout.split(separator: "\n").map { $0.replacingOccurrences(of: ",", with: "x") }
    }
}

struct ToolFailure: Error, CustomStringConvertible {
    let description: String
    init(_ description: String) { self.description = description }
}

enum Tool {
    /// Runs a program found on PATH to completion.
    static func run(_ name: String, _ arguments: [String], timeout: Double = 120) throws -> CLIRun {
        let path = ["/usr/bin", "/usr/local/bin", "/bin"].map { "\($0)/\(name)" }.first { FileManager.default.isExecutableFile(atPath: $0) }
        guard let path else { throw ToolFailure("\(name) is not installed (tools/bootstrap installs it)") }
        return try BackgroundProcess(executable: URL(fileURLWithPath: path), arguments: arguments).wait(timeout: timeout)
    }

    /// Decodes every stream of `path` with ffmpeg; returns what ffmpeg printed as errors.
    static func decodeErrors(_ path: String) throws -> String {
        let run = try run("ffmpeg", ["-nostdin", "-v", "error", "-xerror", "-i", path, "-f", "null", "-"])
        return run.status == 0 ? run.stderr : "exit \(run.status): \(run.stderr)"
    }

    /// The file's audio, decoded by ffmpeg to mono 48 kHz.
    static func decodedAudio(_ path: String) throws -> [Int16] {
        let output = FileManager.default.temporaryDirectory.appendingPathComponent("decoded-\(UUID().uuidString).wav").path
        defer { try? FileManager.default.removeItem(atPath: output) }
        let run = try run("ffmpeg", ["-nostdin", "-v", "error", "-i", path, "-map", "0:a", "-ac", "1", "-ar", "48000", "-c:a", "pcm_s16le", output])
        guard run.status == 0 else { throw ToolFailure("ffmpeg decoding the audio of \(path): \(run.stderr)") }
        return try AudioFile.read(path: output).samples
    }
}
