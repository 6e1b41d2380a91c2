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
    private let transport: WebSocketTransport
    private let finished: ClosureBox

    private init(messages: AsyncStream<Data>, transport: WebSocketTransport, finished: ClosureBox) {
        self.messages = messages
        self.transport = transport
        self.finished = finished
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
        let closure = ClosureBox()
        let transport = try await WebSocketTransport.open(url: url, timeout: timeout, maximumMessageSize: maximumMessageSize, logger: logger) { message in
            switch message {
            case .text(let text): deliver.yield(Data(text.utf8))
            case .binary(let buffer): deliver.yield(Data(buffer.readableBytesView))
            }
        } ended: { frame, failure in
            closure.value.withLock { $0 = Closure(code: frame.map { Self.number($0.closeCode) }, reason: failure ?? frame?.reason) }
            deliver.finish()
        }
        return SignalingConnection(messages: messages, transport: transport, finished: closure)
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
            try await transport.outbound.write(.text(String(decoding: data, as: UTF8.self)))
        } catch {
            throw SignalingError(.serverUnavailable, "the signaling connection is closed")
        }
    }

    /// Closes the connection (normal closure) and waits until it has ended.
    public func close() async {
        await transport.close()
    }

    /// How the connection ended, once it has.
    public var closure: Closure? { finished.value.withLock { $0 } }

    /// Shares the closure between the connection task and readers.
    final class ClosureBox: Sendable {
        let value = Locked<Closure?>(nil)
    }
}
