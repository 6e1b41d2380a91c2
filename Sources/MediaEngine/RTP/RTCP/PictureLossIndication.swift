/// An RTCP Picture Loss Indication (RFC 4585 section 6.3.1, PSFB FMT 1): the sender of
/// this packet lost picture data of the media source and asks for a refresh (a keyframe).
public struct PictureLossIndication: Sendable, Hashable {
    /// The packet type of every PLI (PSFB).
    public static let packetType = RTCPHeader.PacketType.payloadSpecificFeedback
    /// The feedback message type of PLI.
    public static let format: UInt8 = 1

    private static let ssrcsSize = 8

    /// SSRC of the packet's sender (the receiver of the media).
    public var senderSSRC: UInt32
    /// SSRC of the media source whose picture was lost.
    public var mediaSSRC: UInt32
    /// Padding octets after the packet, 0 for none, else a multiple of 4.
    public var paddingSize: UInt8

    /// Creates a PLI.
    ///
    /// - Parameters:
    ///   - senderSSRC: The packet's sender.
    ///   - mediaSSRC: The media source.
    ///   - paddingSize: Padding octets, 0 or a multiple of 4.
    public init(senderSSRC: UInt32, mediaSSRC: UInt32, paddingSize: UInt8 = 0) {
        self.senderSSRC = senderSSRC
        self.mediaSSRC = mediaSSRC
        self.paddingSize = paddingSize
    }

    /*
      0                   1                   2                   3
      0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1
     +-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
     |V=2|P| FMT=1   |   PT=PSFB=206 |          length=2             |
     +-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
     |                  SSRC of packet sender                        |
     +-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
     |                  SSRC of media source                         |
     +-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+

     PLI has no FCI, so without padding the length MUST be 2.
    */

    /// Parses one PLI.
    ///
    /// - Parameter bytes: Exactly one RTCP packet of type 206, FMT 1.
    /// - Throws: `PacketError` if the header is malformed or another type/FMT, the length
    ///   disagrees with `bytes`, the padding is invalid, or the body is not 8 bytes.
    public init(parsing bytes: UnsafeRawBufferPointer) throws(PacketError) {
        let (_, body, paddingSize) = try RTCPHeader.parsePacket(
            bytes, type: Self.packetType, format: Self.format, name: "PLI"
        )
        guard body.count >= Self.ssrcsSize else {
            throw PacketError(.tooShort, "PLI too short: \(body.count) < \(Self.ssrcsSize) bytes after the header")
        }
        guard body.count == Self.ssrcsSize else {
            throw PacketError(.badLength, "PLI has \(body.count - Self.ssrcsSize) FCI bytes, must have 0")
        }
        senderSSRC = body.uint32(at: 0)
        mediaSSRC = body.uint32(at: 4)
        self.paddingSize = paddingSize
    }

    /// Parses one PLI.
    ///
    /// - Parameter bytes: Exactly one RTCP packet of type 206, FMT 1.
    /// - Throws: `PacketError`, as `init(parsing:)` on a raw buffer.
    public init(parsing bytes: [UInt8]) throws(PacketError) {
        self = try rtcpParse(bytes) { (buffer) throws(PacketError) in try PictureLossIndication(parsing: buffer) }
    }

    /// Bytes `serialize(into:)` writes: 12 plus padding.
    public var serializedSize: Int { RTCPHeader.size + Self.ssrcsSize + Int(paddingSize) }

    /// Writes the packet into the start of `buffer`.
    ///
    /// - Parameter buffer: At least `serializedSize` bytes.
    /// - Returns: The number of bytes written, `serializedSize`.
    /// - Throws: `PacketError` `.bufferTooSmall` or `.badPadding`.
    public func serialize(into buffer: UnsafeMutableRawBufferPointer) throws(PacketError) -> Int {
        let size = serializedSize
        try RTCPHeader.writePacket(
            into: buffer, size: size, type: Self.packetType, count: Int(Self.format), paddingSize: paddingSize, name: "PLI"
        )
        buffer.store(senderSSRC, at: 4)
        buffer.store(mediaSSRC, at: 8)
        return size
    }

    /// The packet's bytes.
    ///
    /// - Precondition: `paddingSize` is a multiple of 4; a parsed packet's always is.
    public func serialized() -> [UInt8] {
        rtcpSerialized(size: serializedSize) { (buffer) throws(PacketError) in try serialize(into: buffer) }
    }
}
