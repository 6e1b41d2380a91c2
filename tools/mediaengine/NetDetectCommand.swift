import ArgumentParser
import Foundation
import MediaEngine
import MediaRouting
import Signaling

struct NetDetectCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "netdetect",
        abstract: "Measure the network to an echo responder: loss, RTT, mdev, and NIM's quality index and class.",
        discussion: """
        Sends sequenced, timestamped UDP probes sized and paced like the chosen media to an echo responder (the \
        signaling server answers on its port number, UDP), and reports the loss rate, RTT minimum, average, \
        maximum and mean deviation (as ping), duplicates, reordering and jitter, with the quality index \
        (loss/20)*0.5 + (rtt/1200)*0.25 + (mdev/150)*0.25. With --echo, runs a standalone echo responder instead, \
        so two hosts can test the path between them.
        """
    )

    @Option(help: "The echo responder, HOST:PORT (a signaling server's host and port).")
    var server: String?

    @Option(help: "Run an echo responder on HOST:PORT instead (port 0 picks one; until Ctrl-C or --duration).")
    var echo: String?

    @Option(help: "Probe like: audio, video-default, video-low, video-medium, video-high, video-480p, video-540p, video-720p.")
    var kind = "audio"

    @Option(help: "Probes to send.")
    var count = 50

    @Option(help: "Milliseconds between probes (default: the kind's rate).")
    var interval: Double?

    @Flag(help: "Print the result as JSON.")
    var json = false

    @Option(help: "Draw RTT per probe, losses marked, to an SVG file.")
    var plot: String?

    @Option(help: "Append the result to this log file (one JSON line per task).")
    var log: String?

    @Option(help: "Seconds the echo responder runs.")
    var duration: Double?

    func validate() throws {
        guard (server == nil) != (echo == nil) else { throw ValidationError("give one of --server HOST:PORT or --echo HOST:PORT") }
        guard NetDetectKind(rawValue: kind) != nil else {
            throw ValidationError("--kind '\(kind)' is not one of \(NetDetectKind.allCases.map(\.rawValue).joined(separator: ", "))")
        }
        guard count >= 1 && count <= 100_000 else { throw ValidationError("--count \(count) must be within 1...100000") }
        if let interval, !(interval > 0 && interval <= 10_000) { throw ValidationError("--interval \(interval) must be within 0...10000 ms") }
        if let plot, !plot.hasSuffix(".svg") { throw ValidationError("--plot \(plot): use an .svg file") }
        if let duration, !(duration > 0) { throw ValidationError("--duration \(duration) must be more than 0") }
    }

    func run() async throws {
        if let echo { return try await runEcho(echo) }
        guard let server, let kind = NetDetectKind(rawValue: kind) else { return }
        let manager = NetDetectManager(logFilePath: log)
        let progress = ProgressBar()
        let interval = self.interval.map { Duration.microseconds(Int64($0 * 1_000)) }
        let result: NetDetectResult = await withCheckedContinuation { continuation in
            manager.startDetectTask(kind: kind, target: server, count: count, interval: interval, progress: { sent, total in
                if sent == total || sent % max(1, total / 50) == 0 { progress.update(done: sent, total: total, label: "probing \(server)") }
            }) { continuation.resume(returning: $0) }
        }
        if let plot {
            guard FileManager.default.createFile(atPath: plot, contents: Data(result.svgPlot().utf8)) else {
                throw CommandFailure("cannot write the plot to \(plot)")
            }
        }
        if json {
            let encoder = JSONEncoder()
            encoder.outputFormatting = [.prettyPrinted, .sortedKeys]
            var object = try JSONSerialization.jsonObject(with: encoder.encode(result)) as? [String: Any] ?? [:]
            object["qualityIndex"] = result.qualityIndex
            object["quality"] = result.quality.rawValue
            object.removeValue(forKey: "rtts")
            say(String(decoding: try JSONSerialization.data(withJSONObject: object, options: [.prettyPrinted, .sortedKeys]), as: UTF8.self))
        } else if result.error == nil {
            let info = result.expandInfo
            say(String(format: "%@ (%@, %d probes of %d bytes every %.1f ms): loss %.1f %%, rtt min/avg/max/mdev %.1f/%.1f/%.1f/%.1f ms",
                        info.target, info.kind.rawValue, info.sent, info.probeSize, info.intervalMilliseconds, result.lossRate,
                        result.rttMinimal, result.rttAverage, result.rttMaximal, result.rttMeanDeviation))
            say("duplicated \(info.duplicated), reordered \(info.reordered), jitter \(String(format: "%.1f", info.jitter)) ms; "
                + "forged \(info.forged), foreign \(info.foreign), malformed \(info.malformed)")
            say("quality index \(String(format: "%.3f", result.qualityIndex)): the network is \(result.quality.rawValue)")
            say("log: \(manager.logFilePath)")
        }
        if let error = result.error { throw CommandFailure(error.message) }
    }

    private func runEcho(_ address: String) async throws {
        let responder: EchoResponder
        do {
            responder = try EchoResponder(bindTo: SocketAddress(parsing: address))
        } catch {
            throw ValidationError("--echo \(address): \(error.message)")
        }
        try responder.start()
        say("echoing net-detect probes on \(responder.localAddress)")
        Interruption.install()
        let started = ContinuousClock.now
        while !Interruption.requested {
            if let duration, ContinuousClock.now - started >= .milliseconds(Int64(duration * 1_000)) { break }
            try? await Task.sleep(for: .milliseconds(50))
        }
        let counters = responder.counters
        await withCheckedContinuation { continuation in Thread.detachNewThread { responder.stop(); continuation.resume() } }
        say("answered \(counters.answered), malformed \(counters.malformed), rate-limited \(counters.rateLimited), table full \(counters.tableFull)")
    }
}
