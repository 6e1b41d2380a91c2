import ArgumentParser
import Foundation
import MediaEngine
import MediaSimulation

struct NetemCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "netem",
        abstract: "Proxy UDP to a target with loss, loss bursts, delay, jitter, reordering, duplication and a rate cap.",
        discussion: """
        A user-space stand-in for `tc netem`. Clients send to --listen; each client gets its own port facing \
        --forward, so the target's replies come back to it, impaired the same way (with another seed). Runs until \
        --duration or Ctrl-C, then prints per direction: packets, losses, duplicates, reorders, deliveries, \
        delay percentiles and the loss measured. The same --seed and traffic repeat the same run.
        """
    )

    @Option(help: ArgumentHelp("Address to listen on, HOST:PORT (port 0 picks a free one; IPv6 as [ADDR]:PORT).", valueName: "host:port"))
    var listen: String

    @Option(help: ArgumentHelp("Target to forward to, HOST:PORT.", valueName: "host:port"))
    var forward: String

    @Option(help: ArgumentHelp("Packets lost, % (0-100).", valueName: "pct"))
    var loss: Double = 0

    @Option(help: ArgumentHelp("Mean length of a loss burst, packets (1: independent losses).", valueName: "n"))
    var burst: Double = 1

    @Option(help: ArgumentHelp("One-way delay, ms.", valueName: "ms"))
    var delay: Double = 0

    @Option(help: ArgumentHelp("Standard deviation of the delay, ms; packets reorder when it exceeds their spacing.", valueName: "ms"))
    var jitter: Double = 0

    @Option(help: ArgumentHelp("Packets sent at once, skipping the delay, % (0-100).", valueName: "pct"))
    var reorder: Double = 0

    @Option(help: ArgumentHelp("Packets delivered twice, % (0-100).", valueName: "pct"))
    var duplicate: Double = 0

    @Option(help: ArgumentHelp("Link rate cap, kb/s; packets that would wait over 300 ms for the link are dropped.", valueName: "kbps"))
    var rate: Int?

    @Option(help: ArgumentHelp("Seed of the random choices.", valueName: "n"))
    var seed: UInt64 = 1

    @Option(help: ArgumentHelp("Seconds to run (default: until Ctrl-C).", valueName: "s"))
    var duration: Double?

    func validate() throws {
        for (name, value) in [("--loss", loss), ("--reorder", reorder), ("--duplicate", duplicate)] {
            guard value.isFinite, (0...100).contains(value) else {
                throw ValidationError("\(name) \(Self.number(value)) is outside 0...100 %")
            }
        }
        guard burst.isFinite, (0...1_000).contains(burst) else {
            throw ValidationError("--burst \(Self.number(burst)) is outside 0...1000 packets")
        }
        for (name, value) in [("--delay", delay), ("--jitter", jitter)] {
            guard value.isFinite, (0...60_000).contains(value) else {
                throw ValidationError("\(name) \(Self.number(value)) ms is outside 0...60000 ms")
            }
        }
        if let rate, !(1...10_000_000).contains(rate) {
            throw ValidationError("--rate \(rate) kb/s is outside 1...10000000 kb/s")
        }
        if let duration, !(duration > 0 && duration <= 86_400) {
            throw ValidationError("--duration \(Self.number(duration)) must be more than 0 and at most 86400 seconds")
        }
        _ = try Self.address(listen, option: "--listen")
        _ = try Self.address(forward, option: "--forward")
        do {
            try impairment.validate()
        } catch {
            throw ValidationError(error.message)
        }
    }

    /// The options as model settings (valid once `validate()` passed).
    var impairment: ImpairmentSettings {
        var settings = ImpairmentSettings()
        settings.lossPercent = loss
        settings.burstLength = burst
        settings.delay = .nanoseconds(Int64((delay * 1_000_000).rounded()))
        settings.jitter = .nanoseconds(Int64((jitter * 1_000_000).rounded()))
        settings.reorderPercent = reorder
        settings.duplicatePercent = duplicate
        settings.rateKbps = rate
        settings.seed = seed
        return settings
    }

    func run() throws {
        let forwardAddress = try Self.address(forward, option: "--forward")
        let settings = impairment
        let proxy = try UDPImpairmentProxy(listen: try Self.address(listen, option: "--listen"), forward: forwardAddress, settings: settings)
        Interruption.install()
        try proxy.start()
        printError("proxying \(proxy.localAddress) -> \(forwardAddress)")
        printError("impairment: \(Self.describe(settings))")
        let end = duration.map { ContinuousClock.now + .milliseconds(Int64(($0 * 1_000).rounded())) }
        while !Interruption.requested, proxy.failure == nil {
            if let end, ContinuousClock.now >= end { break }
            Thread.sleep(forTimeInterval: 0.02)
        }
        proxy.stop()
        let statistics = proxy.statistics
        for line in Self.report(statistics) { print(line) }
        if let failure = statistics.failure {
            printError("the proxy stopped early: \(failure)")
            throw ExitCode.failure
        }
    }

    private static func address(_ text: String, option: String) throws -> SocketAddress {
        do {
            return try SocketAddress(parsing: text)
        } catch {
            throw ValidationError("\(option) \(text): \(error.message)")
        }
    }

    /// The settings in words, for the start-up line.
    static func describe(_ settings: ImpairmentSettings) -> String {
        var parts = ["loss \(number(settings.lossPercent)) %" + (settings.burstLength > 1 ? " in bursts of \(number(settings.burstLength))" : "")]
        parts.append("delay \(milliseconds(settings.delay / .seconds(1))) ± \(milliseconds(settings.jitter / .seconds(1)))")
        if settings.reorderPercent > 0 { parts.append("reorder \(number(settings.reorderPercent)) %") }
        if settings.duplicatePercent > 0 { parts.append("duplicate \(number(settings.duplicatePercent)) %") }
        if let rate = settings.rateKbps { parts.append("rate \(rate) kb/s") }
        parts.append("seed \(settings.seed)")
        return parts.joined(separator: ", ")
    }

    /// One line per direction, then one for the client table.
    static func report(_ statistics: UDPImpairmentProxy.Statistics) -> [String] {
        func line(_ name: String, _ s: UDPImpairmentProxy.DirectionStatistics) -> String {
            let model = s.impairment
            var text = "\(name): packets=\(model.packets) lost=\(model.lost) queue_dropped=\(model.queueDropped)"
                + " overflow_dropped=\(s.overflowDropped) duplicated=\(model.duplicated) reordered=\(model.reordered)"
                + " delivered=\(s.delivered)"
            if s.sendFailures > 0 { text += " send_failures=\(s.sendFailures)" }
            if s.pending > 0 { text += " in_flight=\(s.pending)" }
            text += " delay_p50=\(milliseconds(model.delayPercentile(0.5) / .seconds(1)))"
                + " delay_p90=\(milliseconds(model.delayPercentile(0.9) / .seconds(1)))"
                + " delay_p99=\(milliseconds(model.delayPercentile(0.99) / .seconds(1)))"
                + " delay_mean=\(milliseconds(model.meanDelay / .seconds(1)))"
                + " loss=" + String(format: "%.1f%%", s.lossPercent)
                + " late_max=\(milliseconds(s.maximumLateness / .seconds(1)))"
            return text
        }
        return [
            line("upstream (client -> target)", statistics.upstream),
            line("downstream (target -> client)", statistics.downstream),
            "clients: created=\(statistics.clientsCreated) expired=\(statistics.clientsExpired)"
                + " unmapped_dropped=\(statistics.unmappedDropped) foreign_dropped=\(statistics.foreignDropped)",
        ]
    }

    /// A whole number without ".0", anything else as Swift prints it.
    static func number(_ value: Double) -> String {
        value.isFinite && value == value.rounded() && abs(value) < 1e15 ? String(Int64(value)) : String(value)
    }
}
