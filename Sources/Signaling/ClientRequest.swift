import Foundation

/// Everything a client asks the server, typed: what the server's edge turns each message
/// into, once, so that nothing behind it handles message-type strings or raw JSON.
public enum ClientRequest: Sendable, Hashable {
    case login(Request.Login)
    case start(Request.Start)
    case response(Request.Response)
    case control(Request.Control)
    case hangup(Request.Hangup)
    case mediaStatus(Request.MediaStatus)
    case candidates(Request.Candidates)
    case reserveMeeting(Request.ReserveMeeting)
    case joinMeeting(Request.JoinMeeting)
    case leaveMeeting(Request.LeaveMeeting)
    case setMeetingRole(Request.SetMeetingRole)
    case setMeetingMute(Request.SetMeetingMute)
    case setVideoSize(Request.SetVideoSize)
    case renegotiateMeeting(Request.RenegotiateMeeting)
    case switchBypassStreamingURL(Request.SwitchBypassStreamingURL)
    case setBypassStreamingEnabled(Request.SetBypassStreamingEnabled)
    case setBypassStreamingMixMode(Request.SetBypassStreamingMixMode)
    case rtsRequest(Request.RTSRequest)
    case rtsResponse(Request.RTSResponse)
    case rtsTerminate(Request.RTSTerminate)
    case rtsControl(Request.RTSControl)
    case reserveConference(Request.ReserveConference)
    case joinConference(Request.JoinConference)
    case leaveConference(Request.LeaveConference)
    case rtsSync(Request.RTSSync)

    /// The message type it travels as.
    public var type: String {
        switch self {
        case .login: MessageType.login
        case .start: MessageType.start
        case .response: MessageType.response
        case .control: MessageType.control
        case .hangup: MessageType.hangup
        case .mediaStatus: MessageType.mediaStatus
        case .candidates: MessageType.candidates
        case .reserveMeeting: MessageType.reserveMeeting
        case .joinMeeting: MessageType.joinMeeting
        case .leaveMeeting: MessageType.leaveMeeting
        case .setMeetingRole: MessageType.setMeetingRole
        case .setMeetingMute: MessageType.setMeetingMute
        case .setVideoSize: MessageType.setVideoSize
        case .renegotiateMeeting: MessageType.renegotiateMeeting
        case .switchBypassStreamingURL: MessageType.switchBypassStreamingURL
        case .setBypassStreamingEnabled: MessageType.setBypassStreamingEnabled
        case .setBypassStreamingMixMode: MessageType.setBypassStreamingMixMode
        case .rtsRequest: MessageType.rtsRequest
        case .rtsResponse: MessageType.rtsResponse
        case .rtsTerminate: MessageType.rtsTerminate
        case .rtsControl: MessageType.rtsControl
        case .reserveConference: MessageType.reserveConference
        case .joinConference: MessageType.joinConference
        case .leaveConference: MessageType.leaveConference
        case .rtsSync: MessageType.rtsSync
        }
    }

    /// The message a client sends: this request with its ID.
    public func encoded(id: UInt64) -> Data {
        switch self {
        case .login(let body): TypedEnvelope(id: id, type: type, body: body).encoded()
        case .start(let body): TypedEnvelope(id: id, type: type, body: body).encoded()
        case .response(let body): TypedEnvelope(id: id, type: type, body: body).encoded()
        case .control(let body): TypedEnvelope(id: id, type: type, body: body).encoded()
        case .hangup(let body): TypedEnvelope(id: id, type: type, body: body).encoded()
        case .mediaStatus(let body): TypedEnvelope(id: id, type: type, body: body).encoded()
        case .candidates(let body): TypedEnvelope(id: id, type: type, body: body).encoded()
        case .reserveMeeting(let body): TypedEnvelope(id: id, type: type, body: body).encoded()
        case .joinMeeting(let body): TypedEnvelope(id: id, type: type, body: body).encoded()
        case .leaveMeeting(let body): TypedEnvelope(id: id, type: type, body: body).encoded()
        case .setMeetingRole(let body): TypedEnvelope(id: id, type: type, body: body).encoded()
        case .setMeetingMute(let body): TypedEnvelope(id: id, type: type, body: body).encoded()
        case .setVideoSize(let body): TypedEnvelope(id: id, type: type, body: body).encoded()
        case .renegotiateMeeting(let body): TypedEnvelope(id: id, type: type, body: body).encoded()
        case .switchBypassStreamingURL(let body): TypedEnvelope(id: id, type: type, body: body).encoded()
        case .setBypassStreamingEnabled(let body): TypedEnvelope(id: id, type: type, body: body).encoded()
        case .setBypassStreamingMixMode(let body): TypedEnvelope(id: id, type: type, body: body).encoded()
        case .rtsRequest(let body): TypedEnvelope(id: id, type: type, body: body).encoded()
        case .rtsResponse(let body): TypedEnvelope(id: id, type: type, body: body).encoded()
        case .rtsTerminate(let body): TypedEnvelope(id: id, type: type, body: body).encoded()
        case .rtsControl(let body): TypedEnvelope(id: id, type: type, body: body).encoded()
        case .reserveConference(let body): TypedEnvelope(id: id, type: type, body: body).encoded()
        case .joinConference(let body): TypedEnvelope(id: id, type: type, body: body).encoded()
        case .leaveConference(let body): TypedEnvelope(id: id, type: type, body: body).encoded()
        case .rtsSync(let body): TypedEnvelope(id: id, type: type, body: body).encoded()
        }
    }
}

/// One message from a client, decoded once: the envelope's fields and its request (or
/// why its body is not one, to answer under the message's ID).
public struct ClientMessage: Sendable, Hashable {
    /// The request ID the reply repeats; nil when the client sent none.
    public var id: UInt64?
    /// The message type as sent.
    public var type: String
    /// The typed request, or an `invalidRequest` error naming the unknown type, the missing
    /// or mistyped field, or a field the request does not have.
    public var request: Result<ClientRequest, SignalingError>

    public init(id: UInt64?, type: String, request: Result<ClientRequest, SignalingError>) {
        self.id = id
        self.type = type
        self.request = request
    }

    /// Parses one message from the bytes, once.
    /// - Throws: `messageTooLarge`, `malformedMessage` or `unsupportedVersion` for what is no
    ///   envelope at all (`Envelope.decode`'s checks); a bad body is in `request`.
    public static func decode(_ data: Data, maximumSize: Int) throws(SignalingError) -> ClientMessage {
        guard data.count <= maximumSize else {
            throw SignalingError(.messageTooLarge, "message of \(data.count) bytes exceeds the limit of \(maximumSize)")
        }
        let decoded: Decoded
        do {
            decoded = try JSONDecoder().decode(Decoded.self, from: data)
        } catch let error as SignalingError {
            throw error
        } catch let error as DecodingError {
            throw SignalingError(.malformedMessage, "message is not a valid envelope: \(Envelope.explain(error))")
        } catch {
            throw SignalingError(.malformedMessage, "message is not valid JSON")
        }
        return decoded.message
    }

    /// The envelope's fields read with `Envelope`'s rules, then the body as the request
    /// its type names, from the same parse.
    private struct Decoded: Decodable {
        let message: ClientMessage

        private enum Keys: String, CodingKey { case v, id, type, body }

        init(from decoder: any Decoder) throws {
            let envelope = try Envelope(from: decoder)
            try Envelope.check(envelope)
            let container = try decoder.container(keyedBy: Keys.self)
            let request: Result<ClientRequest, SignalingError>
            do {
                request = .success(try ClientRequest.decode(type: envelope.type, body: envelope.body, from: container, key: .body))
            } catch let error as SignalingError {
                request = .failure(error)
            }
            message = ClientMessage(id: envelope.id, type: envelope.type, request: request)
        }
    }
}

extension ClientRequest {
    /// The body under `key` as the request `type` names; fields it does not have are
    /// refused (`fields` is the body as plain JSON, to find them).
    fileprivate static func decode<Key: CodingKey>(type: String, body fields: JSONValue, from container: KeyedDecodingContainer<Key>,
                                                   key: Key) throws(SignalingError) -> ClientRequest {
        func read<Body: Codable>(_ body: Body.Type) throws(SignalingError) -> Body {
            let value: Body
            do {
                // A missing body is an empty one: the request's own fields say what is missing.
                value = try container.decodeIfPresent(Body.self, forKey: key) ?? JSONDecoder().decode(Body.self, from: Data("{}".utf8))
            } catch let error as DecodingError {
                throw SignalingError(.invalidRequest, "\(type): \(Envelope.explainBody(error))")
            } catch {
                throw SignalingError(.invalidRequest, "\(type): body is not valid")
            }
            if let unknown = Self.unknownField(in: fields, known: value) {
                throw SignalingError(.invalidRequest, "\(type): unknown field '\(unknown)'")
            }
            return value
        }
        switch type {
        case MessageType.login: return .login(try read(Request.Login.self))
        case MessageType.start: return .start(try read(Request.Start.self))
        case MessageType.response: return .response(try read(Request.Response.self))
        case MessageType.control: return .control(try read(Request.Control.self))
        case MessageType.hangup: return .hangup(try read(Request.Hangup.self))
        case MessageType.mediaStatus: return .mediaStatus(try read(Request.MediaStatus.self))
        case MessageType.candidates: return .candidates(try read(Request.Candidates.self))
        case MessageType.reserveMeeting: return .reserveMeeting(try read(Request.ReserveMeeting.self))
        case MessageType.joinMeeting: return .joinMeeting(try read(Request.JoinMeeting.self))
        case MessageType.leaveMeeting: return .leaveMeeting(try read(Request.LeaveMeeting.self))
        case MessageType.setMeetingRole: return .setMeetingRole(try read(Request.SetMeetingRole.self))
        case MessageType.setMeetingMute: return .setMeetingMute(try read(Request.SetMeetingMute.self))
        case MessageType.setVideoSize: return .setVideoSize(try read(Request.SetVideoSize.self))
        case MessageType.renegotiateMeeting: return .renegotiateMeeting(try read(Request.RenegotiateMeeting.self))
        case MessageType.switchBypassStreamingURL: return .switchBypassStreamingURL(try read(Request.SwitchBypassStreamingURL.self))
        case MessageType.setBypassStreamingEnabled: return .setBypassStreamingEnabled(try read(Request.SetBypassStreamingEnabled.self))
        case MessageType.setBypassStreamingMixMode: return .setBypassStreamingMixMode(try read(Request.SetBypassStreamingMixMode.self))
        case MessageType.rtsRequest: return .rtsRequest(try read(Request.RTSRequest.self))
        case MessageType.rtsResponse: return .rtsResponse(try read(Request.RTSResponse.self))
        case MessageType.rtsTerminate: return .rtsTerminate(try read(Request.RTSTerminate.self))
        case MessageType.rtsControl: return .rtsControl(try read(Request.RTSControl.self))
        case MessageType.reserveConference: return .reserveConference(try read(Request.ReserveConference.self))
        case MessageType.joinConference: return .joinConference(try read(Request.JoinConference.self))
        case MessageType.leaveConference: return .leaveConference(try read(Request.LeaveConference.self))
        case MessageType.rtsSync: return .rtsSync(try read(Request.RTSSync.self))
        default: throw SignalingError(.invalidRequest, "unknown request type '\(type)'")
        }
    }

    /// The first field of `fields` (dotted path) that `known`, encoded, does not have:
    /// what the request type does not define. A field sent as null counts as absent.
    static func unknownField(in fields: JSONValue, known value: some Encodable) -> String? {
        guard let data = try? JSONEncoder().encode(value), let known = try? JSONDecoder().decode(JSONValue.self, from: data) else {
            return nil
        }
        return unknownField(in: fields, known: known, path: "")
    }

    private static func unknownField(in fields: JSONValue, known: JSONValue, path: String) -> String? {
        switch (fields, known) {
        case (.object(let sent), .object(let defined)):
            for name in sent.keys.sorted() where sent[name] != .null {
                let field = path.isEmpty ? name : "\(path).\(name)"
                guard let definition = defined[name] else { return field }
                if let unknown = unknownField(in: sent[name]!, known: definition, path: field) { return unknown }
            }
            return nil
        case (.array(let sent), .array(let defined)):
            for (index, (element, definition)) in zip(sent, defined).enumerated() {
                if let unknown = unknownField(in: element, known: definition, path: "\(path)[\(index)]") { return unknown }
            }
            return nil
        default:
            return nil
        }
    }
}
