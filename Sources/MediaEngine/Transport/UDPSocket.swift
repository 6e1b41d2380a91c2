import CBatchIO
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// A bound UDP socket for RTP and RTCP. Sending and receiving use caller buffers and
/// allocate nothing. One thread may send while another receives; closing is final.
public final class UDPSocket: @unchecked Sendable {
    // @unchecked: the only state is the descriptor, set once; the kernel serialises
    // concurrent send and receive on it. `close()` must not race with other calls.
    private var descriptor: Int32
    /// The address the socket is bound to (with the kernel's port when bound to 0).
    public let localAddress: SocketAddress

    /// Binds a socket to `address` (port 0 picks a free port).
    /// - Parameters:
    ///   - receiveBufferSize: kernel receive buffer to ask for, in bytes.
    public init(bindTo address: SocketAddress, receiveBufferSize: Int = 1 << 20) throws(TransportError) {
        let family = address.isIPv6 ? AF_INET6 : AF_INET
        // Close-on-exec: a process the app starts must not keep the port bound.
        let descriptor = socket(family, Int32(SOCK_DGRAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        guard descriptor >= 0 else { throw TransportError.system("socket") }
        // Each datagram carries the time it arrived (`receiveStamped(into:)`'s stamp, and
        // `DatagramBatch`'s): a socket that cannot stamp gives 0, read as "now".
        _ = CBatchIO_stampArrivals(descriptor)
        var size = Int32(receiveBufferSize)
        _ = setsockopt(descriptor, SOL_SOCKET, SO_RCVBUF, &size, socklen_t(MemoryLayout<Int32>.size))
        if address.isIPv6 {
            var only: Int32 = 1
            _ = setsockopt(descriptor, Int32(IPPROTO_IPV6), IPV6_V6ONLY, &only, socklen_t(MemoryLayout<Int32>.size))
        }
        let bound = address.withSockaddr { bind(descriptor, $0, $1) }
        guard bound == 0 else {
            let error = TransportError.system("bind \(address)")
            Glibc.close(descriptor)
            throw error
        }
        var storage = sockaddr_storage()
        var length = socklen_t(MemoryLayout<sockaddr_storage>.size)
        let named = withUnsafeMutablePointer(to: &storage) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(descriptor, $0, &length) }
        }
        guard named == 0, let local = SocketAddress(storage) else {
            let error = TransportError.system("getsockname")
            Glibc.close(descriptor)
            throw error
        }
        self.descriptor = descriptor
        self.localAddress = local
    }

    deinit { close() }

    /// Closes the socket; later calls fail with `closed`.
    public func close() {
        if descriptor >= 0 {
            Glibc.close(descriptor)
            descriptor = -1
        }
    }

    /// Sends one datagram.
    public func send(_ bytes: UnsafeRawBufferPointer, to address: SocketAddress) throws(TransportError) {
        guard descriptor >= 0 else { throw TransportError(.closed, "socket is closed") }
        while true {
            let sent = address.withSockaddr { sendto(descriptor, bytes.baseAddress, bytes.count, 0, $0, $1) }
            if sent >= 0 { return }
            if errno == EINTR { continue }
            // A peer that is not listening yet answers with ICMP; UDP media carries on.
            if errno == ECONNREFUSED { return }
            throw TransportError.system("send to \(address)")
        }
    }

    /// Waits up to `timeout` for a datagram and reads it into `buffer`.
    /// - Returns: the byte count and sender, or nil when the timeout passed first.
    ///   Datagrams longer than `buffer` are truncated to it.
    public func receive(into buffer: UnsafeMutableRawBufferPointer, timeout: Duration) throws(TransportError) -> (Int, SocketAddress)? {
        guard descriptor >= 0 else { throw TransportError(.closed, "socket is closed") }
        var descriptors = pollfd(fd: descriptor, events: Int16(POLLIN), revents: 0)
        guard try SocketPoller.wait(&descriptors, count: 1, timeout: timeout) != nil else { return nil }
        return try receiveNow(into: buffer)
    }

    /// Reads a datagram that `wait` said is ready, or nil if none is (never blocks).
    public func receiveNow(into buffer: UnsafeMutableRawBufferPointer) throws(TransportError) -> (Int, SocketAddress)? {
        try receiveStamped(into: buffer).map { ($0.count, $0.source) }
    }

    /// Reads a datagram that `wait` said is ready, or nil if none is (never blocks), with
    /// the kernel's stamp of its arrival (nanoseconds of CLOCK_REALTIME, 0 if none): an
    /// `ArrivalClock` turns it into the caller's time.
    public func receiveStamped(into buffer: UnsafeMutableRawBufferPointer) throws(TransportError)
        -> (count: Int, source: SocketAddress, stamp: Int64)? {
        guard descriptor >= 0 else { throw TransportError(.closed, "socket is closed") }
        var datagram = CBatchIO_datagram()
        datagram.buffer = buffer.baseAddress
        datagram.capacity = buffer.count
        while true {
            let received = CBatchIO_receive(descriptor, &datagram, 1)
            if received == 0 { return nil }
            guard received > 0 else {
                errno = -received
                throw TransportError.system("receive on \(localAddress)")
            }
            // EINTR and ICMP refusals left by earlier sends are read past in CBatchIO_receive.
            guard let sender = SocketAddress(datagram.address) else { continue }
            return (min(datagram.length, buffer.count), sender, datagram.arrival)
        }
    }

    package var rawDescriptor: Int32 { descriptor }
}

/// Waits for any of a fixed set of sockets to become readable. Build once, wait many
/// times: waiting allocates nothing. The poller holds its sockets, so their descriptors
/// stay open (and are never another file's) while it lives; one its owner closes makes
/// `wait` throw `closed` (`close()` must not race with a wait).
public struct SocketPoller {
    private var descriptors: [pollfd]
    private let sockets: [UDPSocket]
    private let doorbell: Doorbell?

    /// - Parameter doorbell: Also wakes the wait when rung; `wait` then returns
    ///   `sockets.count` (and the doorbell is quiet again).
    public init(sockets: some Collection<UDPSocket>, doorbell: Doorbell? = nil) {
        self.sockets = Array(sockets)
        self.doorbell = doorbell
        descriptors = self.sockets.map { pollfd(fd: $0.rawDescriptor, events: Int16(POLLIN), revents: 0) }
        if let doorbell { descriptors.append(pollfd(fd: doorbell.descriptor, events: Int16(POLLIN), revents: 0)) }
    }

    /// Waits up to `timeout`.
    /// - Returns: the index of a readable socket, or nil on timeout.
    public mutating func wait(timeout: Duration) throws(TransportError) -> Int? {
        // Its number may be another file's by now.
        for socket in sockets where socket.rawDescriptor < 0 {
            throw TransportError(.closed, "socket \(socket.localAddress) is closed")
        }
        let ready = try descriptors.withUnsafeMutableBufferPointer { (buffer) throws(TransportError) in
            try Self.wait(buffer.baseAddress!, count: buffer.count, timeout: timeout)
        }
        if let doorbell, ready == sockets.count { doorbell.quiet() }
        return ready
    }

    /// Waits up to `timeout` on `count` descriptors.
    /// - Returns: the index of the first readable one, or nil on timeout.
    static func wait(_ descriptors: UnsafeMutablePointer<pollfd>, count: Int, timeout: Duration) throws(TransportError) -> Int? {
        // ppoll, not poll: poll counts whole milliseconds, and a wait under one would
        // become no wait at all (a loop waiting for a deadline 0.6 ms away would spin).
        let (seconds, attoseconds) = max(.zero, timeout).components
        // A day at most: longer waits are never asked for, and the product cannot overflow.
        let wait = min(seconds, 86_400) * 1_000_000_000 + (seconds >= 86_400 ? 0 : attoseconds / 1_000_000_000)
        while true {
            let ready = CBatchIO_wait(descriptors, nfds_t(count), wait)
            if ready == 0 { return nil }
            if ready < 0 {
                if errno == EINTR { continue }
                throw TransportError.system("poll")
            }
            for index in 0..<count where descriptors[index].revents != 0 {
                // Not a socket any more: a wait on it would return at once, forever.
                if descriptors[index].revents & Int16(POLLNVAL) != 0 {
                    throw TransportError(.closed, "socket was closed while polled")
                }
                return index
            }
            return nil
        }
    }
}

/// Wakes a thread waiting in a `SocketPoller` from another thread (an `eventfd`): one
/// ring, or many before the waiter looks, wakes it once. Ringing never blocks and
/// allocates nothing.
public final class Doorbell: @unchecked Sendable {
    // @unchecked: the descriptor is set once; the kernel serialises writes and reads.
    let descriptor: Int32

    /// - Throws: `TransportError` when the system has no event descriptor to give.
    public init() throws(TransportError) {
        let descriptor = CBatchIO_doorbell()
        guard descriptor >= 0 else { throw TransportError.system("eventfd") }
        self.descriptor = descriptor
    }

    deinit { Glibc.close(descriptor) }

    /// Wakes the waiter (or its next wait).
    public func ring() {
        var one: UInt64 = 1
        _ = write(descriptor, &one, MemoryLayout<UInt64>.size)
    }

    /// Takes the rings so far: the next wait sleeps until the next ring.
    func quiet() {
        var count: UInt64 = 0
        _ = read(descriptor, &count, MemoryLayout<UInt64>.size)
    }
}
