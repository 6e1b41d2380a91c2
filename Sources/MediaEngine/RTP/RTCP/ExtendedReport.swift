/// An RTCP extended report, XR (RFC 3611): report blocks beyond what SR and RR carry.
///
/// Two block types are modelled, the pair a receive-only party needs for its round-trip
/// time: it sends a Receiver Reference Time block (section 4.4) with its NTP clock, and
/// the media sender answers with a DLRR block (section 4.5) echoing the middle 32 bits of
/// that time and the delay since it arrived. Blocks of any other type are kept raw, so a
/// parsed packet serializes back to its bytes; the reserved bits of the header and of the
/// two modelled blocks are ignored on receipt and sent as zero.
public struct ExtendedReport: Sendable, Hashable {
    /// The packet type of every extended report.
    public static let packetType = RTCPHeader.PacketType.extendedReport

    private static let ssrcSize = 4
    private static let blockHeaderSize = 4

    /// One DLRR sub-block: the answer to one receiver's Receiver Reference Time block.
    public struct DLRRSubBlock: Sendable, Hashable {
        /// Bytes of a sub-block on the wire.
        public static let size = 12

        /// SSRC of the receiver whose Receiver Reference Time block this answers.
        public var ssrc: UInt32
        /// LRR: the middle 32 bits of that block's NTP timestamp (`NTPTime.compact`), 0
        /// if none has arrived.
        public var lastReceiverReport: UInt32
        /// DLRR: the delay from the arrival of that block to the sending of this one, in
        /// units of 1/65536 second; 0 if none has arrived.
        public var delaySinceLastReceiverReport: UInt32

        /// Creates a sub-block.
        ///
        /// - Parameters:
        ///   - ssrc: The receiver answered.
        ///   - lastReceiverReport: The middle 32 bits of its last RRTR NTP timestamp.
        ///   - delaySinceLastReceiverReport: Delay since that RRTR arrived, 1/65536 s units.
        public init(ssrc: UInt32, lastReceiverReport: UInt32, delaySinceLastReceiverReport: UInt32) {
            self.ssrc = ssrc
            self.lastReceiverReport = lastReceiverReport
            self.delaySinceLastReceiverReport = delaySinceLastReceiverReport
        }
    }

    /// One report block.
    public enum Block: Sendable, Hashable {
        /// The block type (BT) of a Receiver Reference Time block.
        public static let receiverReferenceTimeType: UInt8 = 4
        /// The block type (BT) of a DLRR block.
        public static let dlrrType: UInt8 = 5
        /// The block length of every Receiver Reference Time block.
        public static let receiverReferenceTimeLength: UInt16 = 2

        /// BT=4, Receiver Reference Time: the reporter's wall clock when sending, as a
        /// 64-bit NTP timestamp.
        case receiverReferenceTime(ntp: UInt64)
        /// BT=5, DLRR: one sub-block per receiver answered; none is valid.
        case dlrr([DLRRSubBlock])
        /// A block of another type, as on the wire: BT, the type-specific octet, and the
        /// contents after the 4-byte block header (a multiple of 4 bytes). Kept as given
        /// even for BT 4 or 5, which then parse back as the modelled case.
        case unknown(type: UInt8, typeSpecific: UInt8, body: [UInt8])

        /// The block type (BT) octet.
        public var type: UInt8 {
            switch self {
            case .receiverReferenceTime: Self.receiverReferenceTimeType
            case .dlrr: Self.dlrrType
            case .unknown(let type, _, _): type
            }
        }

        /// Bytes of the block on the wire, its 4-byte header included.
        public var serializedSize: Int {
            switch self {
            case .receiverReferenceTime: ExtendedReport.blockHeaderSize + 8
            case .dlrr(let subBlocks): ExtendedReport.blockHeaderSize + subBlocks.count * DLRRSubBlock.size
            case .unknown(_, _, let body): ExtendedReport.blockHeaderSize + body.count
            }
        }
    }

    /// SSRC of the packet's sender.
    public var senderSSRC: UInt32
    /// The report blocks, in order; none is valid.
    public var blocks: [Block]
    /// Padding octets after the packet, 0 for none, else a multiple of 4.
    public var paddingSize: UInt8

    /// Creates an extended report.
    ///
    /// - Parameters:
    ///   - senderSSRC: The packet's sender.
    ///   - blocks: The report blocks.
    ///   - paddingSize: Padding octets, 0 or a multiple of 4.
    public init(senderSSRC: UInt32, blocks: [Block], paddingSize: UInt8 = 0) {
        self.senderSSRC = senderSSRC
        self.blocks = blocks
        self.paddingSize = paddingSize
    }

    /*
      0                   1                   2                   3
      0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1
     +-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
     |V=2|P|reserved |   PT=XR=207   |             length            |
     +-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
     |                              SSRC                             |
     +-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
     :                         report blocks                         :
     +-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+

     Every report block (RFC 3611 section 3), its length in 32-bit words minus one,
     header included:

     +-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
     |      BT       | type-specific |         block length          |
     +-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
     :             type-specific block contents                      :
     +-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+

     Receiver Reference Time block (section 4.4):

     +-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
     |     BT=4      |   reserved    |       block length = 2        |
     +-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
     |              NTP timestamp, most significant word             |
     +-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
     |             NTP timestamp, least significant word             |
     +-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+

     DLRR block (section 4.5), block length 3 per sub-block:

     +-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
     |     BT=5      |   reserved    |         block length          |
     +=+=+=+=+=+=+=+=+=+=+=+=+=+=+=+=+=+=+=+=+=+=+=+=+=+=+=+=+=+=+=+=+
     |                 SSRC_1 (SSRC of first receiver)               | sub-
     +-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+ block
     |                         last RR (LRR)                         |   1
     +-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
     |                   delay since last RR (DLRR)                  |
     +=+=+=+=+=+=+=+=+=+=+=+=+=+=+=+=+=+=+=+=+=+=+=+=+=+=+=+=+=+=+=+=+
     |                 SSRC_2 (SSRC of second receiver)              | sub-
     +-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+ block
     :                               ...                             :   2
     +=+=+=+=+=+=+=+=+=+=+=+=+=+=+=+=+=+=+=+=+=+=+=+=+=+=+=+=+=+=+=+=+

     Reserved bits are sent as 0 and ignored on receipt.
    */

    /// Parses one extended report.
    ///
    /// - Parameter bytes: Exactly one RTCP packet of type 207.
    /// - Throws: `PacketError` if the header is malformed or another type, the length
    ///   disagrees with `bytes`, the padding is invalid, the SSRC is missing, a block
    ///   length runs past the packet, a Receiver Reference Time block length is not 2, or
    ///   a DLRR block length is not a multiple of 3.
    public init(parsing bytes: UnsafeRawBufferPointer) throws(PacketError) {
        let (_, body, paddingSize) = try RTCPHeader.parsePacket(bytes, type: Self.packetType, name: "XR")
        guard body.count >= Self.ssrcSize else {
            throw PacketError(.tooShort, "XR too short: \(body.count) < \(Self.ssrcSize) bytes after the header")
        }
        senderSSRC = body.uint32(at: 0)
        var blocks: [Block] = []
        var offset = Self.ssrcSize
        while offset < body.count {
            let block = try Self.parseBlock(body, at: offset)
            blocks.append(block)
            offset += block.serializedSize
        }
        self.blocks = blocks
        self.paddingSize = paddingSize
    }

    /// Reads the block at `offset` of `body` (the bytes between header and padding), after
    /// checking that its header and the length it gives fit.
    private static func parseBlock(_ body: UnsafeRawBufferPointer, at offset: Int) throws(PacketError) -> Block {
        // Offsets in messages count from the start of the packet, as a capture shows them.
        let position = RTCPHeader.size + offset
        let remaining = body.count - offset
        guard remaining >= blockHeaderSize else {
            throw PacketError(.tooShort, "XR block at offset \(position) too short: \(remaining) < \(blockHeaderSize)")
        }
        let type = body[offset]
        let typeSpecific = body[offset + 1]
        let length = body.uint16(at: offset + 2)
        let size = (Int(length) + 1) * 4
        guard size <= remaining else {
            throw PacketError(
                .badLength, "XR block type \(type) at offset \(position): length \(length) is \(size) bytes, \(remaining) remain"
            )
        }
        let contents = offset + blockHeaderSize
        switch type {
        case Block.receiverReferenceTimeType:
            guard length == Block.receiverReferenceTimeLength else {
                throw PacketError(
                    .badLength, "XR receiver reference time block length \(length) != \(Block.receiverReferenceTimeLength)"
                )
            }
            return .receiverReferenceTime(ntp: UInt64(body.uint32(at: contents)) << 32 | UInt64(body.uint32(at: contents + 4)))
        case Block.dlrrType:
            guard length % 3 == 0 else {
                throw PacketError(.badLength, "XR DLRR block length \(length) is not a multiple of 3")
            }
            let count = Int(length) / 3
            var subBlocks: [DLRRSubBlock] = []
            subBlocks.reserveCapacity(count)
            for index in 0..<count {
                let start = contents + index * DLRRSubBlock.size
                subBlocks.append(DLRRSubBlock(
                    ssrc: body.uint32(at: start), lastReceiverReport: body.uint32(at: start + 4),
                    delaySinceLastReceiverReport: body.uint32(at: start + 8)
                ))
            }
            return .dlrr(subBlocks)
        default:
            return .unknown(type: type, typeSpecific: typeSpecific, body: Array(body[contents..<(offset + size)]))
        }
    }

    /// Parses one extended report.
    ///
    /// - Parameter bytes: Exactly one RTCP packet of type 207.
    /// - Throws: `PacketError`, as `init(parsing:)` on a raw buffer.
    public init(parsing bytes: [UInt8]) throws(PacketError) {
        self = try rtcpParse(bytes) { (buffer) throws(PacketError) in try ExtendedReport(parsing: buffer) }
    }

    /// Bytes `serialize(into:)` writes.
    public var serializedSize: Int {
        blocks.reduce(RTCPHeader.size + Self.ssrcSize + Int(paddingSize)) { $0 + $1.serializedSize }
    }

    /// Writes the packet into the start of `buffer`, reserved bits zero.
    ///
    /// - Parameter buffer: At least `serializedSize` bytes.
    /// - Returns: The number of bytes written, `serializedSize`.
    /// - Throws: `PacketError` `.bufferTooSmall`; `.badLength` for an unknown block whose
    ///   body is not a multiple of 4 bytes, or past the RTCP length limit; `.badPadding`.
    public func serialize(into buffer: UnsafeMutableRawBufferPointer) throws(PacketError) -> Int {
        for case .unknown(let type, _, let body) in blocks where body.count % 4 != 0 {
            throw PacketError(.badLength, "XR block type \(type) body of \(body.count) bytes is not a multiple of 4")
        }
        let size = serializedSize
        try RTCPHeader.writePacket(
            into: buffer, size: size, type: Self.packetType, count: 0, paddingSize: paddingSize, name: "XR"
        )
        buffer.store(senderSSRC, at: 4)
        var offset = RTCPHeader.size + Self.ssrcSize
        for block in blocks {
            // The packet fits the 16-bit RTCP length, so every block fits its own.
            let blockSize = block.serializedSize
            buffer[offset] = block.type
            buffer.store(UInt16(blockSize / 4 - 1), at: offset + 2)
            let contents = offset + Self.blockHeaderSize
            switch block {
            case .receiverReferenceTime(let ntp):
                buffer[offset + 1] = 0
                buffer.store(UInt32(truncatingIfNeeded: ntp >> 32), at: contents)
                buffer.store(UInt32(truncatingIfNeeded: ntp), at: contents + 4)
            case .dlrr(let subBlocks):
                buffer[offset + 1] = 0
                for (index, subBlock) in subBlocks.enumerated() {
                    let start = contents + index * DLRRSubBlock.size
                    buffer.store(subBlock.ssrc, at: start)
                    buffer.store(subBlock.lastReceiverReport, at: start + 4)
                    buffer.store(subBlock.delaySinceLastReceiverReport, at: start + 8)
                }
            case .unknown(_, let typeSpecific, let body):
                buffer[offset + 1] = typeSpecific
                for (index, byte) in body.enumerated() { buffer[contents + index] = byte }
            }
            offset += blockSize
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
