import CSSL

/// Why DTLS could not start or finish.
public struct DTLSError: CodedError {
    public typealias Code = ErrorCode<DTLSError>

    public let code: Code
    public let message: String

    public init(_ code: Code, _ message: String) {
        self.code = code
        self.message = message
    }

    /// An OpenSSL failure: `what` failed, with OpenSSL's own reason when it left one.
    static func openSSL(_ code: Code, _ what: String) -> DTLSError {
        let reason = ERR_get_error()
        ERR_clear_error()
        guard reason != 0 else { return DTLSError(code, what) }
        var text = [CChar](repeating: 0, count: 256)
        ERR_error_string_n(reason, &text, text.count)
        return DTLSError(code, "\(what): \(String(decoding: text.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self))")
    }
}

extension ErrorCode where Domain == DTLSError {
    /// A certificate or key could not be made.
    public static var certificate: Self { Self("certificate") }
    /// OpenSSL refused a setting.
    public static var setup: Self { Self("setup") }
    /// The peer's certificate matches none of the fingerprints its signaling sent.
    public static var fingerprintMismatch: Self { Self("fingerprint mismatch") }
    /// The handshake failed (an alert, a protocol error, no common SRTP profile).
    public static var handshake: Self { Self("handshake") }
    /// The handshake did not finish in time.
    public static var timeout: Self { Self("timeout") }
    /// An `a=fingerprint` that does not parse.
    public static var invalidFingerprint: Self { Self("invalid fingerprint") }
}

/// A certificate's SHA-256 fingerprint as SDP carries it (RFC 8122 `a=fingerprint`).
public struct DTLSFingerprint: Sendable, Hashable, CustomStringConvertible {
    /// The hash function's name in SDP ("sha-256").
    public let algorithm: String
    public let bytes: [UInt8]

    public init(algorithm: String = "sha-256", bytes: [UInt8]) {
        self.algorithm = algorithm.lowercased()
        self.bytes = bytes
    }

    /// Parses an attribute value: `sha-256 AB:CD:...`.
    /// - Throws: `DTLSError.invalidFingerprint` naming what is wrong.
    public init(sdp value: String) throws(DTLSError) {
        let parts = value.split(separator: " ", omittingEmptySubsequences: true)
        guard parts.count == 2 else { throw DTLSError(.invalidFingerprint, "expected 'algorithm XX:XX:...', got \(parts.count) fields") }
        var bytes: [UInt8] = []
        for pair in parts[1].split(separator: ":", omittingEmptySubsequences: false) {
            guard pair.count == 2, let byte = UInt8(pair, radix: 16) else {
                throw DTLSError(.invalidFingerprint, "'\(pair.prefix(8))' is not a hexadecimal byte")
            }
            bytes.append(byte)
        }
        let algorithm = parts[0].lowercased()
        guard let length = Self.digestLengths[algorithm] else {
            throw DTLSError(.invalidFingerprint, "unknown hash function '\(parts[0].prefix(16))'")
        }
        guard bytes.count == length else {
            throw DTLSError(.invalidFingerprint, "\(algorithm) has \(length) bytes, this one \(bytes.count)")
        }
        self.init(algorithm: algorithm, bytes: bytes)
    }

    /// The hash functions RFC 8122 names that OpenSSL computes, and their lengths.
    static let digestLengths = ["sha-1": 20, "sha-224": 28, "sha-256": 32, "sha-384": 48, "sha-512": 64]

    /// The attribute value: `sha-256 AB:CD:...`.
    public var description: String {
        algorithm + " " + bytes.map { byte in
            let digits = String(byte, radix: 16, uppercase: true)
            return digits.count == 1 ? "0" + digits : digits
        }.joined(separator: ":")
    }

    /// The fingerprint of `certificate` under this one's hash function, nil when OpenSSL
    /// has none by that name.
    static func of(_ certificate: OpaquePointer, algorithm: String) -> DTLSFingerprint? {
        let name = algorithm.replacingOccurrences(of: "-", with: "").uppercased()
        guard let digest = EVP_get_digestbyname(name) else { return nil }
        var output = [UInt8](repeating: 0, count: Int(EVP_MAX_MD_SIZE))
        var length: UInt32 = 0
        guard X509_digest(certificate, digest, &output, &length) == 1 else { return nil }
        return DTLSFingerprint(algorithm: algorithm, bytes: Array(output[0..<Int(length)]))
    }
}

/// A self-signed certificate on a fresh P-256 key, as WebRTC endpoints use: what
/// authenticates it is its fingerprint, sent over signaling. Immutable once made.
public final class DTLSCertificate: @unchecked Sendable {
    let key: OpaquePointer
    let certificate: OpaquePointer
    /// Its SHA-256 fingerprint, for `a=fingerprint`.
    public let fingerprint: DTLSFingerprint

    /// Makes a key and a certificate valid from a day ago for 30 days.
    /// - Throws: `DTLSError.certificate` when OpenSSL cannot.
    public init(commonName: String = "mediaengine") throws(DTLSError) {
        guard let key = CSSL_EC_P256() else { throw DTLSError.openSSL(.certificate, "P-256 key") }
        guard let certificate = X509_new() else {
            EVP_PKEY_free(key)
            throw DTLSError.openSSL(.certificate, "X509_new")
        }
        self.key = key
        self.certificate = certificate
        var serial = [UInt8](repeating: 0, count: 8)
        var generator = SystemRandomNumberGenerator()
        for index in serial.indices { serial[index] = generator.next() }
        let number = BN_bin2bn(&serial, Int32(serial.count), nil)
        defer { BN_free(number) }
        var made = X509_set_version(certificate, 2) == 1
        made = made && BN_to_ASN1_INTEGER(number, X509_get_serialNumber(certificate)) != nil
        made = made && X509_gmtime_adj(X509_getm_notBefore(certificate), -86_400) != nil
        made = made && X509_gmtime_adj(X509_getm_notAfter(certificate), 30 * 86_400) != nil
        made = made && X509_set_pubkey(certificate, key) == 1
        if made, let name = X509_get_subject_name(certificate) {
            made = X509_NAME_add_entry_by_txt(name, "CN", MBSTRING_ASC, commonName, -1, -1, 0) == 1
            made = made && X509_set_issuer_name(certificate, name) == 1
        }
        made = made && X509_sign(certificate, key, EVP_sha256()) > 0
        guard made, let fingerprint = DTLSFingerprint.of(certificate, algorithm: "sha-256") else {
            let error = DTLSError.openSSL(.certificate, "self-signed certificate")
            X509_free(certificate)
            EVP_PKEY_free(key)
            throw error
        }
        self.fingerprint = fingerprint
    }

    deinit {
        X509_free(certificate)
        EVP_PKEY_free(key)
    }
}

extension DTLSCertificate: Hashable {
    /// The same certificate object (two certificates never share a key).
    public static func == (lhs: DTLSCertificate, rhs: DTLSCertificate) -> Bool { lhs === rhs }

    public func hash(into hasher: inout Hasher) { hasher.combine(ObjectIdentifier(self)) }
}
