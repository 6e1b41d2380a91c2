import Foundation
import MediaEngine
import Testing
import TestSupport

/// Headless Chromium opens the server's web client, which watches a meeting participant
/// over WHEP. Chromium gathers no loopback candidates, so the server and the browser live
/// on hosts of a namespace lab the test makes and deletes.
@Suite(.serialized) struct ChromiumWHEP {
    static let driver = Aiortc.script("../chromium/page.py")

    struct Report: Decodable {
        struct Sample: Decodable {
            var at: Double
            var stats: Stats?
        }

        struct Stats: Decodable {
            struct Participant: Decodable {
                var framesDecoded: Int?
                var frameWidth: Int?
                var frameHeight: Int?
                var audioLevel: Double?
                var totalSamplesReceived: Int?
                var audioPacketsReceived: Int?
                var packetsLost: Int?
                /// Video loss recovery (`ChromiumRTX`).
                var videoPacketsLost: Int?
                var retransmittedPacketsReceived: Int?
                var rtxSsrc: UInt32?
                var nackCount: Int?
                var pliCount: Int?
                var freezeCount: Int?
                var totalFreezesDuration: Double?
            }

            struct Sent: Decodable {
                /// One simulcast layer's figures, by RID.
                struct Layer: Decodable {
                    var framesSent: Int
                    var frameWidth: Int
                    var frameHeight: Int
                    var active: Bool
                    var targetBitrate: Double?
                    var qualityLimitationReason: String?
                }

                var framesSent: Int?
                var layers: [String: Layer]?
                /// Round trips measured from the server's receiver reports on the page's video,
                /// and the last of them.
                var roundTripTimeMeasurements: Int?
                var roundTripTime: Double?
            }

            var participants: [String: Participant]
            /// What the page sent of its camera.
            var sent: Sent?
            var dtlsState: String?
            var srtpCipher: String?
            var candidateType: String?
            /// The sending estimate (b/s) on the selected candidate pair.
            var availableOutgoingBitrate: Double?
            /// What the transport received (RTP and RTCP, after DTLS).
            var packetsReceived: Int?
        }

        struct Action: Decodable {
            var at: Double
            var result: String?
        }

        var samples: [Sample]
        var actions: [Action]?
        var console: [String]
        var status: String?
        var first_frame_after: Double?
        var error: String?
    }

    @Test func theWebClientWatchesAParticipantAndChromesFeedbackDrivesItsLegsEstimate() async throws {
        try await Heavy.run {
            let lab = try NetworkLab()
            defer { lab.close() }
            let serverHost = try lab.addPublicHost()
            let browserHost = try lab.addPublicHost()
            let server = try LabServer(lab: lab, host: serverHost, options: [])
            defer { server.stop() }
            let url = server.url, http = server.http
            func token(_ account: String) throws -> String { try server.tokenFile(account) }
            let reserve = try lab.run(in: serverHost, CLI.executable.path, ["meeting", "reserve", "web", "--server", url, "--token-file", try token("alice")])
            #expect(try reserve.wait(timeout: 20).status == 0)
            let alice = try lab.run(in: serverHost, CLI.executable.path,
                                    ["meeting", "join", "web", "--server", url, "--token-file", try token("alice"), "--audio", "sine:550", "--video",
                                     "--video-source", "testsrc:320x240@30", "--duration", "20"])
            #expect(alice.waitForOutput(containing: "joined web", timeout: 20), "\(alice.stdout)\(alice.stderr)")
            let bobToken = try String(contentsOfFile: try token("bob"), encoding: .utf8).trimmingCharacters(in: .whitespacesAndNewlines)
            let page = try lab.run(in: browserHost, Aiortc.python.path, [Self.driver.path, "--seconds", "10"], input: true)
            try page.write("\(http)/#watch=web/alice&token=\(bobToken)\n")
            let run = try page.wait(timeout: 60)
            guard let line = run.stdout.split(separator: "\n").last(where: { $0.hasPrefix("{") }) else {
                throw ToolFailure("page.py printed no report: \(run.stdout) \(run.stderr)")
            }
            let report = try JSONDecoder().decode(Report.self, from: Data(line.utf8))
            #expect(report.error == nil && report.console.isEmpty, "\(report.error ?? "") \(report.console)")
            let last = try #require(report.samples.last?.stats, "\(report.samples) \(report.status ?? "")")
            let watched = try #require(last.participants["alice"], "\(last)")
            #expect(watched.frameWidth == 320 && watched.frameHeight == 240, "\(watched)")
            #expect(last.dtlsState == "connected" && last.srtpCipher == "SRTP_AEAD_AES_128_GCM" && last.candidateType == "host",
                    "\(String(describing: last.dtlsState)) \(String(describing: last.srtpCipher)) \(String(describing: last.candidateType))")
            // Still decoding at the end: the last sample's frames beyond the one 3 s before.
            let earlier = report.samples.dropLast(3).last?.stats?.participants["alice"]?.framesDecoded ?? 0
            #expect((watched.framesDecoded ?? 0) - earlier >= 30, "framesDecoded grew \(earlier) -> \(watched.framesDecoded ?? 0) over 3 s")
            #expect((watched.audioLevel ?? 0) > 0.05 && (watched.totalSamplesReceived ?? 0) > 48_000, "\(watched)")
            let first = try #require(report.first_frame_after)
            print("Chromium: first frame \(first) s after opening the page; \(watched)")
            #expect(first < 3, "the first picture after \(first) s")
            // Chrome's transport-cc feedback drives its leg's estimate (the page was closed
            // without a DELETE: the leg stays until its timeout, longer than this scrape).
            let scrape = try lab.run(in: browserHost, "/usr/bin/python3",
                                     ["-c", "import urllib.request; print(urllib.request.urlopen('\(http)/metrics').read().decode())"])
            let metrics = try scrape.wait(timeout: 20).stdout
            func legValue(_ name: String) -> Double? {
                metrics.split(separator: "\n").first { $0.hasPrefix("mediaengine_leg_\(name){") && $0.contains("user=\"bob\"") }
                    .flatMap { $0.split(separator: " ").last }.flatMap { Double($0) }
            }
            let feedback = try #require(legValue("transport_feedback_received"), "\(metrics)")
            let reported = try #require(legValue("feedback_packets_reported"), "\(metrics)")
            let estimate = try #require(legValue("estimated_bitrate_bps"))
            print("Chromium: \(Int(feedback)) transport-cc feedback packets reporting \(Int(reported)) packets, estimate \(Int(estimate)) b/s")
            #expect(feedback > 50, "Chrome sent \(feedback) transport-cc feedback packets")
            // Over 10 s the leg sent Chrome about 500 audio and 300 video packets: the estimator
            // took Chrome's per-packet reports of most of them. (Whether the estimate moves
            // from its 2 Mb/s start within 10 s depends on the machine's load: not a test.)
            #expect(reported > 400, "the leg's estimator took Chrome's reports of \(reported) packets")
            #expect(estimate > 100_000, "\(estimate)")
            alice.interrupt()
            _ = try? alice.wait(timeout: 20)
        }
    }
}
