import Foundation
import Logging
import Signaling
@testable import MediaServer

/// A real server on loopback (port 0) with an in-memory or file store, and clients.
struct TestServer {
    let server: SignalingServer
    let port: Int
    let authority: TokenAuthority
    let store: SQLiteCallStore

    static let secret = try! ServerSecret(bytes: Array("0123456789abcdef0123456789abcdef-test-secret".utf8))

    static func start(path: String? = nil, configure: (inout SignalingServer.Configuration) -> Void = { _ in })
        async throws -> TestServer {
        var configuration = SignalingServer.Configuration()
        configure(&configuration)
        let authority = await TokenAuthority(secret: secret)
        let store = try SQLiteCallStore(path: path)
        var logger = Logger(label: "test.server")
        logger.logLevel = .critical
        let server = SignalingServer(configuration: configuration, authority: authority, store: store, logger: logger)
        let port = try await server.start()
        return TestServer(server: server, port: port, authority: authority, store: store)
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
    private var waiter: (id: Int, continuation: CheckedContinuation<Void, Never>)?
    private var waits = 0
    private(set) var ended = false

    init(url: String) async throws {
        client = try await SignalingClient.connect(url: url)
        Task { await self.pump() }
    }

    private func pump() async {
        for await event in client.events {
            buffer.append(event)
            wake()
        }
        ended = true
        wake()
    }

    private func wake() {
        waiter?.continuation.resume()
        waiter = nil
    }

    /// The next event of `type` (others before it are dropped), or nil after `timeout`.
    func next(_ type: String, timeout: Duration = .seconds(5)) async -> ServerEvent? {
        let deadline = ContinuousClock.now + timeout
        while true {
            if let index = buffer.firstIndex(where: { $0.type == type }) {
                let event = buffer[index]
                buffer.removeFirst(index + 1)
                return event
            }
            guard !ended, ContinuousClock.now < deadline else { return nil }
            waits += 1
            let id = waits
            await withCheckedContinuation { continuation in
                waiter = (id, continuation)
                Task {
                    try? await Task.sleep(until: deadline)
                    self.timeOut(id)
                }
            }
        }
    }

    private func timeOut(_ id: Int) {
        guard waiter?.id == id else { return }
        wake()
    }

    /// Events of any type received and not yet taken.
    func pending() -> [ServerEvent] { buffer }

    /// Waits until the connection ends; returns false after `timeout`.
    func waitForEnd(timeout: Duration = .seconds(5)) async -> Bool {
        _ = await next("\u{0}never", timeout: timeout)
        return ended
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
