/// An RTCP source description, SDES (RFC 3550 section 6.5): items such as the CNAME
/// for each of up to 31 sources.
public struct SourceDescription: Sendable, Hashable {
    /// The packet type of every source description.
    public static let packetType = RTCPHeader.PacketType.sourceDescription

    /// The type octet of an SDES item.
    public struct ItemType: RawRepresentable, Sendable, Hashable, CustomStringConvertible {
        /// The octet as it appears on the wire.
        public var rawValue: UInt8

        /// Wraps any item type octet; 0 is END, which only ends a chunk's item list.
        public init(rawValue: UInt8) { self.rawValue = rawValue }

        /// END: terminates a chunk's items; never stored in `Chunk.items`.
        public static let end = ItemType(rawValue: 0)
        /// CNAME: canonical end-point identifier, required in every compound packet.
        public static let cname = ItemType(rawValue: 1)
        /// NAME: user name.
        public static let name = ItemType(rawValue: 2)
        /// EMAIL: electronic mail address.
        public static let email = ItemType(rawValue: 3)
        /// PHONE: phone number.
        public static let phone = ItemType(rawValue: 4)
        /// LOC: geographic user location.
        public static let location = ItemType(rawValue: 5)
        /// TOOL: application or tool name.
        public static let tool = ItemType(rawValue: 6)
        /// NOTE: notice or status.
        public static let note = ItemType(rawValue: 7)
        /// PRIV: private extension; its value is a prefix length, prefix and value.
        public static let privateExtension = ItemType(rawValue: 8)

        /// The decimal octet.
        public var description: String { String(rawValue) }
    }

    /// One SDES item: a type and up to 255 octets of (normally UTF-8) text.
    public struct Item: Sendable, Hashable {
        /// The item type; never `.end`.
        public var type: ItemType
        /// The item's octets as on the wire, at most 255.
        public var value: [UInt8]

        /// Creates an item from raw octets.
        ///
        /// - Parameters:
        ///   - type: The item type, not `.end`.
        ///   - value: Up to 255 octets.
        public init(type: ItemType, value: [UInt8]) {
            self.type = type
            self.value = value
        }

        /// Creates an item holding `text` as UTF-8.
        ///
        /// - Parameters:
        ///   - type: The item type, not `.end`.
        ///   - text: Text of up to 255 UTF-8 octets.
        public init(type: ItemType, text: String) {
            self.init(type: type, value: Array(text.utf8))
        }

        /// The value decoded as UTF-8, invalid sequences replaced.
        public var text: String { String(decoding: value, as: UTF8.self) }
    }

    /// The items describing one source.
    public struct Chunk: Sendable, Hashable {
        /// SSRC or CSRC of the source described.
        public var source: UInt32
        /// Its items, in wire order, without the END item.
        public var items: [Item]

        /// Creates a chunk.
        ///
        /// - Parameters:
        ///   - source: The SSRC or CSRC described.
        ///   - items: Its items, without END.
        public init(source: UInt32, items: [Item]) {
            self.source = source
            self.items = items
        }

        /// The text of the first CNAME item, if any.
        public var cname: String? { items.first { $0.type == .cname }?.text }

        /// Bytes on the wire: SSRC, items, END and null octets to a 32-bit boundary.
        var serializedSize: Int {
            var size = 4 + 1
            for item in items { size += 2 + item.value.count }
            return (size + 3) & ~3
        }
    }

    /// The chunks, at most 31.
    public var chunks: [Chunk]
    /// Padding octets after the packet (not the null octets ending each chunk), 0 for
    /// none, else a multiple of 4.
    public var paddingSize: UInt8

    /// Creates a source description.
    ///
    /// - Parameters:
    ///   - chunks: Up to 31 chunks.
    ///   - paddingSize: Padding octets, 0 or a multiple of 4.
    public init(chunks: [Chunk], paddingSize: UInt8 = 0) {
        self.chunks = chunks
        self.paddingSize = paddingSize
    }

    /// Creates the usual one-chunk description carrying only a CNAME.
    ///
    /// - Parameters:
    ///   - ssrc: The source.
    ///   - cname: Its canonical name, up to 255 UTF-8 octets.
    public init(ssrc: UInt32, cname: String) {
        self.init(chunks: [Chunk(source: ssrc, items: [Item(type: .cname, text: cname)])])
    }

    /*
             0                   1                   2                   3
             0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1
            +-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
     header |V=2|P|    SC   |  PT=SDES=202  |             length            |
            +=+=+=+=+=+=+=+=+=+=+=+=+=+=+=+=+=+=+=+=+=+=+=+=+=+=+=+=+=+=+=+=+
     chunk  |                          SSRC/CSRC_1                          |
       1    +-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
            |                           SDES items                          |
            |                              ...                              |
            +=+=+=+=+=+=+=+=+=+=+=+=+=+=+=+=+=+=+=+=+=+=+=+=+=+=+=+=+=+=+=+=+
     chunk  |                          SSRC/CSRC_2                          |
       2    +-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
            :                              ...                              :
            +=+=+=+=+=+=+=+=+=+=+=+=+=+=+=+=+=+=+=+=+=+=+=+=+=+=+=+=+=+=+=+=+

     item:   0                   1                   2                   3
            +-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
            |     type      |     length    | text (length octets)        ...
            +-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+

     The item list ends with an END octet (type 0, no length) and null octets up to the
     next 32-bit boundary.
    */

    /// Parses one source description.
    ///
    /// - Parameter bytes: Exactly one RTCP packet of type 202.
    /// - Throws: `PacketError` if the header is malformed or another type, the length
    ///   disagrees with `bytes`, the padding is invalid, a chunk or item runs past the
    ///   length, a chunk lacks its END, alignment octets are not null, or bytes follow
    ///   the SC chunks.
    public init(parsing bytes: UnsafeRawBufferPointer) throws(PacketError) {
        let (header, body, paddingSize) = try RTCPHeader.parsePacket(
            bytes, type: Self.packetType, name: "source description"
        )
        var chunks: [Chunk] = []
        chunks.reserveCapacity(Int(header.count))
        var offset = 0
        for index in 0..<Int(header.count) {
            chunks.append(try Self.parseChunk(body, at: &offset, index: index))
        }
        guard offset == body.count else {
            throw PacketError(
                .badLength, "SDES: \(body.count - offset) bytes follow the \(header.count) chunks the count gives"
            )
        }
        self.chunks = chunks
        self.paddingSize = paddingSize
    }

    /// Parses one source description.
    ///
    /// - Parameter bytes: Exactly one RTCP packet of type 202.
    /// - Throws: `PacketError`, as `init(parsing:)` on a raw buffer.
    public init(parsing bytes: [UInt8]) throws(PacketError) {
        self = try rtcpParse(bytes) { (buffer) throws(PacketError) in try SourceDescription(parsing: buffer) }
    }

    /// Reads the chunk at `offset` (32-bit aligned) and moves `offset` past its alignment.
    private static func parseChunk(
        _ body: UnsafeRawBufferPointer, at offset: inout Int, index: Int
    ) throws(PacketError) -> Chunk {
        guard offset + 4 <= body.count else {
            throw PacketError(.badLength, "SDES chunk \(index) SSRC at \(offset) runs past the \(body.count) body bytes")
        }
        let source = body.uint32(at: offset)
        offset += 4
        var items: [Item] = []
        while true {
            guard offset < body.count else {
                throw PacketError(.badLength, "SDES chunk \(index) has no END item in the \(body.count) body bytes")
            }
            let type = ItemType(rawValue: body[offset])
            if type == .end {
                let aligned = (offset + 1 + 3) & ~3
                guard aligned <= body.count else {
                    throw PacketError(.badLength, "SDES chunk \(index) alignment to \(aligned) runs past \(body.count)")
                }
                for position in (offset + 1)..<aligned where body[position] != 0 {
                    throw PacketError(.badField, "SDES chunk \(index) alignment octet at \(position) is not null")
                }
                offset = aligned
                return Chunk(source: source, items: items)
            }
            guard offset + 2 <= body.count else {
                throw PacketError(.badLength, "SDES chunk \(index) item at \(offset) has no length octet")
            }
            let length = Int(body[offset + 1])
            let end = offset + 2 + length
            guard end <= body.count else {
                throw PacketError(.badLength, "SDES chunk \(index) item length \(length) at \(offset) ends at \(end) > \(body.count)")
            }
            items.append(Item(type: type, value: Array(body[(offset + 2)..<end])))
            offset = end
        }
    }

    /// Bytes `serialize(into:)` writes.
    public var serializedSize: Int {
        var size = RTCPHeader.size + Int(paddingSize)
        for chunk in chunks { size += chunk.serializedSize }
        return size
    }

    /// Writes the packet into the start of `buffer`.
    ///
    /// - Parameter buffer: At least `serializedSize` bytes.
    /// - Returns: The number of bytes written, `serializedSize`.
    /// - Throws: `PacketError` `.bufferTooSmall`; `.badField` for more than 31 chunks, an
    ///   item of type END or an item over 255 octets; `.badPadding`.
    public func serialize(into buffer: UnsafeMutableRawBufferPointer) throws(PacketError) -> Int {
        let size = serializedSize
        try RTCPHeader.writePacket(
            into: buffer, size: size, type: Self.packetType, count: chunks.count, paddingSize: paddingSize,
            name: "source description"
        )
        var offset = RTCPHeader.size
        for (index, chunk) in chunks.enumerated() {
            let chunkEnd = offset + chunk.serializedSize
            buffer.store(chunk.source, at: offset)
            offset += 4
            for item in chunk.items {
                guard item.type != .end, item.value.count <= Int(UInt8.max) else {
                    throw PacketError(
                        .badField, "SDES chunk \(index) item type \(item.type) with \(item.value.count) octets"
                    )
                }
                buffer[offset] = item.type.rawValue
                buffer[offset + 1] = UInt8(item.value.count)
                for (position, byte) in item.value.enumerated() { buffer[offset + 2 + position] = byte }
                offset += 2 + item.value.count
            }
            // END and the null octets that align the next chunk.
            for position in offset..<chunkEnd { buffer[position] = 0 }
            offset = chunkEnd
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
