/// The sender side of video loss recovery for one SSRC, sans-I/O: keeps the packets sent
/// (`RetransmissionHistory`, plain retransmission of the identical protected packet),
/// answers Generic NACKs from it, and turns PLI and FIR into a forced keyframe.
///
/// Feedback about another media SSRC is counted and ignored. A FIR repeating the last
/// command sequence number of the same requester is a retransmission and is ignored
/// (RFC 5104 4.3.1.2). Keyframe requests are coalesced: however many arrive, at most one
/// keyframe is forced per `minimumKeyframeInterval` (a request inside it waits for its end,
/// it is not lost), so a PLI storm cannot turn the stream into keyframes. Up to
/// `maximumFIRRequesters` (16) requesters' FIR numbers are remembered. Not thread-safe.
public struct VideoFeedbackResponder: Sendable {
    /// Settings.
    public struct Configuration: Sendable, Hashable {
        /// The packet store.
        public var history = RetransmissionHistory.Configuration()
        /// Shortest time between two forced keyframes.
        public var minimumKeyframeInterval: Duration = .milliseconds(200)
        /// Requesters whose last FIR number is remembered.
        public var maximumFIRRequesters = 16

        /// The defaults.
        public init() {}
    }

    /// Counters over the responder's life.
    public struct Statistics: Sendable, Hashable {
        /// PLIs about this SSRC.
        public var pliReceived = 0
        /// FIR entries about this SSRC with a new command number.
        public var firReceived = 0
        /// FIR entries repeating the requester's last command number.
        public var firRepeated = 0
        /// NACK, PLI and FIR about other SSRCs.
        public var foreignFeedback = 0
        /// Keyframes `shouldForceKeyframe` asked for.
        public var keyframesForced = 0
    }

    /// The settings in force.
    public let configuration: Configuration
    /// Counters so far.
    public private(set) var statistics = Statistics()
    /// The packets kept for retransmission, with their own counters.
    public private(set) var history: RetransmissionHistory
    /// Whether a keyframe request is waiting for the next frame.
    public private(set) var isKeyframeRequested = false
    private var lastForcedKeyframe: Duration?
    private var firNumbers: [(requester: UInt32, sequenceNumber: UInt8)] = []

    /// The SSRC this responder speaks for.
    public var ssrc: UInt32 { history.ssrc }

    /// Creates a responder for `ssrc`, allocating the history's storage.
    public init(ssrc: UInt32, configuration: Configuration = Configuration()) {
        self.configuration = configuration
        history = RetransmissionHistory(ssrc: ssrc, configuration: configuration.history)
        firNumbers.reserveCapacity(configuration.maximumFIRRequesters)
    }

    /// Records a packet as sent (see `RetransmissionHistory.store`).
    @discardableResult
    public mutating func packetSent(_ packet: UnsafeRawBufferPointer, now: Duration) -> Bool {
        history.store(packet, sentAt: now)
    }

    /// Handles one feedback packet: NACKed packets go to `resend`, PLI and FIR set
    /// `isKeyframeRequested`; other packets are ignored.
    ///
    /// - Parameters:
    ///   - packet: One parsed RTCP packet.
    ///   - now: The current time.
    ///   - rtt: The current round-trip estimate.
    ///   - resend: Gets each packet to send again (valid only during the call).
    public mutating func handle(_ packet: RTCPPacket, now: Duration, rtt: Duration,
                                resend: (UnsafeRawBufferPointer) throws -> Void) rethrows {
        switch packet {
        case .genericNACK(let nack):
            if nack.mediaSSRC != ssrc { statistics.foreignFeedback += 1 }
            try history.retransmissions(for: nack, now: now, rtt: rtt, resend)
        case .pictureLossIndication(let pli):
            guard pli.mediaSSRC == ssrc else {
                statistics.foreignFeedback += 1
                return
            }
            statistics.pliReceived += 1
            isKeyframeRequested = true
        case .fullIntraRequest(let fir):
            var mine = false
            for entry in fir.entries where entry.ssrc == ssrc {
                mine = true
                if isRepeat(requester: fir.senderSSRC, sequenceNumber: entry.sequenceNumber) {
                    statistics.firRepeated += 1
                } else {
                    statistics.firReceived += 1
                    isKeyframeRequested = true
                }
            }
            if !mine { statistics.foreignFeedback += 1 }
        default:
            break
        }
    }

    /// Whether the frame about to be encoded at `now` should be a keyframe; true consumes
    /// the pending request.
    public mutating func shouldForceKeyframe(now: Duration) -> Bool {
        guard isKeyframeRequested else { return false }
        if let last = lastForcedKeyframe, now - last < configuration.minimumKeyframeInterval { return false }
        isKeyframeRequested = false
        lastForcedKeyframe = now
        statistics.keyframesForced += 1
        return true
    }

    /// Records a keyframe the encoder produced on its own (periodic or first frame), so a
    /// request arriving just after it does not force another one at once.
    public mutating func keyframeSent(now: Duration) {
        lastForcedKeyframe = now
    }

    private mutating func isRepeat(requester: UInt32, sequenceNumber: UInt8) -> Bool {
        if let index = firNumbers.firstIndex(where: { $0.requester == requester }) {
            if firNumbers[index].sequenceNumber == sequenceNumber { return true }
            firNumbers[index].sequenceNumber = sequenceNumber
            return false
        }
        if firNumbers.count >= configuration.maximumFIRRequesters { firNumbers.removeFirst() }
        firNumbers.append((requester, sequenceNumber))
        return false
    }
}
