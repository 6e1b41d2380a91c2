import Foundation
import MediaEngine
import Synchronization

/// The forwarding server's I/O: UDP ports for meeting legs and net-detect probes, served
/// by `workers` threads (one by default). Each worker has a port of its own (the first is
/// the media port; with a fixed one, the next ones follow it), a `ForwardingRouter` for the
/// legs it owns, and reads datagrams in batches (`recvmmsg`), hands them to its router
/// (or, for probes, answers them as `EchoDecider` allows), and sends what the router
/// queued in batches (`sendmmsg`). The router also answers padded STUN Binding requests
/// without credentials, so clients learn their server-reflexive address from these ports
/// (`STUNBinding`).
///
/// A leg belongs to worker `leg % workers` (`worker(forLeg:of:)`), and signaling gives the
/// participant that worker's port: each worker reads its own legs' datagrams, so one that
/// stalls holds up only its own legs. A datagram that still reaches another worker's port
/// is handed to the owner. A publisher's packet (decrypted once, on its leg's worker)
/// wanted by another worker's subscribers goes through a lock-free `HandoffRing` between
/// the two, and a `Doorbell` wakes the receiver; a full ring drops the packet (counted)
/// rather than wait. Workers tell each other the rest (addresses, subscriptions, keyframe
/// requests) through short queues.
///
/// Signaling drives it through `apply`, which only appends to short queues the workers
/// take between batches: neither side ever waits for the other. Reports (lost legs,
/// speaking users) go to the `reports` closure on a forwarding thread; it must return at
/// once (hand them on).
public final class ForwardingServer: Sendable {
    public enum Command: Sendable {
        case addLeg(ForwardingRouter.LegSetup)
        case removeLeg(UInt64)
        case setPublishing(leg: UInt64, Bool)
        case setForwarding(subscriber: UInt64, publisher: UInt64, audio: Bool, video: Bool)
        case setVideoSize(subscriber: UInt64, publisher: UInt64, width: Int, height: Int)
    }

    /// What a worker is told to do, in order.
    enum WorkerCommand: Sendable {
        case command(Command)
        case addRemoteLeg(ForwardingRouter.LegSetup, worker: Int)
        case removeRemoteLeg(UInt64)
        case message(WorkerMessage)
        case hold(WorkerHold)
    }

    /// Holds a worker still, as a system call that never returns would (for tests of what
    /// the other workers do meanwhile).
    final class WorkerHold: Sendable {
        let held = Atomic<Bool>(false)
        let released = Atomic<Bool>(false)

        func release() { released.store(true, ordering: .releasing) }
    }

    /// Holds worker `index` until the hold's `release`; the worker takes it between
    /// batches, and sets `held` then.
    func hold(worker index: Int) -> WorkerHold {
        let hold = WorkerHold()
        workers[index].enqueue(.hold(hold))
        return hold
    }

    /// What the workers last published (about twice a second), added up.
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
        /// Forwarding latency per forwarded packet, from its arrival (the kernel's stamp, so
        /// the time it waited in the socket counts) to its copies handed to `sendmmsg`:
        /// p50, p99, p99.9, and how many.
        public var latencyP50: Duration = .zero
        public var latencyP99: Duration = .zero
        public var latencyP999: Duration = .zero
        public var latencyCount = 0
        /// Each open leg's figures.
        public var legStatistics: [ForwardingRouter.LegStatistics] = []
        /// CPU time the forwarding threads have used (user and system), together.
        public var threadCPUTime: Duration = .zero
        /// Per worker: its CPU time, the legs it owns, and packets it could not hand to
        /// another worker (that worker's ring was full).
        public var workerCPUTimes: [Duration] = []
        public var workerLegs: [Int] = []
        public var handoffsDropped = 0
    }

    /// One worker's own figures.
    struct WorkerFigures: Sendable {
        var statistics = Statistics()
        var latency = LatencyHistogram()
    }

    /// A worker's socket, queues and figures (its router lives on its thread).
    final class Worker: Sendable {
        let index: Int
        let socket: UDPSocket
        let doorbell: Doorbell
        let commands = Locked<[WorkerCommand]>([])
        /// `inbound[j]`: packets worker j hands this one (nil for itself).
        let inbound: [HandoffRing<WorkerHandoff>?]
        let figures = Locked(WorkerFigures())

        init(index: Int, socket: UDPSocket, doorbell: Doorbell, inbound: [HandoffRing<WorkerHandoff>?]) {
            self.index = index
            self.socket = socket
            self.doorbell = doorbell
            self.inbound = inbound
        }

        func enqueue(_ command: WorkerCommand) {
            commands.withLock { $0.append(command) }
            doorbell.ring()
        }
    }

    /// The first worker's socket (every worker's is bound to the same address).
    public var socket: UDPSocket { workers[0].socket }
    private let workers: [Worker]
    private let configuration: ForwardingRouter.Configuration
    private let echoPolicy: EchoPolicy
    /// The threads' `SCHED_FIFO` priority; nil: ordinary threads.
    public let realtimePriority: Int32?
    private let reports: @Sendable (ForwardingRouter.Report) -> Void
    /// Per meeting: the speaking levels each worker reported last, and the merged levels
    /// reported last, and when.
    private struct SpeakingState {
        var byWorker: [Int: [String: Double]] = [:]
        var reported: [String: Double] = [:]
        var at: ContinuousClock.Instant?
    }
    private let speaking = Locked<[UInt64: SpeakingState]>([:])
    private let running = Atomic<Bool>(true)
    private let threads = Locked<[JoinableThread]>([])
    private let started = Atomic<Bool>(false)
    private let origin = ContinuousClock.now
    /// The longest a worker reads its port before its timers, handoffs, commands and
    /// figures have their turn (the pass goes on to the end of the batch it is in).
    static let receivePass = Duration.milliseconds(2)

    /// Binds one port per worker: `address` for the first, and for the others the ports
    /// that follow it (any free ones when its port is 0). Nothing runs until `start`.
    /// - Parameters:
    ///   - workers: Forwarding threads (at least 1).
    ///   - realtimePriority: when set, the threads run under `SCHED_FIFO` at this priority
    ///     (1...99): a worker runs as soon as a packet wakes it, ahead of every ordinary
    ///     thread on the machine, so what else the machine runs does not add to forwarding
    ///     latency. The kernel's real-time throttling (by default 95 % of each second)
    ///     still leaves ordinary threads their share if a flood keeps a worker busy.
    /// - Throws: `TransportError` naming the address when one cannot be bound.
    public init(bindTo address: SocketAddress, configuration: ForwardingRouter.Configuration = .init(), echoPolicy: EchoPolicy = .init(),
                workers count: Int = 1, realtimePriority: Int32? = nil,
                reports: @escaping @Sendable (ForwardingRouter.Report) -> Void) throws(TransportError) {
        let count = max(1, count)
        var sockets = [try UDPSocket(bindTo: address, receiveBufferSize: 4 << 20)]
        for index in 1..<count {
            let port = address.port == 0 ? 0 : address.port + index
            guard port <= 65_535 else {
                for socket in sockets { socket.close() }
                throw TransportError(.badAddress, "forwarding thread \(index + 1) needs UDP port \(port), after media port \(address.port)")
            }
            do {
                sockets.append(try UDPSocket(bindTo: address.with(port: port), receiveBufferSize: 4 << 20))
            } catch {
                for socket in sockets { socket.close() }
                throw TransportError(error.code, "forwarding thread \(index + 1) of \(count): \(error.message)", systemError: error.systemError)
            }
        }
        let placeholder = WorkerHandoff(kind: .datagram, source: sockets[0].localAddress, leg: 0)
        // rings[from][to]
        let rings: [[HandoffRing<WorkerHandoff>?]] = (0..<count).map { from in
            (0..<count).map { to in from == to ? nil : HandoffRing(capacity: 2_048, placeholder: placeholder) }
        }
        var workers: [Worker] = []
        for index in 0..<count {
            workers.append(Worker(index: index, socket: sockets[index], doorbell: try Doorbell(), inbound: (0..<count).map { rings[$0][index] }))
        }
        self.workers = workers
        self.configuration = configuration
        self.echoPolicy = echoPolicy
        self.realtimePriority = realtimePriority
        self.reports = reports
    }

    /// The worker that owns leg `leg` among `count`: the one whose port signaling gives
    /// its participant.
    public static func worker(forLeg leg: UInt64, of count: Int) -> Int { Int(leg % UInt64(max(1, count))) }

    /// Each worker's port, the first being the media port.
    public var ports: [Int] { workers.map(\.socket.localAddress.port) }

    public var localAddress: SocketAddress { workers[0].socket.localAddress }

    /// How many forwarding threads serve the port.
    public var workerCount: Int { workers.count }

    /// The figures the workers published last, added up.
    public var statistics: Statistics {
        var total = Statistics()
        var latency = LatencyHistogram()
        for worker in workers {
            let figures = worker.figures.withLock { $0 }
            let one = figures.statistics
            total.router = total.router.adding(one.router)
            total.echo.answered += one.echo.answered
            total.echo.malformed += one.echo.malformed
            total.echo.rateLimited += one.echo.rateLimited
            total.echo.tableFull += one.echo.tableFull
            total.legs += one.legs
            total.sendFailures += one.sendFailures
            total.refusedCommands += one.refusedCommands
            total.authenticationFailures += one.authenticationFailures
            total.replays += one.replays
            total.legStatistics += one.legStatistics
            total.threadCPUTime += one.threadCPUTime
            total.workerCPUTimes.append(one.threadCPUTime)
            total.workerLegs.append(one.legs)
            total.handoffsDropped += one.handoffsDropped
            latency.merge(figures.latency)
        }
        total.legStatistics.sort { $0.id < $1.id }
        total.latencyP50 = latency.percentile(0.5)
        total.latencyP99 = latency.percentile(0.99)
        total.latencyP999 = latency.percentile(0.999)
        total.latencyCount = latency.count
        return total
    }

    /// Queues a command for the forwarding threads; returns at once.
    public func apply(_ command: Command) {
        guard workers.count > 1 else {
            workers[0].enqueue(.command(command))
            return
        }
        switch command {
        case .addLeg(let setup):
            let owner = Self.worker(forLeg: setup.id, of: workers.count)
            workers[owner].enqueue(.command(command))
            for worker in workers where worker.index != owner { worker.enqueue(.addRemoteLeg(setup, worker: owner)) }
        case .removeLeg(let id):
            let owner = Self.worker(forLeg: id, of: workers.count)
            workers[owner].enqueue(.command(command))
            for worker in workers where worker.index != owner { worker.enqueue(.removeRemoteLeg(id)) }
        case .setPublishing:
            for worker in workers { worker.enqueue(.command(command)) }
        case .setForwarding(let subscriber, _, _, _), .setVideoSize(let subscriber, _, _, _):
            workers[Self.worker(forLeg: subscriber, of: workers.count)].enqueue(.command(command))
        }
    }

    /// Starts the forwarding threads.
    /// - Throws: `TransportError` when the system cannot start a thread, or not at the
    ///   real-time priority asked for (the process lacks `CAP_SYS_NICE` and its
    ///   `RLIMIT_RTPRIO` is lower).
    public func start() throws(TransportError) {
        guard !started.exchange(true, ordering: .relaxed) else { return }
        do throws(JoinableThread.StartError) {
            for worker in workers {
                let thread = try JoinableThread(name: workers.count == 1 ? "sfu forwarding" : "sfu worker \(worker.index)",
                                                realtimePriority: realtimePriority) { [self] in
                    run(worker)
                }
                threads.withLock { $0.append(thread) }
            }
        } catch {
            running.store(false, ordering: .relaxed)
            for worker in workers { worker.doorbell.ring() }
            for thread in threads.withLock({ $0 }) { thread.join() }
            guard let priority = realtimePriority, error.status == EPERM || error.status == EINVAL else {
                throw TransportError(.socketFailed, "cannot start a forwarding thread: \(error)", systemError: error.status)
            }
            let remedy = error.status == EPERM ? "the process needs CAP_SYS_NICE or an RLIMIT_RTPRIO of at least \(priority)"
                                               : "the priority must be within 1...99"
            throw TransportError(.notPermitted, "cannot run forwarding threads at real-time priority \(priority) (SCHED_FIFO): \(error); \(remedy)",
                                 systemError: error.status)
        }
    }

    /// Stops the threads (within 20 ms) and closes the sockets.
    public func stop() {
        running.store(false, ordering: .relaxed)
        for worker in workers { worker.doorbell.ring() }
        for thread in threads.withLock({ $0 }) { thread.join() }
        for worker in workers { worker.socket.close() }
    }

    /// A worker's speaking report, merged with the others' for its meeting. One worker
    /// reports every `speakingInterval` while someone speaks, and once more when nobody
    /// does; merged, the meeting's report goes out as soon as the levels change, and while
    /// they stay, once per interval (not once per worker).
    private func reportSpeaking(meeting: UInt64, levels: [String: Double], from worker: Int) {
        guard workers.count > 1 else {
            reports(.speaking(meeting: meeting, levels: levels))
            return
        }
        let now = ContinuousClock.now
        let interval = configuration.speakingInterval * 0.8
        let merged: [String: Double]? = speaking.withLock { speaking in
            var state = speaking[meeting] ?? SpeakingState()
            state.byWorker[worker] = levels.isEmpty ? nil : levels
            let merged = state.byWorker.values.reduce(into: [String: Double]()) { $0.merge($1) { a, _ in a } }
            let due = merged != state.reported || (!merged.isEmpty && state.at.map { now - $0 >= interval } != false)
            if due {
                state.reported = merged
                state.at = now
            }
            speaking[meeting] = state.byWorker.isEmpty && merged.isEmpty ? nil : state
            return due ? merged : nil
        }
        if let merged { reports(.speaking(meeting: meeting, levels: merged)) }
    }

    private func run(_ worker: Worker) {
        let clock = ContinuousClock()
        let router = ForwardingRouter(configuration: configuration, worker: worker.index)
        router.workerCount = workers.count
        let socket = worker.socket
        // Packets handed to other workers by the datagram being handled: their doorbells ring
        // once it is.
        let owed = UnsafeMutableBufferPointer<Bool>.allocate(capacity: workers.count)
        owed.initialize(repeating: false)
        defer { owed.deallocate() }
        var dropped = 0
        let outbound: [HandoffRing<WorkerHandoff>?] = workers.map { $0.inbound[worker.index] }
        router.handOff = { target, header, bytes in
            if outbound[target]?.push(bytes, header: header) == true {
                owed[target] = true
            } else {
                dropped += 1
            }
        }
        func ringOwed() {
            for index in owed.indices where owed[index] {
                owed[index] = false
                workers[index].doorbell.ring()
            }
        }
        var echo = EchoDecider(policy: echoPolicy)
        let incoming = DatagramBatch()
        let outgoing = DatagramBatch()
        var poller = SocketPoller(sockets: CollectionOfOne(socket), doorbell: worker.doorbell)
        var taken: [WorkerCommand] = []
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
        func sendQueued() {
            router.drainTransmits { outgoing.append($0.bytes, to: $0.destination, on: socket) }
            outgoing.send(on: socket)
        }
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
            worker.commands.withLock { swap(&taken, &$0) }
            for command in taken {
                switch command {
                case .command(.addLeg(let setup)):
                    do { try router.addLeg(setup, now: now) } catch { refused += 1 }
                case .command(.removeLeg(let id)): router.removeLeg(id, now: now)
                case .command(.setPublishing(let leg, let publishing)): router.setPublishing(leg, publishing, now: now)
                case .command(.setForwarding(let subscriber, let publisher, let audio, let video)):
                    router.setForwarding(subscriber: subscriber, publisher: publisher, audio: audio, video: video, now: now)
                case .command(.setVideoSize(let subscriber, let publisher, let width, let height)):
                    router.setVideoSize(subscriber: subscriber, publisher: publisher, width: width, height: height, now: now)
                case .addRemoteLeg(let setup, let owner): router.addRemoteLeg(setup, worker: owner, now: now)
                case .removeRemoteLeg(let id): router.removeRemoteLeg(id, now: now)
                case .message(let message): router.handleWorkerMessage(message, now: now)
                case .hold(let hold):
                    hold.held.store(true, ordering: .releasing)
                    while !hold.released.load(ordering: .acquiring) && running.load(ordering: .relaxed) { usleep(1_000) }
                }
            }
            let commanded = !taken.isEmpty
            taken.removeAll(keepingCapacity: true)
            sendQueued()
            // What other workers handed over: each packet's copies go out before the next is
            // taken, timed from when it reached the server (the other worker's arrival).
            for ring in worker.inbound {
                guard let ring else { continue }
                while ring.pop({ bytes, header in
                    let forwardedBefore = router.counters.packetsForwarded
                    router.handleHandoff(header, bytes, now: now)
                    sendQueued()
                    latency.record(clock.now - origin - header.arrival, count: router.counters.packetsForwarded - forwardedBefore)
                }) {
                    if recheck == nil { recheck = now + .milliseconds(1) }
                }
            }
            let pass = clock.now
            while let count = try? incoming.receive(on: socket), count > 0 {
                now = clock.now - origin
                // Each datagram's own arrival: a batch read late holds datagrams that came
                // apart, and feedback must say so (`ArrivalClock`).
                let stamps = ArrivalClock(now: now)
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
                        let arrival = stamps.arrival(stamp: incoming.arrivalStamp(at: index))
                        router.handleDatagram(bytes, from: source, now: now, arrival: arrival)
                        // A packet handed to other workers wakes them now, not after the
                        // batch: they copy it for their subscribers while this one sends.
                        ringOwed()
                        if recheck == nil { recheck = now + .milliseconds(1) }
                        sendQueued()
                        latency.record(clock.now - origin - arrival, count: router.counters.packetsForwarded - forwardedBefore)
                    }
                }
                outgoing.send(on: socket)
                ringOwed()
                // A full batch means more wait. Past a pass's time the rest of the loop has
                // its turn (timers, the other workers' handoffs, commands, the figures) and
                // the next pass reads on at once: a port that never drains would otherwise
                // hold all of them off for as long as the overload lasted.
                if count < DatagramBatch.maximumCount || clock.now - pass >= Self.receivePass { break }
            }
            ringOwed()
            if recheck.map({ $0 <= now }) == true || due.map({ $0 <= now }) == true || commanded {
                due = router.nextTimeout
                recheck = nil
            }
            if due.map({ $0 <= now }) == true {
                router.handleTimeout(now: now)
                sendQueued()
                due = router.nextTimeout
            }
            while let (target, message) = router.pollWorkerMessage() { workers[target].enqueue(.message(message)) }
            ringOwed()
            while let report = router.pollReport() {
                switch report {
                case .speaking(let meeting, let levels): reportSpeaking(meeting: meeting, levels: levels, from: worker.index)
                case .legLost, .videoLayers: reports(report)
                }
            }
            if now >= nextPublish {
                nextPublish = now + .milliseconds(500)
                let snapshot = Statistics(router: router.counters, echo: echo.counters, legs: router.legCount,
                                          sendFailures: outgoing.sendFailures, refusedCommands: refused,
                                          authenticationFailures: router.authenticationFailures, replays: router.replays,
                                          latencyCount: latency.count, legStatistics: router.legStatistics,
                                          threadCPUTime: Self.threadCPUTime(), handoffsDropped: dropped)
                let histogram = latency
                worker.figures.withLock { $0 = WorkerFigures(statistics: snapshot, latency: histogram) }
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

/// Latencies in 10 µs buckets up to 20 ms, then 1 ms buckets up to 1 s; the last bucket
/// takes everything longer, and a percentile that falls in it reads as `ceiling` ("at
/// least a second"). Percentiles without keeping samples, nothing allocated after creation.
public struct LatencyHistogram: Sendable, Hashable {
    static let fineWidth = Duration.microseconds(10)
    static let fineCount = 2_000
    static let coarseWidth = Duration.milliseconds(1)
    static let coarseCount = 980
    static let bucketCount = fineCount + coarseCount + 1
    /// What a percentile beyond the buckets reads as: anything at or above it is "at least".
    public static let ceiling = fineWidth * fineCount + coarseWidth * coarseCount
    private var buckets = [Int](repeating: 0, count: bucketCount)
    public private(set) var count = 0

    public init() {}

    /// Adds `count` samples of `latency`.
    public mutating func record(_ latency: Duration, count: Int = 1) {
        guard count > 0 else { return }
        buckets[Self.bucket(of: latency)] += count
        self.count += count
    }

    static func bucket(of latency: Duration) -> Int {
        let fine = fineWidth * fineCount
        guard latency >= fine else { return max(0, Int(latency / fineWidth)) }
        return min(bucketCount - 1, fineCount + Int((latency - fine) / coarseWidth))
    }

    /// The upper edge of bucket `index`; `ceiling` for the last one.
    static func upperEdge(of index: Int) -> Duration {
        index < fineCount ? fineWidth * (index + 1) : fineWidth * fineCount + coarseWidth * min(coarseCount, index - fineCount + 1)
    }

    /// Adds `other`'s samples (another worker's).
    public mutating func merge(_ other: LatencyHistogram) {
        for index in buckets.indices { buckets[index] += other.buckets[index] }
        count += other.count
    }

    /// The latency below which `fraction` of the samples lie (the bucket's upper edge), or
    /// `ceiling` when they reach beyond the buckets.
    public func percentile(_ fraction: Double) -> Duration {
        guard count > 0 else { return .zero }
        let wanted = Int((Double(count) * fraction).rounded(.up))
        var seen = 0
        for (index, bucket) in buckets.enumerated() {
            seen += bucket
            if seen >= wanted { return Self.upperEdge(of: index) }
        }
        return Self.ceiling
    }
}
