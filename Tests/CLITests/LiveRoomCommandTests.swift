import Foundation
import MediaEngine
import TestSupport
import Testing

/// `meeting join --bypass-url` and `--bypass` as users run them: a live room pushed to a
/// file, controlled from standard input, and the options' mistakes named.
@Suite(.serialized) struct LiveRoomCommands {
    @Test func badLiveOptionsAreNamedBeforeAnythingConnects() throws {
        let cases: [([String], String)] = [
            (["--bypass-url", "rtmp://127.0.0.1/live/k", "--bypass"], "exclude each other"),
            (["--mix-mode", "2"], "give --bypass-url"),
            (["--bypass-url", "rtmp://127.0.0.1/live/k", "--mix-mode", "9"], "--mix-mode 9"),
            (["--bypass-url", "rtmp://127.0.0.1/live/k", "--layout", "/nonexistent/layout.json"], "--layout /nonexistent/layout.json"),
            (["--bypass", "--audience"], "actors"),
        ]
        for (options, message) in cases {
            let run = try CLI.run(["meeting", "join", "show", "--server", "ws://127.0.0.1:9/", "--token", "t"] + options)
            #expect(run.status != 0 && run.stderr.contains(message), "\(options): \(run.stderr)")
        }
        let server = try CLI.run(["server", "--live-size", "1280x721@30", "--duration", "1"])
        #expect(server.status != 0 && server.stderr.contains("--live-size 1280x721@30"), "\(server.stderr)")
    }

    @Test func aHostPushesTheRoomToAFileAndControlsItFromStandardInput() async throws {
        try await Heavy.runAlone {
            let recordings = try temporaryDirectory("live-recordings")
            defer { try? FileManager.default.removeItem(at: recordings) }
            let setup = try CallCommands.Setup(serverOptions: ["--live-size", "640x360@15", "--live-bitrate", "600000",
                                                               "--live-recording-directory", recordings.path])
            defer { setup.finish() }
            #expect(try CLI.run(["meeting", "reserve", "show", "--server", setup.url, "--token-file", setup.aliceFile]).status == 0)
            // A client names a file in the server's recording directory, never a path of its choosing.
            let file = recordings.appendingPathComponent("room.flv").path
            let alice = try CLI.start(["meeting", "join", "show", "--server", setup.url, "--token-file", setup.aliceFile, "--audio", "sine:440",
                                       "--video", "--video-source", "color:ff0000:320x180@15", "--media-host", "127.0.0.1",
                                       "--bypass-url", "room.flv", "--mix-mode", "2", "--commands", "--duration", "8"], input: true)
            #expect(alice.waitForOutput(containing: "joined show", timeout: 20), "\(alice.stderr)")
            let bob = try CLI.start(["meeting", "join", "show", "--server", setup.url, "--token-file", setup.bobFile, "--audio", "sine:660",
                                     "--video", "--video-source", "color:0000ff:320x180@15", "--media-host", "127.0.0.1", "--bypass",
                                     "--simulcast-layers", "1", "--duration", "6"])
            #expect(alice.waitForOutput(containing: "output=push status=505", timeout: 20), "pushing: \(alice.stdout)\(alice.stderr)")
            try alice.write("mix-mode 3\n")
            #expect(alice.waitForOutput(containing: "ok mix-mode 3", timeout: 10), "\(alice.stdout)")
            try alice.write("url ftp://example.com/x\n")
            #expect(alice.waitForOutput(containing: "url ftp://example.com/x failed", timeout: 10), "\(alice.stdout)")
            #expect(alice.stdout.contains("(20202)"), "the typed error's code: \(alice.stdout)")
            try alice.write("url /etc/evil.flv\n")
            #expect(alice.waitForOutput(containing: "url /etc/evil.flv failed", timeout: 10), "a path outside the recording directory: \(alice.stdout)")
            let bobRun = try bob.wait(timeout: 30)
            #expect(bobRun.status == 0, "\(bobRun.stderr)")
            // By default a 320x180 camera goes as two sizes (none under 160x90); bob asked for one stream.
            #expect(alice.stdout.contains("sending video as 2 simulcast layers: 160x90, 320x180"), "\(alice.stdout)")
            #expect(bobRun.stdout.contains("sending video as one stream: 320x180"), "\(bobRun.stdout)")
            let done = try alice.wait(timeout: 30)
            #expect(done.status == 0, "\(done.stderr)")

            let audio = setup.directory.appendingPathComponent("room.s16").path
            let decode = try BackgroundProcess(program: "ffmpeg", arguments: ["-hide_banner", "-loglevel", "error", "-i", file, "-map", "0:a:0",
                                                                              "-ac", "1", "-ar", "48000", "-f", "s16le", "-y", audio]).wait(timeout: 60)
            #expect(decode.status == 0, "\(decode.stderr)")
            let samples = try readS16(audio)
            #expect(samples.count > 5 * 48_000, "\(samples.count) samples in the pushed file")
            let middle = samples[(samples.count / 4)..<(samples.count * 3 / 4)]
            let (host, coHost) = (toneLevel(middle, frequency: 440, sampleRate: 48_000), toneLevel(middle, frequency: 660, sampleRate: 48_000))
            #expect(host > 0.05 && coHost > 0.05, "both tones in the file: \(host), \(coHost)")
        }
    }
}
