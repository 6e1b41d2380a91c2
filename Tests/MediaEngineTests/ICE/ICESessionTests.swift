import Foundation
@testable import MediaEngine
import TestSupport
import Testing

/// ICE as a session runs it: which of the peer's candidates are checked at all, and the
/// relayed candidate from a real coturn (on loopback).
@Suite(.serialized) struct ICESessionTests {
    static func candidate(_ host: String, _ port: Int, _ kind: ICECandidate.Kind = .host) throws -> ICECandidate {
        ICECandidate.local(kind, address: try SocketAddress(host: host, port: port), localPreference: 65_535)
    }

    @Test func candidatesAtLoopbackUnspecifiedOrTheServersAreIgnored() throws {
        let stun = try SocketAddress(host: "203.0.113.9", port: 3_478)
        let turn = try SocketAddress(host: "203.0.113.10", port: 3_478)
        let offered = [try Self.candidate("127.0.0.1", 5_000), try Self.candidate("0.0.0.0", 5_001), try Self.candidate("169.254.1.1", 5_002),
                       try Self.candidate("224.0.0.1", 5_003), try Self.candidate("203.0.113.9", 3_478, .serverReflexive),
                       try Self.candidate("203.0.113.10", 3_478, .relayed), try Self.candidate("::1", 5_004),
                       try Self.candidate("198.51.100.7", 5_005), try Self.candidate("203.0.113.9", 40_000, .serverReflexive)]
        let routable = [try Self.candidate("192.0.2.1", 6_000)]
        let kept = MediaSession.usable(offered, localHosts: routable, servers: [stun, turn]).map(\.address.description)
        #expect(kept == ["198.51.100.7:5005", "203.0.113.9:40000"], "only real peers: \(kept)")
        // A session bound to loopback talks to loopback peers, still never to the servers.
        let loopback = [try Self.candidate("127.0.0.1", 6_000)]
        let local = MediaSession.usable(offered + [try Self.candidate("127.0.0.1", 3_478)], localHosts: loopback,
                                        servers: [stun, turn, try SocketAddress(host: "127.0.0.1", port: 3_478)])
        #expect(local.map(\.address.description).contains("127.0.0.1:5000"))
        #expect(!local.map(\.address.description).contains("127.0.0.1:3478"), "the server's own address")
        // A peer known to be on this host (introduced by a server reached on loopback): its
        // loopback candidates are checked from routable hosts too; the servers never are.
        let onThisHost = MediaSession.sorted(offered, localHosts: routable, servers: [stun, turn], peerOnThisHost: true)
        #expect(onThisHost.usable.map(\.address.description) == ["127.0.0.1:5000", "[::1]:5004", "198.51.100.7:5005", "203.0.113.9:40000"],
                "\(onThisHost.usable)")
        // Each candidate left out says why, for the failure a user reads.
        let reasons = MediaSession.sorted(offered, localHosts: routable, servers: [stun, turn], peerOnThisHost: false).ignored
            .map { "\($0.candidate.address) \($0.reason)" }
        #expect(reasons == ["127.0.0.1:5000 loopback", "0.0.0.0:5001 unspecified", "169.254.1.1:5002 linkLocal", "224.0.0.1:5003 multicast",
                            "203.0.113.9:3478 server", "203.0.113.10:3478 server", "[::1]:5004 loopback"], "\(reasons)")
    }

    /// What one session saw.
    final class Seen: Sendable {
        let events = Locked<[String]>([])
        let candidates = Locked<[ICECandidate]>([])
        let pair = Locked<ICECandidatePair?>(nil)
        func handle(_ event: MediaSession.Event) {
            switch event {
            case .localCandidate(let candidate): candidates.withLock { $0.append(candidate) }
            case .gatheringComplete: events.withLock { $0.append("gatheringComplete") }
            case .connected(let pair, _): self.pair.withLock { $0 = pair }
            case .connectFailed(let why): events.withLock { $0.append("connectFailed \(why)") }
            default: break
            }
        }
    }

    static func session(turn: TURNClient.Configuration?) throws -> MediaSession {
        var configuration = MediaSession.Configuration(audio: try MediaSources.audio("sine:440"), video: nil)
        configuration.host = "127.0.0.1"
        configuration.turnServer = turn
        return try MediaSession(configuration: configuration)
    }

    /// `alice` gathers (expecting no relayed candidate: her TURN server refuses), then
    /// calls a session without TURN and connects on the host pair; her summary.
    static func connectWithoutARelay(_ alice: MediaSession) async throws -> MediaSession.Summary {
        let bob = try session(turn: nil)
        let atAlice = Seen()
        let atBob = Seen()
        alice.gather { atAlice.handle($0) }
        #expect(await eventually(timeout: .seconds(10)) { atAlice.events.withLock { $0.contains("gatheringComplete") } })
        #expect(atAlice.candidates.withLock { $0.detached }.allSatisfy { $0.kind != .relayed })
        try bob.start(remote: alice.local) { atBob.handle($0) }
        try alice.start(remote: bob.local) { atAlice.handle($0) }
        #expect(await eventually(timeout: .seconds(5)) { atAlice.pair.withLock { $0 } != nil })
        #expect(atAlice.pair.withLock { $0 }?.local.kind == .host)
        await bob.stop()
        return await alice.stop()
    }

    /// With a TURN server the session offers a relayed candidate (coturn allocates it) and
    /// completes gathering; the call still takes the better host pair.
    @Test func aTURNServerAddsARelayedCandidateAndTheHostPairStillWins() async throws {
        try await Heavy.run {
            let coturn = try Coturn(loopbackRealm: "ice.test")
            try coturn.start()
            defer { coturn.stop() }
            let (username, password) = coturn.credentials(account: "alice")
            let alice = try Self.session(turn: TURNClient.Configuration(server: coturn.serverAddress,
                                                                        credentials: TURNCredentials(username: username, password: password)))
            let bob = try Self.session(turn: nil)
            let atAlice = Seen()
            alice.gather { atAlice.handle($0) }
            #expect(await eventually(timeout: .seconds(5)) { atAlice.events.withLock { $0.contains("gatheringComplete") } })
            let relayed = atAlice.candidates.withLock { $0.detached }.filter { $0.kind == .relayed }
            #expect(relayed.count == 1 && relayed.first?.address.isLoopback == true, "\(atAlice.candidates.withLock { $0.detached })")
            #expect(coturn.log.contains("ALLOCATE processed, success"), "\(coturn.log.suffix(1_000))")
            let atBob = Seen()
            var announced = alice.local
            announced.candidates += relayed
            try bob.start(remote: announced) { atBob.handle($0) }
            try alice.start(remote: bob.local) { atAlice.handle($0) }
            #expect(await eventually(timeout: .seconds(5)) { atAlice.pair.withLock { $0 } != nil && atBob.pair.withLock { $0 } != nil })
            #expect(atAlice.pair.withLock { $0 }?.pathKind == .host)
            await alice.stop()
            await bob.stop()
            #expect(await alice.stop().relayFailure == nil)
        }
    }

    /// Wrong TURN credentials: the allocation fails with a typed reason kept in the
    /// summary, gathering still completes, and the call connects without a relay.
    @Test func wrongTURNCredentialsLeaveNoRelayButTheCallConnects() async throws {
        try await Heavy.run {
            let coturn = try Coturn(loopbackRealm: "ice.test")
            try coturn.start()
            defer { coturn.stop() }
            let alice = try Self.session(turn: TURNClient.Configuration(server: coturn.serverAddress,
                                                                        credentials: TURNCredentials(username: "1:alice", password: "not-the-password-7Qz")))
            let summary = try await Self.connectWithoutARelay(alice)
            #expect(summary.relayFailure?.isEmpty == false, "the reason is kept: \(summary.relayFailure ?? "none")")
            #expect(summary.relayFailure?.contains("not-the-password-7Qz") == false, "never the password")
        }
    }

    /// A relay that refuses the allocation (486, the account's quota taken by another
    /// session): the refusal is kept in the summary, gathering completes without a relayed
    /// candidate, and the call connects on the host pair.
    @Test func anAllocationOverQuotaLeavesNoRelayButTheCallConnects() async throws {
        try await Heavy.run {
            var options = Coturn.Options()
            options.userQuota = 1
            let coturn = try Coturn(loopbackRealm: "ice.test", options: options)
            try coturn.start()
            defer { coturn.stop() }
            let (username, password) = coturn.credentials(account: "alice")
            let turn = TURNClient.Configuration(server: coturn.serverAddress, credentials: TURNCredentials(username: username, password: password))
            // Another device of alice's holds the one allocation her quota allows.
            let other = try Self.session(turn: turn)
            let atOther = Seen()
            other.gather { atOther.handle($0) }
            #expect(await eventually(timeout: .seconds(10)) { atOther.candidates.withLock { $0.contains { $0.kind == .relayed } } })
            let summary = try await Self.connectWithoutARelay(try Self.session(turn: turn))
            _ = await other.stop()
            #expect(summary.relayFailure?.contains("486") == true, "the reason is kept: \(summary.relayFailure ?? "none")")
            #expect(summary.relay?.errorsByCode[486] == 1, "\(String(describing: summary.relay))")
            #expect(coturn.log.contains("486"), "coturn refused it: \(coturn.log.suffix(1_500))")
        }
    }

    /// Checks through the relay, both ways: bob knows nothing of alice but her relayed
    /// candidate, alice only a dead address on bob's IP (whose permission covers bob, as
    /// permissions ignore ports). Bob's checks reach alice through coturn and her answers
    /// go back through it; from them alice learns bob's address (peer-reflexive) and, on
    /// loopback, ICE then finds the direct pair too and prefers it, as it should.
    @Test func checksGoThroughTheRelayBothWaysAndADirectPathFoundFromThemWins() async throws {
        try await Heavy.run {
            let coturn = try Coturn(loopbackRealm: "ice.test")
            try coturn.start()
            defer { coturn.stop() }
            let (username, password) = coturn.credentials(account: "alice")
            var aliceSettings = MediaSession.Configuration(audio: try MediaSources.audio("sine:440"), video: nil)
            aliceSettings.host = "127.0.0.1"
            aliceSettings.iceControlling = false
            aliceSettings.turnServer = TURNClient.Configuration(server: coturn.serverAddress,
                                                                credentials: TURNCredentials(username: username, password: password))
            let alice = try MediaSession(configuration: aliceSettings)
            let bob = try Self.session(turn: nil)
            let atAlice = Seen()
            let atBob = Seen()
            alice.gather { atAlice.handle($0) }
            #expect(await eventually(timeout: .seconds(5)) { atAlice.events.withLock { $0.contains("gatheringComplete") } })
            var onlyRelay = alice.local
            onlyRelay.candidates = atAlice.candidates.withLock { $0.detached }.filter { $0.kind == .relayed }
            try #require(onlyRelay.candidates.count == 1)
            let dead = try UDPSocket(bindTo: SocketAddress(host: "127.0.0.1", port: 0))
            defer { dead.close() }
            var bobUnreachable = bob.local
            bobUnreachable.candidates = [ICECandidate.local(.host, address: dead.localAddress, localPreference: 65_535)]
            try alice.start(remote: bobUnreachable) { atAlice.handle($0) }
            try bob.start(remote: onlyRelay) { atBob.handle($0) }
            #expect(await eventually(timeout: .seconds(8)) { atAlice.pair.withLock { $0 } != nil && atBob.pair.withLock { $0 } != nil })
            await bob.stop()
            let summary = await alice.stop()
            #expect((summary.relay?.packetsReceived ?? 0) >= 1, "bob's checks came through coturn: \(String(describing: summary.relay))")
            #expect((summary.relay?.packetsSent ?? 0) >= 1, "alice's answers went back through it")
            #expect(atBob.pair.withLock { $0 }?.remote.address == atAlice.pair.withLock { $0 }?.local.address, "both ends agree on the pair")
        }
    }
}
