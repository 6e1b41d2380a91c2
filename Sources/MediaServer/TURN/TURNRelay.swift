import Foundation
import MediaEngine
import Signaling

/// A TURN server sharing a secret with this server, as coturn's `use-auth-secret` with
/// `static-auth-secret` (the TURN REST API): each login gets a `turn:` entry whose
/// credentials this server computes for the account and which expire `credentialLifetime`
/// later. Nothing is asked of the TURN server.
///
/// Holds the shared secret: its `description` and mirror redact it, and it is never
/// logged. The secret comes from a file (`load`), never from a command line.
public struct TURNRelay: Sendable, CustomStringConvertible, CustomReflectable {
    /// A day, the REST API draft's recommendation: longer than any call, renewed at every
    /// login (coturn checks the expiry on refreshes too, so an allocation ends with it).
    public static let defaultCredentialLifetime: Duration = .seconds(86_400)
    /// coturn keeps at most this many bytes of `static-auth-secret` (STUN_MAX_PWD_SIZE,
    /// 256 with the terminator).
    public static let maximumSecretLength = 255

    /// The relay's URL, handed out as is: `turn:`, over UDP.
    public let url: ICEServerURL
    /// coturn's `static-auth-secret`. Never printed.
    let secret: String
    /// How long a login's credentials work.
    public let credentialLifetime: Duration

    /// A relay from its settings.
    /// - Parameters:
    ///   - url: `turn:HOST:PORT`, optionally with `?transport=udp` (the engine's TURN client
    ///     speaks UDP only).
    ///   - secret: The shared secret, as coturn's `static-auth-secret` has it.
    ///   - credentialLifetime: Whole seconds, at least one.
    /// - Throws: `TURNRelayError`: `.badURL` naming the URL, `.emptySecret`, `.badSecret`
    ///   (a control character, or too long), `.badLifetime`.
    public init(url: String, secret: String, credentialLifetime: Duration = defaultCredentialLifetime) throws(TURNRelayError) {
        let parsed = try Self.relayURL(url)
        guard !secret.isEmpty else { throw TURNRelayError(.emptySecret, "the TURN secret is empty") }
        guard secret.utf8.count <= Self.maximumSecretLength else {
            throw TURNRelayError(.badSecret, "the TURN secret has \(secret.utf8.count) bytes; coturn keeps at most \(Self.maximumSecretLength)")
        }
        guard secret.utf8.allSatisfy({ $0 >= 0x20 && $0 != 0x7F }) else {
            throw TURNRelayError(.badSecret, "the TURN secret holds a line break or another control character; "
                + "it must fit on coturn's static-auth-secret line")
        }
        guard credentialLifetime >= .seconds(1), credentialLifetime.components.attoseconds == 0 else {
            throw TURNRelayError(.badLifetime, "the TURN credential lifetime must be a whole number of seconds, at least 1")
        }
        self.url = parsed
        self.secret = secret
        self.credentialLifetime = credentialLifetime
    }

    /// A relay whose secret is read from a file: its text, white space and line breaks
    /// around it dropped (the same text goes into coturn's `static-auth-secret=`).
    /// - Parameters:
    ///   - url: As for `init`.
    ///   - secretFile: The file holding the secret.
    ///   - credentialLifetime: As for `init`.
    /// - Throws: `TURNRelayError`: `.badURL` as `init` (before the file is read); naming
    ///   the path, `.unreadableSecretFile`, `.emptySecret`, `.badSecret` (not UTF-8 text,
    ///   larger than a secret file can be, or what `init` refuses); `.badLifetime` as `init`.
    public static func load(url: String, secretFile: String, credentialLifetime: Duration = defaultCredentialLifetime)
        throws(TURNRelayError) -> TURNRelay {
        _ = try relayURL(url)
        let data: Data
        do {
            let handle = try FileHandle(forReadingFrom: URL(fileURLWithPath: secretFile))
            defer { try? handle.close() }
            // A big file is not a secret file, and need not be read whole.
            data = try handle.read(upToCount: maximumSecretFileSize + 1) ?? Data()
        } catch {
            throw TURNRelayError(.unreadableSecretFile, "\(secretFile): cannot read the TURN secret file")
        }
        guard data.count <= maximumSecretFileSize else {
            throw TURNRelayError(.badSecret, "\(secretFile): larger than \(maximumSecretFileSize) bytes, not a TURN secret file")
        }
        guard let text = String(data: data, encoding: .utf8) else {
            throw TURNRelayError(.badSecret, "\(secretFile): the TURN secret file is not UTF-8 text")
        }
        let secret = text.trimmingCharacters(in: .whitespacesAndNewlines)
        guard !secret.isEmpty else { throw TURNRelayError(.emptySecret, "\(secretFile): the TURN secret file is empty") }
        do {
            return try TURNRelay(url: url, secret: secret, credentialLifetime: credentialLifetime)
        } catch where error.code == .badSecret {
            throw TURNRelayError(error.code, "\(secretFile): \(error.message)")
        }
    }

    private static let maximumSecretFileSize = 4_096

    /// `url` parsed, when it is a `turn:` URL over UDP.
    static func relayURL(_ url: String) throws(TURNRelayError) -> ICEServerURL {
        let parsed: ICEServerURL
        do {
            parsed = try ICEServerURL(parsing: url)
        } catch {
            throw TURNRelayError(.badURL, error.message)
        }
        guard parsed.scheme == .turn, parsed.isUDP else {
            throw TURNRelayError(.badURL, "'\(url)': not a TURN server over UDP (turn:HOST:PORT or turn:HOST:PORT?transport=udp)")
        }
        return parsed
    }

    /// The `turn:` entry for a login of `account`: coturn's REST-API credentials
    /// (`TURNCredentials.restAPI`), username "EXPIRY:ACCOUNT", expiring
    /// `credentialLifetime` after `now`.
    /// - Parameters:
    ///   - account: The logged-in account; bytes other than letters, digits and `-._~@+`
    ///     are percent-encoded in the username, which keeps it ASCII (STUN's long-term key
    ///     has no SASLprep here) and free of coturn's ':' separator.
    ///   - now: The time the lifetime counts from.
    public func iceServer(for account: String, now: Date = Date()) -> ICEServer {
        let expiry = Int(now.timeIntervalSince1970.rounded(.down)) + Int(credentialLifetime.components.seconds)
        let credentials = TURNCredentials.restAPI(secret: secret, account: Self.usernameAccount(account), expiresAt: expiry)
        return ICEServer(urls: [url.description], username: credentials.username, credential: credentials.password)
    }

    /// `account` percent-encoded outside letters, digits and `-._~@+`.
    static func usernameAccount(_ account: String) -> String {
        var text = ""
        for byte in account.utf8 {
            switch byte {
            case 0x30...0x39, 0x41...0x5A, 0x61...0x7A, 0x2D, 0x2E, 0x5F, 0x7E, 0x40, 0x2B:
                text.unicodeScalars.append(Unicode.Scalar(byte))
            default:
                text += "%" + (byte < 0x10 ? "0" : "") + String(byte, radix: 16, uppercase: true)
            }
        }
        return text
    }

    public var description: String {
        "TURNRelay(\(url), secret redacted, credentials for \(credentialLifetime.components.seconds) s)"
    }

    public var customMirror: Mirror {
        Mirror(self, children: ["url": url, "secret": "redacted", "credentialLifetime": credentialLifetime], displayStyle: .struct)
    }
}
