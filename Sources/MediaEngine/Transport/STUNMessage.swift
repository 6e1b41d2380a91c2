/// The 96-bit transaction ID of a STUN message (RFC 8489 section 5): chosen at random by
/// the client and echoed in the response, which is how a response finds its request.
public struct STUNTransactionID: Sendable, Hashable, CustomStringConvertible {
    /// The ID's size on the wire.
    public static let size = 12

    /// The first 4 bytes, most significant first.
    private let high: UInt32
    /// The last 8 bytes, most significant first.
    private let low: UInt64

    private init(high: UInt32, low: UInt64) {
        self.high = high
        self.low = low
    }

    /// An ID from its 12 bytes on the wire.
    ///
    /// - Returns: `nil` unless `bytes` holds exactly 12 bytes.
    public init?(_ bytes: some Collection<UInt8>) {
        guard bytes.count == Self.size else { return nil }
        var high: UInt32 = 0
        var low: UInt64 = 0
        for (index, byte) in bytes.enumerated() {
            if index < 4 { high = high << 8 | UInt32(byte) } else { low = low << 8 | UInt64(byte) }
        }
        self.init(high: high, low: low)
    }

    /// Reads the 12 bytes at `offset`; the caller has checked they are there.
    init(_ bytes: UnsafeRawBufferPointer, at offset: Int) {
        let low = UInt64(bytes.uint32(at: offset + 4)) << 32 | UInt64(bytes.uint32(at: offset + 8))
        self.init(high: bytes.uint32(at: offset), low: low)
    }

    /// A fresh ID from the system's cryptographically secure generator, as RFC 8489
    /// section 6 asks of requests.
    public static func random() -> STUNTransactionID {
        var generator = SystemRandomNumberGenerator()
        return random(using: &generator)
    }

    /// A fresh ID from `generator` (a seeded generator gives repeatable tests).
    public static func random(using generator: inout some RandomNumberGenerator) -> STUNTransactionID {
        STUNTransactionID(high: UInt32.random(in: .min ... .max, using: &generator), low: generator.next())
    }

    /// The byte at `index` in 0..<12.
    @inline(__always) func byte(_ index: Int) -> UInt8 {
        index < 4
            ? UInt8(truncatingIfNeeded: high >> (24 - 8 * index))
            : UInt8(truncatingIfNeeded: low >> (56 - 8 * (index - 4)))
    }

    /// The 12 bytes on the wire.
    public var bytes: [UInt8] { (0..<Self.size).map(byte) }

    /// Writes the 12 bytes at `offset`; the caller has checked they fit.
    func write(into buffer: UnsafeMutableRawBufferPointer, at offset: Int) {
        buffer.store(high, at: offset)
        buffer.store(UInt32(truncatingIfNeeded: low >> 32), at: offset + 4)
        buffer.store(UInt32(truncatingIfNeeded: low), at: offset + 8)
    }

    /// 24 lowercase hex digits.
    public var description: String {
        (0..<Self.size).map { index in
            let digits = String(byte(index), radix: 16)
            return digits.count == 1 ? "0" + digits : digits
        }.joined()
    }
}

/// A STUN message (RFC 8489, formerly RFC 5389): what ICE connectivity checks between two
/// peers exchange. Binding requests, success and error responses are decoded with their
/// USERNAME, XOR-MAPPED-ADDRESS and ERROR-CODE attributes; every other attribute, including
/// MESSAGE-INTEGRITY and FINGERPRINT, is kept as raw bytes and neither computed nor checked.
///
/// Parsing then serializing gives the same bytes back. Attribute padding is written as zero,
/// except that an unmodified parsed message keeps the padding it arrived with, so that its
/// MESSAGE-INTEGRITY and FINGERPRINT, which cover the padding, stay valid. Equality and
/// hashing ignore padding.
public struct STUNMessage: Sendable, Hashable {
    /// A message type: a 12-bit method and a 2-bit class, interleaved in the 14 low bits.
    public struct MessageType: RawRepresentable, Sendable, Hashable, CustomStringConvertible {
        /// What a message is in its transaction.
        public enum Class: UInt8, Sendable, Hashable {
            /// Asks for a response.
            case request = 0
            /// Expects no response (a keepalive).
            case indication = 1
            /// Answers a request that succeeded.
            case successResponse = 2
            /// Answers a request that failed; carries ERROR-CODE.
            case errorResponse = 3
        }

        /// The 16-bit type field, top two bits zero.
        public let rawValue: UInt16

        /// A type from the type field.
        ///
        /// - Returns: `nil` when either of the top two bits is set, which no STUN message has.
        public init?(rawValue: UInt16) {
            guard rawValue & STUNMessage.typeTopBitsMask == 0 else { return nil }
            self.rawValue = rawValue
        }

        /// A type from its method and class.
        ///
        /// - Precondition: `method` fits in 12 bits (0...0xFFF).
        public init(method: UInt16, messageClass: Class) {
            precondition(method <= Self.maximumMethod, "STUN method \(method) > \(Self.maximumMethod)")
            let classBits = UInt16(messageClass.rawValue)
            rawValue = (method & 0x000F) | (method & 0x0070) << 1 | (method & 0x0F80) << 2
                | (classBits & 0b01) << 4 | (classBits & 0b10) << 7
        }

        private static let maximumMethod: UInt16 = 0x0FFF
        private static let bindingMethod: UInt16 = 0x001

        /// Binding request, 0x0001: a connectivity check.
        public static let bindingRequest = MessageType(method: bindingMethod, messageClass: .request)
        /// Binding indication, 0x0011: a keepalive that asks for no answer.
        public static let bindingIndication = MessageType(method: bindingMethod, messageClass: .indication)
        /// Binding success response, 0x0101: carries XOR-MAPPED-ADDRESS.
        public static let bindingSuccess = MessageType(method: bindingMethod, messageClass: .successResponse)
        /// Binding error response, 0x0111: carries ERROR-CODE.
        public static let bindingError = MessageType(method: bindingMethod, messageClass: .errorResponse)

        /// The 12-bit method (1 for Binding).
        public var method: UInt16 {
            (rawValue & 0x000F) | (rawValue & 0x00E0) >> 1 | (rawValue & 0x3E00) >> 2
        }

        /// The class: request, indication, success or error response.
        public var messageClass: Class {
            // Two bits give four cases, so the force unwrap cannot fail.
            Class(rawValue: UInt8(truncatingIfNeeded: (rawValue >> 4) & 0b01 | (rawValue >> 7) & 0b10))!
        }

        public var description: String {
            switch self {
            case .bindingRequest: "Binding request"
            case .bindingIndication: "Binding indication"
            case .bindingSuccess: "Binding success response"
            case .bindingError: "Binding error response"
            default: "method \(method) \(messageClass)"
            }
        }
    }

    /// One attribute. Those this code decodes have their own cases; the rest keep their
    /// type and value bytes (without padding).
    public enum Attribute: Sendable, Hashable {
        /// USERNAME (0x0006): for ICE, "remote-ufrag:local-ufrag". At most 763 UTF-8 bytes.
        case username(String)
        /// XOR-MAPPED-ADDRESS (0x0020): the request's source address, as the responder saw it.
        case xorMappedAddress(SocketAddress)
        /// ERROR-CODE (0x0009): `code` in 300...699 (class * 100 + number) and a reason
        /// phrase of at most 763 UTF-8 bytes.
        case errorCode(code: Int, reason: String)
        /// Any other attribute, kept raw: `type` and the value without its padding. Never
        /// one of the decoded types above.
        case unknown(type: UInt16, value: [UInt8])

        /// USERNAME's attribute type.
        public static let usernameType: UInt16 = 0x0006
        /// MESSAGE-INTEGRITY's attribute type (kept raw, not checked).
        public static let messageIntegrityType: UInt16 = 0x0008
        /// ERROR-CODE's attribute type.
        public static let errorCodeType: UInt16 = 0x0009
        /// XOR-MAPPED-ADDRESS's attribute type.
        public static let xorMappedAddressType: UInt16 = 0x0020
        /// FINGERPRINT's attribute type (kept raw, not checked).
        public static let fingerprintType: UInt16 = 0x8028

        /// The attribute type on the wire.
        public var type: UInt16 {
            switch self {
            case .username: Self.usernameType
            case .xorMappedAddress: Self.xorMappedAddressType
            case .errorCode: Self.errorCodeType
            case .unknown(let type, _): type
            }
        }

        /// The value's size on the wire, before padding.
        var valueSize: Int {
            switch self {
            case .username(let name): name.utf8.count
            case .xorMappedAddress(let address):
                address.isIPv6 ? STUNMessage.xorAddressIPv6Size : STUNMessage.xorAddressIPv4Size
            case .errorCode(_, let reason): STUNMessage.errorCodeFixedSize + reason.utf8.count
            case .unknown(_, let value): value.count
            }
        }
    }

    /// The message type.
    public var type: MessageType
    /// The transaction ID; a response carries its request's.
    public var transactionID: STUNTransactionID
    /// The attributes, in wire order. At most 64.
    public var attributes: [Attribute]

    /// The padding of a parsed message with any non-zero padding byte: one word per
    /// attribute, its padding bytes left-aligned. Used only while `attributes` is unchanged.
    private var receivedPadding: ReceivedPadding?

    private struct ReceivedPadding: Sendable {
        let attributes: [Attribute]
        let words: [UInt32]
    }

    private static let headerSize = 20
    private static let attributeHeaderSize = 4
    private static let magicCookie: UInt32 = 0x2112_A442
    private static let typeTopBitsMask: UInt16 = 0xC000
    /// Bytes the XOR key covers: the magic cookie then the transaction ID.
    private static let xorKeySize = 16
    private static let xorAddressIPv4Size = 8
    private static let xorAddressIPv6Size = 20
    private static let xorAddressFamilyIPv4: UInt8 = 0x01
    private static let xorAddressFamilyIPv6: UInt8 = 0x02
    private static let errorCodeFixedSize = 4
    private static let errorClassMask: UInt8 = 0x07
    private static let errorClasses = 3...6
    private static let errorNumbers = 0...99
    /// The longest text attribute value accepted, in bytes: 763 is what RFC 8489 lets a
    /// receiver accept for 127 characters (ERROR-CODE reason, SOFTWARE). USERNAME is held to
    /// the same bound, more leniently than its own 509 (RFC 5389: 513) bytes.
    private static let maximumTextSize = 763
    /// The most attributes a message may carry. RFC 8489 sets no limit; a connectivity check
    /// carries about eight, and the bound caps the work one datagram can cause.
    public static let maximumAttributeCount = 64
    /// The largest message length field: the largest multiple of 4 in 16 bits.
    private static let maximumLength = 65_532

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

     XOR-MAPPED-ADDRESS (section 14.2), value 8 bytes for IPv4, 20 for IPv6. X-Port is the
     port XOR the cookie's top 16 bits; X-Address the address XOR the cookie (IPv4) or XOR
     the cookie then the transaction ID (IPv6):

     +-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
     |0 0 0 0 0 0 0 0|    Family     |         X-Port                |
     +-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
     |                X-Address (Variable)
     +-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+

     ERROR-CODE (section 14.8), code = Class * 100 + Number, Class 3...6, Number 0...99:

     +-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
     |           Reserved, should be 0         |Class|     Number    |
     +-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
     |      Reason Phrase (variable)                                ..
     +-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+

     USERNAME (section 14.3) is UTF-8 text. Padding bytes are ignored on read; reserved bits
     too.
    */

    /// Parses one STUN message.
    ///
    /// - Parameter bytes: Exactly one message, as one UDP datagram carries it.
    /// - Throws: `PacketError` if `bytes` is under 20 bytes, a top type bit is set, the magic
    ///   cookie is missing, the length is not a multiple of 4 or disagrees with `bytes`, an
    ///   attribute runs past the end, there are over 64 attributes, or a decoded attribute
    ///   is malformed (USERNAME over 763 bytes or not UTF-8, an XOR-MAPPED-ADDRESS family
    ///   other than IPv4 or IPv6 or of the wrong length, an ERROR-CODE class outside 3...6 or
    ///   number over 99).
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
    public static func looksLikeSTUN(_ bytes: UnsafeRawBufferPointer) -> Bool {
        guard bytes.count >= headerSize, bytes.uint16(at: 0) & typeTopBitsMask == 0,
              bytes.uint32(at: 4) == magicCookie
        else { return false }
        let length = Int(bytes.uint16(at: 2))
        return length % 4 == 0 && length == bytes.count - headerSize
    }

    /// The first USERNAME, if any.
    public var username: String? {
        for case .username(let name) in attributes { return name }
        return nil
    }

    /// The first XOR-MAPPED-ADDRESS, if any.
    public var xorMappedAddress: SocketAddress? {
        for case .xorMappedAddress(let address) in attributes { return address }
        return nil
    }

    /// The first ERROR-CODE, if any.
    public var errorCode: (code: Int, reason: String)? {
        for case .errorCode(let code, let reason) in attributes { return (code, reason) }
        return nil
    }

    /// Bytes `serialize(into:)` writes: 20, plus 4 and the padded value per attribute.
    public var serializedSize: Int {
        attributes.reduce(Self.headerSize) { $0 + Self.attributeHeaderSize + Self.padded($1.valueSize) }
    }

    /// Writes the message into the start of `buffer`.
    ///
    /// - Parameter buffer: At least `serializedSize` bytes.
    /// - Returns: The number of bytes written, `serializedSize`.
    /// - Throws: `PacketError` `.bufferTooSmall`; `.badField` for over 64 attributes, text
    ///   over 763 bytes, an error code outside 300...699, or an `.unknown` attribute of a
    ///   type that has its own case; `.badLength` when the attributes exceed 65532 bytes.
    public func serialize(into buffer: UnsafeMutableRawBufferPointer) throws(PacketError) -> Int {
        guard attributes.count <= Self.maximumAttributeCount else {
            throw PacketError(.badField, "STUN message has \(attributes.count) attributes > \(Self.maximumAttributeCount)")
        }
        for attribute in attributes { try Self.validate(attribute) }
        let size = serializedSize
        guard size - Self.headerSize <= Self.maximumLength else {
            throw PacketError(.badLength, "STUN attributes take \(size - Self.headerSize) bytes > \(Self.maximumLength)")
        }
        guard buffer.count >= size else {
            throw PacketError(.bufferTooSmall, "STUN buffer too small: \(buffer.count) < \(size)")
        }
        buffer.store(type.rawValue, at: 0)
        buffer.store(UInt16(size - Self.headerSize), at: 2)
        buffer.store(Self.magicCookie, at: 4)
        transactionID.write(into: buffer, at: 8)

        let paddingWords = receivedPadding.flatMap { $0.attributes == attributes ? $0.words : nil }
        var offset = Self.headerSize
        for (index, attribute) in attributes.enumerated() {
            let valueSize = attribute.valueSize
            let valueStart = offset + Self.attributeHeaderSize
            buffer.store(attribute.type, at: offset)
            buffer.store(UInt16(valueSize), at: offset + 2)
            switch attribute {
            case .username(let name):
                Self.write(name.utf8, into: buffer, at: valueStart)
            case .xorMappedAddress(let address):
                buffer[valueStart] = 0
                buffer[valueStart + 1] = address.isIPv6 ? Self.xorAddressFamilyIPv6 : Self.xorAddressFamilyIPv4
                buffer.store(UInt16(truncatingIfNeeded: address.port) ^ UInt16(Self.magicCookie >> 16), at: valueStart + 2)
                for (keyIndex, byte) in address.addressBytes.enumerated() {
                    buffer[valueStart + 4 + keyIndex] = byte ^ Self.xorKey(keyIndex, transactionID)
                }
            case .errorCode(let code, let reason):
                buffer.store(UInt32(code / 100) << 8 | UInt32(code % 100), at: valueStart)
                Self.write(reason.utf8, into: buffer, at: valueStart + Self.errorCodeFixedSize)
            case .unknown(_, let value):
                Self.write(value, into: buffer, at: valueStart)
            }
            let paddedSize = Self.padded(valueSize)
            let word = paddingWords?[index] ?? 0
            for padIndex in 0..<(paddedSize - valueSize) {
                buffer[valueStart + valueSize + padIndex] = UInt8(truncatingIfNeeded: word >> (24 - 8 * padIndex))
            }
            offset = valueStart + paddedSize
        }
        return size
    }

    /// The message's bytes.
    ///
    /// - Precondition: The attributes keep the limits `serialize(into:)` documents; a
    ///   parsed message's always do.
    public func serialized() -> [UInt8] {
        let size = serializedSize
        var bytes = [UInt8](repeating: 0, count: size)
        bytes.withUnsafeMutableBytes { buffer in
            do {
                let written = try serialize(into: buffer)
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

    // MARK: - Attributes

    /// Decodes one attribute value (without padding).
    private static func decode(
        type: UInt16, value: UnsafeRawBufferPointer, transactionID: STUNTransactionID
    ) throws(PacketError) -> Attribute {
        switch type {
        case Attribute.usernameType:
            return .username(try text(value, name: "USERNAME"))
        case Attribute.xorMappedAddressType:
            guard value.count >= 4 else {
                throw PacketError(.badLength, "STUN XOR-MAPPED-ADDRESS too short: \(value.count) < 4")
            }
            let family = value[1]
            let expectedSize: Int
            switch family {
            case xorAddressFamilyIPv4: expectedSize = xorAddressIPv4Size
            case xorAddressFamilyIPv6: expectedSize = xorAddressIPv6Size
            default:
                throw PacketError(.badField, "STUN XOR-MAPPED-ADDRESS family \(family), expected 1 (IPv4) or 2 (IPv6)")
            }
            guard value.count == expectedSize else {
                throw PacketError(
                    .badLength, "STUN XOR-MAPPED-ADDRESS family \(family) length \(value.count) != \(expectedSize)"
                )
            }
            let port = Int(value.uint16(at: 2) ^ UInt16(magicCookie >> 16))
            let addressBytes = (0..<(expectedSize - 4)).map { value[4 + $0] ^ xorKey($0, transactionID) }
            guard let address = SocketAddress(addressBytes: addressBytes, port: port) else {
                // Unreachable: 4 or 16 bytes and a 16-bit port always make an address.
                throw PacketError(.badField, "STUN XOR-MAPPED-ADDRESS of \(addressBytes.count) address bytes")
            }
            return .xorMappedAddress(address)
        case Attribute.errorCodeType:
            guard value.count >= errorCodeFixedSize else {
                throw PacketError(.badLength, "STUN ERROR-CODE too short: \(value.count) < \(errorCodeFixedSize)")
            }
            let errorClass = Int(value[2] & errorClassMask)
            let number = Int(value[3])
            guard errorClasses.contains(errorClass) else {
                throw PacketError(.badField, "STUN ERROR-CODE class \(errorClass) outside 3...6")
            }
            guard errorNumbers.contains(number) else {
                throw PacketError(.badField, "STUN ERROR-CODE number \(number) > 99")
            }
            let reason = try text(UnsafeRawBufferPointer(rebasing: value[errorCodeFixedSize...]), name: "ERROR-CODE reason")
            return .errorCode(code: errorClass * 100 + number, reason: reason)
        default:
            return .unknown(type: type, value: Array(value))
        }
    }

    /// UTF-8 text of at most 763 bytes.
    private static func text(_ value: UnsafeRawBufferPointer, name: String) throws(PacketError) -> String {
        guard value.count <= maximumTextSize else {
            throw PacketError(.badLength, "STUN \(name) of \(value.count) bytes > \(maximumTextSize)")
        }
        guard let text = String(validating: value, as: UTF8.self) else {
            throw PacketError(.badField, "STUN \(name) of \(value.count) bytes is not valid UTF-8")
        }
        return text
    }

    /// Checks that `attribute` can be written and parses back to itself.
    private static func validate(_ attribute: Attribute) throws(PacketError) {
        switch attribute {
        case .username(let name):
            guard name.utf8.count <= maximumTextSize else {
                throw PacketError(.badField, "STUN USERNAME of \(name.utf8.count) bytes > \(maximumTextSize)")
            }
        case .xorMappedAddress:
            break
        case .errorCode(let code, let reason):
            guard errorClasses.contains(code / 100) else {
                throw PacketError(.badField, "STUN ERROR-CODE \(code) outside 300...699")
            }
            guard reason.utf8.count <= maximumTextSize else {
                throw PacketError(.badField, "STUN ERROR-CODE reason of \(reason.utf8.count) bytes > \(maximumTextSize)")
            }
        case .unknown(let type, _):
            guard type != Attribute.usernameType, type != Attribute.xorMappedAddressType,
                  type != Attribute.errorCodeType
            else {
                throw PacketError(.badField, "STUN attribute \(hex(type)) has its own case; it cannot be .unknown")
            }
        }
    }

    /// Byte `index` of the XOR key: the magic cookie, then the transaction ID.
    @inline(__always) private static func xorKey(_ index: Int, _ transactionID: STUNTransactionID) -> UInt8 {
        index < 4 ? UInt8(truncatingIfNeeded: magicCookie >> (24 - 8 * index)) : transactionID.byte(index - 4)
    }

    /// `size` rounded up to a multiple of 4.
    @inline(__always) private static func padded(_ size: Int) -> Int { (size + 3) & ~3 }

    private static func write(_ bytes: some Sequence<UInt8>, into buffer: UnsafeMutableRawBufferPointer, at offset: Int) {
        var index = offset
        for byte in bytes {
            buffer[index] = byte
            index += 1
        }
    }

    /// "0x" and 4 or 8 uppercase hex digits.
    private static func hex<Value: FixedWidthInteger>(_ value: Value) -> String {
        let digits = String(value, radix: 16, uppercase: true)
        return "0x" + String(repeating: "0", count: max(0, Value.bitWidth / 4 - digits.count)) + digits
    }
}
