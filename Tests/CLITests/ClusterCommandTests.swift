import Foundation
import MediaEngine
import Signaling
import TestSupport
import Testing

/// `mediaengine server --node-id` processes sharing one PostgreSQL, as an operator runs
/// them, and what a node killed outright (SIGKILL) does to the calls it was part of.
@Suite(.serialized) struct ClusterCommands {
    /// A signaling client whose events are kept as they come, to wait for one by type.
    actor Client {
        let client: SignalingClient
        private var events: [ServerEvent] = []

        init(url: String, token: String, device: String = "d") async throws {
            client = try await SignalingClient.connect(url: url, timeout: CLI.connectTimeout)
            _ = try await client.request(MessageType.login, Request.Login(token: token, device: device), as: Reply.Login.self)
            let stream = client.events
            Task { await self.read(stream) }
        }

        private func read(_ stream: AsyncStream<ServerEvent>) async {
            for await event in stream { events.append(event) }
        }

        /// The first event of `type` not taken yet, waiting up to `timeout`.
        func next(_ type: String, timeout: Duration = .seconds(10)) async -> ServerEvent? {
            var event: ServerEvent?
            await eventually(timeout: timeout) {
                guard let index = events.firstIndex(where: { $0.type == type }) else { return false }
                event = events.remove(at: index)
                return true
            }
            return event
        }

        func request<Body: Encodable & Sendable, Result: Decodable & Sendable>(_ type: String, _ body: Body, as result: Result.Type)
            async throws -> Result {
            try await client.request(type, body, as: result)
        }
    }

    static func media(_ port: Int) -> MediaEndpoint {
        MediaEndpoint(candidates: [MediaCandidate(host: "127.0.0.1", port: port)], srtpProfile: "AES_CM_128_HMAC_SHA1_80",
                      srtpKey: "c2VjcmV0", audioSSRC: UInt32(port), videoSSRC: UInt32(port + 1), iceUfrag: "check\(port)",
                      icePassword: "password-of-twenty-two-chars")
    }

    /// `bench signaling --nodes 3`: clients spread over three nodes, half the calls across
    /// nodes, every event delivered once and every record stored.
    @Test func benchSignalingAcrossThreeNodesLosesNothing() async throws {
        try await Heavy.run {
            let postgres = try PostgresTestServer()
            let run = try CLI.run(["bench", "signaling", "--nodes", "3", "--clients", "90", "--calls", "30",
                                   "--store", "postgres://\(postgres.user)@127.0.0.1:\(postgres.port)/postgres"],
                                  environment: ["PGPASSWORD": postgres.password])
            #expect(run.status == 0, "\(run.stdout)\(run.stderr)")
            #expect(run.stdout.contains("events: 150/150 delivered, 0 lost, 0 duplicated; 30 records stored"), "\(run.stdout)")
            #expect(run.stdout.contains("caller and callee on one node: p50") && run.stdout.contains("on different nodes:            p50"))
            #expect(run.stdout.contains("(NOTIFY): p50") && !run.stdout.contains(postgres.password))
        }
    }

    /// Node 2 (bob's) is killed with bob in a call alice started on node 1: alice gets a
    /// hangup (failed) once node 2 is dead (2 s) and the reconnect grace (1 s) is over, and node 1
    /// stores the record. Then node 3, owner of a call bob starts from it to alice, is
    /// killed: node 1 ends the call for alice (failed) and stores the record node 3 could not.
    @Test func aNodeKilledMidCallEndsItsCallsAsFailedWithTheirRecords() async throws {
        try await Heavy.run {
            let postgres = try PostgresTestServer()
            let directory = try temporaryDirectory("cluster")
            defer { try? FileManager.default.removeItem(at: directory) }
            let passwordFile = directory.appendingPathComponent("pgpassword").path
            _ = try CallCommands.Setup.writeToken(postgres.password, to: passwordFile)
            let secret = directory.appendingPathComponent("secret").path
            let store = "postgres://\(postgres.user)@127.0.0.1:\(postgres.port)/postgres"
            func node(_ name: String) throws -> (BackgroundProcess, String) {
                try CallCommands.Setup.startServer([
                    "--port", "0", "--secret-file", secret, "--store", store, "--store-password-file", passwordFile, "--node-id", name,
                    "--node-dead-after", "2", "--reconnect-grace", "1", "--no-live", "--duration", "150",
                ])
            }
            let (one, oneURL) = try node("node-1")
            defer { one.interrupt(); _ = try? one.wait(timeout: 10) }
            let (two, twoURL) = try node("node-2")
            defer { two.killNow(); _ = try? two.wait(timeout: 10) }
            let (three, threeURL) = try node("node-3")
            defer { three.killNow(); _ = try? three.wait(timeout: 10) }
            func token(_ account: String) throws -> String {
                try CLI.run(["token", "--account", account, "--secret-file", secret]).stdout.trimmingCharacters(in: .whitespacesAndNewlines)
            }
            let alice = try await Client(url: oneURL, token: try token("alice"))
            let bob = try await Client(url: twoURL, token: try token("bob"))

            // alice (node 1) calls bob (node 2); bob answers; node 2 dies.
            let first = try await alice.request(MessageType.start, Request.Start(callee: "bob", type: .audio, option: CallOption(),
                                                                                  media: Self.media(5_000)), as: Reply.Start.self)
            _ = try #require(await bob.next(MessageType.receive))
            _ = try await bob.request(MessageType.response, Request.Response(callID: first.callID, accept: true, media: Self.media(6_000)),
                                      as: Reply.Response.self)
            _ = try #require(await alice.next(MessageType.response))
            var killed = ContinuousClock.now
            two.killNow()
            _ = try? two.wait(timeout: 10)
            let hangup = try #require(await alice.next(MessageType.hangup, timeout: .seconds(15))).body(Event.Hangup.self)
            var took = ContinuousClock.now - killed
            #expect(hangup == Event.Hangup(callID: first.callID, by: nil, reason: .failed))
            // Dead after 2 s of silence, then 1 s of grace: well within 10 s.
            #expect(took < .seconds(10), "the hangup came \(took) after the kill")
            #expect(try #require(await alice.next(MessageType.callRecord)).body(Event.Record.self).record.endReason == .failed)

            // bob logs in on node 3 and calls alice: node 3 owns the call; it dies mid-call.
            let bobAgain = try await Client(url: threeURL, token: try token("bob"))
            let second = try await bobAgain.request(MessageType.start, Request.Start(callee: "alice", type: .audio, option: CallOption(),
                                                                                     media: Self.media(5_002)), as: Reply.Start.self)
            _ = try #require(await alice.next(MessageType.receive))
            _ = try await alice.request(MessageType.response, Request.Response(callID: second.callID, accept: true, media: Self.media(6_002)),
                                        as: Reply.Response.self)
            _ = try #require(await bobAgain.next(MessageType.response))
            killed = ContinuousClock.now
            three.killNow()
            _ = try? three.wait(timeout: 10)
            let ended = try #require(await alice.next(MessageType.hangup, timeout: .seconds(15))).body(Event.Hangup.self)
            took = ContinuousClock.now - killed
            #expect(ended == Event.Hangup(callID: second.callID, by: nil, reason: .failed))
            #expect(took < .seconds(10), "the hangup came \(took) after the kill")
            let record = try #require(await alice.next(MessageType.callRecord)).body(Event.Record.self).record
            #expect(record.callID == second.callID && record.caller == "bob" && record.callee == "alice" && record.endReason == .failed)

            // Each call's record is in the store once.
            let rows = try postgres.query("SELECT callID, endReason FROM callRecord ORDER BY callID")
            #expect(rows == "\(first.callID)|failed\n\(second.callID)|failed\n", "\(rows)")
        }
    }

    /// A meeting's audio endpoint for a signaling-only participant (no media flows: the
    /// test ends long before the SFU's 15 s leg timeout).
    static func meetingMedia(_ ssrc: UInt32) -> MediaEndpoint {
        MediaEndpoint(candidates: [MediaCandidate(host: "127.0.0.1", port: 9)], srtpProfile: "AEAD_AES_128_GCM",
                      srtpKey: SRTPKeyingMaterial.random(profile: .aeadAES128GCM).base64, audioSSRC: ssrc, videoSSRC: nil, iceUfrag: "u\(ssrc)",
                      icePassword: "password-of-twenty-two-chars")
    }

    /// alice, bob and carol on nodes 1, 2 and 3 are in a meeting; its host node is killed
    /// (SIGKILL). The members on the other two nodes get `meetingError` once it is dead
    /// (2 s), its place is swept, and they reserve and join the meeting again on a live node.
    @Test func aMeetingHostKilledMidMeetingTellsItsMembersElsewhereWhoMeetAgain() async throws {
        try await Heavy.run {
            let postgres = try PostgresTestServer()
            let directory = try temporaryDirectory("cluster-meeting")
            defer { try? FileManager.default.removeItem(at: directory) }
            let passwordFile = directory.appendingPathComponent("pgpassword").path
            _ = try CallCommands.Setup.writeToken(postgres.password, to: passwordFile)
            let secret = directory.appendingPathComponent("secret").path
            let store = "postgres://\(postgres.user)@127.0.0.1:\(postgres.port)/postgres"
            var nodes: [String: (process: BackgroundProcess, url: String)] = [:]
            defer {
                for (process, _) in nodes.values { process.killNow(); _ = try? process.wait(timeout: 10) }
            }
            for name in ["node-1", "node-2", "node-3"] {
                nodes[name] = try CallCommands.Setup.startServer([
                    "--port", "0", "--secret-file", secret, "--store", store, "--store-password-file", passwordFile, "--node-id", name,
                    "--node-dead-after", "2", "--no-live", "--duration", "150",
                ])
            }
            func token(_ account: String) throws -> String {
                try CLI.run(["token", "--account", account, "--secret-file", secret]).stdout.trimmingCharacters(in: .whitespacesAndNewlines)
            }
            let accounts = ["node-1": "alice", "node-2": "bob", "node-3": "carol"]
            var clients: [String: Client] = [:]
            for (node, account) in accounts { clients[node] = try await Client(url: nodes[node]!.url, token: try token(account)) }

            _ = try await clients["node-1"]!.request(MessageType.reserveMeeting, Request.ReserveMeeting(name: "room"),
                                                     as: Reply.ReserveMeeting.self)
            let host = try postgres.query("SELECT node FROM meetingPlace WHERE name = 'room'").trimmingCharacters(in: .whitespacesAndNewlines)
            #expect(accounts[host] != nil, "placed on \(host)")
            var meeting: UInt64 = 0
            for (index, node) in accounts.keys.sorted().enumerated() {
                meeting = try await clients[node]!.request(MessageType.joinMeeting, Request.JoinMeeting(
                    name: "room", role: .actor, type: .audio, media: Self.meetingMedia(UInt32(1_000 + index))), as: Reply.JoinMeeting.self).callID
            }
            let survivors = accounts.keys.sorted().filter { $0 != host }
            // Every member elsewhere has heard the others join before the kill.
            for node in survivors where node > host { _ = await clients[node]!.next(MessageType.userJoined) }

            let killed = ContinuousClock.now
            nodes[host]!.process.killNow()
            _ = try? nodes[host]!.process.wait(timeout: 10)
            for node in survivors {
                let event = try #require(await clients[node]!.next(MessageType.meetingError, timeout: .seconds(15)),
                                         "\(accounts[node]!) on \(node) got no meetingError")
                let error = try event.body(Event.MeetingError.self)
                #expect(error.callID == meeting && error.code == SignalingError.Code.serverUnavailable.rawValue, "\(error)")
            }
            let took = ContinuousClock.now - killed
            #expect(took < .seconds(10), "meetingError came \(took) after the kill")
            let swept = try postgres.query("SELECT count(*) FROM meetingPlace WHERE node = '\(host)'")
            #expect(swept == "0\n", "the dead host's places are swept")

            // They meet again: placed on a live node.
            _ = try await clients[survivors[0]]!.request(MessageType.reserveMeeting, Request.ReserveMeeting(name: "room"),
                                                         as: Reply.ReserveMeeting.self)
            let again = try postgres.query("SELECT node FROM meetingPlace WHERE name = 'room'").trimmingCharacters(in: .whitespacesAndNewlines)
            #expect(survivors.contains(again), "placed again on \(again)")
            for (index, node) in survivors.enumerated() {
                let joined = try await clients[node]!.request(MessageType.joinMeeting, Request.JoinMeeting(
                    name: "room", role: .actor, type: .audio, media: Self.meetingMedia(UInt32(2_000 + index))), as: Reply.JoinMeeting.self)
                #expect(joined.callID != meeting && joined.participants.count == index)
            }
        }
    }
}
