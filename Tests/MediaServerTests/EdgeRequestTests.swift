import Foundation
import Logging
import MediaEngine
import Signaling
import Testing
@testable import MediaServer

/// The server's edge: every message is decoded once into a typed request, and a request of
/// any type sent before login, with a wrong body or with fields its type does not have is
/// a typed error naming the problem, under the message's ID; the connection stays.
@Suite struct EdgeRequests {
    static let media = MediaEndpoint(candidates: [MediaCandidate(host: "127.0.0.1", port: 9)], srtpProfile: "AEAD_AES_128_GCM",
                                     srtpKey: SRTPKeyingMaterial.random(profile: .aeadAES128GCM).base64, audioSSRC: 7, videoSSRC: nil,
                                     iceUfrag: "ufrag", icePassword: "password-of-twenty-two-chars")

    /// One well-formed request of every type a client may send.
    static let every: [ClientRequest] = [
        .login(Request.Login(token: "t", device: "d")),
        .start(Request.Start(callee: "bob", type: .audio, media: media)),
        .response(Request.Response(callID: 1, accept: false, media: nil)),
        .control(Request.Control(callID: 1, control: .openAudio)),
        .hangup(Request.Hangup(callID: 1)),
        .mediaStatus(Request.MediaStatus(callID: 1, connected: true)),
        .candidates(Request.Candidates(callID: 1, candidates: [], complete: true)),
        .reserveMeeting(Request.ReserveMeeting(name: "m")),
        .joinMeeting(Request.JoinMeeting(name: "m", role: .actor, type: .audio, media: media)),
        .leaveMeeting(Request.LeaveMeeting(callID: 1)),
        .setMeetingRole(Request.SetMeetingRole(callID: 1, role: .audience)),
        .setMeetingMute(Request.SetMeetingMute(callID: 1, user: "bob", audio: true)),
        .switchBypassStreamingURL(Request.SwitchBypassStreamingURL(callID: 1, url: "rtmp://127.0.0.1/live/k")),
        .setBypassStreamingEnabled(Request.SetBypassStreamingEnabled(callID: 1, enabled: true)),
        .setBypassStreamingMixMode(Request.SetBypassStreamingMixMode(callID: 1, mixMode: 2)),
    ]

    /// A hub with no network, and one connection to it whose messages the test reads.
    struct Edge {
        let hub: SignalingHub
        let authority: TokenAuthority
        let connection: ConnectionID
        var replies: AsyncStream<OutboundMessage>.Iterator

        init() async throws {
            authority = await TokenAuthority(secret: TestServer.secret)
            var logger = Logger(label: "test.edge")
            logger.logLevel = .critical
            hub = SignalingHub(authority: authority, store: try SQLiteCallStore(path: nil), logger: logger)
            let (stream, sink) = AsyncStream<OutboundMessage>.makeStream()
            connection = try #require(await hub.open(sink))
            replies = stream.makeAsyncIterator()
        }

        /// Sends `data` and returns the reply: its ID, type and error, if any.
        mutating func send(_ data: Data) async throws -> (id: UInt64?, type: String, error: SignalingError?) {
            await hub.received(data, from: connection)
            guard case .message(let message) = try #require(await replies.next(), "a reply") else {
                throw CancellationError()
            }
            switch message {
            case .reply(let id, _): return (id, MessageType.ok, nil)
            case .error(let id, let error): return (id, MessageType.error, error)
            case .event(let event): return (nil, event.type, nil)
            }
        }

        mutating func logIn() async throws {
            let token = try await authority.mint(account: "alice", lifetime: .seconds(60))
            let reply = try await send(ClientRequest.login(Request.Login(token: token, device: "d")).encoded(id: 1))
            #expect(reply.type == MessageType.ok, "\(String(describing: reply.error))")
        }
    }

    /// `request`'s message with its body changed by `change`.
    static func message(_ request: ClientRequest, id: UInt64, _ change: (inout [String: JSONValue]) -> Void) throws -> Data {
        var envelope = try JSONDecoder().decode(Envelope.self, from: request.encoded(id: id))
        guard case .object(var body) = envelope.body else { throw CancellationError() }
        change(&body)
        envelope.body = .object(body)
        return envelope.encoded()
    }

    @Test func everyRequestTypeBeforeLoginIsUnauthorizedUnderItsID() async throws {
        var edge = try await Edge()
        for (index, request) in Self.every.enumerated() where request.type != MessageType.login {
            let id = UInt64(100 + index)
            let reply = try await edge.send(request.encoded(id: id))
            #expect(reply.id == id && reply.error?.code == .unauthorized, "\(request.type): \(String(describing: reply.error))")
            #expect(reply.error?.message == "\(request.type): log in first")
        }
        // Fourteen faults fit the budget: the connection is still there and logs in.
        try await edge.logIn()
    }

    @Test func everyRequestTypeWithAWrongBodyNamesTheField() async throws {
        var edge = try await Edge()
        try await edge.logIn()
        for (index, request) in Self.every.enumerated() where request.type != MessageType.login {
            let id = UInt64(200 + index)
            var field = ""
            let data = try Self.message(request, id: id) { body in
                field = body.keys.sorted()[0]
                body[field] = .array([])
            }
            let reply = try await edge.send(data)
            #expect(reply.id == id && reply.error?.code == .invalidRequest, "\(request.type): \(String(describing: reply.error))")
            #expect(reply.error?.message == "\(request.type): field '\(field)' has the wrong type", "\(String(describing: reply.error))")
        }
        // A body with a required field missing names it.
        let missing = try await edge.send(Data(#"{"v":1,"id":300,"type":"hangup","body":{}}"#.utf8))
        #expect(missing.error?.message == "hangup: missing field 'callID'", "\(String(describing: missing.error))")
        // A login with a wrong body, before logging in, is a failed login.
        var fresh = try await Edge()
        let login = try await fresh.send(Data(#"{"v":1,"id":1,"type":"login","body":{"token":7,"device":"d"}}"#.utf8))
        #expect(login.error?.code == .invalidRequest && login.error?.message == "login: field 'token' has the wrong type",
                "\(String(describing: login.error))")
    }

    @Test func everyRequestTypeWithAnUnknownFieldNamesIt() async throws {
        var edge = try await Edge()
        try await edge.logIn()
        for (index, request) in Self.every.enumerated() where request.type != MessageType.login {
            let id = UInt64(400 + index)
            let reply = try await edge.send(try Self.message(request, id: id) { $0["surprise"] = .number(1) })
            #expect(reply.id == id && reply.error?.code == .invalidRequest, "\(request.type): \(String(describing: reply.error))")
            #expect(reply.error?.message == "\(request.type): unknown field 'surprise'", "\(String(describing: reply.error))")
        }
        // Inside a nested object too; a field sent as null is one left out.
        let nested = try await edge.send(try Self.message(Self.every[1], id: 500) { body in
            guard case .object(var media) = body["media"] else { return }
            media["codec"] = .string("h263")
            body["media"] = .object(media)
        })
        #expect(nested.error?.message == "start: unknown field 'media.codec'", "\(String(describing: nested.error))")
        let null = try await edge.send(try Self.message(.hangup(Request.Hangup(callID: 42)), id: 501) { $0["reason"] = .null })
        #expect(null.error?.code == .callNotFound, "a null field is no field: \(String(describing: null.error))")
    }

    @Test func everyRequestEncodesToAMessageTheEdgeReadsAsItself() throws {
        for (index, request) in Self.every.enumerated() {
            let message = try ClientMessage.decode(request.encoded(id: UInt64(index)), maximumSize: 1 << 16)
            #expect(message.id == UInt64(index) && message.type == request.type)
            #expect(message.request == .success(request), "\(request.type)")
        }
        let unknown = try ClientMessage.decode(Data(#"{"v":1,"id":9,"type":"teleport","body":{}}"#.utf8), maximumSize: 1 << 16)
        #expect(unknown.request == .failure(SignalingError(.invalidRequest, "unknown request type 'teleport'")))
    }
}
