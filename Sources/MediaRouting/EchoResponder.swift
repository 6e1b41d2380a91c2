import Foundation
import MediaEngine
import Synchronization

/// The echo side of net-detect, sans-I/O: decides for each datagram whether to reflect it.
///
/// Only well-formed probe requests are answered, and the answer is the same datagram with
/// its kind changed, so it is never larger than what came in (no amplification). Each
/// source address has a token bucket (`rate` probes a second, bursts of `burst`); the table
/// holds at most `maximumSources` addresses, evicting those idle for 10 s, and refuses
/// probes from new sources while it is full of live ones. Memory is bounded by that table.
public struct EchoPolicy: Sendable {
    public var rate = 500.0
    public var burst = 500.0
    public var maximumSources = 4_096

    public init() {}
}

public struct EchoCounters: Sendable, Hashable {
    public var answered = 0
    public var malformed = 0
    public var rateLimited = 0
    /// Probes from a new source while the table was full of active ones.
    public var tableFull = 0
}

public struct EchoDecider: Sendable {
    public let policy: EchoPolicy
    public private(set) var counters = EchoCounters()
    private var sources: [SocketAddress: (bucket: TokenBucket, lastSeen: Duration)] = [:]

    public init(policy: EchoPolicy = EchoPolicy()) { self.policy = policy }

    /// Whether to answer `datagram` from `source`; when true, the caller turns it into the
    /// reply in place (`ProbePacket.markAsReply`) and sends it back.
    public mutating func shouldAnswer(_ datagram: UnsafeRawBufferPointer, from source: SocketAddress, now: Duration) -> Bool {
        guard let probe = try? ProbePacket(parsing: datagram), probe.kind == .request else {
            counters.malformed += 1
            return false
        }
        if sources[source] == nil, sources.count >= policy.maximumSources {
            sources = sources.filter { now - $0.value.lastSeen < .seconds(10) }
            guard sources.count < policy.maximumSources else {
                counters.tableFull += 1
                return false
            }
        }
        var entry = sources[source] ?? (TokenBucket(rate: policy.rate, burst: policy.burst), now)
        entry.lastSeen = now
        let admitted = entry.bucket.admit(now: now)
        sources[source] = entry
        guard admitted else {
            counters.rateLimited += 1
            return false
        }
        counters.answered += 1
        return true
    }
}

extension ProbePacket {
    /// Turns a request in `datagram` into its reply, in place.
    public static func markAsReply(_ datagram: UnsafeMutableRawBufferPointer) {
        guard datagram.count > 5 else { return }
        datagram[5] = Kind.reply.rawValue
    }
}

/// A UDP echo responder for net-detect on its own thread: `mediaengine netdetect --echo`
/// and the signaling server's echo port.
public final class EchoResponder: Sendable {
    public let socket: UDPSocket
    private let running = Atomic<Bool>(true)
    private let state: Locked<EchoDecider>
    private let thread = Locked<JoinableThread?>(nil)
    private let started = Atomic<Bool>(false)

    /// Binds `address` (port 0 picks one).
    /// - Throws: `TransportError` naming the address when it cannot be bound.
    public init(bindTo address: SocketAddress, policy: EchoPolicy = EchoPolicy()) throws(TransportError) {
        socket = try UDPSocket(bindTo: address)
        state = Locked(EchoDecider(policy: policy))
    }

    public var localAddress: SocketAddress { socket.localAddress }
    public var counters: EchoCounters { state.withLock { $0.counters } }

    /// Starts answering on a thread of its own.
    /// - Throws: `TransportError` when the system cannot start a thread.
    public func start() throws(TransportError) {
        guard !started.exchange(true, ordering: .relaxed) else { return }
        do throws(JoinableThread.StartError) {
            let answering = try JoinableThread(name: "net-detect echo") { [self] in answer() }
            thread.withLock { $0 = answering }
        } catch {
            started.store(false, ordering: .relaxed)
            throw TransportError(.socketFailed, "cannot start the echo thread: \(error)", systemError: error.status)
        }
    }

    /// The echo thread: answers until `stop()`.
    private func answer() {
        let clock = ContinuousClock()
        let start = clock.now
        var buffer = [UInt8](repeating: 0, count: 2_048)
        while running.load(ordering: .relaxed) {
            let received = try? buffer.withUnsafeMutableBytes { try socket.receive(into: $0, timeout: .milliseconds(100)) }
            guard let (count, source) = received ?? nil else { continue }
            let now = clock.now - start
            buffer.withUnsafeMutableBytes { bytes in
                let datagram = UnsafeMutableRawBufferPointer(rebasing: bytes[0..<count])
                guard state.withLock({ $0.shouldAnswer(UnsafeRawBufferPointer(datagram), from: source, now: now) }) else { return }
                ProbePacket.markAsReply(datagram)
                try? socket.send(UnsafeRawBufferPointer(datagram), to: source)
            }
        }
    }

    /// Stops answering (within 100 ms) and closes the socket.
    public func stop() {
        running.store(false, ordering: .relaxed)
        thread.withLock { $0 }?.join()
        socket.close()
    }
}
