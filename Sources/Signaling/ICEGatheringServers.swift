import MediaEngine

/// The login reply's ICE servers in the engine's types, for gathering candidates: STUN
/// servers to learn server-reflexive addresses from (`STUNBinding`), TURN servers to
/// allocate relays on (`TURNClient`).
///
/// The engine speaks UDP only: `stun:` and `turn:` (without `?transport=tcp`) URLs are
/// taken; `stuns:`, `turns:` and TCP ones are listed in `skipped`, not refused, as a browser
/// skips what it cannot use. Holds TURN credentials: never print its TURN configurations'
/// passwords (`TURNCredentials` redacts them).
public struct ICEGatheringServers: Sendable {
    /// Where to send STUN binding requests.
    public var stun: [SocketAddress] = []
    /// One per TURN URL, with its entry's credentials.
    public var turn: [TURNClient.Configuration] = []
    /// URLs over a transport the engine does not speak.
    public var skipped: [ICEServerURL] = []

    /// Parses and resolves every URL of `servers`.
    ///
    /// Host names are resolved with `getaddrinfo`, which blocks: call this off Swift's
    /// cooperative threads when the servers may be names. The server's own entries are
    /// addresses.
    /// - Parameter servers: The login reply's `iceServers`.
    /// - Throws: `ICEServerError`: `.malformedURL` for a URL that does not parse,
    ///   `.missingCredentials` for a TURN URL in an entry without username or credential,
    ///   `.unresolvable` for a host that does not resolve.
    public init(_ servers: [ICEServer]) throws(ICEServerError) {
        for server in servers {
            for text in server.urls {
                let url = try ICEServerURL(parsing: text)
                guard url.isUDP else {
                    skipped.append(url)
                    continue
                }
                let address: SocketAddress
                do {
                    address = try SocketAddress(host: url.host, port: url.port)
                } catch {
                    throw ICEServerError(.unresolvable, "\(url): \(error.message)")
                }
                guard url.scheme.isRelay else {
                    stun.append(address)
                    continue
                }
                guard let username = server.username, !username.isEmpty, let credential = server.credential, !credential.isEmpty else {
                    throw ICEServerError(.missingCredentials, "\(url): a TURN server needs a username and a credential")
                }
                turn.append(TURNClient.Configuration(server: address, credentials: TURNCredentials(username: username, password: credential)))
            }
        }
    }
}
