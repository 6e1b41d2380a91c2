import Foundation
import MediaEngine
import TestSupport
import Testing

@Suite struct SendReceiveCommands {
    @Test func sendToReceiveOverLoopbackWithGCMAndBundle() async throws {
        try await Heavy.run {
            let directory = try temporaryDirectory("cli-loop")
            defer { try? FileManager.default.removeItem(at: directory) }
            let probe = try UDPSocket(bindTo: SocketAddress(host: "127.0.0.1", port: 0))
            let port = probe.localAddress.port
            probe.close()
            let sdp = directory.appendingPathComponent("s.sdp").path
            let wav = directory.appendingPathComponent("a.wav").path
            let arguments = ["send", "--to", "127.0.0.1:\(port)", "--audio", "sine:1000", "--video", "testsrc:160x120@15",
                             "--bundle", "--sdp", sdp]
            let key = SRTPKeyingMaterial.random(profile: .aeadAES128GCM).base64
            // The key from a file of its own for the SDP, from the environment for the send.
            let keyFile = directory.appendingPathComponent("srtp.key").path
            #expect(FileManager.default.createFile(atPath: keyFile, contents: Data(key.utf8), attributes: [.posixPermissions: 0o600]))
            let prepared = try CLI.run(arguments + ["--sdp-only", "--srtp-profile", "AEAD_AES_128_GCM", "--srtp-key-file", keyFile])
            #expect(prepared.status == 0, "\(prepared.stderr)")
            let permissions = try FileManager.default.attributesOfItem(atPath: sdp)[.posixPermissions] as? Int
            #expect(permissions == 0o600, "the SDP holds the key")
            let text = try String(contentsOfFile: sdp, encoding: .utf8)
            #expect(text.contains("a=crypto:1 AEAD_AES_128_GCM inline:") && text.contains("a=rtcp-mux"))

            let listening = try CLI.start(["receive", "--sdp", sdp, "--record", wav, "--duration", "20", "--stats"])
            #expect(listening.waitForOutput(containing: "for video", timeout: 10))
            let run = try CLI.run(arguments + ["--srtp-profile", "AEAD_AES_128_GCM", "--duration", "1.5"], environment: ["MEDIAENGINE_SRTP_KEY": key])
            #expect(!run.stderr.contains("warning"), "no warning for the environment's key: \(run.stderr)")
            #expect(run.status == 0, "\(run.stderr)")
            #expect(run.stdout.hasPrefix("sent: audio packets=75"), "\(run.stdout)")
            // A clean path: nothing asked for again, and the receiver's transport-wide feedback
            // reached the bandwidth estimator.
            #expect(run.stdout.contains("nacks=0 retransmitted=0") && run.stdout.contains("estimate="), "\(run.stdout)")
            let received = try listening.wait(timeout: 15)
            #expect(received.status == 0, "\(received.stderr)")
            #expect(received.stdout.contains("received audio: packets=75"), "\(received.stdout)")
            #expect(received.stdout.contains("lost=0 auth_failures=0"))
            // --stats: a line per stream each second, with W3C webrtc-stats names.
            let audioStats = received.stdout.split(separator: "\n").filter { $0.hasPrefix("stats ") && $0.contains(" audio: ") }
            #expect(!audioStats.isEmpty, "\(received.stdout)")
            for name in ["jitterBufferDelay=", "jitterBufferEmittedCount=", "concealedSamples=", "concealmentEvents=",
                         "insertedSamplesForDeceleration=", "removedSamplesForAcceleration=", "packetsLost=",
                         "packetsDiscarded=", "jitter="] {
                #expect(audioStats.first?.contains(name) == true, "\(name) in \(audioStats.first ?? "")")
            }
            let audio = try AudioFile.read(path: wav)
            let frequency = audio.samples.dropFirst(4_800).withUnsafeBufferPointer { AudioQuality.toneFrequency($0) }
            #expect(abs((frequency ?? 0) - 1_000) < 2)
            #expect(!received.stdout.contains(key) && !received.stderr.contains(key) && !run.stderr.contains(key))
        }
    }

    @Test(arguments: [
        (["send", "--to", "127.0.0.1:5004"], "give --audio, --video or both"),
        (["send", "--to", "nowhere", "--audio", "sine:440", "--no-srtp"], "'nowhere' is not HOST:PORT"),
        (["send", "--to", "127.0.0.1:5004", "--audio", "square:440", "--no-srtp"], "audio source 'square:440' is not one of"),
        (["send", "--to", "127.0.0.1:5004", "--audio", "sine:0", "--no-srtp"], "sine needs a frequency"),
        (["send", "--to", "127.0.0.1:5004", "--video", "testsrc:641x480", "--no-srtp"], "even sizes"),
        (["send", "--to", "127.0.0.1:5004", "--audio", "file:/nonexistent/a.wav", "--no-srtp"], "/nonexistent/a.wav"),
        (["send", "--to", "127.0.0.1:5004", "--audio", "sine:440"], "add --sdp, --srtp-key-file or --no-srtp"),
        (["send", "--to", "127.0.0.1:5004", "--audio", "sine:440", "--srtp-key", "c2hvcnQ="], "needs 30 bytes of key and salt, got 5"),
        (["send", "--to", "127.0.0.1:5004", "--audio", "sine:440", "--srtp-key", "!!!"], "not valid base64"),
        (["send", "--to", "127.0.0.1:5004", "--audio", "sine:440", "--srtp-key", "c2hvcnQ=", "--no-srtp"], "cannot be combined"),
        (["send", "--to", "127.0.0.1:5004", "--audio", "sine:440", "--no-srtp", "--srtp-profile", "NULL"], "--srtp-profile 'NULL'"),
        (["receive", "--sdp", "/nonexistent/in.sdp"], "cannot read the SDP file /nonexistent/in.sdp"),
        (["receive", "--sdp", "x.sdp", "--record", "out.mp3"], "use a .wav (audio), .y4m (video) or .webm (both, as received) file"),
    ])
    func badOptionsExitNonZeroNamingTheProblem(arguments: [String], message: String) async throws {
        try await Heavy.run {
            let run = try CLI.run(arguments)
            #expect(run.status != 0)
            #expect(run.stderr.contains(message), "\(run.stderr)")
        }
    }

    @Test(arguments: [
        ("garbage", "line 1"),
        ("v=0\r\no=- 0 0 IN IP4 127.0.0.1\r\ns=-\r\nt=0 0\r\nm=audio 5004 RTP/AVP 97\r\na=rtpmap:97 opus/48000/2\r\n", "has no c= line"),
        ("v=0\r\no=- 0 0 IN IP4 127.0.0.1\r\ns=-\r\nc=IN IP4 127.0.0.1\r\nt=0 0\r\nm=audio 5004 RTP/AVP 97\r\na=rtpmap:97 opus/48000/2\r\na=crypto:1 AES_CM_128_HMAC_SHA1_80 inline:c2hvcnQ=\r\n", "line 8: AES_CM_128_HMAC_SHA1_80 key and salt are 5 bytes"),
        ("v=0\r\no=- 0 0 IN IP4 127.0.0.1\r\ns=-\r\nc=IN IP4 127.0.0.1\r\nt=0 0\r\nm=video 5006 RTP/AVP 96\r\na=rtpmap:96 H264/90000\r\n", "offers no VP8"),
    ])
    func badSDPFilesAreNamedInTheError(sdp: String, message: String) async throws {
        try await Heavy.run {
            let directory = try temporaryDirectory("cli-sdp")
            defer { try? FileManager.default.removeItem(at: directory) }
            let path = directory.appendingPathComponent("bad.sdp").path
            try sdp.write(toFile: path, atomically: true, encoding: .utf8)
            let run = try CLI.run(["receive", "--sdp", path, "--duration", "1"])
            #expect(run.status != 0)
            #expect(run.stderr.contains(path) && run.stderr.contains(message), "\(run.stderr)")
        }
    }
}
