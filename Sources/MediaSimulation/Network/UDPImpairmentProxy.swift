import MediaEngine

#if canImport(Glibc)
import Glibc
#endif

/// A UDP proxy that impairs traffic both ways: a user-space `netem` for machines where
/// `tc netem` is missing.
///
/// It listens on one socket. Each new client address gets its own upstream socket (an
/// ephemeral port facing the forward address), so replies from the target go back to the
/// client that caused them, as through a NAT; replies are taken from the forward address
/// only. Client-to-target datagrams pass through one `ImpairmentModel` (upstream) and
/// target-to-client ones through another (downstream: the same settings with a seed
/// derived from the user's). Each datagram leaves at the time its model chose, from a
/// timer heap served by one dedicated thread that polls every socket with a timeout equal
/// to the next due time, on the monotonic clock. None leaves early; the poll's whole
/// milliseconds make them up to 1 ms late, more when the CPU is busy (`maximumLateness`).
///
/// Memory is bounded by `Limits`: packets beyond the pending caps are dropped and
/// counted, and client mappings beyond `maximumClients` are refused until idle ones
/// expire. Thread-safe: `start`, `stop` and `statistics` may be called from any thread.
public final class UDPImpairmentProxy: Sendable {
    /// Bounds on what the proxy holds.
    public struct Limits: Sendable, Hashable {
        /// Datagrams waiting for their delivery time, both directions together.
        public var maximumPendingPackets = 10_000
        /// Bytes waiting for their delivery time, both directions together.
        public var maximumPendingBytes = 32 << 20
        /// Client mappings (each holds an upstream socket). Datagrams from new clients
        /// are refused while the table is full, so working flows are never evicted.
        public var maximumClients = 1_024
        /// A mapping with nothing in flight and no traffic either way for this long is
        /// removed and its upstream socket closed.
        public var clientIdleTimeout: Duration = .seconds(60)

        /// The defaults: 10,000 packets, 32 MiB, 1,024 clients, 60 s idle.
        public init() {}

        /// Throws when a limit is not positive, naming it.
        public func validate() throws(ImpairmentError) {
            guard maximumPendingPackets > 0 else { throw ImpairmentError("maximum pending packets \(maximumPendingPackets) must be positive") }
            guard maximumPendingBytes > 0 else { throw ImpairmentError("maximum pending bytes \(maximumPendingBytes) must be positive") }
            guard (1...65_536).contains(maximumClients) else { throw ImpairmentError("maximum clients \(maximumClients) is outside 1...65536") }
            guard clientIdleTimeout > .zero else { throw ImpairmentError("client idle timeout \(clientIdleTimeout) must be positive") }
        }
    }

    /// What happened in one direction.
    public struct DirectionStatistics: Sendable, Hashable {
        /// The model's decisions: packets in, lost, queue-dropped, duplicated, reordered,
        /// delivered, and the delays it chose.
        public var impairment = ImpairmentModel.Statistics()
        /// Packets the model let through that the proxy dropped because its pending
        /// caps were reached (a copy that does not fit is not sent and not counted here).
        public var overflowDropped = 0
        /// Original packets sent on.
        public var delivered = 0
        /// Datagrams sent on, originals and copies.
        public var datagramsSent = 0
        /// Bytes sent on.
        public var bytesSent = 0
        /// Datagrams the system refused to send.
        public var sendFailures = 0
        /// Datagrams waiting for their time; after `stop`, those discarded unsent.
        public var pending = 0
        /// Longest a datagram left after its scheduled time.
        public var maximumLateness: Duration = .zero

        /// Packets that did not get through the link (lost, queue-dropped, overflow) as
        /// a share of all packets, in %.
        public var lossPercent: Double {
            let packets = impairment.packets
            return packets == 0 ? 0 : Double(impairment.lost + impairment.queueDropped + overflowDropped) * 100 / Double(packets)
        }
    }

    /// Counters for both directions and the client table.
    public struct Statistics: Sendable, Hashable {
        /// Client to target.
        public var upstream = DirectionStatistics()
        /// Target to client.
        public var downstream = DirectionStatistics()
        /// Client mappings now.
        public var clients = 0
        /// Client mappings made so far.
        public var clientsCreated = 0
        /// Client mappings removed after being idle.
        public var clientsExpired = 0
        /// Datagrams from new clients dropped because the client table was full or no
        /// upstream socket could be opened.
        public var unmappedDropped = 0
        /// Datagrams that reached an upstream socket from an address other than the
        /// forward address, dropped.
        public var foreignDropped = 0
        /// Why the proxy thread stopped by itself, if it did.
        public var failure: TransportError?
    }

    /// The address clients send to (with the kernel's port when asked for port 0).
    public let localAddress: SocketAddress
    /// The target.
    public let forwardAddress: SocketAddress
    /// The impairment both directions apply; `settings.seed` drives the upstream model.
    public let settings: ImpairmentSettings
    /// The bounds in force.
    public let limits: Limits

    private let listener: UDPSocket
    private let wake: ProxyWakeSignal
    private let shared: ImpairmentProxyShared
    private let lifecycle = Locked<Lifecycle>(.ready)

    private enum Lifecycle {
        case ready
        case running(JoinableThread)
        case stopped
    }

    /// Binds the listening socket; nothing is forwarded until `start()`.
    /// - Parameters:
    ///   - listen: where clients send (port 0 picks a free port).
    ///   - forward: the target.
    ///   - settings: the impairment for each direction.
    ///   - limits: memory bounds.
    /// - Throws: `ImpairmentError` for settings or limits out of range; `TransportError`
    ///   when the socket cannot be bound or the wake-up channel cannot be made.
    public convenience init(listen: SocketAddress, forward: SocketAddress, settings: ImpairmentSettings, limits: Limits = Limits()) throws {
        var downstream = settings
        downstream.seed = Self.downstreamSeed(for: settings.seed)
        try self.init(listen: listen, forward: forward, upstream: settings, downstream: downstream, limits: limits)
    }

    /// Binds the listening socket with a different impairment each way: `upstream` from
    /// clients to the target, `downstream` back (a slow or lossy downlink alone).
    public init(listen: SocketAddress, forward: SocketAddress, upstream settings: ImpairmentSettings, downstream: ImpairmentSettings,
                limits: Limits = Limits()) throws {
        try settings.validate()
        try downstream.validate()
        try limits.validate()
        shared = ImpairmentProxyShared(upstream: try ImpairmentModel(settings: settings),
                                       downstream: try ImpairmentModel(settings: downstream))
        listener = try UDPSocket(bindTo: listen)
        wake = try ProxyWakeSignal()
        localAddress = listener.localAddress
        forwardAddress = forward
        self.settings = settings
        self.limits = limits
    }

    deinit { stop() }

    /// The downstream model's seed: a fixed function of the user's, different from it,
    /// so a run repeats yet the two directions do not lose the same packets.
    public static func downstreamSeed(for seed: UInt64) -> UInt64 {
        var random = SeededRandom(seed: seed ^ 0xD1B5_4A32_D192_ED03)
        return random.next()
    }

    /// Starts the proxy thread. Calling it again while running does nothing.
    /// - Throws: `TransportError` with code `closed` after `stop()`, or `socketFailed`
    ///   when the system cannot start a thread.
    public func start() throws(TransportError) {
        try lifecycle.withLock { (state: inout Lifecycle) throws(TransportError) in
            switch state {
            case .running: return
            case .stopped: throw TransportError(.closed, "the proxy on \(localAddress) was stopped")
            case .ready: break
            }
            let loop = ImpairmentProxyLoop(listener: listener, forward: forwardAddress, wake: wake, shared: shared, limits: limits)
            // The loop moves to the new thread; nothing here touches it again.
            do throws(JoinableThread.StartError) {
                state = .running(try JoinableThread { loop.run() })
            } catch {
                throw TransportError(.socketFailed, "cannot start the proxy thread: \(error)", systemError: error.status)
            }
        }
    }

    /// Stops the proxy thread, waits for it, and closes every socket. Datagrams still
    /// waiting are discarded and counted in `pending`. Safe to call more than once; the
    /// proxy cannot be started again.
    public func stop() {
        let thread = lifecycle.withLock { (state: inout Lifecycle) -> JoinableThread?? in
            switch state {
            case .running(let thread):
                state = .stopped
                return .some(thread)
            case .ready:
                state = .stopped
                return .some(nil)
            case .stopped:
                return nil
            }
        }
        // Only the call that moved the state to stopped gets here.
        guard let thread else { return }
        if let thread {
            shared.requestStop()
            wake.signal()
            thread.join()
        }
        listener.close()
    }

    /// Counters so far; after `stop()`, final.
    public var statistics: Statistics { shared.snapshot() }

    /// Why the proxy thread stopped by itself, if it did (cheaper than `statistics`).
    public var failure: TransportError? { shared.withState { $0.statistics.failure } }
}
