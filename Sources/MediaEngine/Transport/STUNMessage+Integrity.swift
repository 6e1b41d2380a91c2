/// A key for STUN's MESSAGE-INTEGRITY (HMAC-SHA1) or MESSAGE-INTEGRITY-SHA256
/// (RFC 8489 section 9): the short-term password itself, or the long-term
/// MD5(username ":" realm ":" password). Holds a secret: never print it.
public struct STUNIntegrityKey: Sendable, Hashable {
    /// Which integrity attribute the key writes and checks.
    public struct Algorithm: Sendable, Hashable, CustomStringConvertible {
        let hash: STUNCrypto.Hash
        private init(_ hash: STUNCrypto.Hash) { self.hash = hash }

        /// MESSAGE-INTEGRITY, HMAC-SHA1 (what coturn and ICE use).
        public static let sha1 = Algorithm(.sha1)
        /// MESSAGE-INTEGRITY-SHA256, HMAC-SHA256, written untruncated (32 bytes).
        public static let sha256 = Algorithm(.sha256)

        public var description: String { hash == .sha1 ? "HMAC-SHA1" : "HMAC-SHA256" }
    }

    /// The HMAC key.
    public let bytes: [UInt8]
    /// The attribute it signs.
    public let algorithm: Algorithm

    /// A key from its bytes, for keys derived elsewhere (for example with SASLprep, which
    /// this code does not implement).
    public init(bytes: [UInt8], algorithm: Algorithm = .sha1) {
        self.bytes = bytes
        self.algorithm = algorithm
    }

    /// A short-term credential key (ICE): the password's bytes.
    ///
    /// - Throws: `STUNCredentialError` `.nonASCII` when the password has a byte over 0x7F:
    ///   such passwords need OpaqueString/SASLprep preparation, which this code does not do,
    ///   so a key could silently disagree with the peer's.
    public static func shortTerm(password: String, algorithm: Algorithm = .sha1) throws(STUNCredentialError) -> Self {
        try requireASCII(password, field: "password")
        return STUNIntegrityKey(bytes: Array(password.utf8), algorithm: algorithm)
    }

    /// A long-term credential key (TURN): MD5(username ":" realm ":" password), RFC 8489
    /// section 9.2.2 with the default PASSWORD-ALGORITHM (MD5) whichever attribute it signs.
    ///
    /// - Throws: `STUNCredentialError` `.nonASCII` when any of the three has a byte over
    ///   0x7F, since this code does not do the OpaqueString/SASLprep preparation they need.
    public static func longTerm(
        username: String, realm: String, password: String, algorithm: Algorithm = .sha1
    ) throws(STUNCredentialError) -> Self {
        try requireASCII(username, field: "username")
        try requireASCII(realm, field: "realm")
        try requireASCII(password, field: "password")
        let input = Array("\(username):\(realm):\(password)".utf8)
        return STUNIntegrityKey(bytes: STUNCrypto.md5(input), algorithm: algorithm)
    }

    private static func requireASCII(_ text: String, field: String) throws(STUNCredentialError) {
        guard text.utf8.allSatisfy({ $0 < 0x80 }) else { throw STUNCredentialError(.nonASCII, field: field) }
    }
}

/// Why a STUN credential key could not be made.
public struct STUNCredentialError: CodedError {
    /// What was wrong. New kinds may be added without breaking callers.
    public typealias Code = ErrorCode<STUNCredentialError>

    public let code: Code
    /// Which credential field: "username", "realm" or "password". Never its value.
    public let field: String

    init(_ code: Code, field: String) {
        self.code = code
        self.field = field
    }

    public var message: String { "STUN \(field) has \(code) characters; only ASCII is supported (no SASLprep)" }
}

extension ErrorCode where Domain == STUNCredentialError {
    /// A username, realm or password has non-ASCII characters (SASLprep is not done).
    public static var nonASCII: Self { Self("non-ASCII") }
}

extension STUNMessage {
    private static let fingerprintXOR: UInt32 = 0x5354_554E

    /// Checks the MESSAGE-INTEGRITY (or, for a SHA-256 key, MESSAGE-INTEGRITY-SHA256) of a
    /// parsed message against the bytes it was parsed from: the HMAC covers the message up
    /// to that attribute, with the header's length set to end just after it.
    ///
    /// - Parameters:
    ///   - key: The key the sender should have used.
    ///   - bytes: Exactly the bytes this message was parsed from.
    /// - Returns: `false` when the attribute is missing, the message was not parsed from
    ///   `bytes`, or the HMAC differs.
    public func verifyIntegrity(_ key: STUNIntegrityKey, in bytes: UnsafeRawBufferPointer) -> Bool {
        let expectedType = key.algorithm.hash == .sha1 ? Attribute.messageIntegrityType : Attribute.messageIntegritySHA256Type
        guard let offset = key.algorithm.hash == .sha1 ? receivedIntegrityOffsets.sha1 : receivedIntegrityOffsets.sha256,
              offset + Self.attributeHeaderSize <= bytes.count, bytes.uint16(at: offset) == expectedType
        else { return false }
        let macSize = Int(bytes.uint16(at: offset + 2))
        let end = offset + Self.attributeHeaderSize + macSize
        guard end <= bytes.count, macSize <= key.algorithm.hash.size else { return false }
        // The covered bytes with the adjusted length, copied: received bytes stay untouched.
        return withUnsafeTemporaryAllocation(byteCount: offset + 32, alignment: 1) { scratch in
            let covered = UnsafeMutableRawBufferPointer(rebasing: scratch[0..<offset])
            covered.copyMemory(from: UnsafeRawBufferPointer(rebasing: bytes[0..<offset]))
            covered.store(UInt16(end - Self.headerSize), at: 2)
            let mac = UnsafeMutableRawBufferPointer(rebasing: scratch[offset..<(offset + 32)])
            let computed = key.bytes.withUnsafeBytes { keyBytes in
                STUNCrypto.hmac(key.algorithm.hash, key: keyBytes, data: UnsafeRawBufferPointer(covered), into: mac)
            }
            return computed && STUNCrypto.constantTimeEqual(
                UnsafeRawBufferPointer(rebasing: mac[0..<macSize]),
                UnsafeRawBufferPointer(rebasing: bytes[(offset + Self.attributeHeaderSize)..<end])
            )
        }
    }

    /// `verifyIntegrity(_:in:)` on an array.
    public func verifyIntegrity(_ key: STUNIntegrityKey, in bytes: [UInt8]) -> Bool {
        bytes.withUnsafeBytes { verifyIntegrity(key, in: $0) }
    }

    /// Checks that `bytes` is a STUN message whose last attribute is a FINGERPRINT equal to
    /// the CRC-32 of everything before it XOR 0x5354554E (RFC 8489 section 14.7).
    ///
    /// - Returns: `false` for anything else, including a message without FINGERPRINT.
    public static func verifyFingerprint(_ bytes: UnsafeRawBufferPointer) -> Bool {
        guard looksLikeSTUN(bytes) else { return false }
        // Walk the attributes so that a value that happens to end like a FINGERPRINT is
        // not taken for one.
        var offset = headerSize
        var last = offset
        while offset + attributeHeaderSize <= bytes.count {
            last = offset
            offset += attributeHeaderSize + padded(Int(bytes.uint16(at: offset + 2)))
        }
        guard offset == bytes.count, last == bytes.count - 8, bytes.uint16(at: last) == Attribute.fingerprintType,
              bytes.uint16(at: last + 2) == 4
        else { return false }
        let crc = STUNCrypto.crc32(UnsafeRawBufferPointer(rebasing: bytes[0..<last]))
        return crc ^ fingerprintXOR == bytes.uint32(at: last + 4)
    }

    /// `verifyFingerprint(_:)` on an array.
    public static func verifyFingerprint(_ bytes: [UInt8]) -> Bool {
        bytes.withUnsafeBytes { verifyFingerprint($0) }
    }

    /// Appends MESSAGE-INTEGRITY(-SHA256) at `offset`, the bytes before it being the
    /// message so far; returns the offset after it.
    static func appendIntegrity(_ key: STUNIntegrityKey, into buffer: UnsafeMutableRawBufferPointer, at offset: Int) -> Int {
        let size = key.algorithm.hash.size
        let end = offset + attributeHeaderSize + size
        buffer.store(UInt16(end - headerSize), at: 2)
        buffer.store(key.algorithm.hash == .sha1 ? Attribute.messageIntegrityType : Attribute.messageIntegritySHA256Type, at: offset)
        buffer.store(UInt16(size), at: offset + 2)
        let computed = key.bytes.withUnsafeBytes { keyBytes in
            STUNCrypto.hmac(
                key.algorithm.hash, key: keyBytes, data: UnsafeRawBufferPointer(rebasing: buffer[0..<offset]),
                into: UnsafeMutableRawBufferPointer(rebasing: buffer[(offset + attributeHeaderSize)..<end])
            )
        }
        precondition(computed, "libcrypto HMAC failed")
        return end
    }

    /// Appends FINGERPRINT at `offset`; returns the offset after it.
    static func appendFingerprint(into buffer: UnsafeMutableRawBufferPointer, at offset: Int) -> Int {
        let end = offset + attributeHeaderSize + 4
        buffer.store(UInt16(end - headerSize), at: 2)
        let crc = STUNCrypto.crc32(UnsafeRawBufferPointer(rebasing: buffer[0..<offset]))
        buffer.store(Attribute.fingerprintType, at: offset)
        buffer.store(UInt16(4), at: offset + 2)
        buffer.store(crc ^ fingerprintXOR, at: offset + 4)
        return end
    }
}
