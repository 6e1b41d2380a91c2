import Foundation
import Signaling

/// One WebSocket connection, as the transport layer numbers them.
public struct ConnectionID: Sendable, Hashable, Comparable, CustomStringConvertible {
    public let value: UInt64

    public init(_ value: UInt64) { self.value = value }

    public static func < (lhs: Self, rhs: Self) -> Bool { lhs.value < rhs.value }
    public var description: String { "#\(value)" }
}

/// A moment on the server: monotonic time for deadlines, wall time for records.
public struct ServerTime: Sendable, Hashable {
    public var monotonic: Duration
    /// Milliseconds since 1970.
    public var epochMilliseconds: Int64

    public init(monotonic: Duration, epochMilliseconds: Int64) {
        self.monotonic = monotonic
        self.epochMilliseconds = epochMilliseconds
    }
}

/// The server's P2P call logic (DESIGN.md section 6, NIM semantics), sans-I/O: logins,
/// invitations, answers, controls, hangups, timeouts and call records. The transport
/// feeds it authenticated connections, decoded requests and clock ticks, and carries out
/// the outputs it returns, in order.
///
/// Rules:
/// - An account is in at most one call at a time (as caller or callee); calling an
///   account that is in one ends the new call at once as `busy`, after a `busyLine`
///   control to the caller. A caller already in a call gets a `busy` error.
/// - `start` invites every online device of the callee. The first device to answer wins;
///   the others get `responsedByOther`, and a later answer gets `handledElsewhere`.
/// - Deadlines: `ringTimeout` to answer (then `missed`), `connectTimeout` from the answer
///   to a `mediaStatus(connected)` report (then `failed`), and `reconnectGrace` for a
///   party whose connection dropped to log in again with the same device (then `failed`).
///   A dropped connection does not end the call by itself: the media may still flow.
/// - Every call that got an ID ends in exactly one `CallRecord`, delivered as a `record`
///   output (to store, then to notify the parties' connections).
///
/// Memory: one entry per logged-in device and per live call; `maximumDevicesPerAccount`
/// and `maximumCalls` bound them. Not thread-safe: one owner (the server's actor).
public struct CallRegistry: Sendable {
    public struct Configuration: Sendable, Hashable {
        public var ringTimeout: Duration = .seconds(45)
        public var connectTimeout: Duration = .seconds(30)
        public var reconnectGrace: Duration = .seconds(30)
        public var maximumDevicesPerAccount = 8
        public var maximumCalls = 100_000

        public init() {}
    }

    /// What the transport must do.
    public enum Output: Sendable, Hashable {
        /// Send this message on the connection (dropped if it has closed); the connection
        /// layer encodes it.
        case send(ConnectionID, ServerMessage)
        /// Store the record, then send each connection a `callRecord` event.
        case record(CallRecord, notify: [ConnectionID])
        /// Close the connection with a WebSocket close code and reason.
        case close(ConnectionID, code: UInt16, reason: String)
    }

    struct DeviceKey: Hashable, Sendable, Comparable {
        var account: String
        var device: String

        static func < (lhs: Self, rhs: Self) -> Bool { (lhs.account, lhs.device) < (rhs.account, rhs.device) }
    }

    struct Device: Sendable {
        var connection: ConnectionID?
        var disconnectedAt: Duration?
    }

    enum Phase: Sendable, Hashable {
        case ringing
        case accepted
        case connected(since: Duration)
    }

    struct Call: Sendable {
        var id: UInt64
        var type: CallType
        var option: CallOption
        var caller: DeviceKey
        var callee: String
        var invited: [DeviceKey]
        var answeredBy: DeviceKey?
        var callerMedia: MediaEndpoint?
        /// A WebRTC caller's offer (then `callerMedia` is nil).
        var callerOffer: String?
        var phase: Phase
        var deadline: Duration?
        var startedAt: Int64
        /// Trickled candidates passed on so far (both sides), against `maximumTrickled`.
        var trickled = 0
    }

    /// Trickled candidates one call may pass on, both sides together.
    static let maximumTrickled = 64

    public let configuration: Configuration
    var devices: [DeviceKey: Device] = [:]
    var connections: [ConnectionID: DeviceKey] = [:]
    var calls: [UInt64: Call] = [:]
    /// The call each account is in.
    var accountCall: [String: UInt64] = [:]
    var lastCallID: UInt64 = 0
    /// Accounts in a call another node owns, as a node of a cluster found just before a
    /// `start` (its caller and callee): they count as busy as if the call were here.
    var busyElsewhere: Set<String> = []
    /// Accounts in a real-time session with audio (`RTSRegistry.audioAccounts`), set by the
    /// hub before each request: the voice channel is exclusive with calls.
    var busyInSessions: Set<String> = []

    public init(configuration: Configuration = Configuration()) {
        self.configuration = configuration
    }

    /// Live calls.
    public var callCount: Int { calls.count }
    /// Logged-in devices, connected or within their reconnect grace.
    public var deviceCount: Int { devices.count }

    /// The account a connection logged in as.
    public func account(of connection: ConnectionID) -> String? { connections[connection]?.account }

    /// The account and device a connection logged in as.
    public func device(of connection: ConnectionID) -> (account: String, device: String)? {
        connections[connection].map { ($0.account, $0.device) }
    }

    /// The earliest deadline, when `tick` should next run.
    public var nextDeadline: Duration? {
        var earliest = calls.values.compactMap(\.deadline).min()
        for device in devices.values {
            guard let gone = device.disconnectedAt else { continue }
            earliest = min(earliest ?? .seconds(Int64.max), gone + configuration.reconnectGrace)
        }
        return earliest
    }

    // MARK: Connections

    /// Binds an authenticated connection to a device of an account. Logging in again with
    /// the same device (a reconnect) replaces its old connection, which is closed.
    ///
    /// - Throws: `SignalingError` `.invalidRequest` when the connection already logged in,
    ///   `.forbidden` when the account has `maximumDevicesPerAccount` devices.
    public mutating func login(_ connection: ConnectionID, account: String, device: String, at time: ServerTime)
        throws(SignalingError) -> (reply: Reply.Login, outputs: [Output]) {
        guard connections[connection] == nil else {
            throw SignalingError(.invalidRequest, "login: this connection is already logged in")
        }
        let key = DeviceKey(account: account, device: device)
        var outputs: [Output] = []
        if let existing = devices[key] {
            if let old = existing.connection {
                connections[old] = nil
                outputs.append(.close(old, code: 4_000, reason: "replaced by a new login of device \(device)"))
            }
        } else {
            let count = devices.keys.lazy.filter { $0.account == account }.count
            guard count < configuration.maximumDevicesPerAccount else {
                throw SignalingError(.forbidden, "login: account \(account) already has \(count) devices logged in")
            }
        }
        devices[key] = Device(connection: connection, disconnectedAt: nil)
        connections[connection] = key
        let active = calls.values.filter { $0.caller == key || $0.answeredBy == key || $0.invited.contains(key) }
            .map(\.id).sorted()
        return (Reply.Login(account: account, device: device, activeCalls: active), outputs)
    }

    /// A connection closed. A device with no call is forgotten; one in a call keeps its
    /// place for `reconnectGrace`.
    public mutating func disconnected(_ connection: ConnectionID, at time: ServerTime) -> [Output] {
        guard let key = connections.removeValue(forKey: connection) else { return [] }
        guard devices[key]?.connection == connection else { return [] }
        if let id = accountCall[key.account], let call = calls[id],
           call.caller == key || call.answeredBy == key {
            devices[key] = Device(connection: nil, disconnectedAt: time.monotonic)
        } else {
            devices[key] = nil
        }
        return []
    }

    // MARK: Time

    /// Ends what is overdue: unanswered calls (`missed`), answers without media
    /// (`failed`), parties that did not come back (`failed`).
    public mutating func tick(at time: ServerTime) -> [Output] {
        var outputs: [Output] = []
        for id in calls.keys.sorted() {
            guard let call = calls[id], let deadline = call.deadline, deadline <= time.monotonic else { continue }
            outputs += end(id, reason: call.phase == .ringing ? .missed : .failed, by: nil, at: time)
        }
        for key in devices.keys.sorted() {
            guard let gone = devices[key]?.disconnectedAt, gone + configuration.reconnectGrace <= time.monotonic else {
                continue
            }
            devices[key] = nil
            if let id = accountCall[key.account], let call = calls[id], call.caller == key || call.answeredBy == key {
                outputs += end(id, reason: .failed, by: nil, at: time)
            }
        }
        return outputs
    }

    /// Ends every live call (`failed`, by the server), for a graceful shutdown: the
    /// records come out as outputs, so none is lost if they are stored before exit.
    public mutating func shutdown(at time: ServerTime) -> [Output] {
        calls.keys.sorted().flatMap { end($0, reason: .failed, by: nil, at: time) }
    }

    // MARK: Helpers

    func connection(of key: DeviceKey) -> ConnectionID? { devices[key]?.connection }

    /// Sends to a device if it is connected.
    func send(_ key: DeviceKey, _ event: PushedEvent) -> [Output] {
        guard let connection = connection(of: key) else { return [] }
        return [.send(connection, .event(event))]
    }

    /// A fresh call ID: `assigned` when a cluster gave one (its nodes share one sequence),
    /// else milliseconds since 1970 times 1024 plus a counter, so IDs keep growing across
    /// restarts and stay below 2^53 (exact in any JSON reader) until 2248.
    mutating func nextCallID(assigned: UInt64?, at time: ServerTime) -> UInt64 {
        if let assigned {
            lastCallID = max(lastCallID, assigned)
            return assigned
        }
        let candidate = UInt64(max(0, time.epochMilliseconds)) << 10
        lastCallID = max(lastCallID + 1, candidate)
        return lastCallID
    }

    /// Ends a call: tells whoever has not been told, frees the accounts, and emits its record.
    mutating func end(_ id: UInt64, reason: CallEndReason, by ender: DeviceKey?, at time: ServerTime,
                      skipHangupTo skipped: Set<DeviceKey> = []) -> [Output] {
        guard let call = calls.removeValue(forKey: id) else { return [] }
        if accountCall[call.caller.account] == id { accountCall[call.caller.account] = nil }
        if accountCall[call.callee] == id { accountCall[call.callee] = nil }
        var outputs: [Output] = []
        let calleeSide = call.answeredBy.map { [$0] } ?? call.invited
        let event = Event.Hangup(callID: id, by: ender?.account, reason: reason)
        for key in [call.caller] + calleeSide where key != ender && !skipped.contains(key) {
            outputs += send(key, .hangup(event))
        }
        var connected: Int64 = 0
        if case .connected(let since) = call.phase {
            connected = Int64((time.monotonic - since) / .milliseconds(1))
        }
        let record = CallRecord(callID: id, caller: call.caller.account, callee: call.callee, type: call.type,
                                startedAt: call.startedAt, connectedDuration: connected, endReason: reason,
                                endedBy: ender?.account)
        let notify = ([call.caller] + calleeSide).compactMap { connection(of: $0) }
        outputs.append(.record(record, notify: notify))
        // Devices that only stayed for this call and are offline are forgotten now.
        for key in [call.caller] + calleeSide where devices[key]?.connection == nil && devices[key]?.disconnectedAt != nil {
            devices[key] = nil
        }
        return outputs
    }
}
