import CCrypto
import CZlib

/// The digests STUN and TURN need, from OpenSSL's libcrypto and zlib: HMAC-SHA1 and
/// HMAC-SHA256 for MESSAGE-INTEGRITY(-SHA256) and coturn's REST passwords, MD5 for
/// long-term keys, CRC-32 for FINGERPRINT. Stateless and thread-safe: the one-shot C
/// functions used here keep no state between calls.
enum STUNCrypto {
    /// Which hash an HMAC uses.
    enum Hash: Sendable {
        case sha1
        case sha256

        /// The digest size in bytes.
        var size: Int {
            switch self {
            case .sha1: 20
            case .sha256: 32
            }
        }

        fileprivate var evp: OpaquePointer? {
            switch self {
            case .sha1: EVP_sha1()
            case .sha256: EVP_sha256()
            }
        }
    }

    /// Writes HMAC(`key`, `data`) into the start of `output`, which holds at least
    /// `hash.size` bytes. Allocates nothing.
    ///
    /// - Returns: `false` only if libcrypto fails (it does not for these hashes).
    static func hmac(
        _ hash: Hash, key: UnsafeRawBufferPointer, data: UnsafeRawBufferPointer, into output: UnsafeMutableRawBufferPointer
    ) -> Bool {
        precondition(output.count >= hash.size, "HMAC output \(output.count) < \(hash.size) bytes")
        var length: UInt32 = 0
        // An empty buffer may have a nil base address, which HMAC reads as "no key" or "no
        // data"; a one-byte dummy keeps both non-nil.
        var dummy: UInt8 = 0
        return withUnsafeMutablePointer(to: &dummy) { dummyPointer in
            let keyPointer = key.baseAddress ?? UnsafeRawPointer(dummyPointer)
            let dataPointer = data.baseAddress?.assumingMemoryBound(to: UInt8.self) ?? UnsafePointer(dummyPointer)
            let result = HMAC(
                hash.evp, keyPointer, Int32(key.count), dataPointer, data.count,
                output.baseAddress!.assumingMemoryBound(to: UInt8.self), &length
            )
            return result != nil && Int(length) == hash.size
        }
    }

    /// HMAC(`key`, `data`) as a new array.
    static func hmac(_ hash: Hash, key: [UInt8], data: [UInt8]) -> [UInt8] {
        var output = [UInt8](repeating: 0, count: hash.size)
        let succeeded = key.withUnsafeBytes { key in
            data.withUnsafeBytes { data in
                output.withUnsafeMutableBytes { hmac(hash, key: key, data: data, into: $0) }
            }
        }
        precondition(succeeded, "libcrypto HMAC failed")
        return output
    }

    /// The MD5 digest of `data` (16 bytes): RFC 8489's long-term key, not a security margin.
    static func md5(_ data: [UInt8]) -> [UInt8] { digest(data, EVP_md5(), size: 16) }

    /// The SHA-256 digest of `data` (32 bytes).
    static func sha256(_ data: [UInt8]) -> [UInt8] { digest(data, EVP_sha256(), size: 32) }

    private static func digest(_ data: [UInt8], _ type: OpaquePointer?, size: Int) -> [UInt8] {
        var output = [UInt8](repeating: 0, count: size)
        var length: UInt32 = 0
        let status = data.withUnsafeBytes { data in
            output.withUnsafeMutableBufferPointer { output in
                EVP_Digest(data.baseAddress ?? UnsafeRawPointer(output.baseAddress!), data.count, output.baseAddress, &length, type, nil)
            }
        }
        precondition(status == 1 && Int(length) == size, "libcrypto digest failed")
        return output
    }

    /// The CRC-32 (ISO-HDLC, as zlib computes it) of `data`.
    static func crc32(_ data: UnsafeRawBufferPointer) -> UInt32 {
        guard let base = data.baseAddress, !data.isEmpty else { return 0 }
        return UInt32(truncatingIfNeeded: CZlib.crc32(0, base.assumingMemoryBound(to: UInt8.self), UInt32(data.count)))
    }

    /// Compares two MACs in time that does not depend on where they differ.
    static func constantTimeEqual(_ a: UnsafeRawBufferPointer, _ b: UnsafeRawBufferPointer) -> Bool {
        guard a.count == b.count else { return false }
        var difference: UInt8 = 0
        for index in 0..<a.count { difference |= a[index] ^ b[index] }
        return difference == 0
    }
}
