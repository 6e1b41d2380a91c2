import Foundation
import MediaEngine
import MediaSimulation
import Testing
import TestSupport

/// The `key=value` number in `line`, e.g. `lost=12` or `delay_p50=20.3ms`.
private func value(_ key: String, in line: Substring) -> Double? {
    guard let field = line.split(separator: " ").first(where: { $0.hasPrefix(key + "=") }) else { return nil }
    return Double(field.dropFirst(key.count + 1).prefix { $0.isNumber || $0 == "." || $0 == "-" })
}

/// Starts `netem` and returns it with the address it listens on.
private func startNetem(_ arguments: [String]) throws -> (BackgroundProcess, SocketAddress) {
    let process = try CLI.start(["netem", "--listen", "127.0.0.1:0"] + arguments)
    #expect(process.waitForOutput(containing: "proxying ", timeout: 10), "\(process.stderr)")
    let line = try #require(process.stderr.split(separator: "\n").first { $0.hasPrefix("proxying ") })
    let listening = try #require(line.split(separator: " ").dropFirst().first)
    return (process, try SocketAddress(parsing: String(listening)))
}

@Suite struct NetemCommands {
    @Test func netemProxiesTrafficForItsDurationAndReportsEachDirection() async throws {
        try await Heavy.run {
            let echo = try UDPResponder.echo()
            defer { echo.stop() }
            let (process, address) = try startNetem(["--forward", "\(echo.localAddress)", "--loss", "20",
                                                     "--delay", "20", "--jitter", "2", "--seed", "7", "--duration", "3"])
            #expect(process.stderr.contains("-> \(echo.localAddress)"))
            let client = try UDPSocket(bindTo: SocketAddress(host: "127.0.0.1", port: 0))
            var payload = [UInt8](repeating: 0, count: 160)
            for number in 0..<100 {
                payload[0] = UInt8(number)
                try payload.withUnsafeBytes { try client.send($0, to: address) }
                // 200 a second, a stream's pace rather than a burst: the rate is the traffic's shape.
                try await Task.sleep(for: .milliseconds(5))
            }
            var echoes = 0
            var buffer = [UInt8](repeating: 0, count: 2_048)
            while try buffer.withUnsafeMutableBytes({ try client.receive(into: $0, timeout: .milliseconds(500)) }) != nil { echoes += 1 }
            let run = try process.wait(timeout: 20)
            #expect(run.status == 0, "\(run.stderr)")
            let lines = run.stdout.split(separator: "\n")
            let upstream = try #require(lines.first { $0.hasPrefix("upstream (client -> target): ") }, "\(run.stdout)")
            let downstream = try #require(lines.first { $0.hasPrefix("downstream (target -> client): ") }, "\(run.stdout)")
            #expect(value("packets", in: upstream) == 100)
            // The upstream link sees the datagrams in the order sent: its losses are those of
            // the model with the same settings (jitter draws from the same random stream).
            var settings = ImpairmentSettings()
            settings.lossPercent = 20
            settings.delay = .milliseconds(20)
            settings.jitter = .milliseconds(2)
            settings.seed = 7
            var model = try ImpairmentModel(settings: settings)
            for _ in 0..<100 { _ = model.process(size: 160, now: .zero) }
            #expect(value("lost", in: upstream) == Double(model.statistics.lost), "\(upstream)")
            #expect(value("loss", in: upstream) == Double(model.statistics.lost), "100 packets: loss % equals the count")
            #expect(value("delivered", in: upstream) == Double(100 - model.statistics.lost))
            #expect(value("packets", in: downstream) == Double(100 - model.statistics.lost), "the target echoed everything")
            #expect(value("delivered", in: downstream) == Double(echoes))
            #expect((0.45...0.85).contains(Double(echoes) / 100), "\(echoes) of 100 round trips through 20 % loss each way")
            for line in [upstream, downstream] {
                let median = try #require(value("delay_p50", in: line))
                #expect((17...23).contains(median), "median delay \(median) ms for 20 ms: \(line)")
                for key in ["queue_dropped", "duplicated", "reordered", "delay_p90", "delay_p99", "delay_mean"] {
                    #expect(value(key, in: line) != nil, "\(key) missing from \(line)")
                }
            }
            #expect(run.stdout.contains("clients: created=1"))
        }
    }

    @Test func ctrlCStopsNetemAndItStillReports() async throws {
        try await Heavy.run {
            let echo = try UDPResponder.echo()
            defer { echo.stop() }
            let (process, _) = try startNetem(["--forward", "\(echo.localAddress)", "--rate", "1000"])
            let started = ContinuousClock.now
            process.interrupt()
            let run = try process.wait(timeout: 10)
            #expect(ContinuousClock.now - started < .seconds(2))
            #expect(run.status == 0, "\(run.stderr)")
            #expect(run.stdout.contains("upstream (client -> target): packets=0"), "\(run.stdout)")
            #expect(run.stderr.contains("rate 1000 kb/s"))
        }
    }

    @Test(arguments: [
        (["--loss", "120"], "--loss 120 is outside 0...100 %"),
        (["--duplicate", "100.5"], "--duplicate 100.5 is outside 0...100 %"),
        (["--delay=-5"], "--delay -5 ms is outside 0...60000 ms"),
        (["--jitter", "70000"], "--jitter 70000 ms is outside 0...60000 ms"),
        (["--burst", "2000"], "--burst 2000 is outside 0...1000 packets"),
        (["--rate", "0"], "--rate 0 kb/s is outside 1...10000000 kb/s"),
        (["--duration", "0"], "--duration 0 must be more than 0"),
        (["--forward", "no-such-host.invalid:5000"], "--forward no-such-host.invalid:5000: cannot resolve 'no-such-host.invalid'"),
        (["--listen", "127.0.0.1"], "--listen 127.0.0.1: '127.0.0.1' is not HOST:PORT"),
    ])
    func badOptionsExitNonZeroNamingTheValue(change: [String], message: String) async throws {
        try await Heavy.run {
            var arguments = ["netem", "--listen", "127.0.0.1:0", "--forward", "127.0.0.1:9", "--duration", "1"]
            if let option = change.first, let index = arguments.firstIndex(of: option) {
                arguments.replaceSubrange(index...index + 1, with: change)
            } else {
                arguments += change
            }
            let run = try CLI.run(arguments)
            #expect(run.status != 0)
            #expect(run.stderr.contains(message), "\(run.stderr)")
        }
    }

    @Test func aListenAddressInUseIsNamed() async throws {
        try await Heavy.run {
            let taken = try UDPSocket(bindTo: SocketAddress(host: "127.0.0.1", port: 0))
            let run = try CLI.run(["netem", "--listen", "\(taken.localAddress)", "--forward", "127.0.0.1:9", "--duration", "1"])
            #expect(run.status != 0)
            #expect(run.stderr.contains("bind \(taken.localAddress)"), "\(run.stderr)")
        }
    }
}
