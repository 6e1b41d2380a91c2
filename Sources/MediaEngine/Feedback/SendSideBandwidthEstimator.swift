/// The sending side of bandwidth estimation: from transport-wide feedback about the
/// packets it sent, the bitrate the encoders should aim at.
///
/// What it implements, a reduced Google Congestion Control (draft-ietf-rmcat-gcc-02 with
/// libwebrtc's trendline variant), and what it leaves out:
/// - Feedback matching: sent packets are kept in a ring (`historySize`, 8192) for
///   `maximumPacketAge` (10 s); feedback about anything else counts as unknown. A packet
///   reported twice counts once; one reported lost and later received becomes received
///   (and the loss count is corrected). The 24-bit reference time is unwrapped.
/// - Delay-based: `InterArrival` (5 ms send groups, burst merging), then
///   `TrendlineOveruseDetector` (20-point trendline, smoothing 0.9, gain 4, adaptive
///   threshold 6...600 from 12.5, k_up 0.0087, k_down 0.039, 10 ms overuse time), then
///   `AIMDRateController` (8 %/s multiplicative or ~1 packet per rtt + 100 ms additive
///   increase capped at 1.5 × acknowledged + 10 kb/s; decrease to 0.85 × acknowledged
///   bitrate, once per rtt). The acknowledged bitrate is measured over 500 ms of arrivals.
///   Before any acknowledged rate exists, overuse halves the estimate.
///   The filter resets after 2 s without feedback.
/// - Loss-based: `LossBasedController` (> 10 % loss: × (1 − 0.5 loss), at most every
///   300 ms + rtt; < 2 %: + 5 %/s; else hold), on windows of ≥ 20 packets and ≥ 500 ms
///   from the feedback, or on RTCP fraction lost via `handleReceiverReport`. Use one of
///   the two sources, not both.
/// - Saturated-queue guard (an extension, not in GCC): a loss window over 10 % while the
///   acknowledged rate is under half the target counts as overuse for the AIMD
///   controller (decrease to 0.85 × acknowledged). A drop-tail queue that fills before
///   the trendline's window does shows no delay gradient; without this, a start far
///   above the link ends in the loss-based hold band with the queue pinned full.
/// - Target: min(delay-based, loss-based, REMB if any), within the minimum and maximum.
/// - Round trip: `setRoundTripTime` (from RTCP SR/RR), else a smoothed (1/8) time from
///   sending the newest acknowledged packet to receiving its feedback.
/// - Not implemented: probing (ALR and initial probes), the pacer, the newer loss-based
///   v2 estimator, ECN, send-side push-back on a growing outstanding window.
///
/// Sans-I/O: call `packetSent` for every RTP packet as it goes out, and `handle` for each
/// feedback packet; read `targetBitrate`. Not thread-safe.
public struct SendSideBandwidthEstimator: Sendable {
    /// Estimator settings.
    public struct Configuration: Sendable, Hashable {
        /// The estimate before any feedback, in bits per second.
        public var startBitrate: Int
        /// The target never goes below this, in bits per second.
        public var minimumBitrate: Int
        /// The target never goes above this (the user's cap), in bits per second.
        public var maximumBitrate: Int
        /// Sent packets remembered for matching feedback.
        public var historySize = 8_192
        /// Feedback about a packet sent longer ago than this is ignored as expired.
        public var maximumPacketAge: Duration = .seconds(10)

        /// Creates settings.
        ///
        /// - Parameters:
        ///   - startBitrate: The first estimate, bits per second.
        ///   - minimumBitrate: The lowest target, bits per second.
        ///   - maximumBitrate: The highest target, bits per second.
        public init(startBitrate: Int = 300_000, minimumBitrate: Int = 30_000, maximumBitrate: Int = 2_500_000) {
            self.startBitrate = startBitrate
            self.minimumBitrate = minimumBitrate
            self.maximumBitrate = maximumBitrate
        }
    }

    /// Counts of what the estimator saw.
    public struct Statistics: Sendable, Hashable {
        /// Packets recorded with `packetSent`.
        public var packetsSent = 0
        /// Transport feedback packets handled.
        public var feedbackPackets = 0
        /// Packets reported received (each once).
        public var packetsReceived = 0
        /// Packets reported lost and not received later.
        public var packetsLost = 0
        /// Packets first reported lost, then received.
        public var lateArrivals = 0
        /// Reports about a packet whose outcome was already known.
        public var duplicateReports = 0
        /// Reports about sequence numbers never sent, overwritten or expired.
        public var unknownReports = 0
        /// Delay-based decreases (overuse acted upon).
        public var overuseDecreases = 0
        /// Decreases forced by the saturated-queue guard (heavy loss with the receiver
        /// getting under half the target).
        public var saturationDecreases = 0
        /// Probe results that raised the estimate (`applyProbeResult`).
        public var probeResults = 0
    }

    static let streamTimeout = Duration.seconds(2)
    static let saturationShare = 0.5

    /// The settings in force.
    public private(set) var configuration: Configuration
    /// What happened so far.
    public private(set) var statistics = Statistics()
    /// The bitrate to send at, in bits per second: min(delay-based, loss-based, REMB),
    /// within the configured limits.
    public private(set) var targetBitrate: Int
    /// The latest REMB bitrate, applied as an extra cap; nil for none.
    public private(set) var remoteEstimate: Int?
    /// The round-trip time in use.
    public private(set) var roundTripTime = Duration.milliseconds(200)

    private var history: SentPacketHistory
    private var interArrival = InterArrival()
    private var detector = TrendlineOveruseDetector()
    private var rateController: AIMDRateController
    private var lossController: LossBasedController
    private var acknowledged = AcknowledgedBitrateEstimator()
    private var reference: (raw: Int32, value: Int64)?
    private var lastFeedback: Duration?
    private var lastLossReport: Duration?
    private var roundTripIsExplicit = false
    private var roundTripSampled = false

    /// Creates an estimator.
    ///
    /// - Parameter configuration: Its settings; the start bitrate is clamped into the limits.
    public init(configuration: Configuration) {
        var configuration = configuration
        configuration.minimumBitrate = max(1_000, configuration.minimumBitrate)
        configuration.maximumBitrate = max(configuration.minimumBitrate, configuration.maximumBitrate)
        configuration.startBitrate = min(max(configuration.startBitrate, configuration.minimumBitrate), configuration.maximumBitrate)
        self.configuration = configuration
        history = SentPacketHistory(capacity: max(64, configuration.historySize))
        let start = Double(configuration.startBitrate)
        rateController = AIMDRateController(
            start: start, minimum: Double(configuration.minimumBitrate), maximum: Double(configuration.maximumBitrate)
        )
        lossController = LossBasedController(start: start)
        targetBitrate = configuration.startBitrate
    }

    /// The delay-based controller's estimate, in bits per second.
    public var delayBasedBitrate: Int { Int(rateController.bitrate) }
    /// The loss-based controller's estimate, in bits per second.
    public var lossBasedBitrate: Int { Int(lossController.bitrate) }
    /// The bitrate the receiver acknowledged over the last 500 ms, once measured.
    public var acknowledgedBitrate: Int? { acknowledged.bitrate.map { Int($0) } }
    /// The overuse detector's state.
    public var usage: BandwidthUsage { detector.usage }
    /// Smoothed share of packets lost (0...1), from feedback or receiver reports.
    public var lossFraction: Double { lossController.smoothedLossFraction }
    /// The loss to give `Opus.Encoder.setExpectedPacketLoss(percent:)`: the smoothed loss
    /// in percent, rounded, 0...100.
    public var opusExpectedLossPercent: Int { min(100, max(0, Int((lossFraction * 100).rounded()))) }
    /// Whether Opus in-band FEC is worth its bits: smoothed loss of 2 % or more.
    public var recommendsOpusInbandFEC: Bool { lossFraction >= 0.02 }

    /// Records one RTP packet as sent.
    ///
    /// - Parameters:
    ///   - transportSequenceNumber: The transport-wide sequence number it carries.
    ///   - size: Its size in bytes (as it goes on the wire, RTP header included).
    ///   - now: The send time.
    public mutating func packetSent(transportSequenceNumber: UInt16, size: Int, now: Duration) {
        history.record(sequenceNumber: transportSequenceNumber, size: size, sendTime: now)
        statistics.packetsSent += 1
    }

    /// Handles one RTCP packet: transport feedback and REMB are used, the rest ignored.
    ///
    /// - Parameters:
    ///   - packet: A parsed RTCP packet.
    ///   - now: When it arrived.
    /// - Returns: The target bitrate after it, in bits per second.
    @discardableResult
    public mutating func handle(_ packet: RTCPPacket, now: Duration) -> Int {
        switch packet {
        case .transportFeedback(let feedback): return handle(feedback, now: now)
        case .receiverEstimatedMaxBitrate(let remb): setRemoteEstimate(Int(clamping: remb.bitrate))
        default: break
        }
        return targetBitrate
    }

    /// Handles one transport-wide feedback packet: marks packets received or lost, runs
    /// the delay-based detector over the newly received ones in send order, updates the
    /// loss window and the target.
    ///
    /// - Parameters:
    ///   - feedback: The feedback.
    ///   - now: When it arrived.
    /// - Returns: The target bitrate after it, in bits per second.
    @discardableResult
    public mutating func handle(_ feedback: TransportFeedback, now: Duration) -> Int {
        statistics.feedbackPackets += 1
        if let lastFeedback, now - lastFeedback > Self.streamTimeout {
            interArrival.reset()
            detector = TrendlineOveruseDetector()
        }
        lastFeedback = now
        let base = TransportFeedback.referenceTimeTick * Int(unwrapReference(feedback.referenceTime))
        var acked: [(sequence: Int64, send: Duration, arrival: Duration, size: Int)] = []
        var lost = 0
        var received = 0
        var corrected = 0
        for result in feedback.packets {
            guard let index = history.find(result.sequenceNumber, now: now, maximumAge: configuration.maximumPacketAge) else {
                statistics.unknownReports += 1
                continue
            }
            var entry = history[index]
            if let offset = result.receiveOffset {
                switch entry.state {
                case .received:
                    statistics.duplicateReports += 1
                    continue
                case .lost: corrected += 1
                case .inFlight: received += 1
                }
                entry.state = .received
                acked.append((entry.sequence, entry.sendTime, base + offset, entry.size))
            } else {
                guard entry.state == .inFlight else {
                    statistics.duplicateReports += 1
                    continue
                }
                entry.state = .lost
                lost += 1
            }
            history[index] = entry
        }
        statistics.packetsReceived += received + corrected
        statistics.packetsLost += lost - corrected
        statistics.lateArrivals += corrected

        acked.sort { ($0.send, $0.sequence) < ($1.send, $1.sequence) }
        for packet in acked {
            acknowledged.add(arrival: packet.arrival, size: packet.size)
            if let deltas = interArrival.add(send: packet.send, arrival: packet.arrival, system: now, size: packet.size) {
                detector.update(deltas, arrival: packet.arrival)
            }
        }
        if let newest = acked.last { sampleRoundTrip(now - newest.send) }
        updateDelayBased(now: now)
        if let window = lossController.record(lost: lost - corrected, received: received + corrected, now: now) {
            guardAgainstASaturatedQueue(lossFraction: window.fraction, now: now)
            lossController.update(
                fraction: window.fraction, length: window.length, target: Double(targetBitrate),
                roundTripTime: roundTripTime, now: now
            )
        }
        updateTarget()
        return targetBitrate
    }

    /// Feeds an RTCP receiver report's fraction lost to the loss-based controller, for a
    /// peer that sends no transport feedback.
    ///
    /// - Parameters:
    ///   - fractionLost: The report block's fraction lost, in 1/256.
    ///   - now: When the report arrived.
    /// - Returns: The target bitrate after it, in bits per second.
    @discardableResult
    public mutating func handleReceiverReport(fractionLost: UInt8, now: Duration) -> Int {
        let length = lastLossReport.map { now - $0 } ?? .seconds(1)
        lastLossReport = now
        lossController.update(
            fraction: Double(fractionLost) / 256, length: length, target: Double(targetBitrate),
            roundTripTime: roundTripTime, now: now
        )
        updateTarget()
        return targetBitrate
    }

    /// Sets the REMB cap (a receiver's own estimate); nil removes it.
    ///
    /// - Parameter bitrate: Bits per second, or nil.
    public mutating func setRemoteEstimate(_ bitrate: Int?) {
        remoteEstimate = bitrate
        updateTarget()
    }

    /// Sets the round-trip time from RTCP (SR/RR LSR and DLSR); from then on it replaces
    /// the feedback-derived one.
    ///
    /// - Parameter roundTripTime: The measured round trip.
    public mutating func setRoundTripTime(_ roundTripTime: Duration) {
        roundTripIsExplicit = true
        self.roundTripTime = max(roundTripTime, .zero)
    }

    /// Changes the bitrate limits (the user's maximum, say).
    ///
    /// - Parameters:
    ///   - minimum: The lowest target, bits per second.
    ///   - maximum: The highest target, bits per second; raised to `minimum` if below.
    /// A probe's result (libwebrtc's probe controller sets its estimate the same way):
    /// while padding, the receiver acknowledged `bitrate` and the delay did not grow, so the
    /// link carries it. An estimate below rises to it, whatever its 1.5 × acknowledged cap
    /// held it to; an overusing link takes nothing.
    public mutating func applyProbeResult(_ bitrate: Int, now: Duration) {
        guard detector.usage != .overusing, bitrate > targetBitrate else { return }
        rateController.probed(Double(bitrate), now: now)
        lossController.probed(Double(bitrate))
        statistics.probeResults += 1
        updateTarget()
    }

    public mutating func setBitrateLimits(minimum: Int, maximum: Int) {
        configuration.minimumBitrate = max(1_000, minimum)
        configuration.maximumBitrate = max(configuration.minimumBitrate, maximum)
        rateController.setLimits(minimum: Double(configuration.minimumBitrate), maximum: Double(configuration.maximumBitrate))
        updateTarget()
    }

    private mutating func updateDelayBased(now: Duration) {
        let acked = acknowledged.bitrate
        rateController.roundTripTime = roundTripTime
        guard detector.usage == .overusing else {
            rateController.update(detector.usage, acknowledged: acked, now: now)
            return
        }
        guard rateController.mayReduceFurther(now: now, acknowledged: acked) else { return }
        statistics.overuseDecreases += 1
        if acked != nil {
            rateController.update(.overusing, acknowledged: acked, now: now)
        } else {
            rateController.halve(now: now)
        }
    }

    /// Heavy loss while the receiver gets less than half the target means a drop-tail
    /// queue filled faster than the trendline's 20-point window (a start far above the
    /// link, a sudden capacity drop): the delay is pinned at the queue limit and shows no
    /// gradient. Random loss alone lowers the acknowledged rate only by the loss share.
    /// Treat it as the overuse it is, so the rate drops to 0.85 × acknowledged and the
    /// queue drains; loss-based control alone would settle in its 2-10 % hold band
    /// with the queue still full.
    private mutating func guardAgainstASaturatedQueue(lossFraction: Double, now: Duration) {
        guard lossFraction > LossBasedController.highLoss, let acked = acknowledged.bitrate,
              acked < Self.saturationShare * Double(targetBitrate), acked < rateController.bitrate,
              rateController.mayReduceFurther(now: now, acknowledged: acked) else { return }
        statistics.saturationDecreases += 1
        rateController.update(.overusing, acknowledged: acked, now: now)
    }

    private mutating func updateTarget() {
        lossController.clamp(minimum: Double(configuration.minimumBitrate), maximum: Double(configuration.maximumBitrate))
        var target = min(rateController.bitrate, lossController.bitrate)
        if let remoteEstimate { target = min(target, Double(remoteEstimate)) }
        let limited = min(max(target, Double(configuration.minimumBitrate)), Double(configuration.maximumBitrate))
        targetBitrate = Int(limited)
    }

    private mutating func sampleRoundTrip(_ sample: Duration) {
        guard !roundTripIsExplicit, sample >= .zero else { return }
        roundTripTime = roundTripSampled ? (roundTripTime * 7 + sample) / 8 : sample
        roundTripSampled = true
    }

    /// The reference time unwrapped from 24 bits, nearest the newest seen so far.
    private mutating func unwrapReference(_ raw: Int32) -> Int64 {
        guard let reference else {
            self.reference = (raw, Int64(raw))
            return Int64(raw)
        }
        let span: Int64 = 1 << 24
        var difference = (Int64(raw) - Int64(reference.raw)) % span
        if difference >= span / 2 { difference -= span }
        if difference < -span / 2 { difference += span }
        let value = reference.value + difference
        if value > reference.value { self.reference = (raw, value) }
        return value
    }
}
