import Foundation

/// Message types and bodies of the call protocol (DESIGN.md section 6).
///
/// Requests carry an envelope `id` and get exactly one reply with the same id: type `ok`
/// with the request's result body, or type `error` with a `SignalingError` body. Events
/// (pushed by the server) carry no id.
public enum MessageType {
    // Requests (client -> server).
    public static let login = "login"
    public static let start = "start"
    public static let response = "response"
    public static let control = "control"
    public static let hangup = "hangup"
    /// The client reports media connected or lost.
    public static let mediaStatus = "mediaStatus"
    /// ICE candidates a side found after its `start` or `response` (trickle); also an event.
    public static let candidates = "candidates"
    // Replies.
    public static let ok = "ok"
    public static let error = "error"
    // Events (server -> client). `response`, `control` and `hangup` are also event types.
    public static let receive = "receive"
    public static let responsedByOther = "responsedByOther"
    public static let callRecord = "callRecord"
}

/// Request bodies.
public enum Request {
    /// First message on a connection: a JWT from `mediaengine token` or an app server.
    /// `device` names this device of the account (one account may log in on several);
    /// logging in again with the same device replaces the old connection (a reconnect).
    public struct Login: Sendable, Hashable, Codable {
        public var token: String
        public var device: String

        public init(token: String, device: String) {
            self.token = token
            self.device = device
        }
    }

    /// Calls `callee`. A WebRTC peer (a browser) sends `sdp`, its JSEP offer with its
    /// candidates; our clients send `media` (an SDES endpoint) and, for callees that are
    /// WebRTC peers, `sdp` as well (same ICE credentials, candidates and SSRCs). The callee's
    /// devices get the offer in the invitation; each accepts in its kind (`media` or `sdp`).
    public struct Start: Sendable, Hashable, Codable {
        public var callee: String
        public var type: CallType
        public var option: CallOption
        public var media: MediaEndpoint?
        /// A WebRTC caller's offer, in place of `media`.
        public var sdp: String?

        public init(callee: String, type: CallType, option: CallOption = CallOption(), media: MediaEndpoint, sdp: String? = nil) {
            self.callee = callee
            self.type = type
            self.option = option
            self.media = media
            self.sdp = sdp
        }

        public init(callee: String, type: CallType, option: CallOption = CallOption(), sdp: String) {
            self.callee = callee
            self.type = type
            self.option = option
            self.sdp = sdp
        }
    }

    /// The callee's answer; accepting needs `media`, or for a WebRTC caller's offer `sdp`,
    /// the answer to it.
    public struct Response: Sendable, Hashable, Codable {
        public var callID: UInt64
        public var accept: Bool
        public var media: MediaEndpoint?
        /// The answer to a WebRTC caller's offer.
        public var sdp: String?

        public init(callID: UInt64, accept: Bool, media: MediaEndpoint?, sdp: String? = nil) {
            self.callID = callID
            self.accept = accept
            self.media = media
            self.sdp = sdp
        }
    }

    /// More of this side's ICE candidates (trickle, RFC 8838); `complete`: it has no more.
    /// The server passes them to the other side of the call (before an answer, to every
    /// device that rings).
    public struct Candidates: Sendable, Hashable, Codable {
        public var callID: UInt64
        public var candidates: [MediaCandidate]
        public var complete: Bool

        public init(callID: UInt64, candidates: [MediaCandidate], complete: Bool) {
            self.callID = callID
            self.candidates = candidates
            self.complete = complete
        }
    }

    public struct Control: Sendable, Hashable, Codable {
        public var callID: UInt64
        public var control: CallControl

        public init(callID: UInt64, control: CallControl) {
            self.callID = callID
            self.control = control
        }
    }

    /// Ends a call. `callID` 0 ends this device's call whatever its ID (one whose `start`
    /// reply has not come back yet).
    public struct Hangup: Sendable, Hashable, Codable {
        public var callID: UInt64

        public init(callID: UInt64) { self.callID = callID }
    }

    public struct MediaStatus: Sendable, Hashable, Codable {
        public var callID: UInt64
        public var connected: Bool

        public init(callID: UInt64, connected: Bool) {
            self.callID = callID
            self.connected = connected
        }
    }
}

/// Bodies of `ok` replies.
public enum Reply {
    public struct Login: Sendable, Hashable, Codable {
        public var account: String
        public var device: String
        /// Calls this device was in when it reconnected (their IDs).
        public var activeCalls: [UInt64]
        /// The server's UDP echo port for net-detect, when it runs one.
        public var echoPort: Int?
        /// What this device gathers ICE candidates with: a `stun:` entry per address of the
        /// server's media port (it answers binding requests), and a `turn:` entry with
        /// credentials for this account when the server has a TURN server. Holds a
        /// credential: never log it (`ICEServer` redacts it). Empty in replies of servers
        /// that predate it.
        public var iceServers: [ICEServer]

        public init(account: String, device: String, activeCalls: [UInt64], echoPort: Int? = nil, iceServers: [ICEServer] = []) {
            self.account = account
            self.device = device
            self.activeCalls = activeCalls
            self.echoPort = echoPort
            self.iceServers = iceServers
        }

        /// Decodes a reply; a missing `iceServers` (an older server) is none.
        public init(from decoder: any Decoder) throws {
            let container = try decoder.container(keyedBy: CodingKeys.self)
            account = try container.decode(String.self, forKey: .account)
            device = try container.decode(String.self, forKey: .device)
            activeCalls = try container.decode([UInt64].self, forKey: .activeCalls)
            echoPort = try container.decodeIfPresent(Int.self, forKey: .echoPort)
            iceServers = try container.decodeIfPresent([ICEServer].self, forKey: .iceServers) ?? []
        }
    }

    public struct Start: Sendable, Hashable, Codable {
        public var callID: UInt64

        public init(callID: UInt64) { self.callID = callID }
    }

    /// To the accepting device: where the caller receives media.
    public struct Response: Sendable, Hashable, Codable {
        public var media: MediaEndpoint?

        public init(media: MediaEndpoint?) { self.media = media }
    }

    /// For requests whose success says it all.
    public struct Empty: Sendable, Hashable, Codable {
        public init() {}
    }
}

/// Bodies of events.
public enum Event {
    /// An invitation, to every online device of the callee.
    public struct Receive: Sendable, Hashable, Codable {
        public var callID: UInt64
        public var from: String
        public var type: CallType
        public var option: CallOption
        /// The caller's JSEP offer: a WebRTC device accepts by answering it
        /// (`Request.Response.sdp`).
        public var sdp: String?
        /// Whether the caller also offered an SDES endpoint (it is one of our clients, which
        /// offer both): our clients accept with theirs, as between themselves.
        public var sdes: Bool?

        public init(callID: UInt64, from: String, type: CallType, option: CallOption, sdp: String? = nil, sdes: Bool? = nil) {
            self.callID = callID
            self.from = from
            self.type = type
            self.option = option
            self.sdp = sdp
            self.sdes = sdes
        }
    }

    /// The callee's answer, to the caller; with the callee's media when accepted.
    public struct Response: Sendable, Hashable, Codable {
        public var callID: UInt64
        public var from: String
        public var accepted: Bool
        public var media: MediaEndpoint?
        /// The callee's answer to a WebRTC caller's offer.
        public var sdp: String?

        public init(callID: UInt64, from: String, accepted: Bool, media: MediaEndpoint?, sdp: String? = nil) {
            self.callID = callID
            self.from = from
            self.accepted = accepted
            self.media = media
            self.sdp = sdp
        }
    }

    /// Another device of this account answered the invitation.
    public struct ResponsedByOther: Sendable, Hashable, Codable {
        public var callID: UInt64
        public var accepted: Bool

        public init(callID: UInt64, accepted: Bool) {
            self.callID = callID
            self.accepted = accepted
        }
    }

    /// The other side's trickled ICE candidates.
    public struct Candidates: Sendable, Hashable, Codable {
        public var callID: UInt64
        public var from: String
        public var candidates: [MediaCandidate]
        public var complete: Bool

        public init(callID: UInt64, from: String, candidates: [MediaCandidate], complete: Bool) {
            self.callID = callID
            self.from = from
            self.candidates = candidates
            self.complete = complete
        }
    }

    public struct Control: Sendable, Hashable, Codable {
        public var callID: UInt64
        public var from: String
        public var control: CallControl

        public init(callID: UInt64, from: String, control: CallControl) {
            self.callID = callID
            self.from = from
            self.control = control
        }
    }

    /// The call ended: hung up by `by` (an account), or by the server (`by` nil) for `reason`.
    public struct Hangup: Sendable, Hashable, Codable {
        public var callID: UInt64
        public var by: String?
        public var reason: CallEndReason

        public init(callID: UInt64, by: String?, reason: CallEndReason) {
            self.callID = callID
            self.by = by
            self.reason = reason
        }
    }

    public struct Record: Sendable, Hashable, Codable {
        public var record: CallRecord

        public init(record: CallRecord) { self.record = record }
    }
}

/// The wire form of an `error` reply body.
public struct ErrorBody: Sendable, Hashable, Codable {
    public var code: Int
    public var message: String
    /// Where to go instead (`misdirected`).
    public var location: String?

    public init(_ error: SignalingError) {
        code = error.code.rawValue
        message = error.message
        location = error.location
    }

    public var error: SignalingError { SignalingError(SignalingError.Code(rawValue: code), message, location: location) }
}

/// One message with a typed body, for encoding (the envelope's fields, in order).
public struct TypedEnvelope<Body: Encodable & Sendable>: Encodable, Sendable {
    public var v = Envelope.version
    public var id: UInt64?
    public var type: String
    public var body: Body

    public init(id: UInt64?, type: String, body: Body) {
        self.id = id
        self.type = type
        self.body = body
    }

    /// Compact JSON. Bodies here hold strings, integers and booleans only, which always encode.
    public func encoded() -> Data {
        (try? JSONEncoder().encode(self)) ?? Data()
    }
}

extension Envelope {
    private struct BodyOnly<Body: Decodable>: Decodable {
        var body: Body
    }

    /// Decodes the body of a message already accepted by `decode(_:maximumSize:)` as `Body`,
    /// from the original bytes (so 64-bit integers keep every digit).
    ///
    /// - Throws: `SignalingError` `.invalidRequest` naming the field that is missing or wrong.
    public static func decodeBody<Body: Decodable>(_ type: Body.Type, from data: Data, messageType: String)
        throws(SignalingError) -> Body {
        do {
            return try JSONDecoder().decode(BodyOnly<Body>.self, from: data).body
        } catch let error as DecodingError {
            throw SignalingError(.invalidRequest, "\(messageType): \(explainBody(error))")
        } catch {
            throw SignalingError(.invalidRequest, "\(messageType): body is not valid")
        }
    }

    static func explainBody(_ error: DecodingError) -> String {
        func path(_ context: DecodingError.Context) -> String {
            context.codingPath.dropFirst().map(\.stringValue).joined(separator: ".")
        }
        return switch error {
        case .keyNotFound(let key, let context):
            "missing field '\((context.codingPath.dropFirst().map(\.stringValue) + [key.stringValue]).joined(separator: "."))'"
        case .typeMismatch(_, let context), .valueNotFound(_, let context): "field '\(path(context))' has the wrong type"
        case .dataCorrupted(let context): "field '\(path(context))' has an invalid value"
        @unknown default: "body is not valid"
        }
    }
}
