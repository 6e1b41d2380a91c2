import Foundation
import MediaEngine
import Logging
import NIOCore
import NIOWebSocket
import WSClient

/// One WebSocket connection to a signaling server (swift-websocket's WSClient), as raw
/// messages: what is sent is text, what arrives comes out of `messages` in order. The
/// typed layer is `SignalingClient`.
///
/// Sendable: writes may come from any task; the stream has one reader.
public final class SignalingConnection: Sendable {
    /// How the connection ended.
    public struct Closure: Sendable, Hashable {
        /// The WebSocket close code the server sent, if any.
        public var code: Int?
        public var reason: String?
    }

    /// Every message the server sends, in order; finishes when the connection closes.
    public let messages: AsyncStream<Data>
    private let outbound: WebSocketOutboundWriter
    private let finished: ClosureBox
    private let task: Task<Void, Never>
    private let stop: AsyncStream<Void>.Continuation

    private init(messages: AsyncStream<Data>, outbound: WebSocketOutboundWriter, finished: ClosureBox,
                 task: Task<Void, Never>, stop: AsyncStream<Void>.Continuation) {
        self.messages = messages
        self.outbound = outbound
        self.finished = finished
        self.task = task
        self.stop = stop
    }

    /// Connects to `url` (`ws://HOST:PORT[/PATH]`).
    ///
    /// - Parameters:
    ///   - timeout: Longest wait for the TCP connection and the upgrade.
    ///   - maximumMessageSize: Largest message accepted from the server.
    /// - Throws: `SignalingError` `.serverUnavailable` naming the URL when it cannot connect
    ///   in time (refused, unresolvable, not a WebSocket server).
    public static func open(url: String, timeout: Duration = .seconds(10), maximumMessageSize: Int = 1 << 21,
                            logger: Logger = Logger(label: "mediaengine.signaling")) async throws(SignalingError)
        -> SignalingConnection {
        let (messages, deliver) = AsyncStream<Data>.makeStream(bufferingPolicy: .unbounded)
        let (ready, announce) = AsyncStream<Result<WebSocketOutboundWriter, SignalingError>>.makeStream()
        let (stopped, stop) = AsyncStream<Void>.makeStream()
        let closure = ClosureBox()
        let task = Task {
            do {
                let frame = try await WebSocketClient.connect(
                    url: url, configuration: .init(maxFrameSize: maximumMessageSize, autoPing: .disabled), logger: logger
                ) { inbound, outbound, _ in
                    announce.yield(.success(outbound))
                    await withTaskGroup(of: Void.self) { group in
                        group.addTask {
                            do {
                                for try await message in inbound.messages(maxSize: maximumMessageSize) {
                                    switch message {
                                    case .text(let text): deliver.yield(Data(text.utf8))
                                    case .binary(let buffer): deliver.yield(Data(buffer.readableBytesView))
                                    }
                                }
                            } catch {}
                        }
                        group.addTask { for await _ in stopped { break } }
                        await group.next()
                        group.cancelAll()
                    }
                }
                closure.value.withLock { $0 = Closure(code: frame.map { Self.number($0.closeCode) }, reason: frame?.reason) }
            } catch {
                announce.yield(.failure(SignalingError(.serverUnavailable, "cannot connect to \(url): \(error)")))
                closure.value.withLock { $0 = Closure(code: nil, reason: "\(error)") }
            }
            announce.finish()
            deliver.finish()
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
            return SignalingConnection(messages: messages, outbound: outbound, finished: closure, task: task, stop: stop)
        case .failure(let error)?:
            task.cancel()
            throw error
        case nil:
            task.cancel()
            throw SignalingError(.serverUnavailable, "cannot connect to \(url): no answer within \(timeout)")
        }
    }

    private static func number(_ code: WebSocketErrorCode) -> Int {
        switch code {
        case .normalClosure: 1_000
        case .goingAway: 1_001
        case .protocolError: 1_002
        case .unacceptableData: 1_003
        case .dataInconsistentWithMessage: 1_007
        case .policyViolation: 1_008
        case .messageTooLarge: 1_009
        case .missingExtension: 1_010
        case .unexpectedServerError: 1_011
        case .unknown(let value): Int(value)
        }
    }

    /// Sends one text message.
    /// - Throws: `SignalingError` `.serverUnavailable` when the connection has closed.
    public func send(_ data: Data) async throws(SignalingError) {
        do {
            try await outbound.write(.text(String(decoding: data, as: UTF8.self)))
        } catch {
            throw SignalingError(.serverUnavailable, "the signaling connection is closed")
        }
    }

    /// Closes the connection (normal closure) and waits until it has ended.
    public func close() async {
        stop.yield()
        stop.finish()
        await task.value
    }

    /// How the connection ended, once it has.
    public var closure: Closure? { finished.value.withLock { $0 } }

    /// Shares the closure between the connection task and readers.
    final class ClosureBox: Sendable {
        let value = Locked<Closure?>(nil)
    }
}
