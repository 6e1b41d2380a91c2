/// The sender's store of recently sent RTP packets of one SSRC, to answer Generic NACKs
/// (RFC 4585) by **plain retransmission**: the identical packet, as it went on the wire
/// (already SRTP-protected), with the same SSRC and sequence number. There is no RTX
/// stream (RFC 4588): no second SSRC or payload type to negotiate, and receivers that
/// know nothing of NACK still take the packet as a late original.
///
/// SRTP: a resent protected packet carries the same index and authentication tag, so
/// the receiver's replay check accepts it exactly when the original never arrived (and
/// refuses a second copy as a replay). Packets must therefore be resent while their index
/// is inside the receiver's replay window (1024 packets by default in `SRTPContext`);
/// `maximumAge` (1 s) keeps them there below about 1000 packets a second.
///
/// Bounds: `capacity` slots (1024 by default, rounded up to a power of two) of
/// `maximumPacketSize` bytes each, allocated once in `init` (about 1.6 MB by default);
/// storing overwrites the slot of the packet `capacity` sequence numbers earlier, so
/// steady state allocates nothing. A packet older than `maximumAge` is never resent, and
/// each packet is resent at most once per `max(rtt, minimumResendInterval)`, so a storm
/// of NACKs cannot multiply traffic: whatever arrives, retransmissions stay below
/// `capacity` packets per RTT. Not thread-safe.
public struct RetransmissionHistory: Sendable {
    /// Bounds and pacing.
    public struct Configuration: Sendable, Hashable {
        /// Packets kept; rounded up to a power of two, 1...32768.
        public var capacity = 1_024
        /// Oldest packet still resent.
        public var maximumAge: Duration = .seconds(1)
        /// Largest packet stored (protected size); larger ones are counted and not stored.
        public var maximumPacketSize = 1_500
        /// Shortest time between two retransmissions of one packet when the RTT is smaller.
        public var minimumResendInterval: Duration = .milliseconds(10)

        /// The defaults.
        public init() {}
    }

    /// Counters over the history's life.
    public struct Statistics: Sendable, Hashable {
        public init() {}

        /// Packets stored.
        public var packetsStored = 0
        /// Packets not stored because they exceed `maximumPacketSize`.
        public var oversizedPackets = 0
        /// Packets not stored because they are not RTP of this SSRC.
        public var foreignPackets = 0
        /// NACKs handled.
        public var nacksReceived = 0
        /// NACKs ignored because their media SSRC is not this stream's.
        public var nacksForOtherSSRCs = 0
        /// Sequence numbers asked for.
        public var sequenceNumbersRequested = 0
        /// Packets resent.
        public var packetsRetransmitted = 0
        /// Bytes resent.
        public var bytesRetransmitted = 0
        /// Requests refused because the packet was resent less than an RTT ago.
        public var suppressedByRateLimit = 0
        /// Requests for packets never stored, overwritten, or older than `maximumAge`.
        public var unknownOrExpired = 0
    }

    private struct Slot: Sendable {
        var sequenceNumber: UInt16 = 0
        var isOccupied = false
        var length = 0
        var sentAt: Duration = .zero
        var lastResentAt: Duration?
    }

    /// The SSRC whose packets this history keeps.
    public let ssrc: UInt32
    /// The settings in force (`capacity` rounded up).
    public let configuration: Configuration
    /// Counters so far.
    public private(set) var statistics = Statistics()
    private var slots: [Slot]
    private var storage: [UInt8]
    private let mask: Int

    /// Creates an empty history and allocates its storage.
    /// - Precondition: `capacity` is 1...32768, `maximumPacketSize` at least 12.
    public init(ssrc: UInt32, configuration: Configuration = Configuration()) {
        precondition((1...32_768).contains(configuration.capacity), "history capacity must be 1...32768")
        precondition(configuration.maximumPacketSize >= RTPPacketView.fixedHeaderSize, "history slots must hold an RTP header")
        var configuration = configuration
        var capacity = 1
        while capacity < configuration.capacity { capacity <<= 1 }
        // A power of two divides 65536, so `sequenceNumber & mask` stays one slot per number across the wrap.
        configuration.capacity = capacity
        self.ssrc = ssrc
        self.configuration = configuration
        mask = capacity - 1
        slots = [Slot](repeating: Slot(), count: capacity)
        storage = [UInt8](repeating: 0, count: capacity * configuration.maximumPacketSize)
    }

    /// Bytes its storage takes (the packet slots and their bookkeeping).
    public var storageBytes: Int { storage.count + slots.count * MemoryLayout<Slot>.stride }

    /// Packets currently held that are younger than `maximumAge` at `now`.
    public func storedCount(now: Duration) -> Int {
        slots.count(where: { $0.isOccupied && now - $0.sentAt <= configuration.maximumAge })
    }

    /// Stores one packet as it was sent; allocates nothing.
    ///
    /// - Parameters:
    ///   - packet: The datagram as sent (RTP header in the clear, payload possibly
    ///     SRTP-protected, trailer included).
    ///   - now: When it was sent.
    /// - Returns: false when the packet was not stored (not RTP of this SSRC, or too large).
    @discardableResult
    public mutating func store(_ packet: UnsafeRawBufferPointer, sentAt now: Duration) -> Bool {
        guard packet.count >= RTPPacketView.fixedHeaderSize, packet[0] >> 6 == 2, packet.uint32(at: 8) == ssrc else {
            statistics.foreignPackets += 1
            return false
        }
        guard packet.count <= configuration.maximumPacketSize else {
            statistics.oversizedPackets += 1
            return false
        }
        let sequenceNumber = packet.uint16(at: 2)
        let index = Int(sequenceNumber) & mask
        let offset = index * configuration.maximumPacketSize
        storage.withUnsafeMutableBytes { bytes in
            UnsafeMutableRawBufferPointer(rebasing: bytes[offset..<(offset + packet.count)]).copyMemory(from: packet)
        }
        slots[index] = Slot(sequenceNumber: sequenceNumber, isOccupied: true, length: packet.count, sentAt: now)
        statistics.packetsStored += 1
        return true
    }

    /// Hands `resend` each packet of a NACK to send again, in the NACK's order.
    ///
    /// NACKs about another media SSRC are ignored (counted in `nacksForOtherSSRCs`).
    ///
    /// - Parameters:
    ///   - nack: The parsed NACK.
    ///   - now: The current time.
    ///   - rtt: The current round-trip estimate.
    ///   - resend: Gets the stored bytes, valid only during the call.
    /// - Returns: Packets handed to `resend`.
    @discardableResult
    public mutating func retransmissions(for nack: GenericNACK, now: Duration, rtt: Duration,
                                         _ resend: (UnsafeRawBufferPointer) throws -> Void) rethrows -> Int {
        guard nack.mediaSSRC == ssrc else {
            statistics.nacksForOtherSSRCs += 1
            return 0
        }
        statistics.nacksReceived += 1
        var sent = 0
        try nack.forEachSequenceNumber { sent += try retransmit($0, now: now, rtt: rtt, resend) }
        return sent
    }

    /// Hands `resend` each stored packet among `sequenceNumbers` that may be sent again
    /// now; unknown and expired numbers are skipped and counted.
    ///
    /// - Parameters:
    ///   - sequenceNumbers: The numbers asked for (already known to be about this SSRC).
    ///   - now: The current time.
    ///   - rtt: The current round-trip estimate.
    ///   - resend: Gets the stored bytes, valid only during the call.
    /// - Returns: Packets handed to `resend`.
    @discardableResult
    public mutating func retransmissions(for sequenceNumbers: some Sequence<UInt16>, now: Duration, rtt: Duration,
                                         _ resend: (UnsafeRawBufferPointer) throws -> Void) rethrows -> Int {
        var sent = 0
        for sequenceNumber in sequenceNumbers {
            sent += try retransmit(sequenceNumber, now: now, rtt: rtt, resend)
        }
        return sent
    }

    /// The shortest time between two retransmissions of one packet.
    public func resendInterval(rtt: Duration) -> Duration {
        max(rtt, configuration.minimumResendInterval)
    }

    private mutating func retransmit(_ sequenceNumber: UInt16, now: Duration, rtt: Duration,
                                     _ resend: (UnsafeRawBufferPointer) throws -> Void) rethrows -> Int {
        statistics.sequenceNumbersRequested += 1
        let index = Int(sequenceNumber) & mask
        let slot = slots[index]
        guard slot.isOccupied, slot.sequenceNumber == sequenceNumber, now - slot.sentAt <= configuration.maximumAge else {
            statistics.unknownOrExpired += 1
            return 0
        }
        if let last = slot.lastResentAt, now - last < resendInterval(rtt: rtt) {
            statistics.suppressedByRateLimit += 1
            return 0
        }
        slots[index].lastResentAt = now
        statistics.packetsRetransmitted += 1
        statistics.bytesRetransmitted += slot.length
        let offset = index * configuration.maximumPacketSize
        try storage.withUnsafeBytes { bytes in
            try resend(UnsafeRawBufferPointer(rebasing: bytes[offset..<(offset + slot.length)]))
        }
        return 1
    }
}
