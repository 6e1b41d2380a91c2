import Foundation
import TestSupport
import Testing

@Suite struct NetDetectCommand {
    @Test func probesAStandaloneEchoAndReportsJSONAndAPlot() async throws {
        try await Heavy.run {
            let echo = try CLI.start(["netdetect", "--echo", "127.0.0.1:0", "--duration", "30"])
            defer { echo.interrupt() }
            #expect(echo.waitForOutput(containing: "echoing net-detect probes on", timeout: 20), "\(echo.stderr)")
            let line = try #require(echo.stdout.split(separator: "\n").first { $0.contains("echoing") })
            let target = String(line.split(separator: " ").last ?? "")
            let directory = try temporaryDirectory("netdetect")
            defer { try? FileManager.default.removeItem(at: directory) }
            let plot = directory.appendingPathComponent("rtt.svg").path
            let log = directory.appendingPathComponent("tasks.log").path
            let run = try CLI.run(["netdetect", "--server", target, "--kind", "video-low", "--count", "20", "--interval", "5",
                                   "--json", "--plot", plot, "--log", log])
            #expect(run.status == 0, "\(run.stderr)")
            let result = try #require(try JSONSerialization.jsonObject(with: Data(run.stdout.utf8)) as? [String: Any], "\(run.stdout)")
            #expect(result["lossRate"] as? Double == 0)
            #expect(result["quality"] as? String == "very good")
            #expect((result["rttAverage"] as? Double ?? 99) < 50)
            let info = try #require(result["expandInfo"] as? [String: Any])
            #expect(info["sent"] as? Int == 20 && info["received"] as? Int == 20 && info["probeSize"] as? Int == 1_000)
            let svg = try String(contentsOfFile: plot, encoding: .utf8)
            #expect(svg.hasPrefix("<svg") && svg.contains("polyline") && svg.contains("very good"))
            #expect(try String(contentsOfFile: log, encoding: .utf8).split(separator: "\n").count == 1)
            let text = try CLI.run(["netdetect", "--server", target, "--count", "10", "--interval", "5"])
            #expect(text.stdout.contains("loss 0.0 %") && text.stdout.contains("the network is very good"), "\(text.stdout)")
            echo.interrupt()
            let ended = try echo.wait(timeout: 10)
            #expect(ended.stdout.contains("answered 30"), "\(ended.stdout)")
        }
    }

    @Test func aTargetThatDoesNotAnswerFailsInBoundedTime() async throws {
        try await Heavy.run {
            let started = Date()
            let run = try CLI.run(["netdetect", "--server", "127.0.0.1:9", "--count", "5", "--interval", "10"])
            #expect(run.status != 0)
            #expect(run.stderr.contains("no reply from 127.0.0.1:9 to 5 probes"), "\(run.stderr)")
            #expect(Date().timeIntervalSince(started) < 10)
        }
    }

    @Test(arguments: [
        (["netdetect"], "give one of --server HOST:PORT or --echo HOST:PORT"),
        (["netdetect", "--server", "127.0.0.1:9", "--count", "0"], "--count 0 must be within"),
        (["netdetect", "--server", "127.0.0.1:9", "--interval=-1"], "--interval -1.0 must be within"),
        (["netdetect", "--server", "127.0.0.1:9", "--kind", "video-4k"], "--kind 'video-4k' is not one of"),
        (["netdetect", "--server", "no-such-host.invalid:9", "--count", "1"], "no-such-host.invalid"),
        (["netdetect", "--echo", "nowhere"], "'nowhere' is not HOST:PORT"),
    ])
    func badOptionsAreNamed(arguments: [String], message: String) async throws {
        try await Heavy.run {
            let run = try CLI.run(arguments)
            #expect(run.status != 0)
            #expect(run.stderr.contains(message), "\(run.stderr)")
        }
    }
}
