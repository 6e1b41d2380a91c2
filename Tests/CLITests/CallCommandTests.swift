import Foundation
import MediaEngine
import TestSupport
import Testing

/// `call` and `answer` as users run them: a server, two tokens, two terminals.
@Suite(.serialized) struct CallCommands {
    /// A server, two tokens, their files (`TestSupport.ServerSetup`).
    typealias Setup = ServerSetup

    struct CLIFailure: Error, CustomStringConvertible {
        let description: String
        init(_ description: String) { self.description = description }
    }

    @Test func aVideoCallConnectsCarriesMediaBothWaysAndEndsWithARecord() async throws {
        try await Heavy.run {
            let setup = try Setup()
            defer { setup.finish() }
            let wav = setup.directory.appendingPathComponent("heard.wav").path
            let answer = try CLI.start(["answer", "--server", setup.url, "--token-file", setup.bobFile, "--auto-accept", "--audio", "sine:660",
                                        "--record-remote", wav, "--media-host", "127.0.0.1"])
            #expect(answer.waitForOutput(containing: "waiting for calls as bob", timeout: 20), "\(answer.stderr)")
            let png = setup.directory.appendingPathComponent("me.png").path
            let bobWebM = setup.directory.appendingPathComponent("bob.webm").path
            let aliceWebM = setup.directory.appendingPathComponent("alice.webm").path
            let call = try CLI.run(["call", "bob", "--server", setup.url, "--token-file", setup.aliceFile, "--video", "--quality", "low",
                                    "--audio", "sine:440", "--duration", "2", "--media-host", "127.0.0.1", "--snapshot", png,
                                    "--record-remote", bobWebM, "--record-local", aliceWebM])
            #expect(call.status == 0, "\(call.stderr)")
            #expect(call.stdout.contains("snapshot 176x144 saved to \(png)"), "\(call.stdout)")
            let signature = try Data(contentsOf: URL(fileURLWithPath: png)).prefix(8)
            #expect(Array(signature) == [0x89, 0x50, 0x4E, 0x47, 0x0D, 0x0A, 0x1A, 0x0A], "a PNG file")
            let answered = try answer.wait(timeout: 20)
            #expect(answered.status == 0, "\(answered.stderr)")
            for output in [call.stdout, answered.stdout] {
                #expect(output.contains("callStatus callID=") && output.contains(" connected"), "\(output)")
                #expect(output.contains("alice->bob video reason=completed connected=2."), "\(output)")
                #expect(output.contains("received audio packets=") && output.contains("received video packets="), "\(output)")
            }
            #expect(call.stdout.contains("response callID=") && call.stdout.contains("accepted=true"))
            #expect(answered.stdout.contains("receive callID=") && answered.stdout.contains("from=alice type=video quality=low"))
            // Per-user WebM recordings of both parties, with their events.
            for (user, file) in [("bob", bobWebM), ("alice", aliceWebM)] {
                #expect(call.stdout.contains("recordStarted callID=") && call.stdout.contains("user=\(user) file=\(file)"), "\(call.stdout)")
                #expect(call.stdout.contains("recordStopped callID=") && call.stdout.contains("recordStopped callID=\(call.stdout.callID ?? "") user=\(user)"),
                        "\(call.stdout)")
                let probe = try Probe(path: file)
                #expect(probe.streams.map(\.codec).sorted() == ["opus", "vp8"] && probe.streams.contains { $0.width == 176 && $0.height == 144 },
                        "\(file): \(probe.streams)")
                #expect((1.5...2.3).contains(probe.duration ?? 0), "\(file): \(probe.duration ?? 0) s of a 2 s call")
                #expect(try Tool.decodeErrors(file).isEmpty)
            }
            let heard = try AudioFile.read(path: wav)
            #expect(Double(heard.samples.count) > 1.5 * 48_000, "\(heard.samples.count) samples recorded")
            let frequency = heard.samples.dropFirst(9_600).withUnsafeBufferPointer { AudioQuality.toneFrequency($0) }
            #expect(abs((frequency ?? 0) - 440) < 3, "bob heard alice's tone: \(frequency ?? 0) Hz")
            for output in [call.stdout, call.stderr, answered.stdout, answered.stderr] {
                #expect(!output.contains(setup.alice) && !output.contains(setup.bob), "tokens are never printed")
            }
        }
    }

    @Test func aMixFileIsSentAtItsVolumeAndCompletes() async throws {
        try await Heavy.run {
            let setup = try Setup()
            defer { setup.finish() }
            let file = setup.directory.appendingPathComponent("prompt.wav").path
            let tone = (0..<24_000).map { Int16(0.6 * 32_767 * sin(2 * Double.pi * 880 * Double($0) / 48_000)) }
            try AudioFile.writeWAV(AudioFrame(layout: .mono, samples: tone), path: file)
            let wav = setup.directory.appendingPathComponent("heard.wav").path
            let answer = try CLI.start(["answer", "--server", setup.url, "--token-file", setup.bobFile, "--auto-accept", "--audio", "silence",
                                        "--record-remote", wav, "--media-host", "127.0.0.1"])
            #expect(answer.waitForOutput(containing: "waiting for calls", timeout: 20))
            let recording = setup.directory.appendingPathComponent("call.ogg").path
            let call = try CLI.run(["call", "bob", "--server", setup.url, "--token-file", setup.aliceFile, "--audio", "silence", "--duration", "2",
                                    "--mix-file", file, "--mix-loops", "1", "--mix-send-volume", "0.5", "--media-host", "127.0.0.1",
                                    "--record-audio", recording])
            #expect(call.status == 0, "\(call.stderr)")
            #expect(call.stdout.contains("recording the call's audio to \(recording)"), "\(call.stdout)")
            let recorded = try AudioFile.read(path: recording).samples
            #expect(abs(Double(recorded.count) / 48_000 - 2) < 0.5, "Ogg Opus recording of \(Double(recorded.count) / 48_000) s")
            #expect(call.stdout.contains("audioMixTaskCompleted \(file)"), "\(call.stdout)")
            _ = try answer.wait(timeout: 20)
            let heard = try AudioFile.read(path: wav).samples
            let blocks = stride(from: 0, to: heard.count - 4_800, by: 4_800).map { start -> Double in
                (heard[start..<(start + 4_800)].reduce(0.0) { $0 + Double($1) * Double($1) } / 4_800).squareRoot() / 32_768
            }
            let loud = blocks.filter { $0 > 0.1 }
            let expected: Double = 0.6 * 0.5 / 2.0.squareRoot()
            #expect(loud.count >= 8 && loud.count <= 12, "two plays of 0.5 s: \(loud.count) loud blocks of 100 ms")
            let median = loud.sorted()[loud.count / 2]
            let error: Double = abs(median - expected) / expected
            #expect(error < 0.1, "RMS \(median), half of the file's \(expected * 2)")
        }
    }

    @Test func aRejectedCallEndsAsRejectedOnBothSides() async throws {
        try await Heavy.run {
            let setup = try Setup()
            defer { setup.finish() }
            let answer = try CLI.start(["answer", "--server", setup.url, "--token-file", setup.bobFile, "--reject", "--media-host", "127.0.0.1"])
            #expect(answer.waitForOutput(containing: "waiting for calls", timeout: 20))
            let call = try CLI.run(["call", "bob", "--server", setup.url, "--token-file", setup.aliceFile, "--media-host", "127.0.0.1"])
            #expect(call.status == 0, "\(call.stderr)")
            #expect(call.stdout.contains("accepted=false") && call.stdout.contains("reason=rejected"), "\(call.stdout)")
            let answered = try answer.wait(timeout: 20)
            #expect(answered.stdout.contains("reason=rejected"), "\(answered.stdout)")
        }
    }

    @Test func callingSomeoneOfflineOrAServerThatIsNotThereFailsWithAMessage() async throws {
        try await Heavy.run {
            let setup = try Setup()
            defer { setup.finish() }
            let offline = try CLI.run(["call", "carol", "--server", setup.url, "--token-file", setup.aliceFile])
            #expect(offline.status != 0)
            #expect(offline.stderr.contains("carol has no device online (11001)"), "\(offline.stderr)")
            let forged = try CLI.run(["call", "bob", "--server", setup.url, "--token", "not.a.token"])
            #expect(forged.stderr.contains("token is not valid (401)"), "\(forged.stderr)")
            let started = Date()
            let nowhere = try CLI.run(["call", "bob", "--server", "ws://127.0.0.1:9/", "--token-file", setup.aliceFile])
            #expect(nowhere.status != 0 && nowhere.stderr.contains("cannot connect to ws://127.0.0.1:9/"), "\(nowhere.stderr)")
            #expect(Date().timeIntervalSince(started) < 15)
        }
    }

    @Test(arguments: [
        (["answer", "--server", "ws://127.0.0.1:1/", "--token", "t"], "give one of --auto-accept or --reject"),
        (["call", "bob", "--server", "ws://127.0.0.1:1/", "--token", "t", "--quality", "4k"], "--quality '4k' is not one of"),
        (["call", "bob", "--server", "ws://127.0.0.1:1/", "--token", "t", "--audio", "sine:0"], "sine needs a frequency"),
        (["call", "bob", "--server", "ws://127.0.0.1:1/", "--token", "t", "--record-remote", "x.mp3"], "use a .webm or .wav file"),
        (["call", "bob", "--server", "ws://127.0.0.1:1/", "--token", "t", "--record-local", "/nonexistent/me.webm"], "the directory /nonexistent does not exist"),
        (["call", "bob", "--server", "ws://127.0.0.1:1/", "--token", "t", "--mix-file", "/nonexistent/a.wav"], "/nonexistent/a.wav"),
        (["call", "bob", "--server", "ws://127.0.0.1:1/", "--token", "t", "--record-audio", "/nonexistent/dir/c.wav"], "the directory /nonexistent/dir does not exist"),
        (["call", "bob", "--server", "ws://127.0.0.1:1/", "--token", "t", "--record-audio", "c.mp3"], "use a .wav, .ogg or .opus file"),
        (["call", "bob", "--server", "ws://127.0.0.1:1/", "--token", "t", "--snapshot", "me.jpg"], "--snapshot me.jpg: use a .png file"),
        (["call", "bob", "--server", "ws://127.0.0.1:1/", "--token", "t", "--mix-file", "/dev/null", "--mix-send-volume", "2"], "/dev/null"),
    ])
    func badOptionsAreNamed(arguments: [String], message: String) async throws {
        try await Heavy.run {
            let run = try CLI.run(arguments)
            #expect(run.status != 0)
            #expect(run.stderr.contains(message), "\(run.stderr)")
        }
    }
}

extension String {
    /// The callID of the first `recordStarted` line.
    var callID: String? {
        guard let line = split(separator: "\n").first(where: { $0.hasPrefix("recordStarted callID=") }) else { return nil }
        return line.dropFirst("recordStarted callID=".count).split(separator: " ").first.map(String.init)
    }
}
