import Foundation
import MediaEngine
import Testing
import TestSupport

/// Calls with aiortc, a WebRTC stack that is not ours: it offers, a `MediaSession` answers,
/// ICE finds the path, DTLS agrees the SRTP keys, and tones and pictures go both ways.
@Suite struct AiortcCalls {
    /// What `call.py` printed last: one line of JSON.
    struct PeerReport: Decodable {
        var established: Bool
        var dtls: String
        var srtp_profile: String?
        var audio_samples: Int
        var video_frames: Int
        var width: Int
        var height: Int
        var frames_sent: Int
    }

    /// One call: aiortc sends 660 Hz and 320x240 pictures for `seconds`, the session 440 Hz
    /// and a 320x240 test pattern; `edit` changes aiortc's offer before the session sees it.
    struct Call {
        var peer: CLIRun
        var report: PeerReport
        var peerHeard: [Int16]
        var heard: [Int16]
        var pictures: (count: Int, width: Int, height: Int)
        var secured: SRTPProfile?
        var failure: String?
        var ended: String?
        var summary: MediaSession.Summary

        init(seconds: Double, edit: (String) -> String = { $0 }) async throws {
            let directory = try temporaryDirectory("aiortc-call")
            defer { try? FileManager.default.removeItem(at: directory) }
            let wav = directory.appendingPathComponent("aiortc-heard.wav").path
            let process = try Aiortc.start("call.py", ["--tone", "660", "--size", "320x240", "--seconds", "\(seconds)", "--wav", wav])
            guard process.waitForOutput(containing: "-----END OFFER-----", timeout: 30), let offer = Aiortc.block("OFFER", in: process.stdout) else {
                let run = try process.wait(timeout: 5)
                throw ToolFailure("aiortc made no offer: \(run.stdout) \(run.stderr)")
            }
            let heard = Locked<[Int16]>([])
            let pictures = Locked<(count: Int, width: Int, height: Int)>((0, 0, 0))
            let secured = Locked<SRTPProfile?>(nil)
            let failure = Locked<String?>(nil)
            let ended = Locked<String?>(nil)
            var configuration = MediaSession.Configuration(audio: try MediaSources.audio("sine:440"),
                                                           video: try MediaSources.video("testsrc:320x240@30"))
            configuration.host = "127.0.0.1"
            configuration.remoteAudio = { pcm in heard.withLock { $0.append(contentsOf: pcm) } }
            configuration.remoteVideo = { _, frame in pictures.withLock { $0 = ($0.count + 1, frame.width, frame.height) } }
            let session = try MediaSession(configuration: configuration, answering: edit(offer))
            let answer = try #require(session.webRTCAnswer)
            try session.start { event in
                switch event {
                case .dtlsConnected(let profile): secured.withLock { $0 = profile }
                case .connectFailed(let why): failure.withLock { $0 = $0 ?? why }
                case .disconnected(let why): ended.withLock { $0 = $0 ?? why }
                default: break
                }
            }
            try process.write(answer + "-----END ANSWER-----\n")
            peer = try process.wait(timeout: seconds + 30)
            summary = await session.stop()
            let line = try #require(peer.stdout.split(separator: "\n").last { $0.hasPrefix("{") }, "aiortc: \(peer.stdout) \(peer.stderr)")
            report = try JSONDecoder().decode(PeerReport.self, from: Data(line.utf8))
            peerHeard = FileManager.default.fileExists(atPath: wav) ? try AudioFile.read(path: wav).samples : []
            self.heard = heard.withLock { $0.detached }
            self.pictures = pictures.withLock { $0 }
            self.secured = secured.withLock { $0 }
            self.failure = failure.withLock { $0 }
            self.ended = ended.withLock { $0 }
        }

        /// Levels of `frequency` in two seconds from the second second on (connected, and
        /// before either side stops).
        static func level(_ samples: [Int16], _ frequency: Double, from second: Int) -> Double {
            toneLevel(samples.dropFirst(second * 48_000).prefix(96_000), frequency: frequency, sampleRate: 48_000)
        }
    }

    @Test func aiortcAndASessionCarryTonesAndPicturesBothWaysOverDTLSSRTP() async throws {
        try await Heavy.run {
            let seconds = 6.0
            let call = try await Call(seconds: seconds)
            let report = call.report
            #expect(call.peer.status == 0 && report.established, "aiortc never connected: \(call.peer.stdout) \(call.peer.stderr)")
            #expect(call.failure == nil)
            // aiortc says goodbye when it closes, with RTCP BYE and DTLS close_notify (in
            // either order): one of them ends the call, nothing else does.
            let goodbye = call.ended.map { $0.contains("BYE") || $0.contains("closed the DTLS association") } ?? true
            #expect(goodbye, "ended: \(call.ended ?? "")")
            // GCM is this side's first choice and aiortc offers it.
            #expect(call.secured == .aeadAES128GCM)
            #expect(report.srtp_profile == "SRTP_AEAD_AES_128_GCM" && report.dtls == "connected", "\(report)")

            // aiortc decoded our pictures at their size and heard our 440 Hz, not its own 660 Hz.
            #expect(report.video_frames >= Int(seconds * 30 * 0.6) && report.width == 320 && report.height == 240, "\(report)")
            #expect(call.peerHeard.count >= Int(seconds * 48_000 * 0.6), "aiortc received \(call.peerHeard.count) samples")
            let ours440 = Call.level(call.peerHeard, 440, from: 1), ours660 = Call.level(call.peerHeard, 660, from: 1)
            #expect(ours440 > 0.05 && ours440 > 20 * ours660, "aiortc heard 440 Hz at \(ours440), 660 Hz at \(ours660)")

            // We decoded aiortc's pictures at their size and heard its 660 Hz.
            let pictures = call.pictures
            #expect(pictures.count >= Int(Double(report.frames_sent) * 0.6) && pictures.width == 320 && pictures.height == 240,
                    "decoded \(pictures.count) of \(report.frames_sent) pictures, last \(pictures.width)x\(pictures.height)")
            let their660 = Call.level(call.heard, 660, from: 2), their440 = Call.level(call.heard, 440, from: 2)
            #expect(their660 > 0.05 && their660 > 20 * their440, "we heard 660 Hz at \(their660), 440 Hz at \(their440)")
            #expect(call.summary.connectivity != nil)
            print("aiortc call: aiortc decoded \(report.video_frames) pictures, heard 440 Hz at \(ours440) (660 Hz \(ours660)); "
                  + "we decoded \(pictures.count) of \(report.frames_sent), heard 660 Hz at \(their660) (440 Hz \(their440)); \(report.srtp_profile ?? "-")")
        }
    }

    /// The offer's fingerprints are not those of the certificate aiortc presents (a man in
    /// the middle's offer): the handshake runs, the check after it fails, the call fails
    /// with a reason, and no media flows either way.
    @Test func aCertificateThatMatchesNoFingerprintCarriesNoMedia() async throws {
        try await Heavy.run {
            let forged = "sha-256 " + (0..<32).map { String(format: "%02X", $0) }.joined(separator: ":")
            let call = try await Call(seconds: 4) { offer in
                offer.replacingOccurrences(of: "a=fingerprint:[^\r\n]*", with: "a=fingerprint:\(forged)", options: .regularExpression)
            }
            #expect(call.failure?.contains("DTLS") == true && call.failure?.contains("matches none") == true, "\(call.failure ?? "no failure")")
            #expect(call.secured == nil)
            #expect(call.pictures.count == 0 && Call.level(call.heard, 660, from: 1) < 0.001, "we decoded \(call.pictures.count) pictures")
            #expect(call.report.video_frames == 0 && call.report.audio_samples == 0, "aiortc got media: \(call.report)")
        }
    }
}
