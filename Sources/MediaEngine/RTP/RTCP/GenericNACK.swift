/// An RTCP Generic NACK (RFC 4585 section 6.2.1, RTPFB FMT 1): the sender of this
/// packet lost the listed RTP packets of the media source and asks for them again.
public struct GenericNACK: Sendable, Hashable {
    /// The packet type of every Generic NACK (RTPFB).
    public static let packetType = RTCPHeader.PacketType.transportLayerFeedback
    /// The feedback message type of Generic NACK.
    public static let format: UInt8 = 1

    private static let ssrcsSize = 8
    private static let entrySize = 4
    private static let bitmaskWidth = 16

    /// One FCI entry: a lost packet and a bitmask of lost packets among the 16 after it.
    public struct Entry: Sendable, Hashable {
        /// PID: the sequence number of a lost packet.
        public var packetID: UInt16
        /// BLP: bit i set means packet `packetID + i + 1` (mod 2^16) is lost too.
        public var lostBitmask: UInt16

        /// Creates an entry.
        ///
        /// - Parameters:
        ///   - packetID: A lost sequence number.
        ///   - lostBitmask: Which of the next 16 sequence numbers are lost too.
        public init(packetID: UInt16, lostBitmask: UInt16 = 0) {
            self.packetID = packetID
            self.lostBitmask = lostBitmask
        }

        /// The sequence numbers this entry reports lost, `packetID` first, in order.
        public var sequenceNumbers: [UInt16] {
            var numbers: [UInt16] = [packetID]
            numbers.reserveCapacity(1 + lostBitmask.nonzeroBitCount)
            for bit in 0..<GenericNACK.bitmaskWidth where lostBitmask & (1 << bit) != 0 {
                numbers.append(packetID &+ UInt16(bit + 1))
            }
            return numbers
        }
    }

    /// Hands `body` every sequence number the entries report lost, in order (each PID, then
    /// its BLP's), without building an array: for per-packet paths.
    public func forEachSequenceNumber(_ body: (UInt16) throws -> Void) rethrows {
        for entry in entries {
            try body(entry.packetID)
            var bits = entry.lostBitmask
            while bits != 0 {
                let bit = bits.trailingZeroBitCount
                bits &= bits - 1
                try body(entry.packetID &+ UInt16(bit + 1))
            }
        }
    }

    /// SSRC of the packet's sender (the receiver of the media).
    public var senderSSRC: UInt32
    /// SSRC of the media source the NACK is about.
    public var mediaSSRC: UInt32
    /// The FCI entries; at least one on the wire.
    public var entries: [Entry]
    /// Padding octets after the packet, 0 for none, else a multiple of 4.
    public var paddingSize: UInt8

    /// Creates a Generic NACK from its entries.
    ///
    /// - Parameters:
    ///   - senderSSRC: The packet's sender.
    ///   - mediaSSRC: The media source.
    ///   - entries: At least one FCI entry.
    ///   - paddingSize: Padding octets, 0 or a multiple of 4.
    public init(senderSSRC: UInt32, mediaSSRC: UInt32, entries: [Entry], paddingSize: UInt8 = 0) {
        self.senderSSRC = senderSSRC
        self.mediaSSRC = mediaSSRC
        self.entries = entries
        self.paddingSize = paddingSize
    }

    /// Creates a Generic NACK reporting `lostSequenceNumbers` with as few entries as a
    /// greedy packing in sequence order gives.
    ///
    /// The numbers may come in any order and repeat. They are ordered on the 16-bit circle
    /// starting after the widest gap between them, so a run across 65535 -> 0 stays one run.
    ///
    /// - Parameters:
    ///   - senderSSRC: The packet's sender.
    ///   - mediaSSRC: The media source.
    ///   - lostSequenceNumbers: Lost sequence numbers; an empty list gives no entries,
    ///     which cannot be serialized.
    public init(senderSSRC: UInt32, mediaSSRC: UInt32, lostSequenceNumbers: some Sequence<UInt16>) {
        self.init(senderSSRC: senderSSRC, mediaSSRC: mediaSSRC, entries: Self.entries(for: lostSequenceNumbers))
    }

    /// The sequence numbers all entries report lost, entry by entry.
    public var lostSequenceNumbers: [UInt16] { entries.flatMap(\.sequenceNumbers) }

    /// Packs lost sequence numbers into PID+BLP entries.
    static func entries(for lostSequenceNumbers: some Sequence<UInt16>) -> [Entry] {
        var sorted = lostSequenceNumbers.sorted()
        guard !sorted.isEmpty else { return [] }
        var unique = 1
        for index in 1..<sorted.count where sorted[index] != sorted[unique - 1] {
            sorted[unique] = sorted[index]
            unique += 1
        }
        sorted.removeSubrange(unique...)
        // Start after the widest gap on the circle; the wrap gap from last to first wins ties.
        var start = 0
        var widestGap = Int(sorted[0]) + (1 << 16) - Int(sorted[sorted.count - 1])
        for index in 1..<sorted.count {
            let gap = Int(sorted[index]) - Int(sorted[index - 1])
            if gap > widestGap {
                widestGap = gap
                start = index
            }
        }
        var entries: [Entry] = []
        for step in 0..<sorted.count {
            let number = sorted[(start + step) % sorted.count]
            if let last = entries.last {
                let distance = Int(number &- last.packetID)
                if distance >= 1, distance <= bitmaskWidth {
                    entries[entries.count - 1].lostBitmask |= 1 << (distance - 1)
                    continue
                }
            }
            entries.append(Entry(packetID: number))
        }
        return entries
    }

    /*
      0                   1                   2                   3
      0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1
     +-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
     |V=2|P| FMT=1   |   PT=RTPFB=205|          length               |
     +-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
     |                  SSRC of packet sender                        |
     +-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
     |                  SSRC of media source                         |
     +-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
     |            PID                |             BLP               |  FCI, one or
     +-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+  more entries
     :                              ...                              :
    */

    /// Parses one Generic NACK.
    ///
    /// - Parameter bytes: Exactly one RTCP packet of type 205, FMT 1.
    /// - Throws: `PacketError` if the header is malformed or another type/FMT, the length
    ///   disagrees with `bytes`, the padding is invalid, or there is no FCI entry.
    public init(parsing bytes: UnsafeRawBufferPointer) throws(PacketError) {
        let (_, body, paddingSize) = try RTCPHeader.parsePacket(
            bytes, type: Self.packetType, format: Self.format, name: "Generic NACK"
        )
        guard body.count >= Self.ssrcsSize + Self.entrySize else {
            throw PacketError(
                .tooShort, "Generic NACK too short: \(body.count) < \(Self.ssrcsSize + Self.entrySize) bytes after the header"
            )
        }
        senderSSRC = body.uint32(at: 0)
        mediaSSRC = body.uint32(at: 4)
        let count = (body.count - Self.ssrcsSize) / Self.entrySize
        var entries: [Entry] = []
        entries.reserveCapacity(count)
        for index in 0..<count {
            let offset = Self.ssrcsSize + index * Self.entrySize
            entries.append(Entry(packetID: body.uint16(at: offset), lostBitmask: body.uint16(at: offset + 2)))
        }
        self.entries = entries
        self.paddingSize = paddingSize
    }

    /// Parses one Generic NACK.
    ///
    /// - Parameter bytes: Exactly one RTCP packet of type 205, FMT 1.
    /// - Throws: `PacketError`, as `init(parsing:)` on a raw buffer.
    public init(parsing bytes: [UInt8]) throws(PacketError) {
        self = try rtcpParse(bytes) { (buffer) throws(PacketError) in try GenericNACK(parsing: buffer) }
    }

    /// Bytes `serialize(into:)` writes.
    public var serializedSize: Int {
        RTCPHeader.size + Self.ssrcsSize + entries.count * Self.entrySize + Int(paddingSize)
    }

    /// Writes the packet into the start of `buffer`.
    ///
    /// - Parameter buffer: At least `serializedSize` bytes.
    /// - Returns: The number of bytes written, `serializedSize`.
    /// - Throws: `PacketError` `.bufferTooSmall`; `.badField` without entries; `.badLength`
    ///   past the RTCP length limit; `.badPadding`.
    public func serialize(into buffer: UnsafeMutableRawBufferPointer) throws(PacketError) -> Int {
        guard !entries.isEmpty else {
            throw PacketError(.badField, "Generic NACK needs at least 1 FCI entry, has 0")
        }
        let size = serializedSize
        try RTCPHeader.writePacket(
            into: buffer, size: size, type: Self.packetType, count: Int(Self.format), paddingSize: paddingSize,
            name: "Generic NACK"
        )
        buffer.store(senderSSRC, at: 4)
        buffer.store(mediaSSRC, at: 8)
        for (index, entry) in entries.enumerated() {
            let offset = RTCPHeader.size + Self.ssrcsSize + index * Self.entrySize
            buffer.store(entry.packetID, at: offset)
            buffer.store(entry.lostBitmask, at: offset + 2)
        }
        return size
    }

    /// The packet's bytes.
    ///
    /// - Precondition: The fields are within the limits `serialize(into:)` lists; a
    ///   parsed packet always is.
    public func serialized() -> [UInt8] {
        rtcpSerialized(size: serializedSize) { (buffer) throws(PacketError) in try serialize(into: buffer) }
    }
}
