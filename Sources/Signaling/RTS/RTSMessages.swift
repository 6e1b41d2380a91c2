import Foundation

/// The real-time session vocabulary (NIM's `NIMRTSManager` and `NIMRTSConferenceManager`):
/// point-to-point sessions (request, response, control, terminate) and named conferences
/// (reserve, join, leave), on the call protocol's envelope.
///
/// Signaling requests go on the signaling connection. Data goes on a second connection, the
/// data connection (`/rts`), as binary frames (`RTSFrame`); the events that must stay in
/// order with the data (a member joined or left, a session answered or ended) come on it too,
/// as text envelopes, so that a member never sees a leave before the data sent before it.

extension MessageType {
    // Requests (client -> server), on the signaling connection.
    public static let rtsRequest = "rtsRequest"
    public static let rtsResponse = "rtsResponse"
    public static let rtsTerminate = "rtsTerminate"
    public static let rtsControl = "rtsControl"
    public static let reserveConference = "reserveConference"
    public static let joinConference = "joinConference"
    public static let leaveConference = "leaveConference"
    // Requests on the data connection: `login`, then `rtsSync` (answered once every frame
    // sent before it was relayed).
    public static let rtsSync = "rtsSync"
    // Events (server -> client). `rtsResponse`, `rtsTerminate` and `rtsControl` are also events.
    public static let rtsReceive = "rtsReceive"
    public static let rtsResponsedByOther = "rtsResponsedByOther"
    public static let rtsUserJoined = "rtsUserJoined"
    public static let rtsUserLeft = "rtsUserLeft"
    public static let rtsLeftConference = "rtsLeftConference"
    /// On the data connection: messages the server did not relay (too large, too fast, not a
    /// member), by their numbers on the connection.
    public static let rtsDataRefused = "rtsDataRefused"
}

/// What a real-time session carries (NIM's `NIMRTSService`).
public enum RTSService: String, Sendable, Hashable, Codable, CaseIterable, CustomStringConvertible {
    /// The reliable, ordered data channel the server relays.
    case data
    /// A voice channel: the P2P audio path of calls. One per account, exclusive with calls.
    case audio

    public var description: String { rawValue }
}

/// What one member may send on the data channel; the server enforces it and the client
/// paces itself by it.
public struct RTSQuota: Sendable, Hashable, Codable {
    /// Largest message (NIM: 50 KB).
    public var maximumMessageSize: Int
    /// Bytes a member may send per second, averaged over a second.
    public var bytesPerSecond: Int
    /// Messages a member may send per second, averaged over a second.
    public var messagesPerSecond: Int

    public init(maximumMessageSize: Int = 50 * 1_024, bytesPerSecond: Int = 4 * 1_048_576, messagesPerSecond: Int = 1_000) {
        self.maximumMessageSize = maximumMessageSize
        self.bytesPerSecond = bytesPerSecond
        self.messagesPerSecond = messagesPerSecond
    }
}

/// How a point-to-point session ended.
public enum RTSEndReason: String, Sendable, Hashable, Codable, CaseIterable {
    /// Accepted, then terminated by a member.
    case completed
    /// The callee declined.
    case rejected
    /// Nobody answered in time.
    case missed
    /// The caller terminated before an answer.
    case cancelled
    /// A member's connection went, it could not keep up, or the server shut down.
    case failed
}

/// Why a member left a conference.
public enum RTSLeaveReason: String, Sendable, Hashable, Codable, CaseIterable {
    /// It asked to.
    case left
    /// Its connection closed.
    case disconnected
    /// It did not read what it was sent fast enough.
    case tooSlow
    /// The server removed it (a shutdown).
    case kicked
}

extension Request {
    /// Asks `callee` for a session (`requestRTS`).
    public struct RTSRequest: Sendable, Hashable, Codable {
        public var callee: String
        public var services: [RTSService]
        /// Free text delivered with the request.
        public var extendMessage: String?
        /// Whether the server records nobody's data in this session.
        public var disableRecord: Bool?
        /// The caller's audio endpoint, with `.audio`.
        public var media: MediaEndpoint?

        public init(callee: String, services: [RTSService], extendMessage: String? = nil, disableRecord: Bool? = nil,
                    media: MediaEndpoint? = nil) {
            self.callee = callee
            self.services = services
            self.extendMessage = extendMessage
            self.disableRecord = disableRecord
            self.media = media
        }
    }

    /// The callee's answer (`responseRTS`).
    public struct RTSResponse: Sendable, Hashable, Codable {
        public var sessionID: String
        public var accept: Bool
        /// Whether the server leaves this member's data unrecorded.
        public var disableRecord: Bool?
        /// The callee's audio endpoint, when the session has `.audio` and it accepts.
        public var media: MediaEndpoint?

        public init(sessionID: String, accept: Bool, disableRecord: Bool? = nil, media: MediaEndpoint? = nil) {
            self.sessionID = sessionID
            self.accept = accept
            self.disableRecord = disableRecord
            self.media = media
        }
    }

    /// Ends a session (`terminateRTS`).
    public struct RTSTerminate: Sendable, Hashable, Codable {
        public var sessionID: String

        public init(sessionID: String) { self.sessionID = sessionID }
    }

    /// Free-form control text to the other member (`sendRTSControl`).
    public struct RTSControl: Sendable, Hashable, Codable {
        public var sessionID: String
        public var control: String

        public init(sessionID: String, control: String) {
            self.sessionID = sessionID
            self.control = control
        }
    }

    /// Reserves a conference name until everyone who joined has left.
    public struct ReserveConference: Sendable, Hashable, Codable {
        public var name: String
        public var ext: String?

        public init(name: String, ext: String? = nil) {
            self.name = name
            self.ext = ext
        }
    }

    /// Joins a reserved conference.
    public struct JoinConference: Sendable, Hashable, Codable {
        public var name: String
        /// Whether the server leaves this member's data unrecorded.
        public var disableRecord: Bool?

        public init(name: String, disableRecord: Bool? = nil) {
            self.name = name
            self.disableRecord = disableRecord
        }
    }

    public struct LeaveConference: Sendable, Hashable, Codable {
        public var channelID: UInt64

        public init(channelID: UInt64) { self.channelID = channelID }
    }

    /// On the data connection: answered once every frame sent before it was relayed.
    public struct RTSSync: Sendable, Hashable, Codable {
        public init() {}
    }
}

extension Reply {
    /// A session requested: its IDs, and this member's recording file (none when recording
    /// is off for it).
    public struct RTSRequest: Sendable, Hashable, Codable {
        public var sessionID: String
        public var channelID: UInt64
        public var recordFile: String?
        public var quota: RTSQuota

        public init(sessionID: String, channelID: UInt64, recordFile: String?, quota: RTSQuota) {
            self.sessionID = sessionID
            self.channelID = channelID
            self.recordFile = recordFile
            self.quota = quota
        }
    }

    /// A session answered: this member's recording file, and the caller's audio endpoint.
    public struct RTSResponse: Sendable, Hashable, Codable {
        public var channelID: UInt64
        public var recordFile: String?
        public var quota: RTSQuota
        public var media: MediaEndpoint?

        public init(channelID: UInt64, recordFile: String?, quota: RTSQuota, media: MediaEndpoint? = nil) {
            self.channelID = channelID
            self.recordFile = recordFile
            self.quota = quota
            self.media = media
        }
    }

    public struct JoinConference: Sendable, Hashable, Codable {
        public var name: String
        public var channelID: UInt64
        public var recordFile: String?
        /// The accounts in the conference before this one, in the order they joined.
        public var members: [String]
        public var quota: RTSQuota

        public init(name: String, channelID: UInt64, recordFile: String?, members: [String], quota: RTSQuota) {
            self.name = name
            self.channelID = channelID
            self.recordFile = recordFile
            self.members = members
            self.quota = quota
        }
    }

    /// The data connection's login: who it is, and its quota.
    public struct RTSLogin: Sendable, Hashable, Codable {
        public var account: String
        public var device: String
        public var quota: RTSQuota

        public init(account: String, device: String, quota: RTSQuota) {
            self.account = account
            self.device = device
            self.quota = quota
        }
    }
}

extension Event {
    /// A session request, to every online device of the callee.
    public struct RTSReceive: Sendable, Hashable, Codable {
        public var sessionID: String
        public var channelID: UInt64
        public var from: String
        public var services: [RTSService]
        public var extendMessage: String?
        public var media: MediaEndpoint?

        public init(sessionID: String, channelID: UInt64, from: String, services: [RTSService], extendMessage: String?,
                    media: MediaEndpoint? = nil) {
            self.sessionID = sessionID
            self.channelID = channelID
            self.from = from
            self.services = services
            self.extendMessage = extendMessage
            self.media = media
        }
    }

    /// The callee's answer, to the caller (on the data connection, in order with the data).
    public struct RTSResponse: Sendable, Hashable, Codable {
        public var sessionID: String
        public var channelID: UInt64
        public var from: String
        public var accepted: Bool
        public var media: MediaEndpoint?

        public init(sessionID: String, channelID: UInt64, from: String, accepted: Bool, media: MediaEndpoint? = nil) {
            self.sessionID = sessionID
            self.channelID = channelID
            self.from = from
            self.accepted = accepted
            self.media = media
        }
    }

    /// Another device of this account answered the request.
    public struct RTSResponsedByOther: Sendable, Hashable, Codable {
        public var sessionID: String
        public var accepted: Bool

        public init(sessionID: String, accepted: Bool) {
            self.sessionID = sessionID
            self.accepted = accepted
        }
    }

    /// The session ended: terminated by `by`, or by the server (`by` nil) for `reason`.
    public struct RTSTerminate: Sendable, Hashable, Codable {
        public var sessionID: String
        public var channelID: UInt64
        public var by: String?
        public var reason: RTSEndReason

        public init(sessionID: String, channelID: UInt64, by: String?, reason: RTSEndReason) {
            self.sessionID = sessionID
            self.channelID = channelID
            self.by = by
            self.reason = reason
        }
    }

    public struct RTSControl: Sendable, Hashable, Codable {
        public var sessionID: String
        public var from: String
        public var control: String

        public init(sessionID: String, from: String, control: String) {
            self.sessionID = sessionID
            self.from = from
            self.control = control
        }
    }

    public struct RTSUserJoined: Sendable, Hashable, Codable {
        public var channelID: UInt64
        public var name: String
        public var account: String

        public init(channelID: UInt64, name: String, account: String) {
            self.channelID = channelID
            self.name = name
            self.account = account
        }
    }

    public struct RTSUserLeft: Sendable, Hashable, Codable {
        public var channelID: UInt64
        public var name: String
        public var account: String
        public var reason: RTSLeaveReason

        public init(channelID: UInt64, name: String, account: String, reason: RTSLeaveReason) {
            self.channelID = channelID
            self.name = name
            self.account = account
            self.reason = reason
        }
    }

    /// This member is out of the conference without asking (`onLeftConference(error)`).
    public struct RTSLeftConference: Sendable, Hashable, Codable {
        public var channelID: UInt64
        public var name: String
        public var code: Int
        public var message: String

        public init(channelID: UInt64, name: String, error: SignalingError) {
            self.channelID = channelID
            self.name = name
            code = error.code.rawValue
            message = error.message
        }

        public var error: SignalingError { SignalingError(SignalingError.Code(rawValue: code), message) }
    }

    /// Data messages the server did not relay: `count` of the numbers `first` to `last` on
    /// this data connection (counted from 1; all of them when `count` is the range's size),
    /// for one reason. Refusals of one reason are reported together, at most ten times a
    /// second, so a flood gets a few reports, never one per message.
    public struct RTSDataRefused: Sendable, Hashable, Codable {
        public var first: UInt64
        public var last: UInt64
        public var count: Int
        public var code: Int
        public var message: String

        public init(first: UInt64, last: UInt64, count: Int, error: SignalingError) {
            self.first = first
            self.last = last
            self.count = count
            code = error.code.rawValue
            message = error.message
        }

        public var error: SignalingError { SignalingError(SignalingError.Code(rawValue: code), message) }
    }
}

extension SignalingError.Code {
    // Real-time sessions (this project's numbers; NIM's 417 for a name in use, 10012 busy,
    // 10013 handled elsewhere, 413 too large and 429 too fast as elsewhere).

    /// No such session or conference (ended, or never was).
    public static let rtsNotFound = SignalingError.Code(rawValue: 9_201)
    /// The sender, or the member it names, is not in the session or conference.
    public static let rtsNotMember = SignalingError.Code(rawValue: 9_202)
    /// The session is not answered yet: no data before the callee accepts, and a callee
    /// responds before it terminates.
    public static let rtsNotAccepted = SignalingError.Code(rawValue: 9_203)
    /// The member did not read its data fast enough and was disconnected.
    public static let rtsTooSlow = SignalingError.Code(rawValue: 9_204)
    /// The conference holds its maximum of members, or the server its maximum of sessions.
    public static let rtsFull = SignalingError.Code(rawValue: 9_205)
    /// This account is already in the conference.
    public static let rtsAlreadyJoined = SignalingError.Code(rawValue: 9_206)
}

/// What the server stores of a session or conference once it ends.
public struct RTSRecord: Sendable, Hashable, Codable {
    public enum Kind: String, Sendable, Hashable, Codable {
        case session
        case conference
    }

    /// One member's time in it.
    public struct Member: Sendable, Hashable, Codable {
        public var account: String
        public var device: String
        /// Milliseconds since 1970.
        public var joinedAt: Int64
        public var leftAt: Int64
        public var reason: RTSLeaveReason
        /// The member's recording, when the server kept one.
        public var recordFile: String?

        public init(account: String, device: String, joinedAt: Int64, leftAt: Int64, reason: RTSLeaveReason, recordFile: String?) {
            self.account = account
            self.device = device
            self.joinedAt = joinedAt
            self.leftAt = leftAt
            self.reason = reason
            self.recordFile = recordFile
        }
    }

    public var channelID: UInt64
    public var kind: Kind
    /// The session's ID or the conference's name.
    public var name: String
    /// The caller, or the account that reserved the conference.
    public var createdBy: String
    public var services: [RTSService]
    /// Milliseconds since 1970: the request, or the first join.
    public var startedAt: Int64
    public var endedAt: Int64
    /// How a session ended; a conference ends `completed` when its last member left.
    public var endReason: RTSEndReason
    /// Every member, in the order they joined (a session's callee only once it accepted).
    public var members: [Member]

    public init(channelID: UInt64, kind: Kind, name: String, createdBy: String, services: [RTSService], startedAt: Int64,
                endedAt: Int64, endReason: RTSEndReason, members: [Member]) {
        self.channelID = channelID
        self.kind = kind
        self.name = name
        self.createdBy = createdBy
        self.services = services
        self.startedAt = startedAt
        self.endedAt = endedAt
        self.endReason = endReason
        self.members = members
    }
}

extension RTSRecord {
    /// Services as a store keeps them: "data,audio".
    public static func servicesText(_ services: [RTSService]) -> String { services.map(\.rawValue).joined(separator: ",") }

    /// Services from a store's text; names this version does not know are skipped.
    public static func services(_ text: String) -> [RTSService] {
        text.split(separator: ",").compactMap { RTSService(rawValue: String($0)) }
    }
}
