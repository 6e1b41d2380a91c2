import Foundation

/// Everything the server sends a client, typed until the connection encodes it: the
/// server's registries return these, and only the connection layer (or the node bus,
/// for a client on another node) turns them into bytes.
public enum ServerMessage: Sendable, Hashable {
    /// A request's success, with its result.
    case reply(id: UInt64, ServerReply)
    /// A request's failure; no ID when the message had none usable.
    case error(id: UInt64?, SignalingError)
    /// Something that happened, pushed unasked.
    case event(PushedEvent)

    /// The message as it goes on the wire.
    public func encoded() -> Data {
        switch self {
        case .reply(let id, let reply): reply.encoded(id: id)
        case .error(let id, let error): TypedEnvelope(id: id, type: MessageType.error, body: ErrorBody(error)).encoded()
        case .event(let event): event.encoded()
        }
    }
}

/// The result of a request that succeeded (an `ok` message's body).
public enum ServerReply: Sendable, Hashable {
    case login(Reply.Login)
    case start(Reply.Start)
    case response(Reply.Response)
    case reserveMeeting(Reply.ReserveMeeting)
    case joinMeeting(Reply.JoinMeeting)
    case renegotiateMeeting(Reply.RenegotiateMeeting)
    case rtsRequest(Reply.RTSRequest)
    case rtsResponse(Reply.RTSResponse)
    case joinConference(Reply.JoinConference)
    case rtsLogin(Reply.RTSLogin)
    /// For requests whose success says it all.
    case empty

    func encoded(id: UInt64) -> Data {
        switch self {
        case .login(let body): TypedEnvelope(id: id, type: MessageType.ok, body: body).encoded()
        case .start(let body): TypedEnvelope(id: id, type: MessageType.ok, body: body).encoded()
        case .response(let body): TypedEnvelope(id: id, type: MessageType.ok, body: body).encoded()
        case .reserveMeeting(let body): TypedEnvelope(id: id, type: MessageType.ok, body: body).encoded()
        case .joinMeeting(let body): TypedEnvelope(id: id, type: MessageType.ok, body: body).encoded()
        case .renegotiateMeeting(let body): TypedEnvelope(id: id, type: MessageType.ok, body: body).encoded()
        case .rtsRequest(let body): TypedEnvelope(id: id, type: MessageType.ok, body: body).encoded()
        case .rtsResponse(let body): TypedEnvelope(id: id, type: MessageType.ok, body: body).encoded()
        case .joinConference(let body): TypedEnvelope(id: id, type: MessageType.ok, body: body).encoded()
        case .rtsLogin(let body): TypedEnvelope(id: id, type: MessageType.ok, body: body).encoded()
        case .empty: TypedEnvelope(id: id, type: MessageType.ok, body: Reply.Empty()).encoded()
        }
    }
}

/// An event the server pushes, with its body.
public enum PushedEvent: Sendable, Hashable {
    case receive(Event.Receive)
    case response(Event.Response)
    case responsedByOther(Event.ResponsedByOther)
    case candidates(Event.Candidates)
    case control(Event.Control)
    case hangup(Event.Hangup)
    case callRecord(Event.Record)
    case userJoined(Event.UserJoined)
    case userLeft(Event.UserLeft)
    case meetingRoleChanged(Event.MeetingRoleChanged)
    case meetingError(Event.MeetingError)
    case speakingUsers(Event.SpeakingUsers)
    case videoLayers(Event.VideoLayers)
    case meetingRecord(Event.MeetingRecordEvent)
    case bypassStreamingStatus(Event.BypassStreamingStatus)
    case bypassStreamingURLSwitched(Event.BypassStreamingResult)
    case bypassStreamingEnabled(Event.BypassStreamingResult)
    case rtsReceive(Event.RTSReceive)
    case rtsResponse(Event.RTSResponse)
    case rtsResponsedByOther(Event.RTSResponsedByOther)
    case rtsTerminate(Event.RTSTerminate)
    case rtsControl(Event.RTSControl)
    case rtsUserJoined(Event.RTSUserJoined)
    case rtsUserLeft(Event.RTSUserLeft)
    case rtsLeftConference(Event.RTSLeftConference)
    case rtsDataRefused(Event.RTSDataRefused)

    /// The message type it travels as.
    public var type: String {
        switch self {
        case .receive: MessageType.receive
        case .response: MessageType.response
        case .responsedByOther: MessageType.responsedByOther
        case .candidates: MessageType.candidates
        case .control: MessageType.control
        case .hangup: MessageType.hangup
        case .callRecord: MessageType.callRecord
        case .userJoined: MessageType.userJoined
        case .userLeft: MessageType.userLeft
        case .meetingRoleChanged: MessageType.meetingRoleChanged
        case .meetingError: MessageType.meetingError
        case .speakingUsers: MessageType.speakingUsers
        case .videoLayers: MessageType.videoLayers
        case .meetingRecord: MessageType.meetingRecord
        case .bypassStreamingStatus: MessageType.bypassStreamingStatus
        case .bypassStreamingURLSwitched: MessageType.bypassStreamingURLSwitched
        case .bypassStreamingEnabled: MessageType.bypassStreamingEnabled
        case .rtsReceive: MessageType.rtsReceive
        case .rtsResponse: MessageType.rtsResponse
        case .rtsResponsedByOther: MessageType.rtsResponsedByOther
        case .rtsTerminate: MessageType.rtsTerminate
        case .rtsControl: MessageType.rtsControl
        case .rtsUserJoined: MessageType.rtsUserJoined
        case .rtsUserLeft: MessageType.rtsUserLeft
        case .rtsLeftConference: MessageType.rtsLeftConference
        case .rtsDataRefused: MessageType.rtsDataRefused
        }
    }

    public func encoded() -> Data {
        switch self {
        case .receive(let body): TypedEnvelope(id: nil, type: type, body: body).encoded()
        case .response(let body): TypedEnvelope(id: nil, type: type, body: body).encoded()
        case .responsedByOther(let body): TypedEnvelope(id: nil, type: type, body: body).encoded()
        case .candidates(let body): TypedEnvelope(id: nil, type: type, body: body).encoded()
        case .control(let body): TypedEnvelope(id: nil, type: type, body: body).encoded()
        case .hangup(let body): TypedEnvelope(id: nil, type: type, body: body).encoded()
        case .callRecord(let body): TypedEnvelope(id: nil, type: type, body: body).encoded()
        case .userJoined(let body): TypedEnvelope(id: nil, type: type, body: body).encoded()
        case .userLeft(let body): TypedEnvelope(id: nil, type: type, body: body).encoded()
        case .meetingRoleChanged(let body): TypedEnvelope(id: nil, type: type, body: body).encoded()
        case .meetingError(let body): TypedEnvelope(id: nil, type: type, body: body).encoded()
        case .speakingUsers(let body): TypedEnvelope(id: nil, type: type, body: body).encoded()
        case .videoLayers(let body): TypedEnvelope(id: nil, type: type, body: body).encoded()
        case .meetingRecord(let body): TypedEnvelope(id: nil, type: type, body: body).encoded()
        case .bypassStreamingStatus(let body): TypedEnvelope(id: nil, type: type, body: body).encoded()
        case .bypassStreamingURLSwitched(let body): TypedEnvelope(id: nil, type: type, body: body).encoded()
        case .bypassStreamingEnabled(let body): TypedEnvelope(id: nil, type: type, body: body).encoded()
        case .rtsReceive(let body): TypedEnvelope(id: nil, type: type, body: body).encoded()
        case .rtsResponse(let body): TypedEnvelope(id: nil, type: type, body: body).encoded()
        case .rtsResponsedByOther(let body): TypedEnvelope(id: nil, type: type, body: body).encoded()
        case .rtsTerminate(let body): TypedEnvelope(id: nil, type: type, body: body).encoded()
        case .rtsControl(let body): TypedEnvelope(id: nil, type: type, body: body).encoded()
        case .rtsUserJoined(let body): TypedEnvelope(id: nil, type: type, body: body).encoded()
        case .rtsUserLeft(let body): TypedEnvelope(id: nil, type: type, body: body).encoded()
        case .rtsLeftConference(let body): TypedEnvelope(id: nil, type: type, body: body).encoded()
        case .rtsDataRefused(let body): TypedEnvelope(id: nil, type: type, body: body).encoded()
        }
    }
}
