import Foundation
import Logging
import Signaling
import TestSupport
@testable import MediaServer

/// A real server on loopback (port 0) with an in-memory or file store, and clients.
struct TestServer {
    let server: SignalingServer
    let port: Int
    let authority: TokenAuthority
    let store: SQLiteCallStore

    static let secret = try! ServerSecret(bytes: Array("0123456789abcdef0123456789abcdef-test-secret".utf8))

    /// - Parameter logger: Where the server logs; nil: nowhere below critical.
    static func start(path: String? = nil, logger: Logger? = nil, configure: (inout SignalingServer.Configuration) -> Void = { _ in })
        async throws -> TestServer {
        var configuration = SignalingServer.Configuration()
        configure(&configuration)
        let authority = await TokenAuthority(secret: secret)
        let store = try SQLiteCallStore(path: path)
        let logger = logger ?? {
            var quiet = Logger(label: "test.server")
            quiet.logLevel = .critical
            return quiet
        }()
        let server = SignalingServer(configuration: configuration, authority: authority, store: store, logger: logger)
        let port = try await server.start()
        return TestServer(server: server, port: port, authority: authority, store: store)
    }

    /// A server for a test that stops and restarts it on the same port: the port is
    /// below the kernel's ephemeral range (32768 and up), so while the server is down no
    /// socket bound to port 0 and no outgoing connection can take its number.
    static func startOnStablePort(path: String) async throws -> TestServer {
        var candidate = 20_000 + Int.random(in: 0..<10_000)
        while true {
            do {
                return try await start(path: path) { $0.port = candidate }
            } catch where candidate < 32_000 {
                candidate += 7  // taken (by another test's stable port): the next one
            }
        }
    }

    var url: String { "ws://127.0.0.1:\(port)/" }

    func token(_ account: String, lifetime: Duration = .seconds(600)) async throws -> String {
        try await authority.mint(account: account, lifetime: lifetime)
    }

    /// A client logged in as `account` on `device`.
    func client(_ account: String, device: String = "d") async throws -> TestClient {
        let client = try await TestClient(url: url)
        let reply = try await client.client.request(MessageType.login, Request.Login(token: try await token(account), device: device),
                                                    as: Reply.Login.self)
        precondition(reply.account == account)
        return client
    }
}

/// A signaling client whose events are collected by a background reader, so a test
/// can wait for the next one of a type with a deadline.
actor TestClient {
    let client: SignalingClient
    private var buffer: [ServerEvent] = []
    private(set) var ended = false

    init(url: String) async throws {
        client = try await SignalingClient.connect(url: url)
        Task { await self.pump() }
    }

    private func pump() async {
        for await event in client.events { buffer.append(event) }
        ended = true
    }

    /// The next event of `type` (others before it are dropped), or nil after `timeout` or
    /// once the connection ended without one.
    func next(_ type: String, timeout: Duration = .seconds(5)) async -> ServerEvent? {
        var event: ServerEvent?
        await eventually(timeout: timeout) {
            if let index = buffer.firstIndex(where: { $0.type == type }) {
                event = buffer[index]
                buffer.removeFirst(index + 1)
                return true
            }
            return ended
        }
        return event
    }

    /// Events of any type received and not yet taken.
    func pending() -> [ServerEvent] { buffer }

    /// Waits until the connection ends; returns false after `timeout`.
    func waitForEnd(timeout: Duration = .seconds(5)) async -> Bool {
        await eventually(timeout: timeout) { ended }
    }

    func request<Body: Encodable & Sendable, Result: Decodable & Sendable>(_ type: String, _ body: Body, as result: Result.Type)
        async throws(SignalingError) -> Result {
        try await client.request(type, body, as: result)
    }

    /// The error code a request gets, or nil when it succeeds.
    func code<Body: Encodable & Sendable>(_ type: String, _ body: Body) async -> Int? {
        do {
            _ = try await client.request(type, body, as: Reply.Empty.self)
            return nil
        } catch {
            return error.code.rawValue
        }
    }

    func close() async { await client.close() }
}

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

extension TestServer {
    /// GET /metrics: the status and the body.
    func scrapeMetrics(token: String? = nil) async throws -> (status: Int, body: String) {
        var request = URLRequest(url: URL(string: "http://127.0.0.1:\(port)/metrics")!)
        if let token { request.setValue("Bearer \(token)", forHTTPHeaderField: "Authorization") }
        let (data, response) = try await URLSession.shared.data(for: request)
        return ((response as? HTTPURLResponse)?.statusCode ?? 0, String(decoding: data, as: UTF8.self))
    }
}

/// One sample of Prometheus' text format.
struct MetricSample: Equatable {
    var name: String
    var labels: [String: String]
    var value: Double

    /// Every sample in `text` (comments skipped).
    static func parse(_ text: String) -> [MetricSample] {
        text.split(separator: "\n").compactMap { line -> MetricSample? in
            guard !line.hasPrefix("#"), let space = line.lastIndex(of: " "), let value = Double(line[line.index(after: space)...]) else {
                return nil
            }
            let head = line[..<space]
            guard let brace = head.firstIndex(of: "{") else { return MetricSample(name: String(head), labels: [:], value: value) }
            var labels: [String: String] = [:]
            for pair in head[head.index(after: brace)..<head.index(before: head.endIndex)].split(separator: ",") {
                let parts = pair.split(separator: "=", maxSplits: 1)
                guard parts.count == 2 else { continue }
                labels[String(parts[0])] = String(parts[1].dropFirst().dropLast())
            }
            return MetricSample(name: String(head[..<brace]), labels: labels, value: value)
        }
    }
}

extension [MetricSample] {
    /// The value of the sample named `name` whose labels include `labels`.
    func value(_ name: String, _ labels: [String: String] = [:]) -> Double? {
        first { sample in sample.name == name && labels.allSatisfy { sample.labels[$0.key] == $0.value } }?.value
    }
}
