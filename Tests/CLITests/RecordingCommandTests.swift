import Foundation
import MediaEngine
import TestSupport
import Testing

/// `send` and `receive` writing WebM, audio, snapshots and mixing a file, checked with ffprobe and ffmpeg.
@Suite(.serialized) struct RecordingCommands {
    @Test func sendMixesAFileAndRecordsWhatItSendsAndReceiveRecordsWhatArrives() async throws {
        try await Heavy.run {
            let directory = try temporaryDirectory("cli-record")
            defer { try? FileManager.default.removeItem(at: directory) }
            let path = { (name: String) in directory.appendingPathComponent(name).path }
            // The mix file: 1 kHz at half scale, 0.5 s, looped.
            var tone = ToneGenerator(.sine(1_000), amplitude: 0.5)
            let mixFile = path("tone.wav")
            let writer = try WAVWriter(path: mixFile, layout: .mono)
            try tone.clip(seconds: 0.5).samples.withUnsafeBufferPointer { try writer.write($0) }
            try writer.close()

            let probe = try UDPSocket(bindTo: SocketAddress(host: "127.0.0.1", port: 0))
            let port = probe.localAddress.port
            probe.close()
            let key = SRTPKeyingMaterial.random().base64
            let send = ["send", "--to", "127.0.0.1:\(port)", "--audio", "silence", "--video", "testsrc:320x240@15", "--bundle",
                        "--sdp", path("s.sdp")]
            let keyEnvironment = ["MEDIAENGINE_SRTP_KEY": key]
            #expect(try CLI.run(send + ["--sdp-only"], environment: keyEnvironment).status == 0)
            let receiving = try CLI.start(["receive", "--sdp", path("s.sdp"), "--record", path("received.webm"), "--duration", "20"])
            #expect(receiving.waitForOutput(containing: "for video", timeout: 10))
            let sent = try CLI.run(send + ["--duration", "3", "--mix-file", mixFile, "--mix-loops", "-1", "--mix-send-volume", "0.5",
                                           "--record-local", path("sent.webm"), "--record-video-bitrate", "80000",
                                           "--record-audio", path("sent.ogg"), "--snapshot", path("first.png")], environment: keyEnvironment)
            #expect(sent.status == 0, "\(sent.stderr)")
            let received = try receiving.wait(timeout: 20)
            #expect(received.status == 0, "\(received.stderr)")
            #expect(received.stderr.contains("recorded \(path("received.webm"))"), "\(received.stderr)")

            for name in ["sent.webm", "received.webm"] {
                let file = try Probe(path: path(name))
                #expect(file.streams.map(\.codec).sorted() == ["opus", "vp8"], "\(name): \(file.streams)")
                #expect(abs((file.duration ?? 0) - 3) <= 0.2, "\(name): \(file.duration ?? 0) s")
                let errors = try Tool.decodeErrors(path(name))
                #expect(errors.isEmpty, "\(name) decodes cleanly: \(errors)")
            }
            // The far end hears the file at the send volume: half of its own half scale.
            let far = path("far.wav")
            try Tool.decodeAudio(path("received.webm"), to: far)
            let heard = try AudioFile.read(path: far).samples.dropFirst(24_000)
            let frequency = Array(heard).withUnsafeBufferPointer { AudioQuality.toneFrequency($0) }
            #expect(abs((frequency ?? 0) - 1_000) < 3, "\(frequency ?? 0) Hz")
            let expected = 0.5 * 0.5 * 32_767 / 2.0.squareRoot()
            #expect(abs(rms(heard) / expected - 1) <= 0.1, "received RMS \(rms(heard)), expected \(expected)")
            // The local recording's video was re-encoded at 80 kb/s; what was sent (up to 1 Mb/s) is larger.
            let local = try Probe.packetBytes(path: path("sent.webm"), streams: "v")
            let remote = try Probe.packetBytes(path: path("received.webm"), streams: "v")
            let localRate = Double(local * 8) / 3
            #expect(localRate <= 80_000 * 1.5 && local * 3 < remote * 2, "re-encoded \(local) bytes (\(Int(localRate)) b/s) against \(remote) as sent")
            // The sent audio (the mix) as Ogg Opus, and the first picture as PNG.
            let ogg = try AudioFile.read(path: path("sent.ogg"))
            #expect(abs(Double(ogg.samplesPerChannel) / 48_000 - 3) < 0.1)
            let png = try Data(contentsOf: URL(fileURLWithPath: path("first.png")))
            #expect(png.prefix(8) == Data([0x89, 0x50, 0x4E, 0x47, 0x0D, 0x0A, 0x1A, 0x0A]))
            let width = png[16..<20].reduce(0) { $0 << 8 | Int($1) }
            let height = png[20..<24].reduce(0) { $0 << 8 | Int($1) }
            #expect(width == 320 && height == 240)
            print("send/receive recordings: local \(local) bytes, received \(remote) bytes, far-end RMS \(rms(heard)) of \(expected)")
        }
    }

    @Test func aRecordingCutShortByAKillPlaysUpToItsLastCluster() async throws {
        try await Heavy.run {
            let directory = try temporaryDirectory("cli-kill")
            defer { try? FileManager.default.removeItem(at: directory) }
            let sink = try UDPSocket(bindTo: SocketAddress(host: "127.0.0.1", port: 0))
            defer { sink.close() }
            let file = directory.appendingPathComponent("killed.webm").path
            let sending = try CLI.start(["send", "--to", "127.0.0.1:\(sink.localAddress.port)", "--bundle", "--no-srtp", "--audio", "sine:440",
                                         "--video", "testsrc:320x240@15", "--duration", "60", "--record-local", file])
            #expect(sending.waitForOutput(containing: "sending to", timeout: 10))
            // Three clusters (a second each, 45 pictures) on disk before the kill; ffprobe is a
            // process per look, so not too often.
            #expect(await eventually(every: .milliseconds(250)) { ((try? Probe.frameSizes(path: file))?.count ?? 0) >= 45 },
                    "three clusters written")
            sending.killNow()
            _ = try sending.wait(timeout: 5)

            // No cues, no duration, no segment size: still every whole cluster plays.
            #expect(try Tool.decodeErrors(file).isEmpty, "a killed recording decodes cleanly")
            let frames = try Probe.frameSizes(path: file)
            #expect(frames.count >= 30, "\(frames.count) pictures kept of the 45 or more sent (clusters close every second)")
            let decoded = directory.appendingPathComponent("killed.wav").path
            try Tool.decodeAudio(file, to: decoded)
            let seconds = Double(try AudioFile.read(path: decoded).samplesPerChannel) / 48_000
            #expect(seconds >= 2, "\(seconds) s of audio kept")
            print("killed after three clusters: \(frames.count) pictures and \(seconds) s of audio play")
        }
    }

    @Test(arguments: [
        (["--record-local", "/nonexistent/x.webm"], "the directory /nonexistent does not exist"),
        (["--record-local", "x.mkv"], "--record-local x.mkv: use a .webm file"),
        (["--record-video-bitrate", "100000"], "--record-video-bitrate needs --record-local"),
        (["--record-local", "x.webm", "--record-video-bitrate", "5"], "--record-video-bitrate 5 is outside"),
        (["--record-audio", "x.mp3"], "use a .wav, .ogg or .opus file"),
        (["--snapshot", "x.jpg"], "use a .png file"),
        (["--mix-file", "/nonexistent/m.wav"], "/nonexistent/m.wav"),
        (["--mix-file", "/dev/null"], "/dev/null"),
    ])
    func badRecordingAndMixOptionsAreNamed(extra: [String], message: String) async throws {
        try await Heavy.run {
            let run = try CLI.run(["send", "--to", "127.0.0.1:5004", "--no-srtp", "--audio", "sine:440", "--video", "testsrc"] + extra)
            #expect(run.status != 0)
            #expect(run.stderr.contains(message), "\(run.stderr)")
        }
    }
}
