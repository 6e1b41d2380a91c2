import Foundation
import Logging
import MediaEngine
import NIOCore
import NIOWebSocket
import WSClient

/// A device's data connection for real-time sessions (`ws://HOST:PORT/rts`): data messages
/// out, paced by the quota; data and in-order events in, handed to `received` one at a time
/// (the reader waits for it, so a slow reader slows the connection, never a queue).
///
/// `NetCallManager` uses one per device; it is public for tools and tests that speak the data
/// protocol directly (a load generator, a client that misbehaves on purpose).
public final class RTSDataConnection: Sendable {
    /// What arrives: a data frame or a text envelope (an event; replies are taken here).
    public enum Inbound: Sendable {
        case data(RTSFrame)
        case event(ServerEvent)
    }

    public let url: String
    /// What the server lets this connection send.
    public let quota: RTSQuota
    private let transport: WebSocketTransport
    private var outbound: WebSocketOutboundWriter { transport.outbound }
    private let state: Locked<State>
    private let closure: Locked<String?>

    struct State {
        var nextID: UInt64 = 1
        var pending: [UInt64: CheckedContinuation<Data?, Never>] = [:]
        var ended = false
        /// Data messages sent (their numbers for the server's refusals).
        var sent: UInt64 = 0
        var bytes: Double
        var messages: Double
        var updated: ContinuousClock.Instant
    }

    private init(url: String, quota: RTSQuota, transport: WebSocketTransport, state: Locked<State>, closure: Locked<String?>) {
        self.url = url
        self.quota = quota
        self.transport = transport
        self.state = state
        self.closure = closure
    }

    /// The data connection's URL for a signaling server's (`ws://HOST:PORT/` → `ws://HOST:PORT/rts`).
    public static func url(forSignaling server: String) -> String {
        var base = server
        if let query = base.firstIndex(of: "?") { base = String(base[..<query]) }
        if !base.hasSuffix("/") { base += "/" }
        return base + "rts"
    }

    /// Connects, logs in as `device` with `token`, and starts reading.
    /// - Parameters:
    ///   - received: Called for each inbound message, in order; the reader waits for it.
    ///   - ended: Called once when the connection ends, with the server's reason if any.
    /// - Throws: `SignalingError`: the server cannot be reached, or refuses the login.
    public static func open(server: String, token: String, device: String, timeout: Duration = .seconds(10),
                            logger: Logger = Logger(label: "mediaengine.rts"),
                            received: @escaping @Sendable (Inbound) async -> Void,
                            ended: @escaping @Sendable (String?) async -> Void) async throws(SignalingError) -> RTSDataConnection {
        try await open(url: Self.url(forSignaling: server), token: token, device: device, timeout: timeout, logger: logger,
                       received: received, ended: ended)
    }

    /// Connects to the data connection URL `url` itself (one a `misdirected` refusal named:
    /// the node of a cluster that hosts a session or conference), logs in, starts reading.
    /// - Throws: `SignalingError`: not a `ws:` or `wss:` URL, the server cannot be reached,
    ///   or it refuses the login.
    public static func open(url: String, token: String, device: String, timeout: Duration = .seconds(10),
                            logger: Logger = Logger(label: "mediaengine.rts"),
                            received: @escaping @Sendable (Inbound) async -> Void,
                            ended: @escaping @Sendable (String?) async -> Void) async throws(SignalingError) -> RTSDataConnection {
        guard url.hasPrefix("ws://") || url.hasPrefix("wss://") else {
            throw SignalingError(.invalidRequest, "the data connection URL '\(url)' is not a ws: or wss: URL")
        }
        let state = Locked(State(bytes: 0, messages: 0, updated: ContinuousClock.now))
        let closure = Locked<String?>(nil)
        let transport = try await WebSocketTransport.open(url: url, timeout: timeout, maximumMessageSize: 1 << 21, logger: logger) { message in
            switch message {
            case .binary(let buffer):
                guard let frame = try? RTSFrame.decode(buffer) else { return }
                await received(.data(frame))
            case .text(let text):
                let data = Data(text.utf8)
                guard let envelope = try? Envelope.decode(data, maximumSize: Int.max) else { return }
                if let id = envelope.id, envelope.type == MessageType.ok || envelope.type == MessageType.error {
                    let waiter = state.withLock { $0.pending.removeValue(forKey: id) }
                    waiter?.resume(returning: data)
                } else {
                    await received(.event(ServerEvent(type: envelope.type, message: data)))
                }
            }
        } ended: { frame, failure in
            let reason = failure ?? frame?.reason
            closure.withLock { $0 = reason }
            let waiters = state.withLock { state -> [CheckedContinuation<Data?, Never>] in
                state.ended = true
                let waiters = Array(state.pending.values)
                state.pending.removeAll()
                return waiters
            }
            for waiter in waiters { waiter.resume(returning: nil) }
            await ended(reason)
        }
        // Log in; the reply carries the quota to pace by.
        let connection = RTSDataConnection(url: url, quota: RTSQuota(), transport: transport, state: state, closure: closure)
        let login: Reply.RTSLogin
        do {
            login = try await connection.request(MessageType.login, Request.Login(token: token, device: device), as: Reply.RTSLogin.self,
                                                 timeout: timeout)
        } catch {
            await connection.close()
            throw error
        }
        state.withLock { state in
            state.bytes = Double(login.quota.bytesPerSecond) / 2
            state.messages = Double(login.quota.messagesPerSecond) / 2
            state.updated = .now
        }
        return RTSDataConnection(url: url, quota: login.quota, transport: transport, state: state, closure: closure)
    }

    /// Sends a request on the data connection and waits for its reply.
    func request<Body: Encodable & Sendable, Result: Decodable & Sendable>(_ type: String, _ body: Body, as result: Result.Type,
                                                                       timeout: Duration) async throws(SignalingError) -> Result {
        let id: UInt64? = state.withLock { state in
            guard !state.ended else { return nil }
            defer { state.nextID += 1 }
            return state.nextID
        }
        guard let id else { throw SignalingError(.serverDisconnected, "\(type): the data connection is closed") }
        let message = TypedEnvelope(id: id, type: type, body: body).encoded()
        let timer = Task { [state] in
            try? await Task.sleep(for: timeout)
            state.withLock { $0.pending.removeValue(forKey: id) }?.resume(returning: nil)
        }
        defer { timer.cancel() }
        let reply: Data? = await withCheckedContinuation { continuation in
            let registered = state.withLock { state -> Bool in
                guard !state.ended else { return false }
                state.pending[id] = continuation
                return true
            }
            guard registered else { return continuation.resume(returning: nil) }
            Task {
                do {
                    try await outbound.write(.text(String(decoding: message, as: UTF8.self)))
                } catch {
                    state.withLock { $0.pending.removeValue(forKey: id) }?.resume(returning: nil)
                }
            }
        }
        guard let reply else { throw SignalingError(.serverDisconnected, "\(type): no reply on the data connection") }
        let envelope = try Envelope.decode(reply, maximumSize: Int.max)
        if envelope.type == MessageType.error {
            throw try Envelope.decodeBody(ErrorBody.self, from: reply, messageType: type).error
        }
        return try Envelope.decodeBody(Result.self, from: reply, messageType: type)
    }

    /// Sends one data message, first waiting until the quota allows it (the same one-second
    /// buckets the server keeps, started half full, so this side never overtakes it).
    /// - Returns: The message's number on this connection (what a refusal names).
    /// - Throws: `messageTooLarge` over the quota's size; `serverDisconnected` when closed.
    @discardableResult
    public func send(_ payload: Data, channelID: UInt64, to peer: String) async throws(SignalingError) -> UInt64 {
        guard payload.count <= quota.maximumMessageSize else {
            throw SignalingError(.messageTooLarge, "a data message of \(payload.count) bytes exceeds \(quota.maximumMessageSize)")
        }
        while true {
            let wait: Duration? = state.withLock { state in
                let now = ContinuousClock.now
                let elapsed = Double((now - state.updated).components.seconds) + Double((now - state.updated).components.attoseconds) / 1e18
                state.updated = now
                // A margin under the server's rate: two clocks never agree exactly.
                let byteRate = Double(quota.bytesPerSecond) * 0.97
                let messageRate = Double(quota.messagesPerSecond) * 0.97
                state.bytes = min(byteRate / 2, state.bytes + elapsed * byteRate)
                state.messages = min(messageRate / 2, state.messages + elapsed * messageRate)
                let needBytes = Double(payload.count) - state.bytes
                let needMessages = 1 - state.messages
                if needBytes <= 0, needMessages <= 0 {
                    state.bytes -= Double(payload.count)
                    state.messages -= 1
                    return nil
                }
                return .seconds(max(needBytes / byteRate, needMessages / messageRate, 0.001))
            }
            guard let wait else { break }
            try? await Task.sleep(for: wait)
        }
        var buffer = ByteBufferAllocator().buffer(capacity: RTSFrame.fixedHeaderSize + peer.utf8.count + payload.count)
        RTSFrame.writeHeader(into: &buffer, channelID: channelID, peer: peer)
        buffer.writeBytes(payload)
        let number: UInt64? = state.withLock { state in
            guard !state.ended else { return nil }
            state.sent += 1
            return state.sent
        }
        guard let number else { throw SignalingError(.serverDisconnected, "the data connection is closed") }
        do {
            try await outbound.write(.binary(buffer))
        } catch {
            throw SignalingError(.serverDisconnected, "the data connection is closed")
        }
        return number
    }

    /// Sends one binary message as it is, unpaced and unchecked (tools and tests).
    public func sendRaw(_ buffer: ByteBuffer) async throws(SignalingError) {
        state.withLock { $0.sent += 1 }
        do {
            try await outbound.write(.binary(buffer))
        } catch {
            throw SignalingError(.serverDisconnected, "the data connection is closed")
        }
    }

    /// Waits until the server has relayed everything sent before.
    public func sync(timeout: Duration = .seconds(10)) async throws(SignalingError) {
        _ = try await request(MessageType.rtsSync, Request.RTSSync(), as: Reply.Empty.self, timeout: timeout)
    }

    /// Why the connection ended, once it has.
    public var endReason: String? { closure.withLock { $0 } }

    /// Closes the connection and waits until it has ended.
    public func close() async {
        await transport.close()
    }
}
