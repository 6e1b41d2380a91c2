import Foundation
import MediaEngine
import Testing
import TestSupport

/// Two headless Chromium pages join a meeting through the web client and our signaling,
/// beside a `mediaengine meeting join` participant: each page publishes its fake camera and
/// microphone (a Y4M file and a WAV tone), receives the others (renegotiating when the
/// second page arrives), and one mutes another for itself. Chromium gathers no loopback
/// candidates, so everyone lives on hosts of a namespace lab the test makes and deletes.
@Suite(.serialized) struct ChromiumMeeting {
    typealias Report = ChromiumWHEP.Report

    /// A page's run: the web client opened as `#meeting=NAME&token=…` with fake media.
    static func page(_ lab: NetworkLab, on host: NetworkLab.Namespace, url: String, audio: String, video: String, seconds: Int,
                     actions: [String] = []) throws -> BackgroundProcess {
        let process = try lab.run(in: host, Aiortc.python.path,
                                  [ChromiumWHEP.driver.path, "--seconds", "\(seconds)", "--fake-audio", audio, "--fake-video", video]
                                      + actions.flatMap { ["--action", $0] }, input: true)
        try process.write(url + "\n")
        return process
    }

    static func report(of process: BackgroundProcess, timeout: Double) throws -> Report {
        let run = try process.wait(timeout: timeout)
        guard let line = run.stdout.split(separator: "\n").last(where: { $0.hasPrefix("{") }) else {
            throw ToolFailure("page.py printed no report: \(run.stdout) \(run.stderr)")
        }
        return try JSONDecoder().decode(Report.self, from: Data(line.utf8))
    }

    /// Fake capture files: a tone of amplitude 0.25 and a test pattern of `size`. The pages
    /// send the tone without Chrome's audio processing (`processing=0`): its noise
    /// suppression takes a steady tone for noise, and its echo canceller, with no echo path
    /// to learn, was heard adding what the page played (alice's 550 Hz) to what it sent.
    static func fakeMedia(in directory: URL, tone: Int, size: String) throws -> (audio: String, video: String) {
        let audio = directory.appendingPathComponent("tone\(tone).wav").path
        let video = directory.appendingPathComponent("pattern\(size).y4m").path
        let ffmpeg = try Tool.run("ffmpeg", ["-y", "-loglevel", "error", "-f", "lavfi", "-i", "sine=frequency=\(tone):sample_rate=48000", "-af", "volume=2",
                                     "-t", "30", "-ac", "1", "-c:a", "pcm_s16le", audio])
        guard ffmpeg.status == 0 else { throw ToolFailure("ffmpeg: \(ffmpeg.stderr)") }
        let pattern = try Tool.run("ffmpeg", ["-y", "-loglevel", "error", "-f", "lavfi", "-i", "testsrc=size=\(size):rate=30", "-t", "4",
                                      "-pix_fmt", "yuv420p", video])
        guard pattern.status == 0 else { throw ToolFailure("ffmpeg: \(pattern.stderr)") }
        return (audio, video)
    }

    /// A namespace lab with the server on one host and two page hosts (bob's, carol's), a
    /// scratch directory, and the meeting `room` reserved by alice; `close()` undoes it all.
    final class Room {
        let lab: NetworkLab
        let serverHost: NetworkLab.Namespace
        let bobHost: NetworkLab.Namespace
        let carolHost: NetworkLab.Namespace
        let server: LabServer
        let directory: URL

        init(_ name: String) throws {
            lab = try NetworkLab()
            do {
                serverHost = try lab.addPublicHost()
                bobHost = try lab.addPublicHost()
                carolHost = try lab.addPublicHost()
                server = try LabServer(lab: lab, host: serverHost, options: ["--leg-timeout", "3"])
            } catch {
                lab.close()
                throw error
            }
            do {
                directory = try temporaryDirectory(name)
                let reserve = try lab.run(in: serverHost, CLI.executable.path,
                                          ["meeting", "reserve", "room", "--server", server.url, "--token-file", try server.tokenFile("alice")])
                let run = try reserve.wait(timeout: 20)
                guard run.status == 0 else { throw ToolFailure("meeting reserve: \(run.stdout) \(run.stderr)") }
            } catch {
                server.stop()
                lab.close()
                throw error
            }
        }

        /// `account`'s token, for a page's URL.
        func token(_ account: String) throws -> String {
            try String(contentsOfFile: try server.tokenFile(account), encoding: .utf8).trimmingCharacters(in: .whitespacesAndNewlines)
        }

        func close() {
            server.stop()
            try? FileManager.default.removeItem(at: directory)
            lab.close()
        }
    }

    @Test func twoPagesAndACLIParticipantSeeAndHearEachOtherAndAMuteForMeIsThatPagesOnly() async throws {
        try await Heavy.run {
            let room = try Room("chromium-meeting")
            defer { room.close() }
            let (lab, serverHost, bobHost, carolHost, server, directory) = (room.lab, room.serverHost, room.bobHost, room.carolHost, room.server,
                                                                            room.directory)
            let bobMedia = try Self.fakeMedia(in: directory, tone: 440, size: "320x240")
            let carolMedia = try Self.fakeMedia(in: directory, tone: 660, size: "352x288")
            let token = room.token
            let url = server.url
            let heard = directory.appendingPathComponent("alice-heard.wav").path
            let alice = try lab.run(in: serverHost, CLI.executable.path,
                                    ["meeting", "join", "room", "--server", url, "--token-file", try server.tokenFile("alice"), "--audio", "sine:550",
                                     "--video", "--video-source", "testsrc:320x240@30", "--play", "file:\(heard)", "--duration", "30"])
            #expect(alice.waitForOutput(containing: "joined room", timeout: 20), "\(alice.stdout)\(alice.stderr)")

            // bob first; carol four seconds later, so bob's page takes her in by renegotiating.
            // At 12 s bob mutes carol's audio for himself.
            let bob = try Self.page(lab, on: bobHost, url: "\(server.http)/#meeting=room&processing=0&token=\(try token("bob"))",
                                    audio: bobMedia.audio, video: bobMedia.video, seconds: 20,
                                    actions: ["12:window.mediaEngine.mute('carol', {audio: true}).then(() => 'muted')"])
            try await Task.sleep(for: .seconds(4))
            let carol = try Self.page(lab, on: carolHost, url: "\(server.http)/#meeting=room&processing=0&token=\(try token("carol"))",
                                      audio: carolMedia.audio, video: carolMedia.video, seconds: 14)
            let bobReport = try Self.report(of: bob, timeout: 90)
            let carolReport = try Self.report(of: carol, timeout: 60)

            // Each page when all three had been in the meeting for a while (carol's 12 s are
            // about bob's 16 s), and three seconds before.
            func stats(_ report: Report, at time: Double) -> Report.Stats? { report.samples.first { $0.at >= time }?.stats }
            for (name, report, time) in [("bob", bobReport, 16.0), ("carol", carolReport, 12.0)] {
                #expect(report.error == nil && report.console.isEmpty, "\(name): \(report.error ?? "") \(report.console)")
                let now = try #require(stats(report, at: time), "\(name): \(report.samples) \(report.status ?? "")")
                let before = stats(report, at: time - 3)
                #expect(now.dtlsState == "connected" && now.srtpCipher == "SRTP_AEAD_AES_128_GCM", "\(name): \(now)")
                let others = name == "bob" ? [("alice", 320, 240), ("carol", 352, 288)] : [("alice", 320, 240), ("bob", 320, 240)]
                for (other, width, height) in others {
                    let figures = try #require(now.participants[other], "\(name) has no \(other): \(now.participants)")
                    #expect(figures.frameWidth == width && figures.frameHeight == height, "\(name) sees \(other) at \(figures)")
                    // Still decoding: frames beyond those of three seconds before.
                    let earlier = before?.participants[other]?.framesDecoded ?? 0, decoded = figures.framesDecoded ?? 0
                    #expect(decoded - earlier >= 30, "\(name): \(other)'s framesDecoded \(earlier) -> \(decoded) over 3 s")
                    if !(name == "bob" && other == "carol") {
                        #expect((figures.audioLevel ?? 0) > 0.03 && (figures.audioPacketsReceived ?? 0) > 200, "\(name) hears \(other): \(figures)")
                    }
                }
            }

            // bob's mute-for-me at 12 s: carol's audio stopped reaching his page (her video did not).
            #expect(bobReport.actions?.first?.result == "muted", "\(String(describing: bobReport.actions))")
            let atMute = stats(bobReport, at: 13)?.participants["carol"]
            let end = stats(bobReport, at: 16)?.participants["carol"]
            let packetsAtMute = atMute?.audioPacketsReceived ?? 0, packetsAtEnd = end?.audioPacketsReceived ?? 0
            #expect(packetsAtMute > 100, "bob heard carol before muting her: \(String(describing: atMute))")
            #expect(packetsAtEnd - packetsAtMute < 10, "carol's audio packets at bob after the mute: \(packetsAtMute) -> \(packetsAtEnd)")
            #expect((end?.framesDecoded ?? 0) - (atMute?.framesDecoded ?? 0) > 40, "carol's video still reaches bob: \(String(describing: end))")

            let first = try #require(carolReport.first_frame_after)
            print("Chromium meeting: carol's first picture of a participant \(first) s after opening the page")
            #expect(first < 3, "the first picture after \(first) s")

            // Both pages closed without leaving: their legs time out, and alice hears of it.
            #expect(alice.waitForOutput(containing: "userLeft callID=", occurrences: 2, timeout: 20), "\(alice.stdout)")
            // Nothing of theirs is left in the SFU: alice's leg is the only one (the forwarding
            // thread publishes its figures every 500 ms).
            var legs = ""
            for _ in 0..<10 where legs != "mediaengine_media_legs 1.0" {
                try await Task.sleep(for: .milliseconds(500))
                let scrape = try lab.run(in: bobHost, "/usr/bin/python3",
                                         ["-c", "import urllib.request; print(urllib.request.urlopen('\(server.http)/metrics').read().decode())"])
                legs = try scrape.wait(timeout: 20).stdout.split(separator: "\n").first { $0.hasPrefix("mediaengine_media_legs ") }.map(String.init) ?? ""
            }
            #expect(legs == "mediaengine_media_legs 1.0", "\(legs)")
            alice.interrupt()
            let run = try alice.wait(timeout: 30)
            #expect(run.stdout.contains("user=bob reason=timedOut") && run.stdout.contains("user=carol reason=timedOut"), "\(run.stdout)")
            // alice decoded both pages' video and heard both tones, and never her own.
            // Of what each page sent (its last reading, a second before it closed): a page
            // under CPU load keeps its picture size and sends fewer frames, so the count is
            // checked against what it sent, not against a frame rate.
            for (user, report) in [("bob", bobReport), ("carol", carolReport)] {
                let sent = report.samples.last?.stats?.sent?.framesSent ?? 0
                let decoded = WHIPPeer.framesDecoded(of: user, in: run.stdout) ?? 0
                #expect(sent > 60 && Double(decoded) >= 0.9 * Double(sent), "alice decoded \(decoded) of the \(sent) frames \(user) sent: \(run.stdout)")
            }
            let samples = try AudioFile.read(path: heard).samples
            let levels = (WHIPPeer.peakLevel(samples, frequency: 440), WHIPPeer.peakLevel(samples, frequency: 660),
                          WHIPPeer.peakLevel(samples, frequency: 550))
            print("Chromium meeting: alice hears 440 Hz at \(levels.0), 660 Hz at \(levels.1), 550 Hz at \(levels.2)")
            #expect(levels.0 > 0.05 && levels.1 > 0.05, "alice hears bob and carol: \(levels)")
            #expect(levels.2 < 0.005, "alice never hears herself: \(levels)")
        }
    }
}
