import Benchmark
import BenchmarkSupport
import Foundation
import MediaEngine
import MediaRouting
import SRTPFixtures
import Synchronization

enum WorkerScalingMetrics {
    static let one = BenchmarkMetric.custom("1 worker (ns per run)")
    static let two = BenchmarkMetric.custom("2 workers (ns per run)")
    /// Two routers on two threads, each with one publisher and its six subscribers, nothing
    /// handed between them: what the second core buys without handoffs (the ceiling).
    static let apart = BenchmarkMetric.custom("2 routers apart (ns per run)")
    /// The same pair apart as C forwarders making the same libsrtp calls
    /// (`BaselineForwardingPath`): on one thread one after the other, then on two at once.
    /// Their ratio is this machine's ceiling for the work, whatever the language.
    static let cOne = BenchmarkMetric.custom("C forwarders, 1 thread (ns per run)")
    static let cTwo = BenchmarkMetric.custom("C forwarders, 2 threads (ns per run)")
    static let all = [one, two, apart, cOne, cTwo]
}

/// Two publishers and six subscribers of both, forwarded by one router on one thread, and
/// by two forwarding workers on two threads as `ForwardingServer` runs them: each worker
/// owns one publisher and three subscribers (leg `id % 2`, the server's rule), decrypts its
/// publisher's packets once, forwards them to its own subscribers and hands them,
/// decrypted, through a `HandoffRing` to the other worker, which forwards them to its
/// own. A run is `run` packets of each publisher, all forwarded (12 copies of each pair);
/// the two runs alternate, each timed on the wall clock (the two workers' threads run at
/// once), so the ratio of their times is what the second core buys. No sockets: this is
/// the forwarding work and the handoff, not the kernel's.
final class WorkerScaling: @unchecked Sendable {
    // @unchecked: the second worker's router and packets are used by its thread during a
    // run and by the benchmark's thread between runs; the semaphore and `finished`
    // (release, acquire) order the two.
    static let run = 256
    static let subscribers = 6

    /// One forwarding worker: its router, the packets its publisher sends, the ring the
    /// other worker hands it packets through.
    final class Worker: @unchecked Sendable {
        let router: ForwardingRouter
        let packets: PublisherPackets
        let publisherAddress: SocketAddress
        var inbound: HandoffRing<WorkerHandoff>?
        var outbound: HandoffRing<WorkerHandoff>?
        var datagramsOut = 0
        var handoffsTaken = 0
        var now: Duration = .zero

        init(router: ForwardingRouter, packets: PublisherPackets, publisherAddress: SocketAddress) {
            self.router = router
            self.packets = packets
            self.publisherAddress = publisherAddress
        }

        /// Its publisher's next packet, as read from the socket.
        @inline(__always)
        func forwardNext() {
            packets.handNext(to: router, from: publisherAddress, now: now)
            drain()
            now += .microseconds(500)
        }

        /// What the other worker handed over so far.
        @inline(__always)
        func takeHandoffs() {
            guard let inbound else { return }
            while inbound.pop({ bytes, header in router.handleHandoff(header, bytes, now: now) }) { handoffsTaken += 1 }
            drain()
        }

        @inline(__always)
        func drain() {
            router.drainTransmits { _ in datagramsOut += 1 }
        }
    }

    let video: Bool
    /// The two workers, and the one router doing both's work alone (its own packets:
    /// SRTP takes each packet once per context).
    let workers: [Worker]
    let alone: ForwardingRouter
    let alonePackets: [PublisherPackets]
    private(set) var aloneDatagramsOut = 0
    private var aloneNow: Duration = .zero
    /// Two routers apart, each a `Worker` without rings: one publisher and its six
    /// subscribers, its own packets and clock; each used by one thread during a run.
    let apart: [Worker]
    let baselines: [BaselineForwardingPath]
    /// What the second thread runs next: worker 1's part (0) or the second router apart's (1).
    private let mode = Counter()

    /// Runs started, and finished by the second worker's thread, which spins for the
    /// next between them (a loaded server's workers are busy, not asleep: waking a
    /// sleeping thread on this VM takes longer than a run).
    private final class Counter: Sendable { let value = Atomic<Int>(0) }
    private let generation = Counter()
    private let finished = Counter()

    static func address(of leg: UInt64) -> SocketAddress { SocketAddress(addressBytes: [198, 51, 100, UInt8(leg)], port: 5_000)! }

    /// Legs 2 and 3 publish (worker 0 and 1); 4 to 9 subscribe to both.
    static let publisherLegs: [UInt64] = [2, 3]
    static var subscriberLegs: [UInt64] { (4..<(4 + UInt64(subscribers))).map { $0 } }

    init(video: Bool) throws {
        self.video = video
        let server = RouterForwardingPath.server
        var settings = ForwardingRouter.Configuration()
        settings.seed = 9
        // Packets come faster here (virtual time: 2,000 a second per publisher) than the
        // per-leg limit lets a real one; the work per packet is the same.
        settings.legPacketRate = 1_000_000
        settings.legPacketBurst = 1_000_000
        let routers = (0..<2).map { ForwardingRouter(configuration: settings, worker: $0) }
        for router in routers { router.workerCount = 2 }
        workers = try (0..<2).map { index in
            Worker(router: routers[index], packets: try PublisherPackets(video: video, destination: server, publisher: index),
                   publisherAddress: Self.address(of: Self.publisherLegs[index]))
        }
        alone = ForwardingRouter(configuration: settings)
        alonePackets = try (0..<2).map { try PublisherPackets(video: video, destination: server, publisher: $0) }
        baselines = try (0..<2).map { _ in try BaselineForwardingPath(subscribers: Self.subscribers, video: video) }
        apart = try (0..<2).map { index in
            Worker(router: ForwardingRouter(configuration: settings), packets: try PublisherPackets(video: video, destination: server, publisher: index),
                   publisherAddress: Self.address(of: Self.publisherLegs[index]))
        }

        let placeholder = WorkerHandoff(kind: .datagram, source: server, leg: 0)
        let rings = (0..<2).map { _ in HandoffRing<WorkerHandoff>(capacity: 2_048, placeholder: placeholder) }
        for (index, worker) in workers.enumerated() {
            worker.outbound = rings[index]
            worker.inbound = rings[1 - index]
            let ring = rings[index]
            worker.router.handOff = { _, header, bytes in _ = ring.push(bytes, header: header) }
        }

        // The legs, on their owners (and known to the other worker as remote legs), and on
        // the router alone; each proves its address with a signed check.
        for leg in Self.publisherLegs + Self.subscriberLegs {
            let setup = try Self.setup(leg)
            let owner = Int(leg % 2)
            try routers[owner].addLeg(setup, now: .zero)
            routers[1 - owner].addRemoteLeg(setup, worker: owner, now: .zero)
            try alone.addLeg(setup, now: .zero)
            for router in [routers[owner], alone] {
                var check = try Self.check(for: setup)
                check.withUnsafeMutableBytes { router.handleDatagram($0, from: Self.address(of: leg), now: .zero) }
            }
        }
        for (index, router) in apart.map(\.router).enumerated() {
            for leg in [Self.publisherLegs[index]] + Self.subscriberLegs {
                let setup = try Self.setup(leg)
                try router.addLeg(setup, now: .zero)
                var check = try Self.check(for: setup)
                check.withUnsafeMutableBytes { router.handleDatagram($0, from: Self.address(of: leg), now: .zero) }
            }
            for subscriber in Self.subscriberLegs {
                router.setForwarding(subscriber: subscriber, publisher: Self.publisherLegs[index], audio: true, video: true, now: .zero)
            }
            router.drainTransmits { _ in }
        }
        settle()
        for subscriber in Self.subscriberLegs {
            for publisher in Self.publisherLegs {
                routers[Int(subscriber % 2)].setForwarding(subscriber: subscriber, publisher: publisher, audio: true, video: true, now: .zero)
                alone.setForwarding(subscriber: subscriber, publisher: publisher, audio: true, video: true, now: .zero)
            }
        }
        settle()
        // A warm-up on one thread: every copy goes out, both ways.
        for _ in 0..<40 {
            for worker in workers { worker.forwardNext() }
            settle()
            forwardAloneNext()
            for router in apart { router.forwardNext() }
        }
        let expected = 40 * 2 * Self.subscribers
        let both = workers.reduce(0) { $0 + $1.datagramsOut }
        guard both >= expected * 9 / 10, aloneDatagramsOut >= expected * 9 / 10, apart.reduce(0, { $0 + $1.datagramsOut }) >= expected * 9 / 10 else {
            throw BenchmarkFailure("worker scaling: \(both) and \(aloneDatagramsOut) of \(expected) packets forwarded in setup")
        }
        refill()

        // Its thread waits for runs for as long as the benchmark process lives.
        let second = workers[1], secondApart = apart[1], secondBaseline = baselines[1], generation = self.generation, finished = self.finished, mode = self.mode
        Thread.detachNewThread {
            var runs = 0
            while true {
                guard generation.value.load(ordering: .acquiring) > runs else {
                    sched_yield()
                    continue
                }
                switch mode.value.load(ordering: .relaxed) {
                case 1:
                    for _ in 0..<Self.run { secondApart.forwardNext() }
                case 2:
                    for _ in 0..<Self.run { try? secondBaseline.forwardNext() }
                default:
                    Self.work(second)
                }
                runs += 1
                finished.value.store(runs, ordering: .releasing)
            }
        }
    }


    /// A leg's setup: a publisher's key and SSRCs are its packets'.
    static func setup(_ leg: UInt64) throws -> ForwardingRouter.LegSetup {
        let publisher = publisherLegs.firstIndex(of: leg)
        let outbound = try SRTPKeyingMaterial(profile: .aeadAES128GCM, bytes: pseudoRandomBytes(count: 28, seed: 0xD0 + UInt32(leg)))
        let inbound = try publisher.map { PublisherPackets.key(of: $0) }
            ?? SRTPKeyingMaterial(profile: .aeadAES128GCM, bytes: pseudoRandomBytes(count: 28, seed: 0xE0 + UInt32(leg)))
        let offset = UInt32(publisher ?? 0) * 0x100
        return ForwardingRouter.LegSetup(id: leg, meeting: 1, account: "user\(leg)", publishing: publisher != nil,
                                         audioSSRC: publisher != nil ? PublisherPackets.audioSSRC + offset : 0x1000 + UInt32(leg),
                                         videoSSRC: publisher != nil ? PublisherPackets.videoSSRC + offset : 0x2000 + UInt32(leg),
                                         keying: .sdes(inbound: inbound, outbound: outbound), media: .engine,
                                         ice: ICECredentials(ufrag: "leg\(leg)", password: "leg-password-\(leg)-0123456789ab"))
    }

    /// The participant's ICE check, signed for the leg's credentials.
    static func check(for setup: ForwardingRouter.LegSetup) throws -> [UInt8] {
        let message = STUNMessage(type: .bindingRequest, transactionID: .random(),
                                  attributes: [.username("\(setup.ice.ufrag):participant"), .priority(1_000), .iceControlling(1), .useCandidate])
        return message.serialized(integrity: try .shortTerm(password: setup.ice.password), fingerprint: true)
    }

    /// On one thread (setup): the workers' messages and handoffs, until none is left.
    private func settle() {
        var moved = true
        while moved {
            moved = false
            for worker in workers {
                while let (target, message) = worker.router.pollWorkerMessage() {
                    workers[target].router.handleWorkerMessage(message, now: worker.now)
                    moved = true
                }
                let before = worker.handoffsTaken
                worker.takeHandoffs()
                if worker.handoffsTaken != before { moved = true }
                worker.drain()
            }
        }
        alone.drainTransmits { _ in aloneDatagramsOut += 1 }
    }

    @inline(__always)
    private func forwardAloneNext() {
        for (packets, leg) in zip(alonePackets, Self.publisherLegs) {
            packets.handNext(to: alone, from: Self.address(of: leg), now: aloneNow)
            alone.drainTransmits { _ in aloneDatagramsOut += 1 }
        }
        aloneNow += .microseconds(500)
    }

    /// One worker's part of a run: its publisher's packets, and the other's handed over
    /// (as many), taken as they come.
    private static func work(_ worker: Worker) {
        let target = worker.handoffsTaken + run
        for _ in 0..<run {
            worker.forwardNext()
            worker.takeHandoffs()
        }
        let deadline = ContinuousClock.now + .seconds(1)
        while worker.handoffsTaken < target && ContinuousClock.now < deadline { worker.takeHandoffs() }
    }

    private func refill() {
        for packets in workers.map(\.packets) + alonePackets + apart.map(\.packets) + baselines.map(\.packets) { packets.refill() }
    }

    /// A run alone, then a run on two workers.
    func next(_ benchmark: Benchmark) throws {
        if alonePackets[0].remaining < Self.run || workers[0].packets.remaining < Self.run || apart[0].packets.remaining < Self.run
            || baselines.contains(where: { $0.packets.remaining < 2 * Self.run }) {
            refill()
        }
        let aloneBefore = aloneDatagramsOut
        var started = ContinuousClock.now
        for _ in 0..<Self.run { forwardAloneNext() }
        benchmark.measurement(WorkerScalingMetrics.one, (ContinuousClock.now - started).nanoseconds)

        let before = workers.map(\.router.counters.packetsForwarded)
        started = ContinuousClock.now
        mode.value.store(0, ordering: .relaxed)
        var run = generation.value.add(1, ordering: .releasing).newValue
        Self.work(workers[0])
        while finished.value.load(ordering: .acquiring) != run { sched_yield() }
        benchmark.measurement(WorkerScalingMetrics.two, (ContinuousClock.now - started).nanoseconds)

        let apartBefore = apart.reduce(0) { $0 + $1.datagramsOut }
        started = ContinuousClock.now
        mode.value.store(1, ordering: .relaxed)
        run = generation.value.add(1, ordering: .releasing).newValue
        for _ in 0..<Self.run { apart[0].forwardNext() }
        while finished.value.load(ordering: .acquiring) != run { sched_yield() }
        benchmark.measurement(WorkerScalingMetrics.apart, (ContinuousClock.now - started).nanoseconds)
        let apartForwarded = apart.reduce(0) { $0 + $1.datagramsOut } - apartBefore
        guard apartForwarded >= Self.run * 2 * Self.subscribers else {
            throw BenchmarkFailure("worker scaling: the routers apart forwarded \(apartForwarded) of \(Self.run * 2 * Self.subscribers)")
        }

        // The C pair: one thread, then two.
        let cBefore = baselines.reduce(0) { $0 + $1.bytesOut }
        started = ContinuousClock.now
        for baseline in baselines { for _ in 0..<Self.run { try baseline.forwardNext() } }
        benchmark.measurement(WorkerScalingMetrics.cOne, (ContinuousClock.now - started).nanoseconds)
        started = ContinuousClock.now
        mode.value.store(2, ordering: .relaxed)
        run = generation.value.add(1, ordering: .releasing).newValue
        for _ in 0..<Self.run { try baselines[0].forwardNext() }
        while finished.value.load(ordering: .acquiring) != run { sched_yield() }
        benchmark.measurement(WorkerScalingMetrics.cTwo, (ContinuousClock.now - started).nanoseconds)
        guard baselines.reduce(0, { $0 + $1.bytesOut }) > cBefore else { throw BenchmarkFailure("worker scaling: the C forwarders sent nothing") }

        let expected = Self.run * 2 * Self.subscribers
        let forwarded = zip(workers, before).reduce(0) { $0 + $1.0.router.counters.packetsForwarded - $1.1 }
        guard forwarded >= expected, aloneDatagramsOut - aloneBefore >= expected else {
            let figures = workers.map { worker in
                "handoffs taken \(worker.handoffsTaken), refused \(worker.outbound?.refused ?? -1), handed off \(worker.router.counters.packetsHandedOff), "
                    + "held back \(worker.router.counters.videoPacketsHeldBack), forwarded \(worker.router.counters.packetsForwarded)"
            }
            throw BenchmarkFailure("worker scaling: a run forwarded \(forwarded) (two workers) and \(aloneDatagramsOut - aloneBefore) (one) of \(expected); "
                + figures.joined(separator: "; "))
        }
    }
}

extension Duration {
    var nanoseconds: Int { Int(components.seconds) * 1_000_000_000 + Int(components.attoseconds / 1_000_000_000) }
}
