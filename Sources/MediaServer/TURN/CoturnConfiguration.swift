import Foundation

/// How to run coturn's `turnserver` as the TURN server `mediaengine server --turn-url`
/// hands out: long-term credentials from its REST API (`use-auth-secret`, the form
/// `TURNCredentials.restAPI` makes), UDP and TCP, no TLS or DTLS, no telnet CLI. The
/// tests' coturn and `mediaengine bench relay` both start it from here.
///
/// Everything goes in a config file of its own (`configurationPath`, mode 0600), written
/// by `write()`: the shared secret is never on the command line, where every user of the
/// machine could read it in the process list, and no other config file on the host
/// changes what coturn does.
public struct CoturnConfiguration: Sendable, Hashable {
    /// The address it listens on and relays from (`listening-ip`, `relay-ip`).
    public var address: String
    /// The listening port, a real one: given 0, coturn binds ports it never reports.
    public var port: Int
    /// `realm`; clients learn it from the 401 challenge.
    public var realm: String
    /// `static-auth-secret`, shared with whoever makes the REST credentials.
    public var secret: String
    /// Where the config file, the log (`turnserver.log`), pid file and user database go.
    public var directory: String
    /// Relay ports (`min-port`/`max-port`).
    public var relayPorts: ClosedRange<Int> = 49_152...49_999
    /// Allocations per user (`user-quota`; nil: coturn's default, unlimited).
    public var userQuota: Int?
    /// Allocations in all (`total-quota`; nil: unlimited).
    public var totalQuota: Int?
    /// `verbose`: a line per session and allocation in the log.
    public var verbose = true
    /// `allow-loopback-peers`: relay to 127.0.0.0/8 and ::1, which coturn otherwise
    /// refuses (RFC 8656's advice against relaying to the server's own host). Only for a
    /// server on loopback that tests or benchmarks talk to.
    public var allowsLoopbackPeers = false
    /// More config-file lines (`option` or `option=value`), appended as they are.
    public var extraLines: [String] = []

    /// A configuration with the defaults above.
    public init(address: String, port: Int, realm: String, secret: String, directory: String) {
        self.address = address
        self.port = port
        self.realm = realm
        self.secret = secret
        self.directory = directory
    }

    /// The config file `write()` makes, and the command line names.
    public var configurationPath: String { directory + "/turnserver.conf" }

    /// The log coturn writes (`simple-log`: no date in the file name).
    public var logPath: String { directory + "/turnserver.log" }

    /// The config file's lines.
    public var lines: [String] {
        var lines = [
            "listening-ip=\(address)", "relay-ip=\(address)", "listening-port=\(port)",
            "min-port=\(relayPorts.lowerBound)", "max-port=\(relayPorts.upperBound)",
            "use-auth-secret", "static-auth-secret=\(secret)", "realm=\(realm)",
            "no-tls", "no-dtls", "no-cli",
            "log-file=\(logPath)", "simple-log",
            "pidfile=\(directory)/turnserver.pid",
            "userdb=\(directory)/turndb",
        ]
        if verbose { lines.append("verbose") }
        if let userQuota { lines.append("user-quota=\(userQuota)") }
        if let totalQuota { lines.append("total-quota=\(totalQuota)") }
        if allowsLoopbackPeers { lines.append("allow-loopback-peers") }
        return lines + extraLines
    }

    /// The arguments after the program's name: only the config file's path.
    public var arguments: [String] { ["-c", configurationPath] }

    /// Writes the config file, readable by its owner only (it holds the secret).
    public func write() throws {
        let created = FileManager.default.createFile(atPath: configurationPath, contents: nil, attributes: [.posixPermissions: 0o600])
        guard created else { throw CocoaError(.fileWriteNoPermission, userInfo: [NSFilePathErrorKey: configurationPath]) }
        try Data((lines.joined(separator: "\n") + "\n").utf8).write(to: URL(fileURLWithPath: configurationPath))
    }

    /// A fresh random secret: 16 bytes as hex.
    public static func randomSecret() -> String {
        (0..<16).map { _ in
            let byte = UInt8.random(in: 0 ... .max)
            return (byte < 16 ? "0" : "") + String(byte, radix: 16)
        }.joined()
    }
}
