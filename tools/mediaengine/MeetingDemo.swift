import Foundation
import Logging
import MediaEngine
import MediaServer
import Signaling

/// `mediaengine demo --meeting N`: N participants in this process meet through the
/// in-process server's forwarding server, each sending a marked tone of its own frequency
/// and a test pattern; every participant measures every other one it receives (mouth-to-
/// ear through the server, loss, concealment, video PSNR), and the server's forwarding
/// thread is timed.
struct MeetingDemo {
    var participants: Int
    var seconds: Double
    var width: Int
    var height: Int
    var frameRate = 15

    /// What one participant received of another.
    struct Pair: Codable {
        var from: String
        var to: String
        var mouthToEarMilliseconds: Double?
        var markersMeasured: Int
        var audioPacketsReceived: Int
        var audioPacketsLost: Int
        var audioConcealedPercent: Double
        var videoPicturesReceived: Int
        var videoMeanPSNR: Double
        var videoMinimumPSNR: Double
    }

    struct Report: Codable {
        var participants: Int
        var seconds: Double
        /// From the first join to the last participant's media connected.
        var joinMilliseconds: Double
        var pairs: [Pair]
        var record: MeetingRecord?
        var cpuPercentOfOneCore: Double
        /// The server's forwarding thread alone.
        var serverCPUPercentOfOneCore: Double
        var serverPacketsForwarded: Int
        var serverLatencyP50Microseconds: Double
        var serverLatencyP99Microseconds: Double
    }

    func run(say: (String) -> Void, quiet: Bool) async throws -> Report {
        var configuration = SignalingServer.Configuration()
        configuration.meetings.maximumParticipants = max(participants, configuration.meetings.maximumParticipants)
        let demo = try await DemoServer.start(configuration: configuration)
        defer { demo.removeDirectory() }
        let (server, url) = (demo.server, demo.url)
        if !quiet {
            say("server on \(url); \(participants) participants meet through its forwarding server for \(Int(seconds)) s "
                + "(\(width)x\(height) at \(frameRate) fps, a marked tone each)")
        }
        var members: [MeetingDemoParticipant] = []
        do {
            for index in 0..<participants {
                let account = "user\(index + 1)"
                members.append(try await MeetingDemoParticipant(
                    account: account, tone: 330 + 110 * Double(index), url: url, width: width, height: height, frameRate: frameRate,
                    token: try await demo.token(account)))
            }
            let usage = CPUUsage()
            let serverCPUBefore = server.forwardingServer?.statistics.threadCPUTime ?? .zero
            let started = ContinuousClock.now
            try await members[0].manager.reserveMeeting(name: "demo")
            for member in members { _ = try await member.manager.joinMeeting(name: "demo", type: .video) }
            var connected: [ContinuousClock.Instant] = []
            for member in members {
                guard let at = await member.waitConnected(timeout: 15) else {
                    throw CommandFailure("\(member.account)'s media did not connect: \(members.flatMap(\.problems))")
                }
                connected.append(at)
            }
            let join = (connected.max() ?? started) - started
            if !quiet { say("all connected in \(String(format: "%.0f", join / .milliseconds(1))) ms; meeting for \(Int(seconds)) s") }
            try await Task.sleep(for: .milliseconds(Int64(seconds * 1_000)))

            var statistics: [String: MediaReceiver.Statistics] = [:]
            for member in members { statistics[member.account] = await member.manager.currentMeetingSession?.receiveStatistics }
            let forwarding = server.forwardingServer?.statistics
            let cpu = usage.percentOfOneCore()
            let wall = ContinuousClock.now - started
            let serverCPU = ((forwarding?.threadCPUTime ?? .zero) - serverCPUBefore) / wall * 100
            for member in members { try await member.manager.leaveMeeting() }
            // The record goes to whoever leaves last.
            let record = await members[members.count - 1].waitRecord(timeout: 10)
            for member in members { await member.finishPictures() }

            var pairs: [Pair] = []
            for receiver in members {
                for sender in members where sender !== receiver {
                    pairs.append(MeetingDemoParticipant.pair(from: sender, to: receiver, statistics: statistics[receiver.account]))
                }
            }
            for member in members { await member.manager.logout() }
            await server.shutdown()
            return Report(participants: participants, seconds: seconds, joinMilliseconds: join / .milliseconds(1), pairs: pairs,
                          record: record, cpuPercentOfOneCore: cpu, serverCPUPercentOfOneCore: serverCPU,
                          serverPacketsForwarded: forwarding?.router.packetsForwarded ?? 0,
                          serverLatencyP50Microseconds: (forwarding?.latencyP50 ?? .zero) / .microseconds(1),
                          serverLatencyP99Microseconds: (forwarding?.latencyP99 ?? .zero) / .microseconds(1))
        } catch {
            for member in members { await member.manager.logout() }
            await server.shutdown()
            throw error
        }
    }

    static func text(_ report: Report) -> String {
        func f(_ value: Double, _ decimals: Int = 1) -> String { String(format: "%.\(decimals)f", value) }
        var lines = ["meeting of \(report.participants): all media connected \(f(report.joinMilliseconds, 0)) ms after the first join"]
        for pair in report.pairs {
            let loss = Double(pair.audioPacketsLost) * 100 / Double(max(1, pair.audioPacketsReceived + pair.audioPacketsLost))
            lines.append("\(pair.from) -> \(pair.to): mouth-to-ear \(pair.mouthToEarMilliseconds.map { f($0, 0) + " ms" } ?? "n/a") "
                + "(\(pair.markersMeasured) markers), audio loss \(f(loss)) %, concealed \(f(pair.audioConcealedPercent)) %; "
                + "video \(pair.videoPicturesReceived) pictures, PSNR mean \(f(pair.videoMeanPSNR)) dB, min \(f(pair.videoMinimumPSNR)) dB")
        }
        if let record = report.record {
            lines.append("meeting record: callID \(record.callID), \(Set(record.attendance.map(\.account)).count) attended")
        }
        lines.append("server: \(report.serverPacketsForwarded) packets forwarded, forwarding thread \(f(report.serverCPUPercentOfOneCore)) % "
            + "of one core, latency p50 \(f(report.serverLatencyP50Microseconds, 0)) µs, p99 \(f(report.serverLatencyP99Microseconds, 0)) µs")
        lines.append("CPU: \(f(report.cpuPercentOfOneCore, 0)) % of one core (server and all participants: VP8 and Opus each way)")
        return lines.joined(separator: "\n")
    }
}

/// One participant of the meeting demo: its manager, its tone, and what it received of
/// each other participant.
final class MeetingDemoParticipant: Sendable {
    struct Received {
        var onsets: [String: OnsetDetector] = [:]
        /// Each sender's pictures' PSNRs, once the pictures are all matched.
        var psnrs: [String: [Double]] = [:]
        var connectedAt: ContinuousClock.Instant?
        var record: MeetingRecord?
        var problems: [String] = []
        var source: MarkedToneSource?
    }

    final class State: Sendable {
        let received = Locked(Received())
    }

    let account: String
    let state = State()
    private let pictures: AsyncStream<(String, VideoFrame)>.Continuation
    private let matching: Task<Void, Never>

    init(account: String, tone frequency: Double, url: String, width: Int, height: Int, frameRate: Int, token: String) async throws {
        self.account = account
        let tone = MarkedTone(frequency: frequency)
        let state = self.state
        let (stream, pictures) = AsyncStream<(String, VideoFrame)>.makeStream()
        self.pictures = pictures
        let media: MediaSessionFactory = { _, _ in
            let source = MarkedToneSource(tone)
            state.received.withLock { $0.source = source }
            var configuration = MediaSession.Configuration(audio: source,
                                                           video: try MediaSources.video("testsrc:\(width)x\(height)@\(frameRate)"))
            configuration.host = "127.0.0.1"
            configuration.videoBitrate = 300_000
            configuration.participantAudio = { user, pcm in
                let now = ContinuousClock.now
                state.received.withLock { received in
                    received.onsets[user, default: OnsetDetector(threshold: tone.threshold)].add(pcm, playedAt: now)
                }
            }
            configuration.remoteVideo = { user, frame in pictures.yield((user, frame)) }
            return configuration
        }
        manager = NetCallManager(configuration: NetCallManager.Configuration(server: url, token: token, device: "demo", media: media))
        // Every sender's pattern is the same sequence; a receiver joins it wherever the
        // sender is (up to 20 s in).
        // Matched off the media threads and outside the lock they take; the figures are
        // published when the stream ends.
        matching = Task {
            var matchers: [String: SequenceMatcher] = [:]
            for await (user, picture) in stream {
                if matchers[user] == nil {
                    var pattern = TestPattern(width: width, height: height, frameRate: frameRate)
                    pattern.seek(to: pattern.bestMatch(for: picture, within: 20 * frameRate))
                    matchers[user] = SequenceMatcher { pattern.nextFrame() }
                }
                matchers[user]?.add(picture)
            }
            let psnrs = matchers.mapValues(\.psnrs)
            state.received.withLock { $0.psnrs = psnrs }
        }
        try await manager.login()
        Task { [manager, state] in
            for await event in manager.events {
                switch event {
                case .meetingStatus(_, .connected):
                    state.received.withLock { $0.connectedAt = $0.connectedAt ?? .now }
                case .meetingStatus(_, .disconnected(let why)):
                    state.received.withLock { $0.problems.append(why) }
                case .meetingError(_, let error):
                    state.received.withLock { $0.problems.append(error.message) }
                case .meetingRecord(let record):
                    state.received.withLock { $0.record = record }
                default:
                    break
                }
            }
        }
        Task { [manager] in for await _ in manager.mediaUpdates {} }
    }

    let manager: NetCallManager

    var problems: [String] { state.received.withLock { $0.problems } }

    /// Ends the picture stream and waits until every picture is matched.
    func finishPictures() async {
        pictures.finish()
        await matching.value
    }

    func waitConnected(timeout: Double) async -> ContinuousClock.Instant? {
        await firstValue(timeout: timeout) { state.received.withLock { $0.connectedAt } }
    }

    func waitRecord(timeout: Double) async -> MeetingRecord? {
        await firstValue(timeout: timeout) { state.received.withLock { $0.record } }
    }

    static func pair(from sender: MeetingDemoParticipant, to receiver: MeetingDemoParticipant,
                     statistics: MediaReceiver.Statistics?) -> MeetingDemo.Pair {
        let markers = sender.state.received.withLock { $0.source?.markerTimes ?? [] }
        let (onsets, psnrs) = receiver.state.received.withLock { ($0.onsets[sender.account]?.onsets ?? [], $0.psnrs[sender.account] ?? []) }
        let delays = OnsetDetector.delays(markers: markers, onsets: onsets).sorted()
        let audio = statistics?.streams.first { $0.kind == .audio && $0.participant == sender.account }
        return MeetingDemo.Pair(
            from: sender.account, to: receiver.account,
            mouthToEarMilliseconds: delays.isEmpty ? nil : delays[delays.count / 2] / .milliseconds(1),
            markersMeasured: delays.count,
            audioPacketsReceived: audio?.packetsReceived ?? 0, audioPacketsLost: audio?.packetsLost ?? 0,
            audioConcealedPercent: Double(audio?.concealedSamples ?? 0) * 100 / Double(max(1, audio?.totalSamplesReceived ?? 0)),
            videoPicturesReceived: psnrs.count,
            videoMeanPSNR: psnrs.isEmpty ? 0 : psnrs.reduce(0, +) / Double(psnrs.count), videoMinimumPSNR: psnrs.min() ?? 0)
    }
}
