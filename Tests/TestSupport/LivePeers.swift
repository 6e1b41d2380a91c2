#if canImport(Glibc)
import Glibc
#endif
import Foundation

// Real live-streaming peers for tests: nginx with the RTMP module and icecast2 (Debian
// packages that `tools/bootstrap` installs), each started with a generated config in a
// temporary directory on a loopback port of its own, and ffmpeg pulling a live URL into
// raw audio and video that the analysis helpers below can check.

/// nginx with the RTMP module (`libnginx-mod-rtmp`), publishing and playing on
/// `rtmp://127.0.0.1:PORT/live/KEY`.
///
/// It runs in the foreground as one process (`daemon off; master_process off`) from a
/// temporary prefix, so it needs no system nginx and leaves none behind. The application
/// has `wait_key on`: a player that joins a running stream starts at its next key frame,
/// after the codec headers, so its first pictures decode. `idle_streams` is left on: a
/// player of a key nobody publishes yet is held (no error) until a publisher comes.
public final class NginxRTMP {
    /// The loopback port, once started; kept across `stop()` so `restart()` reuses it.
    public private(set) var port = 0
    /// The prefix directory: the config, the error log and the pid file.
    public let directory: URL
    private var process: BackgroundProcess?

    static let module = "/usr/lib/nginx/modules/ngx_rtmp_module.so"

    public init() throws {
        directory = try temporaryDirectory("nginx-rtmp")
    }

    deinit {
        stop()
        try? FileManager.default.removeItem(at: directory)
    }

    private var configURL: URL { directory.appendingPathComponent("nginx.conf") }
    private var errorLogURL: URL { directory.appendingPathComponent("error.log") }

    /// The error log (at level info, so it names every publish and play) and what nginx
    /// printed before it opened the log.
    public var log: String {
        BackgroundProcess.text(of: errorLogURL) + (process?.stderr ?? "")
    }

    /// Whether nginx runs.
    public var isRunning: Bool { process?.isRunning ?? false }

    /// Starts nginx listening on 127.0.0.1:`port`, or when nil on a free random port below
    /// the kernel's ephemeral range (see `LivePort`), trying another when that one turns
    /// out to be taken; returns once the port accepts TCP connections.
    /// - Throws: `ToolFailure` with the log when nginx or its module is missing, exits, or
    ///   does not listen within `timeout` seconds.
    public func start(port: Int? = nil, timeout: Double = 10) throws {
        stop()
        guard let nginx = LivePort.executable("nginx") else {
            throw ToolFailure("nginx is not installed (tools/bootstrap installs it)")
        }
        guard FileManager.default.fileExists(atPath: Self.module) else {
            throw ToolFailure("\(Self.module) is missing (tools/bootstrap installs libnginx-mod-rtmp)")
        }
        try LivePort.start(port: port, timeout: timeout, name: "nginx-rtmp") { candidate in
            self.port = candidate
            try? FileManager.default.removeItem(at: errorLogURL)
            try config(port: candidate).write(to: configURL, atomically: true, encoding: .utf8)
            let started = try BackgroundProcess(executable: nginx, arguments: ["-c", configURL.path, "-p", directory.path])
            process = started
            return (started, { self.log })
        }
    }

    /// Starts it again on the same port, as after a crash or a deploy; stops it first if it
    /// still runs. The port is below the ephemeral range, so while nginx was down no
    /// outgoing connection can have taken it; nginx binds with SO_REUSEADDR, so the
    /// connections it dropped (now in TIME_WAIT) do not hold it either.
    /// - Throws: `ToolFailure` when it was never started or cannot listen again.
    public func restart(timeout: Double = 10) throws {
        guard port != 0 else { throw ToolFailure("nginx-rtmp restart before its first start") }
        try start(port: port, timeout: timeout)
    }

    /// Stops nginx (SIGTERM: fast shutdown, every connection dropped) and waits for it to
    /// end (SIGKILL after `timeout` seconds). Does nothing when it does not run.
    public func stop(timeout: Double = 10) {
        guard let process, process.isRunning else { return }
        process.terminate()
        _ = try? process.wait(timeout: timeout)
    }

    /// The URL to publish or play the stream `key`.
    public func url(key: String) -> String { "rtmp://127.0.0.1:\(port)/live/\(key)" }

    /// Waits until a publisher of `key` has come since the last start (nginx logs
    /// `publish: name='KEY'`), so a player started then joins a running stream.
    /// - Returns: false on timeout.
    public func waitForPublisher(key: String, timeout: Double) -> Bool {
        eventuallyBlocking(timeout: .seconds(timeout), every: .milliseconds(50)) { self.log.contains("publish: name='\(key)'") }
    }

    /// Waits until a player of `key` has asked for it since the last start (nginx logs
    /// `play: name='KEY'`), so a publisher started then reaches it from its first packet.
    /// - Returns: false on timeout.
    public func waitForPlayer(key: String, timeout: Double) -> Bool {
        eventuallyBlocking(timeout: .seconds(timeout), every: .milliseconds(50)) { self.log.contains("play: name='\(key)'") }
    }

    private func config(port: Int) -> String {
        """
        load_module \(Self.module);
        daemon off;
        master_process off;
        error_log \(errorLogURL.path) info;
        pid \(directory.appendingPathComponent("nginx.pid").path);
        events {
            worker_connections 256;
        }
        rtmp {
            server {
                listen 127.0.0.1:\(port);
                application live {
                    live on;
                    record off;
                    wait_key on;
                }
            }
        }

        """
    }
}

/// icecast2, taking sources at `icecast://source:PASSWORD@127.0.0.1:PORT/MOUNT` and
/// serving listeners at `http://127.0.0.1:PORT/MOUNT`.
///
/// A source must name its content type (`-content_type video/webm` for ffmpeg): without
/// one ffmpeg says audio/mpeg, icecast serves the bytes as audio/mpeg through its generic
/// handler, and a listener joining later gets no WebM header. A listener of a mount
/// nobody feeds gets 404 at once, so pull only after `waitForMount`. A listener that
/// joins gets the stream's header (for WebM the EBML header and tracks) and a burst of
/// recent data first, so it starts quickly and ahead of real time.
public final class Icecast {
    /// The loopback port, once started; kept across `stop()` so `restart()` reuses it.
    public private(set) var port = 0
    /// The password of user `source`, fresh for each server.
    public let password: String
    /// The config and the access log; owned by icecast's user when running as root.
    public let directory: URL
    private var process: BackgroundProcess?

    /// The user and group of Debian's icecast2 package, which icecast changes to after
    /// binding: it refuses to run as root.
    static let user = "icecast2"
    static let group = "icecast"

    public init() throws {
        directory = try temporaryDirectory("icecast")
        password = String(UUID().uuidString.replacingOccurrences(of: "-", with: "").lowercased().prefix(20))
    }

    deinit {
        stop()
        try? FileManager.default.removeItem(at: directory)
    }

    private var configURL: URL { directory.appendingPathComponent("icecast.xml") }

    /// What icecast logged (its error log goes to standard error).
    public var log: String { process?.stderr ?? "" }

    /// Whether icecast runs.
    public var isRunning: Bool { process?.isRunning ?? false }

    /// Starts icecast2 on 127.0.0.1:`port`, or when nil on a free random port below the
    /// ephemeral range, trying another when that one turns out to be taken; returns once
    /// the port accepts TCP connections.
    /// - Throws: `ToolFailure` with the log when icecast2 or its user is missing, it
    ///   exits, or does not listen within `timeout` seconds.
    public func start(port: Int? = nil, timeout: Double = 10) throws {
        stop()
        guard let icecast = LivePort.executable("icecast2") else {
            throw ToolFailure("icecast2 is not installed (tools/bootstrap installs it)")
        }
        let owner = try self.owner()
        try LivePort.start(port: port, timeout: timeout, name: "icecast2") { candidate in
            self.port = candidate
            try config(port: candidate, changeOwner: owner != nil).write(to: configURL, atomically: true, encoding: .utf8)
            if let owner {
                // icecast opens its logs after dropping to its user.
                for path in [directory.path, configURL.path] where chown(path, owner.uid, owner.gid) != 0 {
                    throw ToolFailure("chown \(path) to \(Self.user): \(String(cString: strerror(errno)))")
                }
            }
            let started = try BackgroundProcess(executable: icecast, arguments: ["-c", configURL.path])
            process = started
            return (started, { self.log })
        }
    }

    /// Starts it again on the same port; stops it first if it still runs.
    /// - Throws: `ToolFailure` when it was never started or cannot listen again.
    public func restart(timeout: Double = 10) throws {
        guard port != 0 else { throw ToolFailure("icecast2 restart before its first start") }
        try start(port: port, timeout: timeout)
    }

    /// Stops icecast (SIGTERM) and waits for it to end (SIGKILL after `timeout` seconds).
    public func stop(timeout: Double = 10) {
        guard let process, process.isRunning else { return }
        process.terminate()
        _ = try? process.wait(timeout: timeout)
    }

    /// Where a source (ffmpeg's icecast protocol) publishes `mount` ("live.webm" or "/live.webm").
    public func sourceURL(mount: String) -> String {
        "icecast://source:\(password)@127.0.0.1:\(port)/\(Self.trimmed(mount))"
    }

    /// Where a listener plays `mount`.
    public func listenURL(mount: String) -> String { "http://127.0.0.1:\(port)/\(Self.trimmed(mount))" }

    /// Waits until `mount` has a source: a GET of it answers 200 (404 before).
    /// - Returns: false on timeout.
    public func waitForMount(_ mount: String, timeout: Double) -> Bool {
        eventuallyBlocking(timeout: .seconds(timeout), every: .milliseconds(50)) { LivePort.httpStatus(port: self.port, path: "/" + Self.trimmed(mount)) == 200 }
    }

    private static func trimmed(_ mount: String) -> String {
        String(mount.drop { $0 == "/" })
    }

    /// The uid and gid to hand the directory to when running as root; nil otherwise.
    private func owner() throws -> (uid: uid_t, gid: gid_t)? {
        guard geteuid() == 0 else { return nil }
        guard let user = getpwnam(Self.user), let group = getgrnam(Self.group) else {
            throw ToolFailure("user \(Self.user) or group \(Self.group) is missing (Debian's icecast2 package creates them)")
        }
        return (user.pointee.pw_uid, group.pointee.gr_gid)
    }

    private func config(port: Int, changeOwner: Bool) -> String {
        // Debian's package ships the web and admin stylesheets in /usr/share/icecast2.
        """
        <icecast>
            <location>MediaEngine tests</location>
            <admin>tests@localhost</admin>
            <hostname>127.0.0.1</hostname>
            <limits>
                <clients>64</clients>
                <sources>16</sources>
                <queue-size>4194304</queue-size>
                <client-timeout>30</client-timeout>
                <header-timeout>15</header-timeout>
                <source-timeout>10</source-timeout>
                <burst-on-connect>1</burst-on-connect>
                <burst-size>65536</burst-size>
            </limits>
            <authentication>
                <source-password>\(password)</source-password>
                <relay-password>\(password)</relay-password>
                <admin-user>admin</admin-user>
                <admin-password>\(password)</admin-password>
            </authentication>
            <listen-socket>
                <port>\(port)</port>
                <bind-address>127.0.0.1</bind-address>
            </listen-socket>
            <fileserve>1</fileserve>
            <paths>
                <basedir>/usr/share/icecast2</basedir>
                <logdir>\(directory.path)</logdir>
                <webroot>/usr/share/icecast2/web</webroot>
                <adminroot>/usr/share/icecast2/admin</adminroot>
                <pidfile>\(directory.appendingPathComponent("icecast.pid").path)</pidfile>
            </paths>
            <logging>
                <accesslog>access.log</accesslog>
                <errorlog>-</errorlog>
                <loglevel>3</loglevel>
            </logging>
            <security>
                <chroot>0</chroot>
                \(changeOwner ? "<changeowner><user>\(Self.user)</user><group>\(Self.group)</group></changeowner>" : "")
            </security>
        </icecast>

        """
    }
}

/// Loopback TCP ports for the peers.
public enum LivePort {
    /// Ports for servers that a test may restart on the same port: below the kernel's
    /// ephemeral range (32768 and up), so while the server is down no socket bound to
    /// port 0 and no outgoing connection can take the number.
    public static let stableRange = 20_000..<32_000

    /// Whether nothing is bound to TCP `port` on 127.0.0.1 (or the wildcard address): a
    /// bind without SO_REUSEADDR succeeds. With `reusingAddress`, a bind with it, as
    /// servers do: connections of a stopped server in TIME_WAIT no longer count, a
    /// listener does.
    public static func isFree(_ port: Int, reusingAddress: Bool = false) -> Bool {
        withSocket { socket in
            var on: Int32 = 1
            if reusingAddress { setsockopt(socket, SOL_SOCKET, SO_REUSEADDR, &on, socklen_t(MemoryLayout<Int32>.size)) }
            var address = loopback(port)
            return withUnsafePointer(to: &address) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(socket, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) == 0 }
            }
        } ?? false
    }

    /// Whether something accepts TCP connections on 127.0.0.1:`port`.
    public static func acceptsConnections(_ port: Int) -> Bool {
        withSocket { socket in connect(socket, port: port) } ?? false
    }

    /// The status code of `GET path` on 127.0.0.1:`port` (HTTP/1.0), or nil when nothing
    /// answers within 2 s. Reads only the status line.
    public static func httpStatus(port: Int, path: String) -> Int? {
        withSocket { socket -> Int? in
            var limit = timeval(tv_sec: 2, tv_usec: 0)
            setsockopt(socket, SOL_SOCKET, SO_RCVTIMEO, &limit, socklen_t(MemoryLayout<timeval>.size))
            setsockopt(socket, SOL_SOCKET, SO_SNDTIMEO, &limit, socklen_t(MemoryLayout<timeval>.size))
            guard connect(socket, port: port) else { return nil }
            let request = Array("GET \(path) HTTP/1.0\r\nHost: 127.0.0.1:\(port)\r\n\r\n".utf8)
            guard send(socket, request, request.count, Int32(MSG_NOSIGNAL)) == request.count else { return nil }
            var reply: [UInt8] = []
            var buffer = [UInt8](repeating: 0, count: 256)
            while !reply.contains(UInt8(ascii: "\n")) && reply.count < 4096 {
                let count = recv(socket, &buffer, buffer.count, 0)
                guard count > 0 else { break }
                reply += buffer[0..<count]
            }
            // "HTTP/1.0 200 OK"
            let line = String(decoding: reply.prefix { $0 != UInt8(ascii: "\r") && $0 != UInt8(ascii: "\n") }, as: UTF8.self)
            let fields = line.split(separator: " ")
            return fields.count >= 2 && fields[0].hasPrefix("HTTP/") ? Int(fields[1]) : nil
        } ?? nil
    }

    /// A program on PATH or in the sbin directories (nginx lives in /usr/sbin, which a
    /// non-root PATH often lacks).
    static func executable(_ name: String) -> URL? {
        let path = (ProcessInfo.processInfo.environment["PATH"] ?? "").split(separator: ":").map(String.init)
        return (path + ["/usr/sbin", "/usr/bin", "/sbin", "/bin"]).map { "\($0)/\(name)" }
            .first { FileManager.default.isExecutableFile(atPath: $0) }.map { URL(fileURLWithPath: $0) }
    }

    /// Starts a server with `launch(port)` and waits until the port accepts connections.
    /// A given `port` must be free but for connections in TIME_WAIT. With none given, a
    /// random free one in `stableRange`, and another (up to 20 tries) when the server
    /// reports the port taken (another process bound it between the check and the start).
    static func start(port: Int?, timeout: Double, name: String,
                      launch: (Int) throws -> (process: BackgroundProcess, log: () -> String)) throws {
        var failures: [String] = []
        for _ in 0..<(port == nil ? 20 : 1) {
            let candidate: Int
            if let port {
                // Else the port would accept connections for the process holding it.
                guard isFree(port, reusingAddress: true) else {
                    throw ToolFailure("\(name): 127.0.0.1:\(port) is taken (Address already in use)")
                }
                candidate = port
            } else {
                guard let free = (0..<100).lazy.map({ _ in Int.random(in: stableRange) }).first(where: { isFree($0) }) else {
                    throw ToolFailure("\(name): no free port in \(stableRange)")
                }
                candidate = free
            }
            let (process, log) = try launch(candidate)
            eventuallyBlocking(timeout: .seconds(timeout)) { !process.isRunning || acceptsConnections(candidate) }
            if process.isRunning && acceptsConnections(candidate) { return }
            let running = process.isRunning
            process.terminate()
            let output = try process.wait(timeout: 5)
            let text = log() + output.stdout + output.stderr
            if running {
                throw ToolFailure("\(name) did not listen on 127.0.0.1:\(candidate) within \(timeout) s:\n\(text)")
            }
            let taken = ["Address already in use", "Could not create listener socket", "No listening sockets"].contains { text.contains($0) }
            guard taken, port == nil else {
                throw ToolFailure("\(name) on 127.0.0.1:\(candidate) exited with status \(output.status):\n\(text)")
            }
            failures.append("\(candidate)")
        }
        throw ToolFailure("\(name): ports \(failures.joined(separator: ", ")) were all taken")
    }

    private static func loopback(_ port: Int) -> sockaddr_in {
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = in_port_t(UInt16(clamping: port).bigEndian)
        address.sin_addr = in_addr(s_addr: inet_addr("127.0.0.1"))
        return address
    }

    private static func connect(_ socket: Int32, port: Int) -> Bool {
        var address = loopback(port)
        return withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { Glibc.connect(socket, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) == 0 }
        }
    }

    /// Runs `body` with a fresh TCP socket and closes it; nil when none can be made.
    private static func withSocket<T>(_ body: (Int32) -> T) -> T? {
        let socket = Glibc.socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard socket >= 0 else { return nil }
        defer { close(socket) }
        return body(socket)
    }
}

/// ffmpeg as a player of a live URL (RTMP from nginx-rtmp, HTTP from icecast), writing
/// what it decodes as raw files for the analysis helpers:
///
/// - audio: `s16le`, mono, 48000 Hz (`readS16`);
/// - video (optional): `rawvideo` `rgb24` scaled to `videoSize` at `frameRate` frames per
///   second (`readRGBFrames`).
///
/// `seconds` is an input duration (`-t` before `-i`): ffmpeg stops after that much stream
/// time from the first packet it gets, however late it joined, and finishes its files.
///
/// When it starts matters:
/// - nginx-rtmp holds a player of a key nobody publishes yet (no error) and feeds it when
///   a publisher comes, so a pull may start before the push; it gives up when no byte
///   arrives within `readTimeout` (ffmpeg's `-rw_timeout`), exiting 1 with "Input/output
///   error". A pull that joins a running stream gets the codec headers and starts at the
///   next key frame (`wait_key on`), so publish with short key-frame intervals.
/// - icecast answers 404 for a mount without a source, so pull after `waitForMount`.
/// - When the publisher leaves before `seconds` are pulled, ffmpeg does not end at once:
///   it gives up after several read timeouts (measured with nginx-rtmp: about 4 ×
///   `readTimeout`), keeping what it had. Pull for less time than the push lasts.
public enum Pull {
    /// ffmpeg's arguments for a pull.
    public static func arguments(url: String, seconds: Double, audioTo: String, videoTo: String?, videoSize: (Int, Int),
                                 frameRate: Int = 5, readTimeout: Double = 5) -> [String] {
        var arguments = ["-hide_banner", "-loglevel", "error", "-nostdin",
                         "-rw_timeout", String(Int(readTimeout * 1_000_000)), "-t", String(seconds), "-i", url,
                         "-map", "0:a:0", "-ac", "1", "-ar", "48000", "-c:a", "pcm_s16le", "-f", "s16le", "-y", audioTo]
        if let videoTo {
            arguments += ["-map", "0:v:0", "-vf", "scale=\(videoSize.0):\(videoSize.1)", "-r", String(frameRate),
                          "-pix_fmt", "rgb24", "-c:v", "rawvideo", "-f", "rawvideo", "-y", videoTo]
        }
        return arguments
    }

    /// Starts the pull without waiting; `wait(timeout:)` on the process collects it.
    public static func start(url: String, seconds: Double, audioTo: String, videoTo: String?, videoSize: (Int, Int),
                             frameRate: Int = 5, readTimeout: Double = 5) throws -> BackgroundProcess {
        try BackgroundProcess(program: "ffmpeg", arguments: arguments(url: url, seconds: seconds, audioTo: audioTo, videoTo: videoTo,
                                                                      videoSize: videoSize, frameRate: frameRate, readTimeout: readTimeout))
    }

    /// Pulls and returns when ffmpeg has ended; ffmpeg is stopped after `seconds` plus
    /// five read timeouts plus 10 s (a pull that outlived its publisher ends before).
    /// - Throws: `ToolFailure` with ffmpeg's errors when it exits unsuccessfully.
    @discardableResult
    public static func run(url: String, seconds: Double, audioTo: String, videoTo: String?, videoSize: (Int, Int),
                           frameRate: Int = 5, readTimeout: Double = 5) throws -> CLIRun {
        let process = try start(url: url, seconds: seconds, audioTo: audioTo, videoTo: videoTo, videoSize: videoSize,
                                frameRate: frameRate, readTimeout: readTimeout)
        let run = try process.wait(timeout: seconds + 5 * readTimeout + 10)
        guard run.status == 0 else { throw ToolFailure("ffmpeg pulling \(url): exit \(run.status): \(run.stderr)") }
        return run
    }
}

/// The amplitude of the `frequency` component of `samples`, as a fraction of full scale:
/// a full-scale sine at that frequency gives about 1.0, one at -18 dBFS (ffmpeg's `sine`
/// source, amplitude 1/8) about 0.125, silence and other tones about 0.
///
/// A Goertzel filter at exactly `frequency` over the Hann-windowed samples, scaled by
/// 2 / Σwindow / 32768; the window keeps a tone a few hertz away from leaking in.
/// Returns 0 for fewer than two samples or a non-positive rate.
public func toneLevel(_ samples: some Collection<Int16>, frequency: Double, sampleRate: Double) -> Double {
    let count = samples.count
    guard count > 1, sampleRate > 0 else { return 0 }
    let omega = 2 * Double.pi * frequency / sampleRate
    let coefficient = 2 * cos(omega)
    var (previous, beforePrevious, windowSum) = (0.0, 0.0, 0.0)
    for (index, sample) in samples.enumerated() {
        let window = 0.5 - 0.5 * cos(2 * Double.pi * Double(index) / Double(count - 1))
        windowSum += window
        let current = window * Double(sample) + coefficient * previous - beforePrevious
        beforePrevious = previous
        previous = current
    }
    let power = previous * previous + beforePrevious * beforePrevious - coefficient * previous * beforePrevious
    return 2 * max(0, power).squareRoot() / max(windowSum, .leastNonzeroMagnitude) / 32_768
}

/// The samples of a raw `s16le` file (a trailing odd byte is ignored).
/// - Throws: when the file cannot be read.
public func readS16(_ path: String) throws -> [Int16] {
    let data = try Data(contentsOf: URL(fileURLWithPath: path))
    return data.withUnsafeBytes { raw in
        (0..<data.count / 2).map { Int16(littleEndian: raw.loadUnaligned(fromByteOffset: $0 * 2, as: Int16.self)) }
    }
}

/// The whole frames of a raw `rgb24` file of `width` x `height` pictures (a partial last
/// frame is dropped), each `width * height * 3` bytes, rows top to bottom.
/// - Throws: `ToolFailure` for a size that is not positive; file errors.
public func readRGBFrames(_ path: String, width: Int, height: Int) throws -> [[UInt8]] {
    guard width > 0, height > 0 else { throw ToolFailure("readRGBFrames: bad size \(width)x\(height)") }
    let bytes = [UInt8](try Data(contentsOf: URL(fileURLWithPath: path)))
    let size = width * height * 3
    return stride(from: 0, to: bytes.count - size + 1, by: size).map { Array(bytes[$0..<$0 + size]) }
}

/// The average colour of a rectangle of an `rgb24` frame, its corners given as fractions
/// of the frame (0...1; x from the left, y from the top; clamped). Pixels whose centres
/// fall inside count; a rectangle too thin for any takes the one nearest its start.
/// Returns NaNs when the frame is shorter than `width * height * 3` bytes or the size is
/// not positive, so checks against colours fail.
public func regionAverage(_ frame: [UInt8], width: Int, height: Int, x0: Double, y0: Double, x1: Double, y1: Double)
    -> (r: Double, g: Double, b: Double) {
    guard width > 0, height > 0, frame.count >= width * height * 3 else { return (.nan, .nan, .nan) }
    func pixels(_ from: Double, _ to: Double, _ size: Int) -> Range<Int> {
        let (low, high) = (min(max(min(from, to), 0), 1), min(max(max(from, to), 0), 1))
        let first = min(Int((low * Double(size) - 0.5).rounded(.up)), size - 1)
        let end = max(Int((high * Double(size) - 0.5).rounded(.down)) + 1, first + 1)
        return max(first, 0)..<min(end, size)
    }
    let (columns, rows) = (pixels(x0, x1, width), pixels(y0, y1, height))
    var sums = (0.0, 0.0, 0.0)
    for row in rows {
        for column in columns {
            let offset = (row * width + column) * 3
            sums.0 += Double(frame[offset])
            sums.1 += Double(frame[offset + 1])
            sums.2 += Double(frame[offset + 2])
        }
    }
    let count = Double(columns.count * rows.count)
    return (sums.0 / count, sums.1 / count, sums.2 / count)
}
