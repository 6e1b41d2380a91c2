import Foundation
import MediaEngine
import Testing
import TestSupport

/// WHIP and WHEP with GStreamer's webrtcbin (libnice) against `mediaengine server`.
/// libnice, like browsers, pairs no loopback candidates, so the server and the peer live
/// on hosts of a network namespace lab (203.0.113.0/24) the test makes and deletes.
@Suite(.serialized) struct WebrtcbinWHIP {
    static let script = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
        .appendingPathComponent("Peers/gstreamer/whip.py").path

    @Test func webrtcbinPublishesIntoAMeetingAndViewsAParticipant() async throws {
        try await Heavy.run {
            let lab = try NetworkLab()
            defer { lab.close() }
            let serverHost = try lab.addPublicHost()
            let peerHost = try lab.addPublicHost()
            let server = try LabServer(lab: lab, host: serverHost, options: ["--no-metrics"])
            defer { server.stop() }
            let directory = server.directory
            let url = server.url, http = server.http
            func token(_ account: String) throws -> String { try server.tokenFile(account) }
            let reserve = try lab.run(in: serverHost, CLI.executable.path, ["meeting", "reserve", "gst", "--server", url, "--token-file", try token("alice")])
            #expect(try reserve.wait(timeout: 20).status == 0)
            let heard = directory.appendingPathComponent("alice-heard.wav").path
            let alice = try lab.run(in: serverHost, CLI.executable.path,
                                    ["meeting", "join", "gst", "--server", url, "--token-file", try token("alice"), "--audio", "sine:550", "--video",
                                     "--video-source", "testsrc:320x240@30", "--play", "file:\(heard)", "--duration", "14"])
            #expect(alice.waitForOutput(containing: "joined gst", timeout: 20), "\(alice.stdout)\(alice.stderr)")
            let pcm = directory.appendingPathComponent("carol-heard.s16").path
            let bob = try lab.run(in: peerHost, "/usr/bin/python3", [Self.script, "publish", "--url", "\(http)/whip/gst", "--token-file", try token("bob"),
                                                                      "--tone", "440", "--seconds", "6"])
            let carol = try lab.run(in: peerHost, "/usr/bin/python3", [Self.script, "view", "--url", "\(http)/whep/gst/alice",
                                                                        "--token-file", try token("carol"), "--seconds", "6", "--pcm", pcm])
            let (published, bobRun) = try WHIPPeer.run(bob)
            let (viewed, carolRun) = try WHIPPeer.run(carol)
            #expect(published.status == 201 && published.established == true && published.delete_status == 200, "\(published) \(bobRun.stderr)")
            #expect(viewed.status == 201 && viewed.established == true && viewed.delete_status == 200, "\(viewed) \(carolRun.stderr)")

            // carol decoded alice's pictures at their size, 95 % of those sent over the span.
            #expect(viewed.width == 320 && viewed.height == 240, "\(viewed)")
            let first = try #require(viewed.first_pts), last = try #require(viewed.last_pts)
            let spanned = (last - first) / 3_000 + 1
            let decoded = try #require(viewed.video_frames)
            #expect(spanned > 120 && Double(decoded) >= 0.95 * Double(spanned), "carol decoded \(decoded) of the \(spanned) pictures alice sent")
            let carolHeard = try readS16(pcm)
            let carolLevel = carolHeard.dropFirst(9_600).withUnsafeBufferPointer { AudioQuality.toneLevel($0, frequency: 550) }
            #expect(carolLevel > 0.15, "carol hears alice's 550 Hz (0.21, its RMS, when whole) at \(carolLevel)")

            let run = try alice.wait(timeout: 30)
            #expect(run.status == 0, "\(run.stdout)\(run.stderr)")
            let frames = try #require(WHIPPeer.framesDecoded(of: "bob", in: run.stdout), "\(run.stdout)")
            let sent = try #require(published.frames_sent)
            #expect(sent > 120 && frames >= sent * 9 / 10, "alice decoded \(frames) of bob's \(sent) frames")
            let samples = try AudioFile.read(path: heard).samples
            let bobLevel = WHIPPeer.peakLevel(samples, frequency: 440)
            #expect(bobLevel > 0.15, "alice heard bob's 440 Hz (0.21, its RMS, when whole) at \(bobLevel)")
            #expect(run.stdout.contains("user=bob reason=left") && run.stdout.contains("user=carol reason=left"), "\(run.stdout)")
        }
    }
}
