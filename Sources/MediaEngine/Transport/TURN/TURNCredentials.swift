import Foundation

/// A TURN server's long-term credentials (RFC 8656 section 3.2). Holds a secret: never
/// print the password (`description` redacts it).
public struct TURNCredentials: Sendable, Hashable, CustomStringConvertible {
    /// The username, sent in the clear in USERNAME.
    public let username: String
    /// The password, used only to derive the MESSAGE-INTEGRITY key.
    public let password: String

    /// Credentials as given.
    public init(username: String, password: String) {
        self.username = username
        self.password = password
    }

    /// Time-limited credentials for a TURN server sharing `secret` with the signaling
    /// server (coturn's `use-auth-secret` REST API): username "EXPIRY:account" with EXPIRY
    /// in Unix seconds, password base64(HMAC-SHA1(secret, username)). coturn refuses them
    /// once EXPIRY is in the past.
    ///
    /// - Parameters:
    ///   - secret: coturn's `static-auth-secret`.
    ///   - account: Who the credentials are for (a user or session ID); must not hold ':'.
    ///   - expiresAt: When they stop working, in seconds since 1970 (UTC).
    public static func restAPI(secret: String, account: String, expiresAt: Int) -> TURNCredentials {
        let username = "\(expiresAt):\(account)"
        let mac = STUNCrypto.hmac(.sha1, key: Array(secret.utf8), data: Array(username.utf8))
        return TURNCredentials(username: username, password: Data(mac).base64EncodedString())
    }

    public var description: String { "TURNCredentials(username: \(username), password redacted)" }
}
