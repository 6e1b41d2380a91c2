/// When to send the next RTCP report, per RFC 3550 section 6.3.1 and appendix A.7: RTCP
/// takes 5 % of the session bandwidth, a quarter of that for senders when they are few,
/// with a randomised interval (0.5 to 1.5 times the computed one, divided by e - 3/2)
/// and a minimum of 5 s (2.5 s for the first report), or the reduced minimum of
/// 360 / session-kb/s seconds that RFC 3550 6.2 and RFC 4585 allow.
///
/// Pure: the caller keeps the clock and the random source.
public struct RTCPInterval: Sendable, Hashable {
    /// Session bandwidth in bits per second (the sum of the media rates).
    public var sessionBandwidth: Int
    /// Participants, this one included.
    public var members: Int = 2
    /// Participants that sent RTP since the last two reports.
    public var senders: Int = 1
    /// Whether this participant sent RTP since its last report.
    public var weSent: Bool
    /// Use the reduced minimum instead of 5 s.
    public var reducedMinimum: Bool
    /// Running average RTCP packet size in bytes, lower-layer overhead included (A.7).
    public private(set) var averagePacketSize: Double = 100
    /// True until the first report is sent.
    public private(set) var isInitial = true

    public init(sessionBandwidth: Int, weSent: Bool, reducedMinimum: Bool = true) {
        self.sessionBandwidth = sessionBandwidth
        self.weSent = weSent
        self.reducedMinimum = reducedMinimum
    }

    /// The deterministic interval before randomisation.
    public var nominalInterval: Double {
        let rtcpBandwidth = Double(max(sessionBandwidth, 1)) * 0.05 / 8  // bytes per second
        var minimum = 5.0
        if reducedMinimum { minimum = min(minimum, 360 / (Double(max(sessionBandwidth, 1)) / 1_000)) }
        if isInitial { minimum /= 2 }
        var bandwidth = rtcpBandwidth
        var count = Double(max(members, 1))
        if Double(senders) <= Double(members) * 0.25 {
            if weSent {
                bandwidth *= 0.25
                count = Double(max(senders, 1))
            } else {
                bandwidth *= 0.75
                count = Double(max(members - senders, 1))
            }
        }
        return max(averagePacketSize * count / bandwidth, minimum)
    }

    /// The interval until the next report: the nominal one times a uniform factor in
    /// [0.5, 1.5], divided by e - 3/2 to compensate for the timer reconsideration bias.
    public func nextInterval(using random: inout some RandomNumberGenerator) -> Duration {
        let factor = Double.random(in: 0.5...1.5, using: &random)
        let seconds = nominalInterval * factor / 1.218_28
        return .nanoseconds(Int64(seconds * 1e9))
    }

    /// Records a report of `size` bytes just sent (28 bytes of UDP/IPv4 overhead added).
    public mutating func reportSent(size: Int) {
        averagePacketSize = (Double(size + 28) + 15 * averagePacketSize) / 16
        isInitial = false
    }
}
