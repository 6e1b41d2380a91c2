import Foundation
import MediaEngine
import MediaServer
import Synchronization

/// coturn's `turnserver` on 127.0.0.1 for one run of `bench relay`, started from the
/// server's `CoturnConfiguration` (as the tests' coturn is) with a fresh secret and
/// directory, relaying to loopback peers. It runs under coreutils' `timeout`, so it ends
/// on its own `lifetime` seconds after the start even if this process is killed; `stop()`
/// (or deinit) ends it at once.
final class LoopbackCoturn {
    let configuration: CoturnConfiguration
    private let process: Process

    private init(configuration: CoturnConfiguration, process: Process) {
        self.configuration = configuration
        self.process = process
    }

    deinit { stop() }

    /// Starts turnserver on a free port below the ephemeral range (so no socket bound to
    /// port 0 takes it meanwhile). Returns at once: clients retransmit until it listens.
    /// - Throws: `CommandFailure` when turnserver or timeout is not installed.
    static func start(lifetime: Int) throws -> LoopbackCoturn {
        guard let turnserver = executable("turnserver") else {
            throw CommandFailure("turnserver is not installed (tools/bootstrap installs coturn)")
        }
        guard let timeout = executable("timeout") else { throw CommandFailure("coreutils' timeout is not installed") }
        let free = (0..<100).lazy.map { _ in Int.random(in: 20_000..<32_000) }.first { port in
            guard let socket = try? UDPSocket(bindTo: SocketAddress(host: "127.0.0.1", port: port)) else { return false }
            socket.close()
            return true
        }
        guard let port = free else { throw CommandFailure("coturn: no free UDP port in 20000..<32000") }
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("mediaengine-coturn-\(UInt32.random(in: 0 ... .max))")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        var configuration = CoturnConfiguration(address: "127.0.0.1", port: port, realm: "bench.test",
                                                secret: CoturnConfiguration.randomSecret(), directory: directory.path)
        configuration.allowsLoopbackPeers = true
        configuration.verbose = false
        do {
            try configuration.write()
        } catch {
            try? FileManager.default.removeItem(at: directory)
            throw CommandFailure("cannot write \(configuration.configurationPath): \(error.localizedDescription)")
        }
        let process = Process()
        process.executableURL = timeout
        // timeout forwards our SIGTERM to turnserver and sends SIGKILL 5 s later if needed.
        process.arguments = ["--kill-after=5", String(lifetime), turnserver.path] + configuration.arguments
        process.standardOutput = FileHandle.nullDevice
        process.standardError = FileHandle.nullDevice
        do {
            try process.run()
        } catch {
            try? FileManager.default.removeItem(at: directory)
            throw CommandFailure("cannot start turnserver: \(error)")
        }
        return LoopbackCoturn(configuration: configuration, process: process)
    }

    var address: SocketAddress { (try? SocketAddress(host: configuration.address, port: configuration.port))! }

    var isRunning: Bool { process.isRunning }

    var log: String { (try? String(contentsOfFile: configuration.logPath, encoding: .utf8)) ?? "" }

    /// Stops turnserver and removes its directory. Does nothing the second time.
    func stop() {
        if process.isRunning {
            process.terminate()
            process.waitUntilExit()
        }
        try? FileManager.default.removeItem(atPath: configuration.directory)
    }

    /// A program on PATH or in the sbin directories, which a non-root PATH often lacks.
    private static func executable(_ name: String) -> URL? {
        let path = (ProcessInfo.processInfo.environment["PATH"] ?? "").split(separator: ":").map(String.init)
        return (path + ["/usr/sbin", "/usr/bin", "/sbin", "/bin"]).map { "\($0)/\(name)" }
            .first { FileManager.default.isExecutableFile(atPath: $0) }.map { URL(fileURLWithPath: $0) }
    }
}

/// The client end of a relayed pair: one UDP socket on 127.0.0.1 and a `TURNClient` whose
/// datagrams it moves on the real clock. Direct packets use the same socket.
final class RelayClient {
    let socket: UDPSocket
    var turn: TURNClient
    private let start = ContinuousClock.now
    private var poller: SocketPoller

    init(server: SocketAddress, credentials: TURNCredentials) throws {
        socket = try UDPSocket(bindTo: SocketAddress(host: "127.0.0.1", port: 0))
        poller = SocketPoller(sockets: [socket])
        turn = TURNClient(configuration: .init(server: server, credentials: credentials))
    }

    deinit { socket.close() }

    var now: Duration { ContinuousClock.now - start }
    var server: SocketAddress { turn.configuration.server }

    /// Waits up to `timeout` for a datagram; allocates nothing.
    func receive(into buffer: UnsafeMutableRawBufferPointer, timeout: Duration) throws -> (Int, SocketAddress)? {
        guard try poller.wait(timeout: timeout) != nil else { return nil }
        return try socket.receiveNow(into: buffer)
    }

    /// Sends what the client queued, hands it what arrives and ticks its timers until
    /// `done` holds, `alive` stops holding or `timeout` passes. Data from peers is dropped.
    /// - Returns: whether `done` held.
    func run(timeout: Duration, alive: () -> Bool = { true }, until done: (TURNClient) -> Bool) throws -> Bool {
        var buffer = [UInt8](repeating: 0, count: 2_048)
        let end = now + timeout
        while true {
            while let action = turn.nextAction() {
                if case .transmit(let bytes) = action { try bytes.withUnsafeBytes { try socket.send($0, to: server) } }
            }
            if done(turn) { return true }
            guard now < end, alive(), !Interruption.requested else { return false }
            let wait = min(turn.nextDeadline.map { max($0 - now, .zero) } ?? .milliseconds(20), .milliseconds(20))
            if let (count, source) = try buffer.withUnsafeMutableBytes({ try receive(into: $0, timeout: wait) }) {
                _ = buffer.withUnsafeBytes { turn.receive(UnsafeRawBufferPointer(rebasing: $0[0..<count]), from: source, now: now) }
            }
            turn.update(now: now)
        }
    }
}

/// A UDP echo peer on 127.0.0.1 with a thread of its own: every datagram goes back
/// unchanged to where it came from.
final class EchoPeer: Sendable {
    let socket: UDPSocket
    private let stopping = Atomic<Bool>(false)
    private let finished = DispatchSemaphore(value: 0)

    init() throws {
        socket = try UDPSocket(bindTo: SocketAddress(host: "127.0.0.1", port: 0))
        Thread.detachNewThread { [self] in echo() }
    }

    var address: SocketAddress { socket.localAddress }

    private func echo() {
        defer { finished.signal() }
        var poller = SocketPoller(sockets: [socket])
        let buffer = UnsafeMutableRawBufferPointer.allocate(byteCount: 2_048, alignment: 16)
        defer { buffer.deallocate() }
        while !stopping.load(ordering: .relaxed) {
            guard (try? poller.wait(timeout: .milliseconds(50))) != nil,
                  let (count, source) = try? socket.receiveNow(into: buffer) else { continue }
            try? socket.send(UnsafeRawBufferPointer(rebasing: buffer[0..<count]), to: source)
        }
    }

    /// Ends the thread, then closes the socket. Call once.
    func stop() {
        stopping.store(true, ordering: .relaxed)
        finished.wait()
        socket.close()
    }
}

/// One RTP packet size through the client's SRTP: a prepared plain packet whose sequence
/// number advances for each send, protected in `work`, and the buffers a relayed copy is
/// framed and received in. Made once; nothing here allocates per packet. Not thread-safe.
final class ClientPacketPath {
    /// The plain RTP packet's size.
    let size: Int
    private let plain: UnsafeMutableRawBufferPointer
    /// Where each packet is protected: the packet and SRTP's trailer.
    let work: UnsafeMutableRawBufferPointer
    /// Where a protected packet is framed as ChannelData (header and padding more).
    let frame: UnsafeMutableRawBufferPointer
    /// Where datagrams arrive.
    let arrival: UnsafeMutableRawBufferPointer
    private let outbound: SRTPContext
    private let inbound: SRTPContext
    private(set) var sequenceNumber: UInt16 = 0xFF00  // wraps early, so the rollover counter moves

    init(size: Int, keying: SRTPKeyingMaterial) throws {
        self.size = size
        var random = SystemRandomNumberGenerator()
        let packet = RTPPacket(header: RTPHeader(payloadType: 111, sequenceNumber: 0, timestamp: 48_000, ssrc: 0x5E1A_7000),
                               payload: (12..<size).map { _ in UInt8.random(in: 0 ... .max, using: &random) })
        let bytes = try packet.serialized()
        plain = .allocate(byteCount: size, alignment: 16)
        plain.copyBytes(from: bytes)
        work = .allocate(byteCount: size + SRTPContext.trailerCapacity, alignment: 16)
        frame = .allocate(byteCount: TURNChannelData.size(payloadSize: work.count), alignment: 16)
        arrival = .allocate(byteCount: max(2_048, frame.count), alignment: 16)
        for buffer in [work, frame, arrival] { buffer.initializeMemory(as: UInt8.self, repeating: 0) }
        outbound = try SRTPContext(keying: keying, direction: .outbound)
        inbound = try SRTPContext(keying: keying, direction: .inbound)
    }

    deinit {
        for buffer in [plain, work, frame, arrival] { buffer.deallocate() }
    }

    /// Puts the next packet in `work` and protects it there.
    /// - Returns: The SRTP packet's length.
    @inline(__always)
    func protectNext() throws(SRTPError) -> Int {
        sequenceNumber &+= 1
        plain[2] = UInt8(truncatingIfNeeded: sequenceNumber >> 8)
        plain[3] = UInt8(truncatingIfNeeded: sequenceNumber)
        work.baseAddress!.copyMemory(from: plain.baseAddress!, byteCount: size)
        return try outbound.protect(work, length: size)
    }

    /// Protects the next packet and frames it for `peer` in `frame`, as the client's send
    /// path does for a relayed pair: ChannelData on the bound channel.
    /// - Returns: The datagram's length.
    @inline(__always)
    func protectAndFrameNext(_ turn: inout TURNClient, to peer: SocketAddress) throws -> Int {
        let length = try protectNext()
        return try turn.writeData(UnsafeRawBufferPointer(rebasing: work[0..<length]), to: peer, into: frame)
    }

    /// Unprotects an SRTP packet in place.
    /// - Returns: Its sequence number, checked to be a whole packet of `size`.
    @inline(__always)
    func unprotect(_ packet: UnsafeMutableRawBufferPointer) throws -> UInt16 {
        let length = try inbound.unprotect(packet, length: packet.count)
        guard length == size else { throw CommandFailure("SRTP gave back \(length) bytes of a \(size)-byte packet") }
        return UInt16(packet[2]) << 8 | UInt16(packet[3])
    }

    /// The client's receive path for a relayed pair: `turn` unwraps a datagram from the
    /// server, then its payload is unprotected in place.
    /// - Returns: The sequence number; nil when the datagram is not `peer`'s data.
    @inline(__always)
    func unwrapAndUnprotect(_ datagram: UnsafeMutableRawBufferPointer, _ turn: inout TURNClient, from peer: SocketAddress,
                            now: Duration) throws -> UInt16? {
        let server = turn.configuration.server
        guard case .data(let source, let payload) = turn.receive(UnsafeRawBufferPointer(datagram), from: server, now: now),
              source == peer
        else { return nil }
        return try unprotect(UnsafeMutableRawBufferPointer(rebasing: datagram[payload]))
    }

    /// Whether `packet` (unprotected) is the plain packet last protected, byte for byte.
    func matchesLastSent(_ packet: UnsafeRawBufferPointer) -> Bool {
        packet.count == size && packet.elementsEqual(UnsafeRawBufferPointer(plain))
    }
}

/// CPU time of the calling thread, in ns: unlike the wall clock, it does not run on while
/// another process has the core.
func threadCPUNanoseconds() -> Int {
    var time = timespec()
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &time)
    return time.tv_sec * 1_000_000_000 + time.tv_nsec
}
