import ArgumentParser
import Foundation
import Logging
import MediaEngine
import MediaServer
import Signaling

struct DemoCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "demo",
        abstract: "Place a real P2P video call (or hold a meeting, --meeting N) on loopback and measure it: setup time, mouth-to-ear delay, loss, jitter, audio correlation, video PSNR.",
        discussion: """
        Starts the signaling server in this process (temporary database), logs in two endpoints, alice and bob, with \
        synthetic audio (marked tones, 440 and 660 Hz) and video (640x480 test patterns at 30 fps), and has alice call \
        bob. Bob accepts; after --seconds alice hangs up. Each side records what it received, and the demo measures \
        it against what was sent. Needs no devices and no network beyond loopback.

        With --meeting N, N participants (user1...userN, marked tones of 330 Hz and up, 320x240 test patterns at \
        15 fps) reserve and join one meeting through the server's forwarding server; each measures every other \
        (mouth-to-ear through the server, loss, concealment, PSNR), and the server's forwarding thread is timed.
        """
    )

    @Option(help: "Seconds the call lasts once connected.")
    var seconds: Double = 10

    @Option(help: "Video size, WxH (even numbers; default 640x480 for the call, 320x240 for a meeting).")
    var videoSize: String?

    @Option(help: "Instead of the call: a meeting of N participants (2...16) through the server's forwarding server, each measuring every other.")
    var meeting: Int?

    @Flag(help: "Print the measurements as JSON.")
    var json = false

    /// The demo's sources are synthetic, so the capture processing is off unless forced on
    /// here (for its cost: `--aec on`).
    @OptionGroup var processing: AudioProcessingOptions

    /// Width and height from `--video-size`.
    var size: (width: Int, height: Int)? {
        let parts = (videoSize ?? (meeting == nil ? "640x480" : "320x240")).split(separator: "x").compactMap { Int($0) }
        guard parts.count == 2, (16...3_840).contains(parts[0]), (16...2_160).contains(parts[1]),
              parts[0] % 2 == 0, parts[1] % 2 == 0 else { return nil }
        return (parts[0], parts[1])
    }

    func validate() throws {
        guard seconds >= 2 && seconds <= 600 else { throw ValidationError("--seconds \(seconds) must be within 2...600") }
        if let meeting, !(2...16).contains(meeting) { throw ValidationError("--meeting \(meeting) must be within 2...16 participants") }
        guard size != nil else { throw ValidationError("--video-size '\(videoSize ?? "")' is not WxH with even sizes of 16...3840 x 16...2160") }
    }

    struct Direction: Codable {
        var from: String
        var to: String
        var mouthToEarMilliseconds: Double?
        var markersMeasured: Int
        var audioPacketsReceived: Int
        var audioPacketsLost: Int
        var audioJitterMilliseconds: Double
        var audioConcealedPercent: Double
        var audioCorrelation: Double
        var videoFramesSent: Int
        var videoFramesReceived: Int
        var videoMeanPSNR: Double
        var videoMinimumPSNR: Double
    }

    struct Report: Codable {
        var seconds: Double
        var setupMilliseconds: Double
        var directions: [Direction]
        var record: CallRecord?
        var cpuPercentOfOneCore: Double
        /// Each side's capture processing, when it ran (forced with --aec and the rest).
        var audioProcessing: [String: AudioProcessor.Statistics]?
    }

    func run() async throws {
        if let meeting {
            let (width, height) = size ?? (320, 240)
            let report = try await MeetingDemo(participants: meeting, seconds: seconds, width: width, height: height)
                .run(say: say, quiet: json)
            say(json ? try prettyJSON(report) : MeetingDemo.text(report))
            let silent = report.pairs.filter { $0.audioPacketsReceived == 0 || $0.videoPicturesReceived == 0 }
            guard silent.isEmpty else {
                throw CommandFailure("some participants got nothing of others: \(silent.map { "\($0.from) -> \($0.to)" })")
            }
            return
        }
        let demo = try await DemoServer.start()
        defer { demo.removeDirectory() }
        let (server, url) = (demo.server, demo.url)
        let (width, height) = size ?? (640, 480)
        if !json { say("server on \(url); alice calls bob, a \(Int(seconds)) s video call (\(width)x\(height), 30 fps)") }

        let forced = processing.isSet ? processing.settings(base: .off) : nil
        let alice = try await DemoEndpoint(account: "alice", tone: 440, url: url, answers: false, width: width, height: height,
                                           token: try await demo.token("alice"), processing: forced)
        let bob = try await DemoEndpoint(account: "bob", tone: 660, url: url, answers: true, width: width, height: height,
                                         token: try await demo.token("bob"), processing: forced)
        let usage = CPUUsage()
        let started = ContinuousClock.now
        let callID = try await alice.manager.start(callee: "bob", type: .video)
        guard let aliceConnected = await alice.waitConnected(timeout: 15), let bobConnected = await bob.waitConnected(timeout: 15) else {
            await server.shutdown()
            throw CommandFailure("the call did not connect: \(alice.problems + bob.problems)")
        }
        let setup = max(aliceConnected, bobConnected) - started
        if !json { say("connected in \(String(format: "%.0f", setup / .milliseconds(1))) ms; talking for \(Int(seconds)) s") }
        try await Task.sleep(for: .milliseconds(Int64(seconds * 1_000)))
        try await alice.manager.hangup(callID: callID)
        let record = await bob.waitRecord(timeout: 10)
        _ = await alice.waitRecord(timeout: 10)
        let cpu = usage.percentOfOneCore()
        let aliceSummary = await alice.manager.lastCallSummary
        let bobSummary = await bob.manager.lastCallSummary
        await alice.manager.logout()
        await bob.manager.logout()
        await server.shutdown()

        var report = Report(seconds: seconds, setupMilliseconds: setup / .milliseconds(1),
                            directions: [DemoEndpoint.direction(from: alice, to: bob, sent: aliceSummary, received: bobSummary),
                                         DemoEndpoint.direction(from: bob, to: alice, sent: bobSummary, received: aliceSummary)],
                            record: record, cpuPercentOfOneCore: cpu)
        var processed: [String: AudioProcessor.Statistics] = [:]
        for (account, summary) in [("alice", aliceSummary), ("bob", bobSummary)] {
            if let statistics = summary?.audioProcessing { processed[account] = statistics }
        }
        report.audioProcessing = processed.isEmpty ? nil : processed
        say(json ? try prettyJSON(report) : Self.text(report))
        guard record?.endReason == .completed else { throw CommandFailure("the call did not end as completed") }
    }

    static func text(_ report: Report) -> String {
        func f(_ value: Double, _ decimals: Int = 1) -> String { String(format: "%.\(decimals)f", value) }
        var lines = ["call setup (start -> connected on both sides): \(f(report.setupMilliseconds, 0)) ms"]
        for direction in report.directions {
            let loss = Double(direction.audioPacketsLost) * 100 / Double(max(1, direction.audioPacketsReceived + direction.audioPacketsLost))
            lines.append("\(direction.from) -> \(direction.to):")
            lines.append("  audio: mouth-to-ear \(direction.mouthToEarMilliseconds.map { f($0, 0) + " ms" } ?? "n/a") "
                + "(median of \(direction.markersMeasured) markers), loss \(f(loss)) %, jitter \(f(direction.audioJitterMilliseconds)) ms, "
                + "concealed \(f(direction.audioConcealedPercent)) %, correlation \(f(direction.audioCorrelation, 4))")
            lines.append("  video: \(direction.videoFramesReceived)/\(direction.videoFramesSent) frames, "
                + "PSNR mean \(f(direction.videoMeanPSNR)) dB, min \(f(direction.videoMinimumPSNR)) dB")
        }
        if let record = report.record {
            lines.append("call record: callID \(record.callID), \(record.caller) -> \(record.callee), \(record.endReason.rawValue), "
                + "connected \(f(Double(record.connectedDuration) / 1_000)) s")
        }
        lines.append("CPU: \(f(report.cpuPercentOfOneCore, 0)) % of one core (server and both endpoints: VP8 and Opus, each way)")
        for (account, statistics) in (report.audioProcessing ?? [:]).sorted(by: { $0.key < $1.key }) {
            lines.append("\(account) \(CallPrinter.processingSummary(statistics))")
        }
        return lines.joined(separator: "\n")
    }
}

/// One side of the demo call: its manager, its marked tone, and what it received.
final class DemoEndpoint: Sendable {
    struct Received {
        var audio: [Int16] = []
        var onsets = OnsetDetector(threshold: 0)
        var videoPSNRs: [Double] = []
        var connectedAt: ContinuousClock.Instant?
        var record: CallRecord?
        var problems: [String] = []
        var source: MarkedToneSource?
        /// Marker times of the sources of earlier calls.
        var earlierMarkers: [ContinuousClock.Instant] = []

        var allMarkers: [ContinuousClock.Instant] { earlierMarkers + (source?.markerTimes ?? []) }
    }

    final class State: Sendable {
        let received = Locked(Received())
    }

    let account: String
    let tone: MarkedTone
    let manager: NetCallManager
    let state = State()

    /// - Parameter answers: Accept every invitation (the callee).
    init(account: String, tone frequency: Double, url: String, answers: Bool, width: Int = 640, height: Int = 480,
         token: String, processing: AudioProcessor.Settings? = nil) async throws {
        self.account = account
        let tone = MarkedTone(frequency: frequency)
        self.tone = tone
        let state = self.state
        state.received.withLock { $0.onsets = OnsetDetector(threshold: tone.threshold) }
        // Every received picture, off the receiving thread, to be matched to its source.
        let (pictures, picture) = AsyncStream<VideoFrame>.makeStream()
        let media: MediaSessionFactory = { type, _ in
            let source = MarkedToneSource(tone)
            state.received.withLock { received in
                received.earlierMarkers += received.source?.markerTimes ?? []
                received.source = source
            }
            var configuration = MediaSession.Configuration(audio: source,
                                                           video: type == .video ? try MediaSources.video("testsrc:\(width)x\(height)@30") : nil)
            configuration.host = "127.0.0.1"
            configuration.audioProcessing = processing
            configuration.remoteAudio = { pcm in
                let now = ContinuousClock.now
                state.received.withLock { received in
                    received.audio.append(contentsOf: pcm)
                    received.onsets.add(pcm, playedAt: now)
                }
            }
            configuration.remoteVideo = { _, frame in picture.yield(frame) }
            return configuration
        }
        manager = NetCallManager(configuration: NetCallManager.Configuration(server: url, token: token, device: "demo", media: media))
        try await manager.login()
        Task { [state] in
            // Both sides send the same test pattern, so it is the reference for either.
            var pattern = TestPattern(width: width, height: height, frameRate: 30)
            var matcher = SequenceMatcher { pattern.nextFrame() }
            for await frame in pictures {
                matcher.add(frame)
                let psnr = matcher.psnrs.last ?? 0
                state.received.withLock { $0.videoPSNRs.append(psnr) }
            }
        }
        Task { [manager, state] in
            for await event in manager.events {
                switch event {
                case .receive(let id, _, _, _) where answers:
                    do {
                        try await manager.response(callID: id, accept: true)
                    } catch {
                        state.received.withLock { $0.problems.append("accepting: \(error)") }
                    }
                case .callStatus(_, .connected):
                    state.received.withLock { $0.connectedAt = .now }
                case .callStatus(_, .disconnected(let why)):
                    state.received.withLock { $0.problems.append(why) }
                case .callRecord(let record):
                    state.received.withLock { $0.record = record }
                default:
                    break
                }
            }
        }
    }

    var problems: [String] { state.received.withLock { $0.problems } }

    /// Forgets the last call's connection time and record, before the next call.
    func resetCall() {
        state.received.withLock { received in
            received.connectedAt = nil
            received.record = nil
        }
    }

    func waitConnected(timeout: Double) async -> ContinuousClock.Instant? {
        await firstValue(timeout: timeout) { state.received.withLock { $0.connectedAt } }
    }

    func waitRecord(timeout: Double) async -> CallRecord? {
        await firstValue(timeout: timeout) { state.received.withLock { $0.record } }
    }

    static func direction(from sender: DemoEndpoint, to receiver: DemoEndpoint, sent: MediaSession.Summary?,
                          received: MediaSession.Summary?) -> DemoCommand.Direction {
        let heard = receiver.state.received.withLock { $0 }
        let markers = sender.state.received.withLock { $0.allMarkers }
        let delays = OnsetDetector.delays(markers: markers, onsets: heard.onsets.onsets).sorted()
        let audio = received?.received?.streams.first { $0.kind == .audio }
        let reference = (0..<(heard.audio.count + 48_000)).map { sender.tone.sample(at: $0) }
        let correlation = reference.withUnsafeBufferPointer { ref in
            heard.audio.withUnsafeBufferPointer { test in
                AudioQuality.trackedCorrelation(reference: ref, test: test, testStart: 24_000, lagRange: -4_800...4_800).correlation
            }
        }
        let psnrs = heard.videoPSNRs
        return DemoCommand.Direction(
            from: sender.account, to: receiver.account,
            mouthToEarMilliseconds: delays.isEmpty ? nil : delays[delays.count / 2] / .milliseconds(1),
            markersMeasured: delays.count,
            audioPacketsReceived: audio?.packetsReceived ?? 0, audioPacketsLost: audio?.packetsLost ?? 0,
            audioJitterMilliseconds: (audio?.jitter ?? 0) * 1_000,
            audioConcealedPercent: Double(audio?.concealedSamples ?? 0) * 100 / Double(max(1, audio?.totalSamplesReceived ?? 0)),
            audioCorrelation: correlation,
            videoFramesSent: sent?.sent?.videoFrames ?? 0, videoFramesReceived: psnrs.count,
            videoMeanPSNR: psnrs.isEmpty ? 0 : psnrs.reduce(0, +) / Double(psnrs.count), videoMinimumPSNR: psnrs.min() ?? 0)
    }
}

/// The demos' signaling server: in this process, on loopback, with a fresh secret and a
/// database in a temporary directory.
struct DemoServer {
    let directory: URL
    let authority: TokenAuthority
    let server: SignalingServer
    let url: String

    static func start(configuration: SignalingServer.Configuration = SignalingServer.Configuration()) async throws -> DemoServer {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("mediaengine-demo-\(UInt32.random(in: 0 ... .max))")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        do {
            var random = SystemRandomNumberGenerator()
            let secret = try ServerSecret(bytes: (0..<32).map { _ in UInt8.random(in: 0...255, using: &random) })
            let authority = await TokenAuthority(secret: secret)
            var logger = Logger(label: "mediaengine.demo")
            logger.logLevel = .warning
            let server = SignalingServer(configuration: configuration, authority: authority,
                                         store: try SQLiteCallStore(path: directory.appendingPathComponent("calls.sqlite").path), logger: logger)
            let port = try await server.start()
            return DemoServer(directory: directory, authority: authority, server: server, url: "ws://127.0.0.1:\(port)/")
        } catch {
            try? FileManager.default.removeItem(at: directory)
            throw error
        }
    }

    /// A login token for `account`, valid an hour.
    func token(_ account: String) async throws -> String {
        try await authority.mint(account: account, lifetime: .seconds(3_600))
    }

    func removeDirectory() { try? FileManager.default.removeItem(at: directory) }
}

/// Polls `value` every 5 ms until it gives something or `timeout` seconds pass.
func firstValue<T: Sendable>(timeout: Double, _ value: () -> T?) async -> T? {
    let deadline = ContinuousClock.now + .milliseconds(Int64(timeout * 1_000))
    while ContinuousClock.now < deadline {
        if let found = value() { return found }
        try? await Task.sleep(for: .milliseconds(5))
    }
    return nil
}

/// Pretty-printed JSON with sorted keys, as the commands' --json prints it.
func prettyJSON(_ value: some Encodable) throws -> String {
    let encoder = JSONEncoder()
    encoder.outputFormatting = [.prettyPrinted, .sortedKeys]
    return String(decoding: try encoder.encode(value), as: UTF8.self)
}

/// Process CPU time over a span, as a share of one core.
struct CPUUsage {
    private let start = ContinuousClock.now
    private let cpuStart = CPUUsage.cpuSeconds()

    /// CPU seconds of this process so far.
    static func cpuSeconds() -> Double { seconds(RUSAGE_SELF.rawValue) }

    /// CPU seconds of this process's children that ended and were waited for.
    static func childSeconds() -> Double { seconds(RUSAGE_CHILDREN.rawValue) }

    private static func seconds(_ who: Int32) -> Double {
        var usage = rusage()
        getrusage(who, &usage)
        return Double(usage.ru_utime.tv_sec + usage.ru_stime.tv_sec) + Double(usage.ru_utime.tv_usec + usage.ru_stime.tv_usec) / 1e6
    }

    func percentOfOneCore() -> Double {
        let wall = (ContinuousClock.now - start) / .seconds(1)
        return (Self.cpuSeconds() - cpuStart) * 100 / max(wall, 1e-9)
    }
}
