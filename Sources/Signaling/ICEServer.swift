/// A STUN or TURN server a client gathers ICE candidates with, in the shape of WebRTC's
/// `RTCIceServer`: `{ "urls": [...], "username": ..., "credential": ... }`. The login reply
/// carries them (`Reply.Login.iceServers`).
///
/// A TURN entry holds a credential (a password): its `description`, `debugDescription`
/// and mirror redact it, so logging or dumping an entry never prints it.
public struct ICEServer: Sendable, Hashable, Codable, CustomStringConvertible, CustomDebugStringConvertible, CustomReflectable {
    /// `stun:`, `stuns:`, `turn:` or `turns:` URLs (RFC 7064, RFC 7065) of one server;
    /// `ICEServerURL(parsing:)` reads them.
    public var urls: [String]
    /// The TURN username (nil for STUN). For the signaling server's TURN entries, coturn's
    /// REST-API form "EXPIRY:ACCOUNT".
    public var username: String?
    /// The TURN password (nil for STUN). Never printed.
    public var credential: String?

    /// An entry as given.
    /// - Parameters:
    ///   - urls: The server's URLs.
    ///   - username: The TURN username, nil for a STUN server.
    ///   - credential: The TURN password, nil for a STUN server.
    public init(urls: [String], username: String? = nil, credential: String? = nil) {
        self.urls = urls
        self.username = username
        self.credential = credential
    }

    public var description: String {
        var text = "ICEServer(urls: \(urls)"
        if let username { text += ", username: \(username)" }
        if credential != nil { text += ", credential redacted" }
        return text + ")"
    }

    public var debugDescription: String { description }

    /// The fields, with the credential replaced by "redacted" (for `dump`).
    public var customMirror: Mirror {
        Mirror(self, children: ["urls": urls, "username": username as Any, "credential": credential.map { _ in "redacted" } as Any],
               displayStyle: .struct)
    }
}
