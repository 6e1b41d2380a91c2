#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/*
 Attribute values (RFC 8489 section 14, RFC 8656 section 18, RFC 8445 section 16):

 XOR-MAPPED-ADDRESS, XOR-PEER-ADDRESS, XOR-RELAYED-ADDRESS: 8 bytes for IPv4, 20 for IPv6.
 X-Port is the port XOR the cookie's top 16 bits; X-Address the address XOR the cookie
 (IPv4) or XOR the cookie then the transaction ID (IPv6):

 +-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
 |0 0 0 0 0 0 0 0|    Family     |         X-Port                |
 +-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
 |                X-Address (Variable)
 +-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+

 ERROR-CODE, code = Class * 100 + Number, Class 3...6, Number 0...99:

 +-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
 |           Reserved, should be 0         |Class|     Number    |
 +-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
 |      Reason Phrase (variable)                                ..
 +-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+

 CHANNEL-NUMBER: 16-bit number then 16 reserved bits. REQUESTED-TRANSPORT: protocol
 byte then 24 reserved bits. LIFETIME, PRIORITY: 32 bits. ICE-CONTROLLED/-CONTROLLING:
 a 64-bit tie-breaker. UNKNOWN-ATTRIBUTES: 16-bit types. USERNAME, REALM, NONCE,
 SOFTWARE: UTF-8 text. Reserved bits and padding are ignored on read, zero on write.
*/
extension STUNMessage {
    static let xorAddressIPv4Size = 8
    static let xorAddressIPv6Size = 20
    private static let xorAddressFamilyIPv4: UInt8 = 0x01
    private static let xorAddressFamilyIPv6: UInt8 = 0x02
    static let errorCodeFixedSize = 4
    private static let errorClassMask: UInt8 = 0x07
    private static let errorClasses = 3...6
    private static let errorNumbers = 0...99
    /// The longest text attribute value accepted, in bytes: 763 is what RFC 8489 lets a
    /// receiver accept for 127 characters (ERROR-CODE reason, SOFTWARE, REALM, NONCE).
    /// USERNAME is held to the same bound, more leniently than its own 509 bytes.
    private static let maximumTextSize = 763
    /// TURN channel numbers (RFC 8656 section 12).
    static let channelNumbers: ClosedRange<UInt16> = 0x4000...0x4FFF
    static let sha1IntegritySize = 20
    static let sha256IntegritySizes = 16...32

    /// Decodes one attribute value (without padding).
    static func decode(
        type: UInt16, value: UnsafeRawBufferPointer, transactionID: STUNTransactionID
    ) throws(PacketError) -> Attribute {
        typealias A = Attribute
        switch type {
        case A.usernameType: return .username(try text(value, name: "USERNAME"))
        case A.realmType: return .realm(try text(value, name: "REALM"))
        case A.nonceType: return .nonce(try text(value, name: "NONCE"))
        case A.softwareType: return .software(try text(value, name: "SOFTWARE"))
        case A.xorMappedAddressType:
            return .xorMappedAddress(try xorAddress(value, transactionID, name: "XOR-MAPPED-ADDRESS"))
        case A.xorPeerAddressType:
            return .xorPeerAddress(try xorAddress(value, transactionID, name: "XOR-PEER-ADDRESS"))
        case A.xorRelayedAddressType:
            return .xorRelayedAddress(try xorAddress(value, transactionID, name: "XOR-RELAYED-ADDRESS"))
        case A.errorCodeType:
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
        case A.messageIntegrityType:
            try expectSize(value, sha1IntegritySize, name: "MESSAGE-INTEGRITY")
            return .messageIntegrity(Array(value))
        case A.messageIntegritySHA256Type:
            guard sha256IntegritySizes.contains(value.count), value.count % 4 == 0 else {
                throw PacketError(.badLength, "STUN MESSAGE-INTEGRITY-SHA256 length \(value.count), expected 16...32 in steps of 4")
            }
            return .messageIntegritySHA256(Array(value))
        case A.fingerprintType:
            try expectSize(value, 4, name: "FINGERPRINT")
            return .fingerprint(value.uint32(at: 0))
        case A.unknownAttributesType:
            guard value.count % 2 == 0 else {
                throw PacketError(.badLength, "STUN UNKNOWN-ATTRIBUTES length \(value.count) is odd")
            }
            return .unknownAttributes((0..<(value.count / 2)).map { value.uint16(at: 2 * $0) })
        case A.lifetimeType:
            try expectSize(value, 4, name: "LIFETIME")
            return .lifetime(value.uint32(at: 0))
        case A.dataType: return .data(Array(value))
        case A.paddingType: return .padding(Array(value))
        case A.requestedTransportType:
            try expectSize(value, 4, name: "REQUESTED-TRANSPORT")
            return .requestedTransport(value[0])
        case A.channelNumberType:
            try expectSize(value, 4, name: "CHANNEL-NUMBER")
            let number = value.uint16(at: 0)
            guard channelNumbers.contains(number) else {
                throw PacketError(.badField, "STUN CHANNEL-NUMBER \(hex(number)) outside 0x4000...0x4FFF")
            }
            return .channelNumber(number)
        case A.priorityType:
            try expectSize(value, 4, name: "PRIORITY")
            return .priority(value.uint32(at: 0))
        case A.useCandidateType:
            try expectSize(value, 0, name: "USE-CANDIDATE")
            return .useCandidate
        case A.iceControlledType:
            try expectSize(value, 8, name: "ICE-CONTROLLED")
            return .iceControlled(UInt64(value.uint32(at: 0)) << 32 | UInt64(value.uint32(at: 4)))
        case A.iceControllingType:
            try expectSize(value, 8, name: "ICE-CONTROLLING")
            return .iceControlling(UInt64(value.uint32(at: 0)) << 32 | UInt64(value.uint32(at: 4)))
        default:
            return .unknown(type: type, value: Array(value))
        }
    }

    /// Writes `attribute`'s value (without padding) at `offset`; the caller has checked the
    /// space and validated the attribute.
    static func encode(
        _ attribute: Attribute, into buffer: UnsafeMutableRawBufferPointer, at offset: Int, transactionID: STUNTransactionID
    ) {
        switch attribute {
        case .username(let text), .realm(let text), .nonce(let text), .software(let text):
            write(text.utf8, into: buffer, at: offset)
        case .xorMappedAddress(let address), .xorPeerAddress(let address), .xorRelayedAddress(let address):
            writeXORAddress(address, into: buffer, at: offset, transactionID: transactionID)
        case .errorCode(let code, let reason):
            buffer.store(UInt32(code / 100) << 8 | UInt32(code % 100), at: offset)
            write(reason.utf8, into: buffer, at: offset + errorCodeFixedSize)
        case .messageIntegrity(let bytes), .messageIntegritySHA256(let bytes), .data(let bytes), .padding(let bytes),
             .unknown(_, let bytes):
            write(bytes, into: buffer, at: offset)
        case .unknownAttributes(let types):
            for (index, type) in types.enumerated() { buffer.store(type, at: offset + 2 * index) }
        case .fingerprint(let value), .lifetime(let value), .priority(let value):
            buffer.store(value, at: offset)
        case .requestedTransport(let protocolNumber):
            buffer.store(UInt32(protocolNumber) << 24, at: offset)
        case .channelNumber(let number):
            buffer.store(UInt32(number) << 16, at: offset)
        case .useCandidate:
            break
        case .iceControlled(let value), .iceControlling(let value):
            buffer.store(UInt32(truncatingIfNeeded: value >> 32), at: offset)
            buffer.store(UInt32(truncatingIfNeeded: value), at: offset + 4)
        }
    }

    /// Writes an XOR-…-ADDRESS value; also used by TURN's allocation-free Send path.
    static func writeXORAddress(
        _ address: SocketAddress, into buffer: UnsafeMutableRawBufferPointer, at offset: Int, transactionID: STUNTransactionID
    ) {
        buffer[offset] = 0
        buffer[offset + 1] = address.isIPv6 ? xorAddressFamilyIPv6 : xorAddressFamilyIPv4
        buffer.store(UInt16(truncatingIfNeeded: address.port) ^ UInt16(magicCookie >> 16), at: offset + 2)
        address.withAddressBytes { bytes in
            for (index, byte) in bytes.enumerated() { buffer[offset + 4 + index] = byte ^ xorKey(index, transactionID) }
        }
    }

    /// Checks that `attribute` can be written and parses back to itself.
    static func validate(_ attribute: Attribute) throws(PacketError) {
        switch attribute {
        case .username(let text): try checkText(text, name: "USERNAME")
        case .realm(let text): try checkText(text, name: "REALM")
        case .nonce(let text): try checkText(text, name: "NONCE")
        case .software(let text): try checkText(text, name: "SOFTWARE")
        case .errorCode(let code, let reason):
            guard errorClasses.contains(code / 100), code >= 0 else {
                throw PacketError(.badField, "STUN ERROR-CODE \(code) outside 300...699")
            }
            try checkText(reason, name: "ERROR-CODE reason")
        case .messageIntegrity(let bytes):
            guard bytes.count == sha1IntegritySize else {
                throw PacketError(.badField, "STUN MESSAGE-INTEGRITY of \(bytes.count) bytes != 20")
            }
        case .messageIntegritySHA256(let bytes):
            guard sha256IntegritySizes.contains(bytes.count), bytes.count % 4 == 0 else {
                throw PacketError(.badField, "STUN MESSAGE-INTEGRITY-SHA256 of \(bytes.count) bytes, expected 16...32 in steps of 4")
            }
        case .channelNumber(let number):
            guard channelNumbers.contains(number) else {
                throw PacketError(.badField, "STUN CHANNEL-NUMBER \(hex(number)) outside 0x4000...0x4FFF")
            }
        case .unknown(let type, _):
            guard !Attribute.decodedTypes.contains(type) else {
                throw PacketError(.badField, "STUN attribute \(hex(type)) has its own case; it cannot be .unknown")
            }
        case .xorMappedAddress, .xorPeerAddress, .xorRelayedAddress, .fingerprint, .unknownAttributes, .lifetime,
             .data, .requestedTransport, .priority, .useCandidate, .iceControlled, .iceControlling, .padding:
            break
        }
    }

    static func xorAddress(
        _ value: UnsafeRawBufferPointer, _ transactionID: STUNTransactionID, name: String
    ) throws(PacketError) -> SocketAddress {
        guard value.count >= 4 else {
            throw PacketError(.badLength, "STUN \(name) too short: \(value.count) < 4")
        }
        let family = value[1]
        let expectedSize: Int
        switch family {
        case xorAddressFamilyIPv4: expectedSize = xorAddressIPv4Size
        case xorAddressFamilyIPv6: expectedSize = xorAddressIPv6Size
        default: throw PacketError(.badField, "STUN \(name) family \(family), expected 1 (IPv4) or 2 (IPv6)")
        }
        guard value.count == expectedSize else {
            throw PacketError(.badLength, "STUN \(name) family \(family) length \(value.count) != \(expectedSize)")
        }
        let port = Int(value.uint16(at: 2) ^ UInt16(magicCookie >> 16))
        // On the stack, so that TURN's Data path allocates nothing.
        let address = withUnsafeTemporaryAllocation(of: UInt8.self, capacity: expectedSize - 4) { bytes in
            for index in bytes.indices { bytes[index] = value[4 + index] ^ xorKey(index, transactionID) }
            return SocketAddress(addressBytes: bytes, port: port)
        }
        guard let address else {
            // Unreachable: 4 or 16 bytes and a 16-bit port always make an address.
            throw PacketError(.badField, "STUN \(name) of \(expectedSize - 4) address bytes")
        }
        return address
    }

    private static func expectSize(_ value: UnsafeRawBufferPointer, _ size: Int, name: String) throws(PacketError) {
        guard value.count == size else {
            throw PacketError(.badLength, "STUN \(name) length \(value.count) != \(size)")
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

    private static func checkText(_ text: String, name: String) throws(PacketError) {
        guard text.utf8.count <= maximumTextSize else {
            throw PacketError(.badField, "STUN \(name) of \(text.utf8.count) bytes > \(maximumTextSize)")
        }
    }

    /// Byte `index` of the XOR key: the magic cookie, then the transaction ID.
    @inline(__always) static func xorKey(_ index: Int, _ transactionID: STUNTransactionID) -> UInt8 {
        index < 4 ? UInt8(truncatingIfNeeded: magicCookie >> (24 - 8 * index)) : transactionID.byte(index - 4)
    }

    static func write(_ bytes: some Sequence<UInt8>, into buffer: UnsafeMutableRawBufferPointer, at offset: Int) {
        var index = offset
        for byte in bytes {
            buffer[index] = byte
            index += 1
        }
    }

    /// "0x" and 4 or 8 uppercase hex digits.
    static func hex<Value: FixedWidthInteger>(_ value: Value) -> String {
        let digits = String(value, radix: 16, uppercase: true)
        return "0x" + String(repeating: "0", count: max(0, Value.bitWidth / 4 - digits.count)) + digits
    }
}

extension SocketAddress {
    /// Calls `body` with the IP address's bytes in network order, without copying them.
    func withAddressBytes<Result>(_ body: (UnsafeRawBufferPointer) -> Result) -> Result {
        switch storage {
        case .v4(let address): withUnsafeBytes(of: address.sin_addr, body)
        case .v6(let address): withUnsafeBytes(of: address.sin6_addr, body)
        }
    }
}
