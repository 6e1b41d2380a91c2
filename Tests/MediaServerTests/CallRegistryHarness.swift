import Foundation
import Signaling
@testable import MediaServer

/// Drives a `CallRegistry` on a manual clock and collects what it sends, per connection.
struct RegistryHarness {
    struct Message {
        var envelope: Envelope
        var data: Data

        var type: String { envelope.type }
        func body<Body: Decodable>(_ type: Body.Type) throws -> Body {
            try Envelope.decodeBody(type, from: data, messageType: envelope.type)
        }
    }

    var registry: CallRegistry
    var time = ServerTime(monotonic: .seconds(1_000), epochMilliseconds: 1_790_000_000_000)
    var inbox: [ConnectionID: [Message]] = [:]
    var records: [(record: CallRecord, notify: [ConnectionID])] = []
    var closed: [(ConnectionID, UInt16)] = []
    var nextRequestID: UInt64 = 1

    init(configuration: CallRegistry.Configuration = CallRegistry.Configuration()) {
        registry = CallRegistry(configuration: configuration)
    }

    static func media(_ port: Int) -> MediaEndpoint {
        MediaEndpoint(candidates: [MediaCandidate(host: "127.0.0.1", port: port)], srtpProfile: "AES_CM_128_HMAC_SHA1_80",
                      srtpKey: "a2V5", audioSSRC: UInt32(port), videoSSRC: nil, iceUfrag: "ufrag\(port)", icePassword: "password-of-twenty-two-chars")
    }

    mutating func collect(_ outputs: [CallRegistry.Output]) {
        for output in outputs {
            switch output {
            case .send(let connection, let message):
                let data = message.encoded()
                let envelope = try! Envelope.decode(data, maximumSize: 1 << 20)
                inbox[connection, default: []].append(Message(envelope: envelope, data: data))
            case .record(let record, let notify):
                records.append((record, notify))
            case .close(let connection, let code, _):
                closed.append((connection, code))
            }
        }
    }

    @discardableResult
    mutating func login(_ connection: UInt64, _ account: String, device: String = "d") throws -> Reply.Login {
        let (reply, outputs) = try registry.login(ConnectionID(connection), account: account, device: device, at: time)
        collect(outputs)
        return reply
    }

    mutating func disconnect(_ connection: UInt64) {
        collect(registry.disconnected(ConnectionID(connection), at: time))
    }

    /// Sends a request, as the server's edge decodes it from the wire, and returns its reply
    /// (removed from the inbox). A body that is no call request gets the edge's error.
    mutating func request<Body: Encodable & Sendable>(_ connection: UInt64, _ type: String, _ body: Body) -> Message {
        let id = nextRequestID
        nextRequestID += 1
        let data = TypedEnvelope(id: id, type: type, body: body).encoded()
        let decoded = try! ClientMessage.decode(data, maximumSize: 1 << 20).request
        switch decoded.map(RoutedRequest.init) {
        case .success(.call(let request)):
            collect(registry.handle(request, from: ConnectionID(connection), requestID: id, at: time))
        case .success:
            collect([CallRegistry.errorReply(ConnectionID(connection), id, SignalingError(.invalidRequest, "\(type): not a call request"))])
        case .failure(let error):
            collect([CallRegistry.errorReply(ConnectionID(connection), id, error)])
        }
        let messages = inbox[ConnectionID(connection), default: []]
        let index = messages.firstIndex { $0.envelope.id == id }!
        inbox[ConnectionID(connection)]!.remove(at: index)
        return messages[index]
    }

    /// The error code of a reply, or nil for `ok`.
    func code(_ reply: Message) -> Int? {
        reply.type == MessageType.error ? (try? reply.body(ErrorBody.self))?.code : nil
    }

    /// Starts a call and returns its ID (fails the test's `#require` on an error).
    mutating func start(_ connection: UInt64, to callee: String, type: CallType = .video) throws -> UInt64 {
        let reply = request(connection, MessageType.start, Request.Start(callee: callee, type: type, media: Self.media(5_000)))
        return try reply.body(Reply.Start.self).callID
    }

    /// Starts a call, has `answerer` accept it and `reporter` report its media connected;
    /// returns its ID.
    mutating func connectedCall(_ caller: UInt64, to callee: String, answeredBy answerer: UInt64, reportedBy reporter: UInt64) throws -> UInt64 {
        let id = try start(caller, to: callee)
        _ = request(answerer, MessageType.response, Request.Response(callID: id, accept: true, media: Self.media(6_000)))
        _ = request(reporter, MessageType.mediaStatus, Request.MediaStatus(callID: id, connected: true))
        return id
    }

    /// Events received by a connection since the last call, removed from the inbox.
    mutating func events(_ connection: UInt64) -> [Message] {
        defer { inbox[ConnectionID(connection)] = [] }
        return inbox[ConnectionID(connection), default: []]
    }

    mutating func advance(_ duration: Duration) {
        time.monotonic += duration
        time.epochMilliseconds += Int64(duration / .milliseconds(1))
        collect(registry.tick(at: time))
    }
}
