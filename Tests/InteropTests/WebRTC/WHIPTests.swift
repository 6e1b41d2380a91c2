import Foundation
import MediaEngine
import Testing
import TestSupport

/// WHIP and WHEP with aiortc against `mediaengine server` (RFC 9725): an aiortc publisher
/// is heard and seen by a `meeting join` participant, an aiortc viewer decodes a
/// participant's video, and a publisher that vanishes leaves within the leg timeout.
@Suite(.serialized) struct AiortcWHIP {
    @Test func anAiortcPublisherIsHeardAndSeenByAMeetingParticipantAndOneThatVanishesLeaves() async throws {
        try await Heavy.run {
            let setup = try ServerSetup(serverOptions: ["--host", "127.0.0.1", "--leg-timeout", "3"])
            defer { setup.finish() }
            let carolFile = try setup.tokenFile("carol")
            #expect(try CLI.run(["meeting", "reserve", "whip", "--server", setup.url, "--token-file", setup.aliceFile]).status == 0)
            let heard = setup.directory.appendingPathComponent("alice-heard.wav").path
            let alice = try CLI.start(["meeting", "join", "whip", "--server", setup.url, "--token-file", setup.aliceFile, "--audio", "sine:550",
                                       "--play", "file:\(heard)", "--duration", "14"])
            #expect(alice.waitForOutput(containing: "joined whip", timeout: 20), "\(alice.stdout)\(alice.stderr)")
            let bob = try Aiortc.start("whip.py", ["publish", "--url", "\(setup.httpURL)/whip/whip", "--token-file", setup.bobFile,
                                                   "--tone", "440", "--size", "320x240", "--seconds", "6"])
            // carol publishes too, then vanishes: no DELETE, no DTLS close.
            let carol = try Aiortc.start("whip.py", ["publish", "--url", "\(setup.httpURL)/whip/whip", "--token-file", carolFile,
                                                     "--tone", "330", "--size", "160x120", "--seconds", "3", "--abandon"])
            let (bobReport, _) = try WHIPPeer.run(bob)
            let (carolReport, _) = try WHIPPeer.run(carol)
            #expect(bobReport.status == 201 && bobReport.established == true && bobReport.delete_status == 200, "\(bobReport)")
            #expect(bobReport.location?.hasPrefix("/whip/sessions/") == true)
            // No TURN here, so no Link: the ICE-lite answer's host candidates are all a peer needs.
            #expect((bobReport.links ?? []).isEmpty, "\(String(describing: bobReport.links))")
            #expect(carolReport.status == 201 && carolReport.established == true && carolReport.delete_status == nil, "\(carolReport)")
            #expect(alice.waitForOutput(containing: "userLeft callID=", occurrences: 2, timeout: 15), "\(alice.stdout)")
            let run = try alice.wait(timeout: 30)
            #expect(run.status == 0, "\(run.stdout)\(run.stderr)")
            #expect(run.stdout.contains("user=bob reason=left"), "bob's DELETE: \(run.stdout)")
            #expect(run.stdout.contains("user=carol reason=timedOut"), "carol's leg timed out: \(run.stdout)")
            // What alice decoded of bob: all but the first few of what he sent.
            let frames = try #require(WHIPPeer.framesDecoded(of: "bob", in: run.stdout), "\(run.stdout)")
            let sent = try #require(bobReport.frames_sent)
            #expect(frames >= sent * 9 / 10, "alice decoded \(frames) of bob's \(sent) frames")
            #expect((WHIPPeer.framesDecoded(of: "carol", in: run.stdout) ?? 0) > 30, "\(run.stdout)")
            let samples = try AudioFile.read(path: heard).samples
            let levels = [440.0, 330, 550].map { WHIPPeer.peakLevel(samples, frequency: $0) }
            // A sine of amplitude 0.3 measures 0.21 (its RMS) when whole: each tone at 70 % of that.
            let connected = "connected after \(bobReport.connected_after ?? -1) and \(carolReport.connected_after ?? -1) s"
            #expect(levels[0] > 0.15 && levels[1] > 0.15, "alice heard bob (440 Hz) and carol (330 Hz) while they were there: \(levels); \(connected)")
            #expect(levels[2] < 0.005, "alice does not hear herself: \(levels)")
        }
    }

    @Test func anAiortcViewerDecodesAParticipantsVideoAndHearsItsTone() async throws {
        try await Heavy.run {
            let setup = try ServerSetup(serverOptions: ["--host", "127.0.0.1"])
            defer { setup.finish() }
            #expect(try CLI.run(["meeting", "reserve", "whep", "--server", setup.url, "--token-file", setup.aliceFile]).status == 0)
            let alice = try CLI.start(["meeting", "join", "whep", "--server", setup.url, "--token-file", setup.aliceFile, "--audio", "sine:550",
                                       "--video", "--video-source", "testsrc:320x240@30", "--duration", "12"])
            #expect(alice.waitForOutput(containing: "joined whep", timeout: 20), "\(alice.stdout)\(alice.stderr)")
            let wav = setup.directory.appendingPathComponent("bob-heard.wav").path
            let bob = try Aiortc.start("whip.py", ["view", "--url", "\(setup.httpURL)/whep/whep/alice", "--token-file", setup.bobFile,
                                                   "--seconds", "6", "--wav", wav])
            let (report, _) = try WHIPPeer.run(bob)
            #expect(report.status == 201 && report.established == true && report.delete_status == 200, "\(report)")
            #expect(report.location?.hasPrefix("/whep/sessions/") == true)
            #expect(report.width == 320 && report.height == 240, "\(report)")
            // Every picture alice sent between the first and last one bob decoded (30 fps,
            // 3,000 ticks of 90 kHz apart): at least 95 % of them decoded.
            let first = try #require(report.first_pts), last = try #require(report.last_pts)
            let spanned = (last - first) / 3_000 + 1
            let decoded = try #require(report.video_frames)
            #expect(spanned > 120 && Double(decoded) >= 0.95 * Double(spanned), "bob decoded \(decoded) of the \(spanned) pictures alice sent")
            print("WHEP: first frame \(report.first_frame_after ?? -1) s after the POST; \(decoded) of \(spanned) frames")
            let samples = try AudioFile.read(path: wav).samples
            let level = samples.dropFirst(9_600).withUnsafeBufferPointer { AudioQuality.toneLevel($0, frequency: 550) }
            #expect(level > 0.15, "bob hears alice's 550 Hz (0.21 when whole) at \(level)")
            let run = try alice.wait(timeout: 30)
            #expect(run.stdout.contains("userJoined callID=") && run.stdout.contains("user=bob"), "\(run.stdout)")
            #expect(run.stdout.contains("user=bob reason=left"), "\(run.stdout)")
        }
    }
}
