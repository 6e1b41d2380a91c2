import MediaEngine

/// STUN messages (RFC 8489, TURN's methods of RFC 8656): parsing, serializing,
/// MESSAGE-INTEGRITY(-SHA256) and FINGERPRINT checks.
enum STUNTarget {
    static let target = FuzzTarget(
        name: "stun",
        summary: "STUNMessage parse/serialize/parse; FINGERPRINT and MESSAGE-INTEGRITY(-SHA256) checks with RFC 5769's password, recomputed independently when they pass"
    ) { bytes in
        let looksLikeSTUN = STUNMessage.looksLikeSTUN(bytes)
        let fingerprintValid = STUNMessage.verifyFingerprint(bytes)
        FuzzCheck.require(!fingerprintValid || looksLikeSTUN, "a valid FINGERPRINT on something that is not STUN")
        guard let message = try? STUNMessage(parsing: bytes) else { return false }
        FuzzCheck.require(looksLikeSTUN, "a parsed STUN message fails looksLikeSTUN")
        if fingerprintValid {
            if case .fingerprint = message.attributes.last {} else {
                FuzzCheck.require(false, "FINGERPRINT verified but the last attribute is \(String(describing: message.attributes.last))")
            }
        }
        readAccessors(message, bytes)

        // Serializing keeps every byte but reserved bits, so the size, the value and a second
        // serialization agree.
        let serialized = message.serialized()
        FuzzCheck.require(serialized.count == bytes.count, "STUN of \(bytes.count) bytes serializes to \(serialized.count)")
        guard let again = try? STUNMessage(parsing: serialized) else {
            FuzzCheck.require(false, "serialized STUN does not parse")
            return true
        }
        FuzzCheck.require(again == message, "STUN parses back to another message")
        FuzzCheck.require(again.serialized() == serialized, "STUN serializes differently the second time")
        // Zero padding and reserved bits: the bytes are exactly what a fresh message with
        // these attributes serializes to, so a MAC can be recomputed from the attributes.
        let exact = STUNMessage(type: message.type, transactionID: message.transactionID, attributes: message.attributes)
            .serialized().elementsEqual(bytes)

        for key in keys {
            guard message.verifyIntegrity(key, in: bytes) else { continue }
            if exact { checkIntegrity(message, key: key, bytes) }
        }
        return true
    }

    /// RFC 5769's short-term password, as HMAC-SHA1 and HMAC-SHA256 keys: seeds signed with
    /// it verify, so mutations around the integrity attributes are checked too.
    private static let keys: [STUNIntegrityKey] = [
        try! STUNIntegrityKey.shortTerm(password: "VOkJxbRl1RmTxUk/WvJxBt"),
        try! STUNIntegrityKey.shortTerm(password: "VOkJxbRl1RmTxUk/WvJxBt", algorithm: .sha256),
    ]

    /// A message that verified must carry the MAC that signing its attributes up to the
    /// integrity attribute gives (checked for full-length MACs: a truncated SHA-256 one
    /// changes the length field the MAC covers).
    private static func checkIntegrity(_ message: STUNMessage, key: STUNIntegrityKey, _ bytes: UnsafeRawBufferPointer) {
        let isSHA1 = key.algorithm == .sha1
        guard let index = message.attributes.firstIndex(where: {
            if case .messageIntegrity = $0 { return isSHA1 }
            if case .messageIntegritySHA256 = $0 { return !isSHA1 }
            return false
        }) else {
            return FuzzCheck.require(false, "integrity verified without a \(key.algorithm) attribute")
        }
        let received: [UInt8]
        switch message.attributes[index] {
        case .messageIntegrity(let mac), .messageIntegritySHA256(let mac): received = mac
        default: return
        }
        // Attributes before it, none of them integrity or fingerprint (those would be replaced).
        let before = Array(message.attributes[..<index])
        guard !before.contains(where: { attribute in
            switch attribute {
            case .messageIntegrity, .messageIntegritySHA256, .fingerprint: true
            default: false
            }
        }) else { return }
        let signed = STUNMessage(type: message.type, transactionID: message.transactionID, attributes: before)
            .serialized(integrity: key, fingerprint: false)
        guard received.count == (isSHA1 ? 20 : 32) else { return }
        FuzzCheck.require(Array(signed.suffix(received.count)) == received,
                          "\(key.algorithm) integrity verified, but signing the covered attributes gives another MAC")
    }

    /// Every typed accessor reads without trouble; the binding helper agrees with them.
    private static func readAccessors(_ message: STUNMessage, _ bytes: UnsafeRawBufferPointer) {
        _ = message.username
        _ = message.errorCode
        _ = message.realm
        _ = message.nonce
        _ = message.lifetime
        _ = message.xorRelayedAddress
        _ = message.xorPeerAddress
        _ = message.data
        _ = message.unknownAttributes
        _ = message.comprehensionRequiredUnknownTypes
        for attribute in message.attributes { _ = attribute.isComprehensionRequired }
        let mapped = STUNBinding.mappedAddress(from: bytes, transactionID: message.transactionID)
        FuzzCheck.require(mapped == (message.type == .bindingSuccess ? message.xorMappedAddress : nil),
                          "STUNBinding.mappedAddress disagrees with the message")
    }
}
