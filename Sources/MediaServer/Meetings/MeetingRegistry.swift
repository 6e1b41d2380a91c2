import Foundation
import MediaEngine
import MediaRouting
import Signaling

/// What a login token allows beyond logging in (claims the server enforces).
public struct Grants: Sendable, Hashable, Codable {
    /// Meeting names this account may reserve and join; nil: any.
    public var meetings: [String]?
    /// Whether it may send media in meetings (join or switch to actor).
    public var publish: Bool

    public init(meetings: [String]? = nil, publish: Bool = true) {
        self.meetings = meetings
        self.publish = publish
    }

    /// Everything.
    public static let all = Grants()

    func allows(meeting name: String) -> Bool { meetings?.contains(name) ?? true }
}

/// What the media plane (the SFU) must do for the meetings: legs to open and close, who
/// publishes, and what each subscriber gets. Commands of one meeting are ordered.
public enum MediaPlaneCommand: Sendable, Hashable {
    /// Opens a participant's leg: media from the address that passes a connectivity check
    /// signed for the leg's ICE credentials is unprotected with its inbound key (the
    /// participant's), what the server forwards to it is protected with its outbound key.
    case addLeg(ForwardingRouter.LegSetup)
    /// Closes a leg: nothing is forwarded from or to it any more.
    case removeLeg(UInt64)
    /// Whether the server forwards what the leg sends (actor) or drops it (audience).
    case setPublishing(leg: UInt64, Bool)
    /// Whether `subscriber` gets `publisher`'s audio and video.
    case setForwarding(subscriber: UInt64, publisher: UInt64, audio: Bool, video: Bool)
    /// The size `subscriber` shows `publisher`'s video at (`ForwardingRouter.setVideoSize`).
    case setVideoSize(subscriber: UInt64, publisher: UInt64, width: Int, height: Int)
}

/// The server's half of a leg, drawn fresh for each join by the caller of `handle`
/// (the registry itself draws nothing random). Holds keys: never print.
public struct LegCredentials: Sendable, Hashable {
    /// What the server protects the leg's downlink with; the participant's key must be of
    /// its profile.
    public var keying: SRTPKeyingMaterial
    /// The server's ICE credentials for the leg (it is ICE-lite): it answers checks signed
    /// with them.
    public var ice: ICECredentials
    /// Both halves of the composer's leg, used when this join starts a live room.
    public var composer: ComposerCredentials?
    /// What a WebRTC peer's leg is keyed with: drawn for a join with an SDP offer.
    public var webRTC: WebRTCLegCredentials?

    public init(keying: SRTPKeyingMaterial, ice: ICECredentials, composer: ComposerCredentials? = nil,
                webRTC: WebRTCLegCredentials? = nil) {
        self.keying = keying
        self.ice = ice
        self.composer = composer
        self.webRTC = webRTC
    }
}

/// The server's half of a WebRTC peer's leg: its DTLS certificate, and SSRCs for a peer
/// that sends nothing (audience), so that its leg still has numbers of its own.
public struct WebRTCLegCredentials: Sendable, Hashable {
    public var certificate: DTLSCertificate
    public var spareAudioSSRC: UInt32
    public var spareVideoSSRC: UInt32

    public init(certificate: DTLSCertificate, spareAudioSSRC: UInt32, spareVideoSSRC: UInt32) {
        self.certificate = certificate
        self.spareAudioSSRC = spareAudioSSRC
        self.spareVideoSSRC = spareVideoSSRC
    }
}

/// The keys of a live room's composer leg: the composer is the server's own hidden
/// participant, so the server draws both sides (distinct keys, as for any two legs).
public struct ComposerCredentials: Sendable, Hashable {
    /// What the composer protects its RTCP with (the leg's inbound key).
    public var composerKeying: SRTPKeyingMaterial
    /// What the server protects the forwarded media with (the leg's outbound key).
    public var serverKeying: SRTPKeyingMaterial
    /// The server's ICE credentials for the composer's leg.
    public var ice: ICECredentials

    public init(composerKeying: SRTPKeyingMaterial, serverKeying: SRTPKeyingMaterial, ice: ICECredentials) {
        self.composerKeying = composerKeying
        self.serverKeying = serverKeying
        self.ice = ice
    }
}

/// The server's meeting logic (NIM's meeting semantics), sans-I/O like `CallRegistry`:
/// reservations, joins and leaves, roles, per-subscriber mutes, timeouts, records, and
/// the commands that keep the media plane in step.
///
/// Rules:
/// - A name is reserved until everyone who joined has left; a reservation nobody joins
///   lapses after `reservationLifetime`. Reserving a name in use is `meetingExists`.
/// - An account is in at most one meeting. Joining an unreserved name is
///   `meetingNotFound`; a full meeting `meetingFull`. The audience sends nothing the
///   server forwards.
/// - A participant whose connection dropped keeps its place for `reconnectGrace` (its
///   media may still flow); one whose media leg is lost (the media plane says so) leaves
///   at once. Either way the others get `userLeft(timedOut)`.
/// - The meeting ends when its last participant leaves: its record comes out as an
///   output, and the name is free again.
///
/// Memory: one entry per meeting and per participant; `maximumMeetings` and
/// `maximumParticipants` bound them. Not thread-safe: one owner (the server's actor).
public struct MeetingRegistry: Sendable {
    public struct Configuration: Sendable, Hashable {
        public var reservationLifetime: Duration = .seconds(24 * 3_600)
        public var reconnectGrace: Duration = .seconds(30)
        public var maximumParticipants = 16
        public var maximumMeetings = 10_000

        public init() {}
    }

    public enum Output: Sendable, Hashable {
        /// Send this message on the connection (dropped if it has closed); the connection
        /// layer encodes it.
        case send(ConnectionID, ServerMessage)
        /// Store the record, then send each connection a `meetingRecord` event.
        case record(MeetingRecord, notify: [ConnectionID])
        case mediaPlane(MediaPlaneCommand)
        /// What the live plane (the composers) must do.
        case live(LiveCommand)
    }

    /// Who asks: the account and device a connection logged in as, and its grants.
    public struct Identity: Sendable, Hashable {
        public var account: String
        public var device: String
        public var grants: Grants

        public init(account: String, device: String, grants: Grants = .all) {
            self.account = account
            self.device = device
            self.grants = grants
        }
    }

    struct Member: Sendable {
        var identity: Identity
        var connection: ConnectionID?
        var disconnectedAt: Duration?
        var role: MeetingRole
        var type: CallType
        var audioSSRC: UInt32
        var videoSSRC: UInt32?
        var leg: UInt64
        /// When the current attendance stretch began.
        var since: Int64
        /// Its simulcast layers' SSRCs beyond `videoSSRC` (the first layer's).
        var layerSSRCs: [UInt32] = []
        /// Users whose audio (video) this member does not get.
        var mutedAudio: Set<String> = []
        var mutedVideo: Set<String> = []
        /// A WebRTC endpoint that joined over HTTP (WHIP, WHEP): no signaling connection.
        var webRTC: WebRTCMembership?
        /// A WebRTC peer that joined over signaling (a browser): its transport's answer.
        var browser: BrowserLeg?

        /// Whether this member gets `publisher`'s media: everyone's; for a WHIP publisher
        /// nobody's, for a WHEP viewer its one publisher's, for a browser those its
        /// receiving sections carry.
        func wants(_ publisher: Member) -> Bool {
            if let browser { return browser.receiving.values.contains(publisher.identity.account) }
            guard let webRTC else { return true }
            switch webRTC.kind {
            case .publisher: return false
            case .viewer(let account): return account == publisher.identity.account
            }
        }

        /// What this member gets of `publisher`: what it wants, less what it muted for itself.
        func forwarding(of publisher: Member) -> (audio: Bool, video: Bool) {
            let wanted = wants(publisher)
            let account = publisher.identity.account
            return (wanted && !mutedAudio.contains(account), wanted && !mutedVideo.contains(account))
        }

        var participant: MeetingParticipant {
            MeetingParticipant(account: identity.account, role: role, type: type, audioSSRC: audioSSRC, videoSSRC: videoSSRC)
        }
    }

    struct Meeting: Sendable {
        var id: UInt64
        var name: String
        var ext: String?
        var reservedBy: String
        /// While nobody has joined: when the reservation lapses.
        var expiresAt: Duration?
        var expiresAtEpoch: Int64
        var members: [String: Member] = [:]
        var attendance: [MeetingRecord.Attendance] = []
        var startedAt: Int64?
        /// Set once a host joined with a push URL: the meeting is a live room.
        var live: LiveRoom?
    }

    public let configuration: Configuration
    /// Where participants send media: the server's UDP address(es), once bound, with the
    /// media port (the first forwarding worker's).
    public var mediaCandidates: [MediaCandidate] = []
    /// Each forwarding worker's port, the first being the media port (empty: one worker).
    public var mediaPorts: [Int] = []
    /// Whether a live plane runs the composers; without one, live joins and controls are
    /// refused (`serverUnavailable`).
    public var liveRoomsAvailable = false
    var meetings: [UInt64: Meeting] = [:]
    var byName: [String: UInt64] = [:]
    /// The meeting each account is in.
    var accountMeeting: [String: UInt64] = [:]
    var lastID: UInt64 = 0
    var lastLeg: UInt64 = 0

    public init(configuration: Configuration = Configuration()) {
        self.configuration = configuration
    }

    /// Meetings reserved or running.
    public var meetingCount: Int { meetings.count }
    /// Participants in all meetings.
    public var participantCount: Int { meetings.values.reduce(0) { $0 + $1.members.count } }

    /// The earliest deadline, when `tick` should next run.
    public var nextDeadline: Duration? {
        var earliest: Duration?
        for meeting in meetings.values {
            for deadline in [meeting.expiresAt] + meeting.members.values.map({ $0.disconnectedAt.map { $0 + configuration.reconnectGrace } }) {
                guard let deadline else { continue }
                earliest = min(earliest ?? deadline, deadline)
            }
        }
        return earliest
    }

    /// The meeting and account a leg belongs to.
    public func owner(ofLeg leg: UInt64) -> (meeting: UInt64, account: String)? {
        for meeting in meetings.values {
            if let member = meeting.members.values.first(where: { $0.leg == leg }) { return (meeting.id, member.identity.account) }
        }
        return nil
    }

    // MARK: Requests

    /// Handles one meeting request of a logged-in connection.
    ///
    /// - Parameters:
    ///   - request: What the client asks, decoded at the edge.
    ///   - credentials: The server's half of a new leg (used by a join only).
    ///   - assignedID: The ID a reservation gives its meeting, when a cluster drew it from
    ///     the nodes' shared sequence; nil: the registry numbers it.
    /// - Returns: The reply (first) and what it caused, in order. Failures are `error`
    ///   replies: the connection stays up.
    public mutating func handle(_ request: MeetingRequest, from connection: ConnectionID, _ identity: Identity, requestID: UInt64,
                                credentials: LegCredentials, assignedID: UInt64? = nil, at time: ServerTime) -> [Output] {
        do throws(SignalingError) {
            switch request {
            case .reserve(let body):
                return try reserve(identity, connection, requestID, body, assignedID, time)
            case .join(let body):
                return try join(identity, connection, requestID, body, credentials, time)
            case .leave(let body):
                _ = try member(identity, of: body.callID, in: request.type)
                return [Self.okReply(connection, requestID, .empty)] + leave(identity.account, of: body.callID, reason: .left, at: time)
            case .setRole(let body):
                return try setRole(identity, connection, requestID, body, time)
            case .setMute(let body):
                return try setMute(identity, connection, requestID, body)
            case .setVideoSize(let body):
                return try setVideoSize(identity, connection, requestID, body)
            case .renegotiate(let body):
                return try renegotiate(identity, connection, requestID, body)
            case .switchBypassStreamingURL, .setBypassStreamingEnabled, .setBypassStreamingMixMode:
                return try handleLive(identity, connection, requestID, request)
            }
        } catch {
            return [.send(connection, .error(id: requestID, error))]
        }
    }

    static func okReply(_ connection: ConnectionID, _ requestID: UInt64, _ reply: ServerReply) -> Output {
        .send(connection, .reply(id: requestID, reply))
    }

    static func checkName(_ name: String, in request: String) throws(SignalingError) {
        guard !name.isEmpty, name.utf8.count <= 128 else {
            throw SignalingError(.invalidRequest, "\(request): the meeting name must be 1 to 128 bytes")
        }
    }

    static func checkExt(_ ext: String?, in request: String) throws(SignalingError) {
        guard (ext?.utf8.count ?? 0) <= 4_096 else { throw SignalingError(.invalidRequest, "\(request): ext is longer than 4096 bytes") }
    }

    private mutating func reserve(_ identity: Identity, _ connection: ConnectionID, _ requestID: UInt64,
                                  _ request: Request.ReserveMeeting, _ assigned: UInt64?, _ time: ServerTime) throws(SignalingError) -> [Output] {
        try Self.checkName(request.name, in: "reserveMeeting")
        try Self.checkExt(request.ext, in: "reserveMeeting")
        guard identity.grants.allows(meeting: request.name) else {
            throw SignalingError(.forbidden, "reserveMeeting: your token does not grant meeting '\(request.name)'")
        }
        guard byName[request.name] == nil else {
            throw SignalingError(.meetingExists, "reserveMeeting: '\(request.name)' is in use")
        }
        guard meetings.count < configuration.maximumMeetings else {
            throw SignalingError(.tooManyMeetings, "reserveMeeting: the server holds its maximum of \(configuration.maximumMeetings) meetings")
        }
        let id = nextID(assigned: assigned, at: time)
        let lifetime = configuration.reservationLifetime
        let expiresAtEpoch = time.epochMilliseconds + Int64(lifetime / .milliseconds(1))
        meetings[id] = Meeting(id: id, name: request.name, ext: request.ext, reservedBy: identity.account,
                               expiresAt: time.monotonic + lifetime, expiresAtEpoch: expiresAtEpoch)
        byName[request.name] = id
        return [Self.okReply(connection, requestID, .reserveMeeting(Reply.ReserveMeeting(name: request.name, expiresAt: expiresAtEpoch)))]
    }

    private mutating func join(_ identity: Identity, _ connection: ConnectionID, _ requestID: UInt64, _ request: Request.JoinMeeting,
                               _ credentials: LegCredentials, _ time: ServerTime) throws(SignalingError) -> [Output] {
        try Self.checkName(request.name, in: "joinMeeting")
        try Self.checkExt(request.ext, in: "joinMeeting")
        if let offer = request.sdp {
            guard request.media == nil else {
                throw SignalingError(.invalidRequest, "joinMeeting: send media (an SDES endpoint) or sdp (a WebRTC offer), not both")
            }
            return try joinBrowser(identity, connection, requestID, request, offer: offer, credentials, time)
        }
        guard let media = request.media else {
            throw SignalingError(.invalidRequest, "joinMeeting: media (an SDES endpoint) or sdp (a WebRTC offer) is required")
        }
        let (id, admitted) = try admit(identity, to: request.name, role: request.role, in: "joinMeeting")
        var meeting = admitted
        let profile = credentials.keying.profile
        guard media.candidates.count <= 16, media.srtpKey.utf8.count <= 128, media.srtpProfile == profile.rawValue,
              media.iceUfrag.utf8.count <= 256, media.icePassword.utf8.count <= 256 else {
            throw SignalingError(.invalidRequest, "joinMeeting: media must use \(profile.rawValue) with a key of at most 128 bytes and ICE credentials of at most 256")
        }
        // Parsed here, where the participant hears of a bad key, not in the media plane
        // (where a leg that cannot open would only time out).
        let keying: SRTPKeyingMaterial
        do {
            keying = try SRTPKeyingMaterial(profile: profile, base64: media.srtpKey)
        } catch {
            throw SignalingError(.invalidRequest, "joinMeeting: media.srtpKey: \(error.message)")
        }
        guard (request.type == .video) == (media.videoSSRC != nil) else {
            throw SignalingError(.invalidRequest, "joinMeeting: a video participant needs a video SSRC, an audio one none")
        }
        if let rtx = media.rtxPayloadType, !(96...127).contains(rtx) || rtx == 96 || rtx == 111 {
            throw SignalingError(.invalidRequest, "joinMeeting: media.rtxPayloadType \(rtx) must be a dynamic payload type (96...127) other than VP8's 96 and Opus's 111")
        }
        let layers = try Self.videoLayers(of: media, in: "joinMeeting")
        let layerSSRCs = layers.dropFirst().map(\.ssrc)
        try checkSSRCs(audio: media.audioSSRC, video: media.videoSSRC, layers: layerSSRCs, in: meeting, request: "joinMeeting")
        try admitLive(meeting, identity, request)
        lastLeg += 1
        var member = Member(identity: identity, connection: connection, role: request.role, type: request.type,
                            audioSSRC: media.audioSSRC, videoSSRC: media.videoSSRC, leg: lastLeg, since: time.epochMilliseconds)
        member.layerSSRCs = layerSSRCs
        let others = meeting.members.values.sorted { $0.identity.account < $1.identity.account }
        meeting.members[identity.account] = member
        meeting.expiresAt = nil
        meeting.startedAt = meeting.startedAt ?? time.epochMilliseconds
        meetings[id] = meeting
        accountMeeting[identity.account] = id

        let server = MediaEndpoint(candidates: mediaCandidates(forLeg: lastLeg), srtpProfile: profile.rawValue,
                                   srtpKey: credentials.keying.base64, audioSSRC: 0, videoSSRC: nil,
                                   iceUfrag: credentials.ice.ufrag, icePassword: credentials.ice.password)
        var outputs = [Self.okReply(connection, requestID, .joinMeeting(Reply.JoinMeeting(callID: id, participants: others.map(\.participant), media: server)))]
        var setup = ForwardingRouter.LegSetup(
            id: member.leg, meeting: id, account: identity.account, publishing: request.role == .actor, audioSSRC: media.audioSSRC,
            videoSSRC: media.videoSSRC, inboundKeying: keying, outboundKeying: credentials.keying, ice: credentials.ice)
        setup.media.videoRTXPayloadType = media.rtxPayloadType
        setup.videoLayers = layers
        outputs.append(.mediaPlane(.addLeg(setup)))
        outputs += joined(member, others: others, in: id)
        return outputs + liveJoined(id, member, request, credentials)
    }

    /// Where leg `leg`'s participant sends media: the media candidates with the port of the
    /// forwarding worker that owns the leg.
    public func mediaCandidates(forLeg leg: UInt64) -> [MediaCandidate] {
        guard mediaPorts.count > 1 else { return mediaCandidates }
        let port = mediaPorts[ForwardingServer.worker(forLeg: leg, of: mediaPorts.count)]
        return mediaCandidates.map { $0.port == mediaPorts[0] ? MediaCandidate(host: $0.host, port: port) : $0 }
    }

    /// The leg the next join gets.
    public var nextLeg: UInt64 { lastLeg + 1 }

    /// Who may join `name` as `role`: the token grants it, the meeting is reserved, the
    /// account is in no meeting, and there is room.
    func admit(_ identity: Identity, to name: String, role: MeetingRole, in request: String) throws(SignalingError) -> (UInt64, Meeting) {
        guard identity.grants.allows(meeting: name) else {
            throw SignalingError(.forbidden, "\(request): your token does not grant meeting '\(name)'")
        }
        guard role == .audience || identity.grants.publish else {
            throw SignalingError(.forbidden, "\(request): your token does not grant publishing; join as audience")
        }
        guard let id = byName[name], let meeting = meetings[id] else {
            throw SignalingError(.meetingNotFound, "\(request): no meeting '\(name)' is reserved")
        }
        if let current = accountMeeting[identity.account] {
            throw SignalingError(.alreadyInMeeting, "\(request): \(identity.account) is already in meeting \(meetings[current]?.name ?? "?")")
        }
        guard meeting.members.count < configuration.maximumParticipants else {
            throw SignalingError(.meetingFull, "\(request): '\(name)' holds its maximum of \(configuration.maximumParticipants) participants")
        }
        return (id, meeting)
    }

    /// The SSRCs a member's streams go out with: its audio and video, and the RTX stream the
    /// server gives its video for subscribers that take one (`RTXStream.ssrc(forVideo:)`);
    /// and its simulcast layers' beyond the first.
    static func streamSSRCs(audio: UInt32, video: UInt32?, layers: [UInt32] = []) -> [UInt32] {
        [audio] + (video.map { [$0, RTXStream.ssrc(forVideo: $0)] } ?? []) + layers
    }

    /// A joiner's simulcast layers, checked: two or three, lowest first and each larger
    /// than the one before, the first under the video SSRC. None for a single stream.
    static func videoLayers(of media: MediaEndpoint, in request: String) throws(SignalingError) -> [ForwardingRouter.LegSetup.VideoLayer] {
        guard let layers = media.videoLayers else { return [] }
        let maximum = ForwardingRouter.LegSetup.maximumVideoLayers
        guard (2...maximum).contains(layers.count), let video = media.videoSSRC, layers[0].ssrc == video else {
            throw SignalingError(.invalidRequest, "\(request): media.videoLayers must list 2 to \(maximum) layers, the first under the video SSRC")
        }
        for (index, layer) in layers.enumerated() {
            let previous = index > 0 ? layers[index - 1] : nil
            guard (16...16_384).contains(layer.width), (16...16_384).contains(layer.height),
                  previous.map({ layer.width > $0.width && layer.height > $0.height }) ?? true else {
                throw SignalingError(.invalidRequest, "\(request): media.videoLayers[\(index)] is \(layer.width)x\(layer.height); sizes are 16...16384 each way and grow from layer to layer")
            }
        }
        return layers
    }

    /// A joiner's SSRCs (its video's RTX SSRC and its simulcast layers' included) are
    /// distinct, not 0, and nobody else's in the meeting.
    func checkSSRCs(audio: UInt32, video: UInt32?, layers: [UInt32] = [], in meeting: Meeting, request: String) throws(SignalingError) {
        let ours = Self.streamSSRCs(audio: audio, video: video, layers: layers)
        guard Set(ours).isDisjoint(with: liveSSRCs(of: meeting)) else {
            throw SignalingError(.invalidRequest, "\(request): an SSRC of yours is the live composer's; draw new ones")
        }
        for other in meeting.members.values
        where !Set(ours).isDisjoint(with: Self.streamSSRCs(audio: other.audioSSRC, video: other.videoSSRC, layers: other.layerSSRCs)) {
            throw SignalingError(.invalidRequest, "\(request): an SSRC of yours is \(other.identity.account)'s; draw new ones")
        }
        guard Set(ours).count == ours.count, !ours.contains(0) else {
            throw SignalingError(.invalidRequest, "\(request): SSRCs must be distinct and not 0")
        }
    }

    /// A member just joined: the media plane forwards between it and the others as each
    /// wants (WebRTC endpoints over HTTP get only what they asked for), and the others
    /// hear of it.
    func joined(_ member: Member, others: [Member], in id: UInt64) -> [Output] {
        var outputs: [Output] = []
        for other in others {
            if other.wants(member) {
                outputs.append(.mediaPlane(.setForwarding(subscriber: other.leg, publisher: member.leg, audio: true, video: true)))
            }
            if member.wants(other) {
                outputs.append(.mediaPlane(.setForwarding(subscriber: member.leg, publisher: other.leg, audio: true, video: true)))
            }
            outputs += send(other, .userJoined(Event.UserJoined(callID: id, participant: member.participant)))
        }
        return outputs
    }

    private mutating func setRole(_ identity: Identity, _ connection: ConnectionID, _ requestID: UInt64,
                                  _ request: Request.SetMeetingRole, _ time: ServerTime) throws(SignalingError) -> [Output] {
        var member = try member(identity, of: request.callID, in: "setMeetingRole")
        guard request.role == .audience || identity.grants.publish else {
            throw SignalingError(.forbidden, "setMeetingRole: your token does not grant publishing")
        }
        guard request.role == .actor || meetings[request.callID]?.live == nil else {
            throw SignalingError(.liveRoomRole, "setMeetingRole: hosts and co-hosts of a live room are actors")
        }
        if request.role == .actor, member.role == .audience, member.browser != nil {
            throw SignalingError(.invalidRequest, "setMeetingRole: a WebRTC participant that joined as audience sends nothing; join again as an actor to publish")
        }
        var outputs = [Self.okReply(connection, requestID, .empty)]
        guard member.role != request.role, var meeting = meetings[request.callID] else { return outputs }
        meeting.attendance.append(MeetingRecord.Attendance(account: member.identity.account, device: member.identity.device, role: member.role,
                                                           joinedAt: member.since, leftAt: time.epochMilliseconds, reason: nil))
        member.role = request.role
        member.since = time.epochMilliseconds
        meeting.members[member.identity.account] = member
        meetings[request.callID] = meeting
        outputs.append(.mediaPlane(.setPublishing(leg: member.leg, request.role == .actor)))
        for other in meeting.members.values.sorted(by: { $0.identity.account < $1.identity.account }) where other.leg != member.leg {
            outputs += send(other, .meetingRoleChanged(Event.MeetingRoleChanged(callID: request.callID, account: member.identity.account, role: request.role)))
        }
        return outputs
    }

    private mutating func setMute(_ identity: Identity, _ connection: ConnectionID, _ requestID: UInt64,
                                  _ request: Request.SetMeetingMute) throws(SignalingError) -> [Output] {
        var member = try member(identity, of: request.callID, in: "setMeetingMute")
        guard var meeting = meetings[request.callID], let publisher = meeting.members[request.user], request.user != identity.account else {
            throw SignalingError(.notInMeeting, "setMeetingMute: \(request.user) is not another participant of meeting \(request.callID)")
        }
        if let audio = request.audio {
            if audio { member.mutedAudio.insert(request.user) } else { member.mutedAudio.remove(request.user) }
        }
        if let video = request.video {
            if video { member.mutedVideo.insert(request.user) } else { member.mutedVideo.remove(request.user) }
        }
        meeting.members[identity.account] = member
        meetings[request.callID] = meeting
        let forwarding = member.forwarding(of: publisher)
        return [Self.okReply(connection, requestID, .empty),
                .mediaPlane(.setForwarding(subscriber: member.leg, publisher: publisher.leg, audio: forwarding.audio, video: forwarding.video))]
    }

    /// A size is a view's: up to 16384 pixels each way (0×0: hidden).
    static let videoSizes = 0...16_384

    private func setVideoSize(_ identity: Identity, _ connection: ConnectionID, _ requestID: UInt64,
                              _ request: Request.SetVideoSize) throws(SignalingError) -> [Output] {
        let member = try member(identity, of: request.callID, in: "setVideoSize")
        guard let publisher = meetings[request.callID]?.members[request.user], request.user != identity.account else {
            throw SignalingError(.notInMeeting, "setVideoSize: \(request.user) is not another participant of meeting \(request.callID)")
        }
        guard Self.videoSizes.contains(request.width), Self.videoSizes.contains(request.height) else {
            throw SignalingError(.invalidRequest, "setVideoSize: \(request.width)x\(request.height) is not a size (each side 0...\(Self.videoSizes.upperBound))")
        }
        return [Self.okReply(connection, requestID, .empty),
                .mediaPlane(.setVideoSize(subscriber: member.leg, publisher: publisher.leg, width: request.width, height: request.height))]
    }

    /// The member `identity` is in meeting `id`, from this device.
    func member(_ identity: Identity, of id: UInt64, in request: String) throws(SignalingError) -> Member {
        guard let meeting = meetings[id] else {
            throw SignalingError(.meetingNotFound, "\(request): meeting \(id) does not exist or has ended")
        }
        guard let member = meeting.members[identity.account], member.identity.device == identity.device else {
            throw SignalingError(.notInMeeting, "\(request): this device is not in meeting \(id)")
        }
        return member
    }

    // MARK: Connections, legs and time

    /// A logged-in connection of `identity` (a reconnect): a member of a meeting whose
    /// connection had dropped gets this one.
    /// - Returns: The meeting it is in, if any.
    public mutating func connected(_ connection: ConnectionID, _ identity: Identity) -> UInt64? {
        guard let id = accountMeeting[identity.account], var meeting = meetings[id],
              var member = meeting.members[identity.account], member.identity.device == identity.device,
              member.webRTC == nil else { return nil }
        member.connection = connection
        member.disconnectedAt = nil
        meeting.members[identity.account] = member
        meetings[id] = meeting
        return id
    }

    /// A connection closed: its member keeps its place for `reconnectGrace`.
    public mutating func disconnected(_ connection: ConnectionID, at time: ServerTime) {
        for (id, var meeting) in meetings {
            guard let account = meeting.members.first(where: { $0.value.connection == connection })?.key else { continue }
            meeting.members[account]?.connection = nil
            meeting.members[account]?.disconnectedAt = time.monotonic
            meetings[id] = meeting
        }
    }

    /// The media plane lost a leg (no checks or media for its timeout): its participant
    /// leaves as timed out.
    public mutating func legLost(_ leg: UInt64, at time: ServerTime) -> [Output] {
        guard let (id, account) = owner(ofLeg: leg) else { return [] }
        return leave(account, of: id, reason: .timedOut, at: time)
    }

    /// Tells a publisher which of its simulcast layers to send: our client and the web client
    /// (which sets its encodings active or not); a WHIP/WHEP endpoint has no channel for it.
    public func videoLayers(_ active: [Bool], ofLeg leg: UInt64) -> [Output] {
        guard let (id, account) = owner(ofLeg: leg), let member = meetings[id]?.members[account], member.webRTC == nil else { return [] }
        return send(member, .videoLayers(Event.VideoLayers(callID: id, active: active)))
    }

    /// Sends a meeting's members the server's speaking report.
    public func speaking(_ levels: [String: Double], in id: UInt64) -> [Output] {
        guard let meeting = meetings[id] else { return [] }
        let event = Event.SpeakingUsers(callID: id, levels: levels)
        return meeting.members.values.sorted { $0.identity.account < $1.identity.account }.flatMap { send($0, .speakingUsers(event)) }
    }

    /// Lapses unjoined reservations and removes members that did not reconnect in time.
    public mutating func tick(at time: ServerTime) -> [Output] {
        var outputs: [Output] = []
        for id in meetings.keys.sorted() {
            guard let meeting = meetings[id] else { continue }
            if let expiry = meeting.expiresAt, expiry <= time.monotonic {
                meetings[id] = nil
                byName[meeting.name] = nil
                continue
            }
            for account in meeting.members.keys.sorted() {
                guard let gone = meeting.members[account]?.disconnectedAt, gone + configuration.reconnectGrace <= time.monotonic else { continue }
                outputs += leave(account, of: id, reason: .timedOut, at: time)
            }
        }
        return outputs
    }

    /// Ends every meeting for a graceful shutdown: each participant gets `meetingError`,
    /// and the records come out as outputs.
    public mutating func shutdown(at time: ServerTime) -> [Output] {
        var outputs: [Output] = []
        let error = SignalingError(.serverUnavailable, "the server is stopping")
        for id in meetings.keys.sorted() {
            guard let meeting = meetings[id] else { continue }
            for member in meeting.members.values.sorted(by: { $0.identity.account < $1.identity.account }) {
                outputs += send(member, .meetingError(Event.MeetingError(callID: id, error: error)))
            }
            for account in meeting.members.keys.sorted() {
                outputs += leave(account, of: id, reason: .kicked, at: time, tellOthers: false)
            }
            if meetings[id] != nil {
                meetings[id] = nil
                byName[meeting.name] = nil
            }
        }
        return outputs
    }

    // MARK: Helpers

    func send(_ member: Member, _ event: PushedEvent) -> [Output] {
        guard let connection = member.connection else { return [] }
        return [.send(connection, .event(event))]
    }

    /// Same scheme as call IDs (milliseconds << 10 plus a counter), from its own counter;
    /// `assigned` instead when given (a node of a cluster takes IDs from the shared ones).
    mutating func nextID(assigned: UInt64?, at time: ServerTime) -> UInt64 {
        if let assigned { return assigned }
        lastID = max(lastID + 1, UInt64(max(0, time.epochMilliseconds)) << 10 | 0x200)
        return lastID
    }

    /// Removes a member: the media plane closes its leg, the others hear `userLeft`, and the
    /// last one out ends the meeting (its record comes out).
    mutating func leave(_ account: String, of id: UInt64, reason: MeetingLeaveReason, at time: ServerTime,
                        tellOthers: Bool = true) -> [Output] {
        guard var meeting = meetings[id], let member = meeting.members.removeValue(forKey: account) else { return [] }
        accountMeeting[account] = nil
        meeting.attendance.append(MeetingRecord.Attendance(account: account, device: member.identity.device, role: member.role,
                                                           joinedAt: member.since, leftAt: time.epochMilliseconds, reason: reason))
        meetings[id] = meeting
        var outputs: [Output] = [.mediaPlane(.removeLeg(member.leg))] + liveLeft(account, of: id)
        meeting = meetings[id] ?? meeting
        if tellOthers {
            let event = Event.UserLeft(callID: id, account: account, reason: reason)
            for other in meeting.members.values.sorted(by: { $0.identity.account < $1.identity.account }) {
                outputs += send(other, .userLeft(event))
            }
        }
        guard meeting.members.isEmpty else {
            meetings[id] = meeting
            return outputs
        }
        meetings[id] = nil
        byName[meeting.name] = nil
        let record = MeetingRecord(callID: id, name: meeting.name, reservedBy: meeting.reservedBy,
                                   startedAt: meeting.startedAt ?? time.epochMilliseconds, endedAt: time.epochMilliseconds,
                                   attendance: meeting.attendance)
        outputs.append(.record(record, notify: member.connection.map { [$0] } ?? []))
        return outputs
    }
}
