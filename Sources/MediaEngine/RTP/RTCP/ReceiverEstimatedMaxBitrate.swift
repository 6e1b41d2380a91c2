/// An RTCP Receiver Estimated Maximum Bitrate, REMB (draft-alvestrand-rmcat-remb-03,
/// PSFB FMT 15 application-layer feedback): the total bitrate the receiver estimates it
/// can take for the listed media streams.
public struct ReceiverEstimatedMaxBitrate: Sendable, Hashable {
    /// The packet type of every REMB (PSFB).
    public static let packetType = RTCPHeader.PacketType.payloadSpecificFeedback
    /// The feedback message type of application-layer feedback, which REMB uses.
    public static let format: UInt8 = 15
    /// The largest exponent the 6-bit field holds.
    public static let maximumExponent: UInt8 = 63
    /// The largest mantissa the 18-bit field holds.
    public static let maximumMantissa: UInt32 = (1 << 18) - 1

    /// "REMB" in ASCII, the unique identifier that tells REMB from other AFB messages.
    private static let identifier: UInt32 = 0x5245_4D42
    private static let fixedSize = 16
    private static let exponentShift: UInt8 = 2
    private static let mantissaHighMask: UInt8 = 0x03

    /// SSRC of the packet's sender.
    public var senderSSRC: UInt32
    /// SSRC of the media source; the draft says it is always 0, kept for byte-exact
    /// re-serialization.
    public var mediaSSRC: UInt32
    /// BR Exp: the bitrate is `mantissa << exponent`; at most 63.
    public var exponent: UInt8
    /// BR Mantissa; at most `maximumMantissa`.
    public var mantissa: UInt32
    /// SSRCs of the media streams the estimate covers, at most 255.
    public var ssrcs: [UInt32]
    /// Padding octets after the packet, 0 for none, else a multiple of 4.
    public var paddingSize: UInt8

    /// Creates a REMB from its wire fields.
    ///
    /// - Parameters:
    ///   - senderSSRC: The packet's sender.
    ///   - mediaSSRC: 0, as the draft asks.
    ///   - exponent: BR Exp, at most 63.
    ///   - mantissa: BR Mantissa, at most `maximumMantissa`.
    ///   - ssrcs: Up to 255 media streams.
    ///   - paddingSize: Padding octets, 0 or a multiple of 4.
    public init(
        senderSSRC: UInt32, mediaSSRC: UInt32 = 0, exponent: UInt8, mantissa: UInt32, ssrcs: [UInt32],
        paddingSize: UInt8 = 0
    ) {
        self.senderSSRC = senderSSRC
        self.mediaSSRC = mediaSSRC
        self.exponent = exponent
        self.mantissa = mantissa
        self.ssrcs = ssrcs
        self.paddingSize = paddingSize
    }

    /// Creates a REMB announcing `bitrate`, encoded as `bitrate` does on set.
    ///
    /// - Parameters:
    ///   - senderSSRC: The packet's sender.
    ///   - bitrate: The estimate in bits per second.
    ///   - ssrcs: Up to 255 media streams.
    public init(senderSSRC: UInt32, bitrate: UInt64, ssrcs: [UInt32]) {
        self.init(senderSSRC: senderSSRC, exponent: 0, mantissa: 0, ssrcs: ssrcs)
        self.bitrate = bitrate
    }

    /// The estimate in bits per second, `mantissa << exponent`, saturating at
    /// `UInt64.max` for exponents the type cannot hold.
    ///
    /// Setting it picks the smallest exponent whose mantissa fits 18 bits and drops the
    /// low bits below it, so the encoded value never exceeds the estimate.
    public var bitrate: UInt64 {
        get {
            let value = UInt64(mantissa)
            guard value != 0 else { return 0 }
            guard Int(exponent) <= value.leadingZeroBitCount else { return .max }
            return value << exponent
        }
        set {
            let shift = max(0, UInt64.bitWidth - newValue.leadingZeroBitCount - 18)
            exponent = UInt8(shift)
            mantissa = UInt32(newValue >> shift)
        }
    }

    /*
      0                   1                   2                   3
      0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1
     +-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
     |V=2|P| FMT=15  |   PT=206      |             length            |
     +-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
     |                  SSRC of packet sender                        |
     +-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
     |                  SSRC of media source (0)                     |
     +-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
     |  Unique identifier 'R' 'E' 'M' 'B'                            |
     +-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
     |  Num SSRC     | BR Exp    |  BR Mantissa                      |
     +-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
     |   SSRC feedback                                               |
     +-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
     |  ...                                                          |
    */

    /// Parses one REMB.
    ///
    /// - Parameter bytes: Exactly one RTCP packet of type 206, FMT 15, identifier "REMB".
    /// - Throws: `PacketError` if the header is malformed or another type/FMT, the length
    ///   disagrees with `bytes` or with Num SSRC, or the padding is invalid;
    ///   `.unsupported` for an application-layer feedback message other than REMB.
    public init(parsing bytes: UnsafeRawBufferPointer) throws(PacketError) {
        let (_, body, paddingSize) = try RTCPHeader.parsePacket(
            bytes, type: Self.packetType, format: Self.format, name: "REMB"
        )
        guard body.count >= Self.fixedSize else {
            throw PacketError(.tooShort, "REMB too short: \(body.count) < \(Self.fixedSize) bytes after the header")
        }
        guard Self.hasIdentifier(body) else {
            throw PacketError(.unsupported, "PSFB FMT 15 message without the REMB identifier")
        }
        let count = Int(body[12])
        let needed = Self.fixedSize + count * 4
        guard needed == body.count else {
            throw PacketError(.badLength, "REMB num SSRC \(count) needs \(needed) bytes after the header, length gives \(body.count)")
        }
        senderSSRC = body.uint32(at: 0)
        mediaSSRC = body.uint32(at: 4)
        exponent = body[13] >> Self.exponentShift
        mantissa = UInt32(body[13] & Self.mantissaHighMask) << 16 | UInt32(body.uint16(at: 14))
        var ssrcs: [UInt32] = []
        ssrcs.reserveCapacity(count)
        for index in 0..<count { ssrcs.append(body.uint32(at: Self.fixedSize + index * 4)) }
        self.ssrcs = ssrcs
        self.paddingSize = paddingSize
    }

    /// Parses one REMB.
    ///
    /// - Parameter bytes: Exactly one RTCP packet of type 206, FMT 15, identifier "REMB".
    /// - Throws: `PacketError`, as `init(parsing:)` on a raw buffer.
    public init(parsing bytes: [UInt8]) throws(PacketError) {
        self = try rtcpParse(bytes) { (buffer) throws(PacketError) in try ReceiverEstimatedMaxBitrate(parsing: buffer) }
    }

    /// Whether the feedback body (after the RTCP header) carries the "REMB" identifier.
    static func hasIdentifier(_ body: UnsafeRawBufferPointer) -> Bool {
        body.count >= 12 && body.uint32(at: 8) == identifier
    }

    /// Bytes `serialize(into:)` writes.
    public var serializedSize: Int { RTCPHeader.size + Self.fixedSize + ssrcs.count * 4 + Int(paddingSize) }

    /// Writes the packet into the start of `buffer`.
    ///
    /// - Parameter buffer: At least `serializedSize` bytes.
    /// - Returns: The number of bytes written, `serializedSize`.
    /// - Throws: `PacketError` `.bufferTooSmall`; `.badField` for an exponent over 63, a
    ///   mantissa over 18 bits or more than 255 SSRCs; `.badPadding`.
    public func serialize(into buffer: UnsafeMutableRawBufferPointer) throws(PacketError) -> Int {
        guard exponent <= Self.maximumExponent, mantissa <= Self.maximumMantissa else {
            throw PacketError(.badField, "REMB exponent \(exponent) / mantissa \(mantissa) exceed 6 / 18 bits")
        }
        guard ssrcs.count <= Int(UInt8.max) else {
            throw PacketError(.badField, "REMB lists \(ssrcs.count) SSRCs > \(UInt8.max)")
        }
        let size = serializedSize
        try RTCPHeader.writePacket(
            into: buffer, size: size, type: Self.packetType, count: Int(Self.format), paddingSize: paddingSize, name: "REMB"
        )
        buffer.store(senderSSRC, at: 4)
        buffer.store(mediaSSRC, at: 8)
        buffer.store(Self.identifier, at: 12)
        buffer[16] = UInt8(ssrcs.count)
        buffer[17] = exponent << Self.exponentShift | UInt8(truncatingIfNeeded: mantissa >> 16)
        buffer.store(UInt16(truncatingIfNeeded: mantissa), at: 18)
        for (index, ssrc) in ssrcs.enumerated() { buffer.store(ssrc, at: 20 + index * 4) }
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
