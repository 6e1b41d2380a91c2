#if canImport(Glibc)
import Glibc
#endif
import Foundation

/// PostgreSQL (Debian `postgresql`, which `tools/bootstrap` installs) for one test: a
/// cluster `initdb` makes in a temporary directory, run by `pg_ctl` on a loopback port
/// below the ephemeral range (so `restart()` gets it back), with its Unix socket in that
/// directory and password logins (SCRAM) for one superuser.
///
/// initdb refuses to run as root, so as root the cluster belongs to, and runs as, the
/// `postgres` user. `stop()` stops it; deinit stops it and deletes the directory.
///
/// Nothing is synced to disk (`initdb --no-sync`, `fsync=off`): a clean stop or restart
/// keeps every commit, and a full run starts a dozen of these at once: their syncs would
/// load the disk while other tests' servers must answer in time (in one full run two CLI
/// servers went 10 s without answering while these started; the likely cause).
public final class PostgresTestServer: @unchecked Sendable {
    // @unchecked: a test owns its server; `port` and `running` change only in its calls.
    /// The superuser's name and password.
    public let user = "mediaengine"
    public let password: String
    /// The cluster, its socket and its log.
    public let directory: URL
    public private(set) var port = 0
    private var running = false
    private let binaries: URL

    /// Makes the cluster (about a second) and starts it.
    /// - Throws: `PostgresTestServer.Failure` with initdb's or pg_ctl's output.
    public init() throws {
        guard let binaries = Self.binaries() else { throw Failure("no PostgreSQL under /usr/lib/postgresql (tools/bootstrap installs it)") }
        self.binaries = binaries
        password = (0..<24).map { _ in String("abcdefghijkmnopqrstuvwxyz23456789".randomElement()!) }.joined()
        Self.removeLeftovers()
        directory = try temporaryDirectory("postgres")
        try Data(String(getpid()).utf8).write(to: directory.appendingPathComponent(Self.ownerFile))
        let passwordFile = directory.appendingPathComponent("password")
        try Data(password.utf8).write(to: passwordFile)
        if getuid() == 0 {
            _ = try Self.run("/bin/chown", ["-R", "postgres:postgres", directory.path], asPostgres: false)
        }
        _ = try run("initdb", ["-D", data.path, "-U", user, "--pwfile=\(passwordFile.path)", "-A", "scram-sha-256", "-E", "UTF8",
                               "--no-instructions", "--no-sync"])
        try? FileManager.default.removeItem(at: passwordFile)
        try start()
    }

    deinit {
        stop()
        try? FileManager.default.removeItem(at: directory)
    }

    private var data: URL { directory.appendingPathComponent("data") }
    private var log: URL { directory.appendingPathComponent("log") }

    /// `postgres://USER:PASSWORD@127.0.0.1:PORT/DATABASE`.
    public func url(database: String = "postgres", password given: String? = nil) -> String {
        "postgres://\(user):\(given ?? password)@127.0.0.1:\(port)/\(database)"
    }

    /// Starts the server (on its old port after a `stop()`), waiting until it accepts
    /// connections.
    public func start() throws {
        guard !running else { return }
        var candidate = port != 0 ? port : 20_000 + Int.random(in: 0..<10_000)
        while true {
            do {
                _ = try run("pg_ctl", ["-D", data.path, "-l", log.path, "-w", "-t", "30", "-o",
                                       "-p \(candidate) -k \(directory.path) -c listen_addresses=127.0.0.1 \(Self.noDurability)", "start"])
                port = candidate
                running = true
                Self.live.register(data.path)
                return
            } catch let failure as Failure where port == 0 && candidate < 32_000 && logText.contains("could not bind") {
                _ = failure
                candidate += 7  // taken: the next one
            }
        }
    }

    /// Stops the server (fast: open sessions are ended).
    public func stop() {
        guard running else { return }
        running = false
        _ = try? run("pg_ctl", ["-D", data.path, "-w", "-m", "fast", "stop"])
        Self.live.unregister(data.path)
    }

    // MARK: Leftovers

    /// The file in a cluster's directory that names the test process owning it.
    static let ownerFile = "owner"

    /// Clusters this process started and has not stopped. A test that stops its cluster in
    /// an unstructured task (`defer { Task { await cluster.shutdown() } }`) may not get to
    /// it before the test process exits, and pg_ctl's server outlives the process: at
    /// exit, every cluster still here is stopped and deleted.
    final class Live: @unchecked Sendable {
        // @unchecked: `paths` is only touched under `lock`.
        private let lock = NSLock()
        private var paths: Set<String> = []
        private var hooked = false

        func register(_ path: String) {
            lock.lock()
            defer { lock.unlock() }
            paths.insert(path)
            if !hooked {
                hooked = true
                atexit { PostgresTestServer.live.stopAll() }
            }
        }

        func unregister(_ path: String) {
            lock.lock()
            paths.remove(path)
            lock.unlock()
        }

        func stopAll() {
            lock.lock()
            let left = paths
            paths = []
            lock.unlock()
            for path in left {
                PostgresTestServer.stopImmediately(data: path)
                try? FileManager.default.removeItem(at: URL(fileURLWithPath: path).deletingLastPathComponent())
            }
        }
    }

    static let live = Live()

    /// Stops the server of the cluster in `data` at once (no checkpoint: nothing here needs one).
    static func stopImmediately(data path: String) {
        guard let binaries = binaries() else { return }
        _ = try? run(binaries.appendingPathComponent("pg_ctl").path, ["-D", path, "-w", "-m", "immediate", "stop"], asPostgres: getuid() == 0)
    }

    /// Stops and deletes the clusters of test processes that are gone (killed, crashed, or
    /// from before clusters named their owner), as the next cluster starts.
    public static func removeLeftovers() {
        let temporary = FileManager.default.temporaryDirectory
        let names = (try? FileManager.default.contentsOfDirectory(atPath: temporary.path)) ?? []
        for name in names where name.hasPrefix("postgres-") {
            let directory = temporary.appendingPathComponent(name)
            let owner = (try? String(contentsOf: directory.appendingPathComponent(ownerFile), encoding: .utf8)).flatMap { pid_t($0) }
            if let owner, kill(owner, 0) == 0 || errno != ESRCH { continue }  // its process lives: not ours to touch
            let data = directory.appendingPathComponent("data")
            let serving = FileManager.default.fileExists(atPath: data.appendingPathComponent("postmaster.pid").path)
            if owner == nil {
                // From before owner files, or one another process made a moment ago and has
                // not named itself in yet: only an old one that no server runs in goes.
                let modified = (try? FileManager.default.attributesOfItem(atPath: directory.path)[.modificationDate] as? Date) ?? Date()
                guard !serving, Date().timeIntervalSince(modified) > 600 else { continue }
            } else if serving {
                stopImmediately(data: data.path)
            }
            try? FileManager.default.removeItem(at: directory)
        }
    }

    /// Stops and starts it again on the same port.
    public func restart() throws {
        stop()
        try start()
    }

    /// Creates a database.
    public func createDatabase(_ name: String) throws {
        _ = try run("createdb", ["-h", directory.path, "-p", String(port), "-U", user, name], environment: ["PGPASSWORD": password])
    }

    /// Server settings for a cluster that only has to survive clean restarts.
    static let noDurability = "-c fsync=off -c synchronous_commit=off -c full_page_writes=off"

    /// Runs one SQL statement with psql on `database`; its rows, unaligned, one per line.
    public func query(_ sql: String, database: String = "postgres") throws -> String {
        try run("psql", ["-h", directory.path, "-p", String(port), "-U", user, "-d", database, "-At", "-v", "ON_ERROR_STOP=1", "-c", sql],
                environment: ["PGPASSWORD": password])
    }

    /// The server's log so far.
    public var logText: String { (try? String(contentsOf: log, encoding: .utf8)) ?? "" }

    /// An error from initdb, pg_ctl or createdb, with what it printed.
    public struct Failure: Error, CustomStringConvertible {
        public let description: String
        init(_ description: String) { self.description = description }
    }

    private func run(_ program: String, _ arguments: [String], environment: [String: String] = [:]) throws -> String {
        try Self.run(binaries.appendingPathComponent(program).path, arguments, asPostgres: getuid() == 0, environment: environment)
    }

    private static func run(_ executable: String, _ arguments: [String], asPostgres: Bool,
                            environment: [String: String] = [:]) throws -> String {
        let command = asPostgres ? ["/usr/sbin/runuser", "-u", "postgres", "--", executable] + arguments : [executable] + arguments
        let process = try BackgroundProcess(executable: URL(fileURLWithPath: command[0]), arguments: Array(command.dropFirst()),
                                            environment: environment)
        let result = try process.wait(timeout: 60)
        guard result.status == 0 else {
            throw Failure("\(URL(fileURLWithPath: executable).lastPathComponent) exited \(result.status): \(result.stderr)\(result.stdout)")
        }
        return result.stdout
    }

    private static func binaries() -> URL? {
        let root = URL(fileURLWithPath: "/usr/lib/postgresql")
        let versions = (try? FileManager.default.contentsOfDirectory(atPath: root.path)) ?? []
        return versions.compactMap(Int.init).sorted().last.map { root.appendingPathComponent("\($0)/bin") }
    }
}
