import Foundation
import MediaEngine
import Synchronization

/// The forwarding server's I/O: one UDP port for every meeting leg and for net-detect
/// probes, and one thread that reads datagrams in batches (`recvmmsg`), hands them to a
/// `ForwardingRouter` (or, for probes, answers them as `EchoDecider` allows), and sends
/// what the router queued in batches (`sendmmsg`), straight from the legs' queues. The
/// router also answers padded STUN Binding requests without credentials, so clients learn
/// their server-reflexive address from this port (`STUNBinding`).
///
/// Signaling drives it through `apply`, which only appends to a short queue the thread
/// takes between batches: neither side ever waits for the other. Reports (lost legs,
/// speaking users) go to the `reports` closure on the forwarding thread; it must return
/// at once (hand them on).
public final class ForwardingServer: Sendable {
    public enum Command: Sendable {
        case addLeg(ForwardingRouter.LegSetup)
        case removeLeg(UInt64)
        case setPublishing(leg: UInt64, Bool)
        case setForwarding(subscriber: UInt64, publisher: UInt64, audio: Bool, video: Bool)
    }

    /// What the thread last published (about once a second).
    public struct Statistics: Sendable, Hashable {
        public var router = ForwardingRouter.Counters()
        public var echo = EchoCounters()
        public var legs = 0
        /// Datagrams the kernel would not take.
        public var sendFailures = 0
        /// Commands refused (a bad key, a leg ID in use, too many legs).
        public var refusedCommands = 0
        /// Per leg: SRTP authentication failures, replays and loss reported, for metrics.
        public var authenticationFailures = 0
        public var replays = 0
        /// Forwarding latency per forwarded packet, from its batch's arrival (`recvmmsg`
        /// returned) to its copies handed to `sendmmsg`: p50, p99, p99.9, and how many.
        public var latencyP50: Duration = .zero
        public var latencyP99: Duration = .zero
        public var latencyP999: Duration = .zero
        public var latencyCount = 0
        /// Each open leg's figures.
        public var legStatistics: [ForwardingRouter.LegStatistics] = []
        /// CPU time the forwarding thread has used (user and system).
        public var threadCPUTime: Duration = .zero
    }

    public let socket: UDPSocket
    private let configuration: ForwardingRouter.Configuration
    private let echoPolicy: EchoPolicy
    private let reports: @Sendable (ForwardingRouter.Report) -> Void
    private let commands = Locked<[Command]>([])
    private let running = Atomic<Bool>(true)
    private let thread = Locked<JoinableThread?>(nil)
    private let started = Atomic<Bool>(false)
    private let published = Locked(Statistics())

    /// Binds `address` (port 0 picks one); nothing runs until `start`.
    /// - Throws: `TransportError` naming the address when it cannot be bound.
    public init(bindTo address: SocketAddress, configuration: ForwardingRouter.Configuration = .init(), echoPolicy: EchoPolicy = .init(),
                reports: @escaping @Sendable (ForwardingRouter.Report) -> Void) throws(TransportError) {
        socket = try UDPSocket(bindTo: address, receiveBufferSize: 4 << 20)
        self.configuration = configuration
        self.echoPolicy = echoPolicy
        self.reports = reports
    }

    public var localAddress: SocketAddress { socket.localAddress }

    /// The figures the thread published last.
    public var statistics: Statistics { published.withLock { $0 } }

    /// Queues a command for the forwarding thread; returns at once.
    public func apply(_ command: Command) {
        commands.withLock { $0.append(command) }
    }

    /// Starts the forwarding thread.
    /// - Throws: `TransportError` when the system cannot start a thread.
    public func start() throws(TransportError) {
        guard !started.exchange(true, ordering: .relaxed) else { return }
        do throws(JoinableThread.StartError) {
            let forwarding = try JoinableThread(name: "sfu forwarding") { [self] in run() }
            thread.withLock { $0 = forwarding }
        } catch {
            started.store(false, ordering: .relaxed)
            throw TransportError(.socketFailed, "cannot start the forwarding thread: \(error)", systemError: error.status)
        }
    }

    /// Stops the thread (within 20 ms) and closes the socket.
    public func stop() {
        running.store(false, ordering: .relaxed)
        thread.withLock { $0 }?.join()
        socket.close()
    }

    private func run() {
        let clock = ContinuousClock()
        let origin = clock.now
        let router = ForwardingRouter(configuration: configuration)
        var echo = EchoDecider(policy: echoPolicy)
        let incoming = DatagramBatch()
        let outgoing = DatagramBatch()
        var poller = SocketPoller(sockets: CollectionOfOne(socket))
        var taken: [Command] = []
        taken.reserveCapacity(64)
        var refused = 0
        var nextPublish = Duration.zero
        var latency = LatencyHistogram()
        // The router's next deadline. Asking for it walks every leg's streams, so it is
        // asked at most once a millisecond while packets flow: a packet can only bring a
        // deadline nearer (a NACK, feedback), never by less than milliseconds, so it is
        // met within one.
        var due: Duration?
        var recheck: Duration?
        while running.load(ordering: .relaxed) {
            var now = clock.now - origin
            let next = switch (due, recheck) {
            case (let a?, let b?): min(a, b)
            case (let a?, nil), (nil, let a?): a
            case (nil, nil): Duration?.none
            }
            let wait = next.map { max(.zero, $0 - now) } ?? .milliseconds(20)
            _ = try? poller.wait(timeout: min(wait, .milliseconds(20)))
            now = clock.now - origin
            commands.withLock { swap(&taken, &$0) }
            for command in taken {
                switch command {
                case .addLeg(let setup):
                    do { try router.addLeg(setup, now: now) } catch { refused += 1 }
                case .removeLeg(let id): router.removeLeg(id, now: now)
                case .setPublishing(let leg, let publishing): router.setPublishing(leg, publishing, now: now)
                case .setForwarding(let subscriber, let publisher, let audio, let video):
                    router.setForwarding(subscriber: subscriber, publisher: publisher, audio: audio, video: video, now: now)
                }
            }
            let commanded = !taken.isEmpty
            taken.removeAll(keepingCapacity: true)
            while let count = try? incoming.receive(on: socket), count > 0 {
                let arrival = clock.now
                for index in 0..<count {
                    let (bytes, source) = incoming.datagram(at: index)
                    guard let source, !bytes.isEmpty else { continue }
                    if bytes[0] == UInt8(ascii: "M") {  // "MEND", a probe; never RTP, RTCP or STUN
                        // Net-detect: the same bytes go back, so never larger than they came.
                        guard echo.shouldAnswer(UnsafeRawBufferPointer(bytes), from: source, now: now) else { continue }
                        ProbePacket.markAsReply(bytes)
                        outgoing.append(UnsafeRawBufferPointer(bytes), to: source, on: socket)
                    } else {
                        // Each packet's copies go out before the next is read: batching the
                        // sends of one packet saves the system calls, holding them for the
                        // whole batch would only add its time to every packet's latency.
                        let forwardedBefore = router.counters.packetsForwarded
                        router.handleDatagram(bytes, from: source, now: now)
                        if recheck == nil { recheck = now + .milliseconds(1) }
                        router.drainTransmits { outgoing.append($0.bytes, to: $0.destination, on: socket) }
                        outgoing.send(on: socket)
                        latency.record(clock.now - arrival, count: router.counters.packetsForwarded - forwardedBefore)
                    }
                }
                outgoing.send(on: socket)
                if count < DatagramBatch.maximumCount { break }
            }
            if recheck.map({ $0 <= now }) == true || due.map({ $0 <= now }) == true || commanded {
                due = router.nextTimeout
                recheck = nil
            }
            if due.map({ $0 <= now }) == true {
                router.handleTimeout(now: now)
                router.drainTransmits { outgoing.append($0.bytes, to: $0.destination, on: socket) }
                outgoing.send(on: socket)
                due = router.nextTimeout
            }
            while let report = router.pollReport() { reports(report) }
            if now >= nextPublish {
                nextPublish = now + .milliseconds(500)
                let snapshot = Statistics(router: router.counters, echo: echo.counters, legs: router.legCount,
                                          sendFailures: outgoing.sendFailures, refusedCommands: refused,
                                          authenticationFailures: router.authenticationFailures, replays: router.replays,
                                          latencyP50: latency.percentile(0.5), latencyP99: latency.percentile(0.99),
                                          latencyP999: latency.percentile(0.999), latencyCount: latency.count,
                                          legStatistics: router.legStatistics, threadCPUTime: Self.threadCPUTime())
                published.withLock { $0 = snapshot }
            }
        }
    }
}

extension ForwardingServer {
    /// The calling thread's CPU time.
    static func threadCPUTime() -> Duration {
        var time = timespec()
        clock_gettime(CLOCK_THREAD_CPUTIME_ID, &time)
        return .seconds(time.tv_sec) + .nanoseconds(time.tv_nsec)
    }
}

/// Latencies in 10 µs buckets up to 20 ms (the last bucket takes everything longer):
/// percentiles without keeping samples, and nothing allocated after creation.
public struct LatencyHistogram: Sendable, Hashable {
    static let bucketWidth = Duration.microseconds(10)
    static let bucketCount = 2_000
    private var buckets = [Int](repeating: 0, count: bucketCount)
    public private(set) var count = 0

    public init() {}

    /// Adds `count` samples of `latency`.
    public mutating func record(_ latency: Duration, count: Int = 1) {
        guard count > 0 else { return }
        let index = min(Self.bucketCount - 1, max(0, Int(latency / Self.bucketWidth)))
        buckets[index] += count
        self.count += count
    }

    /// The latency below which `fraction` of the samples lie (the bucket's upper edge).
    public func percentile(_ fraction: Double) -> Duration {
        guard count > 0 else { return .zero }
        let wanted = Int((Double(count) * fraction).rounded(.up))
        var seen = 0
        for (index, bucket) in buckets.enumerated() {
            seen += bucket
            if seen >= wanted { return Self.bucketWidth * (index + 1) }
        }
        return Self.bucketWidth * Self.bucketCount
    }
}
