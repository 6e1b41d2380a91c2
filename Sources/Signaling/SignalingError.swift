/// A typed signaling failure, sent to peers as `{ "code": ..., "message": ... }`.
///
/// Codes are stable numbers; the message names the problem and never contains tokens
/// or keys.
public struct SignalingError: Error, Sendable, Hashable, CustomStringConvertible {
    /// A stable numeric code. New codes may be added without breaking callers.
    public struct Code: Hashable, Sendable, CustomStringConvertible {
        /// The number carried on the wire.
        public let rawValue: Int
        /// Wraps a number from the wire, known here or not.
        public init(rawValue: Int) { self.rawValue = rawValue }
        private init(_ rawValue: Int) { self.rawValue = rawValue }

        /// The message is not JSON or not a valid envelope.
        public static let malformedMessage = Code(400)
        /// The message exceeds the size limit.
        public static let messageTooLarge = Code(413)
        /// The envelope's version is not spoken here.
        public static let unsupportedVersion = Code(426)
        /// The sender exceeded its message rate.
        public static let rateLimited = Code(429)
        /// No valid login: missing, forged or expired token, or a request before `login`.
        public static let unauthorized = Code(401)
        /// The request concerns a call this device is not part of.
        public static let forbidden = Code(403)
        /// No such call (unknown or already ended).
        public static let callNotFound = Code(404)
        /// No reply came in time.
        public static let requestTimeout = Code(408)
        /// The request id was already used on this connection.
        public static let duplicateRequest = Code(409)
        /// A well-formed envelope whose body or type is not a valid request.
        public static let invalidRequest = Code(422)
        /// The server is shutting down or failed internally.
        public static let serverUnavailable = Code(503)
        /// The request belongs on another server of the cluster: the one the error's
        /// `location` names (HTTP's 421 Misdirected Request).
        public static let misdirected = Code(421)
        /// The caller or callee is in another call (NIM 10012).
        public static let busy = Code(10_012)
        /// Another device of the account already answered (NIM 10013).
        public static let handledElsewhere = Code(10_013)
        /// The callee has no device online (NIM 11001).
        public static let calleeOffline = Code(11_001)

        // Meetings (this project's numbers; NIM's 417 for a name in use).

        /// The meeting name is already reserved (NIM 417, "already exists").
        public static let meetingExists = Code(417)
        /// No meeting of that name is reserved, or the meeting ID is unknown.
        public static let meetingNotFound = Code(9_102)
        /// This account is already in the meeting (or another one).
        public static let alreadyInMeeting = Code(9_103)
        /// The request concerns a meeting this device is not in, or a user who is not in it.
        public static let notInMeeting = Code(9_104)
        /// The meeting holds its maximum of participants.
        public static let meetingFull = Code(9_105)
        /// The server holds its maximum of meetings.
        public static let tooManyMeetings = Code(9_106)

        // Live rooms (NIM's live-room join errors 10030-10034, its live status 508 and
        // bypass errors 20202-20205).

        /// A co-host joined a live room whose host is not in it (NIM 10030).
        public static let liveRoomHostAbsent = Code(10_030)
        /// A second participant gave a push URL: the room has its host (NIM 10031).
        public static let liveRoomHasHost = Code(10_031)
        /// Bypass streaming on one side only: a plain join of a live room, or a bypass join
        /// of a running plain meeting (NIM 10032).
        public static let liveRoomMismatch = Code(10_032)
        /// Hosts and co-hosts are actors; the audience of a live room is its player (NIM 10033).
        public static let liveRoomRole = Code(10_033)
        /// Only the host controls the push (NIM 10034).
        public static let liveRoomNotHost = Code(10_034)
        /// The live room holds its host and three co-hosts (NIM live status 508).
        public static let liveUserCountLimit = Code(508)
        /// The push URL or its scheme is invalid (NIM 20202).
        public static let bypassInvalidURL = Code(20_202)
        /// The push target could not be reached (NIM 20203).
        public static let bypassConnectFailed = Code(20_203)
        /// The push failed while streaming (NIM 20204).
        public static let bypassPushFailed = Code(20_204)
        /// The composer or an encoder failed (NIM 20205).
        public static let bypassInternal = Code(20_205)
        /// The custom layout is invalid (NIM live status 501, layout error).
        public static let bypassLayout = Code(501)

        // Local failures: this device, not the server, with NIM's numbers.

        /// No call (or invitation, or mix task) in progress here (NIM 20001).
        public static let notStarted = Code(20_001)
        /// A local operation failed: no such device, a bad argument, a stream that
        /// would not start (NIM 20002).
        public static let operationFailed = Code(20_002)
        /// The audio device could not be opened (NIM 10015).
        public static let audioDeviceInitFailed = Code(10_015)
        /// A recording's path is unusable: its directory does not exist (NIM 10017).
        public static let recordingInvalidPath = Code(10_017)
        /// A recording could not start: already running, nothing to record, bad options (NIM 10018).
        public static let recordingStartFailed = Code(10_018)
        /// A recording's file could not be created (NIM 10019).
        public static let recordingCreateFileFailed = Code(10_019)
        /// A recording could not be stopped: none runs, or closing failed (NIM 10023).
        public static let recordingStopFailed = Code(10_023)
        /// Writing a recording failed (NIM 10024).
        public static let recordingWriteFailed = Code(10_024)
        /// The disk filled up under a recording (NIM 10025).
        public static let recordingDiskNearlyFull = Code(10_025)
        /// The peer did not answer connectivity checks in time (NIM 10029).
        public static let connectTimeout = Code(10_029)
        /// Not connected to the signaling server (NIM 20409).
        public static let serverDisconnected = Code(20_409)

        /// Whether the failure is this device's own (no message went to the server).
        public var isLocal: Bool { [10_015, 10_029, 20_001, 20_002, 20_409].contains(rawValue) || (10_017...10_025).contains(rawValue) }

        public var description: String {
            switch rawValue {
            case 400: "malformed message"
            case 413: "message too large"
            case 426: "unsupported version"
            case 429: "rate limited"
            case 401: "unauthorized"
            case 403: "forbidden"
            case 404: "call not found"
            case 408: "request timeout"
            case 409: "duplicate request"
            case 422: "invalid request"
            case 503: "server unavailable"
            case 421: "misdirected"
            case 10_012: "busy"
            case 10_013: "handled elsewhere"
            case 11_001: "callee offline"
            case 417: "meeting exists"
            case 9_102: "meeting not found"
            case 9_103: "already in meeting"
            case 9_104: "not in meeting"
            case 9_105: "meeting full"
            case 9_106: "too many meetings"
            case 9_201: "session not found"
            case 9_202: "not a member"
            case 9_203: "session not accepted"
            case 9_204: "too slow"
            case 9_205: "session full"
            case 9_206: "already joined"
            case 10_030: "live room: host absent"
            case 10_031: "live room: has a host"
            case 10_032: "live room: bypass mismatch"
            case 10_033: "live room: role"
            case 10_034: "live room: not the host"
            case 508: "live room: user count limit"
            case 20_202: "bypass: invalid URL"
            case 20_203: "bypass: connect failed"
            case 20_204: "bypass: push failed"
            case 20_205: "bypass: internal error"
            case 501: "bypass: layout error"
            case 20_001: "not started"
            case 20_002: "operation failed"
            case 10_015: "audio device init failed"
            case 10_017: "recording: invalid path"
            case 10_018: "recording: start failed"
            case 10_019: "recording: cannot create file"
            case 10_023: "recording: stop failed"
            case 10_024: "recording: write failed"
            case 10_025: "recording: disk nearly full"
            case 10_029: "connect timeout"
            case 20_409: "server disconnected"
            default: "error \(rawValue)"
            }
        }
    }

    public let code: Code
    public let message: String
    /// Where to go instead, for `misdirected`: a URL.
    public let location: String?

    public init(_ code: Code, _ message: String, location: String? = nil) {
        self.code = code
        self.message = message
        self.location = location
    }

    public var description: String { "\(code) (\(code.rawValue)): \(message)" }
}
