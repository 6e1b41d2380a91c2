import MediaEngine

/// Renumbers one publisher stream for one subscriber, so that what the forwarding server
/// leaves out on purpose (upper temporal layers, a paused or muted stream, frames before
/// a keyframe) never looks like loss, while real losses upstream still leave gaps the
/// subscriber can NACK.
///
/// - Sequence numbers: each packet left out shifts later ones down by one (it leaves the
///   sequence space). A retransmission that arrives late gets the shift its packet had.
/// - VP8 PictureID (15-bit) and TL0PICIDX: each frame left out shifts later frames' IDs
///   down by one; base-layer frames left out shift TL0PICIDX too.
///
/// Value type; allocates once (its history ring) and never per packet.
public struct StreamRewriter: Sendable {
    struct Entry: Sendable {
        var input: Int64 = -1
        var sequenceShift: UInt16 = 0
        var pictureShift: UInt16 = 0
        var tl0Shift: UInt8 = 0
    }

    /// Inputs remembered for late retransmissions.
    static let historySize = 512

    private var unwrapper = SequenceNumberUnwrapper()
    private var highest: Int64?
    private var sequenceShift: UInt16 = 0
    private var pictureShift: UInt16 = 0
    private var tl0Shift: UInt8 = 0
    private var lastDroppedPicture: UInt16?
    private var history: [Entry]
    /// The number the newest packet went out as (nil before any).
    public private(set) var lastSequenceNumber: UInt16?
    /// Packets left out on purpose.
    public private(set) var packetsDropped = 0

    public init() {
        history = [Entry](repeating: Entry(), count: Self.historySize)
    }

    /// Leaves a packet out: later packets move down to close its place. A late packet left
    /// out changes nothing (its place is already behind).
    /// - Parameters:
    ///   - descriptor: Its VP8 descriptor, when it is video: a frame left out moves later
    ///     PictureIDs (and, for the base layer, TL0PICIDX) down.
    public mutating func drop(sequenceNumber: UInt16, descriptor: VP8PayloadDescriptor? = nil) {
        let input = unwrapper.unwrap(sequenceNumber)
        packetsDropped += 1
        guard input > (highest ?? .min) else { return }
        highest = input
        sequenceShift &+= 1
        if let picture = descriptor?.pictureID?.value, picture != lastDroppedPicture {
            lastDroppedPicture = picture
            pictureShift &+= 1
            if descriptor?.temporalLayerID ?? 0 == 0 { tl0Shift &+= 1 }
        }
    }

    /// The numbers a forwarded packet goes out with: its sequence number, and the shifts
    /// to apply to its VP8 PictureID and TL0PICIDX; nil for a packet too late to place.
    public mutating func forward(sequenceNumber: UInt16) -> (sequenceNumber: UInt16, pictureShift: UInt16, tl0Shift: UInt8)? {
        let input = unwrapper.unwrap(sequenceNumber)
        let slot = Int(UInt64(bitPattern: input) % UInt64(Self.historySize))
        if let highest, input <= highest {
            let entry = history[slot]
            guard entry.input == input else { return nil }
            return (sequenceNumber &- entry.sequenceShift, entry.pictureShift, entry.tl0Shift)
        }
        // Packets skipped here were lost upstream: they keep these shifts when their
        // retransmissions come, so they fill exactly the holes they left.
        let current = Entry(input: input, sequenceShift: sequenceShift, pictureShift: pictureShift, tl0Shift: tl0Shift)
        if let highest {
            var missing = max(highest + 1, input - Int64(Self.historySize) + 1)
            while missing < input {
                var entry = current
                entry.input = missing
                history[Int(UInt64(bitPattern: missing) % UInt64(Self.historySize))] = entry
                missing += 1
            }
        }
        highest = input
        history[slot] = current
        lastSequenceNumber = sequenceNumber &- sequenceShift
        return (sequenceNumber &- sequenceShift, pictureShift, tl0Shift)
    }

    /// Starts a new input space: another simulcast layer, with its own sequence numbers,
    /// PictureIDs and TL0PICIDX. Its packet `sequenceNumber` goes out as the number after
    /// the last one sent, or the one after that when `skip` (the last frame went out
    /// incomplete: the gap makes the receiver give it up rather than wait for the rest).
    /// What came before is forgotten: late packets of the old layer are another space.
    /// - Parameters:
    ///   - pictureShift, tl0Shift: The new layer's VP8 shifts, which make its IDs follow
    ///     the last ones sent.
    public mutating func rebase(at sequenceNumber: UInt16, skip: Bool, pictureShift: UInt16, tl0Shift: UInt8) {
        unwrapper = SequenceNumberUnwrapper()
        highest = nil
        for index in history.indices { history[index] = Entry() }
        lastDroppedPicture = nil
        sequenceShift = lastSequenceNumber.map { sequenceNumber &- ($0 &+ (skip ? 2 : 1)) } ?? 0
        self.pictureShift = pictureShift
        self.tl0Shift = tl0Shift
    }

    /// Moves a VP8 payload's PictureID and TL0PICIDX down by the given shifts, in place
    /// (fields it does not carry are left alone). A 7-bit PictureID wraps at 128, a
    /// 15-bit one at 32768.
    public static func shiftVP8(_ payload: UnsafeMutableRawBufferPointer, pictureShift: UInt16, tl0Shift: UInt8) {
        guard pictureShift != 0 || tl0Shift != 0, payload.count >= 2, payload[0] & 0x80 != 0 else { return }
        let flags = payload[1]
        var offset = 2
        if flags & 0x80 != 0 {
            guard offset < payload.count else { return }
            if payload[offset] & 0x80 != 0 {
                guard offset + 1 < payload.count else { return }
                let id = (UInt16(payload[offset] & 0x7F) << 8 | UInt16(payload[offset + 1])) &- pictureShift
                payload[offset] = 0x80 | UInt8((id >> 8) & 0x7F)
                payload[offset + 1] = UInt8(id & 0xFF)
                offset += 2
            } else {
                payload[offset] = UInt8((UInt16(payload[offset]) &- pictureShift) & 0x7F)
                offset += 1
            }
        }
        if flags & 0x40 != 0, offset < payload.count {
            payload[offset] = payload[offset] &- tl0Shift
        }
    }
}
