#if canImport(Glibc)
import Glibc
#endif
import Foundation

/// What one run of the `mediaengine` executable printed and returned.
public struct CLIRun: Sendable {
    public var status: Int32
    public var stdout: String
    public var stderr: String
}

/// Runs the built `mediaengine` (or any program) as a user would, in tests.
public enum CLI {
    /// How long a test's signaling client waits to connect to a server the test spawned.
    /// Longer than the client's 10 s default: the client's connect runs on Swift's
    /// cooperative threads, which a full run keeps busy for its first 10 to 14 s (about
    /// 900 tests start at once on two cores, some of them blocking in real time); a test
    /// that got a slot then saw the server listening and still timed out connecting. It
    /// bounds a broken run, it is not what the tests measure.
    public static let connectTimeout: Duration = .seconds(30)

    /// The executable sits next to the test bundle in the build products directory.
    public static var executable: URL {
        var directory = Bundle.main.bundleURL
        if directory.pathExtension == "xctest" { directory.deleteLastPathComponent() }
        return directory.appendingPathComponent("mediaengine")
    }

    /// Runs `mediaengine arguments...` to completion, with `environment` added to ours, in
    /// `directory` (nil: ours).
    public static func run(_ arguments: [String], environment: [String: String] = [:], directory: URL? = nil) throws -> CLIRun {
        let process = try BackgroundProcess(executable: executable, arguments: arguments, environment: environment,
                                            workingDirectory: directory)
        return try process.wait(timeout: 600)
    }

    /// Starts `mediaengine arguments...` without waiting; with `input`, its standard
    /// input takes what `write` sends.
    public static func start(_ arguments: [String], environment: [String: String] = [:], input: Bool = false) throws -> BackgroundProcess {
        try BackgroundProcess(executable: executable, arguments: arguments, environment: environment, input: input)
    }

    /// Starts `mediaengine arguments...` reading standard input from `inputFile`.
    public static func start(_ arguments: [String], inputFile: String) throws -> BackgroundProcess {
        try BackgroundProcess(executable: executable, arguments: arguments, inputFile: inputFile)
    }
}

/// A child process whose output goes to files, so a chatty child can never block on a
/// full pipe, and whose output can be watched while it runs.
///
/// Spawned with `posix_spawn` and an empty signal mask: test runners call from threads
/// that block SIGINT and SIGTERM, and a child inheriting that mask could not be stopped
/// the way a user stops it.
public final class BackgroundProcess: @unchecked Sendable {
    // @unchecked: the pid and paths are set once; a test owns each process.
    /// The process ID (after `wait`, it names nobody, or a later process).
    public let pid: pid_t
    private let directory: URL
    private let outURL: URL
    private let errURL: URL
    private let inURL: URL
    private var status: Int32?

    /// Starts `executable` with `arguments`, and `environment` added to this process's.
    /// With `input`, standard input is a FIFO that `write` feeds (the child holds it open
    /// for writing too, so it never reads an end of file); otherwise /dev/null. It runs in
    /// `workingDirectory` (nil: ours).
    public init(executable: URL, arguments: [String], environment: [String: String] = [:], input: Bool = false,
                inputFile: String? = nil, workingDirectory: URL? = nil) throws {
        directory = FileManager.default.temporaryDirectory.appendingPathComponent("proc-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        outURL = directory.appendingPathComponent("stdout")
        errURL = directory.appendingPathComponent("stderr")
        inURL = directory.appendingPathComponent("stdin")
        if input, mkfifo(inURL.path, 0o600) != 0 {
            throw CocoaError(.fileWriteUnknown, userInfo: [NSLocalizedDescriptionKey: "mkfifo \(inURL.path): \(String(cString: strerror(errno)))"])
        }

        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        if let inputFile {
            posix_spawn_file_actions_addopen(&actions, 0, inputFile, O_RDONLY, 0)
        } else if input {
            posix_spawn_file_actions_addopen(&actions, 0, inURL.path, O_RDWR, 0)
        } else {
            posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0)
        }
        posix_spawn_file_actions_addopen(&actions, 1, outURL.path, O_WRONLY | O_CREAT | O_TRUNC, 0o644)
        posix_spawn_file_actions_addopen(&actions, 2, errURL.path, O_WRONLY | O_CREAT | O_TRUNC, 0o644)
        // Nothing else: swift-nio opens its sockets without close-on-exec, so a child would
        // otherwise keep a listening socket of the test process (another test's server)
        // open for as long as it runs, and that server could not start again on its port.
        guard Self.closeFrom(&actions, 3) == 0 else {
            throw CocoaError(.fileWriteUnknown, userInfo: [NSLocalizedDescriptionKey: "posix_spawn_file_actions_addclosefrom_np failed"])
        }
        if let workingDirectory, Self.changeDirectory(&actions, workingDirectory.path) != 0 {
            throw CocoaError(.fileWriteUnknown, userInfo: [NSLocalizedDescriptionKey: "posix_spawn_file_actions_addchdir_np failed"])
        }

        var attributes = posix_spawnattr_t()
        posix_spawnattr_init(&attributes)
        defer { posix_spawnattr_destroy(&attributes) }
        var noSignals = sigset_t()
        sigemptyset(&noSignals)
        posix_spawnattr_setsigmask(&attributes, &noSignals)
        var defaults = sigset_t()
        sigemptyset(&defaults)
        sigaddset(&defaults, SIGINT)
        sigaddset(&defaults, SIGTERM)
        sigaddset(&defaults, SIGPIPE)
        posix_spawnattr_setsigdefault(&attributes, &defaults)
        posix_spawnattr_setflags(&attributes, Int16(POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF))

        let argv: [UnsafeMutablePointer<CChar>?] = ([executable.path] + arguments).map { strdup($0) } + [nil]
        defer { for pointer in argv { free(pointer) } }
        let variables = ProcessInfo.processInfo.environment.merging(environment) { $1 }
        let envp: [UnsafeMutablePointer<CChar>?] = variables.map { strdup("\($0.key)=\($0.value)") } + [nil]
        defer { for pointer in envp { free(pointer) } }
        var child: pid_t = 0
        let result = posix_spawn(&child, executable.path, &actions, &attributes, argv, envp)
        guard result == 0 else {
            throw CocoaError(.fileNoSuchFile, userInfo: [NSLocalizedDescriptionKey: "cannot start \(executable.path): \(String(cString: strerror(result)))"])
        }
        pid = child
    }

    /// glibc's `posix_spawn_file_actions_addclosefrom_np` (2.34 and later) and
    /// `posix_spawn_file_actions_addchdir_np` (2.29), which Swift's Glibc module does not
    /// import: the child closes every descriptor from the given one up, or changes directory.
    private typealias AddCloseFrom = @convention(c) (UnsafeMutablePointer<posix_spawn_file_actions_t>?, Int32) -> Int32
    private typealias AddChangeDirectory = @convention(c) (UnsafeMutablePointer<posix_spawn_file_actions_t>?, UnsafePointer<CChar>?) -> Int32
    private static let closeFrom = glibc("posix_spawn_file_actions_addclosefrom_np", as: AddCloseFrom.self)
    private static let changeDirectory = glibc("posix_spawn_file_actions_addchdir_np", as: AddChangeDirectory.self)

    private static func glibc<Function>(_ name: String, as type: Function.Type) -> Function {
        guard let symbol = dlsym(UnsafeMutableRawPointer(bitPattern: 0), name) else { fatalError("glibc 2.34 or later is needed (\(name))") }
        return unsafeBitCast(symbol, to: type)
    }

    /// Starts a program found on PATH.
    public convenience init(program: String, arguments: [String]) throws {
        let path = (ProcessInfo.processInfo.environment["PATH"] ?? "/usr/bin:/bin").split(separator: ":")
            .map { "\($0)/\(program)" }.first { FileManager.default.isExecutableFile(atPath: $0) } ?? "/usr/bin/\(program)"
        try self.init(executable: URL(fileURLWithPath: path), arguments: arguments)
    }

    deinit {
        if isRunning {
            kill(pid, SIGKILL)
            _ = reap(block: true)
        }
        try? FileManager.default.removeItem(at: directory)
    }

    /// Sends `text` to the process's standard input (started with `input`).
    /// - Throws: when it was started without `input` or has ended.
    public func write(_ text: String) throws {
        let descriptor = open(inURL.path, O_WRONLY | O_NONBLOCK)
        guard descriptor >= 0 else {
            throw CocoaError(.fileWriteUnknown, userInfo: [NSLocalizedDescriptionKey: "stdin of the process: \(String(cString: strerror(errno)))"])
        }
        defer { close(descriptor) }
        let bytes = Array(text.utf8)
        guard Glibc.write(descriptor, bytes, bytes.count) == bytes.count else {
            throw CocoaError(.fileWriteUnknown, userInfo: [NSLocalizedDescriptionKey: "stdin of the process: \(String(cString: strerror(errno)))"])
        }
    }

    /// Output so far.
    public var stdout: String { Self.text(of: outURL) }
    public var stderr: String { Self.text(of: errURL) }

    /// What a file a process writes holds so far ("" if there is none yet). Not
    /// `String(contentsOf:)`: swift-foundation reads a file of size 0 into a 4 KB buffer it
    /// never frees when nothing is there, a leak per poll of a quiet process's output that
    /// LeakSanitizer reported 1,362 times in one run of the suite.
    public static func text(of url: URL) -> String {
        guard let handle = try? FileHandle(forReadingFrom: url) else { return "" }
        defer { try? handle.close() }
        return String(decoding: (try? handle.readToEnd()) ?? Data(), as: UTF8.self)
    }

    /// Whether the process has not ended yet.
    public var isRunning: Bool { reap(block: false) == nil }

    /// Waits until standard error or output contains `text`.
    /// - Returns: false on timeout or when the process ended without printing it.
    public func waitForOutput(containing text: String, timeout: Double) -> Bool {
        func printed() -> Bool { stderr.contains(text) || stdout.contains(text) }
        eventuallyBlocking(timeout: .seconds(timeout), every: .milliseconds(50)) { printed() || !isRunning }
        return printed()
    }

    /// Waits until standard output holds `text` at least `occurrences` times (a periodic
    /// line: so many seconds of statistics, reports or levels).
    /// - Returns: false on timeout or when the process ended first.
    public func waitForOutput(containing text: String, occurrences: Int, timeout: Double) -> Bool {
        func printed() -> Bool { stdout.components(separatedBy: text).count - 1 >= occurrences }
        eventuallyBlocking(timeout: .seconds(timeout), every: .milliseconds(50)) { printed() || !isRunning }
        return printed()
    }

    /// Sends SIGINT, as Ctrl-C would.
    public func interrupt() {
        if isRunning { kill(pid, SIGINT) }
    }

    /// Sends SIGTERM, as a service manager stopping it would.
    public func terminate() {
        if isRunning { kill(pid, SIGTERM) }
    }

    /// Holds the process off the processor in turns for `duration`, as a machine under load
    /// would: stopped (SIGSTOP) for `stopped`, then running for `running`; it runs freely
    /// after. Blocks the calling thread (a `Heavy.run` test's own).
    public func stutter(for duration: Duration, stopped: Duration, running: Duration) {
        let clock = ContinuousClock()
        let end = clock.now + duration
        defer { if isRunning { kill(pid, SIGCONT) } }
        func pause(_ span: Duration) { usleep(UInt32(span / .microseconds(1))) }
        while clock.now < end && isRunning {
            kill(pid, SIGSTOP)
            pause(stopped)
            kill(pid, SIGCONT)
            pause(running)
        }
    }

    /// Kills the process outright (SIGKILL), as a crash or the OOM killer would.
    public func killNow() {
        if isRunning { kill(pid, SIGKILL) }
    }

    /// Waits for the process to end and returns its output; after `timeout` seconds it is
    /// sent SIGTERM, and SIGKILL 3 s later.
    public func wait(timeout: Double) throws -> CLIRun {
        eventuallyBlocking(timeout: .seconds(timeout)) { !isRunning }
        if isRunning {
            kill(pid, SIGTERM)
            eventuallyBlocking(timeout: .seconds(3)) { !isRunning }
            if isRunning { kill(pid, SIGKILL) }
        }
        let code = reap(block: true) ?? -1
        return CLIRun(status: code, stdout: stdout, stderr: stderr)
    }

    /// The exit status (128 + signal for a killed process), or nil while running.
    private func reap(block: Bool) -> Int32? {
        if let status { return status }
        var raw: Int32 = 0
        let result = waitpid(pid, &raw, block ? 0 : WNOHANG)
        guard result == pid else { return nil }
        // WIFEXITED / WEXITSTATUS / WTERMSIG, which Swift cannot import as macros.
        let signal = raw & 0x7F
        status = signal == 0 ? (raw >> 8) & 0xFF : 128 + signal
        return status
    }
}

/// A fresh directory under the system temporary directory; remove it when done.
public func temporaryDirectory(_ prefix: String = "mediaengine") throws -> URL {
    let url = FileManager.default.temporaryDirectory.appendingPathComponent("\(prefix)-\(UUID().uuidString)")
    try FileManager.default.createDirectory(at: url, withIntermediateDirectories: true)
    return url
}
