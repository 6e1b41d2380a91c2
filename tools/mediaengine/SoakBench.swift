import ArgumentParser
import Foundation
import MediaEngine
import MediaServer
import MediaSimulation
import Signaling

/// `mediaengine bench soak`: a video call (or a meeting through the server) for minutes on
/// end, sampling this process's memory, descriptors and threads and the media's loss and
/// delay; it fails when any of them grows.
struct SoakBench: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "soak",
        abstract: "Run a video call or a meeting for minutes and fail if memory, descriptors or threads grow.",
        discussion: """
        Starts a signaling server in this process (its SFU too), then alice calls bob with video (or, with \
        --meeting P, P participants meet through the SFU), all on loopback, for --minutes. Every --interval \
        seconds it samples this process (server and clients together: resident memory, open descriptors, \
        threads, from /proc/self) and the media (audio packets received and lost, round trip, playout delay). \
        At the end it fits a line to resident memory after the warm-up and fails when it rises faster than \
        --max-rss-slope MB/h, when descriptors or threads grew by more than 2, when audio loss passed 1 %, or \
        when the media dropped.
        """
    )

    @Option(help: "Minutes to run.")
    var minutes = 60.0

    @Option(help: "Participants of a meeting through the server's SFU instead of a call (2...16).")
    var meeting: Int?

    @Option(help: "Seconds between samples (default 60).")
    var interval = 60.0

    @Option(help: "Seconds left out of the judgement at the start (default: the smaller of 120 and a quarter of the run).")
    var warmUp: Double?

    @Option(help: "Video size, WIDTHxHEIGHT at 30 fps (a call) or 15 fps (a meeting).")
    var size = "320x240"

    @Option(help: "Resident memory growth that fails the run, MB per hour.")
    var maxRssSlope = 20.0

    @Flag(help: "Print JSON.")
    var json = false

    struct Report: Codable {
        var mode: String
        var minutes: Double
        var participants: Int
        var width: Int
        var height: Int
        var samples: [SoakSample]
        var verdict: SoakVerdict
        var problems: [String]
    }

    var dimensions: (Int, Int)? {
        let parts = size.split(separator: "x").compactMap { Int($0) }
        guard parts.count == 2, (16...1_920).contains(parts[0]), (16...1_080).contains(parts[1]), parts[0] % 2 == 0, parts[1] % 2 == 0 else {
            return nil
        }
        return (parts[0], parts[1])
    }

    func validate() throws {
        guard minutes.isFinite, minutes >= 0.5, minutes <= 24 * 60 else { throw ValidationError("--minutes \(minutes) must be within 0.5...1440") }
        guard interval.isFinite, interval >= 1, interval <= 600 else { throw ValidationError("--interval \(interval) must be within 1...600 seconds") }
        guard interval * 4 <= minutes * 60 else { throw ValidationError("--interval \(interval) leaves fewer than 4 samples in \(minutes) minutes") }
        if let meeting, !(2...16).contains(meeting) { throw ValidationError("--meeting \(meeting) must be within 2...16 participants") }
        if let warmUp, !(warmUp >= 0 && warmUp < minutes * 60) { throw ValidationError("--warm-up \(warmUp) must be within 0 and the run's length") }
        guard dimensions != nil else { throw ValidationError("--size \(size): use WIDTHxHEIGHT, even numbers up to 1920x1080") }
        guard maxRssSlope.isFinite, maxRssSlope > 0 else { throw ValidationError("--max-rss-slope \(maxRssSlope) must be more than 0") }
    }

    func run() async throws {
        Interruption.install()
        let (width, height) = dimensions!
        let participants = meeting ?? 2
        var server = SignalingServer.Configuration()
        server.meetings.maximumParticipants = max(participants, server.meetings.maximumParticipants)
        let demo = try await DemoServer.start(configuration: server)
        defer { demo.removeDirectory() }
        let mode = meeting == nil ? "call" : "meeting"
        if !json {
            say("soak: a \(mode == "call" ? "video call" : "\(participants)-party meeting through the SFU") of \(width)x\(height) "
                + "for \(minutes) min on \(demo.url), sampling every \(Int(interval)) s")
        }
        let lifetime = Duration.seconds(Int64(minutes * 60) + 600)
        var endpoints: [SoakEndpoint] = []
        do {
            for index in 0..<participants {
                let account = "soak\(index + 1)"
                endpoints.append(try await SoakEndpoint(account: account, url: demo.url, width: width, height: height,
                                                        frameRate: meeting == nil ? 30 : 15,
                                                        token: try await demo.authority.mint(account: account, lifetime: lifetime),
                                                        answers: meeting == nil && index == 1))
            }
            if meeting == nil {
                _ = try await endpoints[0].manager.start(callee: endpoints[1].account, type: .video)
            } else {
                _ = try await endpoints[0].manager.reserveMeeting(name: "soak")
                for endpoint in endpoints { _ = try await endpoint.manager.joinMeeting(name: "soak", type: .video) }
            }
            for endpoint in endpoints where await endpoint.waitConnected(timeout: 20) == nil {
                if Interruption.requested { break }
                throw CommandFailure("\(endpoint.account)'s media did not connect: \(endpoints.flatMap(\.problems))")
            }
            let started = ContinuousClock.now
            var samples: [SoakSample] = []
            let total = Duration.milliseconds(Int64(minutes * 60_000))
            var next = Duration.zero
            while true {
                let elapsed = ContinuousClock.now - started
                if elapsed >= next {
                    let sample = try await Self.sample(endpoints, elapsed: elapsed, call: meeting == nil)
                    samples.append(sample)
                    if !json { say(Self.line(sample)) }
                    next += .milliseconds(Int64(interval * 1_000))
                    if next > total && elapsed >= total { break }
                    if next > total { next = total }
                }
                if endpoints.contains(where: { !$0.problems.isEmpty }) || Interruption.requested { break }
                try await Task.sleep(for: min(.milliseconds(200), next - (ContinuousClock.now - started)))
            }
            let problems = endpoints.flatMap { endpoint in endpoint.problems.map { "\(endpoint.account): \($0)" } }
            for endpoint in endpoints {
                if meeting == nil {
                    if endpoint === endpoints[0] { try? await endpoint.manager.hangup() }
                } else {
                    try? await endpoint.manager.leaveMeeting()
                }
            }
            for endpoint in endpoints { await endpoint.manager.logout() }
            await demo.server.shutdown()

            var limits = SoakVerdict.Limits()
            limits.residentSlopeMBPerHour = maxRssSlope
            let verdict = SoakVerdict.judge(samples, warmUpSeconds: warmUp ?? min(120, minutes * 15), limits: limits)
            let report = Report(mode: mode, minutes: minutes, participants: participants, width: width, height: height, samples: samples,
                                verdict: verdict, problems: problems)
            say(json ? try prettyJSON(report) : Self.text(report))
            if Interruption.requested {
                printError("the soak was stopped after \(samples.count) samples: it has no verdict")
                throw Interruption.exitCode
            }
            guard verdict.passed, problems.isEmpty else {
                throw CommandFailure("the soak failed: \((verdict.failures + problems).joined(separator: "; "))")
            }
        } catch {
            for endpoint in endpoints { await endpoint.manager.logout() }
            await demo.server.shutdown()
            throw error
        }
    }

    /// The process now, and every endpoint's receive statistics.
    static func sample(_ endpoints: [SoakEndpoint], elapsed: Duration, call: Bool) async throws -> SoakSample {
        let usage = try ProcessResources.current()
        var sample = SoakSample(elapsedSeconds: elapsed / .seconds(1), residentBytes: usage.residentBytes,
                                openFileDescriptors: usage.openFileDescriptors, threads: usage.threads)
        for endpoint in endpoints {
            let session = call ? await endpoint.manager.currentSession : await endpoint.manager.currentMeetingSession
            guard let statistics = session?.receiveStatistics else { continue }
            for stream in statistics.streams where stream.kind == .audio {
                sample.audioPacketsReceived += stream.packetsReceived
                sample.audioPacketsLost += max(0, stream.packetsLost)
                sample.playoutDelayMilliseconds = max(sample.playoutDelayMilliseconds ?? 0, stream.meanJitterBufferDelay * 1_000)
            }
            if let rtt = statistics.roundTripTime {
                sample.roundTripMilliseconds = max(sample.roundTripMilliseconds ?? 0, rtt * 1_000)
            }
        }
        return sample
    }

    static func line(_ s: SoakSample) -> String {
        String(format: "  %6.0f s  rss %7.1f MB  fds %4d  threads %3d  audio received %8d lost %5d  rtt %@  playout %@",
               s.elapsedSeconds, Double(s.residentBytes) / 1e6, s.openFileDescriptors, s.threads, s.audioPacketsReceived, s.audioPacketsLost,
               s.roundTripMilliseconds.map { String(format: "%.1f ms", $0) } ?? "-",
               s.playoutDelayMilliseconds.map { String(format: "%.0f ms", $0) } ?? "-")
    }

    static func text(_ report: Report) -> String {
        let v = report.verdict
        let first = report.samples.first { $0.elapsedSeconds >= v.warmUpSeconds }
        let last = report.samples.last
        var lines = [
            String(format: "soak %@: %.1f min, %d samples judged after a %.0f s warm-up", report.mode, report.minutes, v.samplesJudged,
                   v.warmUpSeconds),
            String(format: "  resident memory slope %+.2f MB/h (%.1f -> %.1f MB)", v.residentSlopeMBPerHour,
                   Double(first?.residentBytes ?? 0) / 1e6, Double(last?.residentBytes ?? 0) / 1e6),
            "  descriptors \(first?.openFileDescriptors ?? 0) -> \(last?.openFileDescriptors ?? 0) (\(v.descriptorGrowth >= 0 ? "+" : "")\(v.descriptorGrowth)), "
                + "threads \(first?.threads ?? 0) -> \(last?.threads ?? 0) (\(v.threadGrowth >= 0 ? "+" : "")\(v.threadGrowth))",
            String(format: "  audio loss %.3f %%", v.audioLossPercent),
        ]
        lines.append(v.passed && report.problems.isEmpty ? "  passed" : "  FAILED: " + (v.failures + report.problems).joined(separator: "; "))
        return lines.joined(separator: "\n")
    }
}

/// One side of a soak: a logged-in manager sending a tone and a test pattern, keeping no
/// media (only the statistics), and noting anything that goes wrong.
final class SoakEndpoint: Sendable {
    let account: String
    let manager: NetCallManager
    final class State: Sendable {
        let connectedAt = Locked<ContinuousClock.Instant?>(nil)
        let troubles = Locked<[String]>([])
    }
    private let state = State()

    init(account: String, url: String, width: Int, height: Int, frameRate: Int, token: String, answers: Bool) async throws {
        self.account = account
        let media: MediaSessionFactory = { type, _ in
            var configuration = MediaSession.Configuration(
                audio: try MediaSources.audio("sine:\(440 + Int.random(in: 0..<200))"),
                video: type == .video ? try MediaSources.video("testsrc:\(width)x\(height)@\(frameRate)") : nil)
            configuration.host = "127.0.0.1"
            return configuration
        }
        manager = NetCallManager(configuration: NetCallManager.Configuration(server: url, token: token, device: "soak", media: media))
        try await manager.login()
        Task { [manager, state] in
            for await event in manager.events {
                switch event {
                case .receive(let id, _, _, _) where answers:
                    do {
                        try await manager.response(callID: id, accept: true)
                    } catch {
                        state.troubles.withLock { $0.append("accepting: \(error)") }
                    }
                case .callStatus(_, .connected), .meetingStatus(_, .connected):
                    state.connectedAt.withLock { $0 = $0 ?? .now }
                case .callStatus(_, .disconnected(let why)), .meetingStatus(_, .disconnected(let why)):
                    state.troubles.withLock { $0.append("disconnected: \(why)") }
                case .meetingError(_, let error):
                    state.troubles.withLock { $0.append("meeting error: \(error)") }
                case .hangup(_, let by, let reason) where by != account:
                    state.troubles.withLock { $0.append("hung up by \(by ?? "the server"): \(reason)") }
                default:
                    break
                }
            }
        }
        Task { [manager] in for await _ in manager.mediaUpdates {} }
    }

    var problems: [String] { state.troubles.withLock { $0 } }

    /// When the media connected; nil after `timeout` seconds, or at once when the user
    /// stops the soak.
    func waitConnected(timeout: Double) async -> ContinuousClock.Instant? {
        await firstValue(timeout: timeout) { Interruption.requested ? .now : state.connectedAt.withLock { $0 } }
    }
}
