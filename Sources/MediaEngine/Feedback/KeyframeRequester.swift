/// Decides when a video receiver asks the sender for a keyframe: PLI (RFC 4585 6.3.1) or
/// FIR (RFC 5104 4.3.1), sans-I/O.
///
/// The caller reports why a keyframe is needed (`request(_:now:)`) and that one arrived
/// (`keyframeReceived(now:)`); `process(now:rtt:)` says what to send now. A need stays
/// pending until a keyframe arrives and is sent again at most once per
/// `max(rtt, minimumInterval)` (300 ms by default): by then the keyframe answering the
/// previous request should have arrived, so a repeat means the request or the keyframe
/// was lost. The first request of a need goes out at once unless the previous one was
/// sent less than that interval ago. `pathResumed()` (packets arriving again after a silence
/// longer than the interval, which `VideoReceiveStream` reports) lifts the wait once, since
/// requests sent into a dead path never arrived: so never more than two per interval.
///
/// FIR is used per `firPolicy`: by default only when the need comes from a stream start
/// or restart (a decoder that must be refreshed whatever the sender thinks it sent).
/// Every FIR sent is a new command with the next sequence number: repeats are an interval
/// apart, and reusing a number would let the sender ignore us when the keyframe, not the
/// FIR, was lost. Holds a few scalars; allocates nothing. Not thread-safe.
public struct KeyframeRequester: Sendable {
    /// Why a keyframe is needed.
    public enum Reason: Sendable, Hashable, CaseIterable {
        /// A frame could not be completed before its deadline.
        case frameDeadlineMissed
        /// The decoder reported a corrupt frame.
        case decoderCorruption
        /// The NACK list overflowed and was cleared.
        case nackListOverflow
        /// Missing packets were given up.
        case packetsGivenUp
        /// No keyframe arrived soon enough after the stream began.
        case missingKeyframe
        /// The stream started again: new SSRC, or sequence numbers that jumped.
        case streamRestart
        /// The packet buffer had to drop packets to make room.
        case bufferOverflow
    }

    /// When FIR is sent instead of PLI.
    public struct FIRPolicy: Sendable, Hashable, CustomStringConvertible {
        private enum Base: String, Sendable, Hashable { case never, onStreamRestart, always }
        private let base: Base

        /// PLI only.
        public static let never = FIRPolicy(base: .never)
        /// FIR when the need is a stream restart, PLI otherwise.
        public static let onStreamRestart = FIRPolicy(base: .onStreamRestart)
        /// FIR only (for senders that ignore PLI).
        public static let always = FIRPolicy(base: .always)

        /// The policy's name.
        public var description: String { base.rawValue }

        func usesFIR(for reason: Reason) -> Bool {
            switch base {
            case .never: false
            case .onStreamRestart: reason == .streamRestart
            case .always: true
            }
        }
    }

    /// Settings.
    public struct Configuration: Sendable, Hashable {
        /// Shortest time between two requests when the RTT is smaller.
        public var minimumInterval: Duration = .milliseconds(300)
        /// When to send FIR.
        public var firPolicy = FIRPolicy.onStreamRestart

        /// The defaults.
        public init() {}
    }

    /// What to send.
    public enum Request: Sendable, Hashable {
        /// A Picture Loss Indication.
        case pli
        /// A Full Intra Request with this command sequence number.
        case fir(sequenceNumber: UInt8)
    }

    /// Counters over the requester's life.
    public struct Statistics: Sendable, Hashable {
        /// PLIs to send that `process` returned.
        public var pliSent = 0
        /// FIRs to send that `process` returned.
        public var firSent = 0
        /// `request` calls, by reason.
        public var reasons: [Reason: Int] = [:]
        /// `request` calls folded into a need already pending.
        public var coalesced = 0
        /// Keyframes reported while a need was pending.
        public var keyframesReceived = 0
    }

    /// The settings in force.
    public let configuration: Configuration
    /// Counters so far.
    public private(set) var statistics = Statistics()
    /// Why a keyframe is wanted, or nil when none is.
    public private(set) var pendingReason: Reason?
    private var pendingFIR = false
    private var lastSent: Duration?
    private var nextFIRSequenceNumber: UInt8 = 0

    /// Creates a requester with nothing pending.
    public init(configuration: Configuration = Configuration()) {
        self.configuration = configuration
        statistics.reasons.reserveCapacity(Reason.allCases.count)
    }

    /// Whether a keyframe is wanted.
    public var isPending: Bool { pendingReason != nil }

    /// The shortest time between two requests.
    public func interval(rtt: Duration) -> Duration { max(rtt, configuration.minimumInterval) }

    /// Records that a keyframe is needed.
    public mutating func request(_ reason: Reason, now: Duration) {
        statistics.reasons[reason, default: 0] += 1
        if pendingReason != nil { statistics.coalesced += 1 }
        if pendingReason == nil || reason == .streamRestart { pendingReason = reason }
        pendingFIR = pendingFIR || configuration.firPolicy.usesFIR(for: reason)
    }

    /// Records that a keyframe arrived: the need, if any, is met.
    public mutating func keyframeReceived(now: Duration) {
        if pendingReason != nil { statistics.keyframesReceived += 1 }
        pendingReason = nil
        pendingFIR = false
    }

    /// Records that packets arrive again after a silence longer than the interval: the
    /// requests sent during it probably never arrived, so the next one may go at once.
    public mutating func pathResumed() {
        lastSent = nil
    }

    /// What to send now, if anything.
    public mutating func process(now: Duration, rtt: Duration) -> Request? {
        guard pendingReason != nil else { return nil }
        if let lastSent, now - lastSent < interval(rtt: rtt) { return nil }
        lastSent = now
        if pendingFIR {
            statistics.firSent += 1
            defer { nextFIRSequenceNumber &+= 1 }
            return .fir(sequenceNumber: nextFIRSequenceNumber)
        }
        statistics.pliSent += 1
        return .pli
    }

    /// When `process` will next return a request, or nil when nothing is pending.
    public func nextRequestTime(rtt: Duration) -> Duration? {
        guard pendingReason != nil else { return nil }
        return lastSent.map { $0 + interval(rtt: rtt) } ?? .zero
    }
}
