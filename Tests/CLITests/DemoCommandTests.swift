import Foundation
import TestSupport
import Testing

@Suite struct DemoCommand {
    @Test func theDemoPlacesAMeasuredVideoCall() async throws {
        try await Heavy.run {
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

    @Test func aTooShortDemoIsRefused() async throws {
        try await Heavy.run {
            let run = try CLI.run(["demo", "--seconds", "1"])
            #expect(run.status != 0)
            #expect(run.stderr.contains("--seconds 1.0 must be within 2...600"), "\(run.stderr)")
            let odd = try CLI.run(["demo", "--video-size", "641x480"])
            #expect(odd.stderr.contains("--video-size '641x480' is not WxH"), "\(odd.stderr)")
        }
    }
}
