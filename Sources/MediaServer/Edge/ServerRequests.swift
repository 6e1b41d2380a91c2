import Signaling

/// A request the call registry runs.
public enum CallRequest: Sendable, Hashable {
    case start(Request.Start)
    case response(Request.Response)
    case control(Request.Control)
    case candidates(Request.Candidates)
    case hangup(Request.Hangup)
    case mediaStatus(Request.MediaStatus)

    /// The message type it travels as (error messages name it).
    public var type: String { ClientRequest(self).type }

    /// The call it names; 0 for a `start` (its call has no ID yet) or a hangup of the
    /// current call.
    public var callID: UInt64 {
        switch self {
        case .start: 0
        case .response(let request): request.callID
        case .control(let request): request.callID
        case .candidates(let request): request.callID
        case .hangup(let request): request.callID
        case .mediaStatus(let request): request.callID
        }
    }
}

/// A request the meeting registry runs, live rooms' controls included.
public enum MeetingRequest: Sendable, Hashable {
    case reserve(Request.ReserveMeeting)
    case join(Request.JoinMeeting)
    case leave(Request.LeaveMeeting)
    case setRole(Request.SetMeetingRole)
    case setMute(Request.SetMeetingMute)
    case setVideoSize(Request.SetVideoSize)
    case renegotiate(Request.RenegotiateMeeting)
    case switchBypassStreamingURL(Request.SwitchBypassStreamingURL)
    case setBypassStreamingEnabled(Request.SetBypassStreamingEnabled)
    case setBypassStreamingMixMode(Request.SetBypassStreamingMixMode)

    /// The message type it travels as (error messages name it).
    public var type: String { ClientRequest(self).type }

    /// The meeting it names, once it has one (not for a reservation or a join, which
    /// name a meeting by its name).
    public var callID: UInt64? {
        switch self {
        case .reserve, .join: nil
        case .leave(let request): request.callID
        case .setRole(let request): request.callID
        case .setMute(let request): request.callID
        case .setVideoSize(let request): request.callID
        case .renegotiate(let request): request.callID
        case .switchBypassStreamingURL(let request): request.callID
        case .setBypassStreamingEnabled(let request): request.callID
        case .setBypassStreamingMixMode(let request): request.callID
        }
    }
}

/// Where the server runs a client's request.
enum RoutedRequest: Sendable, Hashable {
    case login(Request.Login)
    case call(CallRequest)
    case meeting(MeetingRequest)
    case rts(RTSRequest)
    /// A request of the data connection, sent on the signaling one.
    case dataConnection(String)

    init(_ request: ClientRequest) {
        switch request {
        case .login(let body): self = .login(body)
        case .start(let body): self = .call(.start(body))
        case .response(let body): self = .call(.response(body))
        case .control(let body): self = .call(.control(body))
        case .candidates(let body): self = .call(.candidates(body))
        case .hangup(let body): self = .call(.hangup(body))
        case .mediaStatus(let body): self = .call(.mediaStatus(body))
        case .reserveMeeting(let body): self = .meeting(.reserve(body))
        case .joinMeeting(let body): self = .meeting(.join(body))
        case .leaveMeeting(let body): self = .meeting(.leave(body))
        case .setMeetingRole(let body): self = .meeting(.setRole(body))
        case .setMeetingMute(let body): self = .meeting(.setMute(body))
        case .setVideoSize(let body): self = .meeting(.setVideoSize(body))
        case .renegotiateMeeting(let body): self = .meeting(.renegotiate(body))
        case .switchBypassStreamingURL(let body): self = .meeting(.switchBypassStreamingURL(body))
        case .setBypassStreamingEnabled(let body): self = .meeting(.setBypassStreamingEnabled(body))
        case .setBypassStreamingMixMode(let body): self = .meeting(.setBypassStreamingMixMode(body))
        case .rtsRequest(let body): self = .rts(.request(body))
        case .rtsResponse(let body): self = .rts(.response(body))
        case .rtsTerminate(let body): self = .rts(.terminate(body))
        case .rtsControl(let body): self = .rts(.control(body))
        case .reserveConference(let body): self = .rts(.reserve(body))
        case .joinConference(let body): self = .rts(.join(body))
        case .leaveConference(let body): self = .rts(.leave(body))
        case .rtsSync: self = .dataConnection(MessageType.rtsSync)
        }
    }
}

extension ClientRequest {
    /// A call registry's request as the client sent it (to forward it to another node).
    init(_ request: CallRequest) {
        switch request {
        case .start(let body): self = .start(body)
        case .response(let body): self = .response(body)
        case .control(let body): self = .control(body)
        case .candidates(let body): self = .candidates(body)
        case .hangup(let body): self = .hangup(body)
        case .mediaStatus(let body): self = .mediaStatus(body)
        }
    }

    /// A meeting registry's request as the client sent it (to forward it to the host).
    init(_ request: MeetingRequest) {
        switch request {
        case .reserve(let body): self = .reserveMeeting(body)
        case .join(let body): self = .joinMeeting(body)
        case .leave(let body): self = .leaveMeeting(body)
        case .setRole(let body): self = .setMeetingRole(body)
        case .setMute(let body): self = .setMeetingMute(body)
        case .setVideoSize(let body): self = .setVideoSize(body)
        case .renegotiate(let body): self = .renegotiateMeeting(body)
        case .switchBypassStreamingURL(let body): self = .switchBypassStreamingURL(body)
        case .setBypassStreamingEnabled(let body): self = .setBypassStreamingEnabled(body)
        case .setBypassStreamingMixMode(let body): self = .setBypassStreamingMixMode(body)
        }
    }

    /// A real-time session request as the client sent it (to forward it to the host).
    init(_ request: RTSRequest) {
        switch request {
        case .request(let body): self = .rtsRequest(body)
        case .response(let body): self = .rtsResponse(body)
        case .terminate(let body): self = .rtsTerminate(body)
        case .control(let body): self = .rtsControl(body)
        case .reserve(let body): self = .reserveConference(body)
        case .join(let body): self = .joinConference(body)
        case .leave(let body): self = .leaveConference(body)
        }
    }
}
