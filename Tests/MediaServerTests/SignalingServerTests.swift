import Foundation
import MediaEngine
import Signaling
import Testing
import TestSupport
@testable import MediaServer

/// The server over real WebSockets on loopback: the call flow across several clients,
/// records stored and notified, and every kind of bad input the issue lists.
@Suite(.serialized) struct SignalingServerCalls {
    static func media(_ port: Int) -> MediaEndpoint {
        MediaEndpoint(candidates: [MediaCandidate(host: "127.0.0.1", port: port)], srtpProfile: "AES_CM_128_HMAC_SHA1_80",
                      srtpKey: "c2VjcmV0", audioSSRC: UInt32(port), videoSSRC: UInt32(port + 1), iceUfrag: "check\(port)", icePassword: "password-of-twenty-two-chars")
    }

    @Test func callAcceptedOnOneOfTwoDevicesIsRecordedAndNotified() async throws {
        let server = try await TestServer.start()
        defer { Task { await server.server.shutdown() } }
        let alice = try await server.client("alice")
        let phone = try await server.client("bob", device: "phone")
        let laptop = try await server.client("bob", device: "laptop")

        let started = try await alice.request(MessageType.start, Request.Start(
            callee: "bob", type: .video, option: CallOption(videoQuality: .p720, extendMessage: "hi"), media: Self.media(5_000)),
            as: Reply.Start.self)
        for device in [phone, laptop] {
            let invitation = try #require(await device.next(MessageType.receive)).body(Event.Receive.self)
            #expect(invitation == Event.Receive(callID: started.callID, from: "alice", type: .video,
                                                option: CallOption(videoQuality: .p720, extendMessage: "hi")))
        }
        _ = try await phone.request(MessageType.control, Request.Control(callID: started.callID, control: .feedback),
                                    as: Reply.Empty.self)
        #expect(try #require(await alice.next(MessageType.control)).body(Event.Control.self).control == .feedback)

        let answer = try await phone.request(MessageType.response, Request.Response(callID: started.callID, accept: true,
                                                                                    media: Self.media(6_000)), as: Reply.Response.self)
        #expect(answer.media?.srtpKey == "c2VjcmV0" && answer.media?.candidates.first?.port == 5_000)
        let response = try #require(await alice.next(MessageType.response)).body(Event.Response.self)
        #expect(response.accepted && response.media?.candidates.first?.port == 6_000)
        #expect(try #require(await laptop.next(MessageType.responsedByOther)).body(Event.ResponsedByOther.self).accepted)
        #expect(await laptop.code(MessageType.response, Request.Response(callID: started.callID, accept: true, media: Self.media(7_000)))
                == SignalingError.Code.handledElsewhere.rawValue)

        for control in CallControl.allCases {
            _ = try await alice.request(MessageType.control, Request.Control(callID: started.callID, control: control), as: Reply.Empty.self)
        }
        for control in CallControl.allCases {
            #expect(try #require(await phone.next(MessageType.control)).body(Event.Control.self).control == control)
        }
        let connectedAt = ContinuousClock.now
        _ = try await alice.request(MessageType.mediaStatus, Request.MediaStatus(callID: started.callID, connected: true),
                                    as: Reply.Empty.self)
        // The record must show 300 ms connected: time is what it measures.
        try await Task.sleep(for: .milliseconds(300))
        _ = try await phone.request(MessageType.hangup, Request.Hangup(callID: started.callID), as: Reply.Empty.self)
        let span = (ContinuousClock.now - connectedAt) / .milliseconds(1)
        let hangup = try #require(await alice.next(MessageType.hangup)).body(Event.Hangup.self)
        #expect(hangup == Event.Hangup(callID: started.callID, by: "bob", reason: .completed))
        for party in [alice, phone] {
            let record = try #require(await party.next(MessageType.callRecord)).body(Event.Record.self).record
            #expect(record.callID == started.callID && record.endReason == .completed && record.endedBy == "bob")
            #expect(record.connectedDuration >= 300 && Double(record.connectedDuration) <= span, "\(record.connectedDuration) ms of \(span)")
        }
        let stored = try await server.store.records(of: "alice", limit: 10)
        #expect(stored.map(\.callID) == [started.callID])
        #expect(try await server.store.devices(of: "bob").map(\.device) == ["laptop", "phone"])
    }

    @Test func metricsCountConnectionsAndCallsAndATokenGuardsThem() async throws {
        let server = try await TestServer.start { $0.metricsToken = "scrape-secret-1" }
        defer { Task { await server.server.shutdown() } }
        let alice = try await server.client("alice")
        _ = try await server.client("bob")
        #expect(try await server.scrapeMetrics().status == 401)
        #expect(try await server.scrapeMetrics(token: "scrape-secret-2").status == 401)
        _ = try await alice.request(MessageType.start, Request.Start(callee: "bob", type: .audio, option: CallOption(),
                                                                     media: Self.media(5_100)), as: Reply.Start.self)
        let (status, body) = try await server.scrapeMetrics(token: "scrape-secret-1")
        #expect(status == 200)
        let samples = MetricSample.parse(body)
        #expect(samples.value("mediaengine_signaling_connections") == 2)
        #expect(samples.value("mediaengine_calls") == 1)
        #expect(samples.value("mediaengine_meetings") == 0)
        #expect(samples.value("mediaengine_media_legs") == 0)
        #expect(!body.contains("scrape-secret"))

        let open = try await TestServer.start { $0.metrics = true }
        defer { Task { await open.server.shutdown() } }
        #expect(try await open.scrapeMetrics().status == 200)
        let off = try await TestServer.start { $0.metrics = false }
        defer { Task { await off.server.shutdown() } }
        #expect(try await off.scrapeMetrics().status == 404)
    }

    @Test func rejectMissBusyAndCancelEndWithTheirReasons() async throws {
        // Long enough for bob's reject of the first call under a full run's load (500 ms
        // once ran out before it arrived: 404), short enough for the missed call.
        let server = try await TestServer.start { $0.calls.ringTimeout = .seconds(2) }
        defer { Task { await server.server.shutdown() } }
        let alice = try await server.client("alice")
        let bob = try await server.client("bob")
        let carol = try await server.client("carol")

        let rejected = try await alice.request(MessageType.start, Request.Start(callee: "bob", type: .audio, media: Self.media(5_000)),
                                               as: Reply.Start.self).callID
        _ = await bob.next(MessageType.receive)
        _ = try await bob.request(MessageType.response, Request.Response(callID: rejected, accept: false, media: nil), as: Reply.Response.self)
        #expect(try #require(await alice.next(MessageType.response)).body(Event.Response.self).accepted == false)
        #expect(try #require(await alice.next(MessageType.callRecord)).body(Event.Record.self).record.endReason == .rejected)

        let missed = try await alice.request(MessageType.start, Request.Start(callee: "bob", type: .audio, media: Self.media(5_000)),
                                             as: Reply.Start.self).callID
        let missedHangup = try #require(await alice.next(MessageType.hangup, timeout: .seconds(10))).body(Event.Hangup.self)
        #expect(missedHangup == Event.Hangup(callID: missed, by: nil, reason: .missed))
        #expect(try #require(await bob.next(MessageType.hangup)).body(Event.Hangup.self).reason == .missed)
        // The missed call's record comes after its hangup, once stored: taken here, it cannot
        // be mistaken for the next call's (it once arrived after the busy line's control).
        let missedRecord = try #require(await alice.next(MessageType.callRecord)).body(Event.Record.self).record
        #expect(missedRecord.callID == missed && missedRecord.endReason == .missed)

        let held = try await carol.request(MessageType.start, Request.Start(callee: "bob", type: .audio, media: Self.media(5_000)),
                                           as: Reply.Start.self).callID
        _ = try await alice.request(MessageType.start, Request.Start(callee: "bob", type: .audio, media: Self.media(5_000)),
                                    as: Reply.Start.self)
        #expect(try #require(await alice.next(MessageType.control)).body(Event.Control.self).control == .busyLine)
        #expect(try #require(await alice.next(MessageType.callRecord)).body(Event.Record.self).record.endReason == .busy)

        _ = try await carol.request(MessageType.hangup, Request.Hangup(callID: 0), as: Reply.Empty.self)
        #expect(try #require(await bob.next(MessageType.hangup)).body(Event.Hangup.self) == Event.Hangup(callID: held, by: "carol", reason: .cancelled))
        // The hangup goes out before the record is stored; the record event comes after it
        // is (read earlier, the store once lacked the cancelled call under TSan's slowness).
        #expect(try #require(await carol.next(MessageType.callRecord)).body(Event.Record.self).record.endReason == .cancelled)
        let reasons = try await server.store.records(of: "bob", limit: 10).map(\.endReason)
        #expect(Set(reasons) == [.rejected, .missed, .busy, .cancelled])
    }

    /// A server shut down is freed with its hub (its store, its media server), though
    /// clients were connected. (hummingbird-websocket's router kept every upgraded
    /// connection's handler, and the hub it captured, in a cycle: ASan counted 34 hubs and
    /// 30 SQLite stores alive at the end of a run.) Upgrades are on `/` only.
    @Test func aServerShutDownIsFreedWithItsHub() async throws {
        weak var hub: SignalingHub?
        do {
            let server = try await TestServer.start()
            hub = server.server.hub
            let alice = try await server.client("alice")
            let bob = try await server.client("bob")
            _ = try await alice.request(MessageType.start, Request.Start(callee: "bob", type: .audio, media: Self.media(5_200)),
                                        as: Reply.Start.self)
            _ = await bob.next(MessageType.receive)
            await #expect(throws: (any Error).self) { _ = try await TestClient(url: "ws://127.0.0.1:\(server.port)/other") }
            await server.server.shutdown()
            await alice.close()
            await bob.close()
        }
        let shutDown = ContinuousClock.now
        await eventually { hub == nil }
        #expect(hub == nil, "the hub is still held \(ContinuousClock.now - shutDown) after its server shut down")
    }

    /// A process started while a server runs (by anything in the same process: a test
    /// starting nginx) does not keep the server's listening socket: after a shutdown the
    /// server starts again on its port while that process still runs. (swift-nio's sockets
    /// are not close-on-exec; the child used to inherit it, and the restart failed with
    /// "Address already in use".)
    @Test func aServerRestartsOnItsPortWhileAProcessStartedMeanwhileRuns() async throws {
        let path = FileManager.default.temporaryDirectory.appendingPathComponent("restart-\(UInt32.random(in: 0 ... .max)).sqlite").path
        defer { try? FileManager.default.removeItem(atPath: path) }
        let first = try await TestServer.startOnStablePort(path: path)
        let bystander = try BackgroundProcess(program: "sleep", arguments: ["30"])
        defer { bystander.killNow() }
        await first.server.shutdown()
        let second = try await TestServer.start(path: path) { $0.port = first.port }
        defer { Task { await second.server.shutdown() } }
        let alice = try await second.client("alice")
        #expect(await alice.client.connection.closure == nil, "the restarted server took a login")
    }

    @Test func gracefulShutdownEndsLiveCallsAndKeepsTheirRecords() async throws {
        let path = FileManager.default.temporaryDirectory.appendingPathComponent("calls-\(UInt32.random(in: 0 ... .max)).sqlite").path
        defer { try? FileManager.default.removeItem(atPath: path) }
        let server = try await TestServer.start(path: path)
        let alice = try await server.client("alice")
        let bob = try await server.client("bob")
        let id = try await alice.request(MessageType.start, Request.Start(callee: "bob", type: .video, media: Self.media(5_000)),
                                         as: Reply.Start.self).callID
        _ = await bob.next(MessageType.receive)
        _ = try await bob.request(MessageType.response, Request.Response(callID: id, accept: true, media: Self.media(6_000)), as: Reply.Response.self)
        await server.server.shutdown()
        #expect(try #require(await alice.next(MessageType.hangup)).body(Event.Hangup.self).reason == .failed)
        #expect(await bob.waitForEnd())
        #expect(await alice.client.connection.closure?.code == 1_001)

        // A new server on the same file: the record survived, and clients connect again.
        let restarted = try await TestServer.start(path: path)
        defer { Task { await restarted.server.shutdown() } }
        #expect(try await restarted.store.records(of: "alice", limit: 10).map(\.callID) == [id])
        #expect(try restarted.store.appliedMigrations() == ["v1: call records and devices", "v2: meeting records", "v3: nodes", "v4: node messages", "v5: presence", "v6: call parties", "v7: meeting places",
                                                             "v8: real-time session records", "v9: conference places"])
        _ = try await restarted.client("alice")
    }
}

@Suite(.serialized) struct SignalingServerBadInput {
    @Test func forgedExpiredAndMissingTokensAreRefusedAndTheConnectionStays() async throws {
        let server = try await TestServer.start()
        defer { Task { await server.server.shutdown() } }
        let client = try await TestClient(url: server.url)
        #expect(await client.code(MessageType.start, Request.Hangup(callID: 1)) == SignalingError.Code.unauthorized.rawValue)

        let other = await TokenAuthority(secret: try ServerSecret(bytes: Array(repeating: 7, count: 32)))
        let forged = try await other.mint(account: "alice", lifetime: .seconds(60))
        do {
            _ = try await client.request(MessageType.login, Request.Login(token: forged, device: "d"), as: Reply.Login.self)
            Issue.record("a forged token logged in")
        } catch {
            #expect(error.code == .unauthorized && error.message == "token is not valid")
            #expect(!error.message.contains(forged))
        }
        let expired = try await server.authority.mint(account: "alice", lifetime: .seconds(1), now: Date().addingTimeInterval(-60))
        do {
            _ = try await client.request(MessageType.login, Request.Login(token: expired, device: "d"), as: Reply.Login.self)
            Issue.record("an expired token logged in")
        } catch {
            #expect(error.code == .unauthorized && error.message == "token has expired")
        }
        let good = try await server.token("alice")
        let reply = try await client.request(MessageType.login, Request.Login(token: good, device: "d"), as: Reply.Login.self)
        #expect(reply.account == "alice", "two failures leave the connection usable")
    }

    @Test func repeatedFailedLoginsCloseWithPolicyViolation() async throws {
        let server = try await TestServer.start()
        defer { Task { await server.server.shutdown() } }
        let client = try await TestClient(url: server.url)
        for _ in 0..<3 {
            _ = await client.code(MessageType.login, Request.Login(token: "not.a.jwt", device: "d"))
        }
        #expect(await client.waitForEnd())
        #expect(await client.client.connection.closure?.code == 1_008)
    }

    @Test func oversizeMalformedDuplicateAndUnknownMessagesGetErrorsAndTheConnectionStays() async throws {
        let server = try await TestServer.start()
        defer { Task { await server.server.shutdown() } }
        let alice = try await server.client("alice")
        let huge = Data(("{\"v\":1,\"id\":900,\"type\":\"start\",\"body\":{\"callee\":\"" + String(repeating: "x", count: 1 << 20) + "\"}}").utf8)
        #expect(await rawError(alice, huge) == SignalingError.Code.messageTooLarge.rawValue)
        #expect(await rawError(alice, Data("{not json".utf8)) == SignalingError.Code.malformedMessage.rawValue)
        #expect(await rawError(alice, Data(#"{"v":1,"id":77,"type":"hangup","body":{"callID":0}}"#.utf8)) == SignalingError.Code.callNotFound.rawValue)
        #expect(await rawError(alice, Data(#"{"v":1,"id":77,"type":"hangup","body":{"callID":0}}"#.utf8)) == SignalingError.Code.duplicateRequest.rawValue)
        #expect(await alice.code("teleport", Reply.Empty()) == SignalingError.Code.invalidRequest.rawValue)
        #expect(await alice.code(MessageType.start, Request.Start(callee: "alice", type: .audio, media: SignalingServerCalls.media(1)))
                == SignalingError.Code.invalidRequest.rawValue, "calling oneself")
        #expect(await alice.code(MessageType.start, Request.Start(callee: "nobody", type: .audio, media: SignalingServerCalls.media(1)))
                == SignalingError.Code.calleeOffline.rawValue)
        #expect(await alice.code(MessageType.hangup, Request.Hangup(callID: 42)) == SignalingError.Code.callNotFound.rawValue)
        #expect(await alice.ended == false)
    }

    /// Sends raw bytes and returns the code of the `error` event/reply they cause.
    func rawError(_ client: TestClient, _ data: Data) async -> Int? {
        try? await client.client.connection.send(data)
        // Replies to raw messages carry ids the client did not issue (or none), so they
        // arrive as events of type `error`.
        guard let event = await client.next(MessageType.error) else { return nil }
        return (try? event.body(ErrorBody.self))?.code
    }

    @Test func aThousandMessagesASecondAreCutOffWith1008() async throws {
        let server = try await TestServer.start()
        defer { Task { await server.server.shutdown() } }
        let flooder = try await server.client("mallory")
        let bystander = try await server.client("bob")
        let start = ContinuousClock.now
        var sent = 0
        while ContinuousClock.now - start < .seconds(2), await !flooder.ended {
            for _ in 0..<10 {
                sent += 1
                try? await flooder.client.connection.send(TypedEnvelope(id: UInt64(10_000 + sent), type: MessageType.hangup,
                                                                        body: Request.Hangup(callID: 5)).encoded())
            }
            // Ten every 10 ms: the flood's rate is the point.
            try await Task.sleep(for: .milliseconds(10))
        }
        #expect(await flooder.waitForEnd())
        #expect(await flooder.client.connection.closure?.code == 1_008)
        let leftovers = await flooder.pending()
        #expect(leftovers.contains { $0.type == MessageType.error }, "429s before the close")
        #expect(await bystander.code(MessageType.hangup, Request.Hangup(callID: 0)) == SignalingError.Code.callNotFound.rawValue,
                "other connections are unaffected")
    }

    /// A request over the connection's rate is refused by its ID: the client's call fails
    /// at once with 429 instead of waiting out its timeout.
    @Test func aRequestOverTheRateFailsAtOnceWith429() async throws {
        let server = try await TestServer.start { configuration in
            configuration.limits.messageRate = 1
            configuration.limits.messageBurst = 3
        }
        defer { Task { await server.server.shutdown() } }
        let client = try await server.client("alice")  // the login took one
        var codes: [Int?] = []
        let started = ContinuousClock.now
        for _ in 0..<3 { codes.append(await client.code(MessageType.hangup, Request.Hangup(callID: 7))) }
        #expect(codes == [SignalingError.Code.callNotFound.rawValue, SignalingError.Code.callNotFound.rawValue,
                          SignalingError.Code.rateLimited.rawValue], "\(codes)")
        #expect(ContinuousClock.now - started < .seconds(2), "the refusal came at once")
    }

    @Test func aConnectionThatNeverLogsInIsClosed() async throws {
        let server = try await TestServer.start { $0.limits.loginTimeout = .milliseconds(300) }
        defer { Task { await server.server.shutdown() } }
        let client = try await TestClient(url: server.url)
        #expect(await client.waitForEnd(timeout: .seconds(5)))
        #expect(await client.client.connection.closure?.code == 1_008)
    }

    @Test func theServerAnswersNetDetectProbesOnTheEchoPortItAnnounces() async throws {
        let server = try await TestServer.start()
        defer { Task { await server.server.shutdown() } }
        let client = try await TestClient(url: server.url)
        let login = try await client.request(MessageType.login, Request.Login(token: try await server.token("alice"), device: "d"),
                                             as: Reply.Login.self)
        let port = try #require(login.echoPort)
        #expect(port == server.port, "the echo answers on the signaling port's number (UDP)")
        let result = await NetDetectManager().detect(kind: .audio, target: "127.0.0.1:\(port)", count: 20, interval: .milliseconds(5))
        #expect(result.error == nil && result.lossRate == 0 && result.quality == .veryGood)
    }

    @Test func aServerThatIsNotThereIsAnErrorNotAHang() async throws {
        let probe = try await TestServer.start()
        let url = probe.url
        await probe.server.shutdown()
        let started = ContinuousClock.now
        await #expect(throws: SignalingError.self) { _ = try await SignalingClient.connect(url: url, timeout: .seconds(3)) }
        #expect(ContinuousClock.now - started < .seconds(5))
    }
}
