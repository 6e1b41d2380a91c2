import MediaEngine
import Synchronization

/// A UDP socket on loopback that answers datagrams on a thread of its own: an echo server,
/// a STUN server that says what the test wants, an impostor.
///
/// `stop()` ends the thread and waits for it before the socket closes: a close racing a
/// receive on another thread is a data race on the descriptor (ThreadSanitizer reports it).
public final class UDPResponder: Sendable {
    public let localAddress: SocketAddress
    private let socket: UDPSocket
    private let stopping = Atomic<Bool>(false)
    private let senders = Locked<[SocketAddress: Int]>([:])
    private let thread: Locked<JoinableThread?> = Locked(nil)

    /// - Parameter answer: given each datagram and its sender, the reply to send back to
    ///   the sender, or nil to send nothing.
    public init(host: String = "127.0.0.1", answer: @escaping @Sendable ([UInt8], SocketAddress) -> [UInt8]?) throws {
        let socket = try UDPSocket(bindTo: SocketAddress(host: host, port: 0))
        self.socket = socket
        localAddress = socket.localAddress
        let thread = try JoinableThread(name: "test responder") { [self] in
            var buffer = [UInt8](repeating: 0, count: 2_048)
            while !stopping.load(ordering: .relaxed) {
                guard let (count, source) = (try? buffer.withUnsafeMutableBytes { try socket.receive(into: $0, timeout: .milliseconds(20)) }) ?? nil
                else { continue }
                senders.withLock { $0[source, default: 0] += 1 }
                guard let reply = answer(Array(buffer[0..<count]), source) else { continue }
                _ = try? reply.withUnsafeBytes { try socket.send($0, to: source) }
            }
        }
        self.thread.withLock { $0 = thread }
    }

    /// Sends every datagram back to where it came from.
    public static func echo() throws -> UDPResponder { try UDPResponder { bytes, _ in bytes } }

    /// Datagrams received so far, per sender.
    public var received: [SocketAddress: Int] { senders.withLock { $0.detached } }

    /// Ends the thread, then closes the socket. Later calls do nothing.
    public func stop() {
        stopping.store(true, ordering: .relaxed)
        guard let thread = thread.withLock({ value in defer { value = nil }; return value }) else { return }
        thread.join()
        socket.close()
    }

    deinit { stop() }
}
