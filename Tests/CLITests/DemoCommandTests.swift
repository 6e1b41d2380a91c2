import Foundation
import TestSupport
import Testing

@Suite struct DemoCommand {
    /// Runs alone: it measures a real-time call (audio correlation, mouth-to-ear), which
    /// other tests' load on the two cores would degrade (correlation 0.89 in a full run).
    @Test func theDemoPlacesAMeasuredVideoCall() async throws {
        try await Heavy.runAlone {
            // A smaller picture than the default 640x480: tests run in parallel on a debug build.
            let run = try CLI.run(["demo", "--seconds", "3", "--video-size", "320x240", "--json"])
            #expect(run.status == 0, "\(run.stderr)")
            let report = try #require(try JSONSerialization.jsonObject(with: Data(run.stdout.utf8)) as? [String: Any], "\(run.stdout)")
            let setup = try #require(report["setupMilliseconds"] as? Double)
            #expect(setup < 2_000, "call setup \(setup) ms")
            let record = try #require(report["record"] as? [String: Any])
            #expect(record["endReason"] as? String == "completed")
            let directions = try #require(report["directions"] as? [[String: Any]])
            #expect(directions.count == 2)
            for direction in directions {
                let correlation = direction["audioCorrelation"] as? Double ?? 0
                let psnr = direction["videoMeanPSNR"] as? Double ?? 0
                let received = direction["videoFramesReceived"] as? Int ?? 0
                let sent = direction["videoFramesSent"] as? Int ?? 0
                let markers = direction["markersMeasured"] as? Int ?? 0
                let delay = direction["mouthToEarMilliseconds"] as? Double ?? .infinity
                #expect(correlation >= 0.9, "audio correlation \(correlation)")
                #expect(psnr >= 30, "video PSNR \(psnr) dB")
                #expect(received >= sent * 8 / 10 && sent >= 60, "\(received)/\(sent) frames")
                #expect(markers >= 2, "markers measured: \(markers)")
                #expect(delay > 0 && delay < 500, "mouth-to-ear \(delay) ms")
            }
        }
    }

    /// Three participants through the in-process server: everyone hears and sees the
    /// other two, on time and whole. Runs alone: three real-time senders, six decoders and
    /// a server take this machine's two cores on a debug build.
    @Test func theMeetingDemoMeasuresEveryPairThroughTheServer() async throws {
        try await Heavy.runAlone {
            let run = try CLI.run(["demo", "--meeting", "3", "--seconds", "6", "--video-size", "160x120", "--json"])
            #expect(run.status == 0, "\(run.stderr)")
            let report = try #require(try JSONSerialization.jsonObject(with: Data(run.stdout.utf8)) as? [String: Any], "\(run.stdout)")
            let pairs = try #require(report["pairs"] as? [[String: Any]])
            #expect(pairs.count == 6, "every participant measures the other two")
            for pair in pairs {
                let name = "\(pair["from"] ?? "?") -> \(pair["to"] ?? "?")"
                let delay = pair["mouthToEarMilliseconds"] as? Double ?? .infinity
                let markers = pair["markersMeasured"] as? Int ?? 0
                let lost = pair["audioPacketsLost"] as? Int ?? -1
                let received = pair["audioPacketsReceived"] as? Int ?? 0
                let concealed = pair["audioConcealedPercent"] as? Double ?? 100
                let pictures = pair["videoPicturesReceived"] as? Int ?? 0
                let psnr = pair["videoMeanPSNR"] as? Double ?? 0
                #expect(markers >= 4 && delay > 0 && delay < 250, "\(name): mouth-to-ear \(delay) ms over \(markers) markers")
                #expect(lost == 0 && received >= 250, "\(name): \(lost) of \(received) audio packets lost")
                #expect(concealed <= 2, "\(name): \(concealed) % concealed")
                #expect(pictures >= 60 && psnr >= 30, "\(name): \(pictures) pictures at \(psnr) dB")
            }
            let record = try #require(report["record"] as? [String: Any])
            #expect((record["attendance"] as? [Any])?.count == 3)
            #expect((report["serverPacketsForwarded"] as? Int ?? 0) > 2_000)
            let serverCPU = report["serverCPUPercentOfOneCore"] as? Double ?? 0
            #expect(serverCPU > 0 && serverCPU < 50, "the forwarding thread took \(serverCPU) % of a core")
        }
    }

    @Test func aTooShortDemoIsRefused() async throws {
        try await Heavy.run {
            let run = try CLI.run(["demo", "--seconds", "1"])
            #expect(run.status != 0)
            #expect(run.stderr.contains("--seconds 1.0 must be within 2...600"), "\(run.stderr)")
            let odd = try CLI.run(["demo", "--video-size", "641x480"])
            #expect(odd.stderr.contains("--video-size '641x480' is not WxH"), "\(odd.stderr)")
            let crowd = try CLI.run(["demo", "--meeting", "17"])
            #expect(crowd.status != 0 && crowd.stderr.contains("--meeting 17 must be within 2...16"), "\(crowd.stderr)")
        }
    }
}
