/// The net-detect probe: a small UDP datagram the echo responder reflects.
///
/// ```
///  0                   1                   2                   3
///  0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1
/// +-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
/// |  'M'  |  'E'  |  'N'  |  'D'  |  version=1    |  kind         |
/// +-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
///    (magic "MEND": 4 bytes, then version and kind, 2 bytes of zero)
/// |                         task token (64 bits)                  |
/// |                         sequence number (32 bits)             |
/// |                         send time, ns (64 bits)               |
/// |                         padding (zeros) to the probe size ... |
/// ```
///
/// The first byte, 'M' (77), is outside every range RFC 7983 gives media protocols
/// (STUN 0-3, DTLS 20-63, RTP/RTCP 128-191), so probes never look like media. A reply is
/// the request with kind 2 and is never longer than it.
public struct ProbePacket: Sendable, Hashable {
    public enum Kind: UInt8, Sendable {
        case request = 1
        case reply = 2
    }

    static let magic: [UInt8] = Array("MEND".utf8)
    static let version: UInt8 = 1
    /// Bytes before the padding.
    public static let headerSize = 28
    /// The largest probe accepted or sent (one Ethernet payload, no fragmentation).
    public static let maximumSize = 1_472

    public var kind: Kind
    /// Random per task: replies carrying another token belong to someone else.
    public var token: UInt64
    public var sequence: UInt32
    /// When the request was sent, on the prober's monotonic clock (ns).
    public var sendTime: UInt64

    public init(kind: Kind, token: UInt64, sequence: UInt32, sendTime: UInt64) {
        self.kind = kind
        self.token = token
        self.sequence = sequence
        self.sendTime = sendTime
    }

    /// Parses a probe.
    /// - Throws: `PacketError` naming the problem: too short or long, wrong magic, version or kind.
    public init(parsing bytes: UnsafeRawBufferPointer) throws(PacketError) {
        guard bytes.count >= Self.headerSize else {
            throw PacketError(.tooShort, "probe too short: \(bytes.count) < \(Self.headerSize)")
        }
        guard bytes.count <= Self.maximumSize else {
            throw PacketError(.badLength, "probe too long: \(bytes.count) > \(Self.maximumSize)")
        }
        guard Array(bytes[0..<4]) == Self.magic else { throw PacketError(.badVersion, "not a probe: no MEND magic") }
        guard bytes[4] == Self.version else { throw PacketError(.badVersion, "probe version \(bytes[4]) is not \(Self.version)") }
        guard let kind = Kind(rawValue: bytes[5]) else { throw PacketError(.badField, "probe kind \(bytes[5]) is unknown") }
        self.kind = kind
        token = UInt64(bytes.uint32(at: 8)) << 32 | UInt64(bytes.uint32(at: 12))
        sequence = bytes.uint32(at: 16)
        sendTime = UInt64(bytes.uint32(at: 20)) << 32 | UInt64(bytes.uint32(at: 24))
    }

    /// Writes the probe padded with zeros to `size` bytes (at least the header).
    /// - Returns: The bytes written.
    /// - Throws: `PacketError` when the buffer is too small or `size` out of range.
    public func serialize(into buffer: UnsafeMutableRawBufferPointer, size: Int) throws(PacketError) -> Int {
        guard (Self.headerSize...Self.maximumSize).contains(size) else {
            throw PacketError(.badLength, "probe size \(size) is outside \(Self.headerSize)...\(Self.maximumSize)")
        }
        guard buffer.count >= size else { throw PacketError(.bufferTooSmall, "probe of \(size) bytes, buffer of \(buffer.count)") }
        for (index, byte) in Self.magic.enumerated() { buffer[index] = byte }
        buffer[4] = Self.version
        buffer[5] = kind.rawValue
        buffer[6] = 0
        buffer[7] = 0
        buffer.store(UInt32(truncatingIfNeeded: token >> 32), at: 8)
        buffer.store(UInt32(truncatingIfNeeded: token), at: 12)
        buffer.store(sequence, at: 16)
        buffer.store(UInt32(truncatingIfNeeded: sendTime >> 32), at: 20)
        buffer.store(UInt32(truncatingIfNeeded: sendTime), at: 24)
        for index in Self.headerSize..<size { buffer[index] = 0 }
        return size
    }

    /// The probe as bytes of `size`.
    public func serialized(size: Int = ProbePacket.headerSize) -> [UInt8] {
        var bytes = [UInt8](repeating: 0, count: max(size, Self.headerSize))
        _ = bytes.withUnsafeMutableBytes { try? serialize(into: $0, size: max(size, Self.headerSize)) }
        return bytes
    }
}
