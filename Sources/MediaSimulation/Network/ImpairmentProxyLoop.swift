import MediaEngine

#if canImport(Glibc)
import Glibc
#endif

/// One client's NAT entry: the address it sends from and the upstream socket that
/// speaks for it to the target.
final class ProxyClientMapping {
    let client: SocketAddress
    let socket: UDPSocket
    var lastActivity: Duration
    /// Datagrams of either direction waiting in the heap; a mapping with any is not idle.
    var pending = 0

    init(client: SocketAddress, socket: UDPSocket, now: Duration) {
        self.client = client
        self.socket = socket
        lastActivity = now
    }
}

/// The proxy thread's side: polls the wake signal, the listening socket and every
/// upstream socket, runs each datagram past its direction's model, and sends it when due.
///
/// Owned by the proxy thread alone once started; it reaches the owner only through
/// `ImpairmentProxyShared`. Packet buffers are recycled, so steady traffic of ordinary
/// sizes allocates nothing per packet.
final class ImpairmentProxyLoop {
    private struct Pending {
        var bytes: [UInt8]
        var direction: ImpairmentProxyShared.Direction
        var isCopy: Bool
        var mapping: ProxyClientMapping
    }

    /// Per-direction delivery counts gathered over one pass, published under one lock.
    private struct Tally {
        var delivered = 0
        var datagrams = 0
        var bytes = 0
        var failures = 0
        var removed = 0
        var lateness: Duration = .zero

        mutating func apply(to statistics: inout UDPImpairmentProxy.DirectionStatistics) {
            statistics.delivered += delivered
            statistics.datagramsSent += datagrams
            statistics.bytesSent += bytes
            statistics.sendFailures += failures
            statistics.pending -= removed
            statistics.maximumLateness = max(statistics.maximumLateness, lateness)
        }
    }

    /// Buffers this size or smaller are kept for reuse; bigger ones are freed after use.
    private static let reusableBufferCapacity = 2_048
    private static let spareBufferLimit = 1_024
    /// Datagrams read from one socket per wake-up before the others get a turn.
    private static let readBatch = 64
    private static let upstreamReceiveBuffer = 256 << 10

    private let listener: UDPSocket
    private let forward: SocketAddress
    private let forwardBindAddress: SocketAddress
    private let wake: ProxyWakeSignal
    private let shared: ImpairmentProxyShared
    private let limits: UDPImpairmentProxy.Limits
    private let epoch = ContinuousClock.now
    private let expiryInterval: Duration

    private var heap = DeliveryHeap<Pending>(reservingCapacity: 1_024)
    private var pendingBytes = 0
    private var clients: [SocketAddress: ProxyClientMapping] = [:]
    /// Mappings in poll order: `pollSet[index + 2]` is `polled[index].socket`.
    private var polled: [ProxyClientMapping] = []
    private var pollSet: [pollfd] = []
    private var pollSetIsStale = true
    /// Set when a mapping leaves `polled`, which shifts the indices of a poll pass.
    private var mappingRemoved = false
    private var spareBuffers: [[UInt8]] = []
    private let receiveBuffer = UnsafeMutableRawBufferPointer.allocate(byteCount: 65_536, alignment: 16)
    private var nextExpiryScan: Duration = .zero

    init(listener: UDPSocket, forward: SocketAddress, wake: ProxyWakeSignal, shared: ImpairmentProxyShared, limits: UDPImpairmentProxy.Limits) {
        self.listener = listener
        self.forward = forward
        // A wildcard of the target's family: the route to the target picks the interface.
        forwardBindAddress = (try? SocketAddress(host: forward.isIPv6 ? "::" : "0.0.0.0", port: 0)) ?? forward.with(port: 0)
        self.wake = wake
        self.shared = shared
        self.limits = limits
        expiryInterval = min(.seconds(1), limits.clientIdleTimeout / 4)
    }

    deinit { receiveBuffer.deallocate() }

    private var now: Duration { ContinuousClock.now - epoch }

    /// Forwards until a stop is requested or the listening socket fails.
    func run() {
        defer { finish() }
        while !shared.isStopRequested {
            let passStart = now
            deliverDue(now: passStart)
            if passStart >= nextExpiryScan {
                expireIdleClients(now: passStart)
                nextExpiryScan = passStart + expiryInterval
            }
            if pollSetIsStale { rebuildPollSet() }
            // Sending took time: measure the wait from now, not from the pass's start.
            let now = self.now
            let wait = min(heap.nextDue.map { $0 - now } ?? expiryInterval, nextExpiryScan - now)
            let ready = pollSet.withUnsafeMutableBufferPointer { poll($0.baseAddress, nfds_t($0.count), Self.roundedUpMilliseconds(wait)) }
            if ready < 0 {
                if errno == EINTR { continue }
                fail(TransportError.system("poll"))
                return
            }
            guard ready > 0 else { continue }
            if pollSet[0].revents != 0 { wake.drain() }
            if pollSet[1].revents != 0 {
                do throws(TransportError) {
                    try readFromClients()
                } catch {
                    fail(error)
                    return
                }
            }
            mappingRemoved = false
            for index in 2..<pollSet.count where pollSet[index].revents != 0 {
                // Sockets not read in this pass are still readable at the next poll.
                if mappingRemoved { break }
                readFromTarget(polled[index - 2])
            }
        }
    }

    /// Whole milliseconds, rounded up so no datagram leaves before its time.
    static func roundedUpMilliseconds(_ duration: Duration) -> Int32 {
        guard duration > .zero else { return 0 }
        let (seconds, attoseconds) = duration.components
        let nanoseconds = attoseconds / 1_000_000_000
        let milliseconds = seconds * 1_000 + (nanoseconds + 999_999) / 1_000_000
        return Int32(clamping: milliseconds)
    }

    // MARK: Receiving

    private func readFromClients() throws(TransportError) {
        for _ in 0..<Self.readBatch {
            guard let received = try listener.receiveNow(into: receiveBuffer) else { return }
            let now = self.now
            guard let mapping = mapping(for: received.1, now: now) else { continue }
            mapping.lastActivity = now
            schedule(count: received.0, direction: .upstream, mapping: mapping, now: now)
        }
    }

    private func readFromTarget(_ mapping: ProxyClientMapping) {
        for _ in 0..<Self.readBatch {
            let received: (Int, SocketAddress)?
            do {
                received = try mapping.socket.receiveNow(into: receiveBuffer)
            } catch {
                // This socket is broken; the client gets a fresh one on its next datagram.
                remove(mapping)
                return
            }
            guard let received else { return }
            guard received.1 == forward else {
                shared.withState { $0.statistics.foreignDropped += 1 }
                continue
            }
            let now = self.now
            mapping.lastActivity = now
            schedule(count: received.0, direction: .downstream, mapping: mapping, now: now)
        }
    }

    private func mapping(for client: SocketAddress, now: Duration) -> ProxyClientMapping? {
        if let mapping = clients[client] { return mapping }
        guard clients.count < limits.maximumClients,
              let socket = try? UDPSocket(bindTo: forwardBindAddress, receiveBufferSize: Self.upstreamReceiveBuffer) else {
            shared.withState { $0.statistics.unmappedDropped += 1 }
            return nil
        }
        let mapping = ProxyClientMapping(client: client, socket: socket, now: now)
        clients[client] = mapping
        polled.append(mapping)
        pollSetIsStale = true
        let count = clients.count
        shared.withState {
            $0.statistics.clientsCreated += 1
            $0.statistics.clients = count
        }
        return mapping
    }

    /// Runs one datagram (now in `receiveBuffer`) past its direction's model and queues
    /// what survives.
    private func schedule(count: Int, direction: ImpairmentProxyShared.Direction, mapping: ProxyClientMapping, now: Duration) {
        let room = limits.maximumPendingPackets - heap.count
        let byteRoom = limits.maximumPendingBytes - pendingBytes
        let fits = room >= 1 && byteRoom >= count
        let copyFits = room >= 2 && byteRoom >= 2 * count
        let fate = shared.withState { state -> ImpairmentModel.Fate in
            let fate = state[model: direction].process(size: count, now: now)
            if case .delivered(_, let copyAt) = fate {
                if fits {
                    state[statistics: direction].pending += copyAt != nil && copyFits ? 2 : 1
                } else {
                    state[statistics: direction].overflowDropped += 1
                }
            }
            return fate
        }
        guard case .delivered(let at, let copyAt) = fate, fits else { return }
        enqueue(count: count, due: at, direction: direction, isCopy: false, mapping: mapping)
        if let copyAt, copyFits {
            enqueue(count: count, due: copyAt, direction: direction, isCopy: true, mapping: mapping)
        }
    }

    private func enqueue(count: Int, due: Duration, direction: ImpairmentProxyShared.Direction, isCopy: Bool, mapping: ProxyClientMapping) {
        var bytes = spareBuffers.popLast() ?? []
        bytes.removeAll(keepingCapacity: true)
        bytes.append(contentsOf: UnsafeRawBufferPointer(rebasing: receiveBuffer[0..<count]))
        heap.insert(Pending(bytes: bytes, direction: direction, isCopy: isCopy, mapping: mapping), due: due)
        pendingBytes += count
        mapping.pending += 1
    }

    // MARK: Sending

    private func deliverDue(now: Duration) {
        guard let due = heap.nextDue, due <= now else { return }
        var upstream = Tally()
        var downstream = Tally()
        while let next = heap.popDue(now: now) {
            let packet = next.element
            let sent = packet.bytes.withUnsafeBytes { bytes -> Bool in
                do {
                    switch packet.direction {
                    case .upstream: try packet.mapping.socket.send(bytes, to: forward)
                    case .downstream: try listener.send(bytes, to: packet.mapping.client)
                    }
                    return true
                } catch {
                    return false
                }
            }
            let lateness = self.now - next.due
            func count(_ tally: inout Tally) {
                if sent {
                    tally.datagrams += 1
                    tally.bytes += packet.bytes.count
                    if !packet.isCopy { tally.delivered += 1 }
                } else {
                    tally.failures += 1
                }
                tally.removed += 1
                tally.lateness = max(tally.lateness, lateness)
            }
            if packet.direction == .upstream { count(&upstream) } else { count(&downstream) }
            pendingBytes -= packet.bytes.count
            packet.mapping.pending -= 1
            recycle(packet.bytes)
        }
        shared.withState { state in
            upstream.apply(to: &state.statistics.upstream)
            downstream.apply(to: &state.statistics.downstream)
        }
    }

    private func recycle(_ bytes: [UInt8]) {
        guard bytes.capacity <= Self.reusableBufferCapacity, spareBuffers.count < Self.spareBufferLimit else { return }
        spareBuffers.append(bytes)
    }

    // MARK: Housekeeping

    private func expireIdleClients(now: Duration) {
        let idle = clients.values.filter { $0.pending == 0 && now - $0.lastActivity >= limits.clientIdleTimeout }
        guard !idle.isEmpty else { return }
        for mapping in idle { remove(mapping) }
        shared.withState { $0.statistics.clientsExpired += idle.count }
    }

    private func remove(_ mapping: ProxyClientMapping) {
        guard clients.removeValue(forKey: mapping.client) != nil else { return }
        polled.removeAll { $0 === mapping }
        pollSetIsStale = true
        mappingRemoved = true
        // Datagrams already queued for it still hold the mapping; a closed socket makes
        // their sends fail and be counted.
        mapping.socket.close()
        let count = clients.count
        shared.withState { $0.statistics.clients = count }
    }

    private func rebuildPollSet() {
        pollSet.removeAll(keepingCapacity: true)
        pollSet.append(pollfd(fd: wake.receiveDescriptor, events: Int16(POLLIN), revents: 0))
        pollSet.append(pollfd(fd: listener.rawDescriptor, events: Int16(POLLIN), revents: 0))
        for mapping in polled { pollSet.append(pollfd(fd: mapping.socket.rawDescriptor, events: Int16(POLLIN), revents: 0)) }
        pollSetIsStale = false
    }

    private func fail(_ error: TransportError) {
        shared.withState { $0.statistics.failure = error }
    }

    /// Discards what is still waiting (counted in `pending`) and closes the upstream sockets.
    private func finish() {
        shared.withState { $0.statistics.clients = 0 }
        while heap.popFirst() != nil {}
        for mapping in clients.values { mapping.socket.close() }
        clients.removeAll()
        polled.removeAll()
    }
}
