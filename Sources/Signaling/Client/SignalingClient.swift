import Foundation
import Logging

/// A message the server pushed (no request id): its type and the whole message, for
/// `Envelope.decodeBody`.
public struct ServerEvent: Sendable, Hashable {
    public var type: String
    public var message: Data

    /// The typed body.
    public func body<Body: Decodable>(_ type: Body.Type) throws(SignalingError) -> Body {
        try Envelope.decodeBody(type, from: message, messageType: self.type)
    }
}

/// Requests with replies over one `SignalingConnection`: each request gets the next id,
/// and its `ok` or `error` reply resumes the caller; everything else comes out of
/// `events`. When the connection ends, waiting requests fail with `serverUnavailable`
/// and `events` finishes.
public actor SignalingClient {
    public nonisolated let connection: SignalingConnection
    /// Events in arrival order; one reader.
    public nonisolated let events: AsyncStream<ServerEvent>
    private let deliver: AsyncStream<ServerEvent>.Continuation
    private var nextID: UInt64 = 1
    private var pending: [UInt64: CheckedContinuation<Data?, Never>] = [:]
    private var ended = false
    /// Requests to write, in the order `request` was called: one writer sends them, so a
    /// request never overtakes an earlier one on the wire (a task per send could: a
    /// `hangup` before the `control` asked first, trickled candidates before the answer).
    private let outbox: AsyncStream<(id: UInt64, message: Data)>.Continuation

    public init(connection: SignalingConnection) {
        self.connection = connection
        (events, deliver) = AsyncStream<ServerEvent>.makeStream(bufferingPolicy: .unbounded)
        let (writes, outbox) = AsyncStream<(id: UInt64, message: Data)>.makeStream(bufferingPolicy: .unbounded)
        self.outbox = outbox
        Task { await self.read() }
        Task { [connection] in
            for await write in writes {
                do {
                    try await connection.send(write.message)
                } catch {
                    await self.expire(write.id)
                }
            }
        }
    }

    /// Connects to `url` and wraps the connection.
    public static func connect(url: String, timeout: Duration = .seconds(10), logger: Logger = Logger(label: "mediaengine.signaling"))
        async throws(SignalingError) -> SignalingClient {
        SignalingClient(connection: try await SignalingConnection.open(url: url, timeout: timeout, logger: logger))
    }

    private func read() async {
        for await data in connection.messages {
            guard let envelope = try? Envelope.decode(data, maximumSize: Int.max) else { continue }
            if let id = envelope.id, envelope.type == MessageType.ok || envelope.type == MessageType.error,
               let continuation = pending.removeValue(forKey: id) {
                continuation.resume(returning: data)
            } else {
                // Events, and replies nobody waits for (timed out, or to raw messages).
                deliver.yield(ServerEvent(type: envelope.type, message: data))
            }
        }
        ended = true
        outbox.finish()
        for continuation in pending.values { continuation.resume(returning: nil) }
        pending.removeAll()
        deliver.finish()
    }

    /// Sends a request and waits for its reply.
    ///
    /// - Returns: The `ok` reply's body as `Result`.
    /// - Throws: The server's `SignalingError` for an `error` reply; `.serverUnavailable`
    ///   when the connection is closed or closes first; `.requestTimeout` after `timeout`.
    public func request<Body: Encodable & Sendable, Result: Decodable & Sendable>(_ type: String, _ body: Body, as result: Result.Type,
                                                                       timeout: Duration = .seconds(10))
        async throws(SignalingError) -> Result {
        guard !ended else { throw SignalingError(.serverUnavailable, "\(type): the signaling connection is closed") }
        let id = nextID
        nextID += 1
        let message = TypedEnvelope(id: id, type: type, body: body).encoded()
        let reply: Data? = await withCheckedContinuation { continuation in
            pending[id] = continuation
            outbox.yield((id, message))
            Task {
                try? await Task.sleep(for: timeout)
                self.expire(id, timedOut: true)
            }
        }
        guard let reply else {
            if timedOut.remove(id) != nil {
                throw SignalingError(.requestTimeout, "\(type): no reply within \(timeout)")
            }
            throw SignalingError(.serverUnavailable, "\(type): the signaling connection closed")
        }
        let envelope = try Envelope.decode(reply, maximumSize: Int.max)
        if envelope.type == MessageType.error {
            throw try Envelope.decodeBody(ErrorBody.self, from: reply, messageType: type).error
        }
        return try Envelope.decodeBody(Result.self, from: reply, messageType: type)
    }

    private var timedOut: Set<UInt64> = []

    private func expire(_ id: UInt64, timedOut late: Bool = false) {
        guard let continuation = pending.removeValue(forKey: id) else { return }
        if late { timedOut.insert(id) }
        continuation.resume(returning: nil)
    }

    /// Closes the connection.
    public func close() async {
        await connection.close()
    }
}
