import Foundation
import Logging
import MediaEngine
import Signaling
import TestSupport
import Testing
@testable import MediaServer

/// The login reply's ICE servers, used for real: the media port answers the STUN entry,
/// and a coturn on loopback sharing the server's TURN secret allocates with the TURN
/// entry's credentials, and refuses expired ones or another secret's.
@Suite struct TURNLogins {
    static let realm = "media.test"

    /// coturn on loopback, started, and a relay of this server sharing its secret.
    static func coturn(lifetime: Duration = TURNRelay.defaultCredentialLifetime) throws -> (Coturn, TURNRelay) {
        let coturn = try Coturn(loopbackRealm: realm)
        try coturn.start()
        let relay = try TURNRelay(url: "turn:127.0.0.1:\(coturn.port)?transport=udp", secret: coturn.secret, credentialLifetime: lifetime)
        return (coturn, relay)
    }

    static func login(_ server: TestServer, _ account: String) async throws -> (TestClient, Reply.Login) {
        let client = try await TestClient(url: server.url)
        let reply = try await client.request(MessageType.login, Request.Login(token: try await server.token(account), device: "d"),
                                             as: Reply.Login.self)
        return (client, reply)
    }

    @Test func withoutTURNALoginGetsTheMediaPortAsASTUNServerThatAnswers() async throws {
        try await Heavy.run {
            let server = try await TestServer.start()
            defer { Task { await server.server.shutdown() } }
            let (client, reply) = try await Self.login(server, "alice")
            defer { Task { await client.close() } }
            let port = try #require(server.server.echoAddress?.port)
            #expect(reply.iceServers == [ICEServer(urls: ["stun:127.0.0.1:\(port)"])])

            let gathering = try ICEGatheringServers(reply.iceServers)
            #expect(gathering.turn.isEmpty)
            let stun = try #require(gathering.stun.first)
            // The server answers padded requests only (never more bytes than it was sent).
            let answer = try #require(try STUNProbe.mappedAddress(of: stun, attributes: STUNBinding.request().attributes, timeout: 3),
                                      "the media port answers a binding request")
            #expect(answer.mapped.port == answer.local.port)
            #expect(answer.mapped.host == "127.0.0.1")
        }
    }

    @Test func aServerWithoutAMediaPortHandsOutNoSTUNEntry() async throws {
        let server = try await TestServer.start { $0.echo = false }
        defer { Task { await server.server.shutdown() } }
        let (client, reply) = try await Self.login(server, "alice")
        defer { Task { await client.close() } }
        #expect(reply.iceServers.isEmpty)
    }

    @Test func coturnAllocatesWithTheCredentialsALoginGets() async throws {
        try await Heavy.run {
            let (coturn, relay) = try Self.coturn()
            let server = try await TestServer.start { $0.turn = relay }
            defer { Task { await server.server.shutdown() } }
            let before = Int(Date().timeIntervalSince1970)
            let (alice, reply) = try await Self.login(server, "alice")
            defer { Task { await alice.close() } }
            let port = try #require(server.server.echoAddress?.port)
            try #require(reply.iceServers.count == 2, "\(reply.iceServers)")
            #expect(reply.iceServers[0] == ICEServer(urls: ["stun:127.0.0.1:\(port)"]))
            let turn = reply.iceServers[1]
            #expect(turn.urls == ["turn:127.0.0.1:\(coturn.port)?transport=udp"])
            let username = try #require(turn.username)
            let expiry = try #require(Int(username.split(separator: ":")[0]))
            #expect((before + 86_400...Int(Date().timeIntervalSince1970) + 86_400).contains(expiry), "expires a day after the login")
            #expect(username.hasSuffix(":alice"))

            let gathering = try ICEGatheringServers(reply.iceServers)
            let configuration = try #require(gathering.turn.first)
            #expect(configuration.server == coturn.serverAddress)
            let outcome = try TURNProbe.allocate(on: configuration.server, credentials: configuration.credentials)
            let relayed = try outcome.get()
            #expect(relayed.host == "127.0.0.1")
            #expect(coturn.options.relayPorts.contains(relayed.port))
            let log = coturn.log
            #expect(log.contains("ALLOCATE processed, success"), "\(log)")
            #expect(log.contains(username), "coturn saw the login's username: \(log)")

            // Another account gets its own credentials, which work too.
            let (bob, bobReply) = try await Self.login(server, "bob")
            defer { Task { await bob.close() } }
            let bobTURN = try #require(bobReply.iceServers.last)
            #expect(bobTURN.username?.hasSuffix(":bob") == true)
            #expect(bobTURN.credential != turn.credential)
            #expect(try TURNProbe.allocate(on: configuration.server, credentials: ICEGatheringServers([bobTURN]).turn[0].credentials).get()
                    .port != 0)
            withExtendedLifetime(coturn) {}
        }
    }

    @Test func coturnRefusesExpiredCredentialsAndAnotherSecretsWith401() async throws {
        try await Heavy.run {
            let (coturn, relay) = try Self.coturn()
            let stranger = try TURNRelay(url: relay.url.description, secret: "another-secret-\(UUID().uuidString)")
            let rows: [(String, ICEServer)] = [
                // A login two days ago: the day's credentials ran out yesterday.
                ("expired", relay.iceServer(for: "alice", now: Date().addingTimeInterval(-2 * 86_400))),
                ("another secret", stranger.iceServer(for: "alice")),
            ]
            for (name, entry) in rows {
                let configuration = try #require(try ICEGatheringServers([entry]).turn.first)
                let outcome = try TURNProbe.allocate(on: configuration.server, credentials: configuration.credentials)
                guard case .failure(let error) = outcome else {
                    Issue.record("\(name): coturn allocated \(outcome)")
                    continue
                }
                #expect(error.code == .unauthorized, "\(name): \(error)")
                #expect(error.stunErrorCode == 401, "\(name)")
            }
            // The same relay's current credentials still work: the refusals were the credentials'.
            let current = try ICEGatheringServers([relay.iceServer(for: "alice")]).turn[0]
            #expect(throws: Never.self) { try TURNProbe.allocate(on: current.server, credentials: current.credentials).get() }
            withExtendedLifetime(coturn) {}
        }
    }

    @Test func theSecretAndTheCredentialsNeverReachTheServersLog() async throws {
        let secret = "log-probe-secret-\(UUID().uuidString)"
        let relay = try TURNRelay(url: "turn:127.0.0.1:3478", secret: secret)
        let capture = LogCapture()
        var logger = Logger(label: "test.server.capture") { _ in CapturingLogHandler(capture: capture) }
        logger.logLevel = .trace
        let server = try await TestServer.start(logger: logger) { $0.turn = relay }
        defer { Task { await server.server.shutdown() } }
        let (alice, reply) = try await Self.login(server, "alice")
        let credential = try #require(reply.iceServers.last?.credential)
        // A failed login and a call attempt log too.
        let stranger = try await TestClient(url: server.url)
        _ = await stranger.code(MessageType.login, Request.Login(token: "not.a.jwt", device: "d"))
        _ = await alice.code(MessageType.start, Request.Start(callee: "nobody", type: .audio, media: SignalingServerCalls.media(4_000)))
        await stranger.close()
        await alice.close()
        await server.server.shutdown()

        let text = capture.text
        #expect(text.contains("login"), "the capture works: \(text)")
        #expect(!text.contains(secret), "\(text)")
        #expect(!text.contains(credential), "\(text)")
    }
}

/// Every log line of a logger, as text.
final class LogCapture: Sendable {
    private let lines = Locked<[String]>([])

    func append(_ line: String) { lines.withLock { $0.append(line) } }

    var text: String { lines.withLock { $0.joined(separator: "\n") } }
}

/// Hands each event, with its metadata, to a `LogCapture`.
struct CapturingLogHandler: LogHandler {
    let capture: LogCapture
    var metadata: Logger.Metadata = [:]
    var logLevel: Logger.Level = .trace

    subscript(metadataKey key: String) -> Logger.Metadata.Value? {
        get { metadata[key] }
        set { metadata[key] = newValue }
    }

    func log(event: LogEvent) {
        let all = metadata.merging(event.metadata ?? [:]) { $1 }
        capture.append("\(event.level) \(event.message) \(all) \(event.error.map { "\($0)" } ?? "")")
    }
}
