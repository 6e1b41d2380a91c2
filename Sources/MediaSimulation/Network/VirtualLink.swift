import MediaEngine

/// Two media cores joined by a simulated network, one `ImpairmentModel` each way, on a
/// virtual clock: what one core sends reaches the other at the time the model decides
/// (or never). The simulations and the core's tests run the engine's shipped media code
/// over it. Deterministic; not thread-safe.
public struct VirtualLink {
    /// One end.
    public enum Side: Sendable, Hashable {
        case a, b
        var other: Side { self == .a ? .b : .a }
    }

    /// A datagram handed to the link.
    public struct Sent {
        /// The side that sent it.
        public var from: Side
        public var kind: Transmit.Kind
        public var bytes: [UInt8]
        /// Whether the link will deliver it (at least once).
        public var delivered: Bool
    }

    public let a: MediaCore
    public let b: MediaCore
    /// The addresses the two sides see each other at.
    public let addressA: SocketAddress
    public let addressB: SocketAddress
    private var forward: ImpairmentModel
    private var backward: ImpairmentModel
    private var pending = DeliveryHeap<(to: Side, kind: Transmit.Kind, bytes: [UInt8])>()
    /// Periods during which nothing gets through either way.
    public var outages: [Range<Duration>] = []
    /// Sees every datagram handed to the link, with its fate.
    public var observer: ((Sent) -> Void)?
    /// Wraps the hand-over of each arriving datagram to its core (the side it reaches,
    /// what it is, its bytes, and the hand-over to call), for measurements around it.
    public var delivery: ((Side, Transmit.Kind, [UInt8], () -> Void) -> Void)?

    /// Joins two cores.
    /// - Parameters:
    ///   - forward: The network from `a` to `b`.
    ///   - backward: The network from `b` to `a`.
    /// - Throws: `ImpairmentError` for bad settings.
    public init(a: MediaCore, b: MediaCore, forward: ImpairmentSettings, backward: ImpairmentSettings) throws(ImpairmentError) {
        self.a = a
        self.b = b
        self.forward = try ImpairmentModel(settings: forward)
        self.backward = try ImpairmentModel(settings: backward)
        addressA = SocketAddress(addressBytes: [198, 51, 100, 1], port: 5_000)!
        addressB = SocketAddress(addressBytes: [198, 51, 100, 2], port: 5_000)!
    }

    public func core(_ side: Side) -> MediaCore { side == .a ? a : b }
    public func address(_ side: Side) -> SocketAddress { side == .a ? addressA : addressB }

    /// The models' counters (a to b, b to a).
    public var linkStatistics: (forward: ImpairmentModel.Statistics, backward: ImpairmentModel.Statistics) {
        (forward.statistics, backward.statistics)
    }

    /// Hands everything both cores queued to the links.
    public mutating func flush(now: Duration) {
        for side in [Side.a, .b] {
            let core = core(side)
            while let transmit = core.pollTransmit() {
                let bytes = Array(transmit.bytes)
                var delivered = false
                if !outages.contains(where: { $0.contains(now) }) {
                    let fate = side == .a ? forward.process(size: bytes.count, now: now) : backward.process(size: bytes.count, now: now)
                    if case .delivered(let at, let duplicateAt) = fate {
                        delivered = true
                        pending.insert((side.other, transmit.kind, bytes), due: at)
                        if let duplicateAt { pending.insert((side.other, transmit.kind, bytes), due: duplicateAt) }
                    }
                }
                observer?(Sent(from: side, kind: transmit.kind, bytes: bytes, delivered: delivered))
            }
        }
    }

    /// When the next datagram arrives, if any is on its way.
    public var nextDelivery: Duration? { pending.nextDue }

    /// Delivers every datagram due by `now` to its core, then flushes what the cores
    /// queued in answer.
    public mutating func deliver(now: Duration) {
        while let (datagram, _) = pending.popDue(now: now) {
            var bytes = datagram.bytes
            let from = address(datagram.to.other)
            let target = core(datagram.to)
            let handOver = { _ = bytes.withUnsafeMutableBytes { target.handleDatagram($0, from: from, now: now) } }
            if let delivery {
                delivery(datagram.to, datagram.kind, datagram.bytes, handOver)
            } else {
                handOver()
            }
        }
        flush(now: now)
    }

    /// Delivers each datagram at its own arrival time, up to `now`.
    public mutating func deliverEach(until now: Duration) {
        while let due = pending.nextDue, due <= now { deliver(now: due) }
    }

    /// Changes one direction's network from now on (a new model, its own seed).
    /// - Throws: `ImpairmentError` for bad settings.
    public mutating func change(_ side: Side, to settings: ImpairmentSettings) throws(ImpairmentError) {
        if side == .a { forward = try ImpairmentModel(settings: settings) } else { backward = try ImpairmentModel(settings: settings) }
    }

    /// Injects a datagram into a core as if it came from `source` (an attacker's, in tests).
    public mutating func inject(_ bytes: [UInt8], into side: Side, from source: SocketAddress, now: Duration) {
        var copy = bytes
        _ = copy.withUnsafeMutableBytes { core(side).handleDatagram($0, from: source, now: now) }
        flush(now: now)
    }
}
