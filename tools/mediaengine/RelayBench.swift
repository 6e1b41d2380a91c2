import ArgumentParser
import Foundation
import MediaEngine

/// `mediaengine bench relay`: what a TURN relay costs a client, against the direct path in
/// the same run: per-packet CPU, and the added round-trip delay through coturn on loopback.
struct RelayBench: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "relay",
        abstract: "Measure the TURN relay path (SRTP + ChannelData through coturn) against the direct path: packets/s and added delay.",
        discussion: """
        Starts coturn on 127.0.0.1 (REST-API credentials from a fresh secret), allocates with the engine's \
        TURNClient and binds a channel to a UDP echo peer on loopback. Then, per RTP packet size (172 bytes: a \
        160-byte Opus payload; 1200 bytes: a video packet), it takes packets through the client's paths on one \
        thread for --seconds, direct (SRTP protect + unprotect) and relayed (SRTP protect + ChannelData framing + \
        TURNClient unwrap + unprotect) in alternating blocks, and reports packets per second of CPU for both \
        and their ratio. Last, --packets round trips on each path, interleaved, one packet in flight: client \
        socket to the echo peer and back, and client to coturn to the peer and back through coturn; it reports \
        p50/p90/p99 and what the relay adds. coturn is stopped at the end, also on errors.
        """
    )

    @Option(help: "Seconds of per-packet measurement for each packet size (direct and relay share them).")
    var seconds = 2.0

    @Option(help: "Round trips on each path.")
    var packets = 2_000

    @Option(help: "SRTP profile: AES_CM_128_HMAC_SHA1_80, AES_CM_128_HMAC_SHA1_32 or AEAD_AES_128_GCM.")
    var profile = SRTPProfile.aesCM128HMACSHA1_80.rawValue

    @Flag(help: "Print JSON.")
    var json = false

    /// Whole RTP packets: a 12-byte header and a 160-byte Opus payload (20 ms at 64 kb/s),
    /// and a video packet at a typical payloader's limit.
    static let packetSizes = [172, 1_200]
    /// Round trips on each path before the measured ones.
    static let warmUpRoundTrips = 50
    /// A round trip not answered within this is lost.
    static let roundTripTimeout: Duration = .seconds(2)

    struct PathThroughput: Codable {
        var packets: Int
        /// This thread's CPU time over the path's blocks.
        var cpuSeconds: Double
        var wallSeconds: Double
        /// Packets per second of CPU: what one core takes through the path.
        var packetsPerSecond: Double
        /// What goes on the wire per packet: SRTP, and for the relay ChannelData's header and padding.
        var datagramBytes: Int
    }

    struct SizeResult: Codable {
        var rtpBytes: Int
        var direct: PathThroughput
        var relay: PathThroughput
        /// Relay packets per second over direct: below 1 is the relay's cost.
        var ratio: Double
    }

    struct RoundTrips: Codable {
        var rtpBytes: Int
        /// Milliseconds, as in every bench's report.
        var direct: Spread
        var relay: Spread
        var directLost: Int
        var relayLost: Int
        /// Relay minus direct, µs.
        var addedP50Microseconds: Double
        var addedP99Microseconds: Double
    }

    struct Report: Codable {
        var profile: String
        var server: String
        var relayed: String
        var channel: Int
        var secondsPerSize: Double
        var throughput: [SizeResult]
        var roundTrips: RoundTrips
    }

    func validate() throws {
        guard seconds.isFinite, (0.1...60).contains(seconds) else { throw ValidationError("--seconds \(seconds) must be within 0.1...60") }
        guard (10...100_000).contains(packets) else { throw ValidationError("--packets \(packets) must be within 10...100000") }
        guard SRTPProfile(rawValue: profile) != nil else {
            throw ValidationError("--profile \(profile): use \(SRTPProfile.allCases.map(\.rawValue).joined(separator: ", "))")
        }
    }

    func run() throws {
        Interruption.install()
        let keying = SRTPKeyingMaterial.random(profile: SRTPProfile(rawValue: profile)!)
        let echo = try EchoPeer()
        defer { echo.stop() }
        // A generous bound on the whole run, in case this process dies before `stop`.
        let lifetime = 60 + Int(seconds * 2 * Double(Self.packetSizes.count)) + packets / 50
        let (coturn, relay) = try Self.allocate(lifetime: lifetime)
        defer { coturn.stop() }
        let channel = try relay.turn.bindChannel(to: echo.address, now: relay.now)
        guard try relay.run(timeout: .seconds(5), alive: { coturn.isRunning }, until: { $0.boundChannel(for: echo.address) != nil }) else {
            throw CommandFailure("coturn did not bind channel \(channel) to \(echo.address): \(relay.turn.state)\n\(coturn.log)")
        }
        if !json {
            say("relay bench: \(profile) SRTP; coturn on \(coturn.address) relaying from \(relay.turn.relayedAddress!), "
                + "channel 0x\(String(channel, radix: 16, uppercase: true)) to an echo peer on \(echo.address)")
            say(String(format: "per-packet cost on one thread, %.1f s a size, direct and relay in alternating blocks:", seconds))
        }
        var throughput: [SizeResult] = []
        for size in Self.packetSizes {
            let result = try Self.throughput(size: size, seconds: seconds, keying: keying, turn: relay.turn, peer: echo.address)
            throughput.append(result)
            if !json {
                say(String(format: "  %4d B RTP  direct %9.0f packets/s (%d B datagrams)  relay %9.0f packets/s (%d B)  ratio %.2f (relay / direct)",
                           size, result.direct.packetsPerSecond, result.direct.datagramBytes, result.relay.packetsPerSecond,
                           result.relay.datagramBytes, result.ratio))
            }
        }
        if !json { say("round trips of \(Self.packetSizes[0]) B RTP to the echo peer, \(packets) a path, interleaved, one in flight:") }
        let roundTrips = try Self.roundTrips(size: Self.packetSizes[0], count: packets, keying: keying, relay: relay, peer: echo.address)
        relay.turn.close(now: relay.now)
        _ = try? relay.run(timeout: .seconds(1), alive: { coturn.isRunning }, until: { $0.state == .closed })
        let report = Report(profile: profile, server: "\(coturn.address)", relayed: "\(relay.turn.relayedAddress!)", channel: Int(channel),
                            secondsPerSize: seconds, throughput: throughput, roundTrips: roundTrips)
        if json {
            say(try prettyJSON(report))
        } else {
            for (name, spread, lost) in [("direct", roundTrips.direct, roundTrips.directLost), ("relay ", roundTrips.relay, roundTrips.relayLost)] {
                say("  \(name) " + String(format: "p50 %.0f µs, p90 %.0f µs, p99 %.0f µs, max %.0f µs (n=%d, %d lost)", spread.p50 * 1_000,
                                           spread.p90 * 1_000, spread.p99 * 1_000, spread.max * 1_000, spread.count, lost))
            }
            say(String(format: "  added by the relay: p50 %+.0f µs, p99 %+.0f µs", roundTrips.addedP50Microseconds, roundTrips.addedP99Microseconds))
        }
    }

    /// Starts coturn and allocates through it; another port when coturn exits at once
    /// (its port was taken between the check and the start).
    static func allocate(lifetime: Int) throws -> (LoopbackCoturn, RelayClient) {
        for attempt in 1...5 {
            let coturn = try LoopbackCoturn.start(lifetime: lifetime)
            let credentials = TURNCredentials.restAPI(secret: coturn.configuration.secret, account: "bench",
                                                      expiresAt: Int(Date().timeIntervalSince1970) + lifetime)
            let relay = try RelayClient(server: coturn.address, credentials: credentials)
            relay.turn.start(now: relay.now)
            // The first Allocate may reach coturn before it listens; the client retransmits.
            if try relay.run(timeout: .seconds(5), alive: { coturn.isRunning }, until: { $0.state == .allocated }) {
                return (coturn, relay)
            }
            let exited = !coturn.isRunning
            let log = coturn.log
            coturn.stop()
            if Interruption.requested { throw CommandFailure("interrupted") }
            if exited && attempt < 5 { continue }
            throw CommandFailure("coturn on \(coturn.address) \(exited ? "exited" : "did not allocate: \(relay.turn.state)"):\n\(log)")
        }
        throw CommandFailure("coturn did not start")
    }

    /// Packets of `size` through the direct and the relayed client path on this thread, in
    /// alternating blocks, until `seconds` of CPU are spent.
    static func throughput(size: Int, seconds: Double, keying: SRTPKeyingMaterial, turn: TURNClient, peer: SocketAddress) throws -> SizeResult {
        let direct = try ClientPacketPath(size: size, keying: keying)
        let relayed = try ClientPacketPath(size: size, keying: keying)
        // A local copy with the same channel: the loop then pays no exclusivity checks on
        // a class's property, as a client's own send and receive code would not.
        var turn = turn
        let now = Duration.zero  // ChannelData does not read the clock
        var directBytes = 0
        var relayBytes = 0

        // Warm up, and check both paths give back the packet sent, byte for byte.
        for _ in 0..<256 {
            directBytes = try direct.protectNext()
            let sent = try direct.unprotect(UnsafeMutableRawBufferPointer(rebasing: direct.work[0..<directBytes]))
            relayBytes = try relayed.protectAndFrameNext(&turn, to: peer)
            let frame = UnsafeMutableRawBufferPointer(rebasing: relayed.frame[0..<relayBytes])
            let relayedSent = try relayed.unwrapAndUnprotect(frame, &turn, from: peer, now: now)
            guard sent == direct.sequenceNumber, relayedSent == relayed.sequenceNumber,
                  direct.matchesLastSent(UnsafeRawBufferPointer(rebasing: direct.work[0..<size])),
                  relayed.matchesLastSent(UnsafeRawBufferPointer(rebasing: relayed.frame[TURNChannelData.headerSize..<(TURNChannelData.headerSize + size)]))
            else { throw CommandFailure("\(size) B: a packet did not come back as sent") }
        }

        let block = 1_000
        var totals = [(packets: 0, cpu: 0, wall: Duration.zero), (packets: 0, cpu: 0, wall: Duration.zero)]
        while Double(totals[0].cpu + totals[1].cpu) < seconds * 1e9 {
            if Interruption.requested { throw CommandFailure("interrupted") }
            for path in 0..<2 {
                let wall = ContinuousClock.now
                let cpu = threadCPUNanoseconds()
                if path == 0 {
                    for _ in 0..<block {
                        let length = try direct.protectNext()
                        _ = try direct.unprotect(UnsafeMutableRawBufferPointer(rebasing: direct.work[0..<length]))
                    }
                } else {
                    for _ in 0..<block {
                        let length = try relayed.protectAndFrameNext(&turn, to: peer)
                        let frame = UnsafeMutableRawBufferPointer(rebasing: relayed.frame[0..<length])
                        guard try relayed.unwrapAndUnprotect(frame, &turn, from: peer, now: now) != nil else {
                            throw CommandFailure("\(size) B: TURNClient did not unwrap its own ChannelData")
                        }
                    }
                }
                totals[path].cpu += threadCPUNanoseconds() - cpu
                totals[path].wall += ContinuousClock.now - wall
                totals[path].packets += block
            }
        }
        func result(_ path: Int, bytes: Int) -> PathThroughput {
            let cpu = Double(totals[path].cpu) / 1e9
            return PathThroughput(packets: totals[path].packets, cpuSeconds: cpu, wallSeconds: totals[path].wall / .seconds(1),
                                  packetsPerSecond: Double(totals[path].packets) / cpu, datagramBytes: bytes)
        }
        let directResult = result(0, bytes: directBytes)
        let relayResult = result(1, bytes: relayBytes)
        return SizeResult(rtpBytes: size, direct: directResult, relay: relayResult,
                          ratio: relayResult.packetsPerSecond / directResult.packetsPerSecond)
    }

    /// `count` round trips on each path after a warm-up, alternating which goes first.
    static func roundTrips(size: Int, count: Int, keying: SRTPKeyingMaterial, relay: RelayClient, peer: SocketAddress) throws -> RoundTrips {
        let direct = try ClientPacketPath(size: size, keying: keying)
        let relayed = try ClientPacketPath(size: size, keying: keying)
        var times: [[Duration]] = [[], []]
        var lost = [0, 0]
        var lostInARow = [0, 0]
        for round in 0..<(Self.warmUpRoundTrips + count) {
            if Interruption.requested { throw CommandFailure("interrupted") }
            for path in round % 2 == 0 ? [0, 1] : [1, 0] {
                let time = path == 0 ? try directRoundTrip(direct, relay: relay, peer: peer)
                                     : try relayedRoundTrip(relayed, relay: relay, peer: peer)
                lostInARow[path] = time == nil ? lostInARow[path] + 1 : 0
                // Loopback loses nothing: a path that stops answering is broken, not slow.
                guard lostInARow[path] < 5 else {
                    throw CommandFailure("the \(path == 0 ? "direct" : "relay") path lost 5 round trips in a row (\(relay.turn.state))")
                }
                guard round >= Self.warmUpRoundTrips else { continue }
                if let time { times[path].append(time) } else { lost[path] += 1 }
            }
            // Outside the timed part: TURN refreshes, were a run long enough to need them.
            relay.turn.update(now: relay.now)
            while let action = relay.turn.nextAction() {
                if case .transmit(let bytes) = action { try bytes.withUnsafeBytes { try relay.socket.send($0, to: relay.server) } }
            }
        }
        let directSpread = Spread(times[0])
        let relaySpread = Spread(times[1])
        return RoundTrips(rtpBytes: size, direct: directSpread, relay: relaySpread, directLost: lost[0], relayLost: lost[1],
                          addedP50Microseconds: (relaySpread.p50 - directSpread.p50) * 1_000,
                          addedP99Microseconds: (relaySpread.p99 - directSpread.p99) * 1_000)
    }

    /// Client socket to the echo peer and back; nil when lost.
    static func directRoundTrip(_ path: ClientPacketPath, relay: RelayClient, peer: SocketAddress) throws -> Duration? {
        let start = ContinuousClock.now
        let length = try path.protectNext()
        try relay.socket.send(UnsafeRawBufferPointer(rebasing: path.work[0..<length]), to: peer)
        return try awaitEcho(of: path.sequenceNumber, since: start, relay: relay, into: path.arrival) { count, source in
            guard source == peer else { return nil }
            return try? path.unprotect(UnsafeMutableRawBufferPointer(rebasing: path.arrival[0..<count]))
        }
    }

    /// Client to coturn (ChannelData) to the echo peer, back to coturn and to the client; nil when lost.
    static func relayedRoundTrip(_ path: ClientPacketPath, relay: RelayClient, peer: SocketAddress) throws -> Duration? {
        let start = ContinuousClock.now
        let length = try path.protectAndFrameNext(&relay.turn, to: peer)
        try relay.socket.send(UnsafeRawBufferPointer(rebasing: path.frame[0..<length]), to: relay.server)
        return try awaitEcho(of: path.sequenceNumber, since: start, relay: relay, into: path.arrival) { count, source in
            guard source == relay.server else { return nil }
            let datagram = UnsafeMutableRawBufferPointer(rebasing: path.arrival[0..<count])
            return try? path.unwrapAndUnprotect(datagram, &relay.turn, from: peer, now: relay.now)
        }
    }

    /// Reads datagrams until `read` gives `sequenceNumber` back (late answers to earlier,
    /// lost packets and anything else are passed over) or the timeout passes.
    /// - Returns: The time since `start`; nil on timeout.
    static func awaitEcho(of sequenceNumber: UInt16, since start: ContinuousClock.Instant, relay: RelayClient,
                          into buffer: UnsafeMutableRawBufferPointer, read: (Int, SocketAddress) -> UInt16?) throws -> Duration? {
        let deadline = start + roundTripTimeout
        while true {
            let remaining = deadline - ContinuousClock.now
            guard remaining > .zero, let (count, source) = try relay.receive(into: buffer, timeout: remaining) else { return nil }
            if read(count, source) == sequenceNumber { return ContinuousClock.now - start }
        }
    }
}
