import MediaEngine

/// One publisher video's recent packets as they arrived, decrypted and unmodified, for
/// retransmission on subscribers' RTX streams (RFC 4588): one copy serves every
/// subscriber, each of which renumbers it as it forwarded the original.
///
/// A ring of `capacity` slots (a power of two) of `slotSize` bytes, allocated once; a packet
/// overwrites the one `capacity` sequence numbers before it. A slot answers only for its
/// own sequence number and only while younger than `maximumAge`. Not thread-safe: each
/// forwarding worker with subscribers of the publisher keeps its own.
final class PublisherHistory {
    static let capacity = 256
    static let slotSize = 1_500
    static let maximumAge: Duration = .seconds(1)

    private let storage: UnsafeMutableRawPointer
    private var sequenceNumbers = [UInt16](repeating: 0, count: capacity)
    private var lengths = [Int](repeating: 0, count: capacity)
    private var arrivals = [Duration](repeating: .zero, count: capacity)

    /// Bytes it holds (for the memory figures).
    static var footprint: Int { capacity * (slotSize + 2 + 8 + 16) }

    init() {
        storage = UnsafeMutableRawPointer.allocate(byteCount: Self.capacity * Self.slotSize, alignment: 16)
    }

    deinit { storage.deallocate() }

    /// Keeps `packet` (a larger one than a slot is not kept).
    func store(_ packet: RTPPacketView, now: Duration) {
        guard packet.bytes.count <= Self.slotSize, let base = packet.bytes.baseAddress else { return }
        let index = Int(packet.sequenceNumber) & (Self.capacity - 1)
        (storage + index * Self.slotSize).copyMemory(from: base, byteCount: packet.bytes.count)
        sequenceNumbers[index] = packet.sequenceNumber
        lengths[index] = packet.bytes.count
        arrivals[index] = now
    }

    /// Hands `body` the stored packet `sequenceNumber`, if it is still held.
    /// - Returns: whether it was.
    func withPacket(_ sequenceNumber: UInt16, now: Duration, _ body: (RTPPacketView) -> Void) -> Bool {
        let index = Int(sequenceNumber) & (Self.capacity - 1)
        guard lengths[index] > 0, sequenceNumbers[index] == sequenceNumber, now - arrivals[index] <= Self.maximumAge,
              let packet = try? RTPPacketView(UnsafeRawBufferPointer(start: storage + index * Self.slotSize, count: lengths[index]))
        else { return false }
        body(packet)
        return true
    }
}

/// What one RTX subscriber was sent of a publisher's video, by the sequence number it went
/// out with: the publisher's number and the VP8 renumbering, so a NACK from the subscriber
/// finds the packet in the `PublisherHistory` and the retransmission is renumbered the same
/// way; and how often and when each was sent again (at most `maximumResends`, one per
/// round trip). A ring of `capacity` entries, allocated once. Not thread-safe.
final class RetransmissionMap {
    static let capacity = 512
    static let maximumResends: UInt8 = 3
    static let minimumResendInterval: Duration = .milliseconds(10)

    /// 12 bytes: the numbers, the simulcast layer the original came on, how often it was
    /// sent again and when last (milliseconds of `now`, compared with wrapping arithmetic).
    /// `flags`: bit 7 occupied, bits 4-5 the layer, bits 0-3 the resends.
    struct Entry {
        var sent: UInt16 = 0
        var original: UInt16 = 0
        var pictureShift: UInt16 = 0
        var tl0Shift: UInt8 = 0
        var flags: UInt8 = 0
        var lastResent: UInt32 = 0
        var occupied: Bool { flags & 0x80 != 0 }
        var resends: UInt8 { flags & 0x0F }
        var spatialLayer: Int { Int(flags >> 4 & 0x03) }
    }

    private var entries = [Entry](repeating: Entry(), count: capacity)
    /// The number the newest packet went out as.
    private(set) var newest: UInt16?

    /// Bytes it holds (for the memory figures).
    static var footprint: Int { capacity * MemoryLayout<Entry>.stride }

    /// Records that the publisher's packet `original` (of simulcast layer `spatialLayer`,
    /// 0...3) went out as `sent`.
    func record(sent: UInt16, original: UInt16, spatialLayer: Int = 0, pictureShift: UInt16, tl0Shift: UInt8) {
        entries[Int(sent) & (Self.capacity - 1)] = Entry(sent: sent, original: original, pictureShift: pictureShift, tl0Shift: tl0Shift,
                                                          flags: 0x80 | UInt8(spatialLayer & 0x03) << 4)
        newest = sent
    }

    /// What a NACK for `sent` may be answered with.
    enum Lookup {
        /// `first`: never sent again before.
        case resend(original: UInt16, spatialLayer: Int, pictureShift: UInt16, tl0Shift: UInt8, first: Bool)
        /// Never sent, or overwritten since.
        case unknown
        /// Sent again less than a round trip ago, or `maximumResends` times already.
        case suppressed
    }

    /// Looks `sent` up; a `resend` is counted as done at `now`.
    func lookUp(_ sent: UInt16, now: Duration, rtt: Duration) -> Lookup {
        let index = Int(sent) & (Self.capacity - 1)
        let entry = entries[index]
        guard entry.occupied, entry.sent == sent else { return .unknown }
        let resends = entry.resends
        let milliseconds = UInt32(truncatingIfNeeded: Int64(now / .milliseconds(1)))
        let interval = max(rtt, Self.minimumResendInterval) / .milliseconds(1)
        if resends >= Self.maximumResends || (resends > 0 && Double(milliseconds &- entry.lastResent) < interval) {
            return .suppressed
        }
        entries[index].flags = entry.flags & 0xF0 | (resends + 1)
        entries[index].lastResent = milliseconds
        return .resend(original: entry.original, spatialLayer: entry.spatialLayer, pictureShift: entry.pictureShift,
                       tl0Shift: entry.tl0Shift, first: resends == 0)
    }
}
