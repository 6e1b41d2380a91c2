#if canImport(Glibc)
import Glibc
#endif
import Foundation
import MediaEngine
import MediaServer

/// coturn's `turnserver` (Debian `coturn`, which `tools/bootstrap` installs) as a STUN and
/// TURN server for one test: in a `NetworkLab` namespace on its address, or on loopback.
///
/// It runs in the foreground from a temporary directory (its config file, log, pid file
/// and user database are there; the secret is only in the config file), with long-term
/// credentials from its REST API (`use-auth-secret`): `credentials(account:)` makes them.
/// UDP and TCP only, no TLS or DTLS, no CLI. `start` returns once it answers a STUN Binding request.
public final class Coturn {
    /// What the command line says beyond listening and credentials.
    public struct Options: Sendable {
        /// Relay ports (`--min-port`/`--max-port`).
        public var relayPorts: ClosedRange<Int> = 49_152...49_999
        /// Allocations per user (`--user-quota`; nil: coturn's default, unlimited).
        public var userQuota: Int?
        /// Allocations in all (`--total-quota`; nil: unlimited).
        public var totalQuota: Int?
        /// `-v`: a line per session and allocation in the log.
        public var verbose = true
        /// More config-file lines (`option` or `option=value`).
        public var extraLines: [String] = []
        public init() {}
    }

    /// The shared secret of the REST API; fresh for each server.
    public let secret: String
    public let realm: String
    /// The listening (and relay) address.
    public let address: String
    /// The listening port; kept across `stop()` so `restart()` reuses it.
    public private(set) var port: Int
    public let options: Options
    /// The log, pid file and user database.
    public let directory: URL
    private let lab: NetworkLab?
    private let namespace: NetworkLab.Namespace?
    private var process: BackgroundProcess?

    /// A server on `namespace`'s address, port 3478 (nothing else listens in a lab's
    /// namespace), not started.
    public init(lab: NetworkLab, namespace: NetworkLab.Namespace, port: Int = 3478, realm: String = "lab.test",
                options: Options = .init()) throws {
        self.lab = lab
        self.namespace = namespace
        address = namespace.address
        self.port = port
        self.realm = realm
        self.options = options
        secret = CoturnConfiguration.randomSecret()
        directory = try temporaryDirectory("coturn")
    }

    /// A server on 127.0.0.1, on a free port below the ephemeral range, that relays to
    /// loopback peers too (`--allow-loopback-peers`, which coturn otherwise refuses), not
    /// started.
    public init(loopbackRealm realm: String = "lab.test", options: Options = .init()) throws {
        lab = nil
        namespace = nil
        address = "127.0.0.1"
        port = 0
        self.realm = realm
        self.options = options
        secret = CoturnConfiguration.randomSecret()
        directory = try temporaryDirectory("coturn")
    }

    deinit {
        stop()
        try? FileManager.default.removeItem(at: directory)
    }

    /// Where clients send to.
    public var serverAddress: SocketAddress { (try? SocketAddress(host: address, port: port))! }

    private var logURL: URL { URL(fileURLWithPath: configuration.logPath) }

    /// What coturn logged since it was last started, and what it printed before it opened
    /// its log.
    public var log: String {
        BackgroundProcess.text(of: logURL) + (process.map { $0.stdout + $0.stderr } ?? "")
    }

    public var isRunning: Bool { process?.isRunning ?? false }

    /// Its config file, from the server's `CoturnConfiguration` (which the relay bench
    /// starts coturn with too).
    public var configuration: CoturnConfiguration {
        var configuration = CoturnConfiguration(address: address, port: port, realm: realm, secret: secret, directory: directory.path)
        configuration.relayPorts = options.relayPorts
        configuration.userQuota = options.userQuota
        configuration.totalQuota = options.totalQuota
        configuration.verbose = options.verbose
        configuration.allowsLoopbackPeers = lab == nil
        configuration.extraLines = options.extraLines
        return configuration
    }

    /// The command line's arguments (after the program's name).
    public var arguments: [String] { configuration.arguments }

    /// Starts turnserver and waits until it answers a STUN Binding request.
    /// - Throws: `ToolFailure` with the log when it is not installed, exits, or does not
    ///   answer within `timeout` seconds.
    public func start(timeout: Double = 10) throws {
        stop()
        let tries = port == 0 ? 5 : 1
        var failure = ToolFailure("turnserver did not start")
        for _ in 0..<tries {
            if lab == nil && (port == 0 || tries > 1) {
                guard let free = (0..<100).lazy.map({ _ in Int.random(in: LivePort.stableRange) }).first(where: { LivePort.isFree($0) }) else {
                    throw ToolFailure("coturn: no free port in \(LivePort.stableRange)")
                }
                port = free
            }
            try? FileManager.default.removeItem(at: logURL)
            try configuration.write()
            let started: BackgroundProcess
            if let lab, let namespace {
                started = try lab.run(in: namespace, "turnserver", arguments)
            } else {
                guard let turnserver = LivePort.executable("turnserver") else {
                    throw ToolFailure("turnserver is not installed (tools/bootstrap installs coturn)")
                }
                started = try BackgroundProcess(executable: turnserver, arguments: arguments)
            }
            process = started
            if try waitUntilAnswering(timeout: timeout) { return }
            let running = started.isRunning
            stop()
            failure = ToolFailure("turnserver on \(address):\(port) \(running ? "did not answer within \(timeout) s" : "exited"):\n\(log)")
            if running { break }
        }
        throw failure
    }

    /// Starts it again on the same port (its allocations are gone, as after a crash).
    public func restart(timeout: Double = 10) throws {
        guard port != 0 else { throw ToolFailure("coturn restart before its first start") }
        stop()
        try start(timeout: timeout)
    }

    /// Stops turnserver (SIGTERM; SIGKILL after `timeout` seconds). Does nothing when it
    /// does not run.
    public func stop(timeout: Double = 5) {
        guard let process, process.isRunning else { return }
        process.terminate()
        _ = try? process.wait(timeout: timeout)
    }

    /// Long-term credentials of coturn's REST API for `account`, valid for `lifetime`:
    /// username "EXPIRY:account" (EXPIRY in Unix seconds), password
    /// base64(HMAC-SHA1(secret, username)).
    public func credentials(account: String, lifetime: Duration = .seconds(3_600)) -> (username: String, password: String) {
        Self.credentials(secret: secret, account: account, expiry: Int(Date().timeIntervalSince1970) + Int(lifetime.components.seconds))
    }

    /// REST credentials for `account` expiring at `expiry` (Unix seconds) under `secret`.
    public static func credentials(secret: String, account: String, expiry: Int) -> (username: String, password: String) {
        let credentials = TURNCredentials.restAPI(secret: secret, account: account, expiresAt: expiry)
        return (credentials.username, credentials.password)
    }

    /// Sends Binding requests from where the server runs until one is answered.
    private func waitUntilAnswering(timeout: Double) throws -> Bool {
        let server = serverAddress
        var answered = false
        // Each probe waits up to 0.3 s for its answer: no pause between them.
        try eventuallyBlocking(timeout: .seconds(timeout), every: .zero) {
            guard isRunning else { return true }
            if let lab, let namespace {
                answered = try lab.withNamespace(namespace) { try STUNProbe.mappedAddress(of: server, timeout: 0.3) != nil }
            } else {
                answered = try STUNProbe.mappedAddress(of: server, timeout: 0.3) != nil
            }
            return answered
        }
        return answered
    }
}
