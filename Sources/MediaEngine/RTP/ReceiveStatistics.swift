/// Reception counters for one RTP stream (RFC 3550 A.3 and A.8), named as W3C
/// webrtc-stats names them. Driven by the caller's clock: no I/O, no allocation.
public struct RTPReceiveStatistics: Sendable, Hashable {
    /// RTP clock rate of the stream (48 000 for Opus, 90 000 for VP8).
    public let clockRate: Int
    public private(set) var packetsReceived = 0
    /// Payload bytes, without headers and padding.
    public private(set) var bytesReceived = 0
    /// Packets with a sequence number seen before.
    public private(set) var packetsDuplicated = 0
    private var unwrapper = SequenceNumberUnwrapper()
    private var first: Int64?
    private var highest: Int64 = 0
    private var lastTransit: UInt32?
    private var jitterInUnits = 0.0
    private var seen = SequenceWindow()
    private var expectedAtLastReport = 0
    private var receivedAtLastReport = 0

    public init(clockRate: Int) { self.clockRate = clockRate }

    /// Records a packet that arrived at `arrival` (any monotonic clock).
    public mutating func record(sequenceNumber: UInt16, timestamp: UInt32, payloadBytes: Int, arrival: Duration) {
        let sequence = unwrapper.unwrap(sequenceNumber)
        if seen.contains(sequence) {
            packetsDuplicated += 1
            return
        }
        seen.insert(sequence)
        packetsReceived += 1
        bytesReceived += payloadBytes
        if first == nil {
            first = sequence
            highest = sequence
        }
        highest = max(highest, sequence)
        first = min(first!, sequence)
        // Interarrival jitter (RFC 3550 A.8), in RTP timestamp units.
        // Modular arithmetic on 32 bits, so timestamp wraps cancel out.
        let arrivalUnits = UInt32(truncatingIfNeeded: Int64(arrival / .seconds(1) * Double(clockRate)))
        let transit = arrivalUnits &- timestamp
        if let lastTransit {
            let d = Double(Int32(bitPattern: transit &- lastTransit))
            jitterInUnits += (abs(d) - jitterInUnits) / 16
        }
        lastTransit = transit
    }

    /// Packets expected from the first to the highest sequence number seen.
    public var packetsExpected: Int { first.map { Int(highest - $0) + 1 } ?? 0 }
    /// Expected minus received, never negative.
    public var packetsLost: Int { max(0, packetsExpected - packetsReceived) }
    /// Interarrival jitter in seconds.
    public var jitter: Double { jitterInUnits / Double(clockRate) }
    /// A report block for RTCP (RFC 3550 6.4.1 and A.3): loss since the previous
    /// report as a fraction, cumulative loss, highest sequence, jitter in RTP units.
    /// - Parameters:
    ///   - lastSenderReport: middle 32 bits of the NTP time of the last SR received (0 if none).
    ///   - delaySinceLastSenderReport: time since that SR arrived, in 1/65536 s.
    public mutating func receptionReport(ssrc: UInt32, lastSenderReport: UInt32 = 0,
                                         delaySinceLastSenderReport: UInt32 = 0) -> ReceptionReport {
        let expectedInterval = packetsExpected - expectedAtLastReport
        let receivedInterval = packetsReceived - receivedAtLastReport
        expectedAtLastReport = packetsExpected
        receivedAtLastReport = packetsReceived
        let lostInterval = expectedInterval - receivedInterval
        let fraction = expectedInterval <= 0 || lostInterval <= 0 ? 0 : UInt8(min(255, (lostInterval << 8) / expectedInterval))
        let cumulative = Int32(clamping: max(-(1 << 23), min((1 << 23) - 1, packetsExpected - packetsReceived)))
        return ReceptionReport(ssrc: ssrc, fractionLost: fraction, cumulativeLost: cumulative,
                               extendedHighestSequenceNumber: extendedHighestSequenceNumber,
                               jitter: UInt32(jitterInUnits.rounded()), lastSenderReport: lastSenderReport,
                               delaySinceLastSenderReport: delaySinceLastSenderReport)
    }

    /// The highest sequence number seen, extended with wrap count (RFC 3550 6.4.1).
    public var extendedHighestSequenceNumber: UInt32 { UInt32(truncatingIfNeeded: highest) }
}

/// Remembers which of the last 1024 sequence numbers were seen, in a fixed bit set.
struct SequenceWindow: Sendable, Hashable {
    private var bits = [UInt64](repeating: 0, count: 16)
    private var newest: Int64 = -1

    func contains(_ sequence: Int64) -> Bool {
        guard newest >= 0, sequence <= newest, newest - sequence < 1024 else { return false }
        let slot = Int(sequence & 1023)
        return bits[slot >> 6] & (1 << UInt64(slot & 63)) != 0
    }

    mutating func insert(_ sequence: Int64) {
        if sequence > newest {
            // Clear the slots the window slides over.
            let steps = newest < 0 ? 1024 : min(1024, sequence - newest)
            for offset in 1...steps {
                let slot = Int((newest + offset) & 1023)
                bits[slot >> 6] &= ~(1 << UInt64(slot & 63))
            }
            newest = sequence
        } else if newest - sequence >= 1024 {
            return
        }
        let slot = Int(sequence & 1023)
        bits[slot >> 6] |= 1 << UInt64(slot & 63)
    }
}
