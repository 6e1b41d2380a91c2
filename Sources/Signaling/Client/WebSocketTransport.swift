import Logging
import NIOCore
import NIOWebSocket
import WSClient

/// A client WebSocket run by a task of its own (swift-websocket's WSClient): what the server
/// sends goes to `read`, one message at a time, in order (the reader awaits it, so a slow
/// `read` slows the connection, never a queue). Both kinds of connection a client makes
/// (signaling, and a real-time session's data) are one of these.
struct WebSocketTransport: Sendable {
    /// What writes to the server.
    let outbound: WebSocketOutboundWriter
    /// The task running the connection: it ends once the connection did (and `ended` ran).
    let task: Task<Void, Never>
    private let stop: AsyncStream<Void>.Continuation

    /// Connects to `url` within `timeout`.
    /// - Parameters:
    ///   - read: Each message from the server, in order.
    ///   - ended: Called once when the connection's task ends (also after an open that
    ///     failed): the server's close frame, or why the connection failed.
    /// - Throws: `SignalingError` `.serverUnavailable` naming the URL when it cannot connect
    ///   in time (refused, unresolvable, not a WebSocket server).
    static func open(url: String, timeout: Duration, maximumMessageSize: Int, logger: Logger,
                     read: @escaping @Sendable (WebSocketMessage) async -> Void,
                     ended: @escaping @Sendable (_ frame: WebSocketCloseFrame?, _ failure: String?) async -> Void)
        async throws(SignalingError) -> WebSocketTransport {
        let (ready, announce) = AsyncStream<Result<WebSocketOutboundWriter, SignalingError>>.makeStream()
        let (stopped, stop) = AsyncStream<Void>.makeStream()
        let task = Task {
            var frame: WebSocketCloseFrame?
            var failure: String?
            do {
                frame = try await WebSocketClient.connect(
                    url: url, configuration: .init(maxFrameSize: maximumMessageSize, autoPing: .disabled), logger: logger
                ) { inbound, outbound, _ in
                    announce.yield(.success(outbound))
                    await withTaskGroup(of: Void.self) { group in
                        group.addTask {
                            do {
                                for try await message in inbound.messages(maxSize: maximumMessageSize) { await read(message) }
                            } catch {}
                        }
                        group.addTask { for await _ in stopped { break } }
                        await group.next()
                        group.cancelAll()
                    }
                }
            } catch {
                announce.yield(.failure(SignalingError(.serverUnavailable, "cannot connect to \(url): \(error)")))
                failure = "\(error)"
            }
            announce.finish()
            await ended(frame, failure)
        }
        let outcome = await withTaskGroup(of: Result<WebSocketOutboundWriter, SignalingError>?.self) { group in
            group.addTask {
                for await result in ready { return result }
                return .failure(SignalingError(.serverUnavailable, "cannot connect to \(url)"))
            }
            group.addTask {
                try? await Task.sleep(for: timeout)
                return nil
            }
            let first = await group.next() ?? nil
            group.cancelAll()
            return first
        }
        switch outcome {
        case .success(let outbound)?:
            return WebSocketTransport(outbound: outbound, task: task, stop: stop)
        case .failure(let error)?:
            task.cancel()
            throw error
        case nil:
            task.cancel()
            throw SignalingError(.serverUnavailable, "cannot connect to \(url): no answer within \(timeout)")
        }
    }

    /// Closes the connection (normal closure) and waits until it has ended.
    func close() async {
        stop.yield()
        stop.finish()
        await task.value
    }
}
