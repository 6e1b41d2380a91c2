import Foundation
import Logging
import MediaEngine
import NIOCore
import Signaling

/// What a data connection's writer sends next.
public enum RTSOutbound: Sendable {
    /// A data message (binary).
    case data(ByteBuffer)
    /// A signaling envelope (text): a reply or an event in order with the data.
    case message(ServerMessage)
    /// Send a close frame, then stop.
    case close(code: UInt16, reason: String)
}

/// What the relay tells the hub.
public enum RTSRelayReport: Sendable, Hashable {
    /// A device's data connection closed, or was closed for falling behind (`tooSlow`): it is
    /// out of every channel.
    case dataConnectionLost(account: String, device: String, tooSlow: Bool)
}

/// Bytes and messages queued for one data connection's writer: the relay adds, the writer
/// takes away.
public final class RTSQueueGauge: Sendable {
    private let state = Locked<(bytes: Int, messages: Int)>((0, 0))
    /// Finishes when the connection must go at once: its writer may be stuck in a write to a
    /// peer that reads nothing, where a close frame would wait behind the data.
    public let aborted: AsyncStream<Void>
    private let abortSink: AsyncStream<Void>.Continuation

    public init() {
        (aborted, abortSink) = AsyncStream<Void>.makeStream()
    }

    func abort() { abortSink.finish() }

    /// Adds one message; false when it would pass either limit (then nothing is added).
    func add(_ bytes: Int, limits: (bytes: Int, messages: Int)) -> Bool {
        state.withLock { state in
            guard state.bytes + bytes <= limits.bytes, state.messages < limits.messages else { return false }
            state.bytes += bytes
            state.messages += 1
            return true
        }
    }

    /// The writer sent one message of `bytes`.
    public func sent(_ bytes: Int) {
        state.withLock { state in
            state.bytes -= bytes
            state.messages -= 1
        }
    }

    var queued: (bytes: Int, messages: Int) { state.withLock { $0 } }
}

/// The data plane of real-time sessions: it relays each member's messages to the others, in
/// order and whole, enforces the quotas, and records. It runs apart from the signaling hub
/// (an actor of its own, on connections of their own), so a member sending at full rate
/// delays no call, meeting or other member's signaling.
///
/// - Per member (per data connection): at most `quota.maximumMessageSize` per message, and a
///   token bucket of `quota.bytesPerSecond` and `quota.messagesPerSecond` holding one second
///   of each. A message over either is refused (`messageTooLarge`, `rateLimited`) and not
///   relayed; refusals are reported in ranges, at most ten reports a second, so a reply is
///   never larger than what caused it. Clients pace themselves by the quota their replies
///   carry and never meet the bucket.
/// - Per receiver: at most `queueLimit` bytes and messages wait for its writer. A receiver
///   that lets more pile up is disconnected (close code 4008, "too slow") and leaves every
///   channel (`rtsTooSlow`): nothing grows without bound, and nobody else waits for it.
/// - The hub tells the relay who is in which channel (`RTSRelayCommand`); the relay checks
///   every message against that: the sender must be in the channel, the target too (a
///   session's callee that has not answered: `rtsNotAccepted`).
public actor RTSRelay {
    public struct Configuration: Sendable {
        public var quota = RTSQuota()
        /// Bytes and messages waiting for one receiver before it counts as too slow.
        public var queueLimit = (bytes: 16 * 1_048_576, messages: 8_192)
        /// Where recordings go; nil: nothing is recorded.
        public var recordingDirectory: String?
        /// Time to log in on a data connection.
        public var loginTimeout: Duration = .seconds(10)
        /// Malformed messages a connection may send before it is closed.
        public var malformedLimit = 16

        public init() {}
    }

    struct DeviceKey: Hashable, Sendable {
        var account: String
        var device: String
    }

    struct Connection {
        var sink: AsyncStream<RTSOutbound>.Continuation
        var gauge: RTSQueueGauge
        var device: DeviceKey?
        var openedAt: ContinuousClock.Instant
        var bucket: TokenBucket
        /// Data messages received (their numbers for refusals).
        var received: UInt64 = 0
        var malformed = 0
        var refusal: Refusal?
        var lastRefusalReport: ContinuousClock.Instant?
    }

    /// Refusals of one reason, not reported yet.
    struct Refusal {
        var first: UInt64
        var last: UInt64
        var count: Int
        var error: SignalingError
    }

    struct Member {
        var device: String
        var recorder: RTSRecordingWriter?
    }

    struct Channel {
        var startedAt: ContinuousClock.Instant
        var pending: String?
        var members: [String: Member] = [:]
        /// Accounts in the order they joined (broadcasts go out in a stable order).
        var order: [String] = []
    }

    /// A member's allowance: up to a second's worth of bytes and messages, refilled at the
    /// quota's rate. A message over it is relayed all the same and leaves a debt; the
    /// member's connection is not read again until the debt is paid (`charge`'s wait), so a
    /// member that sends too fast is held to the quota by TCP, never refused for it. A
    /// member that paces itself is never held even when this relay runs late: the messages
    /// it sent while the relay lagged were sent within the quota, and refusing them for
    /// arriving together would punish it for the server's delay.
    struct TokenBucket {
        var bytes: Double
        var messages: Double
        var updated: ContinuousClock.Instant

        /// Takes one message of `size` bytes; returns how long to wait before reading the
        /// member's next message (zero while it is within its allowance).
        mutating func charge(_ size: Int, quota: RTSQuota, now: ContinuousClock.Instant) -> Duration {
            let elapsed = Double((now - updated).components.attoseconds) / 1e18 + Double((now - updated).components.seconds)
            updated = now
            let byteRate = Double(quota.bytesPerSecond), messageRate = Double(quota.messagesPerSecond)
            bytes = min(byteRate, bytes + elapsed * byteRate) - Double(size)
            messages = min(messageRate, messages + elapsed * messageRate) - 1
            let debt = max(-bytes / byteRate, -messages / messageRate, 0)
            return debt > 0 ? .nanoseconds(Int64(debt * 1e9)) : .zero
        }
    }

    /// What the relay has done, for `/metrics` and tests.
    public struct Statistics: Sendable, Hashable {
        public var connections = 0
        public var channels = 0
        public var messagesRelayed = 0
        public var bytesRelayed = 0
        public var refused = 0
        /// Messages after which a sender over its quota was held (its connection not read
        /// until its debt was paid).
        public var held = 0
        public var malformed = 0
        public var tooSlow = 0
        public var recordingFailures = 0
    }

    public let configuration: Configuration
    private let authority: TokenAuthority
    private let report: @Sendable (RTSRelayReport) -> Void
    private let logger: Logger
    private let clock = ContinuousClock()
    private var connections: [UInt64: Connection] = [:]
    private var devices: [DeviceKey: UInt64] = [:]
    private var channels: [UInt64: Channel] = [:]
    private var nextConnection: UInt64 = 1
    private var shuttingDown = false
    public private(set) var statistics = Statistics()
    private let allocator = ByteBufferAllocator()

    public init(configuration: Configuration, authority: TokenAuthority, logger: Logger,
                report: @escaping @Sendable (RTSRelayReport) -> Void) {
        self.configuration = configuration
        self.authority = authority
        self.logger = logger
        self.report = report
    }

    /// Whether `device` of `account` has a data connection logged in.
    public func isConnected(account: String, device: String) -> Bool {
        devices[DeviceKey(account: account, device: device)] != nil
    }

    // MARK: Connections

    /// Registers a new data connection; nil when shutting down.
    public func open(_ sink: AsyncStream<RTSOutbound>.Continuation, gauge: RTSQueueGauge) -> UInt64? {
        guard !shuttingDown else { return nil }
        let id = nextConnection
        nextConnection += 1
        let now = clock.now
        connections[id] = Connection(sink: sink, gauge: gauge, openedAt: now,
                                     bucket: TokenBucket(bytes: Double(configuration.quota.bytesPerSecond),
                                                         messages: Double(configuration.quota.messagesPerSecond), updated: now))
        statistics.connections = connections.count
        return id
    }

    /// The connection closed (either side).
    public func closed(_ id: UInt64) {
        guard let connection = connections.removeValue(forKey: id) else { return }
        connection.sink.finish()
        statistics.connections = connections.count
        if let device = connection.device, devices[device] == id {
            devices[device] = nil
            if isMember(device) { report(.dataConnectionLost(account: device.account, device: device.device, tooSlow: false)) }
        }
    }

    /// A text message: `login` first, then `rtsSync`.
    public func received(text data: Data, from id: UInt64) async {
        guard let connection = connections[id] else { return }
        let message: ClientMessage
        do {
            message = try ClientMessage.decode(data, maximumSize: 64 * 1_024)
        } catch {
            malformed(id, error)
            return
        }
        guard let requestID = message.id else {
            malformed(id, SignalingError(.invalidRequest, "\(message.type): requests need an id"))
            return
        }
        switch message.request {
        case .success(.login(let login)) where connection.device == nil:
            await self.login(login, requestID: requestID, from: id)
        case .success(.rtsSync) where connection.device != nil:
            flushRefusal(id, force: true)
            send(.message(.reply(id: requestID, .empty)), to: id)
        case .failure(let error):
            malformed(id, error, requestID: requestID)
        default:
            let error = connection.device == nil ? SignalingError(.unauthorized, "\(message.type): log in first")
                : SignalingError(.invalidRequest, "\(message.type): the data connection takes login, rtsSync and data messages only")
            malformed(id, error, requestID: requestID)
        }
    }

    private func login(_ request: Request.Login, requestID: UInt64, from id: UInt64) async {
        let account: String
        do throws(SignalingError) {
            guard !request.device.isEmpty, request.device.utf8.count <= 128 else {
                throw SignalingError(.invalidRequest, "login: device must be 1 to 128 bytes")
            }
            account = try await authority.verify(request.token)
        } catch {
            send(.message(.error(id: requestID, error)), to: id)
            close(id, code: 1_008, reason: "login failed")
            return
        }
        guard connections[id] != nil else { return }
        let key = DeviceKey(account: account, device: request.device)
        if let old = devices[key], old != id {
            // A new data connection of the device replaces the old one; its channels stay.
            connections[old]?.device = nil
            close(old, code: 4_000, reason: "replaced by a new data connection of device \(request.device)")
        }
        devices[key] = id
        connections[id]?.device = key
        send(.message(.reply(id: requestID, .rtsLogin(Reply.RTSLogin(account: account, device: request.device,
                                                                      quota: configuration.quota)))), to: id)
    }

    /// Closes connections that did not log in in time; reports refusals held back.
    public func tick() {
        let now = clock.now
        for (id, connection) in connections {
            if connection.device == nil, now - connection.openedAt > configuration.loginTimeout {
                close(id, code: 1_008, reason: "no login within \(configuration.loginTimeout)")
            } else if connection.refusal != nil {
                flushRefusal(id, force: false)
            }
        }
    }

    /// Ends everything: every connection closes (1001).
    public func shutdown() {
        shuttingDown = true
        for id in connections.keys { close(id, code: 1_001, reason: "server shutting down") }
        channels.removeAll()
    }

    // MARK: Data

    /// One binary message: a data frame to relay.
    /// A data message from connection `id`: checked, relayed and recorded, or refused (and
    /// reported). Returns how long the connection's reader waits before reading its next
    /// message: the time its sender's debt takes to pay (zero within the quota).
    @discardableResult
    public func received(data buffer: ByteBuffer, from id: UInt64) -> Duration {
        guard var connection = connections[id] else { return .zero }
        guard let sender = connection.device else {
            malformed(id, SignalingError(.unauthorized, "data before login"))
            return .zero
        }
        connection.received += 1
        let number = connection.received
        let now = clock.now
        let frame: RTSFrame
        do {
            frame = try RTSFrame.decode(buffer)
        } catch {
            connections[id] = connection
            statistics.malformed += 1
            refuse(number, error, on: id)
            countMalformed(id)
            return .zero
        }
        let size = frame.payload.readableBytes
        guard size <= configuration.quota.maximumMessageSize else {
            connections[id] = connection
            refuse(number, SignalingError(.messageTooLarge, "a data message of \(size) bytes exceeds \(configuration.quota.maximumMessageSize)"),
                   on: id)
            return .zero
        }
        // Refused messages count too: a sender cannot flood with messages it knows are bad.
        let wait = connection.bucket.charge(size, quota: configuration.quota, now: now)
        if wait > .zero { statistics.held += 1 }
        connections[id] = connection
        guard var channel = channels[frame.channelID] else {
            refuse(number, SignalingError(.rtsNotFound, "no session or conference has channel \(frame.channelID)"), on: id)
            return wait
        }
        guard let member = channel.members[sender.account], member.device == sender.device else {
            refuse(number, SignalingError(.rtsNotMember, "\(sender.account) is not in channel \(frame.channelID)"), on: id)
            return wait
        }
        if !frame.peer.isEmpty {
            guard frame.peer != sender.account, channel.members[frame.peer] != nil else {
                let error = frame.peer == channel.pending
                    ? SignalingError(.rtsNotAccepted, "\(frame.peer) has not accepted the session yet")
                    : SignalingError(.rtsNotMember, "\(frame.peer) is not in channel \(frame.channelID)")
                refuse(number, error, on: id)
                return wait
            }
        } else if channel.members.count < 2, let pending = channel.pending {
            refuse(number, SignalingError(.rtsNotAccepted, "\(pending) has not accepted the session yet"), on: id)
            return wait
        }
        flushRefusal(id, force: false)
        if let recorder = member.recorder {
            let elapsed = now - channel.startedAt
            let milliseconds = UInt32(truncatingIfNeeded: elapsed.components.seconds * 1_000 + elapsed.components.attoseconds / 1_000_000_000_000_000)
            do {
                try recorder.append(timestamp: milliseconds, frame.payload)
            } catch {
                statistics.recordingFailures += 1
                logger.error("rts: \(error.message); recording of \(sender.account) in channel \(frame.channelID) stops")
                channel.members[sender.account]?.recorder = nil
                channels[frame.channelID] = channel
            }
        }
        var out = allocator.buffer(capacity: RTSFrame.fixedHeaderSize + sender.account.utf8.count + size)
        RTSFrame.writeHeader(into: &out, channelID: frame.channelID, peer: sender.account)
        var payload = frame.payload
        out.writeBuffer(&payload)
        if frame.peer.isEmpty {
            for account in channel.order where account != sender.account {
                deliver(out, to: account, in: channel)
            }
        } else {
            deliver(out, to: frame.peer, in: channel)
        }
        statistics.messagesRelayed += 1
        statistics.bytesRelayed += size
        return wait
    }

    private func deliver(_ buffer: ByteBuffer, to account: String, in channel: Channel) {
        guard let member = channel.members[account], let id = devices[DeviceKey(account: account, device: member.device)],
              let connection = connections[id] else { return }
        guard connection.gauge.add(buffer.readableBytes, limits: configuration.queueLimit) else {
            tooSlow(id)
            return
        }
        if case .terminated = connection.sink.yield(.data(buffer)) { connection.gauge.sent(buffer.readableBytes) }
    }

    private func tooSlow(_ id: UInt64) {
        guard let connection = connections[id], let device = connection.device else { return }
        statistics.tooSlow += 1
        let queued = connection.gauge.queued
        logger.notice("rts: closing a data connection that does not read",
                      metadata: ["account": "\(device.account)", "queuedBytes": "\(queued.bytes)", "queuedMessages": "\(queued.messages)"])
        devices[device] = nil
        connections[id]?.device = nil
        close(id, code: 4_008, reason: "too slow: more than \(configuration.queueLimit.bytes) bytes unread")
        connection.gauge.abort()
        report(.dataConnectionLost(account: device.account, device: device.device, tooSlow: true))
    }

    // MARK: Commands from the hub

    public func apply(_ commands: [RTSRelayCommand]) {
        for command in commands { apply(command) }
    }

    public func apply(_ command: RTSRelayCommand) {
        switch command {
        case .open(let channelID, let pending):
            channels[channelID] = Channel(startedAt: clock.now, pending: pending)
        case .addMember(let channelID, let member, let announce):
            guard var channel = channels[channelID] else { return }
            if let announce { announceEvent(announce, in: channel) }
            var recorder: RTSRecordingWriter?
            if let file = member.recordFile, let directory = configuration.recordingDirectory {
                do {
                    recorder = try RTSRecordingWriter(path: (directory as NSString).appendingPathComponent(file))
                } catch {
                    statistics.recordingFailures += 1
                    logger.error("rts: \(error.message)")
                }
            }
            if channel.members[member.account] == nil { channel.order.append(member.account) }
            channel.members[member.account] = Member(device: member.device, recorder: recorder)
            if channel.pending == member.account { channel.pending = nil }
            channels[channelID] = channel
            let key = DeviceKey(account: member.account, device: member.device)
            if devices[key] == nil {
                // Its data connection went meanwhile: the hub takes it out again.
                report(.dataConnectionLost(account: member.account, device: member.device, tooSlow: false))
            }
        case .removeMember(let channelID, let account, let announce):
            guard var channel = channels[channelID] else { return }
            channel.members[account] = nil
            channel.order.removeAll { $0 == account }
            channels[channelID] = channel
            if let announce { announceEvent(announce, in: channel) }
        case .close(let channelID, let announce):
            guard let channel = channels.removeValue(forKey: channelID) else { return }
            if let announce { announceEvent(announce, in: channel) }
        case .deliver(let channelID, let account, let event):
            guard let member = channels[channelID]?.members[account],
                  let id = devices[DeviceKey(account: account, device: member.device)] else { return }
            send(.message(.event(event)), to: id)
        }
        statistics.channels = channels.count
    }

    private func announceEvent(_ event: PushedEvent, in channel: Channel) {
        for account in channel.order {
            guard let member = channel.members[account], let id = devices[DeviceKey(account: account, device: member.device)] else { continue }
            send(.message(.event(event)), to: id)
        }
    }

    // MARK: Helpers

    private func isMember(_ device: DeviceKey) -> Bool {
        channels.values.contains { $0.members[device.account]?.device == device.device }
    }

    private func send(_ message: RTSOutbound, to id: UInt64) {
        guard let connection = connections[id] else { return }
        // Text replies and events count against the queue like data: a receiver that reads
        // nothing cannot make them pile up either.
        guard connection.gauge.add(256, limits: configuration.queueLimit) else {
            tooSlow(id)
            return
        }
        if case .terminated = connection.sink.yield(message) { connection.gauge.sent(256) }
    }

    private func close(_ id: UInt64, code: UInt16, reason: String) {
        guard let connection = connections[id] else { return }
        connection.sink.yield(.close(code: code, reason: reason))
        connection.sink.finish()
    }

    private func refuse(_ number: UInt64, _ error: SignalingError, on id: UInt64) {
        statistics.refused += 1
        guard var connection = connections[id] else { return }
        if var pending = connection.refusal, pending.error == error {
            pending.last = number
            pending.count += 1
            connection.refusal = pending
            connections[id] = connection
        } else {
            if connection.refusal != nil { flushRefusal(id, force: true) }
            connections[id]?.refusal = Refusal(first: number, last: number, count: 1, error: error)
        }
        flushRefusal(id, force: false)
    }

    /// Reports the refusals held back: at once when `force` (another reason follows, a sync),
    /// else when the last report is 100 ms old.
    private func flushRefusal(_ id: UInt64, force: Bool) {
        guard let connection = connections[id], let refusal = connection.refusal else { return }
        let now = clock.now
        if !force, let last = connection.lastRefusalReport, now - last < .milliseconds(100) { return }
        connections[id]?.refusal = nil
        connections[id]?.lastRefusalReport = now
        send(.message(.event(.rtsDataRefused(Event.RTSDataRefused(first: refusal.first, last: refusal.last, count: refusal.count,
                                                                            error: refusal.error)))), to: id)
    }

    private func malformed(_ id: UInt64, _ error: SignalingError, requestID: UInt64? = nil) {
        statistics.malformed += 1
        send(.message(.error(id: requestID, error)), to: id)
        countMalformed(id)
    }

    private func countMalformed(_ id: UInt64) {
        connections[id]?.malformed += 1
        if let connection = connections[id], connection.malformed > configuration.malformedLimit {
            if let device = connection.device, devices[device] == id {
                devices[device] = nil
                connections[id]?.device = nil
                if isMember(device) { report(.dataConnectionLost(account: device.account, device: device.device, tooSlow: false)) }
            }
            close(id, code: 1_008, reason: "too many malformed messages")
        }
    }
}
