import Foundation
import LiveStreaming
import MediaEngine
import Signaling

/// The signaling protocol as the server and clients read it: the envelope, then the body
/// its type names, then what is parsed further out of bodies (live-stream URLs, custom
/// layouts, ICE server URLs).
enum SignalingTarget {
    static let target = FuzzTarget(
        name: "signaling",
        summary: "Envelope.decode and the server's edge (ClientMessage) at its 64 KiB limit; every body type its type names; encode/decode round trips; LiveTarget, LiveLayout.custom(json:), ICEServerURL"
    ) { bytes in
        let data = Data(bytes)
        // The server's edge: a request it takes encodes to a message it takes as the same.
        if let message = try? ClientMessage.decode(data, maximumSize: maximumMessageSize), let id = message.id,
           case .success(let request) = message.request {
            let again = try? ClientMessage.decode(request.encoded(id: id), maximumSize: Int.max)
            FuzzCheck.require(again?.request == .success(request), "a \(request.type) request encodes to something the edge reads differently")
        }
        guard let envelope = try? Envelope.decode(data, maximumSize: maximumMessageSize) else { return false }
        let again = try? Envelope.decode(envelope.encoded(), maximumSize: Int.max)
        FuzzCheck.require(again == envelope, "envelope encodes to something that decodes differently")
        let type = envelope.type
        for decoder in bodies[type] ?? (type == MessageType.ok ? replies : []) {
            decoder(data, envelope)
        }
        if type == MessageType.error { roundTrip(ErrorBody.self, data, envelope) }
        return true
    }

    /// The server's `ConnectionGuard` limit: larger messages are refused before parsing.
    static let maximumMessageSize = 64 * 1_024

    typealias BodyCheck = @Sendable (Data, Envelope) -> Void

    /// Decoding a body type from the message; when it decodes, the body encodes and decodes
    /// back to itself, and `inspect` parses what the engine parses out of it.
    static func check<Body: Codable & Hashable & Sendable>(_ type: Body.Type, _ inspect: @escaping @Sendable (Body) -> Void = { _ in }) -> BodyCheck {
        { data, envelope in
            guard let body = roundTrip(type, data, envelope) else { return }
            inspect(body)
        }
    }

    @discardableResult
    static func roundTrip<Body: Codable & Hashable & Sendable>(_ type: Body.Type, _ data: Data, _ envelope: Envelope) -> Body? {
        guard let body = try? Envelope.decodeBody(type, from: data, messageType: envelope.type) else { return nil }
        let encoded = TypedEnvelope(id: envelope.id, type: envelope.type, body: body).encoded()
        let again = try? Envelope.decodeBody(type, from: encoded, messageType: envelope.type)
        FuzzCheck.require(again == body, "\(envelope.type) body \(type) encodes to something that decodes differently")
        return body
    }

    static func liveTarget(_ url: String?) {
        guard let url else { return }
        _ = try? LiveTarget(url)
    }

    static func layout(_ json: String?) {
        guard let json else { return }
        _ = try? LiveLayout.custom(json: Data(json.utf8))
    }

    /// Bodies by message type: requests the server reads and events clients read (several
    /// types name both).
    static let bodies: [String: [BodyCheck]] = [
        MessageType.login: [check(Request.Login.self)],
        MessageType.start: [check(Request.Start.self)],
        MessageType.response: [check(Request.Response.self), check(Event.Response.self)],
        MessageType.control: [check(Request.Control.self), check(Event.Control.self)],
        MessageType.hangup: [check(Request.Hangup.self), check(Event.Hangup.self)],
        MessageType.mediaStatus: [check(Request.MediaStatus.self)],
        MessageType.candidates: [check(Request.Candidates.self), check(Event.Candidates.self)],
        MessageType.receive: [check(Event.Receive.self)],
        MessageType.responsedByOther: [check(Event.ResponsedByOther.self)],
        MessageType.callRecord: [check(Event.Record.self)],
        MessageType.reserveMeeting: [check(Request.ReserveMeeting.self)],
        MessageType.joinMeeting: [check(Request.JoinMeeting.self) { request in
            liveTarget(request.bypass?.url)
            layout(request.bypass?.customLayout)
        }],
        MessageType.leaveMeeting: [check(Request.LeaveMeeting.self)],
        MessageType.setMeetingRole: [check(Request.SetMeetingRole.self)],
        MessageType.setMeetingMute: [check(Request.SetMeetingMute.self)],
        MessageType.setVideoSize: [check(Request.SetVideoSize.self)],
        MessageType.userJoined: [check(Event.UserJoined.self)],
        MessageType.userLeft: [check(Event.UserLeft.self)],
        MessageType.meetingRoleChanged: [check(Event.MeetingRoleChanged.self)],
        MessageType.meetingError: [check(Event.MeetingError.self)],
        MessageType.speakingUsers: [check(Event.SpeakingUsers.self)],
        MessageType.videoLayers: [check(Event.VideoLayers.self)],
        MessageType.meetingRecord: [check(Event.MeetingRecordEvent.self)],
        MessageType.switchBypassStreamingURL: [check(Request.SwitchBypassStreamingURL.self) { liveTarget($0.url) }],
        MessageType.setBypassStreamingEnabled: [check(Request.SetBypassStreamingEnabled.self)],
        MessageType.setBypassStreamingMixMode: [check(Request.SetBypassStreamingMixMode.self) { layout($0.customLayout) }],
        MessageType.bypassStreamingStatus: [check(Event.BypassStreamingStatus.self)],
        MessageType.bypassStreamingURLSwitched: [check(Event.BypassStreamingResult.self)],
        MessageType.bypassStreamingEnabled: [check(Event.BypassStreamingResult.self)],
    ]

    /// `ok` replies: the result body of whichever request was made.
    static let replies: [BodyCheck] = [
        check(Reply.Login.self) { reply in
            for server in reply.iceServers {
                for url in server.urls { _ = try? ICEServerURL(parsing: url) }
            }
        },
        check(Reply.Start.self),
        check(Reply.Response.self),
        check(Reply.Empty.self),
        check(Reply.ReserveMeeting.self),
        check(Reply.JoinMeeting.self),
    ]
}
