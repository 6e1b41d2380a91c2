/// An RTCP goodbye, BYE (RFC 3550 section 6.6): the listed sources are leaving.
public struct Goodbye: Sendable, Hashable {
    /// The packet type of every goodbye.
    public static let packetType = RTCPHeader.PacketType.goodbye

    /// SSRCs or CSRCs that leave, at most 31.
    public var sources: [UInt32]
    /// The reason for leaving as on the wire (normally UTF-8), at most 255 octets; nil
    /// when the packet carries no reason field at all.
    public var reason: [UInt8]?
    /// Padding octets after the packet, 0 for none, else a multiple of 4.
    public var paddingSize: UInt8

    /// Creates a goodbye.
    ///
    /// - Parameters:
    ///   - sources: Up to 31 leaving sources.
    ///   - reason: Reason octets (up to 255), or nil for none.
    ///   - paddingSize: Padding octets, 0 or a multiple of 4.
    public init(sources: [UInt32], reason: [UInt8]? = nil, paddingSize: UInt8 = 0) {
        self.sources = sources
        self.reason = reason
        self.paddingSize = paddingSize
    }

    /// Creates a goodbye with a text reason.
    ///
    /// - Parameters:
    ///   - sources: Up to 31 leaving sources.
    ///   - reasonText: The reason, up to 255 UTF-8 octets.
    public init(sources: [UInt32], reasonText: String) {
        self.init(sources: sources, reason: Array(reasonText.utf8))
    }

    /// The reason decoded as UTF-8 (invalid sequences replaced), or nil if absent.
    public var reasonText: String? { reason.map { String(decoding: $0, as: UTF8.self) } }

    /*
            0                   1                   2                   3
            0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1
           +-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
           |V=2|P|    SC   |   PT=BYE=203  |             length            |
           +-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
           |                           SSRC/CSRC                           |
           +-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
           :                              ...                              :
           +=+=+=+=+=+=+=+=+=+=+=+=+=+=+=+=+=+=+=+=+=+=+=+=+=+=+=+=+=+=+=+=+
     (opt) |     length    |               reason for leaving            ...
           +-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+

     The reason is followed by null octets up to the next 32-bit boundary.
    */

    /// Parses one goodbye.
    ///
    /// - Parameter bytes: Exactly one RTCP packet of type 203.
    /// - Throws: `PacketError` if the header is malformed or another type, the length
    ///   disagrees with `bytes`, the padding is invalid, SC sources do not fit, the
    ///   reason runs past the length, its alignment octets are not null, or bytes follow.
    public init(parsing bytes: UnsafeRawBufferPointer) throws(PacketError) {
        let (header, body, paddingSize) = try RTCPHeader.parsePacket(bytes, type: Self.packetType, name: "BYE")
        let sourcesSize = Int(header.count) * 4
        guard sourcesSize <= body.count else {
            throw PacketError(.badLength, "BYE: \(header.count) sources need \(sourcesSize) bytes, length gives \(body.count)")
        }
        var sources: [UInt32] = []
        sources.reserveCapacity(Int(header.count))
        for index in 0..<Int(header.count) { sources.append(body.uint32(at: index * 4)) }
        self.sources = sources
        self.paddingSize = paddingSize
        guard sourcesSize < body.count else {
            reason = nil
            return
        }
        let length = Int(body[sourcesSize])
        let reasonEnd = sourcesSize + 1 + length
        let aligned = (reasonEnd + 3) & ~3
        guard reasonEnd <= body.count else {
            throw PacketError(.badLength, "BYE reason length \(length) ends at \(reasonEnd) > \(body.count)")
        }
        guard aligned == body.count else {
            throw PacketError(.badLength, "BYE: \(body.count - aligned) bytes follow the aligned reason ending at \(aligned)")
        }
        for position in reasonEnd..<aligned where body[position] != 0 {
            throw PacketError(.badField, "BYE reason alignment octet at \(position) is not null")
        }
        reason = Array(body[(sourcesSize + 1)..<reasonEnd])
    }

    /// Parses one goodbye.
    ///
    /// - Parameter bytes: Exactly one RTCP packet of type 203.
    /// - Throws: `PacketError`, as `init(parsing:)` on a raw buffer.
    public init(parsing bytes: [UInt8]) throws(PacketError) {
        self = try rtcpParse(bytes) { (buffer) throws(PacketError) in try Goodbye(parsing: buffer) }
    }

    /// Bytes `serialize(into:)` writes.
    public var serializedSize: Int {
        let reasonSize = reason.map { ($0.count + 1 + 3) & ~3 } ?? 0
        return RTCPHeader.size + sources.count * 4 + reasonSize + Int(paddingSize)
    }

    /// Writes the packet into the start of `buffer`.
    ///
    /// - Parameter buffer: At least `serializedSize` bytes.
    /// - Returns: The number of bytes written, `serializedSize`.
    /// - Throws: `PacketError` `.bufferTooSmall`; `.badField` for more than 31 sources or a
    ///   reason over 255 octets; `.badPadding`.
    public func serialize(into buffer: UnsafeMutableRawBufferPointer) throws(PacketError) -> Int {
        let size = serializedSize
        if let reason, reason.count > Int(UInt8.max) {
            throw PacketError(.badField, "BYE reason of \(reason.count) octets > \(UInt8.max)")
        }
        try RTCPHeader.writePacket(
            into: buffer, size: size, type: Self.packetType, count: sources.count, paddingSize: paddingSize, name: "BYE"
        )
        var offset = RTCPHeader.size
        for source in sources {
            buffer.store(source, at: offset)
            offset += 4
        }
        if let reason {
            buffer[offset] = UInt8(reason.count)
            for (position, byte) in reason.enumerated() { buffer[offset + 1 + position] = byte }
            let aligned = (offset + 1 + reason.count + 3) & ~3
            for position in (offset + 1 + reason.count)..<aligned { buffer[position] = 0 }
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
