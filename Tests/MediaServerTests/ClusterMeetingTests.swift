import Foundation
import MediaEngine
import Signaling
import Testing
import TestSupport
@testable import MediaServer

/// Meetings across the nodes of a cluster: a meeting lives on one node's SFU (placed by
/// load when reserved), its participants connect to any node.
@Suite(.serialized) struct ClusterMeetings {
    typealias Member = MeetingFlows.Member

    /// Waits until every node's last heartbeat reported the load `loads` says (by node
    /// index), as the nodes see one another.
    static func waitForLoads(_ cluster: TestCluster, _ loads: [Int: Int]) async throws {
        let membership = try #require(cluster.nodes[0].cluster?.membership)
        let reported = try await eventually(every: .milliseconds(100)) {
            let seen = Dictionary(uniqueKeysWithValues: try await membership.registry.nodes().map { ($0.id.rawValue, $0.load) })
            return loads.allSatisfy { seen["node-\($0.key)"] == $0.value }
        }
        if !reported { Issue.record("the nodes did not report loads \(loads)") }
    }

    /// alice (node 1) reserves a meeting while node 1 is the busiest: it is placed on node 2,
    /// the least loaded. alice, bob (node 2) and carol (node 3) join; each hears the other
    /// two, a mute from node 3 stops forwarding on node 2, the name is taken on every node,
    /// and when the last one leaves the record is stored once and the name is free again.
    @Test func aMeetingReservedThroughNodeOneIsPlacedByLoadAndEveryoneHearsTheOthersAcrossNodes() async throws {
        try await Heavy.runAlone {
            let cluster = try await TestCluster.start(nodes: 3)
            defer { Task { await cluster.shutdown() } }
            let tones = ["alice": 440.0, "bob": 550.0, "carol": 660.0]
            let alice = try await Member(url: cluster.url(1), token: try await cluster.token("alice"), account: "alice", audio: "sine:440")
            let bob = try await Member(url: cluster.url(2), token: try await cluster.token("bob"), account: "bob", audio: "sine:550")
            let carol = try await Member(url: cluster.url(3), token: try await cluster.token("carol"), account: "carol", audio: "sine:660")
            // Two more connections make node 1 the busiest (load: connections plus participants).
            let idle = [try await cluster.client("idle1", on: 1), try await cluster.client("idle2", on: 1)]
            try await Self.waitForLoads(cluster, [1: 3, 2: 1, 3: 1])

            try await alice.manager.reserveMeeting(name: "standup")
            let places = try #require(cluster.nodes[0].cluster?.membership.places)
            #expect(try await places.all() == ["standup": try NodeID("node-2")], "placed on the least loaded node")
            // The name is taken on every node.
            await #expect(throws: SignalingError.self) { try await carol.manager.reserveMeeting(name: "standup") }

            let (id, before) = try await alice.manager.joinMeeting(name: "standup")
            #expect(before.isEmpty)
            _ = try await bob.manager.joinMeeting(name: "standup")
            let (_, seen) = try await carol.manager.joinMeeting(name: "standup")
            #expect(seen.map(\.account) == ["alice", "bob"])
            for member in [alice, bob, carol] {
                #expect(await member.wait(for: MeetingFlows.connected) != nil, "\(member.account) connected to node 2's SFU")
            }
            // Two seconds of each of the others, as played and as forwarded by node 2 (six
            // streams of 50 packets a second): the levels below look at the last. What a
            // member plays counts concealment too, so it alone comes sooner than 2 s of packets.
            let host = try #require(cluster.nodes[1].forwardingServer)
            #expect(await eventually {
                host.statistics.router.packetsForwarded >= 600
                    && [alice, bob, carol].allSatisfy { member in tones.keys.allSatisfy { $0 == member.account || member.heardCount($0) >= 96_000 } }
            }, "everyone hears the others; node 2's SFU forwarded \(host.statistics.router.packetsForwarded)")
            for member in [alice, bob, carol] {
                for speaker in tones.keys.sorted() where speaker != member.account {
                    let level = member.level(of: tones[speaker]!, from: speaker)
                    #expect(level > 0.2, "\(member.account) hears \(speaker): \(level)")
                }
            }
            // /metrics: node 2 hosts two participants of other nodes; nodes 1 and 3 each
            // have one participant in a meeting hosted elsewhere.
            #expect(try await cluster.metrics(2).value("mediaengine_cluster_remote_participants", ["node": "node-2"]) == 2)
            for index in [1, 3] {
                #expect(try await cluster.metrics(index).value("mediaengine_cluster_participants_hosted_elsewhere", ["node": "node-\(index)"]) == 1)
            }
            for index in [0, 2] {
                #expect(cluster.nodes[index].forwardingServer?.statistics.router.packetsForwarded == 0, "node \(index + 1) forwards nothing")
            }

            // carol (node 3) mutes alice's audio: node 2 stops forwarding it to her only.
            // Alice's packets, 50 a second, are the clock: once node 2 has skipped 25 of them for
            // carol, what was on its way to her has arrived; while it skips 100 more (2 s of
            // alice), she must hear almost nothing of her.
            let skippedBefore = host.statistics.router.mutedPacketsSkipped
            func skipped() -> Int { host.statistics.router.mutedPacketsSkipped - skippedBefore }
            try await carol.manager.setAudioMute(true, forUser: "alice")
            #expect(await eventually { skipped() >= 25 }, "node 2 skips alice's packets for carol")
            let carolHeard = carol.heardCount("alice")
            let bobHeard = bob.heardCount("alice")
            #expect(await eventually { skipped() >= 125 }, "node 2 skipped alice's packets for carol")
            #expect(carol.heardCount("alice") - carolHeard < 4_800, "alice's stream to carol went quiet")
            #expect(bob.level(of: 440, from: "alice", after: bobHeard) > 0.2, "bob still hears alice")

            // Leaves cross nodes in order; the last one out gets the record, stored once.
            try await bob.manager.leaveMeeting()
            try await carol.manager.leaveMeeting()
            let left = await alice.wait { if case .userLeft(_, "carol", .left) = $0 { true } else { false } }
            #expect(left != nil, "alice (node 1) heard carol (node 3) leave")
            try await alice.manager.leaveMeeting()
            let record = await alice.wait { if case .meetingRecord = $0 { true } else { false } }
            guard case .meetingRecord(let stored)? = record else {
                Issue.record("no meeting record")
                return
            }
            #expect(stored.callID == id && Set(stored.attendance.map(\.account)) == ["alice", "bob", "carol"])
            let rows = try cluster.postgres.query("SELECT callID FROM meetingRecord")
            #expect(rows == "\(id)\n", "stored once: \(rows)")
            // The place is released: the name can be reserved again (placed anew).
            #expect(try await eventually { try await places.all()["standup"] == nil }, "the meeting's place was released")
            try await carol.manager.reserveMeeting(name: "standup")
            for member in [alice, bob, carol] { await member.manager.logout() }
            for client in idle { await client.close() }
        }
    }

    /// A meeting hosted by node 1 with members on nodes 1, 2 and 3; node 1 stops. Its
    /// members on nodes 2 and 3 get `meetingError` (serverUnavailable) before it goes, its
    /// record is stored, and they reserve and join the meeting again through node 2: it is
    /// placed on a live node and they hear each other.
    @Test func aHostNodeThatStopsTellsItsMembersElsewhereAndTheyMeetAgainOnALiveNode() async throws {
        try await Heavy.runAlone {
            let cluster = try await TestCluster.start(nodes: 3)
            defer { Task { await cluster.shutdown() } }
            let alice = try await Member(url: cluster.url(1), token: try await cluster.token("alice"), account: "alice", audio: "sine:440")
            let bob = try await Member(url: cluster.url(2), token: try await cluster.token("bob"), account: "bob", audio: "sine:550")
            let carol = try await Member(url: cluster.url(3), token: try await cluster.token("carol"), account: "carol", audio: "sine:660")
            try await Self.waitForLoads(cluster, [1: 1, 2: 1, 3: 1])
            // Equal loads: the first node by name hosts.
            try await alice.manager.reserveMeeting(name: "m")
            let places = try #require(cluster.nodes[1].cluster?.membership.places)
            #expect(try await places.all() == ["m": try NodeID("node-1")])
            var id: UInt64 = 0
            for member in [alice, bob, carol] { id = try await member.manager.joinMeeting(name: "m").callID }
            for member in [alice, bob, carol] { #expect(await member.wait(for: MeetingFlows.connected) != nil) }

            await cluster.nodes[0].shutdown()
            for member in [bob, carol] {
                let error = await member.wait { if case .meetingError = $0 { true } else { false } }
                guard case .meetingError(let meeting, let reason)? = error else {
                    Issue.record("\(member.account) got no meetingError")
                    continue
                }
                #expect(meeting == id && reason.code == .serverUnavailable)
                #expect(await member.manager.currentMeetingID == nil)
            }
            let record = try #require(try await cluster.store.meetingRecords(of: "bob", limit: 5).first)
            #expect(record.callID == id && Set(record.attendance.map(\.account)) == ["alice", "bob", "carol"])
            #expect(record.attendance.allSatisfy { $0.reason == .kicked })

            // Again, through node 2: placed on a live node.
            try await bob.manager.reserveMeeting(name: "m")
            let host = try #require(try await places.all()["m"])
            #expect(host != (try NodeID("node-1")), "placed on \(host)")
            let heardBefore = (bob.heardCount("carol"), carol.heardCount("bob"))
            for member in [bob, carol] { _ = try await member.manager.joinMeeting(name: "m") }
            // Two seconds of each other again: the levels below look at the last.
            #expect(await eventually {
                bob.heardCount("carol") >= heardBefore.0 + 96_000 && carol.heardCount("bob") >= heardBefore.1 + 96_000
            }, "bob and carol hear each other again")
            #expect(bob.level(of: 660, from: "carol", after: heardBefore.0) > 0.2, "bob hears carol again")
            #expect(carol.level(of: 550, from: "bob", after: heardBefore.1) > 0.2, "carol hears bob again")
            for member in [alice, bob, carol] { await member.manager.logout() }
        }
    }

    /// An audio endpoint for a signaling-only participant (no media: the test is over long
    /// before the SFU's 15 s leg timeout).
    static func media(_ ssrc: UInt32) -> MediaEndpoint {
        MediaEndpoint(candidates: [MediaCandidate(host: "127.0.0.1", port: 9)], srtpProfile: "AEAD_AES_128_GCM",
                      srtpKey: SRTPKeyingMaterial.random(profile: .aeadAES128GCM).base64, audioSSRC: ssrc, videoSSRC: nil, iceUfrag: "u\(ssrc)",
                      icePassword: "password-of-twenty-two-chars")
    }

    /// dave (node 3) is in a meeting node 1 hosts; his connection drops and he logs in again
    /// on node 2. Node 2 finds his meeting in the store and node 1 takes his new connection:
    /// events reach him there, and his leave through node 2 is a leave, not a time-out.
    @Test func aMemberThatLogsInAgainOnAnotherNodeKeepsItsMeeting() async throws {
        try await Heavy.run {
            let cluster = try await TestCluster.start(nodes: 3)
            defer { Task { await cluster.shutdown() } }
            let alice = try await cluster.client("alice", on: 1)
            let bob = try await cluster.client("bob", on: 2)
            let dave = try await cluster.client("dave", on: 3)
            try await Self.waitForLoads(cluster, [1: 1, 2: 1, 3: 1])
            _ = try await alice.request(MessageType.reserveMeeting, Request.ReserveMeeting(name: "sync"), as: Reply.ReserveMeeting.self)
            let places = try #require(cluster.nodes[0].cluster?.membership.places)
            #expect(try await places.all() == ["sync": try NodeID("node-1")])
            var id: UInt64 = 0
            for (index, client) in [alice, bob, dave].enumerated() {
                id = try await client.request(MessageType.joinMeeting, Request.JoinMeeting(name: "sync", role: .actor, type: .audio,
                                                                                         media: Self.media(UInt32(100 + index))),
                                              as: Reply.JoinMeeting.self).callID
            }
            var rows = ""
            // psql is a process per query: not too often.
            try await eventually(every: .milliseconds(100)) {
                rows = try cluster.postgres.query("SELECT account, host FROM meetingMember ORDER BY account")
                return rows == "alice|node-1\nbob|node-1\ndave|node-1\n"
            }
            #expect(rows == "alice|node-1\nbob|node-1\ndave|node-1\n", "\(rows)")

            await cluster.nodes[2].hub.dropConnections(of: "dave", reason: "network change")
            #expect(await dave.waitForEnd())
            let again = try await cluster.client("dave", on: 2)
            // Node 1 gives dave's member the new connection (a proxy of node 2's).
            let hub = cluster.nodes[0].hub
            let nodeTwo = try NodeID("node-2")
            let moved = await eventually {
                guard let connection = await hub.meetings.meetings[id]?.members["dave"]?.connection else { return false }
                return await hub.clusterState.meetingProxies[connection]?.remote.node == nodeTwo
            }
            #expect(moved, "node 1 took dave's login on node 2")
            _ = try await alice.request(MessageType.setMeetingRole, Request.SetMeetingRole(callID: id, role: .audience), as: Reply.Empty.self)
            let changed = try #require(await again.next(MessageType.meetingRoleChanged)).body(Event.MeetingRoleChanged.self)
            #expect(changed.account == "alice" && changed.role == .audience)
            _ = try await again.request(MessageType.leaveMeeting, Request.LeaveMeeting(callID: id), as: Reply.Empty.self)
            for client in [alice, bob] {
                let left = try #require(await client.next(MessageType.userLeft)).body(Event.UserLeft.self)
                #expect(left.account == "dave" && left.reason == .left)
            }
            // The host writes the store after its events went out.
            var members = ""
            try await eventually(every: .milliseconds(100)) {
                members = try cluster.postgres.query("SELECT account FROM meetingMember ORDER BY account")
                return members == "alice\nbob\n"
            }
            #expect(members == "alice\nbob\n", "dave's row is gone: \(members)")
        }
    }
}
