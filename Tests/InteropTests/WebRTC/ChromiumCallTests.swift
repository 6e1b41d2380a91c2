import Foundation
import MediaEngine
import Testing
import TestSupport

/// A headless Chromium page calls `mediaengine answer` through the web client and our
/// signaling: the page's JSEP offer rides in `start`, our client answers it (DTLS-SRTP, the
/// offer's payload types and extensions) in `response`, and audio and video go both ways.
/// Chromium gathers no loopback candidates, so both live on hosts of a namespace lab.
@Suite(.serialized) struct ChromiumCall {
    /// The loudest one-second levels of two tones in a recording's audio.
    static func peakLevels(of recording: String, frequencies: (Double, Double)) throws -> (Double, Double) {
        let wav = recording + ".wav"
        try Tool.decodeAudio(recording, to: wav)
        let heard = try AudioFile.read(path: wav).samples
        return (WHIPPeer.peakLevel(heard, frequency: frequencies.0), WHIPPeer.peakLevel(heard, frequency: frequencies.1))
    }

    /// Runs `body` with a lab of two hosts (the server's, where our client runs too, and the
    /// page's), the server, and a directory for files; all removed after.
    static func inLab(_ body: (NetworkLab, NetworkLab.Namespace, NetworkLab.Namespace, LabServer, URL) async throws -> Void) async throws {
        try await Heavy.run {
            let lab = try NetworkLab()
            defer { lab.close() }
            let serverHost = try lab.addPublicHost()
            let pageHost = try lab.addPublicHost()
            let server = try LabServer(lab: lab, host: serverHost)
            defer { server.stop() }
            let directory = try temporaryDirectory("chromium-call")
            defer { try? FileManager.default.removeItem(at: directory) }
            try await body(lab, serverHost, pageHost, server, directory)
        }
    }

    @Test func aPageCallsOurClientWithTonesAndVideoBothWaysAndOneCallRecord() async throws {
        try await Self.inLab { lab, serverHost, pageHost, server, directory in
            let media = try ChromiumMeeting.fakeMedia(in: directory, tone: 440, size: "320x240")
            let received = directory.appendingPathComponent("bob-received.webm").path
            let bob = try lab.run(in: serverHost, CLI.executable.path,
                                  ["answer", "--server", server.url, "--token-file", try server.tokenFile("bob"), "--auto-accept", "--calls", "1",
                                   "--audio", "sine:550", "--video-source", "testsrc:352x288@30", "--record-remote", received,
                                   "--media-host", serverHost.address, "--duration", "8"])
            #expect(bob.waitForOutput(containing: "waiting for calls as bob", timeout: 20), "\(bob.stdout)\(bob.stderr)")
            let token = try String(contentsOfFile: try server.tokenFile("alice"), encoding: .utf8).trimmingCharacters(in: .whitespacesAndNewlines)
            let page = try ChromiumMeeting.page(lab, on: pageHost, url: "\(server.http)/#call=bob&processing=0&token=\(token)",
                                                audio: media.audio, video: media.video, seconds: 9)
            let report = try ChromiumMeeting.report(of: page, timeout: 60)
            let answered = try bob.wait(timeout: 30)

            #expect(report.error == nil && report.console.isEmpty, "\(report.error ?? "") \(report.console)")
            // The page: bob's picture at its size, still decoding, and his tone.
            let samples = report.samples.compactMap { $0.stats?.participants["bob"] }
            let last = try #require(samples.last, "\(report.samples) \(report.status ?? "")")
            #expect(last.frameWidth == 352 && last.frameHeight == 288, "\(last)")
            let peak = samples.map { $0.framesDecoded ?? 0 }.max() ?? 0
            #expect(peak > 90, "the page decoded \(peak) of bob's frames")
            #expect(samples.contains { ($0.audioLevel ?? 0) > 0.1 } && (last.audioPacketsReceived ?? 0) > 200, "the page hears bob: \(samples)")
            #expect(report.samples.contains { $0.stats?.dtlsState == "connected" }, "\(report.samples)")

            // bob: the page's picture and tone, and one record of the call.
            #expect(answered.status == 0, "\(answered.stdout)\(answered.stderr)")
            #expect(answered.stdout.contains("receive callID=") && answered.stdout.contains("from=alice type=video"), "\(answered.stdout)")
            let records = answered.stdout.components(separatedBy: "callRecord callID=").count - 1
            #expect(records == 1 && answered.stdout.contains("alice->bob video reason="), "\(answered.stdout)")
            let probe = try Probe(path: received)
            #expect(probe.streams.contains { $0.codec == "vp8" && $0.width == 320 && $0.height == 240 } && probe.streams.contains { $0.codec == "opus" },
                    "\(probe.streams)")
            let levels = try Self.peakLevels(of: received, frequencies: (440, 550))
            print("Chromium call: bob hears 440 Hz at \(levels.0), 550 Hz at \(levels.1); the page decoded \(peak) frames of bob")
            #expect(levels.0 > 0.1 && levels.1 < 0.005, "bob hears the page's tone and not his own: \(levels)")
        }
    }

    @Test func ourClientCallsAPageThatAnswersItsJSEPOffer() async throws {
        try await Self.inLab { lab, serverHost, pageHost, server, directory in
            let media = try ChromiumMeeting.fakeMedia(in: directory, tone: 660, size: "320x240")
            let token = try String(contentsOfFile: try server.tokenFile("bob"), encoding: .utf8).trimmingCharacters(in: .whitespacesAndNewlines)
            let page = try ChromiumMeeting.page(lab, on: pageHost, url: "\(server.http)/#answer&processing=0&token=\(token)",
                                                audio: media.audio, video: media.video, seconds: 11)
            try await Task.sleep(for: .seconds(3))
            let received = directory.appendingPathComponent("alice-received.webm").path
            let alice = try lab.run(in: serverHost, CLI.executable.path,
                                    ["call", "bob", "--server", server.url, "--token-file", try server.tokenFile("alice"), "--video",
                                     "--audio", "sine:550", "--video-source", "testsrc:352x288@30", "--record-remote", received,
                                     "--media-host", serverHost.address, "--duration", "5"])
            let called = try alice.wait(timeout: 40)
            let report = try ChromiumMeeting.report(of: page, timeout: 60)

            #expect(report.error == nil && report.console.isEmpty, "\(report.error ?? "") \(report.console)")
            #expect(called.status == 0 && called.stdout.contains("accepted=true"), "\(called.stdout)\(called.stderr)")
            let samples = report.samples.compactMap { $0.stats?.participants["alice"] }
            let last = try #require(samples.last, "\(report.samples) \(report.status ?? "")")
            #expect(last.frameWidth == 352 && last.frameHeight == 288 && (last.framesDecoded ?? 0) > 60, "\(last)")
            #expect(samples.contains { ($0.audioLevel ?? 0) > 0.1 }, "the page hears alice: \(samples)")
            let records = called.stdout.components(separatedBy: "callRecord callID=").count - 1
            #expect(records == 1 && called.stdout.contains("alice->bob video reason="), "\(called.stdout)")
            let probe = try Probe(path: received)
            #expect(probe.streams.contains { $0.codec == "vp8" && $0.width == 320 && $0.height == 240 }, "\(probe.streams)")
            let levels = try Self.peakLevels(of: received, frequencies: (660, 550))
            print("Chromium answers: alice hears 660 Hz at \(levels.0), 550 Hz at \(levels.1); the page decoded \(last.framesDecoded ?? 0) frames")
            #expect(levels.0 > 0.1 && levels.1 < 0.005, "alice hears the page's tone and not her own: \(levels)")
        }
    }
}
