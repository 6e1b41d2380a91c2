import Foundation
import MediaEngine
@testable import MediaServer
import Signaling
import Testing
import TestSupport

/// Real-time sessions and conferences whose members are on different nodes of a cluster:
/// signaling crosses the node bus, data goes straight to the hosting node's relay.
@Suite(.serialized) struct ClusterRTS {
    typealias Member = RTSFlows.Member

    static func member(_ cluster: TestCluster, _ account: String, device: String = "default", on node: Int) async throws -> Member {
        try await Member(url: cluster.url(node), token: try await cluster.token(account), account, device: device)
    }

    static func texts(_ member: Member, from sender: String) -> [String] {
        member.data.filter { $0.from == sender }.map { String(decoding: $0.data, as: UTF8.self) }
    }

    @Test func aConferenceSpansTwoNodesWithOneNameAndItsDataRelayedOnlyByItsHost() async throws {
        let directory = try temporaryDirectory("cluster-rts")
        defer { try? FileManager.default.removeItem(at: directory) }
        let cluster = try await TestCluster.start(nodes: 2) { $0.rtsRecordingDirectory = directory.path }
        defer { Task { await cluster.shutdown() } }
        let ann = try await Self.member(cluster, "ann", on: 1)
        let ben = try await Self.member(cluster, "ben", on: 2)
        let cat = try await Self.member(cluster, "cat", on: 1)
        let dan = try await Self.member(cluster, "dan", on: 2)
        let members = [ann, ben, cat, dan]
        try await ann.manager.reserveConference(name: "board")
        let places = try #require(cluster.nodes[0].cluster?.membership.conferences)
        #expect(try await places.all() == ["board": try NodeID("node-1")])
        // The name is the cluster's: in use through node 2 as through node 1.
        await #expect(throws: SignalingError.self) { try await ben.manager.reserveConference(name: "board") }
        await #expect(throws: SignalingError.self) { try await cat.manager.reserveConference(name: "board") }
        var infos: [RTSConferenceInfo] = []
        for member in members { infos.append(try await member.manager.joinConference(name: "board")) }
        #expect(infos.map(\.members) == [[], ["ann"], ["ann", "ben"], ["ann", "ben", "cat"]])
        #expect(Set(infos.map(\.channelID)).count == 1)
        for (index, member) in members.enumerated() {
            let expected = members[(index + 1)...].map { "joined \($0.account)" }
            #expect(await member.wait { $0.compactMap(RTSFlows.conference) == expected }, "\(member.account): \(member.events.withLock { $0 })")
        }
        let channel = infos[0].channelID
        for index in 0..<20 { try await ann.manager.sendConferenceData(Data("ann \(index)".utf8), channelID: channel) }
        for index in 0..<20 { try await ben.manager.sendConferenceData(Data("ben \(index)".utf8), channelID: channel) }
        try await dan.manager.sendConferenceData(Data("for cat".utf8), channelID: channel, to: "cat")
        for member in members {
            let fromAnn = member === ann ? [] : (0..<20).map { "ann \($0)" }
            let fromBen = member === ben ? [] : (0..<20).map { "ben \($0)" }
            let fromDan = member === cat ? ["for cat"] : []
            #expect(await member.wait { _ in
                Self.texts(member, from: "ann") == fromAnn && Self.texts(member, from: "ben") == fromBen && Self.texts(member, from: "dan") == fromDan
            }, "\(member.account): \(member.data.map { "\($0.from): \(String(decoding: $0.data, as: UTF8.self))" })")
            #expect(member.data.allSatisfy { $0.conference == "board" && $0.channelID == channel })
        }
        // Every message went through node 1's relay; node 2's relayed none.
        #expect(await cluster.nodes[0].relay.statistics.messagesRelayed == 41)
        #expect(await cluster.nodes[1].relay.statistics.messagesRelayed == 0)
        // ben's recording is on the host, with his 20 messages.
        let recording = try RTSRecording.read(directory.appendingPathComponent("\(channel)-ben.rts").path)
        #expect(recording.records.map { String(decoding: $0.data, as: UTF8.self) } == (0..<20).map { "ben \($0)" })

        // Leaves come in order, whichever node they go through; the name stays in use
        // until the last one, then anyone may reserve it through any node.
        try await dan.manager.leaveConference(channelID: channel)
        try await ben.manager.leaveConference(channelID: channel)
        #expect(await ann.wait { $0.compactMap(RTSFlows.conference).suffix(2) == ["left dan left", "left ben left"] })
        await #expect(throws: SignalingError.self) { try await dan.manager.reserveConference(name: "board") }
        try await cat.manager.leaveConference(channelID: channel)
        try await ann.manager.leaveConference(channelID: channel)
        #expect(await eventually { (try? await places.all()) == [:] }, "node 1 released the name")
        try await dan.manager.reserveConference(name: "board")
        #expect(try await places.all() == ["board": try NodeID("node-2")])
        let record = try #require(try await cluster.store.rtsRecords(of: "ben", limit: 5).first)
        #expect(record.channelID == channel && record.kind == .conference && record.members.map(\.account) == ["dan", "ben", "cat", "ann"])
        for member in members { await member.finish() }
    }

    @Test func aSessionRingsTheCalleesDevicesOnAnotherNodeAndCarriesDataBothWays() async throws {
        let cluster = try await TestCluster.start(nodes: 2)
        defer { Task { await cluster.shutdown() } }
        let alice = try await Self.member(cluster, "alice", on: 1)
        let bobPhone = try await Self.member(cluster, "bob", device: "phone", on: 2)
        let bobPad = try await Self.member(cluster, "bob", device: "pad", on: 2)
        let session = try await alice.manager.requestRTS(callee: "bob", extendMessage: "draw?")
        for bob in [bobPhone, bobPad] {
            #expect(await bob.wait { $0.contains(.request(sessionID: session.sessionID, channelID: session.channelID, from: "alice",
                                                          services: [.data], extendMessage: "draw?")) }, "\(bob.events.withLock { $0 })")
        }
        // The callee must answer before it terminates, through its own node as on one.
        do {
            try await bobPhone.manager.terminateRTS(sessionID: session.sessionID)
            Issue.record("a terminate before the answer was taken")
        } catch {
            #expect(error.code == .rtsNotAccepted, "\(error)")
        }
        try await bobPhone.manager.responseRTS(sessionID: session.sessionID, accept: true)
        #expect(await alice.wait { $0.contains(.response(sessionID: session.sessionID, from: "bob", accepted: true)) })
        #expect(await bobPad.wait { $0.contains(.responsedByOther(sessionID: session.sessionID, accepted: true)) })
        do {
            try await bobPad.manager.responseRTS(sessionID: session.sessionID, accept: true)
            Issue.record("a second device answered")
        } catch {
            #expect(error.code == .handledElsewhere, "\(error)")
        }
        for index in 0..<100 {
            try await alice.manager.sendRTSData(Data("a\(index)".utf8), sessionID: session.sessionID)
            try await bobPhone.manager.sendRTSData(Data("b\(index)".utf8), sessionID: session.sessionID)
        }
        try await bobPhone.manager.sendRTSControl("undo", sessionID: session.sessionID)
        #expect(await bobPhone.wait { _ in Self.texts(bobPhone, from: "alice") == (0..<100).map { "a\($0)" } })
        #expect(await alice.wait { events in
            Self.texts(alice, from: "bob") == (0..<100).map { "b\($0)" } && events.contains(.control(sessionID: session.sessionID, from: "bob", "undo"))
        })
        #expect(bobPad.data.isEmpty)
        #expect(await cluster.nodes[0].relay.statistics.messagesRelayed == 200)
        try await alice.manager.terminateRTS(sessionID: session.sessionID)
        #expect(await bobPhone.wait { $0.contains(.terminate(sessionID: session.sessionID, by: "alice", reason: .completed)) })
        let record = try #require(try await cluster.store.rtsRecords(of: "bob", limit: 5).first)
        #expect(record.kind == .session && record.endReason == .completed && record.members.map(\.device) == ["default", "phone"])
        for member in [alice, bobPhone, bobPad] { await member.finish() }
    }

    @Test func aHostThatStopsEndsItsConferenceForMembersElsewhereAndTheNameIsFreeOnALiveNode() async throws {
        try await Heavy.runAlone {
            let cluster = try await TestCluster.start(nodes: 2)
            defer { Task { await cluster.shutdown() } }
            let ann = try await Self.member(cluster, "ann", on: 1)
            let ben = try await Self.member(cluster, "ben", on: 2)
            try await ann.manager.reserveConference(name: "board")
            let first = try await ann.manager.joinConference(name: "board")
            _ = try await ben.manager.joinConference(name: "board")
            try await ann.manager.sendConferenceData(Data("hello".utf8), channelID: first.channelID)
            #expect(await ben.wait { _ in Self.texts(ben, from: "ann") == ["hello"] })

            await cluster.nodes[0].shutdown()
            #expect(await ben.wait { events in
                events.contains { if case .leftConference(first.channelID, "board", _) = $0 { true } else { false } }
            }, "\(ben.events.withLock { $0 })")
            // Once node 1 is gone, the name can be reserved through node 2, and is hosted there.
            let cat = try await Self.member(cluster, "cat", on: 2)
            var reserved = false
            for _ in 0..<100 where !reserved {
                do {
                    try await ben.manager.reserveConference(name: "board")
                    reserved = true
                } catch {
                    try await Task.sleep(for: .milliseconds(100))
                }
            }
            #expect(reserved, "board could be reserved again")
            let second = try await ben.manager.joinConference(name: "board")
            _ = try await cat.manager.joinConference(name: "board")
            #expect(second.channelID != first.channelID)
            try await cat.manager.sendConferenceData(Data("again".utf8), channelID: second.channelID)
            #expect(await ben.wait { _ in Self.texts(ben, from: "cat") == ["again"] })
            let places = try #require(cluster.nodes[1].cluster?.membership.conferences)
            #expect(try await places.all() == ["board": try NodeID("node-2")])
            for member in [ann, ben, cat] { await member.finish() }
        }
    }

    @Test func aJoinWithoutADataConnectionToTheHostIsMisdirectedThereAndAVoiceSessionMeetsCallsOnOtherNodes() async throws {
        let cluster = try await TestCluster.start(nodes: 2)
        defer { Task { await cluster.shutdown() } }
        let ann = try await cluster.client("ann", on: 1)
        let eve = try await cluster.client("eve", on: 2)
        _ = try await ann.request(MessageType.reserveConference, Request.ReserveConference(name: "board"), as: Reply.Empty.self)
        // eve's node forwards her join to node 1, which has no data connection of hers.
        do {
            _ = try await eve.request(MessageType.joinConference, Request.JoinConference(name: "board"), as: Reply.JoinConference.self)
            Issue.record("a join without a data connection to the host was taken")
        } catch {
            #expect(error.code == .misdirected && error.location == "ws://127.0.0.1:\(cluster.ports[0])/rts", "\(error)")
        }
        // With one there, the same join through node 2 is taken.
        let data = try await RTSDataConnection.open(url: "ws://127.0.0.1:\(cluster.ports[0])/rts", token: try await cluster.token("eve"),
                                                    device: "d", received: { _ in }, ended: { _ in })
        let joined = try await eve.request(MessageType.joinConference, Request.JoinConference(name: "board"), as: Reply.JoinConference.self)
        #expect(joined.members.isEmpty && joined.name == "board")
        await #expect(throws: SignalingError.self) { try await RTSDataConnection.open(url: "http://127.0.0.1:\(cluster.ports[0])/rts", token: "t", device: "d",
                                                                                      received: { _ in }, ended: { _ in }) }

        // bob (node 2) is in a call node 2 owns: a voice session toward him from node 1 is
        // busy, a data-only one is not.
        let bob = try await cluster.client("bob", on: 2)
        let carol = try await cluster.client("carol", on: 2)
        let held = try await carol.request(MessageType.start, Request.Start(callee: "bob", type: .audio, media: SignalingServerCalls.media(5_000)),
                                           as: Reply.Start.self).callID
        _ = try #require(await bob.next(MessageType.receive))
        let annData = try await RTSDataConnection.open(server: cluster.url(1), token: try await cluster.token("ann"), device: "d",
                                                       received: { _ in }, ended: { _ in })
        #expect(await ann.code(MessageType.rtsRequest, Request.RTSRequest(callee: "bob", services: [.data, .audio],
                                                                          media: SignalingServerCalls.media(5_002)))
                == SignalingError.Code.busy.rawValue)
        let session = try await ann.request(MessageType.rtsRequest, Request.RTSRequest(callee: "bob", services: [.data]), as: Reply.RTSRequest.self)
        #expect(try #require(await bob.next(MessageType.rtsReceive)).body(Event.RTSReceive.self).sessionID == session.sessionID)
        _ = try await carol.request(MessageType.hangup, Request.Hangup(callID: held), as: Reply.Empty.self)
        _ = try #require(await carol.next(MessageType.callRecord))

        // The reverse: bob is asked for a voice session hosted on node 1 (ringing): carol's
        // call to him from node 2 meets a busy line, and rings once the session ended.
        let voice = try await ann.request(MessageType.rtsRequest, Request.RTSRequest(callee: "bob", services: [.data, .audio],
                                                                                     media: SignalingServerCalls.media(5_004)),
                                          as: Reply.RTSRequest.self)
        #expect(try #require(await bob.next(MessageType.rtsReceive)).body(Event.RTSReceive.self).sessionID == voice.sessionID)
        let busy = try await carol.request(MessageType.start, Request.Start(callee: "bob", type: .audio, media: SignalingServerCalls.media(5_006)),
                                           as: Reply.Start.self).callID
        #expect(try #require(await carol.next(MessageType.control)).body(Event.Control.self) == Event.Control(callID: busy, from: "bob", control: .busyLine))
        #expect(try #require(await carol.next(MessageType.callRecord)).body(Event.Record.self).record.endReason == .busy)
        _ = try await ann.request(MessageType.rtsTerminate, Request.RTSTerminate(sessionID: voice.sessionID), as: Reply.Empty.self)
        _ = try #require(await bob.next(MessageType.rtsTerminate))
        let rings = try await carol.request(MessageType.start, Request.Start(callee: "bob", type: .audio, media: SignalingServerCalls.media(5_008)),
                                            as: Reply.Start.self).callID
        #expect(try #require(await bob.next(MessageType.receive)).body(Event.Receive.self).callID == rings)
        _ = try await carol.request(MessageType.hangup, Request.Hangup(callID: rings), as: Reply.Empty.self)
        for connection in [data, annData] { await connection.close() }
        for client in [ann, eve, bob, carol] { await client.close() }
    }
}
