#if canImport(Glibc)
import Glibc
#endif
import Foundation

/// coturn (`turnserver`, Debian's `coturn`) on 127.0.0.1 for TURN client tests: REST-API
/// credentials (`use-auth-secret`), loopback peers allowed, no TLS/DTLS, no CLI, its own
/// log, pid file and user database in a temporary directory, on a free UDP port below the
/// kernel's ephemeral range with 40 relay ports after it.
public final class LoopbackCoturn {
    /// The UDP port coturn listens on.
    public private(set) var port = 0
    /// The shared secret the REST credentials are made with.
    public let secret: String
    /// The realm coturn challenges with.
    public let realm: String
    /// Holds the log, pid file and database.
    public let directory: URL
    private var process: BackgroundProcess?

    /// Creates and starts coturn.
    /// - Parameters:
    ///   - userQuota: `--user-quota`, concurrent allocations per username (nil: unlimited).
    ///   - totalQuota: `--total-quota`, concurrent allocations in all (nil: unlimited).
    /// - Throws: `ToolFailure` with the log when turnserver is missing or does not answer
    ///   a STUN Binding request within `timeout` seconds.
    public init(secret: String, realm: String, userQuota: Int? = nil, totalQuota: Int? = nil, timeout: Double = 10) throws {
        self.secret = secret
        self.realm = realm
        directory = try temporaryDirectory("coturn")
        guard let turnserver = ["/usr/bin/turnserver", "/usr/sbin/turnserver"].first(where: FileManager.default.isExecutableFile) else {
            throw ToolFailure("turnserver is not installed (apt-get install coturn)")
        }
        for _ in 0..<20 {
            let candidate = Int.random(in: 20_000..<29_000)
            guard (candidate...(candidate + 41)).allSatisfy(Self.udpPortIsFree) else { continue }
            port = candidate
            var arguments = [
                // -v logs each session and request as it happens ("ALLOCATE processed, success").
                "-n", "-v", "--listening-ip=127.0.0.1", "--relay-ip=127.0.0.1", "--listening-port=\(candidate)",
                "--min-port=\(candidate + 2)", "--max-port=\(candidate + 41)", "--use-auth-secret",
                "--static-auth-secret=\(secret)", "--realm=\(realm)", "--no-tls", "--no-dtls", "--no-cli",
                "--log-file=\(logURL.path)", "--simple-log", "--allow-loopback-peers", "--no-multicast-peers",
                "--pidfile=\(directory.appendingPathComponent("turnserver.pid").path)",
                "--userdb=\(directory.appendingPathComponent("turndb").path)",
            ]
            if let userQuota { arguments.append("--user-quota=\(userQuota)") }
            if let totalQuota { arguments.append("--total-quota=\(totalQuota)") }
            let started = try BackgroundProcess(executable: URL(fileURLWithPath: turnserver), arguments: arguments)
            process = started
            let deadline = Date().addingTimeInterval(timeout)
            while Date() < deadline, started.isRunning {
                if Self.answersBinding(port: candidate) { return }
            }
            stop()
            if Date() >= deadline { break }  // it ran but never answered: no point in other ports
        }
        throw ToolFailure("turnserver did not answer on 127.0.0.1:\(port):\n\(log)")
    }

    deinit {
        stop()
        try? FileManager.default.removeItem(at: directory)
    }

    private var logURL: URL { directory.appendingPathComponent("turnserver.log") }

    /// The log (allocations, refreshes, permissions, 401s) and what turnserver printed.
    public var log: String {
        ((try? String(contentsOf: logURL, encoding: .utf8)) ?? "") + (process?.stdout ?? "") + (process?.stderr ?? "")
    }

    /// Stops turnserver (SIGTERM, SIGKILL after 5 s). Does nothing when it does not run.
    public func stop() {
        guard let process, process.isRunning else { return }
        process.terminate()
        _ = try? process.wait(timeout: 5)
    }

    /// Whether nothing is bound to UDP `port` on 127.0.0.1.
    static func udpPortIsFree(_ port: Int) -> Bool {
        let descriptor = socket(AF_INET, Int32(SOCK_DGRAM.rawValue), 0)
        guard descriptor >= 0 else { return false }
        defer { close(descriptor) }
        var address = loopback(port: port)
        return withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(descriptor, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
        } == 0
    }

    /// Sends a STUN Binding request to 127.0.0.1:`port` and waits 100 ms for any answer.
    static func answersBinding(port: Int) -> Bool {
        let descriptor = socket(AF_INET, Int32(SOCK_DGRAM.rawValue), 0)
        guard descriptor >= 0 else { return false }
        defer { close(descriptor) }
        var address = loopback(port: port)
        // Binding request, length 0, magic cookie, a fixed transaction ID.
        let request: [UInt8] = [0x00, 0x01, 0x00, 0x00, 0x21, 0x12, 0xA4, 0x42] + [UInt8](repeating: 0x5A, count: 12)
        let sent = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                sendto(descriptor, request, request.count, 0, $0, socklen_t(MemoryLayout<sockaddr_in>.size))
            }
        }
        guard sent == request.count else {
            usleep(100_000)
            return false
        }
        var poller = pollfd(fd: descriptor, events: Int16(POLLIN), revents: 0)
        guard poll(&poller, 1, 100) == 1 else { return false }
        var buffer = [UInt8](repeating: 0, count: 1_500)
        return recv(descriptor, &buffer, buffer.count, 0) >= 20
    }

    private static func loopback(port: Int) -> sockaddr_in {
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = UInt16(port).bigEndian
        address.sin_addr.s_addr = UInt32(0x7F00_0001).bigEndian
        return address
    }
}
