import MediaEngine
import MediaRouting
import Signaling

/// A meeting member that is a WebRTC endpoint joined over HTTP (WHIP or WHEP): it has no
/// signaling connection; its resource (`session`) ends it, or its leg's loss.
struct WebRTCMembership: Sendable, Hashable {
    enum Kind: Sendable, Hashable {
        /// WHIP: an actor that sends and gets nothing.
        case publisher
        /// WHEP: audience that gets one participant's audio and video.
        case viewer(of: String)
    }

    var session: String
    var kind: Kind
}

extension MeetingRegistry {
    /// A WebRTC endpoint joining over HTTP, once its offer was answered: what the media
    /// plane needs for its leg.
    public struct WebRTCJoin: Sendable {
        public enum Kind: Sendable, Hashable {
            /// WHIP: publishes into the meeting as an actor.
            case publisher
            /// WHEP: views one participant (by account), as audience.
            case viewer(of: String)
        }

        public var kind: Kind
        public var meeting: String
        /// The resource's ID (its URL's last part): unguessable, it names the session.
        public var session: String
        /// The SSRCs it sends with (a viewer's are drawn: it sends nothing forwarded).
        public var audioSSRC: UInt32
        public var videoSSRC: UInt32?
        /// A publisher's simulcast video by RID (`videoSSRC` is then the server's, for
        /// subscribers).
        public var videoRIDs: ForwardingRouter.LegSetup.RIDLayers?
        public var keying: ForwardingRouter.LegSetup.Keying
        public var media: ForwardingRouter.LegSetup.Media
        public var ice: ICECredentials

        public init(kind: Kind, meeting: String, session: String, audioSSRC: UInt32, videoSSRC: UInt32?,
                    keying: ForwardingRouter.LegSetup.Keying, media: ForwardingRouter.LegSetup.Media, ice: ICECredentials) {
            self.kind = kind
            self.meeting = meeting
            self.session = session
            self.audioSSRC = audioSSRC
            self.videoSSRC = videoSSRC
            self.keying = keying
            self.media = media
            self.ice = ice
        }
    }

    /// The ID of the meeting reserved under `name` here, if any.
    public func meetingID(named name: String) -> UInt64? { byName[name] }

    /// The participant a WHEP viewer asks for: its SSRCs, for the answer's tracks.
    /// - Throws: `SignalingError` (`meetingNotFound`, `notInMeeting`) when there is none.
    public func webRTCPublisher(_ account: String, in name: String) throws(SignalingError) -> MeetingParticipant {
        guard let id = byName[name], let meeting = meetings[id] else {
            throw SignalingError(.meetingNotFound, "no meeting '\(name)' is reserved")
        }
        guard let member = meeting.members[account] else {
            throw SignalingError(.notInMeeting, "meeting '\(name)' has no participant \(account)")
        }
        return member.participant
    }

    /// A WebRTC endpoint joins `join.meeting` under `identity` (its token's account): a
    /// WHIP publisher as an actor whom everyone gets, a WHEP viewer as audience getting its
    /// one participant. Members hear `userJoined` as for any join; the meeting record keeps
    /// its attendance (device `whip` or `whep`).
    /// - Returns: The meeting's ID and what follows.
    /// - Throws: `SignalingError` for the rules a signaling join follows (grants, a
    ///   reserved name, one meeting per account, room, SSRCs), and `liveRoomMismatch` for a
    ///   live room (its composer takes publishers through signaling).
    public mutating func joinWebRTC(_ join: WebRTCJoin, account: String, grants: Grants, at time: ServerTime)
        throws(SignalingError) -> (meeting: UInt64, outputs: [Output]) {
        let request = join.kind == .publisher ? "WHIP" : "WHEP"
        try Self.checkName(join.meeting, in: request)
        let identity = Identity(account: account, device: join.kind == .publisher ? "whip" : "whep", grants: grants)
        let role: MeetingRole = join.kind == .publisher ? .actor : .audience
        let (id, admitted) = try admit(identity, to: join.meeting, role: role, in: request)
        var meeting = admitted
        guard meeting.live == nil else {
            throw SignalingError(.liveRoomMismatch, "\(request): '\(join.meeting)' is a live room; its publishers join through signaling")
        }
        if case .viewer(let target) = join.kind, meeting.members[target] == nil {
            throw SignalingError(.notInMeeting, "\(request): meeting '\(join.meeting)' has no participant \(target)")
        }
        try checkSSRCs(audio: join.audioSSRC, video: join.videoSSRC, in: meeting, request: request)
        lastLeg += 1
        let kind: WebRTCMembership.Kind = switch join.kind {
        case .publisher: .publisher
        case .viewer(let target): .viewer(of: target)
        }
        var member = Member(identity: identity, connection: nil, role: role, type: join.videoSSRC == nil ? .audio : .video,
                            audioSSRC: join.audioSSRC, videoSSRC: join.videoSSRC, leg: lastLeg, since: time.epochMilliseconds)
        member.webRTC = WebRTCMembership(session: join.session, kind: kind)
        let others = meeting.members.values.sorted { $0.identity.account < $1.identity.account }
        meeting.members[account] = member
        meeting.expiresAt = nil
        meeting.startedAt = meeting.startedAt ?? time.epochMilliseconds
        meetings[id] = meeting
        accountMeeting[account] = id
        var setup = ForwardingRouter.LegSetup(
            id: member.leg, meeting: id, account: account, publishing: role == .actor, audioSSRC: join.audioSSRC,
            videoSSRC: join.videoSSRC, keying: join.keying, media: join.media, ice: join.ice)
        setup.videoRIDs = join.videoRIDs
        var outputs: [Output] = [.mediaPlane(.addLeg(setup))]
        outputs += joined(member, others: others, in: id)
        return (id, outputs)
    }

    /// Ends a WebRTC endpoint's session (HTTP `DELETE` on its resource): it leaves.
    /// - Throws: `SignalingError`: `notFound` when no session has that ID, `forbidden`
    ///   when it is another account's.
    public mutating func endWebRTC(session: String, account: String, at time: ServerTime) throws(SignalingError) -> [Output] {
        for meeting in meetings.values {
            guard let member = meeting.members.values.first(where: { $0.webRTC?.session == session }) else { continue }
            guard member.identity.account == account else {
                throw SignalingError(.forbidden, "that session is not yours")
            }
            return leave(account, of: meeting.id, reason: .left, at: time)
        }
        throw SignalingError(.callNotFound, "no session has that ID (it ended, or never began)")
    }
}
