import ArgumentParser
import Foundation
import LiveStreaming
import MediaEngine

/// `mediaengine bench live`: the live-room composer's cost against ffmpeg doing the same
/// job from the same inputs in the same run.
struct LiveBench: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "live",
        abstract: "Measure the live-room composer (decode, lay out, encode H.264/AAC to FLV) against ffmpeg doing the same.",
        discussion: """
        Encodes one host and --participants - 1 co-hosts as VP8 (--input-size, 30 fps, distinct moving test \
        patterns) for --seconds, written as WebM for ffmpeg and kept in memory for the composer. Then, as fast as \
        each can: the composer decodes every participant with libvpx straight into the canvas (libyuv box \
        scaling, mix mode 0: the host full frame, co-hosts in the right column), and its LiveStreamer encodes \
        libx264 (veryfast, zerolatency, CBR at --bitrate, keyframe every 2 s) and AAC into an FLV file; ffmpeg \
        runs the same layout (libvpx decoders, bilinear scale + overlay) with the same libx264 and AAC settings \
        into an FLV file. Reports frames per second and CPU seconds per second of output for both, and the \
        ratios (composer / ffmpeg).
        """
    )

    @Option(help: "Participants: the host and its co-hosts (1-4).")
    var participants = 4

    @Option(help: "Each participant's picture, WIDTHxHEIGHT.")
    var inputSize = "640x360"

    @Option(help: "The stream, WIDTHxHEIGHT@FPS.")
    var outputSize = "1280x720@30"

    @Option(help: "Video bitrate of the stream, b/s.")
    var bitrate = 2_500_000

    @Option(help: "Seconds of input.")
    var seconds = 10

    @Flag(help: "Print JSON.")
    var json = false

    struct Side: Codable {
        var framesPerSecond: Double
        /// CPU seconds spent per second of output.
        var cpuPerOutputSecond: Double
        var wallSeconds: Double
        var bytes: Int
    }

    struct Report: Codable {
        var participants: Int
        var input: String
        var output: String
        var seconds: Int
        var composer: Side
        var ffmpeg: Side
        /// Composer frames per second over ffmpeg's: above 1 is faster.
        var speedRatio: Double
        /// Composer CPU per output second over ffmpeg's: below 1 is cheaper.
        var cpuRatio: Double
        var droppedPackets: Int
    }

    static func size(_ text: String, rate: Bool) -> (Int, Int, Int)? {
        let parts = text.split(whereSeparator: { $0 == "x" || $0 == "@" }).compactMap { Int($0) }
        guard parts.count == (rate ? 3 : 2), parts[0] >= 16, parts[1] >= 16, parts[0] % 2 == 0, parts[1] % 2 == 0 else { return nil }
        return (parts[0], parts[1], rate ? parts[2] : 30)
    }

    func validate() throws {
        guard (1...4).contains(participants) else { throw ValidationError("--participants \(participants) must be within 1...4") }
        guard Self.size(inputSize, rate: false) != nil else { throw ValidationError("--input-size \(inputSize): use even WIDTHxHEIGHT") }
        guard let output = Self.size(outputSize, rate: true), (1...60).contains(output.2) else {
            throw ValidationError("--output-size \(outputSize): use even WIDTHxHEIGHT@FPS")
        }
        guard (1...120).contains(seconds) else { throw ValidationError("--seconds \(seconds) must be within 1...120") }
        guard (100_000...50_000_000).contains(bitrate) else { throw ValidationError("--bitrate must be within 100000...50000000") }
    }

    func run() throws {
        let (inputWidth, inputHeight, _) = Self.size(inputSize, rate: false)!
        let (width, height, rate) = Self.size(outputSize, rate: true)!
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("live-bench-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let frames = seconds * rate
        let accounts = (0..<participants).map { "p\($0)" }
        var inputs: [[[UInt8]]] = []
        for (index, account) in accounts.enumerated() {
            let path = directory.appendingPathComponent("\(account).webm").path
            inputs.append(try Self.encodeInput(path: path, width: inputWidth, height: inputHeight, frameRate: rate, frames: frames,
                                               offset: index * 37))
        }
        var format = LiveStreamFormat()
        format.width = width
        format.height = height
        format.frameRate = rate
        format.videoBitrate = bitrate
        let places = try LiveLayout(mode: .floatingRightVertical).places(for: accounts, width: width, height: height)

        let ours = directory.appendingPathComponent("composer.flv").path
        let (composer, dropped) = try Self.compose(inputs: inputs, places: places, format: format, frames: frames, path: ours)
        let theirs = directory.appendingPathComponent("ffmpeg.flv").path
        let ffmpeg = try Self.ffmpeg(inputs: accounts.map { directory.appendingPathComponent("\($0).webm").path }, places: places,
                                     format: format, seconds: seconds, path: theirs)
        let report = Report(participants: participants, input: inputSize, output: outputSize, seconds: seconds, composer: composer, ffmpeg: ffmpeg,
                            speedRatio: composer.framesPerSecond / ffmpeg.framesPerSecond,
                            cpuRatio: composer.cpuPerOutputSecond / ffmpeg.cpuPerOutputSecond, droppedPackets: dropped)
        if json {
            say(try prettyJSON(report))
        } else {
            say("live composer: \(participants) x \(inputSize) VP8 -> \(outputSize) H.264/AAC FLV, mode 0, \(seconds) s")
            for (name, side) in [("composer", composer), ("ffmpeg", ffmpeg)] {
                say("  \(name.padding(toLength: 9, withPad: " ", startingAt: 0)) \(String(format: "%7.1f", side.framesPerSecond)) fps  "
                    + "\(String(format: "%.3f", side.cpuPerOutputSecond)) CPU s per output s  \(side.bytes) bytes")
            }
            say("  ratio     \(String(format: "%.2f", report.speedRatio))x speed, \(String(format: "%.2f", report.cpuRatio))x CPU (composer / ffmpeg); "
                + "\(dropped) packets dropped")
        }
    }

    /// A participant's VP8 frames (moving test pattern), also written as WebM at `path`.
    static func encodeInput(path: String, width: Int, height: Int, frameRate: Int, frames: Int, offset: Int) throws -> [[UInt8]] {
        var configuration = VP8.Configuration(width: width, height: height, bitrate: 800_000)
        configuration.frameRate = frameRate
        configuration.keyframeInterval = frameRate * 2
        let encoder = try VP8.Encoder(configuration: configuration)
        var pattern = TestPattern(width: width, height: height, frameRate: frameRate)
        pattern.seek(to: offset)
        let muxer = try WebMMuxer(path: path)
        try muxer.writeHeader(WebMMuxer.Tracks(video: (width, height), audioChannels: nil))
        var encoded: [[UInt8]] = []
        for index in 0..<frames {
            var frame = pattern.nextFrame()
            frame.timestamp = .microseconds(Int64(index) * 1_000_000 / Int64(frameRate))
            guard let packet = try encoder.encode(frame) else { continue }
            encoded.append(packet.data)
            try packet.data.withUnsafeBytes { bytes in
                try muxer.write(.video, data: bytes, milliseconds: Int64(index) * 1_000 / Int64(frameRate),
                                duration: Int64(1_000 / frameRate), keyframe: packet.isKeyframe)
            }
        }
        try muxer.finish()
        return encoded
    }

    /// Our pipeline as fast as it goes: decode into the canvas, encode, write the file.
    static func compose(inputs: [[[UInt8]]], places: [LivePlace], format: LiveStreamFormat, frames: Int, path: String) throws -> (Side, Int) {
        let decoders = try inputs.map { _ in try VP8.Decoder() }
        let canvas = LiveCanvas(width: format.width, height: format.height)
        let streamer = try LiveStreamer(format: format) { _ in }
        streamer.addOutput(id: "bench", target: .file(path))
        let silence = [Int16](repeating: 0, count: format.sampleRate / format.frameRate)
        let count = inputs.map(\.count).min() ?? 0
        let cpu = CPUUsage.cpuSeconds()
        let start = ContinuousClock.now
        for index in 0..<min(frames, count) {
            canvas.clear()
            for (participant, place) in places.enumerated() {
                try inputs[participant][index].withUnsafeBytes { bytes in
                    _ = try decoders[participant].decode(bytes) { planes in canvas.draw(planes, in: place) }
                }
            }
            let time = Duration.microseconds(Int64(index) * 1_000_000 / Int64(format.frameRate))
            streamer.submitVideo(canvas.frame, at: time)
            silence.withUnsafeBufferPointer { streamer.submitAudio($0, at: time) }
        }
        let dropped = streamer.statistics(output: "bench")?.droppedPackets ?? 0
        streamer.stop()
        let wall = (ContinuousClock.now - start) / .seconds(1)
        let used = CPUUsage.cpuSeconds() - cpu
        let outputSeconds = Double(min(frames, count)) / Double(format.frameRate)
        let bytes = (try? FileManager.default.attributesOfItem(atPath: path)[.size] as? Int) ?? 0
        return (Side(framesPerSecond: Double(min(frames, count)) / wall, cpuPerOutputSecond: used / outputSeconds, wallSeconds: wall,
                     bytes: bytes), dropped)
    }

    /// ffmpeg with the same inputs, layout, encoders and settings.
    static func ffmpeg(inputs: [String], places: [LivePlace], format: LiveStreamFormat, seconds: Int, path: String) throws -> Side {
        var arguments = ["-hide_banner", "-loglevel", "error", "-nostdin", "-y"]
        for input in inputs { arguments += ["-c:v", "libvpx", "-i", input] }
        arguments += ["-f", "lavfi", "-i", "anullsrc=r=\(format.sampleRate):cl=mono"]
        var graph: [String] = []
        for (index, place) in places.enumerated() {
            graph.append("[\(index):v]scale=\(place.width):\(place.height):flags=bilinear[s\(index)]")
        }
        var last = "s0"
        for (index, place) in places.enumerated().dropFirst() {
            graph.append("[\(last)][s\(index)]overlay=\(place.x):\(place.y)[o\(index)]")
            last = "o\(index)"
        }
        graph.append("[\(last)]format=yuv420p[v]")
        let kbps = format.videoBitrate / 1_000
        arguments += ["-filter_complex", graph.joined(separator: ";"), "-map", "[v]", "-map", "\(inputs.count):a",
                      "-c:v", "libx264", "-preset", "veryfast", "-tune", "zerolatency", "-profile:v", "main",
                      "-b:v", "\(kbps)k", "-maxrate", "\(kbps)k", "-bufsize", "\(kbps)k",
                      "-g", "\(2 * format.frameRate)", "-keyint_min", "\(2 * format.frameRate)", "-sc_threshold", "0",
                      "-x264-params", "nal-hrd=cbr", "-r", "\(format.frameRate)",
                      "-c:a", "aac", "-b:a", "\(format.audioBitrate / 1_000)k", "-t", "\(seconds)", "-f", "flv", path]
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        process.arguments = ["ffmpeg"] + arguments
        let errors = Pipe()
        process.standardError = errors
        let cpu = CPUUsage.childSeconds()
        let start = ContinuousClock.now
        try process.run()
        let message = errors.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        let wall = (ContinuousClock.now - start) / .seconds(1)
        guard process.terminationStatus == 0 else {
            throw ValidationError("ffmpeg failed (\(process.terminationStatus)): \(String(decoding: message, as: UTF8.self))")
        }
        let used = CPUUsage.childSeconds() - cpu
        let frames = seconds * format.frameRate
        let bytes = (try? FileManager.default.attributesOfItem(atPath: path)[.size] as? Int) ?? 0
        return Side(framesPerSecond: Double(frames) / wall, cpuPerOutputSecond: used / Double(seconds), wallSeconds: wall, bytes: bytes)
    }
}
