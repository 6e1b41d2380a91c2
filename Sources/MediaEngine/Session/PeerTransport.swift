
/// The I/O half of a peer transport: the UDP socket (one when bundled, or one per port of
/// an SDP session), the clock, and the `MediaCore` they drive. It does no protocol work:
/// it moves datagrams between the sockets and the core, keeps the core's time, and sends
/// what the core queues.
///
/// Threads: the core sits behind a lock, so one thread may wait for datagrams and feed
/// them in (`run` or `waitForDatagrams` + `withCore`) while another sends media
/// (`withCore`). Waiting happens outside the lock. Sending and receiving allocate nothing
/// per packet.
public final class PeerTransport: Sendable {
    /// The sockets: index `i` is the `socket` streams and transmits name.
    public let sockets: [UDPSocket]
    private let core: Locked<MediaCore>
    private let start = ContinuousClock.now
    /// One receive buffer, used under the lock only.
    private let receiveBuffer: Locked<ReceiveBuffer>

    /// A datagram's worth of memory for the receiving thread, allocated once.
    final class ReceiveBuffer: @unchecked Sendable {
        // Only ever touched inside `receiveBuffer.withLock`, so never by two threads at once.
        let bytes = UnsafeMutableRawBufferPointer.allocate(byteCount: 65_536, alignment: 16)
        deinit { bytes.deallocate() }
    }

    /// Drives `core` over `sockets`.
    public init(core: sending MediaCore, sockets: [UDPSocket]) {
        self.core = Locked(core)
        self.sockets = sockets
        receiveBuffer = Locked(ReceiveBuffer())
    }

    /// The transport's clock: time since it was created.
    public var now: Duration { ContinuousClock.now - start }

    /// Runs `body` with the core and the current time under the lock, then sends every
    /// datagram the core queued.
    public func withCore<R: Sendable>(_ body: (MediaCore, Duration) throws -> R) rethrows -> R {
        try core.withLock { core in
            let now = self.now
            defer { flush(core) }
            return try body(core, now)
        }
    }

    /// Sends what the core queued; a datagram the socket refuses is as good as lost (the
    /// protocol recovers, as from any loss).
    private func flush(_ core: MediaCore) {
        while let transmit = core.pollTransmit() {
            let socket = transmit.socket < sockets.count ? sockets[transmit.socket] : sockets[0]
            try? socket.send(transmit.bytes, to: transmit.destination)
        }
    }

    /// Waits until a socket is readable or `timeout` passes, without the lock.
    /// - Returns: the index of a readable socket, or nil on timeout.
    public func waitForDatagrams(timeout: Duration, poller: inout SocketPoller) throws(TransportError) -> Int? {
        // Round up so a wait shorter than poll's millisecond does not spin.
        let rounded = timeout > .zero ? max(timeout, .milliseconds(1)) : .zero
        return try poller.wait(timeout: rounded)
    }

    /// Hands every datagram waiting on every socket to the core, then runs what is due.
    /// Call inside `withCore`.
    public func receivePending(into core: MediaCore, now: Duration) throws(TransportError) {
        // Each datagram's own arrival, not the read's: feedback must not report datagrams
        // that came apart as arriving together because this thread read them late.
        let stamps = ArrivalClock(now: now)
        try receiveBuffer.withLock { (buffer) throws(TransportError) in
            for (index, socket) in sockets.enumerated() {
                while let (count, source, stamp) = try socket.receiveStamped(into: buffer.bytes) {
                    core.handleDatagram(UnsafeMutableRawBufferPointer(rebasing: buffer.bytes[0..<count]), from: source,
                                        socket: index, now: now, arrival: stamps.arrival(stamp: stamp))
                }
            }
        }
        core.handleTimeout(now: now)
    }

    /// A poller over this transport's sockets.
    public func makePoller() -> SocketPoller { SocketPoller(sockets: sockets) }

    /// The loop of a receiving thread: waits for datagrams or the core's next deadline
    /// (at most `maximumWait`), feeds the core, then calls `locked` with the core under the
    /// lock and `unlocked` after it (for work that may block: decoding, sinks); until
    /// `locked` returns false or `stop` returns true.
    /// - Parameters:
    ///   - wake: An extra deadline of the caller's (held video frames), or nil.
    public func run(maximumWait: Duration = .milliseconds(50), stop: () -> Bool, wake: () -> Duration? = { nil },
                    locked: (MediaCore, Duration) throws -> Bool, unlocked: () throws -> Void = {}) throws {
        var poller = makePoller()
        while !stop() {
            let wait = withCore { core, now in
                var deadline = now + maximumWait
                if let timeout = core.nextTimeout { deadline = min(deadline, timeout) }
                if let extra = wake() { deadline = min(deadline, extra) }
                return max(.zero, deadline - now)
            }
            _ = try waitForDatagrams(timeout: wait, poller: &poller)
            let more = try withCore { core, now in
                try receivePending(into: core, now: now)
                return try locked(core, now)
            }
            try unlocked()
            if !more { break }
        }
    }

    /// Closes every socket.
    public func close() {
        for socket in sockets { socket.close() }
    }
}
