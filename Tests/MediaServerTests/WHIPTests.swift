import Foundation
import MediaEngine
@testable import MediaServer
import Signaling
import Testing
import TestSupport
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// WHIP and WHEP over HTTP against a real server: every refusal with its status and a
/// reason, and a session's life (201 with an ICE-lite answer, `userJoined`, `DELETE` by its
/// owner only, `userLeft`).
@Suite(.serialized) struct WHIPRequests {
    static let fingerprint = "sha-256 " + (0..<32).map { String(format: "%02X", $0 * 5 % 256) }.joined(separator: ":")

    /// A browser's offer as a WHIP encoder sends it (sendonly Opus and VP8, BUNDLE), with
    /// parts left out or changed to make it unusable.
    static func offer(direction: String = "sendonly", fingerprint: Bool = true, ice: Bool = true, mid: Bool = true,
                      audioCodec: String = "opus/48000/2", videoCodec: String = "VP8/90000", crypto: Bool = false) -> String {
        func section(_ kind: String, _ index: Int, _ payloadType: Int, _ codec: String, _ ssrc: Int) -> String {
            var lines = ["m=\(kind) 9 UDP/TLS/RTP/SAVPF \(payloadType)", "c=IN IP4 0.0.0.0"]
            if ice { lines += ["a=ice-ufrag:wh1p", "a=ice-pwd:0123456789abcdefghijklmn"] }
            if fingerprint { lines.append("a=fingerprint:\(Self.fingerprint)") }
            if crypto { lines.append("a=crypto:1 AES_CM_128_HMAC_SHA1_80 inline:WVNfX19zZW1jdGwgKCkgewkyMjA7fQp9CnVubGVz") }
            lines += ["a=setup:actpass"]
            if mid { lines.append("a=mid:\(index)") }
            lines += ["a=extmap:4 urn:ietf:params:rtp-hdrext:sdes:mid", "a=\(direction)", "a=msid:s t\(index)", "a=rtcp-mux",
                      "a=rtpmap:\(payloadType) \(codec)", "a=ssrc:\(ssrc) cname:whip"]
            return lines.joined(separator: "\r\n")
        }
        let head = ["v=0", "o=- 1 2 IN IP4 127.0.0.1", "s=-", "t=0 0", mid ? "a=group:BUNDLE 0 1" : ""].filter { !$0.isEmpty }
        return (head + [section("audio", 0, 111, audioCodec, 1_111), section("video", 1, 96, videoCodec, 2_222)]).joined(separator: "\r\n") + "\r\n"
    }

    struct HTTPReply {
        var status: Int
        var body: String
        var headers: [String: String]
        var links: [String]
    }

    static func post(_ server: TestServer, _ path: String, token: String?, body: String, contentType: String = "application/sdp") async throws -> HTTPReply {
        var request = URLRequest(url: URL(string: "http://127.0.0.1:\(server.port)\(path)")!)
        request.httpMethod = "POST"
        request.setValue(contentType, forHTTPHeaderField: "Content-Type")
        if let token { request.setValue("Bearer \(token)", forHTTPHeaderField: "Authorization") }
        request.httpBody = Data(body.utf8)
        return try await send(request)
    }

    static func send(_ request: URLRequest) async throws -> HTTPReply {
        let (data, response) = try await URLSession.shared.data(for: request)
        let http = response as? HTTPURLResponse
        var headers: [String: String] = [:]
        for (name, value) in http?.allHeaderFields ?? [:] { headers["\(name)".lowercased()] = "\(value)" }
        // Several Link headers arrive joined by commas.
        let links = headers["link"].map { $0.components(separatedBy: ", <").map { $0.hasPrefix("<") ? $0 : "<" + $0 } } ?? []
        return HTTPReply(status: http?.statusCode ?? 0, body: String(decoding: data, as: UTF8.self), headers: headers, links: links)
    }

    static func request(_ server: TestServer, _ method: String, _ path: String, token: String?) async throws -> HTTPReply {
        var request = URLRequest(url: URL(string: "http://127.0.0.1:\(server.port)\(path)")!)
        request.httpMethod = method
        if let token { request.setValue("Bearer \(token)", forHTTPHeaderField: "Authorization") }
        return try await send(request)
    }

    @Test func refusalsNameTheProblemWithTheirStatus() async throws {
        let server = try await TestServer.start()
        defer { Task { await server.server.shutdown() } }
        let alice = try await server.client("alice")
        _ = try await alice.request(MessageType.reserveMeeting, Request.ReserveMeeting(name: "room"), as: Reply.ReserveMeeting.self)
        let bob = try await server.token("bob")
        let good = Self.offer()

        let cases: [(String, HTTPReply, Int, String)] = [
            ("no token", try await Self.post(server, "/whip/room", token: nil, body: good), 401, "Bearer"),
            ("a forged token", try await Self.post(server, "/whip/room", token: "x.y.z", body: good), 401, "WHIP"),
            ("another meeting's grant",
             try await Self.post(server, "/whip/room", token: try await server.authority.mint(account: "bob", lifetime: .seconds(60),
                                                                                              grants: Grants(meetings: ["other"])), body: good),
             403, "does not grant meeting 'room'"),
            ("no publish grant",
             try await Self.post(server, "/whip/room", token: try await server.authority.mint(account: "bob", lifetime: .seconds(60),
                                                                                              grants: Grants(publish: false)), body: good),
             403, "publishing"),
            ("a meeting not reserved", try await Self.post(server, "/whip/nowhere", token: bob, body: good), 404, "no meeting 'nowhere'"),
            ("not SDP", try await Self.post(server, "/whip/room", token: bob, body: good, contentType: "text/plain"), 415, "application/sdp"),
            ("1 MiB of SDP", try await Self.post(server, "/whip/room", token: bob, body: good + String(repeating: "a=x:y\r\n", count: 150_000)),
             413, "larger than"),
            ("not SDP at all", try await Self.post(server, "/whip/room", token: bob, body: "hello\r\n"), 400, "the offer"),
            ("no fingerprint", try await Self.post(server, "/whip/room", token: bob, body: Self.offer(fingerprint: false)), 422, "fingerprint"),
            ("no ICE credentials", try await Self.post(server, "/whip/room", token: bob, body: Self.offer(ice: false)), 422, "ice-ufrag"),
            ("no mid", try await Self.post(server, "/whip/room", token: bob, body: Self.offer(mid: false)), 422, "no a=mid"),
            ("SDES only", try await Self.post(server, "/whip/room", token: bob, body: Self.offer(fingerprint: false, crypto: true)), 422, "SDES"),
            ("unknown codecs only",
             try await Self.post(server, "/whip/room", token: bob, body: Self.offer(audioCodec: "G722/8000", videoCodec: "H264/90000")),
             422, "no opus among the codecs offered (G722)"),
            ("a publisher that sends nothing", try await Self.post(server, "/whip/room", token: bob, body: Self.offer(direction: "recvonly")),
             422, "must send Opus audio"),
            ("a viewer of nobody", try await Self.post(server, "/whep/room/carol", token: bob, body: Self.offer(direction: "recvonly")),
             404, "no participant carol"),
        ]
        for (label, reply, status, reason) in cases {
            #expect(reply.status == status, "\(label): \(reply.status) \(reply.body)")
            #expect(reply.body.contains(reason), "\(label): \(reply.body)")
            #expect(!reply.body.contains(bob), "\(label): the token is never echoed")
        }
        #expect(cases[0].1.headers["www-authenticate"] == "Bearer")
        // None of them joined anything.
        #expect(await server.server.hub.participantCount == 0)
        await alice.close()
    }

    @Test func theWebClientIsServedAtTheRootBesideTheSignalingWebSocket() async throws {
        let server = try await TestServer.start()
        defer { Task { await server.server.shutdown() } }
        let page = try await Self.request(server, "GET", "/", token: nil)
        #expect(page.status == 200 && page.headers["content-type"] == "text/html; charset=utf-8", "\(page.status) \(page.body)")
        #expect(page.body.contains("<script src=\"client.js\"></script>"))
        #expect(page.headers["referrer-policy"] == "no-referrer" && page.headers["content-security-policy"]?.hasPrefix("default-src 'self'") == true)
        let script = try await Self.request(server, "GET", "/client.js", token: nil)
        #expect(script.status == 200 && script.body.contains("window.mediaEngine = { stats, mute"), "\(script.status)")
        #expect(page.body.contains("<script src=\"board.js\"></script>"))
        let board = try await Self.request(server, "GET", "/board.js", token: nil)
        #expect(board.status == 200 && board.body.contains("class Whiteboard"), "\(board.status)")
        #expect(try await Self.request(server, "GET", "/nothing.js", token: nil).status == 404)
        // The same path still upgrades to signaling.
        let client = try await server.client("alice")
        await client.close()
        // /echo (`bench rts`'s baseline) is there only when the operator asks for it.
        await #expect(throws: (any Error).self) { _ = try await TestClient(url: "ws://127.0.0.1:\(server.port)/echo") }
        let echoing = try await TestServer.start { $0.webSocketEcho = true }
        defer { Task { await echoing.server.shutdown() } }
        let echo = try await TestClient(url: "ws://127.0.0.1:\(echoing.port)/echo")
        await echo.close()
    }

    @Test func aClusterPageMayConnectToTheOtherNodesAndNothingElseReachesItsPolicy() {
        let base = "default-src 'self'; media-src 'self' blob:; style-src 'self' 'unsafe-inline'"
        #expect(WebClientRoutes.contentSecurityPolicy(otherNodes: []) == base)
        let policy = WebClientRoutes.contentSecurityPolicy(otherNodes: [
            "ws://b.example:8080/", "wss://c.example/", "ws://[::1]:9000/", "ws://b.example:8080/",
            // A path is not part of an origin.
            "ws://f.example:1/'unsafe-eval'",
            // Not WebSocket origins, or trying to add a directive: left out.
            "http://d.example/", "ws://e.example; script-src *", "ws://g.example 'unsafe-inline'/", "nonsense",
        ])
        #expect(policy == base + "; connect-src 'self' ws://[::1]:9000 ws://b.example:8080 ws://f.example:1 wss://c.example", "\(policy)")
    }

    @Test func aSessionJoinsAsAnActorAndOnlyItsOwnerEndsIt() async throws {
        let relay = try TURNRelay(url: "turn:127.0.0.1:3478", secret: "whip-test-secret")
        let server = try await TestServer.start { $0.turn = relay }
        defer { Task { await server.server.shutdown() } }
        let alice = try await server.client("alice")
        _ = try await alice.request(MessageType.reserveMeeting, Request.ReserveMeeting(name: "room"), as: Reply.ReserveMeeting.self)
        let bob = try await server.token("bob"), carol = try await server.token("carol")

        let reply = try await Self.post(server, "/whip/room", token: bob, body: Self.offer())
        #expect(reply.status == 201, "\(reply.body)")
        #expect(reply.headers["content-type"] == "application/sdp")
        let location = try #require(reply.headers["location"])
        #expect(location.hasPrefix("/whip/sessions/") && location.count > "/whip/sessions/".count + 32, "an unguessable ID: \(location)")
        // The TURN server with credentials; no STUN entry naming the media port (libwebrtc
        // would drop the answers to its checks, which come from that address).
        #expect(reply.links.count == 1 && reply.links[0].hasPrefix("<turn:127.0.0.1:3478") && reply.links[0].contains("credential-type=\"password\""),
                "\(reply.links)")
        for line in ["a=ice-lite", "a=setup:passive", "a=recvonly", "a=mid:0", "a=mid:1", "a=rtpmap:111 opus/48000/2", "a=rtpmap:96 VP8/90000",
                     "a=fingerprint:sha-256 ", "typ host", "a=end-of-candidates", "a=extmap:4 urn:ietf:params:rtp-hdrext:sdes:mid"] {
            #expect(reply.body.contains(line), "the answer has \(line): \(reply.body)")
        }
        #expect(await server.server.hub.participantCount == 1)
        // A second session of the same account is refused: one meeting per account.
        let again = try await Self.post(server, "/whip/room", token: bob, body: Self.offer())
        #expect(again.status == 409 && again.body.contains("already in meeting"), "\(again.status) \(again.body)")
        // A WHEP viewer of bob gets his SSRCs in its answer.
        let view = try await Self.post(server, "/whep/room/bob", token: carol, body: Self.offer(direction: "recvonly"))
        #expect(view.status == 201 && view.body.contains("a=sendonly") && view.body.contains("a=ssrc:1111 ")
                && view.body.contains("a=ssrc:2222 "), "\(view.body)")
        #expect(await server.server.hub.participantCount == 2)
        #expect(await eventually { server.server.forwardingStatistics?.legs == 2 }, "two legs in the SFU")

        #expect(try await Self.request(server, "PATCH", location, token: bob).status == 405)
        let stranger = try await Self.request(server, "DELETE", location, token: carol)
        #expect(stranger.status == 403 && stranger.body.contains("not yours"), "someone else's session: \(stranger.status) \(stranger.body)")
        #expect(try await Self.request(server, "DELETE", location, token: nil).status == 401)
        #expect(try await Self.request(server, "DELETE", "/whip/sessions/0123", token: bob).status == 404)
        #expect(await server.server.hub.participantCount == 2)
        #expect(try await Self.request(server, "DELETE", location, token: bob).status == 200)
        #expect(await server.server.hub.participantCount == 1)
        #expect(try await Self.request(server, "DELETE", location, token: bob).status == 404, "gone once deleted")
        let viewer = try #require(view.headers["location"])
        #expect(try await Self.request(server, "DELETE", viewer, token: carol).status == 200)
        #expect(await server.server.hub.participantCount == 0)
        #expect(await eventually { server.server.forwardingStatistics?.legs == 0 }, "nothing left in the SFU")
        await alice.close()
    }
}
