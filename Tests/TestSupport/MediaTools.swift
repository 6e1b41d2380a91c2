import Foundation

/// What ffprobe says about a media file.
public struct Probe {
    public struct Stream {
        public var codec: String
        public var kind: String
        public var width: Int?
        public var height: Int?
    }

    public var streams: [Stream]
    public var duration: Double?

    public init(path: String) throws {
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

    /// Bytes in the packets of one kind of stream ("v" or "a").
    public static func packetBytes(path: String, streams: String) throws -> Int {
        let run = try Tool.run("ffprobe", ["-v", "error", "-select_streams", streams, "-show_entries", "packet=size", "-of", "csv=p=0", path])
        guard run.status == 0 else { throw ToolFailure("ffprobe \(path): \(run.stderr)") }
        return run.stdout.split(separator: "\n").compactMap { Int($0.trimmingCharacters(in: .whitespaces)) }.reduce(0, +)
    }

    /// The size of every decoded video frame, in order.
    public static func frameSizes(path: String) throws -> [String] {
        let run = try Tool.run("ffprobe", ["-v", "error", "-select_streams", "v:0", "-show_entries", "frame=width,height",
                                           "-of", "csv=p=0", path])
        guard run.status == 0 else { throw ToolFailure("ffprobe \(path): \(run.stderr)") }
        return run.stdout.split(separator: "\n").map { $0.replacingOccurrences(of: ",", with: "x") }
    }
}

/// Root mean square of 16-bit samples.
public func rms(_ samples: some Collection<Int16>) -> Double {
    (samples.reduce(0.0) { $0 + Double($1) * Double($1) } / Double(max(1, samples.count))).squareRoot()
}

public struct ToolFailure: Error, CustomStringConvertible {
    public let description: String
    public init(_ description: String) { self.description = description }
}

public enum Tool {
    /// Runs a program found on PATH to completion.
    public static func run(_ name: String, _ arguments: [String], timeout: Double = 120) throws -> CLIRun {
        try BackgroundProcess(program: name, arguments: arguments).wait(timeout: timeout)
    }

    /// Decodes every stream of `path` with ffmpeg; returns what ffmpeg printed as errors.
    ///
    /// Frames keep the file's own timestamps (`-enc_time_base -1`): by default ffmpeg
    /// re-times video to its guessed frame rate for the null output, and a 15 fps track in
    /// WebM's whole milliseconds (66 and 67 ms apart), shifted by Opus's codec delay,
    /// can land two frames on one 1/15 s tick, which the null muxer reports as a
    /// timestamp error although every frame decodes.
    public static func decodeErrors(_ path: String) throws -> String {
        let run = try run("ffmpeg", ["-nostdin", "-v", "error", "-xerror", "-i", path, "-enc_time_base", "-1", "-f", "null", "-"])
        return run.status == 0 ? run.stderr : "exit \(run.status): \(run.stderr)"
    }

    /// Decodes the file's audio with ffmpeg to a mono 48 kHz WAV at `output`.
    public static func decodeAudio(_ path: String, to output: String) throws {
        let run = try run("ffmpeg", ["-nostdin", "-y", "-v", "error", "-i", path, "-map", "0:a", "-ac", "1", "-ar", "48000", "-c:a", "pcm_s16le", output])
        guard run.status == 0 else { throw ToolFailure("ffmpeg decoding the audio of \(path): \(run.stderr)") }
    }
}
