/// A validated, read-only view of one RTP packet (RFC 3550 section 5.1) in a caller's
/// buffer. Parsing checks every length and allocates nothing; the view is valid only
/// while the buffer is.
///
/// ```
///  0                   1                   2                   3
///  0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1
/// +-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
/// |V=2|P|X|  CC   |M|     PT      |       sequence number         |
/// +-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
/// |                           timestamp                           |
/// +-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
/// |           synchronization source (SSRC) identifier            |
/// +=+=+=+=+=+=+=+=+=+=+=+=+=+=+=+=+=+=+=+=+=+=+=+=+=+=+=+=+=+=+=+=+
/// |            contributing source (CSRC) identifiers             |
/// |                             ....                              |
/// +-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
/// |      defined by profile       |           length              |  if X
/// |                        header extension                       |
/// +-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
/// |                 payload  ...  | padding | count |               if P
/// ```
public struct RTPPacketView {
    /// The whole packet.
    public let bytes: UnsafeRawBufferPointer
    public let marker: Bool
    public let payloadType: UInt8
    public let sequenceNumber: UInt16
    public let timestamp: UInt32
    public let ssrc: UInt32
    /// Number of CSRCs (0 to 15).
    public let csrcCount: Int
    /// The extension's "defined by profile" field, or nil without an extension.
    public let extensionProfile: UInt16?
    /// Where the extension data (after its 4-byte header) lies in `bytes`.
    public let extensionRange: Range<Int>
    /// Where the payload lies in `bytes`.
    public let payloadRange: Range<Int>
    /// Padding bytes at the end, including the count byte; 0 without padding.
    public let paddingLength: Int

    /// The fixed header's size.
    public static let fixedHeaderSize = 12

    /// Validates `bytes` as one RTP packet.
    /// - Throws: `PacketError` naming the field and the numbers involved.
    public init(_ bytes: UnsafeRawBufferPointer) throws(PacketError) {
        guard bytes.count >= RTPPacketView.fixedHeaderSize else {
            throw PacketError(.tooShort, "RTP packet too short: \(bytes.count) < 12")
        }
        let first = bytes[0]
        guard first >> 6 == 2 else {
            throw PacketError(.badVersion, "RTP version \(first >> 6), expected 2")
        }
        let csrcCount = Int(first & 0x0F)
        var offset = RTPPacketView.fixedHeaderSize + 4 * csrcCount
        guard offset <= bytes.count else {
            throw PacketError(.badLength, "RTP CSRC count \(csrcCount) needs \(offset) bytes, packet has \(bytes.count)")
        }
        var profile: UInt16?
        var extensionRange = offset..<offset
        if first & 0x10 != 0 {
            guard offset + 4 <= bytes.count else {
                throw PacketError(.badLength, "RTP extension header at \(offset) past the end (\(bytes.count) bytes)")
            }
            profile = bytes.uint16(at: offset)
            let words = Int(bytes.uint16(at: offset + 2))
            let start = offset + 4
            let end = start + 4 * words
            guard end <= bytes.count else {
                throw PacketError(.badLength, "RTP extension of \(words) words ends at \(end), packet has \(bytes.count) bytes")
            }
            extensionRange = start..<end
            try RTPHeaderExtensionElements.validate(bytes, range: extensionRange, profile: profile!)
            offset = end
        }
        var paddingLength = 0
        if first & 0x20 != 0 {
            paddingLength = Int(bytes[bytes.count - 1])
            guard paddingLength >= 1, offset + paddingLength <= bytes.count else {
                throw PacketError(.badPadding,
                                  "RTP padding of \(paddingLength) bytes does not fit after a \(offset)-byte header in \(bytes.count) bytes")
            }
        }
        self.bytes = bytes
        self.marker = bytes[1] & 0x80 != 0
        self.payloadType = bytes[1] & 0x7F
        self.sequenceNumber = bytes.uint16(at: 2)
        self.timestamp = bytes.uint32(at: 4)
        self.ssrc = bytes.uint32(at: 8)
        self.csrcCount = csrcCount
        self.extensionProfile = profile
        self.extensionRange = extensionRange
        self.payloadRange = offset..<(bytes.count - paddingLength)
        self.paddingLength = paddingLength
    }

    /// The `index`th CSRC.
    /// - Precondition: `index < csrcCount`.
    public func csrc(at index: Int) -> UInt32 {
        precondition(index < csrcCount, "CSRC index out of range")
        return bytes.uint32(at: 12 + 4 * index)
    }

    /// The payload, without padding.
    public var payload: UnsafeRawBufferPointer { UnsafeRawBufferPointer(rebasing: bytes[payloadRange]) }

    /// The header's size (fixed part, CSRCs and extension).
    public var headerSize: Int { payloadRange.lowerBound }

    /// The value of the RFC 8285 extension element `id`, or nil when absent (or when the
    /// extension uses another profile).
    public func extensionValue(id: UInt8) -> UnsafeRawBufferPointer? {
        guard let extensionProfile else { return nil }
        return RTPHeaderExtensionElements.value(id: id, in: bytes, range: extensionRange, profile: extensionProfile)
    }
}
