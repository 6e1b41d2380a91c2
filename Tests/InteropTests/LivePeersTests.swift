import Foundation
import TestSupport
import Testing

/// The live-streaming peers (nginx-rtmp, icecast2) and the pull and analysis helpers,
/// proved against each other: ffmpeg pushes a picture that is red on the left and blue on
/// the right with a 440 Hz tone, and what ffmpeg pulls back must show both.
@Suite(.serialized) struct LivePeersTests {
    static let (pictureWidth, pictureHeight) = (64, 48)

    /// ffmpeg's inputs: 320x240 at 15 fps, left half red and right half blue, and a 440 Hz
    /// sine at 48 kHz (amplitude 1/8), for `seconds` in real time.
    func sources(seconds: Double) -> [String] {
        ["-hide_banner", "-loglevel", "error", "-nostdin", "-re",
         "-f", "lavfi", "-i", "color=red:size=160x240:rate=15", "-f", "lavfi", "-i", "color=blue:size=160x240:rate=15",
         "-f", "lavfi", "-i", "sine=frequency=440:sample_rate=48000",
         "-filter_complex", "[0:v][1:v]hstack[v]", "-map", "[v]", "-map", "2:a", "-t", String(seconds)]
    }

    /// Pushes FLV (H.264 with a key frame a second, AAC) to `url`.
    func pushRTMP(_ url: String, seconds: Double) throws -> BackgroundProcess {
        try BackgroundProcess(program: "ffmpeg", arguments: sources(seconds: seconds) + [
            "-c:v", "libx264", "-preset", "ultrafast", "-tune", "zerolatency", "-g", "15", "-pix_fmt", "yuv420p",
            "-c:a", "aac", "-b:a", "96k", "-f", "flv", url,
        ])
    }

    /// Pushes live WebM (VP8 with a key frame a second, Opus) to an icecast source URL.
    func pushWebM(_ url: String, seconds: Double) throws -> BackgroundProcess {
        try BackgroundProcess(program: "ffmpeg", arguments: sources(seconds: seconds) + [
            "-c:v", "libvpx", "-deadline", "realtime", "-cpu-used", "8", "-b:v", "500k", "-g", "15",
            "-c:a", "libopus", "-b:a", "64k", "-f", "webm", "-live", "1", "-content_type", "video/webm", url,
        ])
    }

    /// Ends a push that is still running (SIGINT: ffmpeg closes the stream cleanly).
    func finish(_ push: BackgroundProcess) {
        push.interrupt()
        _ = try? push.wait(timeout: 5)
    }

    /// The pulled audio holds the 440 Hz tone and not 660 Hz; the pulled picture is red on
    /// the left and blue on the right.
    func expectToneAndHalves(audio: String, video: String, seconds: Double, _ label: String) throws {
        let samples = try readS16(audio)
        #expect(Double(samples.count) >= 48_000 * (seconds - 0.5), "\(label): \(samples.count) samples")
        let body = samples.dropFirst(4_800)  // past the decoders' first frames
        let (tone, other) = (toneLevel(body, frequency: 440, sampleRate: 48_000), toneLevel(body, frequency: 660, sampleRate: 48_000))
        print("\(label): 440 Hz level \(tone), 660 Hz level \(other), \(samples.count) samples")
        #expect(tone > 0.08 && tone < 0.2, "\(label): 440 Hz level \(tone) (the source's is 0.125)")
        #expect(other < 0.005, "\(label): 660 Hz level \(other)")

        let frames = try readRGBFrames(video, width: Self.pictureWidth, height: Self.pictureHeight)
        #expect(Double(frames.count) >= 5 * (seconds - 1), "\(label): \(frames.count) frames at 5 fps")
        let frame = try #require(frames.last, "\(label): no video frames")
        let left = regionAverage(frame, width: Self.pictureWidth, height: Self.pictureHeight, x0: 0.05, y0: 0.1, x1: 0.4, y1: 0.9)
        let right = regionAverage(frame, width: Self.pictureWidth, height: Self.pictureHeight, x0: 0.6, y0: 0.1, x1: 0.95, y1: 0.9)
        print("\(label): left \(left), right \(right)")
        #expect(left.r > 200 && left.g < 50 && left.b < 50, "\(label): left half \(left) is not red")
        #expect(right.r < 50 && right.g < 50 && right.b > 200, "\(label): right half \(right) is not blue")
    }

    /// The analysis helpers on inputs whose answers are known.
    @Test func analysisHelpersOnKnownInputs() throws {
        let sine = (0..<48_000).map { Int16((32_767 * sin(2 * Double.pi * 1_000 * Double($0) / 48_000)).rounded()) }
        #expect(abs(toneLevel(sine, frequency: 1_000, sampleRate: 48_000) - 1) < 0.01, "a full-scale sine is 1.0")
        #expect(toneLevel(sine, frequency: 1_100, sampleRate: 48_000) < 0.001)
        #expect(abs(toneLevel(sine.map { $0 / 8 }, frequency: 1_000, sampleRate: 48_000) - 0.125) < 0.002)
        #expect(toneLevel([Int16](), frequency: 1_000, sampleRate: 48_000) == 0)

        // 4x2, the left two columns red, the right two blue.
        let frame: [UInt8] = Array(repeating: [255, 0, 0, 255, 0, 0, 0, 0, 255, 0, 0, 255], count: 2).flatMap { $0 }
        let left = regionAverage(frame, width: 4, height: 2, x0: 0, y0: 0, x1: 0.5, y1: 1)
        let whole = regionAverage(frame, width: 4, height: 2, x0: 0, y0: 0, x1: 1, y1: 1)
        let thin = regionAverage(frame, width: 4, height: 2, x0: 0.9, y0: 0.5, x1: 0.9, y1: 0.5)
        #expect(left == (255, 0, 0) && whole == (127.5, 0, 127.5) && thin == (0, 0, 255))
        #expect(regionAverage(Array(frame.prefix(5)), width: 4, height: 2, x0: 0, y0: 0, x1: 1, y1: 1).r.isNaN)

        let directory = try temporaryDirectory("live-helpers")
        defer { try? FileManager.default.removeItem(at: directory) }
        let path = directory.appendingPathComponent("raw").path
        try Data([1, 0, 255, 255, 7]).write(to: URL(fileURLWithPath: path))
        #expect(try readS16(path) == [1, -1])
        try Data(frame + [9, 9]).write(to: URL(fileURLWithPath: path))
        #expect(try readRGBFrames(path, width: 4, height: 2) == [frame])
        let pixelPairs: [[UInt8]] = stride(from: 0, to: 24, by: 6).map { (start: Int) -> [UInt8] in Array(frame[start..<(start + 6)]) }
        #expect(try readRGBFrames(path, width: 2, height: 1) == pixelPairs)
        #expect(throws: ToolFailure.self) { try readRGBFrames(path, width: 0, height: 2) }
    }

    @Test func nginxRTMPCarriesPictureAndTone() async throws {
        try await Heavy.run {
            let directory = try temporaryDirectory("live-rtmp")
            defer { try? FileManager.default.removeItem(at: directory) }
            let (audio, video) = (directory.appendingPathComponent("a.s16").path, directory.appendingPathComponent("v.rgb").path)
            let nginx = try NginxRTMP()
            try nginx.start()
            let push = try pushRTMP(nginx.url(key: "cam"), seconds: 8)
            defer { finish(push) }
            try #require(nginx.waitForPublisher(key: "cam", timeout: 10), "\(nginx.log)\n\(push.stderr)")
            // Joins the running stream at its next key frame.
            try Pull.run(url: nginx.url(key: "cam"), seconds: 4, audioTo: audio, videoTo: video,
                         videoSize: (Self.pictureWidth, Self.pictureHeight))
            try expectToneAndHalves(audio: audio, video: video, seconds: 4, "nginx-rtmp")
        }
    }

    @Test func icecastCarriesWebM() async throws {
        try await Heavy.run {
            let directory = try temporaryDirectory("live-icecast")
            defer { try? FileManager.default.removeItem(at: directory) }
            let (audio, video) = (directory.appendingPathComponent("a.s16").path, directory.appendingPathComponent("v.rgb").path)
            let icecast = try Icecast()
            try icecast.start()
            let push = try pushWebM(icecast.sourceURL(mount: "cam.webm"), seconds: 8)
            defer { finish(push) }
            try #require(icecast.waitForMount("cam.webm", timeout: 10), "\(icecast.log)\n\(push.stderr)")
            try Pull.run(url: icecast.listenURL(mount: "cam.webm"), seconds: 4, audioTo: audio, videoTo: video,
                         videoSize: (Self.pictureWidth, Self.pictureHeight))
            try expectToneAndHalves(audio: audio, video: video, seconds: 4, "icecast2")
        }
    }

    /// A peer asked for a port another server listens on fails, naming it, and leaves that
    /// server alone.
    @Test func aTakenPortFails() async throws {
        try await Heavy.run {
            let first = try NginxRTMP()
            try first.start()
            let second = try NginxRTMP()
            let failure = try #require(throws: ToolFailure.self) { try second.start(port: first.port) }
            #expect(failure.description.contains("Address already in use"), "\(failure)")
            #expect(!second.isRunning && first.isRunning && LivePort.acceptsConnections(first.port))
            let icecast = try Icecast()
            let refused = try #require(throws: ToolFailure.self) { try icecast.start(port: first.port) }
            #expect(refused.description.contains("Address already in use"), "\(refused)")
        }
    }

    /// nginx stopped under a publisher and started again on the same port takes a new
    /// publisher, whose stream reaches a player that was waiting for it.
    @Test func nginxRTMPRestartsOnTheSamePort() async throws {
        try await Heavy.run {
            let directory = try temporaryDirectory("live-restart")
            defer { try? FileManager.default.removeItem(at: directory) }
            let (audio, video) = (directory.appendingPathComponent("a.s16").path, directory.appendingPathComponent("v.rgb").path)
            let nginx = try NginxRTMP()
            try nginx.start()
            let port = nginx.port
            #expect(LivePort.stableRange.contains(port))

            let first = try pushRTMP(nginx.url(key: "first"), seconds: 30)
            defer { finish(first) }
            try #require(nginx.waitForPublisher(key: "first", timeout: 10), "\(nginx.log)\n\(first.stderr)")
            nginx.stop()
            #expect(!nginx.isRunning && !LivePort.acceptsConnections(port))
            let dropped = try first.wait(timeout: 10)
            #expect(dropped.status != 0, "the publisher fails when nginx goes")
            // What a restart on the port needs: nothing listening there (TIME_WAIT aside).
            #expect(await eventually { LivePort.isFree(port, reusingAddress: true) })

            try nginx.restart()
            #expect(nginx.port == port && LivePort.acceptsConnections(port))
            // The player comes first: nginx holds it until the publisher appears.
            let pull = try Pull.start(url: nginx.url(key: "second"), seconds: 3, audioTo: audio, videoTo: video,
                                      videoSize: (Self.pictureWidth, Self.pictureHeight), readTimeout: 10)
            try #require(nginx.waitForPlayer(key: "second", timeout: 10), "\(nginx.log)\n\(pull.stderr)")
            let second = try pushRTMP(nginx.url(key: "second"), seconds: 8)
            defer { finish(second) }
            let pulled = try pull.wait(timeout: 30)
            #expect(pulled.status == 0, "\(pulled.stderr)\n\(nginx.log)")
            try expectToneAndHalves(audio: audio, video: video, seconds: 3, "nginx-rtmp restarted")
        }
    }
}
