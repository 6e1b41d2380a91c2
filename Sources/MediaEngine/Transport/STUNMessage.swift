/// A STUN message (RFC 8489, formerly RFC 5389): what ICE connectivity checks and TURN
/// (RFC 8656) exchange. The attributes ICE and TURN use are decoded into their own cases;
/// others are kept raw. MESSAGE-INTEGRITY(-SHA256) and FINGERPRINT are computed by
/// `serialize(into:integrity:fingerprint:)` and checked on received bytes by
/// `verifyIntegrity(_:in:)` and `verifyFingerprint(_:)`.
///
/// Parsing then serializing gives the same bytes back. Attribute padding is written as zero,
/// except that an unmodified parsed message keeps the padding it arrived with, so that its
/// MESSAGE-INTEGRITY and FINGERPRINT, which cover the padding, stay valid. Equality and
/// hashing ignore padding and where integrity attributes were found.
public struct STUNMessage: Sendable, Hashable {
    /// The message type.
    public var type: MessageType
    /// The transaction ID; a response carries its request's.
    public var transactionID: STUNTransactionID
    /// The attributes, in wire order. At most 64.
    public var attributes: [Attribute]

    /// The padding of a parsed message with any non-zero padding byte: one word per
    /// attribute, its padding bytes left-aligned. Used only while `attributes` is unchanged.
    private var receivedPadding: ReceivedPadding?
    /// Where a parsed message's first MESSAGE-INTEGRITY, MESSAGE-INTEGRITY-SHA256 and
    /// FINGERPRINT start in the received bytes.
    var receivedIntegrityOffsets = IntegrityOffsets()

    private struct ReceivedPadding: Sendable {
        let attributes: [Attribute]
        let words: [UInt32]
    }

    struct IntegrityOffsets: Sendable {
        var sha1: Int?
        var sha256: Int?
        var fingerprint: Int?
    }

    static let headerSize = 20
    static let attributeHeaderSize = 4
    static let magicCookie: UInt32 = 0x2112_A442
    static let typeTopBitsMask: UInt16 = 0xC000
    /// The most attributes a message may carry. RFC 8489 sets no limit; a connectivity check
    /// carries about eight, and the bound caps the work one datagram can cause.
    public static let maximumAttributeCount = 64
    /// The largest message length field: the largest multiple of 4 in 16 bits.
    static let maximumLength = 65_532

    /// Creates a message.
    ///
    /// - Parameters:
    ///   - type: The message type.
    ///   - transactionID: A fresh `STUNTransactionID.random()` for a request; the request's
    ///     ID for a response.
    ///   - attributes: The attributes, in wire order.
    public init(type: MessageType, transactionID: STUNTransactionID, attributes: [Attribute] = []) {
        self.type = type
        self.transactionID = transactionID
        self.attributes = attributes
    }

    /*
     Header (RFC 8489 section 5):

      0                   1                   2                   3
      0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1
     +-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
     |0 0|     STUN Message Type     |         Message Length        |
     +-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
     |                         Magic Cookie                          |
     +-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
     |                                                               |
     |                     Transaction ID (96 bits)                  |
     |                                                               |
     +-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+

     Message Type, method bits M and class bits C interleaved:

       0                 1
       2  3  4 5 6 7 8 9 0 1 2 3 4 5
      +--+--+-+-+-+-+-+-+-+-+-+-+-+-+
      |M |M |M|M|M|C|M|M|M|C|M|M|M|M|
      |11|10|9|8|7|1|6|5|4|0|3|2|1|0|
      +--+--+-+-+-+-+-+-+-+-+-+-+-+-+

     Magic Cookie is 0x2112A442. Message Length counts the bytes after the 20-byte header,
     a multiple of 4. Then attributes (section 14), each padded to a multiple of 4 bytes;
     Length is the value's length before padding:

      0                   1                   2                   3
      0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1
     +-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
     |         Type                  |            Length             |
     +-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
     |                         Value (variable)                ....
     +-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+

     Values are described in STUNMessage+AttributeCoding.swift.
    */

    /// Parses one STUN message.
    ///
    /// - Parameter bytes: Exactly one message, as one UDP datagram carries it.
    /// - Throws: `PacketError` if `bytes` is under 20 bytes, a top type bit is set, the magic
    ///   cookie is missing, the length is not a multiple of 4 or disagrees with `bytes`, an
    ///   attribute runs past the end, there are over 64 attributes, or a decoded attribute
    ///   is malformed (text over 763 bytes or not UTF-8, an address family other than IPv4
    ///   or IPv6 or of the wrong length, an ERROR-CODE class outside 3...6 or number over 99,
    ///   a fixed-size value of another size, a channel number outside 0x4000...0x4FFF).
    public init(parsing bytes: UnsafeRawBufferPointer) throws(PacketError) {
        guard bytes.count >= Self.headerSize else {
            throw PacketError(.tooShort, "STUN message too short: \(bytes.count) < \(Self.headerSize)")
        }
        let rawType = bytes.uint16(at: 0)
        guard let type = MessageType(rawValue: rawType) else {
            throw PacketError(.badField, "STUN message type \(Self.hex(rawType)) has its top two bits set, must be 0")
        }
        let cookie = bytes.uint32(at: 4)
        guard cookie == Self.magicCookie else {
            throw PacketError(.badField, "STUN magic cookie \(Self.hex(cookie)) != \(Self.hex(Self.magicCookie))")
        }
        let length = Int(bytes.uint16(at: 2))
        guard length % 4 == 0 else {
            throw PacketError(.badLength, "STUN length \(length) is not a multiple of 4")
        }
        guard length == bytes.count - Self.headerSize else {
            throw PacketError(.badLength, "STUN length \(length) != \(bytes.count - Self.headerSize) bytes after the header")
        }
        let transactionID = STUNTransactionID(bytes, at: 8)

        var attributes: [Attribute] = []
        var paddingWords: [UInt32]?
        var offsets = IntegrityOffsets()
        var offset = Self.headerSize
        while offset < bytes.count {
            guard attributes.count < Self.maximumAttributeCount else {
                throw PacketError(.badField, "STUN message has over \(Self.maximumAttributeCount) attributes")
            }
            // Length is a multiple of 4 and so is every padded attribute, so a header always
            // fits; checked anyway so that no read depends on that reasoning.
            guard bytes.count - offset >= Self.attributeHeaderSize else {
                throw PacketError(.badLength, "STUN attribute at offset \(offset): \(bytes.count - offset) < 4 header bytes left")
            }
            let attributeType = bytes.uint16(at: offset)
            let valueSize = Int(bytes.uint16(at: offset + 2))
            let paddedSize = Self.padded(valueSize)
            let valueStart = offset + Self.attributeHeaderSize
            guard paddedSize <= bytes.count - valueStart else {
                throw PacketError(
                    .badLength,
                    "STUN attribute \(Self.hex(attributeType)) at offset \(offset): length \(valueSize) "
                        + "(\(paddedSize) padded) > \(bytes.count - valueStart) bytes left"
                )
            }
            let value = UnsafeRawBufferPointer(rebasing: bytes[valueStart..<(valueStart + valueSize)])
            attributes.append(try Self.decode(type: attributeType, value: value, transactionID: transactionID))
            switch attributeType {
            case Attribute.messageIntegrityType where offsets.sha1 == nil: offsets.sha1 = offset
            case Attribute.messageIntegritySHA256Type where offsets.sha256 == nil: offsets.sha256 = offset
            case Attribute.fingerprintType where offsets.fingerprint == nil: offsets.fingerprint = offset
            default: break
            }

            var word: UInt32 = 0
            for index in 0..<(paddedSize - valueSize) {
                word |= UInt32(bytes[valueStart + valueSize + index]) << (24 - 8 * index)
            }
            if word != 0, paddingWords == nil {
                paddingWords = [UInt32](repeating: 0, count: attributes.count - 1)
            }
            paddingWords?.append(word)
            offset = valueStart + paddedSize
        }

        self.type = type
        self.transactionID = transactionID
        self.attributes = attributes
        receivedPadding = paddingWords.map { ReceivedPadding(attributes: attributes, words: $0) }
        receivedIntegrityOffsets = offsets
    }

    /// Parses one STUN message.
    ///
    /// - Parameter bytes: Exactly one message.
    /// - Throws: `PacketError`, as `init(parsing:)` on a raw buffer.
    public init(parsing bytes: [UInt8]) throws(PacketError) {
        self = try bytes.withUnsafeBufferPointer { (buffer) throws(PacketError) in
            try STUNMessage(parsing: UnsafeRawBufferPointer(buffer))
        }
    }

    /// A cheap test for STUN, without parsing attributes: at least 20 bytes, the top two
    /// bits zero, the magic cookie, and a length that is a multiple of 4 and matches `bytes`.
    /// TURN ChannelData starts with 0b01 and so never passes (see `TURNChannelData`).
    public static func looksLikeSTUN(_ bytes: UnsafeRawBufferPointer) -> Bool {
        guard bytes.count >= headerSize, bytes.uint16(at: 0) & typeTopBitsMask == 0,
              bytes.uint32(at: 4) == magicCookie
        else { return false }
        let length = Int(bytes.uint16(at: 2))
        return length % 4 == 0 && length == bytes.count - headerSize
    }

    /// Bytes `serialize(into:)` writes: 20, plus 4 and the padded value per attribute.
    public var serializedSize: Int { serializedSize(integrity: nil, fingerprint: false) }

    /// Bytes `serialize(into:integrity:fingerprint:)` writes with these options.
    public func serializedSize(integrity: STUNIntegrityKey?, fingerprint: Bool) -> Int {
        var size = Self.headerSize
        for attribute in attributes where !Self.isReplaced(attribute, integrity: integrity, fingerprint: fingerprint) {
            size += Self.attributeHeaderSize + Self.padded(attribute.valueSize)
        }
        if let integrity { size += Self.attributeHeaderSize + integrity.algorithm.hash.size }
        if fingerprint { size += Self.attributeHeaderSize + 4 }
        return size
    }

    /// Writes the message into the start of `buffer`, attributes as they are.
    ///
    /// - Parameter buffer: At least `serializedSize` bytes.
    /// - Returns: The number of bytes written, `serializedSize`.
    /// - Throws: `PacketError` as `serialize(into:integrity:fingerprint:)`.
    public func serialize(into buffer: UnsafeMutableRawBufferPointer) throws(PacketError) -> Int {
        try serialize(into: buffer, integrity: nil, fingerprint: false)
    }

    /// Writes the message into the start of `buffer`, then MESSAGE-INTEGRITY (or -SHA256)
    /// computed with `integrity` and FINGERPRINT when asked (RFC 8489 sections 14.5-14.7).
    /// Integrity and fingerprint attributes already in `attributes` are dropped when new
    /// ones are computed (all three with `integrity`, FINGERPRINT with `fingerprint`).
    /// Allocates nothing.
    ///
    /// - Parameters:
    ///   - buffer: At least `serializedSize(integrity:fingerprint:)` bytes.
    ///   - integrity: The key to sign with, or nil for no MESSAGE-INTEGRITY.
    ///   - fingerprint: Whether to end with FINGERPRINT.
    /// - Returns: The number of bytes written.
    /// - Throws: `PacketError` `.bufferTooSmall`; `.badField` for over 64 attributes, text
    ///   over 763 bytes, an error code outside 300...699, a channel number outside
    ///   0x4000...0x4FFF, an integrity value of the wrong size, or an `.unknown` attribute
    ///   of a type that has its own case; `.badLength` when the attributes exceed 65532 bytes.
    public func serialize(
        into buffer: UnsafeMutableRawBufferPointer, integrity: STUNIntegrityKey?, fingerprint: Bool
    ) throws(PacketError) -> Int {
        let count = attributes.count + (integrity == nil ? 0 : 1) + (fingerprint ? 1 : 0)
        guard count <= Self.maximumAttributeCount else {
            throw PacketError(.badField, "STUN message has \(count) attributes > \(Self.maximumAttributeCount)")
        }
        for attribute in attributes { try Self.validate(attribute) }
        let size = serializedSize(integrity: integrity, fingerprint: fingerprint)
        guard size - Self.headerSize <= Self.maximumLength else {
            throw PacketError(.badLength, "STUN attributes take \(size - Self.headerSize) bytes > \(Self.maximumLength)")
        }
        guard buffer.count >= size else {
            throw PacketError(.bufferTooSmall, "STUN buffer too small: \(buffer.count) < \(size)")
        }
        buffer.store(type.rawValue, at: 0)
        buffer.store(Self.magicCookie, at: 4)
        transactionID.write(into: buffer, at: 8)

        let paddingWords = receivedPadding.flatMap { $0.attributes == attributes ? $0.words : nil }
        var offset = Self.headerSize
        for (index, attribute) in attributes.enumerated()
        where !Self.isReplaced(attribute, integrity: integrity, fingerprint: fingerprint) {
            let valueSize = attribute.valueSize
            let valueStart = offset + Self.attributeHeaderSize
            buffer.store(attribute.type, at: offset)
            buffer.store(UInt16(valueSize), at: offset + 2)
            Self.encode(attribute, into: buffer, at: valueStart, transactionID: transactionID)
            let paddedSize = Self.padded(valueSize)
            let word = paddingWords?[index] ?? 0
            for padIndex in 0..<(paddedSize - valueSize) {
                buffer[valueStart + valueSize + padIndex] = UInt8(truncatingIfNeeded: word >> (24 - 8 * padIndex))
            }
            offset = valueStart + paddedSize
        }
        if let integrity {
            offset = Self.appendIntegrity(integrity, into: buffer, at: offset)
        }
        if fingerprint {
            offset = Self.appendFingerprint(into: buffer, at: offset)
        }
        buffer.store(UInt16(offset - Self.headerSize), at: 2)
        return offset
    }

    /// The message's bytes, attributes as they are.
    ///
    /// - Precondition: The attributes keep the limits `serialize(into:)` documents; a
    ///   parsed message's always do.
    public func serialized() -> [UInt8] { serialized(integrity: nil, fingerprint: false) }

    /// The message's bytes, with MESSAGE-INTEGRITY and FINGERPRINT when asked.
    ///
    /// - Precondition: The attributes keep the limits `serialize(into:)` documents; a
    ///   parsed message's always do.
    public func serialized(integrity: STUNIntegrityKey? = nil, fingerprint: Bool = false) -> [UInt8] {
        let size = serializedSize(integrity: integrity, fingerprint: fingerprint)
        var bytes = [UInt8](repeating: 0, count: size)
        bytes.withUnsafeMutableBytes { buffer in
            do {
                let written = try serialize(into: buffer, integrity: integrity, fingerprint: fingerprint)
                precondition(written == size, "STUN serializer wrote \(written) of \(size) bytes")
            } catch {
                preconditionFailure("STUN message cannot be serialized: \(error)")
            }
        }
        return bytes
    }

    public static func == (a: STUNMessage, b: STUNMessage) -> Bool {
        a.type == b.type && a.transactionID == b.transactionID && a.attributes == b.attributes
    }

    public func hash(into hasher: inout Hasher) {
        hasher.combine(type)
        hasher.combine(transactionID)
        hasher.combine(attributes)
    }

    /// Whether serializing with these options drops `attribute` to compute a new one.
    private static func isReplaced(_ attribute: Attribute, integrity: STUNIntegrityKey?, fingerprint: Bool) -> Bool {
        switch attribute {
        case .messageIntegrity, .messageIntegritySHA256: integrity != nil
        case .fingerprint: integrity != nil || fingerprint
        default: false
        }
    }

    /// `size` rounded up to a multiple of 4.
    @inline(__always) static func padded(_ size: Int) -> Int { (size + 3) & ~3 }
}
