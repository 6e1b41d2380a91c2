import Foundation

/// The meeting vocabulary shared by client and server (NIM's `NIMNetCallManager` meeting
/// API: reserve, join, leave, role, per-user mute), on the call protocol's envelope.

extension MessageType {
    // Requests (client -> server).
    public static let reserveMeeting = "reserveMeeting"
    public static let joinMeeting = "joinMeeting"
    public static let leaveMeeting = "leaveMeeting"
    public static let setMeetingRole = "setMeetingRole"
    /// Stop or resume forwarding one user's audio or video to this participant.
    public static let setMeetingMute = "setMeetingMute"
    /// The size this participant shows one user's video at: the server sends the simulcast
    /// layer that fits it.
    public static let setVideoSize = "setVideoSize"
    /// A WebRTC participant's new offer (its view of the meeting changed: someone joined,
    /// left or began to publish); the reply carries the answer.
    public static let renegotiateMeeting = "renegotiateMeeting"
    // Events (server -> client).
    public static let userJoined = "userJoined"
    public static let userLeft = "userLeft"
    public static let meetingRoleChanged = "meetingRoleChanged"
    public static let meetingError = "meetingError"
    public static let speakingUsers = "speakingUsers"
    /// Which of its simulcast layers a publisher should send (the server's wish: the others
    /// nobody shows that large).
    public static let videoLayers = "videoLayers"
    public static let meetingRecord = "meetingRecord"

    /// The meeting request types, which the server routes to its meeting registry.
    public static let meetingRequests: Set<String> = [reserveMeeting, joinMeeting, leaveMeeting, setMeetingRole, setMeetingMute,
                                                      setVideoSize, renegotiateMeeting]
}

/// What a participant does in a meeting (NIM's `NIMNetCallMeetingRole`).
public enum MeetingRole: String, Sendable, Hashable, Codable, CaseIterable, CustomStringConvertible {
    /// Sends and receives.
    case actor
    /// Receives only: the server forwards nothing it sends.
    case audience

    public var description: String { rawValue }
}

/// Why a participant left.
public enum MeetingLeaveReason: String, Sendable, Hashable, Codable, CaseIterable {
    /// It asked to leave.
    case left
    /// Its media and signaling went silent for longer than the server waits.
    case timedOut
    /// The server removed it (another join of the account, an operator, a shutdown).
    case kicked
}

/// One member of a meeting, as the others see it: the SSRCs its media arrives with
/// (forwarded by the server only while it is an actor).
public struct MeetingParticipant: Sendable, Hashable, Codable {
    public var account: String
    public var role: MeetingRole
    public var type: CallType
    public var audioSSRC: UInt32
    public var videoSSRC: UInt32?

    public init(account: String, role: MeetingRole, type: CallType, audioSSRC: UInt32, videoSSRC: UInt32?) {
        self.account = account
        self.role = role
        self.type = type
        self.audioSSRC = audioSSRC
        self.videoSSRC = videoSSRC
    }
}

extension Request {
    /// Reserves a meeting name until everyone who joined has left (or, if nobody joins,
    /// until the reservation expires).
    public struct ReserveMeeting: Sendable, Hashable, Codable {
        public var name: String
        /// Free text kept with the meeting.
        public var ext: String?

        public init(name: String, ext: String? = nil) {
            self.name = name
            self.ext = ext
        }
    }

    /// Joins a reserved meeting. `media` is where and how this participant's leg runs: its
    /// key (uplink), SSRCs and check token; its candidates may be empty (the server learns
    /// the address from the leg's connectivity checks). A WebRTC peer (a browser) sends
    /// `sdp`, its JSEP offer, instead: one BUNDLE transport keyed by DTLS-SRTP, its own
    /// audio and video (when it publishes) and a receiving section pair per participant.
    public struct JoinMeeting: Sendable, Hashable, Codable {
        public var name: String
        public var role: MeetingRole
        public var type: CallType
        public var videoQuality: CallVideoQuality
        public var ext: String?
        public var media: MediaEndpoint?
        /// A WebRTC peer's offer, in place of `media`.
        public var sdp: String?
        /// Joins as the host (with a URL) or a co-host of a live room.
        public var bypass: BypassStreaming?

        public init(name: String, role: MeetingRole, type: CallType, videoQuality: CallVideoQuality = .default, ext: String? = nil,
                    media: MediaEndpoint, bypass: BypassStreaming? = nil) {
            self.name = name
            self.role = role
            self.type = type
            self.videoQuality = videoQuality
            self.ext = ext
            self.media = media
            self.bypass = bypass
        }

        /// A WebRTC peer's join: its offer in place of an SDES endpoint.
        public init(name: String, role: MeetingRole, type: CallType, ext: String? = nil, sdp: String) {
            self.name = name
            self.role = role
            self.type = type
            self.videoQuality = .default
            self.ext = ext
            self.sdp = sdp
        }
    }

    /// A WebRTC participant's new offer on its one transport (same ICE credentials and
    /// fingerprint): typically a receiving section pair more, after `userJoined`.
    public struct RenegotiateMeeting: Sendable, Hashable, Codable {
        public var callID: UInt64
        public var sdp: String

        public init(callID: UInt64, sdp: String) {
            self.callID = callID
            self.sdp = sdp
        }
    }

    public struct LeaveMeeting: Sendable, Hashable, Codable {
        public var callID: UInt64

        public init(callID: UInt64) { self.callID = callID }
    }

    public struct SetMeetingRole: Sendable, Hashable, Codable {
        public var callID: UInt64
        public var role: MeetingRole

        public init(callID: UInt64, role: MeetingRole) {
            self.callID = callID
            self.role = role
        }
    }

    /// The size, in pixels, this participant shows `user`'s video at (0×0: not shown): of a
    /// simulcast video, the server sends it the smallest layer about that size (at least
    /// 90 % of it each way) or the largest there is; a single-stream video is unaffected.
    public struct SetVideoSize: Sendable, Hashable, Codable {
        public var callID: UInt64
        public var user: String
        public var width: Int
        public var height: Int

        public init(callID: UInt64, user: String, width: Int, height: Int) {
            self.callID = callID
            self.user = user
            self.width = width
            self.height = height
        }
    }

    /// Mutes (stops forwarding) or unmutes `user`'s audio and/or video for this participant
    /// only; a nil field keeps its setting.
    public struct SetMeetingMute: Sendable, Hashable, Codable {
        public var callID: UInt64
        public var user: String
        public var audio: Bool?
        public var video: Bool?

        public init(callID: UInt64, user: String, audio: Bool? = nil, video: Bool? = nil) {
            self.callID = callID
            self.user = user
            self.audio = audio
            self.video = video
        }
    }
}

extension Reply {
    public struct ReserveMeeting: Sendable, Hashable, Codable {
        public var name: String
        /// When an unjoined reservation lapses, milliseconds since 1970.
        public var expiresAt: Int64

        public init(name: String, expiresAt: Int64) {
            self.name = name
            self.expiresAt = expiresAt
        }
    }

    /// To the joining participant: the meeting's ID, who is in it (without this
    /// participant), and the server's end of this participant's leg: its UDP address, the
    /// key it protects what it forwards with, and the token its checks carry.
    /// A WebRTC participant gets `sdp`, the answer to its offer, and `receiving` in place
    /// of `media`.
    public struct JoinMeeting: Sendable, Hashable, Codable {
        public var callID: UInt64
        public var participants: [MeetingParticipant]
        public var media: MediaEndpoint?
        /// The answer to a WebRTC peer's offer.
        public var sdp: String?
        /// Whose media each of a WebRTC peer's receiving sections carries: mid to account.
        public var receiving: [String: String]?

        public init(callID: UInt64, participants: [MeetingParticipant], media: MediaEndpoint) {
            self.callID = callID
            self.participants = participants
            self.media = media
        }

        public init(callID: UInt64, participants: [MeetingParticipant], sdp: String, receiving: [String: String]) {
            self.callID = callID
            self.participants = participants
            self.sdp = sdp
            self.receiving = receiving
        }
    }

    /// The answer to a renegotiation, and whose media each receiving section carries now.
    public struct RenegotiateMeeting: Sendable, Hashable, Codable {
        public var sdp: String
        public var receiving: [String: String]

        public init(sdp: String, receiving: [String: String]) {
            self.sdp = sdp
            self.receiving = receiving
        }
    }
}

extension Event {
    public struct UserJoined: Sendable, Hashable, Codable {
        public var callID: UInt64
        public var participant: MeetingParticipant

        public init(callID: UInt64, participant: MeetingParticipant) {
            self.callID = callID
            self.participant = participant
        }
    }

    public struct UserLeft: Sendable, Hashable, Codable {
        public var callID: UInt64
        public var account: String
        public var reason: MeetingLeaveReason

        public init(callID: UInt64, account: String, reason: MeetingLeaveReason) {
            self.callID = callID
            self.account = account
            self.reason = reason
        }
    }

    public struct MeetingRoleChanged: Sendable, Hashable, Codable {
        public var callID: UInt64
        public var account: String
        public var role: MeetingRole

        public init(callID: UInt64, account: String, role: MeetingRole) {
            self.callID = callID
            self.account = account
            self.role = role
        }
    }

    /// The meeting ended for this participant without its asking: the server is stopping,
    /// or its media leg was lost.
    public struct MeetingError: Sendable, Hashable, Codable {
        public var callID: UInt64
        public var code: Int
        public var message: String

        public init(callID: UInt64, error: SignalingError) {
            self.callID = callID
            code = error.code.rawValue
            message = error.message
        }

        public var error: SignalingError { SignalingError(SignalingError.Code(rawValue: code), message) }
    }

    /// The simulcast layers (lowest first) the server wants this publisher to send now:
    /// those no subscriber can use may pause until one can, when the next wish turns them
    /// on again (each resumed layer starts with a keyframe).
    public struct VideoLayers: Sendable, Hashable, Codable {
        public var callID: UInt64
        public var active: [Bool]

        public init(callID: UInt64, active: [Bool]) {
            self.callID = callID
            self.active = active
        }
    }

    /// Who is speaking, from the RFC 6464 levels the server reads on each uplink (0...1 of
    /// full scale).
    public struct SpeakingUsers: Sendable, Hashable, Codable {
        public var callID: UInt64
        public var levels: [String: Double]

        public init(callID: UInt64, levels: [String: Double]) {
            self.callID = callID
            self.levels = levels
        }
    }

    public struct MeetingRecordEvent: Sendable, Hashable, Codable {
        public var record: MeetingRecord

        public init(record: MeetingRecord) { self.record = record }
    }
}

/// The server's record of one meeting: when it ran and who was in it, in what role.
public struct MeetingRecord: Sendable, Hashable, Codable {
    /// One stretch of one participant in one role.
    public struct Attendance: Sendable, Hashable, Codable {
        public var account: String
        public var device: String
        public var role: MeetingRole
        /// Milliseconds since 1970.
        public var joinedAt: Int64
        public var leftAt: Int64
        /// Why the stretch ended; nil when it ended because the role changed (the next
        /// stretch continues it).
        public var reason: MeetingLeaveReason?

        public init(account: String, device: String, role: MeetingRole, joinedAt: Int64, leftAt: Int64, reason: MeetingLeaveReason?) {
            self.account = account
            self.device = device
            self.role = role
            self.joinedAt = joinedAt
            self.leftAt = leftAt
            self.reason = reason
        }

        public var duration: Int64 { leftAt - joinedAt }
    }

    public var callID: UInt64
    public var name: String
    public var reservedBy: String
    /// The first join, milliseconds since 1970.
    public var startedAt: Int64
    /// The last leave.
    public var endedAt: Int64
    public var attendance: [Attendance]

    public init(callID: UInt64, name: String, reservedBy: String, startedAt: Int64, endedAt: Int64, attendance: [Attendance]) {
        self.callID = callID
        self.name = name
        self.reservedBy = reservedBy
        self.startedAt = startedAt
        self.endedAt = endedAt
        self.attendance = attendance
    }

    /// From the first join to the last leave, milliseconds.
    public var duration: Int64 { endedAt - startedAt }
}
