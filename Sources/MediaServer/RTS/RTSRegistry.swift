import Foundation
import Signaling

/// A request the real-time session registry runs.
public enum RTSRequest: Sendable, Hashable {
    case request(Request.RTSRequest)
    case response(Request.RTSResponse)
    case terminate(Request.RTSTerminate)
    case control(Request.RTSControl)
    case reserve(Request.ReserveConference)
    case join(Request.JoinConference)
    case leave(Request.LeaveConference)

    /// The message type it travels as (error messages name it).
    public var type: String {
        switch self {
        case .request: MessageType.rtsRequest
        case .response: MessageType.rtsResponse
        case .terminate: MessageType.rtsTerminate
        case .control: MessageType.rtsControl
        case .reserve: MessageType.reserveConference
        case .join: MessageType.joinConference
        case .leave: MessageType.leaveConference
        }
    }
}

/// What the data relay must know of a channel's members (`RTSRelay`). Commands of one
/// channel are ordered; each `announce` goes to the channel's members on their data
/// connections after everything relayed to them before the command.
public enum RTSRelayCommand: Sendable, Hashable {
    /// A channel starts: its recording timestamps count from now. `pending` is a session's
    /// callee while it has not answered (data for it is refused as not accepted yet).
    case open(channelID: UInt64, pending: String?)
    /// A member joins; `announce` goes to the members already in.
    case addMember(channelID: UInt64, RTSRelayMember, announce: PushedEvent?)
    /// A member leaves; `announce` goes to the members that stay.
    case removeMember(channelID: UInt64, account: String, announce: PushedEvent?)
    /// The channel ends; `announce` goes to its members first.
    case close(channelID: UInt64, announce: PushedEvent?)
    /// `event` goes to one member, in order with the data relayed to it.
    case deliver(channelID: UInt64, account: String, PushedEvent)
}

/// A member as the relay knows it.
public struct RTSRelayMember: Sendable, Hashable {
    public var account: String
    public var device: String
    /// The file its data is recorded in (a name in the relay's directory), if any.
    public var recordFile: String?

    public init(account: String, device: String, recordFile: String?) {
        self.account = account
        self.device = device
        self.recordFile = recordFile
    }
}

/// The server's real-time session logic (NIM's RTS semantics), sans-I/O, beside the call and
/// meeting registries: point-to-point sessions and conferences, who is in which, and their
/// records. The data itself never passes here: the relay (`RTSRelay`) carries it, told of
/// members by `relay` outputs.
///
/// Rules:
/// - `rtsRequest` names one callee, other than the caller, with at least one service. Every
///   online device of the callee gets `rtsReceive`; the first to answer handles it, the
///   others get `rtsResponsedByOther`, and a later answer, terminate or control from them is
///   `handledElsewhere`. A callee terminates only after it responded (`rtsNotAccepted`);
///   a refused session is over (the caller terminates nothing).
/// - The audio service is exclusive with calls: an account in a call, or in another session
///   with audio, cannot request or accept one (`busy`), and the hub refuses a call to or from
///   an account in one (`audioAccounts`).
/// - A conference name is reserved until everyone who joined has left (then it is free
///   again); a reservation nobody joins lapses after `reservationLifetime`.
/// - A member's signaling connection closing takes it out of everything, as does its data
///   connection closing or falling behind (`dataConnectionLost`).
/// - Every channel that started ends in exactly one `RTSRecord`.
///
/// Memory: bounded by `maximumSessions`, `maximumSessionsPerAccount`, `maximumConferences` and
/// `maximumMembers`. Not thread-safe: one owner (the hub).
public struct RTSRegistry: Sendable {
    public struct Configuration: Sendable, Hashable {
        public var ringTimeout: Duration = .seconds(45)
        public var reservationLifetime: Duration = .seconds(24 * 3_600)
        /// Sessions live at once on the server.
        public var maximumSessions = 10_000
        /// Sessions one account is in at once (several data channels may be open).
        public var maximumSessionsPerAccount = 16
        public var maximumConferences = 10_000
        public var maximumMembers = 64
        /// Longest control text, extend message and conference name.
        public var maximumTextLength = 4_096
        public var maximumNameLength = 128
        /// Whether the relay records (the server has a recording directory).
        public var recording = false
        /// What each member may send, told to it with each reply.
        public var quota = RTSQuota()

        public init() {}
    }

    /// What the transport must do, in order.
    public enum Output: Sendable, Hashable {
        case send(ConnectionID, ServerMessage)
        case relay(RTSRelayCommand)
        /// Store the record.
        case record(RTSRecord)
    }

    /// Who sent a request.
    public struct Identity: Sendable, Hashable {
        public var account: String
        public var device: String
        public var connection: ConnectionID

        public init(account: String, device: String, connection: ConnectionID) {
            self.account = account
            self.device = device
            self.connection = connection
        }
    }

    struct Member: Sendable, Hashable {
        var identity: Identity
        var joinedAt: Int64
        var recordFile: String?
    }

    struct Session: Sendable {
        var id: String
        var channelID: UInt64
        var caller: Member
        var callee: String
        /// The callee's devices that were asked, while nobody answered.
        var invited: [Identity]
        var answeredBy: Member?
        var services: [RTSService]
        var disableRecord: Bool
        var callerMedia: MediaEndpoint?
        var deadline: Duration?
        var startedAt: Int64
    }

    struct Conference: Sendable {
        var name: String
        var ext: String?
        var reservedBy: String
        var reservedUntil: Duration
        /// Set by the first join.
        var channelID: UInt64?
        var members: [Member] = []
        var attendance: [RTSRecord.Member] = []
        var startedAt: Int64 = 0
    }

    public let configuration: Configuration
    var sessions: [String: Session] = [:]
    var conferences: [String: Conference] = [:]
    /// What each channel is: a session's ID or a conference's name.
    var channels: [UInt64: Channel] = [:]
    var lastChannelID: UInt64 = 0
    /// The channel ID given with the request being handled.
    private var assigned: UInt64?

    enum Channel: Sendable, Hashable {
        case session(String)
        case conference(String)
    }

    public init(configuration: Configuration = Configuration()) {
        self.configuration = configuration
    }

    /// Accounts in a session with audio (answered or not): a call to or from one is busy.
    public var audioAccounts: Set<String> {
        var accounts: Set<String> = []
        for session in sessions.values where session.services.contains(.audio) {
            accounts.insert(session.caller.identity.account)
            accounts.insert(session.callee)
        }
        return accounts
    }

    // MARK: Requests

    /// Runs one request.
    /// - Parameters:
    ///   - calleeDevices: For a request, the callee's online devices (from the call registry).
    ///   - inCall: Whether an account is in a call (for the audio service's exclusivity).
    ///   - sessionID: A fresh, unguessable ID for a request's session.
    ///   - assignedChannelID: The channel ID a new session or conference channel takes (a
    ///     cluster's, unique across its nodes); nil: this registry numbers it.
    public mutating func handle(_ request: RTSRequest, from identity: Identity, requestID: UInt64,
                                calleeDevices: [Identity] = [], inCall: (String) -> Bool = { _ in false },
                                sessionID: String = UUID().uuidString, assignedChannelID: UInt64? = nil,
                                at time: ServerTime) -> [Output] {
        assigned = assignedChannelID
        defer { assigned = nil }
        do throws(SignalingError) {
            switch request {
            case .request(let body):
                return try self.request(body, identity, requestID, calleeDevices, inCall, sessionID, time)
            case .response(let body):
                return try response(body, identity, requestID, inCall, time)
            case .terminate(let body):
                return try terminate(body, identity, requestID, time)
            case .control(let body):
                return try control(body, identity, requestID)
            case .reserve(let body):
                return try reserve(body, identity, requestID, time)
            case .join(let body):
                return try join(body, identity, requestID, time)
            case .leave(let body):
                return try leave(body, identity, requestID, time)
            }
        } catch {
            return [.send(identity.connection, .error(id: requestID, error))]
        }
    }

    private mutating func request(_ body: Request.RTSRequest, _ caller: Identity, _ requestID: UInt64, _ calleeDevices: [Identity],
                                  _ inCall: (String) -> Bool, _ sessionID: String, _ time: ServerTime) throws(SignalingError) -> [Output] {
        let type = MessageType.rtsRequest
        guard !body.callee.isEmpty, body.callee != caller.account else {
            throw SignalingError(.invalidRequest, "\(type): the callee must be another account")
        }
        guard !body.services.isEmpty, Set(body.services).count == body.services.count else {
            throw SignalingError(.invalidRequest, "\(type): services must name data, audio or both, once each")
        }
        try checkText(body.extendMessage, "extendMessage", type)
        if body.services.contains(.audio) {
            guard body.media != nil else { throw SignalingError(.invalidRequest, "\(type): the audio service needs the caller's media") }
            let audio = audioAccounts
            if inCall(caller.account) || audio.contains(caller.account) {
                throw SignalingError(.busy, "\(type): \(caller.account) is in a call or another voice session")
            }
            if inCall(body.callee) || audio.contains(body.callee) {
                throw SignalingError(.busy, "\(type): \(body.callee) is in a call or another voice session")
            }
        } else if body.media != nil {
            throw SignalingError(.invalidRequest, "\(type): media belongs to the audio service, which the request does not name")
        }
        guard sessions.count < configuration.maximumSessions else {
            throw SignalingError(.rtsFull, "\(type): the server holds its maximum of \(configuration.maximumSessions) sessions")
        }
        let open = sessions.values.lazy.filter { $0.caller.identity.account == caller.account || $0.callee == caller.account }.count
        guard open < configuration.maximumSessionsPerAccount else {
            throw SignalingError(.rtsFull, "\(type): \(caller.account) is in \(open) sessions, the most one account may be in")
        }
        guard !calleeDevices.isEmpty else { throw SignalingError(.calleeOffline, "\(type): \(body.callee) has no device online") }
        let channelID = nextChannelID(at: time)
        let disableRecord = body.disableRecord ?? false
        let member = Member(identity: caller, joinedAt: time.epochMilliseconds,
                            recordFile: recordFile(channelID, caller.account, disabled: disableRecord))
        sessions[sessionID] = Session(id: sessionID, channelID: channelID, caller: member, callee: body.callee, invited: calleeDevices,
                                      services: body.services, disableRecord: disableRecord, callerMedia: body.media,
                                      deadline: time.monotonic + configuration.ringTimeout, startedAt: time.epochMilliseconds)
        channels[channelID] = .session(sessionID)
        var outputs: [Output] = [
            .relay(.open(channelID: channelID, pending: body.callee)),
            .relay(.addMember(channelID: channelID, relayMember(member), announce: nil)),
            .send(caller.connection, .reply(id: requestID, .rtsRequest(Reply.RTSRequest(sessionID: sessionID, channelID: channelID,
                                                                                        recordFile: member.recordFile,
                                                                                        quota: configuration.quota)))),
        ]
        let invitation = Event.RTSReceive(sessionID: sessionID, channelID: channelID, from: caller.account, services: body.services,
                                          extendMessage: body.extendMessage, media: body.media)
        for device in calleeDevices { outputs.append(.send(device.connection, .event(.rtsReceive(invitation)))) }
        return outputs
    }

    private mutating func response(_ body: Request.RTSResponse, _ callee: Identity, _ requestID: UInt64, _ inCall: (String) -> Bool,
                                   _ time: ServerTime) throws(SignalingError) -> [Output] {
        let type = MessageType.rtsResponse
        guard var session = sessions[body.sessionID] else { throw SignalingError(.rtsNotFound, "\(type): no session \(body.sessionID)") }
        guard session.callee == callee.account else {
            throw SignalingError(.rtsNotMember, "\(type): session \(body.sessionID) asked \(session.callee), not \(callee.account)")
        }
        guard session.answeredBy == nil else {
            throw SignalingError(.handledElsewhere, "\(type): session \(body.sessionID) was answered by another device")
        }
        if body.accept, session.services.contains(.audio) {
            guard body.media != nil else { throw SignalingError(.invalidRequest, "\(type): accepting the audio service needs media") }
            if inCall(callee.account) {
                throw SignalingError(.busy, "\(type): \(callee.account) is in a call")
            }
        }
        var outputs: [Output] = []
        for device in session.invited where device.connection != callee.connection {
            outputs.append(.send(device.connection, .event(.rtsResponsedByOther(Event.RTSResponsedByOther(sessionID: session.id,
                                                                                                          accepted: body.accept)))))
        }
        let answer = Event.RTSResponse(sessionID: session.id, channelID: session.channelID, from: callee.account, accepted: body.accept,
                                       media: body.accept ? body.media : nil)
        guard body.accept else {
            outputs.append(.send(callee.connection, .reply(id: requestID, .rtsResponse(Reply.RTSResponse(channelID: session.channelID,
                                                                                                         recordFile: nil,
                                                                                                         quota: configuration.quota)))))
            outputs += end(session.id, reason: .rejected, by: callee.account, announce: .rtsResponse(answer), at: time)
            return outputs
        }
        let member = Member(identity: callee, joinedAt: time.epochMilliseconds,
                            recordFile: recordFile(session.channelID, callee.account,
                                                   disabled: session.disableRecord || (body.disableRecord ?? false)))
        session.answeredBy = member
        session.invited = []
        session.deadline = nil
        sessions[session.id] = session
        outputs.append(.relay(.addMember(channelID: session.channelID, relayMember(member), announce: .rtsResponse(answer))))
        outputs.append(.send(callee.connection, .reply(id: requestID, .rtsResponse(Reply.RTSResponse(
            channelID: session.channelID, recordFile: member.recordFile, quota: configuration.quota, media: session.callerMedia)))))
        return outputs
    }

    private mutating func terminate(_ body: Request.RTSTerminate, _ identity: Identity, _ requestID: UInt64,
                                    _ time: ServerTime) throws(SignalingError) -> [Output] {
        let session = try member(of: body.sessionID, identity, MessageType.rtsTerminate)
        let reason: RTSEndReason = session.answeredBy == nil ? .cancelled : .completed
        var outputs: [Output] = [.send(identity.connection, .reply(id: requestID, .empty))]
        outputs += end(session.id, reason: reason, by: identity.account, at: time)
        return outputs
    }

    private func control(_ body: Request.RTSControl, _ identity: Identity, _ requestID: UInt64) throws(SignalingError) -> [Output] {
        let type = MessageType.rtsControl
        let session = try member(of: body.sessionID, identity, type)
        try checkText(body.control, "control", type)
        guard let answered = session.answeredBy else {
            throw SignalingError(.rtsNotAccepted, "\(type): session \(body.sessionID) is not accepted yet")
        }
        let other = answered.identity.connection == identity.connection ? session.caller.identity : answered.identity
        // On the data connection: after the data the sender relayed before it (it syncs first).
        return [
            .relay(.deliver(channelID: session.channelID, account: other.account,
                            .rtsControl(Event.RTSControl(sessionID: session.id, from: identity.account, control: body.control)))),
            .send(identity.connection, .reply(id: requestID, .empty)),
        ]
    }

    /// The session `identity` may act in: its caller's device, or the callee's device that
    /// answered. A callee's device that has not answered is refused (`rtsNotAccepted`), one
    /// of its other devices `handledElsewhere`.
    private func member(of sessionID: String, _ identity: Identity, _ type: String) throws(SignalingError) -> Session {
        guard let session = sessions[sessionID] else { throw SignalingError(.rtsNotFound, "\(type): no session \(sessionID)") }
        if session.caller.identity.connection == identity.connection { return session }
        if let answered = session.answeredBy {
            if answered.identity.connection == identity.connection { return session }
            if identity.account == session.callee {
                throw SignalingError(.handledElsewhere, "\(type): session \(sessionID) was answered by another device")
            }
        } else if identity.account == session.callee {
            throw SignalingError(.rtsNotAccepted, "\(type): respond to session \(sessionID) first")
        }
        throw SignalingError(.rtsNotMember, "\(type): \(identity.account) is not in session \(sessionID)")
    }

    private mutating func reserve(_ body: Request.ReserveConference, _ identity: Identity, _ requestID: UInt64,
                                  _ time: ServerTime) throws(SignalingError) -> [Output] {
        let type = MessageType.reserveConference
        try checkName(body.name, type)
        try checkText(body.ext, "ext", type)
        guard conferences[body.name] == nil else {
            throw SignalingError(.meetingExists, "\(type): conference \(body.name) is in use")
        }
        guard conferences.count < configuration.maximumConferences else {
            throw SignalingError(.rtsFull, "\(type): the server holds its maximum of \(configuration.maximumConferences) conferences")
        }
        conferences[body.name] = Conference(name: body.name, ext: body.ext, reservedBy: identity.account,
                                            reservedUntil: time.monotonic + configuration.reservationLifetime)
        return [.send(identity.connection, .reply(id: requestID, .empty))]
    }

    private mutating func join(_ body: Request.JoinConference, _ identity: Identity, _ requestID: UInt64,
                               _ time: ServerTime) throws(SignalingError) -> [Output] {
        let type = MessageType.joinConference
        try checkName(body.name, type)
        guard var conference = conferences[body.name] else {
            throw SignalingError(.rtsNotFound, "\(type): no conference \(body.name) is reserved")
        }
        guard !conference.members.contains(where: { $0.identity.account == identity.account }) else {
            throw SignalingError(.rtsAlreadyJoined, "\(type): \(identity.account) is already in conference \(body.name)")
        }
        guard conference.members.count < configuration.maximumMembers else {
            throw SignalingError(.rtsFull, "\(type): conference \(body.name) holds its maximum of \(configuration.maximumMembers) members")
        }
        var outputs: [Output] = []
        let channelID: UInt64
        if let existing = conference.channelID {
            channelID = existing
        } else {
            channelID = nextChannelID(at: time)
            conference.channelID = channelID
            conference.startedAt = time.epochMilliseconds
            channels[channelID] = .conference(body.name)
            outputs.append(.relay(.open(channelID: channelID, pending: nil)))
        }
        let member = Member(identity: identity, joinedAt: time.epochMilliseconds,
                            recordFile: recordFile(channelID, identity.account, disabled: body.disableRecord ?? false))
        let before = conference.members.map(\.identity.account)
        conference.members.append(member)
        conferences[body.name] = conference
        let joined = Event.RTSUserJoined(channelID: channelID, name: body.name, account: identity.account)
        outputs.append(.relay(.addMember(channelID: channelID, relayMember(member), announce: .rtsUserJoined(joined))))
        outputs.append(.send(identity.connection, .reply(id: requestID, .joinConference(Reply.JoinConference(
            name: body.name, channelID: channelID, recordFile: member.recordFile, members: before, quota: configuration.quota)))))
        return outputs
    }

    private mutating func leave(_ body: Request.LeaveConference, _ identity: Identity, _ requestID: UInt64,
                                _ time: ServerTime) throws(SignalingError) -> [Output] {
        let type = MessageType.leaveConference
        guard case .conference(let name)? = channels[body.channelID], let conference = conferences[name] else {
            throw SignalingError(.rtsNotFound, "\(type): no conference has channel \(body.channelID)")
        }
        guard conference.members.contains(where: { $0.identity.connection == identity.connection }) else {
            throw SignalingError(.rtsNotMember, "\(type): \(identity.account) is not in conference \(name)")
        }
        return [.send(identity.connection, .reply(id: requestID, .empty))] + remove(identity.connection, from: name, reason: .left, at: time)
    }

    // MARK: Connections and time

    /// A signaling connection closed: its device leaves every conference and session.
    public mutating func disconnected(_ connection: ConnectionID, at time: ServerTime) -> [Output] {
        var outputs: [Output] = []
        for id in sessions.keys.sorted() {
            guard var session = sessions[id] else { continue }
            if session.caller.identity.connection == connection || session.answeredBy?.identity.connection == connection {
                let account = session.caller.identity.connection == connection ? session.caller.identity.account : session.callee
                outputs += end(id, reason: .failed, by: nil, leaver: account, at: time)
            } else if session.invited.contains(where: { $0.connection == connection }) {
                session.invited.removeAll { $0.connection == connection }
                sessions[id] = session
            }
        }
        for name in conferences.keys.sorted() where conferences[name]?.members.contains(where: { $0.identity.connection == connection }) == true {
            outputs += remove(connection, from: name, reason: .disconnected, at: time)
        }
        return outputs
    }

    /// A device's data connection closed or fell behind: it leaves everything it is in, and
    /// its signaling connection is told (`rtsLeftConference`, `rtsTerminate`).
    public mutating func dataConnectionLost(account: String, device: String, tooSlow: Bool, at time: ServerTime) -> [Output] {
        var outputs: [Output] = []
        let error = tooSlow ? SignalingError(.rtsTooSlow, "the data connection did not read what it was sent fast enough")
            : SignalingError(.serverDisconnected, "the data connection closed")
        for id in sessions.keys.sorted() {
            guard let session = sessions[id] else { continue }
            let members = [session.caller] + (session.answeredBy.map { [$0] } ?? [])
            guard let lost = members.first(where: { $0.identity.account == account && $0.identity.device == device }) else { continue }
            outputs.append(.send(lost.identity.connection, .event(.rtsTerminate(Event.RTSTerminate(sessionID: id, channelID: session.channelID,
                                                                                                   by: nil, reason: .failed)))))
            outputs += end(id, reason: .failed, by: nil, leaver: account, at: time)
        }
        for name in conferences.keys.sorted() {
            guard let conference = conferences[name], let channelID = conference.channelID,
                  let lost = conference.members.first(where: { $0.identity.account == account && $0.identity.device == device }) else {
                continue
            }
            outputs.append(.send(lost.identity.connection, .event(.rtsLeftConference(Event.RTSLeftConference(channelID: channelID, name: name,
                                                                                                             error: error)))))
            outputs += remove(lost.identity.connection, from: name, reason: tooSlow ? .tooSlow : .disconnected, at: time)
        }
        return outputs
    }

    /// Ends unanswered sessions (`missed`) and lapses unjoined reservations.
    public mutating func tick(at time: ServerTime) -> [Output] {
        var outputs: [Output] = []
        for id in sessions.keys.sorted() {
            guard let session = sessions[id], let deadline = session.deadline, deadline <= time.monotonic else { continue }
            outputs += end(id, reason: .missed, by: nil, at: time)
        }
        for name in conferences.keys.sorted() {
            guard let conference = conferences[name], conference.channelID == nil, conference.reservedUntil <= time.monotonic else { continue }
            conferences[name] = nil
        }
        return outputs
    }

    /// Ends everything, for a graceful shutdown: members are told, records come out.
    public mutating func shutdown(at time: ServerTime) -> [Output] {
        var outputs: [Output] = []
        for id in sessions.keys.sorted() {
            guard let session = sessions[id] else { continue }
            let members = [session.caller] + (session.answeredBy.map { [$0] } ?? [])
            for member in members {
                outputs.append(.send(member.identity.connection, .event(.rtsTerminate(Event.RTSTerminate(
                    sessionID: id, channelID: session.channelID, by: nil, reason: .failed)))))
            }
            outputs += end(id, reason: .failed, by: nil, at: time)
        }
        let error = SignalingError(.serverUnavailable, "the server is shutting down")
        for name in conferences.keys.sorted() {
            guard let conference = conferences[name] else { continue }
            guard let channelID = conference.channelID else {
                conferences[name] = nil
                continue
            }
            for member in conference.members {
                outputs.append(.send(member.identity.connection, .event(.rtsLeftConference(Event.RTSLeftConference(
                    channelID: channelID, name: name, error: error)))))
            }
            for member in conference.members { outputs += remove(member.identity.connection, from: name, reason: .kicked, at: time) }
        }
        return outputs
    }

    // MARK: Helpers

    /// Ends a session: the relay closes its channel (announcing `announce`, or a terminate),
    /// the invited devices that never answered are told, and its record comes out.
    private mutating func end(_ id: String, reason: RTSEndReason, by ender: String?, leaver: String? = nil,
                              announce: PushedEvent? = nil, at time: ServerTime) -> [Output] {
        guard let session = sessions.removeValue(forKey: id) else { return [] }
        channels[session.channelID] = nil
        let terminate = Event.RTSTerminate(sessionID: id, channelID: session.channelID, by: ender, reason: reason)
        var outputs: [Output] = []
        if let leaver {
            // The member that went gets nothing on its data connection; the other one does.
            outputs.append(.relay(.removeMember(channelID: session.channelID, account: leaver, announce: nil)))
        }
        outputs.append(.relay(.close(channelID: session.channelID, announce: announce ?? .rtsTerminate(terminate))))
        if session.answeredBy == nil, reason != .rejected {
            for device in session.invited { outputs.append(.send(device.connection, .event(.rtsTerminate(terminate)))) }
        }
        var members = [record(session.caller, leftAt: time, reason: reason == .failed && leaver == session.caller.identity.account
                                  ? .disconnected : .left)]
        if let answered = session.answeredBy {
            members.append(record(answered, leftAt: time, reason: reason == .failed && leaver == session.callee ? .disconnected : .left))
        }
        outputs.append(.record(RTSRecord(channelID: session.channelID, kind: .session, name: id, createdBy: session.caller.identity.account,
                                         services: session.services, startedAt: session.startedAt, endedAt: time.epochMilliseconds,
                                         endReason: reason, members: members)))
        return outputs
    }

    /// Takes a member out of a conference; the last one out ends it and frees its name.
    private mutating func remove(_ connection: ConnectionID, from name: String, reason: RTSLeaveReason, at time: ServerTime) -> [Output] {
        guard var conference = conferences[name], let channelID = conference.channelID,
              let index = conference.members.firstIndex(where: { $0.identity.connection == connection }) else { return [] }
        let member = conference.members.remove(at: index)
        conference.attendance.append(record(member, leftAt: time, reason: reason))
        var outputs: [Output] = []
        let left = Event.RTSUserLeft(channelID: channelID, name: name, account: member.identity.account, reason: reason)
        outputs.append(.relay(.removeMember(channelID: channelID, account: member.identity.account, announce: .rtsUserLeft(left))))
        if conference.members.isEmpty {
            conferences[name] = nil
            channels[channelID] = nil
            outputs.append(.relay(.close(channelID: channelID, announce: nil)))
            outputs.append(.record(RTSRecord(channelID: channelID, kind: .conference, name: name, createdBy: conference.reservedBy,
                                             services: [.data], startedAt: conference.startedAt, endedAt: time.epochMilliseconds,
                                             endReason: .completed, members: conference.attendance)))
        } else {
            conferences[name] = conference
        }
        return outputs
    }

    private func record(_ member: Member, leftAt time: ServerTime, reason: RTSLeaveReason) -> RTSRecord.Member {
        RTSRecord.Member(account: member.identity.account, device: member.identity.device, joinedAt: member.joinedAt,
                         leftAt: time.epochMilliseconds, reason: reason, recordFile: member.recordFile)
    }

    private func relayMember(_ member: Member) -> RTSRelayMember {
        RTSRelayMember(account: member.identity.account, device: member.identity.device, recordFile: member.recordFile)
    }

    /// The recording file of `account` in a channel: `CHANNEL-ACCOUNT.rts`, the account with
    /// every byte but letters, digits, '-', '_' and '.' percent-encoded (and a leading '.').
    func recordFile(_ channelID: UInt64, _ account: String, disabled: Bool) -> String? {
        guard configuration.recording, !disabled else { return nil }
        return "\(channelID)-\(Self.fileSafe(account)).rts"
    }

    static func fileSafe(_ text: String) -> String {
        var safe = ""
        for (index, byte) in text.utf8.enumerated() {
            let scalar = Unicode.Scalar(byte)
            let plain = (byte < 0x80 && (scalar.properties.isAlphabetic || ("0"..."9").contains(scalar)))
                || byte == UInt8(ascii: "-") || byte == UInt8(ascii: "_") || (byte == UInt8(ascii: ".") && index > 0)
            safe += plain ? String(scalar) : String(format: "%%%02X", byte)
        }
        return safe
    }

    /// Channel IDs: the one assigned to the request being handled, else milliseconds since
    /// 1970 times 1024 plus a counter, as call IDs, so they keep growing across restarts
    /// (recording files of two runs never share a name).
    private mutating func nextChannelID(at time: ServerTime) -> UInt64 {
        if let assigned, channels[assigned] == nil {
            self.assigned = nil
            lastChannelID = max(lastChannelID, assigned)
            return assigned
        }
        let candidate = UInt64(max(0, time.epochMilliseconds)) << 10
        lastChannelID = max(lastChannelID + 1, candidate)
        return lastChannelID
    }

    private func checkText(_ text: String?, _ field: String, _ type: String) throws(SignalingError) {
        guard let text else { return }
        guard text.utf8.count <= configuration.maximumTextLength else {
            throw SignalingError(.messageTooLarge, "\(type): \(field) of \(text.utf8.count) bytes exceeds \(configuration.maximumTextLength)")
        }
    }

    private func checkName(_ name: String, _ type: String) throws(SignalingError) {
        guard !name.isEmpty, name.utf8.count <= configuration.maximumNameLength else {
            throw SignalingError(.invalidRequest, "\(type): name must be 1 to \(configuration.maximumNameLength) bytes")
        }
    }
}
