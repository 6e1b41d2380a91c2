/// The 4-byte header every RTCP packet starts with (RFC 3550 section 6.4.1).
///
/// `count` is the reception report count (SR, RR), the source count (SDES, BYE), the
/// subtype (APP) or the feedback message type FMT (RTPFB, PSFB, RFC 4585 section 6.1).
/// `length` is the packet length in 32-bit words minus one, header and padding included.
public struct RTCPHeader: Sendable, Hashable {
    /// The RTCP packet type (PT) octet.
    public struct PacketType: RawRepresentable, Sendable, Hashable, CustomStringConvertible {
        /// The octet as it appears on the wire.
        public var rawValue: UInt8

        /// Wraps any packet type octet, known here or not.
        public init(rawValue: UInt8) { self.rawValue = rawValue }

        /// SR, sender report (RFC 3550 section 6.4.1).
        public static let senderReport = PacketType(rawValue: 200)
        /// RR, receiver report (RFC 3550 section 6.4.2).
        public static let receiverReport = PacketType(rawValue: 201)
        /// SDES, source description (RFC 3550 section 6.5).
        public static let sourceDescription = PacketType(rawValue: 202)
        /// BYE, goodbye (RFC 3550 section 6.6).
        public static let goodbye = PacketType(rawValue: 203)
        /// APP, application-defined (RFC 3550 section 6.7).
        public static let applicationDefined = PacketType(rawValue: 204)
        /// RTPFB, transport-layer feedback (RFC 4585 section 6.2).
        public static let transportLayerFeedback = PacketType(rawValue: 205)
        /// PSFB, payload-specific feedback (RFC 4585 section 6.3).
        public static let payloadSpecificFeedback = PacketType(rawValue: 206)
        /// XR, extended report (RFC 3611); see `ExtendedReport`.
        public static let extendedReport = PacketType(rawValue: 207)

        /// The decimal octet, as RFCs and packet captures print it.
        public var description: String { String(rawValue) }
    }

    /// The only RTP/RTCP version in use.
    public static let version: UInt8 = 2
    /// Bytes in the header.
    public static let size = 4
    /// The largest value the 5-bit count field holds.
    public static let maximumCount: UInt8 = 0x1F
    /// The largest packet the 16-bit length field can describe, in bytes.
    public static let maximumPacketSize = (Int(UInt16.max) + 1) * 4

    private static let versionShift: UInt8 = 6
    private static let paddingMask: UInt8 = 0x20
    private static let countMask: UInt8 = 0x1F

    /// Whether padding octets end the packet; the last one holds their count.
    public var padding: Bool
    /// Reception report count, source count or feedback message type (5 bits).
    public var count: UInt8
    /// The packet type.
    public var packetType: PacketType
    /// Packet length in 32-bit words minus one, counting header and padding.
    public var length: UInt16

    /// Creates a header from its fields.
    ///
    /// - Parameters:
    ///   - padding: Whether the packet ends with padding.
    ///   - count: Report count, source count or FMT; 0...31.
    ///   - packetType: The packet type.
    ///   - length: Packet length in 32-bit words minus one.
    public init(padding: Bool = false, count: UInt8, packetType: PacketType, length: UInt16) {
        self.padding = padding
        self.count = count
        self.packetType = packetType
        self.length = length
    }

    /// The whole packet's size in bytes that `length` describes.
    public var packetSize: Int { (Int(length) + 1) * 4 }

    /*
      0                   1                   2                   3
      0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1
     +-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
     |V=2|P|  count  |      PT       |             length            |
     +-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
    */

    /// Parses the first four bytes of `bytes`; the rest is not looked at, so this does
    /// not check that the packet `length` describes is present.
    ///
    /// - Parameter bytes: At least the four header bytes.
    /// - Throws: `PacketError` `.tooShort` under four bytes, `.badVersion` if V is not 2.
    public init(parsing bytes: UnsafeRawBufferPointer) throws(PacketError) {
        guard bytes.count >= Self.size else {
            throw PacketError(.tooShort, "RTCP packet too short: \(bytes.count) < \(Self.size)")
        }
        let version = bytes[0] >> Self.versionShift
        guard version == Self.version else {
            throw PacketError(.badVersion, "RTCP version \(version) != \(Self.version)")
        }
        padding = bytes[0] & Self.paddingMask != 0
        count = bytes[0] & Self.countMask
        packetType = PacketType(rawValue: bytes[1])
        length = bytes.uint16(at: 2)
    }

    /// Parses the header at the start of `bytes`.
    ///
    /// - Parameter bytes: At least the four header bytes.
    /// - Throws: `PacketError`, as `init(parsing:)` on a raw buffer.
    public init(parsing bytes: [UInt8]) throws(PacketError) {
        self = try rtcpParse(bytes) { (buffer) throws(PacketError) in try RTCPHeader(parsing: buffer) }
    }

    /// Bytes `serialize(into:)` writes: always 4.
    public var serializedSize: Int { Self.size }

    /// Writes the header into the start of `buffer`.
    ///
    /// - Parameter buffer: At least four bytes.
    /// - Returns: The number of bytes written, 4.
    /// - Throws: `PacketError` `.bufferTooSmall`, or `.badField` if `count` exceeds 31.
    public func serialize(into buffer: UnsafeMutableRawBufferPointer) throws(PacketError) -> Int {
        guard buffer.count >= Self.size else {
            throw PacketError(.bufferTooSmall, "RTCP buffer too small: \(buffer.count) < \(Self.size)")
        }
        guard count <= Self.maximumCount else {
            throw PacketError(.badField, "RTCP count \(count) > \(Self.maximumCount)")
        }
        buffer[0] = Self.version << Self.versionShift | (padding ? Self.paddingMask : 0) | count
        buffer[1] = packetType.rawValue
        buffer.store(length, at: 2)
        return Self.size
    }

    /// The four header bytes.
    ///
    /// - Precondition: `count` is at most 31.
    public func serialized() -> [UInt8] {
        rtcpSerialized(size: serializedSize) { (buffer) throws(PacketError) in try serialize(into: buffer) }
    }
}

// The framing every packet type shares: one packet filling the buffer, its padding, and
// the header written in front of a body of known size.
extension RTCPHeader {
    /// Parses the header of the single packet that fills `bytes` exactly, checks its type
    /// and padding, and returns the bytes between header and padding.
    ///
    /// - Parameters:
    ///   - bytes: Exactly one RTCP packet.
    ///   - type: The packet type the caller parses.
    ///   - format: The FMT the caller parses, or nil when `count` is a count.
    ///   - name: The packet's name for error messages.
    static func parsePacket(
        _ bytes: UnsafeRawBufferPointer, type: PacketType, format: UInt8? = nil, name: String
    ) throws(PacketError) -> (header: RTCPHeader, body: UnsafeRawBufferPointer, paddingSize: UInt8) {
        let header = try RTCPHeader(parsing: bytes)
        guard header.packetType == type, format == nil || header.count == format else {
            let expected = format.map { "\(type) FMT \($0)" } ?? "\(type)"
            throw PacketError(.badField, "\(name): packet type \(header.packetType) FMT/count \(header.count), expected \(expected)")
        }
        guard header.packetSize == bytes.count else {
            throw PacketError(.badLength, "\(name): RTCP length \(header.length) is \(header.packetSize) bytes, packet is \(bytes.count)")
        }
        let paddingSize = try header.paddingSize(in: bytes)
        let body = UnsafeRawBufferPointer(rebasing: bytes[Self.size..<(bytes.count - Int(paddingSize))])
        return (header, body, paddingSize)
    }

    /// The padding octet count at the end of `packet`, which is exactly this header's
    /// packet; 0 when the padding bit is clear.
    func paddingSize(in packet: UnsafeRawBufferPointer) throws(PacketError) -> UInt8 {
        guard padding else { return 0 }
        let size = packet[packet.count - 1]
        // RFC 3550 6.4.1: the count includes itself and is a multiple of four.
        guard size != 0, size % 4 == 0 else {
            throw PacketError(.badPadding, "RTCP padding count \(size) is not a positive multiple of 4")
        }
        guard Int(size) <= packet.count - Self.size else {
            throw PacketError(.badPadding, "RTCP padding \(size) > \(packet.count - Self.size) bytes after the header")
        }
        return size
    }

    /// Checks that a packet of `size` bytes fits `buffer` and the length field, then writes
    /// its header and padding; the caller writes the body between them.
    static func writePacket(
        into buffer: UnsafeMutableRawBufferPointer, size: Int, type: PacketType, count: Int, paddingSize: UInt8, name: String
    ) throws(PacketError) {
        guard buffer.count >= size else {
            throw PacketError(.bufferTooSmall, "\(name) buffer too small: \(buffer.count) < \(size)")
        }
        guard paddingSize % 4 == 0 else {
            throw PacketError(.badPadding, "\(name) padding \(paddingSize) is not a multiple of 4")
        }
        guard size % 4 == 0, size <= maximumPacketSize else {
            throw PacketError(.badLength, "\(name) of \(size) bytes is not a multiple of 4 up to \(maximumPacketSize)")
        }
        guard count <= Int(maximumCount) else {
            throw PacketError(.badField, "\(name) count \(count) > \(maximumCount)")
        }
        let header = RTCPHeader(
            padding: paddingSize != 0, count: UInt8(count), packetType: type, length: UInt16(size / 4 - 1)
        )
        _ = try header.serialize(into: buffer)
        if paddingSize != 0 {
            let start = size - Int(paddingSize)
            for index in start..<(size - 1) { buffer[index] = 0 }
            buffer[size - 1] = paddingSize
        }
    }
}

/// A fresh array holding what `serialize` writes into `size` bytes; traps if it throws,
/// which only a value that breaks a documented field limit can make it do.
func rtcpSerialized(size: Int, _ serialize: (UnsafeMutableRawBufferPointer) throws(PacketError) -> Int) -> [UInt8] {
    var bytes = [UInt8](repeating: 0, count: size)
    bytes.withUnsafeMutableBytes { buffer in
        do {
            let written = try serialize(buffer)
            precondition(written == size, "RTCP serializer wrote \(written) of \(size) bytes")
        } catch {
            preconditionFailure("RTCP packet cannot be serialized: \(error)")
        }
    }
    return bytes
}

/// Parses `bytes` with a raw-buffer parser; `Array.withUnsafeBytes` does not carry typed
/// throws, so this goes through `withUnsafeBufferPointer`.
func rtcpParse<T>(_ bytes: [UInt8], _ parse: (UnsafeRawBufferPointer) throws(PacketError) -> T) throws(PacketError) -> T {
    try bytes.withUnsafeBufferPointer { (buffer) throws(PacketError) in try parse(UnsafeRawBufferPointer(buffer)) }
}
