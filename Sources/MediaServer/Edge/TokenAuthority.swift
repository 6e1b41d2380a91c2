import Foundation
import JWTKit
import Signaling

/// The server's signing secret, read from a file (the file's bytes, trailing whitespace
/// removed). Never printed: `description` says only its length.
public struct ServerSecret: Sendable, CustomStringConvertible {
    /// HS256 wants at least as many key bytes as its output (RFC 7518 3.2).
    public static let minimumLength = 32

    let bytes: [UInt8]

    /// Wraps secret bytes.
    /// - Throws: `StoreError` when shorter than `minimumLength`.
    public init(bytes: [UInt8]) throws(StoreError) {
        guard bytes.count >= Self.minimumLength else {
            throw StoreError("the server secret has \(bytes.count) bytes, needs at least \(Self.minimumLength)")
        }
        self.bytes = bytes
    }

    /// Reads the secret from `path`; when the file does not exist and `create` is true,
    /// writes a new random one there first (base64 of 32 random bytes, mode 600).
    ///
    /// - Throws: `StoreError` naming the path: unreadable, too short, or not creatable.
    public static func load(path: String, create: Bool) throws(StoreError) -> ServerSecret {
        if create && !FileManager.default.fileExists(atPath: path) {
            var random = SystemRandomNumberGenerator()
            let fresh = (0..<32).map { _ in UInt8.random(in: 0...255, using: &random) }
            let text = Data(fresh).base64EncodedString() + "\n"
            guard FileManager.default.createFile(atPath: path, contents: Data(text.utf8), attributes: [.posixPermissions: 0o600]) else {
                throw StoreError("\(path): cannot create the secret file")
            }
        }
        guard let data = FileManager.default.contents(atPath: path) else {
            throw StoreError("\(path): cannot read the secret file")
        }
        var bytes = [UInt8](data)
        while let last = bytes.last, last == 0x0A || last == 0x0D || last == 0x20 || last == 0x09 { bytes.removeLast() }
        do {
            return try ServerSecret(bytes: bytes)
        } catch {
            throw StoreError("\(path): \(error.message)")
        }
    }

    public var description: String { "ServerSecret(\(bytes.count) bytes)" }
}

/// Mints and checks login tokens: JWTs signed with HS256 under the server secret, with
/// the account as subject, an expiry, and optional grants (`meetings`: the meeting names
/// allowed; `publish`: may send media in meetings).
public struct TokenAuthority: Sendable {
    struct Claims: JWTPayload {
        var sub: SubjectClaim
        var exp: ExpirationClaim
        var iat: IssuedAtClaim
        var meetings: [String]?
        var publish: Bool?

        func verify(using algorithm: some JWTAlgorithm) throws {
            try exp.verifyNotExpired()
        }
    }

    /// Longest account name accepted.
    public static let maximumAccountLength = 128

    private let keys: JWTKeyCollection

    public init(secret: ServerSecret) async {
        keys = JWTKeyCollection()
        await keys.add(hmac: HMACKey(from: secret.bytes), digestAlgorithm: .sha256)
    }

    /// A token for `account`, valid for `lifetime` from `now`.
    /// - Throws: `SignalingError` `.invalidRequest` for an empty or over-long account or a
    ///   lifetime that is not positive.
    public func mint(account: String, lifetime: Duration, grants: Grants = .all, now: Date = Date()) async throws(SignalingError) -> String {
        guard !account.isEmpty, account.utf8.count <= Self.maximumAccountLength else {
            throw SignalingError(.invalidRequest, "account must be 1 to \(Self.maximumAccountLength) bytes")
        }
        guard lifetime > .zero else { throw SignalingError(.invalidRequest, "token lifetime must be positive") }
        let seconds = Double(lifetime.components.seconds) + Double(lifetime.components.attoseconds) / 1e18
        let claims = Claims(sub: SubjectClaim(value: account), exp: ExpirationClaim(value: now.addingTimeInterval(seconds)),
                            iat: IssuedAtClaim(value: now), meetings: grants.meetings, publish: grants.publish ? nil : false)
        do {
            return try await keys.sign(claims)
        } catch {
            throw SignalingError(.serverUnavailable, "cannot sign a token")
        }
    }

    /// The account a valid token names.
    /// - Throws: `SignalingError` `.unauthorized`, saying whether the token is expired or
    ///   invalid (malformed, forged, another secret), never repeating it.
    public func verify(_ token: String) async throws(SignalingError) -> String {
        try await verifyWithGrants(token).account
    }

    /// The account a valid token names, and what it grants.
    /// - Throws: As `verify`.
    public func verifyWithGrants(_ token: String) async throws(SignalingError) -> (account: String, grants: Grants) {
        guard token.utf8.count <= 4_096 else { throw SignalingError(.unauthorized, "token is too long") }
        let claims: Claims
        do {
            claims = try await keys.verify(token, as: Claims.self)
        } catch let error as JWTError where error.errorType == .claimVerificationFailure {
            throw SignalingError(.unauthorized, "token has expired")
        } catch {
            throw SignalingError(.unauthorized, "token is not valid")
        }
        let account = claims.sub.value
        guard !account.isEmpty, account.utf8.count <= Self.maximumAccountLength else {
            throw SignalingError(.unauthorized, "token names no valid account")
        }
        guard (claims.meetings?.count ?? 0) <= 256 else { throw SignalingError(.unauthorized, "token grants too many meetings") }
        return (account, Grants(meetings: claims.meetings, publish: claims.publish ?? true))
    }
}
