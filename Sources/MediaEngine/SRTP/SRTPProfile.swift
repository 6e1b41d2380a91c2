import CSRTP
import Foundation

/// The SRTP protection profiles the engine speaks, named as in SDP `a=crypto` (RFC 4568,
/// RFC 7714).
public enum SRTPProfile: String, Sendable, Hashable, CaseIterable, CustomStringConvertible {
    /// AES-128 counter mode with an 80-bit HMAC-SHA1 tag. The default.
    case aesCM128HMACSHA1_80 = "AES_CM_128_HMAC_SHA1_80"
    /// AES-128 counter mode with a 32-bit HMAC-SHA1 tag on RTP (80 bits on RTCP).
    case aesCM128HMACSHA1_32 = "AES_CM_128_HMAC_SHA1_32"
    /// AES-128 GCM with a 16-byte tag.
    case aeadAES128GCM = "AEAD_AES_128_GCM"

    /// Master key plus master salt length in bytes (30, or 28 for GCM).
    public var keyLength: Int { self == .aeadAES128GCM ? 28 : 30 }

    /// Bytes SRTP adds to an RTP packet (the authentication tag).
    public var rtpOverhead: Int {
        switch self {
        case .aesCM128HMACSHA1_80: 10
        case .aesCM128HMACSHA1_32: 4
        case .aeadAES128GCM: 16
        }
    }

    public var description: String { rawValue }

    /// Fills libsrtp's crypto policies for RTP and RTCP.
    func apply(rtp: inout srtp_crypto_policy_t, rtcp: inout srtp_crypto_policy_t) {
        switch self {
        case .aesCM128HMACSHA1_80:
            CSRTP_crypto_policy_set_aes_cm_128_hmac_sha1_80(&rtp)
            CSRTP_crypto_policy_set_aes_cm_128_hmac_sha1_80(&rtcp)
        case .aesCM128HMACSHA1_32:
            srtp_crypto_policy_set_aes_cm_128_hmac_sha1_32(&rtp)
            // RFC 4568 6.2.2: SRTCP keeps the 80-bit tag with this suite.
            CSRTP_crypto_policy_set_aes_cm_128_hmac_sha1_80(&rtcp)
        case .aeadAES128GCM:
            srtp_crypto_policy_set_aes_gcm_128_16_auth(&rtp)
            srtp_crypto_policy_set_aes_gcm_128_16_auth(&rtcp)
        }
    }
}

/// SRTP master key and salt for one profile. Its description never shows the key.
public struct SRTPKeyingMaterial: Sendable, Hashable, CustomStringConvertible, CustomDebugStringConvertible,
    CustomReflectable {
    public let profile: SRTPProfile
    /// Master key followed by master salt.
    public let bytes: [UInt8]

    /// Wraps raw key material.
    /// - Throws: `SRTPError.badKey` when the length does not fit the profile.
    public init(profile: SRTPProfile, bytes: [UInt8]) throws(SRTPError) {
        guard bytes.count == profile.keyLength else {
            throw SRTPError(.badKey, "\(profile) needs \(profile.keyLength) bytes of key and salt, got \(bytes.count)")
        }
        self.profile = profile
        self.bytes = bytes
    }

    /// Decodes the base64 form used by SDP `a=crypto` (`inline:...`) and ffmpeg's
    /// `-srtp_out_params`.
    /// - Throws: `SRTPError.badKey` for invalid base64 or a wrong length; the message
    ///   does not repeat the key.
    public init(profile: SRTPProfile, base64: String) throws(SRTPError) {
        guard let data = Data(base64Encoded: base64) else {
            throw SRTPError(.badKey, "SRTP key is not valid base64")
        }
        try self.init(profile: profile, bytes: Array(data))
    }

    /// Fresh key material from the system's CSPRNG.
    public static func random(profile: SRTPProfile = .aesCM128HMACSHA1_80) -> SRTPKeyingMaterial {
        var generator = SystemRandomNumberGenerator()
        let bytes = (0..<profile.keyLength).map { _ in UInt8.random(in: .min ... .max, using: &generator) }
        // The length matches the profile by construction.
        return try! SRTPKeyingMaterial(profile: profile, bytes: bytes)
    }

    /// The base64 form for SDP and ffmpeg. Handle as a secret.
    public var base64: String { Data(bytes).base64EncodedString() }

    /// Hex, the form GStreamer's srtpenc/srtpdec take. Handle as a secret.
    public var hex: String { bytes.map { String(format: "%02x", $0) }.joined() }

    public var description: String { "SRTPKeyingMaterial(\(profile), <redacted>)" }
    public var debugDescription: String { description }
    public var customMirror: Mirror { Mirror(self, children: ["profile": profile, "bytes": "<redacted>"]) }
}

/// An SRTP failure. Messages never contain key material.
public struct SRTPError: CodedError {
    public typealias Code = ErrorCode<SRTPError>

    public let code: Code
    public let message: String

    public init(_ code: Code, _ message: String) {
        self.code = code
        self.message = message
    }
}

extension ErrorCode where Domain == SRTPError {
    /// The key material is malformed or the wrong length.
    public static var badKey: Self { Self("bad key") }
    /// The tag did not verify: wrong key, or the packet was altered.
    public static var authenticationFailed: Self { Self("authentication failed") }
    /// The packet index was already received.
    public static var replayed: Self { Self("replayed") }
    /// The packet index is behind the replay window.
    public static var tooOld: Self { Self("too old") }
    /// The packet is too short or otherwise not SRTP.
    public static var malformed: Self { Self("malformed") }
    /// The buffer has no room for the authentication tag.
    public static var bufferTooSmall: Self { Self("buffer too small") }
    /// libsrtp reported another failure.
    public static var libraryFailure: Self { Self("library failure") }
}
