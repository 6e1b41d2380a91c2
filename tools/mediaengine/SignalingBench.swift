import ArgumentParser
import Foundation
import Logging
import MediaEngine
import MediaServer
import Signaling

/// `mediaengine bench` with its kinds: codecs (the default), signaling, calls.
struct BenchGroup: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "bench",
        abstract: "Benchmarks: codecs (default), the signaling server under load, call setup, the SFU, the live composer, the TURN relay, long soaks, audio processing, and the real-time session relay.",
        subcommands: [BenchCommand.self, SignalingBench.self, CallSetupBench.self, SFULoadBench.self, LiveBench.self, RelayBench.self, SoakBench.self,
                      AudioProcessingBench.self, RTSBench.self],
        defaultSubcommand: BenchCommand.self
    )
}

/// Percentiles of a sample, milliseconds.
struct Spread: Codable {
    var count: Int
    var p50: Double
    var p90: Double
    var p99: Double
    var max: Double

    init(_ values: [Duration]) {
        let sorted = values.map { $0 / .milliseconds(1) }.sorted()
        func at(_ q: Double) -> Double { sorted.isEmpty ? 0 : sorted[min(sorted.count - 1, Int(Double(sorted.count) * q))] }
        count = sorted.count
        p50 = at(0.5)
        p90 = at(0.9)
        p99 = at(0.99)
        max = sorted.last ?? 0
    }

    var text: String { String(format: "p50 %.1f ms, p90 %.1f ms, p99 %.1f ms, max %.1f ms (n=%d)", p50, p90, p99, max, count) }
}

struct SignalingBench: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "signaling",
        abstract: "Load the signaling server: many logged-in clients and many concurrent call setups, every event counted.",
        discussion: """
        Starts the server in this process with a temporary database, connects and logs in --clients WebSocket \
        clients, then runs --calls call setups at once (start, invitation, accept, media connected, hangup, a \
        record to both sides), and checks that every event that should arrive did, exactly once. With --nodes N \
        and --store postgres://..., runs N server nodes sharing that PostgreSQL, spreads the clients over them and \
        makes half the calls between clients of one node and half across nodes: both setups are reported, and the \
        round trip of a message between two nodes (the store's NOTIFY). tools/with-postgres runs it on a scratch database.
        """
    )

    @Option(help: "Logged-in clients held at once.")
    var clients = 1_000

    @Option(help: "Concurrent call setups (each uses two clients).")
    var calls = 200

    @Option(help: "Server nodes sharing --store (PostgreSQL); 1: one server with SQLite.")
    var nodes = 1

    @Option(help: "postgres://USER@HOST[:PORT]/DATABASE the nodes share (password from --store-password-file or PGPASSWORD).")
    var store: String?

    @Option(help: "File holding the PostgreSQL password.")
    var storePasswordFile: String?

    @Flag(help: "Print JSON.")
    var json = false

    func validate() throws {
        guard clients >= 2 && clients <= 20_000 else { throw ValidationError("--clients \(clients) must be within 2...20000") }
        guard calls >= 1 && calls * 2 <= clients else { throw ValidationError("--calls \(calls) needs 2 clients each (--clients \(clients))") }
        guard (1...8).contains(nodes) else { throw ValidationError("--nodes \(nodes) must be within 1...8") }
        if nodes > 1 {
            guard let store, store.hasPrefix("postgres://") || store.hasPrefix("postgresql://") else {
                throw ValidationError("--nodes \(nodes) needs --store postgres://USER@HOST[:PORT]/DATABASE")
            }
            // Each node takes the clients of one call's caller and callee in turn.
            guard clients >= 2 * calls + 2 * nodes else {
                throw ValidationError("--nodes \(nodes): --clients must be at least 2 x --calls + 2 x --nodes")
            }
        } else if store != nil {
            throw ValidationError("--store needs --nodes 2 or more (one node uses a temporary SQLite database)")
        }
    }

    /// The nodes' store location, with its password.
    func location() throws -> PostgresCallStore.Location {
        var location: PostgresCallStore.Location
        do {
            location = try PostgresCallStore.Location(url: store ?? "")
        } catch {
            throw ValidationError("--store: \(error.message)")
        }
        location.password = try SecretSource.storePassword.resolve(argument: location.password, file: storePasswordFile)
        return location
    }

    struct Report: Codable {
        var clients: Int
        var connected: Int
        var connectSeconds: Double
        var login: Spread
        var calls: Int
        var callsCompleted: Int
        var setupSignaling: Spread
        var eventsExpected: Int
        var eventsReceived: Int
        var eventsLost: Int
        var eventsDuplicated: Int
        var nodes: Int
        /// Setups with caller and callee on one node, and on different nodes.
        var setupSameNode: Spread
        var setupCrossNode: Spread
        /// A message from one node to another and back through the store (NOTIFY).
        var nodeRoundTrip: Spread?
        var recordsStored: Int
        var connectionsAfter: Int
        var residentMegabytes: Double
    }

    func run() async throws {
        raiseFileLimit(to: clients * 2 + 256)
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("mediaengine-bench-\(UInt32.random(in: 0 ... .max))")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        var random = SystemRandomNumberGenerator()
        let authority = await TokenAuthority(secret: try ServerSecret(bytes: (0..<32).map { _ in UInt8.random(in: 0...255, using: &random) }))
        var logger = Logger(label: "mediaengine.bench")
        logger.logLevel = .error
        var configuration = SignalingServer.Configuration()
        // One process opens every client: the per-connection rate limit is not what is measured.
        configuration.limits.messageRate = 1_000
        configuration.limits.messageBurst = 1_000
        configuration.live = nil
        var servers: [SignalingServer] = []
        var urls: [String] = []
        let store: any CallStore
        var postgres: [PostgresCallStore] = []
        if nodes == 1 {
            store = try SQLiteCallStore(path: directory.appendingPathComponent("calls.sqlite").path)
            servers.append(SignalingServer(configuration: configuration, authority: authority, store: store, logger: logger))
        } else {
            let location = try location()
            // Node IDs of this run only: a run never meets rows an earlier one left.
            let run = String(UInt32.random(in: 0 ... .max), radix: 36)
            for index in 1...nodes {
                let nodeStore = try await PostgresCallStore(location: location, logger: logger)
                postgres.append(nodeStore)
                var settings = configuration
                settings.cluster = ClusterNode.Configuration(node: try NodeID("bench-\(run)-\(index)"))
                servers.append(SignalingServer(configuration: settings, authority: authority, store: nodeStore, logger: logger))
            }
            store = postgres[0]
        }
        for server in servers { urls.append("ws://127.0.0.1:\(try await server.start())/") }
        let nodeURLs = urls
        let recordsBefore = (try? await store.recordCount()) ?? 0
        if !json { say("\(nodes == 1 ? "server on \(urls[0])" : "\(nodes) nodes sharing one PostgreSQL"); connecting \(clients) clients") }

        let connectStart = ContinuousClock.now
        var endpoints: [BenchClient?] = Array(repeating: nil, count: clients)
        var logins: [Duration] = []
        for batch in stride(from: 0, to: clients, by: 100) {
            try await withThrowingTaskGroup(of: (Int, BenchClient, Duration).self) { group in
                for index in batch..<min(clients, batch + 100) {
                    group.addTask {
                        let token = try await authority.mint(account: "user\(index)", lifetime: .seconds(3_600))
                        let started = ContinuousClock.now
                        let client = try await BenchClient(url: nodeURLs[index % nodeURLs.count])
                        _ = try await client.client.request(MessageType.login, Request.Login(token: token, device: "bench"),
                                                            as: Reply.Login.self, timeout: .seconds(30))
                        return (index, client, ContinuousClock.now - started)
                    }
                }
                for try await (index, client, elapsed) in group {
                    endpoints[index] = client
                    logins.append(elapsed)
                }
            }
        }
        let connectSeconds = (ContinuousClock.now - connectStart) / .seconds(1)
        var connected = 0
        for server in servers { connected += await server.hub.connectionCount }
        if !json { say("\(connected) clients logged in in \(String(format: "%.1f", connectSeconds)) s; \(calls) call setups at once") }

        let all = endpoints.compactMap { $0 }
        guard all.count == clients else { throw CommandFailure("\(clients - all.count) clients did not log in") }
        // Client i is on node i % nodes. Each call takes a caller on node k % nodes and a
        // callee on the same node (even k) or the next (odd k); one node: all on it.
        var free: [[Int]] = (0..<nodes).map { node in Array(stride(from: node, to: clients, by: nodes).reversed()) }
        var pairs: [(caller: Int, callee: Int, cross: Bool)] = []
        for call in 0..<calls {
            let callerNode = call % nodes
            let calleeNode = call % 2 == 0 ? callerNode : (callerNode + 1) % nodes
            guard let caller = free[callerNode].popLast(), let callee = free[calleeNode].popLast() else {
                throw CommandFailure("not enough clients on node \(callerNode + 1) for \(calls) calls")
            }
            pairs.append((caller, callee, callerNode != calleeNode))
        }
        var same: [Duration] = []
        var cross: [Duration] = []
        var completed = 0
        await withTaskGroup(of: (Duration, Bool)?.self) { group in
            for (index, pair) in pairs.enumerated() {
                let caller = all[pair.caller]
                let callee = all[pair.callee]
                group.addTask {
                    await Self.call(from: caller, to: callee, calleeAccount: "user\(pair.callee)", index: index).map { ($0, pair.cross) }
                }
            }
            for await result in group {
                if let (setup, crossed) = result {
                    if crossed { cross.append(setup) } else { same.append(setup) }
                    completed += 1
                }
            }
        }
        let setups = same + cross
        // Every call: the callee gets receive, hangup and callRecord; the caller response and callRecord.
        let expected = calls * 5
        var received = 0
        var duplicated = 0
        for index in pairs.flatMap({ [$0.caller, $0.callee] }) {
            let counts = await all[index].counts
            for type in [MessageType.receive, MessageType.response, MessageType.hangup, MessageType.callRecord] {
                let count = counts[type] ?? 0
                received += min(count, 1)
                duplicated += max(0, count - 1)
            }
        }
        var connectionsAfter = 0
        for server in servers { connectionsAfter += await server.hub.connectionCount }
        let records = ((try? await store.recordCount()) ?? 0) - recordsBefore
        let roundTrip = postgres.isEmpty ? nil : try await Self.nodeRoundTrips(postgres[0], logger: logger)
        let report = Report(clients: clients, connected: connected, connectSeconds: connectSeconds, login: Spread(logins), calls: calls,
                            callsCompleted: completed, setupSignaling: Spread(setups), eventsExpected: expected, eventsReceived: received,
                            eventsLost: expected - received, eventsDuplicated: duplicated, nodes: nodes, setupSameNode: Spread(same),
                            setupCrossNode: Spread(cross), nodeRoundTrip: roundTrip.map(Spread.init), recordsStored: records,
                            connectionsAfter: connectionsAfter, residentMegabytes: residentMegabytes())
        for client in all { await client.close() }
        for server in servers { await server.shutdown() }
        for store in postgres { await store.close() }
        if json {
            let encoder = JSONEncoder()
            encoder.outputFormatting = [.prettyPrinted, .sortedKeys]
            say(String(decoding: try encoder.encode(report), as: UTF8.self))
        } else {
            say("logins: \(report.login.text)")
            say("calls: \(completed)/\(calls) completed; setup (start -> accepted response at the caller): \(report.setupSignaling.text)")
            if nodes > 1 {
                say("  caller and callee on one node: \(report.setupSameNode.text)")
                say("  on different nodes:            \(report.setupCrossNode.text)")
                if let roundTrip = report.nodeRoundTrip { say("node to node and back through PostgreSQL (NOTIFY): \(roundTrip.text)") }
            }
            say("events: \(received)/\(expected) delivered, \(expected - received) lost, \(duplicated) duplicated; \(records) records stored")
            say("connections held after the calls: \(connectionsAfter)/\(clients); resident memory \(String(format: "%.0f", report.residentMegabytes)) MB")
        }
        guard report.eventsLost == 0, report.eventsDuplicated == 0, completed == calls, connectionsAfter == clients, records == calls else {
            throw CommandFailure("the server lost events or connections under load")
        }
    }

    /// Messages from one node's bus to another's and straight back, one at a time: the
    /// round trip of a signaling message between nodes, both NOTIFYs included.
    static func nodeRoundTrips(_ store: PostgresCallStore, count: Int = 200, logger: Logger) async throws -> [Duration] {
        let run = String(UInt32.random(in: 0 ... .max), radix: 36)
        let ping = NodeBus(node: try NodeID("rtt-\(run)-a"), store: store, logger: logger)
        let pong = NodeBus(node: try NodeID("rtt-\(run)-b"), store: store, logger: logger)
        let tasks = [Task { await ping.run() }, Task { await pong.run() }]
        defer { tasks.forEach { $0.cancel() } }
        let echo = Task {
            for await message in pong.messages { try? await pong.send(message.body, to: ping.node) }
        }
        defer { echo.cancel() }
        var replies = ping.messages.makeAsyncIterator()
        var samples: [Duration] = []
        for index in 0..<(count + 10) {
            let started = ContinuousClock.now
            try await ping.send(Data("\(index)".utf8), to: pong.node)
            guard await replies.next() != nil else { break }
            // The first few warm the pools' connections up.
            if index >= 10 { samples.append(ContinuousClock.now - started) }
        }
        return samples
    }

    /// One call through signaling only (media reported connected without media): returns
    /// the setup time, or nil when a step failed.
    static func call(from caller: BenchClient, to callee: BenchClient, calleeAccount: String, index: Int) async -> Duration? {
        let media = MediaEndpoint(candidates: [MediaCandidate(host: "127.0.0.1", port: 10_000 + index)], srtpProfile: "AES_CM_128_HMAC_SHA1_80",
                                  srtpKey: "AAAA", audioSSRC: UInt32(index + 1), videoSSRC: nil,
                                  iceUfrag: "ufrag\(index)", icePassword: "bench-password-of-22-chars")
        do {
            let started = ContinuousClock.now
            let id = try await caller.client.request(MessageType.start, Request.Start(callee: calleeAccount, type: .audio, media: media),
                                                     as: Reply.Start.self, timeout: .seconds(30)).callID
            guard await callee.next(MessageType.receive) != nil else { return nil }
            _ = try await callee.client.request(MessageType.response, Request.Response(callID: id, accept: true, media: media),
                                                as: Reply.Response.self, timeout: .seconds(30))
            guard await caller.next(MessageType.response) != nil else { return nil }
            let setup = ContinuousClock.now - started
            _ = try await caller.client.request(MessageType.mediaStatus, Request.MediaStatus(callID: id, connected: true),
                                                as: Reply.Empty.self, timeout: .seconds(30))
            _ = try await caller.client.request(MessageType.hangup, Request.Hangup(callID: id), as: Reply.Empty.self, timeout: .seconds(30))
            guard await callee.next(MessageType.hangup) != nil, await caller.next(MessageType.callRecord) != nil,
                  await callee.next(MessageType.callRecord) != nil else { return nil }
            return setup
        } catch {
            return nil
        }
    }
}

/// A benchmark client: its events are counted by type and can be awaited.
actor BenchClient {
    let client: SignalingClient
    private(set) var counts: [String: Int] = [:]
    private var taken: [String: Int] = [:]
    private var waiters: [(type: String, continuation: CheckedContinuation<Bool, Never>)] = []

    init(url: String) async throws {
        client = try await SignalingClient.connect(url: url, timeout: .seconds(30))
        Task { await self.pump() }
    }

    private func pump() async {
        for await event in client.events {
            counts[event.type, default: 0] += 1
            wake()
        }
        for waiter in waiters { waiter.continuation.resume(returning: false) }
        waiters.removeAll()
    }

    private func wake() {
        waiters.removeAll { waiter in
            guard (counts[waiter.type] ?? 0) > (taken[waiter.type] ?? 0) else { return false }
            taken[waiter.type, default: 0] += 1
            waiter.continuation.resume(returning: true)
            return true
        }
    }

    /// Waits for the next event of `type` not yet taken (up to 30 s).
    func next(_ type: String) async -> Bool? {
        if (counts[type] ?? 0) > (taken[type] ?? 0) {
            taken[type, default: 0] += 1
            return true
        }
        let arrived = await withCheckedContinuation { continuation in
            waiters.append((type, continuation))
            Task {
                try? await Task.sleep(for: .seconds(30))
                self.expire(type)
            }
        }
        return arrived ? true : nil
    }

    private func expire(_ type: String) {
        guard let index = waiters.firstIndex(where: { $0.type == type }) else { return }
        waiters.remove(at: index).continuation.resume(returning: false)
    }

    func close() async { await client.close() }
}

/// Raises the soft limit on open files toward `wanted` (up to the hard limit).
func raiseFileLimit(to wanted: Int) {
    var limit = rlimit()
    guard getrlimit(Int32(RLIMIT_NOFILE.rawValue), &limit) == 0, limit.rlim_cur < rlim_t(wanted) else { return }
    limit.rlim_cur = min(limit.rlim_max, rlim_t(wanted))
    setrlimit(Int32(RLIMIT_NOFILE.rawValue), &limit)
}

/// Resident set size of this process, MB (from /proc/self/statm).
func residentMegabytes() -> Double {
    guard let text = try? String(contentsOfFile: "/proc/self/statm", encoding: .utf8) else { return 0 }
    let fields = text.split(separator: " ")
    guard fields.count > 1, let pages = Double(fields[1]) else { return 0 }
    return pages * Double(sysconf(Int32(_SC_PAGESIZE))) / 1_048_576
}

struct CallSetupBench: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "calls",
        abstract: "Place calls one after another on loopback and measure setup time and mouth-to-ear delay.",
        discussion: """
        Like `mediaengine demo`, with --count calls of --seconds each: setup is from `start` until both sides \
        report connected (signaling, STUN connectivity check, media start); mouth-to-ear is the median over the \
        marked tone's markers of all calls, both directions.
        """
    )

    @Option(help: "Calls to place.")
    var count = 10

    @Option(help: "Seconds each call lasts once connected.")
    var seconds: Double = 2

    @Flag(help: "Video calls (640x480, 30 fps) instead of audio only.")
    var video = false

    func validate() throws {
        guard (1...1_000).contains(count) else { throw ValidationError("--count \(count) must be within 1...1000") }
        guard seconds >= 1 && seconds <= 60 else { throw ValidationError("--seconds \(seconds) must be within 1...60") }
    }

    func run() async throws {
        var random = SystemRandomNumberGenerator()
        let authority = await TokenAuthority(secret: try ServerSecret(bytes: (0..<32).map { _ in UInt8.random(in: 0...255, using: &random) }))
        var logger = Logger(label: "mediaengine.bench")
        logger.logLevel = .error
        let server = SignalingServer(configuration: SignalingServer.Configuration(), authority: authority,
                                     store: try SQLiteCallStore(path: nil), logger: logger)
        let url = "ws://127.0.0.1:\(try await server.start())/"
        let alice = try await DemoEndpoint(account: "alice", tone: 440, url: url, answers: false,
                                           token: try await authority.mint(account: "alice", lifetime: .seconds(3_600)))
        let bob = try await DemoEndpoint(account: "bob", tone: 660, url: url, answers: true,
                                         token: try await authority.mint(account: "bob", lifetime: .seconds(3_600)))
        var setups: [Duration] = []
        for _ in 0..<count {
            alice.resetCall()
            bob.resetCall()
            let started = ContinuousClock.now
            let id = try await alice.manager.start(callee: "bob", type: video ? .video : .audio)
            guard let a = await alice.waitConnected(timeout: 15), let b = await bob.waitConnected(timeout: 15) else {
                throw CommandFailure("call \(setups.count + 1) did not connect: \(alice.problems + bob.problems)")
            }
            setups.append(max(a, b) - started)
            try await Task.sleep(for: .milliseconds(Int64(seconds * 1_000)))
            try await alice.manager.hangup(callID: id)
            _ = await bob.waitRecord(timeout: 10)
            _ = await alice.waitRecord(timeout: 10)
        }
        var delays: [Duration] = []
        for (sender, receiver) in [(alice, bob), (bob, alice)] {
            let markers = sender.state.received.withLock { $0.allMarkers }
            let onsets = receiver.state.received.withLock { $0.onsets.onsets }
            delays += OnsetDetector.delays(markers: markers, onsets: onsets)
        }
        await alice.manager.logout()
        await bob.manager.logout()
        await server.shutdown()
        say("\(count) \(video ? "video" : "audio") calls on loopback")
        say("setup (start -> connected on both sides): \(Spread(setups).text)")
        say("mouth-to-ear: \(Spread(delays).text)")
    }
}
