import ArgumentParser
import Foundation
import Logging
import MediaEngine
import MediaServer
import NIOCore
import Signaling
import WSClient

/// `mediaengine bench rts`: data through the real-time session relay against a WebSocket echo
/// on the same server, in one run.
struct RTSBench: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "rts",
        abstract: "Data through the real-time session relay (throughput, latency, the server's CPU per MB) against a WebSocket echo on the same server.",
        discussion: """
        Starts `mediaengine server` as a child process, its quota raised so the server, not the quota, is the bound. \
        For each --pairs count it runs that many conferences of two members: one sends --size-byte messages to the \
        other as fast as --window messages in flight allow, for --seconds after a second's warm-up. Then as many \
        clients each send the same messages to the server's /echo, which sends them back over the same WebSocket \
        stack and pump, without the relay's login, quota, routing and framing, with the same window. Reported for \
        each: messages and MB (10^6 bytes) a second, the latency from sending to receipt (p50, p99), and the \
        server's CPU per MB (from /proc). Every stream is checked for order and gaps. The bench's own clients \
        share the machine with the server: compare the two kinds of run with each other, not with other machines.
        """
    )

    @Option(help: "Comma-separated numbers of sender/receiver pairs, run one after another.")
    var pairs = "1,50"

    @Option(help: "Bytes per message (16 to 51200).")
    var size = 4_096

    @Option(help: "Seconds measured in each run, after one second of warm-up.")
    var seconds = 5.0

    @Option(help: "Messages each sender may have in flight (sent, not yet received).")
    var window = 32

    @Flag(help: "Print JSON.")
    var json = false

    func pairCounts() throws -> [Int] {
        let counts = pairs.split(separator: ",").map { Int($0.trimmingCharacters(in: .whitespaces)) }
        guard !counts.isEmpty, counts.allSatisfy({ $0.map { (1...200).contains($0) } ?? false }) else {
            throw ValidationError("--pairs \(pairs): use numbers within 1...200, separated by commas")
        }
        return counts.compactMap { $0 }
    }

    func validate() throws {
        _ = try pairCounts()
        guard (16...RTSQuota().maximumMessageSize).contains(size) else {
            throw ValidationError("--size \(size) must be within 16...\(RTSQuota().maximumMessageSize)")
        }
        guard seconds >= 1 && seconds <= 600 else { throw ValidationError("--seconds must be within 1...600") }
        guard (1...4_096).contains(window) else { throw ValidationError("--window must be within 1...4096") }
    }

    struct Run: Codable {
        /// "relay" or "echo".
        var kind: String
        var pairs: Int
        var messages: Int
        var messagesPerSecond: Double
        var megabytesPerSecond: Double
        var latency: Spread
        /// The server process's CPU over the run, in cores.
        var serverCores: Double
        var serverCPUMillisecondsPerMegabyte: Double
        /// Messages that arrived out of order or after a gap, over the whole run.
        var outOfOrder: Int
    }

    struct Comparison: Codable {
        var pairs: Int
        /// The relay's figure over the echo's.
        var throughput: Double
        var cpuPerMegabyte: Double
        var latencyP50: Double
        var latencyP99: Double
    }

    struct Report: Codable {
        var size: Int
        var window: Int
        var seconds: Double
        var runs: [Run]
        var comparisons: [Comparison]
    }

    func run() async throws {
        let counts = try pairCounts()
        raiseFileLimit(to: 4 * (counts.max() ?? 1) + 256)
        let child = try ChildServer.start(lifetime: Double(counts.count) * 2 * (seconds + 30) + 60, options: [
            "--rts-bytes-per-second", "1073741824", "--rts-messages-per-second", "1000000", "--websocket-echo",
        ])
        defer { child.stop() }
        let authority = await TokenAuthority(secret: try ServerSecret.load(path: child.secretPath, create: false))
        var logger = Logger(label: "mediaengine.bench")
        logger.logLevel = .error
        if !json { say("server on \(child.url) (pid \(child.pid)); \(size)-byte messages, \(window) in flight per sender, \(seconds) s a run") }
        var runs: [Run] = []
        for (index, count) in counts.enumerated() {
            for kind in ["relay", "echo"] {
                let flows = (0..<count).map { _ in Flow(size: size, window: window) }
                let stop: @Sendable () async -> Void = kind == "relay"
                    ? try await Self.startRelay(flows, url: child.url, authority: authority, run: index, logger: logger)
                    : try await Self.startEcho(flows, url: child.url, logger: logger)
                try await Task.sleep(for: .seconds(1))
                let cpuBefore = SFULoadBench.processCPU(child.pid) ?? 0
                let started = ContinuousClock.now
                for flow in flows { flow.measure(true) }
                try await Task.sleep(for: .seconds(seconds))
                for flow in flows { flow.measure(false) }
                let elapsed = (ContinuousClock.now - started) / .seconds(1)
                let cpu = (SFULoadBench.processCPU(child.pid) ?? 0) - cpuBefore
                await stop()
                let results = flows.map { $0.results() }
                let messages = results.reduce(0) { $0 + $1.messages }
                let megabytes = Double(results.reduce(0) { $0 + $1.bytes }) / 1e6
                let run = Run(kind: kind, pairs: count, messages: messages, messagesPerSecond: Double(messages) / elapsed,
                              megabytesPerSecond: megabytes / elapsed, latency: Spread(results.flatMap(\.latencies)),
                              serverCores: cpu / elapsed, serverCPUMillisecondsPerMegabyte: megabytes > 0 ? cpu * 1_000 / megabytes : 0,
                              outOfOrder: results.reduce(0) { $0 + $1.outOfOrder })
                runs.append(run)
                if !json { say(Self.describe(run)) }
            }
        }
        let comparisons = counts.compactMap { count -> Comparison? in
            guard let relay = runs.first(where: { $0.kind == "relay" && $0.pairs == count }),
                  let echo = runs.first(where: { $0.kind == "echo" && $0.pairs == count }) else { return nil }
            func ratio(_ a: Double, _ b: Double) -> Double { b > 0 ? a / b : 0 }
            return Comparison(pairs: count, throughput: ratio(relay.megabytesPerSecond, echo.megabytesPerSecond),
                              cpuPerMegabyte: ratio(relay.serverCPUMillisecondsPerMegabyte, echo.serverCPUMillisecondsPerMegabyte),
                              latencyP50: ratio(relay.latency.p50, echo.latency.p50), latencyP99: ratio(relay.latency.p99, echo.latency.p99))
        }
        let report = Report(size: size, window: window, seconds: seconds, runs: runs, comparisons: comparisons)
        if json {
            let encoder = JSONEncoder()
            encoder.outputFormatting = [.prettyPrinted, .sortedKeys]
            say(String(decoding: try encoder.encode(report), as: UTF8.self))
        } else {
            for comparison in comparisons {
                say(String(format: "%d pair(s), relay / echo: throughput %.2f, server CPU per MB %.2f, latency p50 %.2f, p99 %.2f",
                           comparison.pairs, comparison.throughput, comparison.cpuPerMegabyte, comparison.latencyP50, comparison.latencyP99))
            }
        }
        let disordered = runs.reduce(0) { $0 + $1.outOfOrder }
        if disordered > 0 { throw CommandFailure("\(disordered) messages arrived out of order or after a gap") }
        if let idle = runs.first(where: { $0.messages == 0 }) { throw CommandFailure("the \(idle.kind) run of \(idle.pairs) pair(s) moved nothing") }
    }

    static func describe(_ run: Run) -> String {
        String(format: "%@ %3d pair(s): %8.0f msg/s, %7.1f MB/s; latency %@; server %.2f cores, %.2f ms CPU per MB",
               run.kind.padding(toLength: 5, withPad: " ", startingAt: 0), run.pairs, run.messagesPerSecond, run.megabytesPerSecond,
               run.latency.text, run.serverCores, run.serverCPUMillisecondsPerMegabyte)
    }

    /// Conferences of two through the relay: for each flow a sender and a receiver, each with
    /// a signaling connection and a data connection. Returns what stops them.
    static func startRelay(_ flows: [Flow], url: String, authority: TokenAuthority, run: Int,
                           logger: Logger) async throws -> @Sendable () async -> Void {
        var connections: [RTSDataConnection] = []
        var clients: [BenchClient] = []
        var senders: [Task<Void, Never>] = []
        for (index, flow) in flows.enumerated() {
            let name = "bench-\(run)-\(index)"
            var channel: UInt64 = 0
            for role in ["receiver", "sender"] {
                let account = "\(role)-\(run)-\(index)"
                let token = try await authority.mint(account: account, lifetime: .seconds(3_600))
                let data = try await RTSDataConnection.open(server: url, token: token, device: "bench", logger: logger, received: { inbound in
                    if case .data(let frame) = inbound { flow.received(frame.payload) }
                }, ended: { _ in })
                connections.append(data)
                let client = try await BenchClient(url: url)
                clients.append(client)
                _ = try await client.client.request(MessageType.login, Request.Login(token: token, device: "bench"), as: Reply.Login.self,
                                                    timeout: .seconds(30))
                if role == "receiver" {
                    _ = try await client.client.request(MessageType.reserveConference, Request.ReserveConference(name: name),
                                                        as: Reply.Empty.self, timeout: .seconds(30))
                }
                channel = try await client.client.request(MessageType.joinConference, Request.JoinConference(name: name, disableRecord: true),
                                                          as: Reply.JoinConference.self, timeout: .seconds(30)).channelID
                if role == "sender" {
                    let target = "receiver-\(run)-\(index)"
                    senders.append(Task { [channel] in
                        await flow.drive { payload in _ = try await data.send(payload, channelID: channel, to: target) }
                    })
                }
            }
        }
        let stopping = (connections, clients, senders)
        return {
            for flow in flows { flow.stop() }
            for sender in stopping.2 { await sender.value }
            for connection in stopping.0 { await connection.close() }
            for client in stopping.1 { await client.close() }
        }
    }

    /// Clients of the server's /echo: each sends and reads its own messages back.
    static func startEcho(_ flows: [Flow], url: String, logger: Logger) async throws -> @Sendable () async -> Void {
        let echo = url.hasSuffix("/") ? url + "echo" : url + "/echo"
        var tasks: [Task<Void, Never>] = []
        let (ready, connected) = AsyncStream<Bool>.makeStream()
        for flow in flows {
            tasks.append(Task {
                do {
                    try await WebSocketClient.connect(url: echo, configuration: .init(maxFrameSize: 1 << 21, autoPing: .disabled),
                                                      logger: logger) { inbound, outbound, _ in
                        connected.yield(true)
                        await withTaskGroup(of: Void.self) { group in
                            group.addTask {
                                await flow.drive { payload in try await outbound.write(.binary(ByteBuffer(bytes: payload))) }
                            }
                            group.addTask {
                                do {
                                    for try await message in inbound.messages(maxSize: 1 << 21) {
                                        if case .binary(let buffer) = message { flow.received(buffer) }
                                    }
                                } catch {}
                            }
                            // The sender ends when stopped; then the reader goes too.
                            await group.next()
                            group.cancelAll()
                        }
                    }
                } catch {
                    connected.yield(false)
                }
            })
        }
        var count = 0
        for await success in ready {
            guard success else {
                for flow in flows { flow.stop() }
                throw CommandFailure("cannot connect to \(echo)")
            }
            count += 1
            if count == flows.count { break }
        }
        let running = tasks
        return {
            for flow in flows { flow.stop() }
            for task in running { await task.value }
        }
    }
}

/// One stream of stamped messages (sequence number and send time in the first 16 bytes),
/// sent with at most `window` in flight; what arrives is checked for order and timed.
final class Flow: Sendable {
    struct Results {
        var messages = 0
        var bytes = 0
        var latencies: [Duration] = []
        var outOfOrder = 0
    }

    private struct State {
        var expected: UInt64 = 0
        var measuring = false
        var results = Results()
    }

    let size: Int
    let window: Int
    private let state = Locked(State())
    private let credits: AsyncStream<Void>
    private let credit: AsyncStream<Void>.Continuation
    private let stopped = Locked(false)
    /// What send times count from (sender and receiver are in this process).
    private let origin = ContinuousClock.now

    init(size: Int, window: Int) {
        self.size = size
        self.window = window
        (credits, credit) = AsyncStream<Void>.makeStream()
    }

    /// Sends until stopped, waiting for a credit (a message received) when `window` are in flight.
    func drive(_ send: @Sendable (Data) async throws -> Void) async {
        var payload = Data(count: size)
        var sequence: UInt64 = 0
        var available = window
        var iterator = credits.makeAsyncIterator()
        while !stopped.withLock({ $0 }) {
            if available == 0 {
                guard await iterator.next() != nil else { return }
                available += 1
            }
            let sentAt = UInt64((ContinuousClock.now - origin) / .nanoseconds(1))
            payload.withUnsafeMutableBytes { bytes in
                bytes.storeBytes(of: sequence.bigEndian, toByteOffset: 0, as: UInt64.self)
                bytes.storeBytes(of: sentAt.bigEndian, toByteOffset: 8, as: UInt64.self)
            }
            do {
                try await send(payload)
            } catch {
                return
            }
            sequence += 1
            available -= 1
        }
    }

    func received(_ buffer: ByteBuffer) {
        guard let sequence = buffer.getInteger(at: buffer.readerIndex, endianness: .big, as: UInt64.self),
              let sentAt = buffer.getInteger(at: buffer.readerIndex + 8, endianness: .big, as: UInt64.self) else { return }
        let latency = (ContinuousClock.now - origin) - .nanoseconds(Int64(sentAt))
        state.withLock { state in
            if sequence != state.expected { state.results.outOfOrder += 1 }
            state.expected = sequence + 1
            if state.measuring {
                state.results.messages += 1
                state.results.bytes += buffer.readableBytes
                state.results.latencies.append(latency)
            }
        }
        credit.yield()
    }

    func measure(_ on: Bool) { state.withLock { $0.measuring = on } }

    func stop() {
        stopped.withLock { $0 = true }
        credit.finish()
    }

    func results() -> Results { state.withLock { $0.results } }
}
