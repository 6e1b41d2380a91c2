import MediaEngine

/// One participant's leg (mediasoup's transport): its `MediaCore` (SRTP and SRTCP both
/// ways, reports, feedback, the downlink's bandwidth estimate), the addresses its
/// ICE-lite checks proved, and its rate limits.
///
/// An object in the router's transport table (it owns a core, and the per-packet path
/// reads its fields for every subscriber: a class keeps that to one reference, where a
/// value would be copied whole); it names its producers and consumers by ID.
final class Transport {
    typealias ID = Table<Transport>.ID

    /// Addresses one leg keeps (a client moving between networks checks in from each).
    static let maximumAddresses = 4

    let setup: ForwardingRouter.LegSetup
    let core: MediaCore
    var publishing: Bool
    var audio: Producer.ID?
    var video: Producer.ID?
    /// As a subscriber: what it gets of each producer.
    var consumers: [Consumer.ID] = []
    /// As a subscriber: what it asked for of each leg (by leg ID), publishing or not.
    var wanted: [UInt64: (audio: Bool, video: Bool)] = [:]
    /// Newest last.
    private(set) var addresses: [SocketAddress] = []
    /// Check answers (`checkRate`).
    var checks: TokenBucket
    /// Media and RTCP datagrams taken (`legPacketRate`).
    var packets: TokenBucket
    let created: Duration
    var lost = false
    var nextAllocation: Duration
    /// Its estimates at the last allocations, newest last.
    private var recentEstimates: [Int] = []
    /// As a subscriber: the probe toward a higher layer running now, the earliest the next
    /// may start, and the wait after the next failure.
    var probe: Probe?
    var nextProbe: Duration = .zero
    var probeBackoff: Duration = .zero

    /// Padding on one consumer's RTX stream at about what a higher step would add, so the
    /// subscriber's estimate (which never rises above 1.5 × what was acknowledged, and near
    /// a capacity it learnt rises a few kb/s a second) can learn that the link carries it
    /// (`ForwardingRouter.updateProbe`). A link that cannot carry it shows a growing delay,
    /// the estimate falls, and the probe stops at once.
    struct Probe {
        /// The video that would move up, and the allocation step it was at.
        let video: Consumer.ID
        let fromStep: Int
        /// The consumer whose RTX stream carries the padding (the video's own if it has one).
        let padding: Consumer.ID
        /// What the higher step would add (b/s).
        var stepRate: Int
        let started: Duration
        /// The highest estimate during the probe: one clearly below it ends the probe.
        var highestEstimate: Int
        /// Bytes of padding owed (what `paddingRate` allowed since the last send).
        var owed: Double = 0
        var lastPadding: Duration
    }

    init(setup: ForwardingRouter.LegSetup, core: MediaCore, checks: TokenBucket, packets: TokenBucket, now: Duration) {
        self.setup = setup
        self.core = core
        publishing = setup.publishing
        self.checks = checks
        self.packets = packets
        created = now
        nextAllocation = now + .seconds(1)
    }

    var producers: [Producer.ID] { [audio, video].compactMap { $0 } }

    /// Keeps `estimate` among the last `keeping` allocations' estimates.
    func recordEstimate(_ estimate: Int, keeping: Int) {
        if recentEstimates.count >= keeping { recentEstimates.removeFirst(recentEstimates.count - keeping + 1) }
        recentEstimates.append(estimate)
    }

    /// The lowest of the recent allocations' estimates.
    var lowestEstimate: Int { recentEstimates.min() ?? 0 }

    /// A check its core verified came from `address`.
    /// - Returns: whether the address is new to the leg, and the oldest address it let go
    ///   to keep `maximumAddresses`.
    func learn(_ address: SocketAddress) -> (new: Bool, evicted: SocketAddress?) {
        guard !addresses.contains(address) else { return (false, nil) }
        let evicted = addresses.count >= Self.maximumAddresses ? addresses.removeFirst() : nil
        addresses.append(address)
        return (true, evicted)
    }

    /// Another leg proved `address`: it is no longer this one's.
    func forget(_ address: SocketAddress) { addresses.removeAll { $0 == address } }
}
