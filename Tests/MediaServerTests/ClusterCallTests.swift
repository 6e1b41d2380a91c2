import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
import Logging
import MediaEngine
import Signaling
import Testing
import TestSupport
@testable import MediaServer

/// Several server nodes sharing one PostgreSQL (started by the test), each a whole server
/// on loopback: calls between accounts logged in on different nodes.
struct TestCluster {
    let postgres: PostgresTestServer
    let nodes: [SignalingServer]
    let ports: [Int]
    let authority: TokenAuthority
    let store: PostgresCallStore

    /// `count` nodes named node-1...; heartbeats every 300 ms, dead after 3 s (generous:
    /// CI runs these under ThreadSanitizer, where a heartbeat can come late).
    static func start(nodes count: Int, configure: (inout SignalingServer.Configuration) -> Void = { _ in }) async throws -> TestCluster {
        let postgres = try PostgresTestServer()
        let authority = await TokenAuthority(secret: TestServer.secret)
        var nodes: [SignalingServer] = []
        var ports: [Int] = []
        for index in 1...count {
            var configuration = SignalingServer.Configuration()
            configuration.live = nil
            var cluster = ClusterNode.Configuration(node: try NodeID("node-\(index)"))
            cluster.registry.heartbeatInterval = .milliseconds(300)
            cluster.registry.deadAfter = .seconds(3)
            configuration.cluster = cluster
            configure(&configuration)
            let store = try await PostgresCallStore(location: .init(url: postgres.url()), logger: Stores.quiet)
            let node = SignalingServer(configuration: configuration, authority: authority, store: store, logger: Stores.quiet)
            ports.append(try await node.start())
            nodes.append(node)
        }
        let store = try await PostgresCallStore(location: .init(url: postgres.url()), logger: Stores.quiet)
        return TestCluster(postgres: postgres, nodes: nodes, ports: ports, authority: authority, store: store)
    }

    /// Node `index`'s (1-based) signaling URL.
    func url(_ index: Int) -> String { "ws://127.0.0.1:\(ports[index - 1])/" }

    func token(_ account: String) async throws -> String {
        try await authority.mint(account: account, lifetime: .seconds(600))
    }

    /// A signaling client logged in as `account` on node `index`.
    func client(_ account: String, device: String = "d", on index: Int) async throws -> TestClient {
        let client = try await TestClient(url: url(index))
        let reply = try await client.client.request(MessageType.login, Request.Login(token: try await token(account), device: device),
                                                    as: Reply.Login.self)
        precondition(reply.account == account)
        return client
    }

    /// Node `index`'s /metrics samples.
    func metrics(_ index: Int) async throws -> [MetricSample] {
        let (data, _) = try await URLSession.shared.data(from: URL(string: "http://127.0.0.1:\(ports[index - 1])/metrics")!)
        return MetricSample.parse(String(decoding: data, as: UTF8.self))
    }

    func shutdown() async {
        for node in nodes { await node.shutdown() }
        await store.close()
    }
}

@Suite(.serialized) struct ClusterCalls {
    /// alice starts an audio call to bob, bob answers, alice has the answer: its ID.
    static func answeredCall(from alice: TestClient, to bob: TestClient) async throws -> UInt64 {
        let started = try await alice.request(MessageType.start, Request.Start(
            callee: "bob", type: .audio, option: CallOption(), media: SignalingServerCalls.media(5_000)), as: Reply.Start.self)
        _ = try #require(await bob.next(MessageType.receive))
        _ = try await bob.request(MessageType.response, Request.Response(callID: started.callID, accept: true,
                                                                         media: SignalingServerCalls.media(6_000)), as: Reply.Response.self)
        _ = try #require(await alice.next(MessageType.response))
        return started.callID
    }

    /// alice (node 1) calls bob (node 2) with real audio (tones both ways); bob answers and
    /// both see the media connected.
    static func connectedAudioCall(_ cluster: TestCluster) async throws -> (CallFlows.Endpoint, CallFlows.Endpoint, UInt64) {
        let alice = try await CallFlows.Endpoint(url: cluster.url(1), token: try await cluster.token("alice"),
                                                 audio: "tones:440,1000", video: nil)
        let bob = try await CallFlows.Endpoint(url: cluster.url(2), token: try await cluster.token("bob"),
                                               audio: "tones:440,1000", video: nil)
        let id = try await alice.manager.start(callee: "bob", type: .audio)
        _ = try #require(await bob.wait { CallFlows.invitation($0) == id })
        try await bob.manager.response(callID: id, accept: true)
        #expect(await alice.wait(for: CallFlows.isConnected) != nil)
        #expect(await bob.wait(for: CallFlows.isConnected) != nil)
        return (alice, bob, id)
    }

    /// Three nodes: alice on node 1 calls bob on node 2 with real media between them. The
    /// call connects, each hears the other, and the record is stored once (by node 1, the
    /// caller's) and reaches both.
    /// Real-time sessions are refused on cluster nodes (typed, naming why) until their
    /// channels are placed across nodes: never two conferences under one name.
    @Test func aCallBetweenTwoNodesConnectsWithAudioBothWaysAndOneRecord() async throws {
        try await Heavy.run {
            let cluster = try await TestCluster.start(nodes: 3)
            defer { Task { await cluster.shutdown() } }
            let (alice, bob, id) = try await Self.connectedAudioCall(cluster)
            // Three seconds of each other.
            #expect(await eventually { alice.audioCount >= 144_000 && bob.audioCount >= 144_000 }, "\(alice.audioCount), \(bob.audioCount) samples")
            try await alice.manager.hangup(callID: id)
            let bobRecord = try #require(await bob.wait { CallFlows.record($0) != nil }.flatMap(CallFlows.record))
            let aliceRecord = try #require(await alice.wait { CallFlows.record($0) != nil }.flatMap(CallFlows.record))
            #expect(bobRecord == aliceRecord)
            #expect(bobRecord.callID == id && bobRecord.endReason == .completed && bobRecord.endedBy == "alice")
            #expect(bobRecord.connectedDuration > 2_000, "\(bobRecord.connectedDuration) ms connected")
            for (name, party) in [("alice", alice), ("bob", bob)] {
                let heard = party.snapshot.audio
                let correlation = CallFlows.correlation(heard)
                #expect(heard.count > 48_000 * 2 && correlation >= 0.9, "\(name) heard \(heard.count) samples, correlation \(correlation)")
            }
            let stored = try await cluster.store.records(of: "bob", limit: 10)
            #expect(stored == [bobRecord], "stored once: \(stored)")
            await alice.manager.logout()
            await bob.manager.logout()
        }
    }

    /// PostgreSQL restarts mid-call (alice on node 1, bob on node 2, audio both ways): the
    /// media never stops, the nodes stay live to each other, signaling across them resumes
    /// once the bus has reconnected (a control, the hangup, both records), and the record
    /// is stored once.
    @Test func aPostgreSQLRestartMidCallKeepsMediaFlowingAndSignalingResumes() async throws {
        try await Heavy.run {
            // Dead after 10 s: a restart (a second or two) must not look like a dead node.
            let cluster = try await TestCluster.start(nodes: 2) { $0.cluster?.registry.deadAfter = .seconds(10) }
            defer { Task { await cluster.shutdown() } }
            let (alice, bob, id) = try await Self.connectedAudioCall(cluster)
            #expect(await eventually { alice.audioCount >= 48_000 && bob.audioCount >= 48_000 }, "audio both ways")

            let before = (alice.audioCount, bob.audioCount)
            let restarted = ContinuousClock.now
            try cluster.postgres.restart()
            // A second of audio since the restart began (the restart may take longer).
            #expect(await eventually { alice.audioCount >= before.0 + 48_000 && bob.audioCount >= before.1 + 48_000 })
            let elapsed = Double((ContinuousClock.now - restarted) / .milliseconds(1)) / 1_000
            let during = (alice.audioCount - before.0, bob.audioCount - before.1)
            // 48,000 samples a second; most of them arrive while the database is away.
            #expect(Double(during.0) > 0.8 * elapsed * 48_000 && Double(during.1) > 0.8 * elapsed * 48_000,
                    "audio through the restart (\(elapsed) s): alice \(during.0), bob \(during.1) samples")

            // Signaling across the nodes resumes: a control from alice reaches bob.
            try await alice.manager.control(callID: id, .feedback)
            #expect(await bob.wait(timeout: 20) { event in
                if case .control(id, _, .feedback) = event { true } else { false }
            } != nil, "bob got alice's control after the restart")
            try await bob.manager.hangup(callID: id)
            let aliceRecord = try #require(await alice.wait(timeout: 20) { CallFlows.record($0) != nil }.flatMap(CallFlows.record))
            let bobRecord = try #require(await bob.wait(timeout: 20) { CallFlows.record($0) != nil }.flatMap(CallFlows.record))
            #expect(aliceRecord == bobRecord && aliceRecord.endReason == .completed && aliceRecord.endedBy == "bob")
            #expect(try await cluster.store.records(of: "alice", limit: 10) == [aliceRecord], "stored once")
            // Neither node took the other for dead.
            let nodes = try await #require(cluster.nodes[0].cluster).membership.registry.liveNodes()
            #expect(nodes.map(\.id.rawValue).sorted() == ["node-1", "node-2"])
            #expect(try await cluster.metrics(1).value("mediaengine_cluster_live_nodes", ["node": "node-1"]) == 2)
            await alice.manager.logout()
            await bob.manager.logout()
        }
    }

    /// bob is logged in on nodes 2 and 3 (and alice on 1): both devices ring, controls
    /// cross, the phone answers and the laptop is told, a late answer is refused, and the
    /// hangup and records reach everyone, exactly as on one node.
    @Test func aCalleeOnTwoOtherNodesRingsOnBothAndTheOneThatAnswersWins() async throws {
        try await Heavy.run {
            let cluster = try await TestCluster.start(nodes: 3)
            defer { Task { await cluster.shutdown() } }
            let alice = try await cluster.client("alice", on: 1)
            let phone = try await cluster.client("bob", device: "phone", on: 2)
            let laptop = try await cluster.client("bob", device: "laptop", on: 3)

            let started = try await alice.request(MessageType.start, Request.Start(
                callee: "bob", type: .video, option: CallOption(videoQuality: .p720, extendMessage: "hi"), media: SignalingServerCalls.media(5_000)),
                as: Reply.Start.self)
            for device in [phone, laptop] {
                let invitation = try #require(await device.next(MessageType.receive)).body(Event.Receive.self)
                #expect(invitation == Event.Receive(callID: started.callID, from: "alice", type: .video,
                                                    option: CallOption(videoQuality: .p720, extendMessage: "hi")))
            }
            _ = try await laptop.request(MessageType.control, Request.Control(callID: started.callID, control: .feedback), as: Reply.Empty.self)
            #expect(try #require(await alice.next(MessageType.control)).body(Event.Control.self).control == .feedback)

            let answer = try await phone.request(MessageType.response, Request.Response(callID: started.callID, accept: true,
                                                                                        media: SignalingServerCalls.media(6_000)),
                                                 as: Reply.Response.self)
            #expect(answer.media?.candidates.first?.port == 5_000)
            let response = try #require(await alice.next(MessageType.response)).body(Event.Response.self)
            #expect(response.accepted && response.media?.candidates.first?.port == 6_000)
            #expect(try #require(await laptop.next(MessageType.responsedByOther)).body(Event.ResponsedByOther.self).accepted)
            #expect(await laptop.code(MessageType.response, Request.Response(callID: started.callID, accept: true,
                                                                             media: SignalingServerCalls.media(7_000)))
                    == SignalingError.Code.handledElsewhere.rawValue)

            // Node 1 owns the call with a device of node 2 and one of node 3 in it (the laptop stays a
            // party to be told its late answer was handled elsewhere); node 2 holds a route.
            // Each node lists the others from its next heartbeat (every 300 ms) on.
            var owner: [MetricSample] = []
            try await eventually(every: .milliseconds(100)) {
                owner = try await cluster.metrics(1)
                return owner.value("mediaengine_cluster_live_nodes", ["node": "node-1"]) == 3
            }
            #expect(owner.value("mediaengine_cluster_remote_devices", ["node": "node-1"]) == 2)
            #expect(owner.value("mediaengine_cluster_live_nodes", ["node": "node-1"]) == 3)
            #expect((owner.value("mediaengine_cluster_messages_total", ["node": "node-1", "direction": "sent"]) ?? 0) >= 4)
            #expect(owner.value("mediaengine_cluster_node_load", ["node": "node-1", "peer": "node-2"]) != nil)
            #expect(try await cluster.metrics(2).value("mediaengine_cluster_remote_calls", ["node": "node-2"]) == 1)
            for control in CallControl.allCases {
                _ = try await alice.request(MessageType.control, Request.Control(callID: started.callID, control: control), as: Reply.Empty.self)
            }
            for control in CallControl.allCases {
                #expect(try #require(await phone.next(MessageType.control)).body(Event.Control.self).control == control)
            }
            _ = try await phone.request(MessageType.candidates, Request.Candidates(
                callID: started.callID, candidates: [MediaCandidate(host: "127.0.0.1", port: 6_001)], complete: true), as: Reply.Empty.self)
            #expect(try #require(await alice.next(MessageType.candidates)).body(Event.Candidates.self).candidates.first?.port == 6_001)
            for party in [alice, phone] {
                _ = try await party.request(MessageType.mediaStatus, Request.MediaStatus(callID: started.callID, connected: true),
                                            as: Reply.Empty.self)
            }
            // The record must show 300 ms connected: time is what it measures.
            try await Task.sleep(for: .milliseconds(300))
            // The phone hangs up its current call (callID 0), which node 1 owns.
            _ = try await phone.request(MessageType.hangup, Request.Hangup(callID: 0), as: Reply.Empty.self)
            #expect(try #require(await alice.next(MessageType.hangup)).body(Event.Hangup.self)
                    == Event.Hangup(callID: started.callID, by: "bob", reason: .completed))
            for party in [alice, phone] {
                let record = try #require(await party.next(MessageType.callRecord)).body(Event.Record.self).record
                #expect(record.callID == started.callID && record.endReason == .completed && record.endedBy == "bob")
                #expect(record.connectedDuration >= 300, "\(record.connectedDuration) ms")
            }
            #expect(try await cluster.store.records(of: "bob", limit: 10).map(\.callID) == [started.callID])
            // The call is gone everywhere: a request about it is refused on either node.
            #expect(await phone.code(MessageType.control, Request.Control(callID: started.callID, control: .feedback))
                    == SignalingError.Code.callNotFound.rawValue)
            #expect(await alice.code(MessageType.control, Request.Control(callID: started.callID, control: .feedback))
                    == SignalingError.Code.callNotFound.rawValue)
        }
    }

    /// An account in a call another node owns is busy everywhere: called from a third
    /// node it gives the caller a busy line; starting a call of its own from its node is
    /// refused. Once that call ends, it can be called again.
    @Test func anAccountInACallOwnedByAnotherNodeIsBusyOnEveryNode() async throws {
        try await Heavy.run {
            let cluster = try await TestCluster.start(nodes: 3)
            defer { Task { await cluster.shutdown() } }
            let alice = try await cluster.client("alice", on: 1)
            let bob = try await cluster.client("bob", on: 2)
            let carol = try await cluster.client("carol", on: 3)
            // carol (node 3) calls bob (node 2): node 3 owns the call, which rings.
            let held = try await carol.request(MessageType.start, Request.Start(callee: "bob", type: .audio, media: SignalingServerCalls.media(5_000)),
                                               as: Reply.Start.self).callID
            _ = try #require(await bob.next(MessageType.receive))
            // alice (node 1) calls bob: busy.
            let busy = try await alice.request(MessageType.start, Request.Start(callee: "bob", type: .audio, media: SignalingServerCalls.media(5_002)),
                                               as: Reply.Start.self).callID
            #expect(try #require(await alice.next(MessageType.control)).body(Event.Control.self) == Event.Control(callID: busy, from: "bob", control: .busyLine))
            #expect(try #require(await alice.next(MessageType.callRecord)).body(Event.Record.self).record.endReason == .busy)
            #expect(await bob.next(MessageType.receive, timeout: .milliseconds(500)) == nil, "bob is not invited twice")
            // bob (node 2, in node 3's call) calls alice: refused as busy.
            #expect(await bob.code(MessageType.start, Request.Start(callee: "alice", type: .audio, media: SignalingServerCalls.media(5_004)))
                    == SignalingError.Code.busy.rawValue)
            _ = try await carol.request(MessageType.hangup, Request.Hangup(callID: held), as: Reply.Empty.self)
            #expect(try #require(await bob.next(MessageType.hangup)).body(Event.Hangup.self).reason == .cancelled)
            _ = try #require(await carol.next(MessageType.callRecord))
            // Free again: alice's call rings.
            let next = try await alice.request(MessageType.start, Request.Start(callee: "bob", type: .audio, media: SignalingServerCalls.media(5_006)),
                                               as: Reply.Start.self).callID
            #expect(try #require(await bob.next(MessageType.receive)).body(Event.Receive.self).callID == next)
            #expect(try await cluster.nodes[0].cluster?.membership.parties.all() == ["alice": try NodeID("node-1"), "bob": try NodeID("node-1")])
            _ = try await alice.request(MessageType.hangup, Request.Hangup(callID: next), as: Reply.Empty.self)
            _ = try #require(await alice.next(MessageType.callRecord))
            #expect(try await cluster.nodes[0].cluster?.membership.parties.all() == [:])
        }
    }

    /// bob's connection to node 2 drops mid-call (node 1 owns the call) and he logs in again
    /// within the grace, on node 2 or on node 3 (which asks node 1): the login names the
    /// call, alice's controls reach the new connection, his hangup from there ends the call
    /// completed, not failed. His laptop logging in there is no party: its login names no call.
    @Test(arguments: [2, 3]) func aCalleeThatReconnectsKeepsACallOwnedElsewhere(on node: Int) async throws {
        try await Heavy.run {
            let cluster = try await TestCluster.start(nodes: 3)
            defer { Task { await cluster.shutdown() } }
            let alice = try await cluster.client("alice", on: 1)
            let bob = try await cluster.client("bob", device: "phone", on: 2)
            let callID = try await Self.answeredCall(from: alice, to: bob)
            await cluster.nodes[1].hub.dropConnections(of: "bob", reason: "network change")
            #expect(await bob.waitForEnd())
            let again = try await TestClient(url: cluster.url(node))
            let login = try await again.client.request(MessageType.login, Request.Login(token: try await cluster.token("bob"), device: "phone"),
                                                       as: Reply.Login.self)
            #expect(login.activeCalls == [callID])
            // Node 1 learns of the new connection over the bus (events for the device before
            // then are lost, as those while it was away are; a login on another node waited
            // for node 1's answer).
            let connection = try #require(await cluster.nodes[node - 1].hub.registry.connections.first { $0.value.account == "bob" }?.key)
            let remote = ClusterState.Remote(node: try NodeID("node-\(node)"), connection: connection.value)
            let hub = cluster.nodes[0].hub
            await eventually { await hub.clusterState.proxyOf[remote] != nil }
            let laptop = try await TestClient(url: cluster.url(node))
            let other = try await laptop.client.request(MessageType.login, Request.Login(token: try await cluster.token("bob"), device: "laptop"),
                                                        as: Reply.Login.self)
            #expect(other.activeCalls.isEmpty, "the laptop is no party")
            _ = try await alice.request(MessageType.control, Request.Control(callID: callID, control: .feedback), as: Reply.Empty.self)
            #expect(try #require(await again.next(MessageType.control)).body(Event.Control.self).control == .feedback)
            _ = try await again.request(MessageType.hangup, Request.Hangup(callID: callID), as: Reply.Empty.self)
            #expect(try #require(await alice.next(MessageType.hangup)).body(Event.Hangup.self)
                    == Event.Hangup(callID: callID, by: "bob", reason: .completed))
            #expect(try #require(await again.next(MessageType.callRecord)).body(Event.Record.self).record.endReason == .completed)
            #expect(try await cluster.store.records(of: "bob", limit: 10).map(\.endReason) == [.completed])
            await laptop.close()
        }
    }

    /// Messages from another node about calls, meetings and connections this node does not
    /// have, and bytes that are no message at all: the requests get error replies, the
    /// routes and reattachments are refused, the rest is dropped; nothing is kept, and the
    /// node serves on.
    @Test func messagesAboutUnknownCallsMeetingsAndConnectionsAreAnsweredOrDropped() async throws {
        try await Heavy.run {
            let cluster = try await TestCluster.start(nodes: 1)
            defer { Task { await cluster.shutdown() } }
            let (stranger, task) = try await NodeBuses.bus("node-x", cluster.postgres)
            defer { task.cancel() }
            let inbox = NodeBuses.Inbox(stranger)
            let node = try NodeID("node-1")
            let control = TypedEnvelope(id: 7, type: MessageType.control, body: Request.Control(callID: 999, control: .feedback)).encoded()
            let leave = TypedEnvelope(id: 8, type: MessageType.leaveMeeting, body: Request.LeaveMeeting(callID: 999)).encoded()
            let messages: [ClusterMessage] = [
                .request(connection: 42, account: "bob", device: "d", requestID: 7, type: MessageType.control, message: control),
                .deliver(connection: 123_456, text: Data("{}".utf8)),
                .ended(call: 999),
                .meetingRequest(connection: 43, account: "eve", device: "d", grants: .all, requestID: 8, type: MessageType.leaveMeeting,
                                message: leave),
                .meetingRoute(meeting: 5, connection: 999_999),
                .meetingLeft(meeting: 5, connection: 999_999),
                .reattached(call: 999, connection: 44, account: "bob", device: "d"),
                .notAParty(call: 999, connection: 45),
                .disconnected(connection: 77),
                .close(connection: 88, code: 4_000, reason: "x"),
            ]
            try await stranger.send([Data("not a message".utf8)] + messages.map { $0.encoded() }, to: node)
            let replies = await inbox.first(4).map { ClusterMessage.decode($0.body) }
            #expect(replies.count == 4)
            guard replies.count == 4, case .deliver(42, let first)? = replies[0], case .deliver(43, let second)? = replies[1] else {
                Issue.record("replies: \(replies)")
                return
            }
            #expect(try Envelope.decodeBody(ErrorBody.self, from: first, messageType: MessageType.error).code == SignalingError.Code.callNotFound.rawValue)
            #expect(try Envelope.decodeBody(ErrorBody.self, from: second, messageType: MessageType.error).code == SignalingError.Code.meetingNotFound.rawValue)
            #expect(replies[2] == .disconnected(connection: 999_999) && replies[3] == .notAParty(call: 999, connection: 44))
            let hub = cluster.nodes[0].hub
            let state = await hub.clusterState
            #expect(state.proxies.isEmpty && state.meetingProxies.isEmpty && state.routes.isEmpty && state.meetingRoutes.isEmpty)
            // It serves on: two of its clients call each other.
            let alice = try await cluster.client("alice", on: 1)
            let bob = try await cluster.client("bob", on: 1)
            _ = try await Self.answeredCall(from: alice, to: bob)
        }
    }

    /// The callee's node stops with the call up: its devices drop out as a closed
    /// connection would, and the call fails after the reconnect grace, with its record.
    @Test func aCalleeWhoseNodeLeavesIsAPartyThatDroppedOut() async throws {
        try await Heavy.run {
            let cluster = try await TestCluster.start(nodes: 2) { $0.calls.reconnectGrace = .seconds(1) }
            defer { Task { await cluster.shutdown() } }
            let alice = try await cluster.client("alice", on: 1)
            let bob = try await cluster.client("bob", on: 2)
            let callID = try await Self.answeredCall(from: alice, to: bob)
            let stopped = ContinuousClock.now
            await cluster.nodes[1].shutdown()
            let hangup = try #require(await alice.next(MessageType.hangup, timeout: .seconds(10))).body(Event.Hangup.self)
            #expect(hangup == Event.Hangup(callID: callID, by: nil, reason: .failed))
            let took = ContinuousClock.now - stopped
            #expect(took < .seconds(6), "failed after \(took) (grace 1 s)")
            #expect(try #require(await alice.next(MessageType.callRecord)).body(Event.Record.self).record.endReason == .failed)
            #expect(try await cluster.store.records(of: "bob", limit: 10).map(\.endReason) == [.failed])
        }
    }
}
