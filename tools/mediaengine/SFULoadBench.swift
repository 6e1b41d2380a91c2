import ArgumentParser
import Foundation
import MediaEngine
import MediaServer
import Signaling

/// `mediaengine bench sfu`: synthetic participants in this process load a server's
/// forwarding server (like LiveKit's `lk load-test`): publishers send audio (and video)
/// packets, every participant receives what the server forwards, and the report gives
/// forwarded packets/s, the server's CPU, per-subscriber loss and forwarding latency.
struct SFULoadBench: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "sfu",
        abstract: "Load the forwarding server (SFU) with synthetic meeting participants and measure it.",
        discussion: """
        Starts `mediaengine server` as a child process (or loads --server, minting tokens from --secret-file), \
        reserves a meeting, joins --publishers actors and --subscribers audience participants, and runs them for \
        --seconds: every publisher sends 50 audio packets a second (and with --video 30 frames of two 900-byte \
        packets, about 430 kb/s), the audio stamped with its send time; every participant receives the other publishers' streams raw \
        (no decoding). Reports forwarded packets/s, the server process's CPU (of one core), subscriber streams per \
        core, per-subscriber loss, forwarding latency (send to arrival, on loopback) percentiles, and the server's resident \
        memory per leg.
        """
    )

    @Option(help: "Signaling server to load (default: start one as a child process).")
    var server: String?

    @Option(help: "The server's secret file, to mint the participants' tokens (with --server).")
    var secretFile: String?

    @Option(help: "The server's process ID, for its CPU (with --server).")
    var serverPID: Int32?

    @Option(help: "Participants that send (and receive).")
    var publishers = 3

    @Option(help: "Participants that only receive (audience).")
    var subscribers = 3

    @Flag(help: "Publishers send video too (30 frames of 1,800 bytes a second, about 430 kb/s).")
    var video = false

    @Option(help: "Of the publishers, how many send video too (default: all with --video, else none); the rest send audio only.")
    var videoPublishers: Int?

    @Option(help: "The child server's forwarding threads (--media-threads; default: the machine's cores).")
    var threads: Int?

    @Option(help: ArgumentHelp("The child server's forwarding threads run under SCHED_FIFO at this priority (--media-realtime-priority, "
        + "1...99): ahead of this tool's participants on the same cores, as on a server of its own.", valueName: "priority"))
    var realtimePriority: Int32?

    @Flag(help: "Video publishers send three simulcast layers (320x180, 640x360, 1280x720: frames of 150, 500 and 1,800 bytes, about 36, 120 and 430 kb/s); each subscriber gets one.")
    var simulcast = false

    @Flag(inversion: .prefixedNo, help: "Take video retransmissions on RTX, as our clients do (else plain ones, each subscriber stream keeping its own history on the server).")
    var rtx = true

    @Option(help: "Seconds of media.")
    var seconds: Double = 10

    @Flag(help: "Print JSON.")
    var json = false

    func validate() throws {
        guard (1...200).contains(publishers) else { throw ValidationError("--publishers \(publishers) must be within 1...200") }
        guard (0...1_000).contains(subscribers) else { throw ValidationError("--subscribers \(subscribers) must be within 0...1000") }
        guard seconds >= 1 && seconds <= 3_600 else { throw ValidationError("--seconds \(seconds) must be within 1...3600") }
        if server != nil && secretFile == nil { throw ValidationError("--server needs --secret-file to mint tokens") }
        if simulcast && !video && (videoPublishers ?? 0) == 0 { throw ValidationError("--simulcast needs video (--video or --video-publishers)") }
        if let videoPublishers, !(0...publishers).contains(videoPublishers) {
            throw ValidationError("--video-publishers \(videoPublishers) must be within 0...\(publishers) (the --publishers)")
        }
        if let threads {
            guard (1...256).contains(threads) else { throw ValidationError("--threads \(threads) must be within 1...256") }
            guard server == nil else { throw ValidationError("--threads sets the child server's; --server runs with its own") }
        }
        if let realtimePriority {
            guard (1...99).contains(realtimePriority) else { throw ValidationError("--realtime-priority \(realtimePriority) must be within 1...99") }
            guard server == nil else { throw ValidationError("--realtime-priority sets the child server's; --server runs with its own") }
        }
    }

    struct Report: Codable {
        var publishers: Int
        var subscribers: Int
        var video: Bool
        var videoPublishers: Int
        var simulcast: Bool
        /// The server's forwarding threads, and each one's CPU over the run (of one core).
        var serverThreads: Int?
        var serverThreadCPU: [Double]?
        /// The forwarding threads' SCHED_FIFO priority (`--realtime-priority`); nil: ordinary.
        var serverRealtimePriority: Int32?
        var seconds: Double
        /// Streams the server forwards: each receiver times each other publisher's streams.
        var subscriberStreams: Int
        var packetsSent: Int
        var packetsReceived: Int
        var forwardedPacketsPerSecond: Double
        /// Of one core, over the run.
        var serverCPU: Double?
        var subscriberStreamsPerCore: Double?
        var worstSubscriberLossPercent: Double
        var meanSubscriberLossPercent: Double
        var subscribersAboveOnePercent: Int
        var latency: Spread
        /// The server's resident memory 5 s into the run (or at its start, if shorter), at
        /// the end, and at its highest, sampled each second.
        var serverResidentMegabytesEarly: Double?
        var serverResidentMegabytes: Double?
        var serverResidentMegabytesPeak: Double?
        /// Inside the server, arrival (recvmmsg) to send (sendmmsg), per forwarded packet:
        /// p50, p99 and p99.9 in µs (a child server only).
        var serverForwardingLatencyMicroseconds: [Double]?
        /// The server's resident memory once the first participant joined (the meeting and
        /// the forwarding server exist), and what each further leg added by the early
        /// sample, media flowing: (early - that) / (participants - 1), in KiB. An upper
        /// bound: it includes whatever else the server allocated meanwhile.
        var serverResidentMegabytesFirstJoin: Double?
        var serverKilobytesPerLeg: Double?
    }

    func run() async throws {
        raiseFileLimit(to: (publishers + subscribers) * 4 + 256)
        // The child stops itself a while after the run even if this process is killed.
        let child = server == nil
            ? try ChildServer.start(lifetime: seconds + 120, options: (threads.map { ["--media-threads", String($0)] } ?? [])
                + (realtimePriority.map { ["--media-realtime-priority", String($0)] } ?? [])) : nil
        defer { child?.stop() }
        let url = server ?? child!.url
        let secretPath = secretFile ?? child!.secretPath
        let pid = serverPID ?? child?.pid
        let authority = await TokenAuthority(secret: try ServerSecret.load(path: secretPath, create: false))
        let name = "load-\(UInt32.random(in: 0 ... .max))"
        if !json { say("loading \(url) with \(publishers) publishers and \(subscribers) subscribers for \(seconds) s") }

        // Join everyone (signaling), then run the media on one thread. With any video, the
        // audience joins for video (it receives it); audio-only publishers join for audio.
        let videoSenders = videoPublishers ?? (video ? publishers : 0)
        var participants: [SyntheticParticipant] = []
        var firstJoin: Double?
        for index in 0..<(publishers + subscribers) {
            let publishing = index < publishers
            let account = publishing ? "pub\(index)" : "sub\(index - publishers)"
            let withVideo = publishing ? index < videoSenders : videoSenders > 0
            let participant = try SyntheticParticipant(account: account, publishing: publishing, video: withVideo, rtx: rtx,
                                                       simulcast: simulcast && publishing && withVideo)
            let token = try await authority.mint(account: account, lifetime: .seconds(3_600))
            let client = try await SignalingClient.connect(url: url)
            _ = try await client.request(MessageType.login, Request.Login(token: token, device: "load"), as: Reply.Login.self)
            if index == 0 {
                _ = try await client.request(MessageType.reserveMeeting, Request.ReserveMeeting(name: name), as: Reply.ReserveMeeting.self)
            }
            let reply = try await client.request(MessageType.joinMeeting,
                                                 Request.JoinMeeting(name: name, role: publishing ? .actor : .audience, type: withVideo ? .video : .audio,
                                                                     media: participant.endpoint),
                                                 as: Reply.JoinMeeting.self, timeout: .seconds(30))
            guard let server = reply.media else { throw SignalingError(.malformedMessage, "joinMeeting: the reply has no media endpoint") }
            try participant.connect(to: server, client: client)
            participants.append(participant)
            if index == 0 { firstJoin = pid.flatMap(Self.residentMegabytes) }
        }
        let senders = participants.filter(\.publishing)
        for participant in participants {
            for sender in senders where sender !== participant { try participant.subscribe(to: sender) }
        }
        let cpuBefore = pid.flatMap(Self.processCPU)
        let threadsBefore = pid.map(Self.forwardingThreadsCPU) ?? [:]
        let memory = Task { () -> (early: Double?, peak: Double?) in
            var early: Double?
            var peak: Double?
            var elapsed = 0
            while !Task.isCancelled {
                try? await Task.sleep(for: .seconds(1))
                elapsed += 1
                guard let pid, let resident = Self.residentMegabytes(pid) else { continue }
                if early == nil && elapsed >= min(5, Int(seconds)) { early = resident }
                peak = max(peak ?? 0, resident)
            }
            return (early, peak)
        }
        let results = try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<SyntheticParticipant.Run, any Error>) in
            let group = participants
            let seconds = self.seconds
            Thread.detachNewThread {
                continuation.resume(with: Result { try SyntheticParticipant.run(group, seconds: seconds) })
            }
        }
        let cpuAfter = pid.flatMap(Self.processCPU)
        let threadsAfter = pid.map(Self.forwardingThreadsCPU) ?? [:]
        let resident = pid.flatMap(Self.residentMegabytes)
        memory.cancel()
        let (early, peak) = await memory.value
        for participant in participants {
            _ = try? await participant.client?.request(MessageType.leaveMeeting, Request.LeaveMeeting(callID: 0), as: Reply.Empty.self)
            await participant.client?.close()
        }

        let streams = participants.reduce(0) { $0 + $1.receiveStreams.count }
        let serverLatency = child.flatMap { ChildServer.latency(in: $0.stop()) }
        var cpu: Double?
        if let cpuBefore, let cpuAfter { cpu = (cpuAfter - cpuBefore) / results.elapsed }
        let losses = results.lossByParticipant
        let threadCPU = threadsAfter.keys.sorted().map { ((threadsAfter[$0] ?? 0) - (threadsBefore[$0] ?? 0)) / results.elapsed }
        let report = Report(publishers: publishers, subscribers: subscribers, video: videoSenders > 0, videoPublishers: videoSenders,
                            simulcast: simulcast,
                            serverThreads: threadCPU.isEmpty ? nil : threadCPU.count, serverThreadCPU: threadCPU.isEmpty ? nil : threadCPU,
                            serverRealtimePriority: realtimePriority, seconds: results.elapsed,
                            subscriberStreams: streams, packetsSent: results.packetsSent, packetsReceived: results.packetsReceived,
                            forwardedPacketsPerSecond: Double(results.packetsReceived) / results.elapsed, serverCPU: cpu,
                            subscriberStreamsPerCore: cpu.map { Double(streams) / max($0, 0.001) },
                            worstSubscriberLossPercent: losses.max() ?? 0,
                            meanSubscriberLossPercent: losses.isEmpty ? 0 : losses.reduce(0, +) / Double(losses.count),
                            subscribersAboveOnePercent: losses.filter { $0 > 1 }.count,
                            latency: Spread(results.latencies), serverResidentMegabytesEarly: early, serverResidentMegabytes: resident,
                            serverResidentMegabytesPeak: peak, serverForwardingLatencyMicroseconds: serverLatency,
                            serverResidentMegabytesFirstJoin: firstJoin,
                            serverKilobytesPerLeg: early.flatMap { early in
                                firstJoin.flatMap { participants.count > 1 ? (early - $0) * 1_024 / Double(participants.count - 1) : nil }
                            })
        if json {
            let encoder = JSONEncoder()
            encoder.outputFormatting = [.prettyPrinted, .sortedKeys]
            print(String(decoding: try encoder.encode(report), as: UTF8.self))
        } else {
            say(String(format: "forwarded %.0f packets/s (%d sent, %d received) over %d subscriber streams", report.forwardedPacketsPerSecond,
                       report.packetsSent, report.packetsReceived, streams))
            if let cpu {
                say(String(format: "server CPU %.1f %% of one core: %.0f subscriber streams per core", cpu * 100, Double(streams) / max(cpu, 0.001)))
            }
            if !threadCPU.isEmpty {
                say("forwarding threads' CPU (of one core each): " + threadCPU.enumerated().map { String(format: "%d: %.1f %%", $0, $1 * 100) }
                    .joined(separator: ", ") + (realtimePriority.map { "; SCHED_FIFO priority \($0)" } ?? ""))
            }
            say(String(format: "subscriber loss: worst %.2f %%, mean %.2f %%, %d above 1 %%", report.worstSubscriberLossPercent,
                       report.meanSubscriberLossPercent, report.subscribersAboveOnePercent))
            say("latency, send to arrival (loopback, both processes): \(report.latency.text)")
            if let serverLatency {
                // As the server prints them: "≥" at its histogram's ceiling.
                let text = serverLatency.map { ServerCommand.microseconds(.microseconds(Int64($0))) }
                say("forwarding latency in the server (arrival to send): p50 \(text[0]), p99 \(text[1]), p99.9 \(text[2])")
            }
            if let resident {
                say(String(format: "server resident memory %.1f MB at the end (%.1f MB early, %.1f MB at most)", resident, early ?? 0, peak ?? 0))
            }
            if let perLeg = report.serverKilobytesPerLeg {
                say(String(format: "server memory per leg: %.0f KiB (%.1f MB after the first join, %.1f MB with all %d)", perLeg,
                           firstJoin ?? 0, early ?? 0, participants.count))
            }
        }
    }

    /// User plus system CPU seconds of a process so far (from /proc).
    static func processCPU(_ pid: Int32) -> Double? {
        guard let stat = try? String(contentsOfFile: "/proc/\(pid)/stat", encoding: .utf8),
              let close = stat.lastIndex(of: ")") else { return nil }
        let fields = stat[stat.index(after: close)...].split(separator: " ")
        guard fields.count > 13, let user = Double(fields[11]), let system = Double(fields[12]) else { return nil }
        return (user + system) / Double(sysconf(Int32(_SC_CLK_TCK)))
    }

    /// CPU seconds of each of a server's forwarding threads so far (named "sfu worker N",
    /// or "sfu forwarding" when there is one), by name.
    static func forwardingThreadsCPU(_ pid: Int32) -> [String: Double] {
        guard let tasks = try? FileManager.default.contentsOfDirectory(atPath: "/proc/\(pid)/task") else { return [:] }
        var result: [String: Double] = [:]
        for task in tasks {
            guard let name = try? String(contentsOfFile: "/proc/\(pid)/task/\(task)/comm", encoding: .utf8)
                .trimmingCharacters(in: .whitespacesAndNewlines),
                  name.hasPrefix("sfu worker") || name == "sfu forwarding",
                  let stat = try? String(contentsOfFile: "/proc/\(pid)/task/\(task)/stat", encoding: .utf8),
                  let close = stat.lastIndex(of: ")") else { continue }
            let fields = stat[stat.index(after: close)...].split(separator: " ")
            guard fields.count > 13, let user = Double(fields[11]), let system = Double(fields[12]) else { continue }
            result[name] = (user + system) / Double(sysconf(Int32(_SC_CLK_TCK)))
        }
        return result
    }

    static func residentMegabytes(_ pid: Int32) -> Double? {
        guard let status = try? String(contentsOfFile: "/proc/\(pid)/status", encoding: .utf8),
              let line = status.split(separator: "\n").first(where: { $0.hasPrefix("VmRSS:") }),
              let kilobytes = Double(line.split(separator: " ").dropFirst().first ?? "") else { return nil }
        return kilobytes / 1_024
    }
}

/// A `mediaengine server` child process on a free port with a fresh secret and database.
final class ChildServer {
    let process: Process
    let url: String
    let secretPath: String
    let directory: URL

    var pid: Int32 { process.processIdentifier }

    let output: Pipe

    private init(process: Process, output: Pipe, url: String, secretPath: String, directory: URL) {
        self.process = process
        self.output = output
        self.url = url
        self.secretPath = secretPath
        self.directory = directory
    }

    /// - Parameter options: More `server` options (the defaults suit `bench sfu`).
    static func start(lifetime: Double, options: [String] = []) throws -> ChildServer {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("mediaengine-sfu-\(UInt32.random(in: 0 ... .max))")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        let secret = directory.appendingPathComponent("secret").path
        let process = Process()
        process.executableURL = URL(fileURLWithPath: ProcessInfo.processInfo.arguments[0])
        // Loopback carries anything: subscribers start from a high estimate, so the load is
        // the forwarding, not the bandwidth allocator's ramp.
        process.arguments = ["server", "--port", "0", "--host", "127.0.0.1", "--db", directory.appendingPathComponent("db.sqlite").path,
                             "--secret-file", secret, "--meeting-participants", "1000", "--subscriber-start-bitrate", "100000000",
                             "--duration", String(Int(lifetime))] + options
        let output = Pipe()
        process.standardOutput = output
        process.standardError = FileHandle.nullDevice
        try process.run()
        // The first line names the port.
        var line = Data()
        while let byte = try output.fileHandleForReading.read(upToCount: 1), !byte.isEmpty, byte != Data("\n".utf8) { line.append(byte) }
        let text = String(decoding: line, as: UTF8.self)
        guard text.hasPrefix("listening on ") else {
            process.terminate()
            throw CommandFailure("the server did not start: \(text)")
        }
        return ChildServer(process: process, output: output, url: String(text.dropFirst("listening on ".count)), secretPath: secret,
                           directory: directory)
    }

    /// Stops the server; returns what it printed on the way out (its media port figures).
    @discardableResult
    func stop() -> String {
        guard process.isRunning else { return "" }
        process.interrupt()
        let rest = (try? output.fileHandleForReading.readToEnd()) ?? nil
        process.waitUntilExit()
        try? FileManager.default.removeItem(at: directory)
        return rest.map { String(decoding: $0, as: UTF8.self) } ?? ""
    }

    /// The forwarding latency percentiles the server printed at exit (µs): p50, p99, p99.9.
    static func latency(in output: String) -> [Double]? {
        guard let line = output.split(separator: "\n").first(where: { $0.hasPrefix("media port") }),
              let range = line.range(of: "forwarding latency ") else { return nil }
        let numbers = line[range.upperBound...].split(whereSeparator: { !"0123456789".contains($0) }).compactMap { Double($0) }
        // p50 N µs, p99 N µs, p99.9 N µs (n=...): the digits of the labels come first.
        let values = numbers.enumerated().filter { [1, 3, 6].contains($0.offset) }.map(\.element)
        return values.count == 3 ? values : nil
    }
}

/// One synthetic participant: a media core on its own socket, sending stamped packets
/// (a publisher) and receiving forwarded ones raw (no jitter buffer, no decoding).
final class SyntheticParticipant: @unchecked Sendable {
    // @unchecked: built on the signaling task, then used only by the media thread of `run`.
    let account: String
    let publishing: Bool
    let video: Bool
    let socket: UDPSocket
    let core: MediaCore
    let keying = SRTPKeyingMaterial.random(profile: .aeadAES128GCM)
    let audioSSRC = UInt32.random(in: 1 ... .max)
    let videoSSRC = UInt32.random(in: 1 ... .max)
    let ice: ICECredentials = {
        var random = SystemRandomNumberGenerator()
        return ICECredentials.random(using: &random)
    }()
    var audioOut: SendStreamID?
    var videoOut: SendStreamID?
    /// Simulcast: each layer's stream (the first is `videoOut`) and frame size in bytes.
    var layers: [(stream: SendStreamID, ssrc: UInt32, width: Int, height: Int, frameBytes: Int)] = []
    var receiveStreams: [ReceiveStreamID] = []
    var client: SignalingClient?
    var connected = false
    /// Video retransmissions come on RTX (payload type 97), as to our clients.
    let rtx: Bool

    init(account: String, publishing: Bool, video: Bool, rtx: Bool, simulcast: Bool = false) throws {
        self.account = account
        self.publishing = publishing
        self.video = video
        self.rtx = rtx
        socket = try UDPSocket(bindTo: SocketAddress(host: "127.0.0.1", port: 0))
        var settings = MediaCore.Configuration()
        settings.outboundKeying = keying
        core = try MediaCore(configuration: settings)
        if publishing {
            audioOut = try core.addSendStream(.opus(ssrc: audioSSRC))
            var stream = SendStreamConfiguration.vp8(ssrc: videoSSRC)
            // Simulcast: one media clock for every layer, as a simulcast encoder's.
            if simulcast { stream.timestampOffset = 0 }
            if video { videoOut = try core.addSendStream(stream) }
            if video && simulcast, let videoOut {
                layers.append((videoOut, videoSSRC, 320, 180, 150))
                for (width, height, bytes) in [(640, 360, 500), (1_280, 720, 1_800)] {
                    var ssrc = UInt32.random(in: 1 ... .max)
                    while ssrc == audioSSRC || layers.contains(where: { $0.ssrc == ssrc }) { ssrc = UInt32.random(in: 1 ... .max) }
                    stream.ssrc = ssrc
                    layers.append((try core.addSendStream(stream), ssrc, width, height, bytes))
                }
            }
        }
    }

    var endpoint: MediaEndpoint {
        var endpoint = MediaEndpoint(candidates: [], srtpProfile: keying.profile.rawValue, srtpKey: keying.base64, audioSSRC: audioSSRC,
                                     videoSSRC: video ? videoSSRC : nil, iceUfrag: ice.ufrag, icePassword: ice.password)
        endpoint.rtxPayloadType = rtx ? 97 : nil
        if !layers.isEmpty { endpoint.videoLayers = layers.map { MediaEndpoint.VideoLayer(ssrc: $0.ssrc, width: $0.width, height: $0.height) } }
        return endpoint
    }

    func connect(to server: MediaEndpoint, client: SignalingClient) throws {
        self.client = client
        let endpoint = try server.sessionEndpoint()
        try core.setInboundKeying(endpoint.keying)
        let host = ICECandidate.local(.host, address: socket.localAddress, localPreference: 65_535)
        core.startICE(local: ice, controlling: true, hosts: [host], stunServers: [], timeout: .seconds(10), now: .zero)
        core.setRemoteICE(endpoint.ice, candidates: endpoint.candidates, complete: true, now: .zero)
    }

    func subscribe(to sender: SyntheticParticipant) throws {
        var audio = ReceiveStreamConfiguration.opus(ssrc: sender.audioSSRC)
        audio.forwarding = true
        audio.participant = sender.account
        receiveStreams.append(try core.addReceiveStream(audio))
        if sender.video {
            var video = ReceiveStreamConfiguration.vp8(ssrc: sender.videoSSRC)
            video.forwarding = true
            if rtx { video.rtx = RTXStream(ssrc: RTXStream.ssrc(forVideo: sender.videoSSRC), payloadType: 97) }
            video.participant = sender.account
            receiveStreams.append(try core.addReceiveStream(video))
        }
    }

    struct Run: Sendable {
        var elapsed: Double
        var packetsSent = 0
        var packetsReceived = 0
        var latencies: [Duration] = []
        var lossByParticipant: [Double] = []
    }

    /// Runs every participant's media on this thread for `seconds` (after all connect).
    static func run(_ participants: [SyntheticParticipant], seconds: Double) throws -> Run {
        let clock = ContinuousClock()
        let origin = clock.now
        var poller = SocketPoller(sockets: participants.map(\.socket))
        var buffer = [UInt8](repeating: 0, count: 2_048)
        var audioPayload = [UInt8](repeating: 0x55, count: 100)
        var frame = [UInt8](repeating: 0xAA, count: 1_800)
        var run = Run(elapsed: 0)
        run.latencies.reserveCapacity(Int(seconds * 50) * participants.count * 4)
        var startedAt: Duration?
        let publishers = participants.filter(\.publishing)
        var audioSent = [Int](repeating: 0, count: publishers.count)
        var videoSent = [Int](repeating: 0, count: publishers.count)
        let wall = origin
        func stamp(_ bytes: inout [UInt8], at offset: Int) {
            let nanos = UInt64((clock.now - wall) / .nanoseconds(1))
            withUnsafeBytes(of: nanos.bigEndian) { for index in 0..<8 { bytes[offset + index] = $0[index] } }
        }
        while true {
            let now = clock.now - origin
            if startedAt == nil, participants.allSatisfy(\.connected) { startedAt = now }
            if startedAt == nil, now > .seconds(15) { throw CommandFailure("participants did not connect within 15 s") }
            if let startedAt, now - startedAt >= .milliseconds(Int64(seconds * 1_000)) {
                run.elapsed = (now - startedAt) / .seconds(1)
                break
            }
            // Media, once everyone is connected: 20 ms audio, 33 ms video, each publisher on
            // its own phase (independent clients are not in step; one burst of everyone's
            // packets every 20 ms would measure the burst, not the server).
            if let startedAt {
                let elapsed = now - startedAt
                for (rank, participant) in publishers.enumerated() {
                    let audioPhase = Duration.milliseconds(20) * rank / publishers.count
                    while audioPhase + .milliseconds(20) * audioSent[rank] <= elapsed {
                        stamp(&audioPayload, at: 0)
                        let index = audioSent[rank]
                        audioPayload.withUnsafeBytes {
                            if participant.core.sendAudio(participant.audioOut!, payload: $0, mediaTimestamp: UInt32(truncatingIfNeeded: index * 960),
                                                          audioLevel: AudioLevel(level: 30, voiceActivity: true), now: now) {
                                run.packetsSent += 1
                            }
                        }
                        audioSent[rank] += 1
                    }
                    guard participant.video else { continue }
                    let videoPhase = Duration.microseconds(33_333) * rank / publishers.count
                    while videoPhase + .microseconds(33_333) * videoSent[rank] <= elapsed {
                        let index = videoSent[rank]
                        frame[0] = index % 60 == 0 ? 0x00 : 0x01
                        if participant.layers.isEmpty {
                            frame.withUnsafeBytes {
                                _ = participant.core.sendVideo(participant.videoOut!, frame: $0, mediaTimestamp: UInt32(truncatingIfNeeded: index * 3_000),
                                                               isKeyframe: index % 60 == 0, now: now)
                            }
                            run.packetsSent += 2
                        }
                        for layer in participant.layers {
                            frame.withUnsafeBytes {
                                _ = participant.core.sendVideo(layer.stream, frame: UnsafeRawBufferPointer(rebasing: $0[0..<layer.frameBytes]),
                                                               mediaTimestamp: UInt32(truncatingIfNeeded: index * 3_000), isKeyframe: index % 60 == 0,
                                                               now: now)
                            }
                            run.packetsSent += (layer.frameBytes + 1_099) / 1_100
                        }
                        videoSent[rank] += 1
                    }
                }
            }
            for participant in participants {
                if participant.core.nextTimeout.map({ $0 <= now }) == true { participant.core.handleTimeout(now: now) }
                while let event = participant.core.pollEvent() {
                    if case .connected = event { participant.connected = true }
                }
                while let transmit = participant.core.pollTransmit() { try? participant.socket.send(transmit.bytes, to: transmit.destination) }
            }
            _ = try poller.wait(timeout: .milliseconds(2))
            let arrival = clock.now - wall
            for participant in participants {
                while let (count, source) = try buffer.withUnsafeMutableBytes({ try participant.socket.receiveNow(into: $0) }) {
                    let forwarded = buffer.withUnsafeMutableBytes {
                        participant.core.handleDatagram(UnsafeMutableRawBufferPointer(rebasing: $0[0..<count]), from: source, now: clock.now - origin)
                    }
                    guard let forwarded else { continue }
                    run.packetsReceived += 1
                    let payload = forwarded.packet.payload
                    if forwarded.packet.payloadType == 111, payload.count >= 8, startedAt != nil {
                        let sent = payload.loadUnaligned(as: UInt64.self).bigEndian
                        let latency = arrival - .nanoseconds(Int64(sent))
                        if latency >= .zero { run.latencies.append(latency) }
                    }
                }
            }
        }
        for participant in participants where !participant.receiveStreams.isEmpty {
            var received = 0
            var lost = 0
            for stream in participant.receiveStreams {
                let statistics = participant.core.statistics(of: stream)
                received += statistics?.packetsReceived ?? 0
                lost += max(0, statistics?.packetsLost ?? 0)
            }
            run.lossByParticipant.append(Double(lost) * 100 / Double(max(1, received + lost)))
        }
        return run
    }
}
