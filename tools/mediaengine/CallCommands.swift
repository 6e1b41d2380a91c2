import ArgumentParser
import Foundation
import MediaEngine
import Signaling

/// Prints a line to standard output at once (unbuffered): scripts and tests follow calls
/// as they happen.
func say(_ text: String) {
    FileHandle.standardOutput.write(Data((text + "\n").utf8))
}

/// A failure while a command runs, printed as `Error: MESSAGE`.
struct CommandFailure: Error, CustomStringConvertible {
    let description: String
    init(_ description: String) { self.description = description }
}

/// Where the signaling server is and who we are.
struct SignalingOptions: ParsableArguments {
    @Option(help: "Signaling server, ws://HOST:PORT/.")
    var server: String

    @Option(help: "File holding the login token (from `mediaengine token`; keep it mode 600). Or set MEDIAENGINE_TOKEN.")
    var tokenFile: String?

    @Option(help: "Login token. Every user of this machine sees it in the process list: prefer --token-file or MEDIAENGINE_TOKEN.")
    var token: String?

    @Option(help: "This device's name (an account may be logged in on several).")
    var device = "cli"

    func validate() throws {
        _ = try SecretSource.token.require(argument: token, file: tokenFile)
    }

    /// The token from --token-file, MEDIAENGINE_TOKEN or --token (checked and warned
    /// about in `validate`).
    func loginToken() throws -> String {
        try SecretSource.token.require(argument: token, file: tokenFile, warn: { _ in })
    }
}

/// What a call sends and what becomes of what it receives.
struct CallMediaOptions: ParsableArguments {
    @Option(help: "Audio to send: sine:FREQ, tones:F1,F2, silence, file:PATH, alsa:NAME.")
    var audio = "sine:440"

    @Option(help: "Video to send: testsrc[:WxH[@FPS]], v4l2:/dev/videoN[:WxH[@FPS]], file:PATH.y4m (default: a test pattern at the quality's size).")
    var videoSource: String?

    @Option(help: "Video quality: default, low, medium, high, 480p, 540p, 720p (size, rate and bitrate).")
    var quality = "default"

    @Option(help: "Play the peer's audio: alsa:NAME or null.")
    var play: String?

    @Option(help: "Record the peer: to a .webm file (its audio and video as received), or its audio to a .wav file.")
    var recordRemote: String?

    @Option(help: "Local address for media; 0.0.0.0 offers every interface.")
    var mediaHost = "0.0.0.0"

    @Option(help: "Hang up this many seconds after the media connects (default: when the peer hangs up or Ctrl-C).")
    var duration: Double?

    @OptionGroup var outputs: LocalOutputOptions
    @OptionGroup var mix: MixOptions
    @OptionGroup var processing: AudioProcessingOptions

    var videoQuality: CallVideoQuality { CallVideoQuality(rawValue: quality) ?? .default }

    func check() throws {
        guard CallVideoQuality(rawValue: quality) != nil else {
            throw ValidationError("--quality '\(quality)' is not one of \(CallVideoQuality.allCases.map(\.rawValue).joined(separator: ", "))")
        }
        if let duration, !(duration > 0) { throw ValidationError("--duration \(duration) must be more than 0") }
        if let recordRemote {
            guard recordRemote.hasSuffix(".wav") || recordRemote.hasSuffix(".webm") else {
                throw ValidationError("--record-remote \(recordRemote): use a .webm or .wav file")
            }
            try requireDirectory(of: recordRemote, option: "--record-remote")
        }
        try outputs.check()
        // Open each source once now, so a bad spec is named before any call is placed.
        _ = try MediaSources.audio(audio)
        if let videoSource { _ = try MediaSources.video(videoSource) }
        if let play { _ = try MediaSources.audioSink(play) }
        try mix.check()
    }

    /// The WAV recorder of the peer's audio, when --record-remote names a .wav file.
    func remoteAudioRecorder() throws -> RemoteRecorder? {
        guard let recordRemote, recordRemote.hasSuffix(".wav") else { return nil }
        return try RemoteRecorder(path: recordRemote)
    }

    /// The WebM recordings to start once a call connects.
    var webmRecordings: CallLoop.Recordings {
        CallLoop.Recordings(remote: recordRemote.flatMap { $0.hasSuffix(".webm") ? $0 : nil }, local: outputs.recordLocal,
                            videoBitrate: outputs.recordVideoBitrate, audio: outputs.recordAudio)
    }

    /// Builds each call's media from these options.
    func factory(recorder: RemoteRecorder?) -> MediaSessionFactory {
        let audio = self.audio
        let videoSource = self.videoSource
        let play = self.play
        let host = mediaHost
        let processing = self.processing
        return { type, quality in
            let preset = quality.encoding
            let video = videoSource ?? "testsrc:\(preset.width)x\(preset.height)@\(preset.frameRate)"
            var configuration = MediaSession.Configuration(audio: try MediaSources.audio(audio),
                                                           video: type == .video ? try MediaSources.video(video) : nil)
            configuration.host = host
            configuration.videoBitrate = preset.bitrate
            configuration.audioSink = try play.map { try MediaSources.audioSink($0) }
            if let recorder { configuration.remoteAudio = { recorder.write($0) } }
            if processing.isSet { configuration.audioProcessing = processing.settings(base: configuration.defaultAudioProcessing) }
            return configuration
        }
    }
}

/// The peer's audio to a WAV file. Written only on the media session's receive thread and
/// closed after the session stopped, which is why the unchecked Sendable is safe.
final class RemoteRecorder: @unchecked Sendable {
    private let writer: WAVWriter
    private(set) var failure: String?

    init(path: String) throws {
        writer = try WAVWriter(path: path, layout: .mono)
    }

    func write(_ samples: UnsafeBufferPointer<Int16>) {
        guard failure == nil else { return }
        do { try writer.write(samples) } catch { failure = "\(error)" }
    }

    func close() throws {
        try writer.close()
        if let failure { throw CommandFailure("recording \(writer.path): \(failure)") }
    }

    var seconds: Double { Double(writer.samplesWritten) / Double(AudioFrame.sampleRate) }
}

/// One line per event, as a call prints them.
enum CallPrinter {
    static func line(_ event: NetCallEvent) -> String? {
        switch event {
        case .receive(let id, let from, let type, let option):
            "receive callID=\(id) from=\(from) type=\(type) quality=\(option.videoQuality.rawValue)"
                + (option.extendMessage.map { " extend=\($0)" } ?? "")
        case .response(let id, let from, let accepted): "response callID=\(id) from=\(from) accepted=\(accepted)"
        case .responsedByOther(let id, let accepted): "responsedByOther callID=\(id) accepted=\(accepted)"
        case .callStatus(let id, .connected): "callStatus callID=\(id) connected"
        case .mediaPath(let id, let pair, let rtt):
            "mediaPath callID=\(id) \(pair.pathKind) local=\(pair.local.kind):\(pair.local.address) remote=\(pair.remote.kind):\(pair.remote.address)"
                + (rtt.map { " rtt=\(Int($0.rounded()))ms" } ?? "")
        case .callStatus(let id, .disconnected(let why)): "callStatus callID=\(id) disconnected: \(why)"
        case .control(let id, let from, let control): "control callID=\(id) from=\(from) \(control)"
        case .hangup(let id, let by, let reason): "hangup callID=\(id) by=\(by ?? "server") reason=\(reason.rawValue)"
        case .callRecord(let record):
            "callRecord callID=\(record.callID) \(record.caller)->\(record.callee) \(record.type) reason=\(record.endReason.rawValue) "
                + "connected=\(String(format: "%.1f", Double(record.connectedDuration) / 1_000))s"
        case .netStatus(let user, let status, let loss, let rtt, let jitter):
            "netStatus \(user) \(status) loss=\(String(format: "%.1f", loss))% rtt=\(Int(rtt))ms jitter=\(Int(jitter))ms"
        case .connectionLost(let why): "signaling connection lost: \(why); reconnecting"
        case .reconnected: "signaling reconnected"
        case .audioMixTaskCompleted(let task): "audioMixTaskCompleted \(task.fileURL.path)"
        case .recordStarted(let id, let file, let user): "recordStarted callID=\(id) user=\(user) file=\(file)"
        case .recordError(let id, let user, let error): "recordError callID=\(id) user=\(user): \(error.message)"
        case .recordStopped(let id, let file, let user): "recordStopped callID=\(id) user=\(user) file=\(file)"
        case .recordVideoSizeChanged(let id, let user, let width, let height):
            "recordVideoSizeChanged callID=\(id) user=\(user) \(width)x\(height)"
        case .userJoined(let id, let participant):
            "userJoined callID=\(id) user=\(participant.account) role=\(participant.role) type=\(participant.type)"
        case .userLeft(let id, let user, let reason): "userLeft callID=\(id) user=\(user) reason=\(reason.rawValue)"
        case .meetingRoleChanged(let id, let user, let role): "meetingRoleChanged callID=\(id) user=\(user) role=\(role)"
        case .meetingStatus(let id, .connected): "meetingStatus callID=\(id) connected"
        case .meetingStatus(let id, .disconnected(let why)): "meetingStatus callID=\(id) disconnected: \(why)"
        case .meetingError(let id, let error): "meetingError callID=\(id) \(error.code.rawValue): \(error.message)"
        case .meetingRecord(let record):
            "meetingRecord callID=\(record.callID) name=\(record.name) duration=\(String(format: "%.1f", Double(record.duration) / 1_000))s "
                + "attendance=" + record.attendance.map { "\($0.account)/\($0.role)/\(String(format: "%.1f", Double($0.duration) / 1_000))s" }
                .joined(separator: ",")
        case .bypassStreamingStatus(let id, let output, let status, let error):
            "bypassStreamingStatus callID=\(id) output=\(output) status=\(status)" + (error.map { " \($0.code.rawValue): \($0.message)" } ?? "")
        case .bypassStreamingURLSwitched(let id, let error):
            "bypassStreamingUrlSwitched callID=\(id) " + (error.map { "failed \($0.code.rawValue): \($0.message)" } ?? "ok")
        case .bypassStreamingEnabled(let id, let enabled, let error):
            "bypassStreamingEnabled callID=\(id) enabled=\(enabled) " + (error.map { "failed \($0.code.rawValue): \($0.message)" } ?? "ok")
        }
    }

    static func summary(_ summary: MediaSession.Summary?) -> String {
        guard let summary else { return "media: none" }
        var parts: [String] = []
        if let sent = summary.sent {
            parts.append("sent audio=\(sent.audioPackets) video=\(sent.videoPackets) packets, \(sent.videoFrames) frames, "
                + "\(sent.retransmissions) resent")
        }
        if let received = summary.received {
            for stream in received.streams {
                var text = "received \(stream.kind.rawValue) packets=\(stream.packetsReceived) lost=\(stream.packetsLost) "
                    + "jitter=\(String(format: "%.1f", stream.jitter * 1_000))ms"
                if stream.kind == .audio, stream.totalSamplesReceived > 0 {
                    text += " concealed=\(String(format: "%.1f", Double(stream.concealedSamples) * 100 / Double(stream.totalSamplesReceived)))%"
                } else if stream.kind == .video {
                    text += " frames=\(stream.framesDecoded)"
                }
                parts.append(text)
            }
            if let rtt = received.roundTripTime { parts.append("rtt=\(String(format: "%.1f", rtt * 1_000))ms") }
        }
        if let ice = summary.ice {
            parts.append("ice checks sent=\(ice.requestsSent) answered=\(ice.requestsAnswered) accepted=\(ice.responsesAccepted) "
                + "dropped=\(ice.dropped)")
        }
        if let relay = summary.relay {
            parts.append("relay packets sent=\(relay.packetsSent) received=\(relay.packetsReceived) ignored=\(relay.ignoredDatagrams) requests=\(relay.requestsSent) errors=\(relay.errorsByCode)")
        }
        if let processed = summary.audioProcessing { parts.append(processingSummary(processed)) }
        if let failure = summary.relayFailure { parts.append("relay failed: \(failure)") }
        if let failure = summary.failure { parts.append("failure: \(failure)") }
        return "media: " + (parts.isEmpty ? "none" : parts.joined(separator: "; "))
    }
}

extension CallPrinter {
    /// The capture processing's figures: the W3C media-source names where they exist.
    static func processingSummary(_ statistics: AudioProcessor.Statistics) -> String {
        var text = "processing voice=\(String(format: "%.1f", statistics.voiceFraction * 100))% blocks=\(statistics.captureBlocks)"
        if let erl = statistics.echoReturnLoss { text += " echoReturnLoss=\(String(format: "%.0f", erl))dB" }
        if let erle = statistics.echoReturnLossEnhancement { text += " echoReturnLossEnhancement=\(String(format: "%.0f", erle))dB" }
        if let delay = statistics.reportedDelay { text += " delay=\(Int((delay.seconds * 1_000).rounded()))ms" }
        if let estimate = statistics.estimatedDelay { text += " estimatedDelay=\(Int((estimate.seconds * 1_000).rounded()))ms" }
        if statistics.failedBlocks > 0 { text += " failed=\(statistics.failedBlocks)" }
        return text
    }
}

/// Drives one call's events until its record arrives: prints them, hangs up after the
/// duration or on Ctrl-C.
enum CallLoop {
    /// Recordings to start when the call connects.
    struct Recordings {
        var remote: String?
        var local: String?
        var videoBitrate: Int?
        var audio: String?
    }

    static func run(_ manager: NetCallManager, duration: Double?, mixTask: @escaping () throws -> AudioFileMixTask? = { nil },
                    recordings: Recordings = Recordings(), snapshot: String? = nil,
                    untilRecordOf callID: @escaping @Sendable () async -> UInt64?,
                    onEvent: @escaping (NetCallEvent) async -> Void = { _ in }) async {
        Interruption.install()
        // Ctrl-C or SIGTERM in any state: a call (ringing, connecting, connected) is hung
        // up and its record awaited briefly; then, or at once with no call (waiting for
        // one, or reconnecting to a server that went away), logging out ends the events.
        let watcher = Task {
            await Interruption.wait()
            guard !Task.isCancelled else { return }
            if await manager.currentCallID != nil {
                await bounded(.seconds(1)) { try? await manager.hangup() }
                // The record ends the loop, and cancels this task, as soon as it comes.
                try? await Task.sleep(for: .milliseconds(600))
                guard !Task.isCancelled else { return }
            }
            await manager.logout()
        }
        defer { watcher.cancel() }
        var lastNetStatus = Date.distantPast
        for await event in manager.events {
            await onEvent(event)
            if case .netStatus = event {
                // One line every 2 s is enough on a terminal.
                guard Date().timeIntervalSince(lastNetStatus) >= 2 else { continue }
                lastNetStatus = Date()
            }
            if let line = CallPrinter.line(event) { say(line) }
            if case .callStatus(let id, .connected) = event {
                if let mix = try? mixTask() { try? await manager.startAudioMix(mix) }
                if let snapshot {
                    if let picture = await manager.snapshotLocalVideo() {
                        do {
                            try picture.writePNG(path: snapshot)
                            say("snapshot \(picture.width)x\(picture.height) saved to \(snapshot)")
                        } catch {
                            say("snapshot failed: \(error)")
                        }
                    } else {
                        say("snapshot failed: no picture is being sent")
                    }
                }
                if let recordAudio = recordings.audio {
                    do throws(SignalingError) {
                        say("recording the call's audio to \(try await manager.startAudioRecording(path: recordAudio))")
                    } catch {
                        say("recording failed: \(error.message)")
                    }
                }
                let peer = await manager.currentPeer
                let me = await manager.account
                for (path, user, bitrate) in [(recordings.remote, peer, nil), (recordings.local, me, recordings.videoBitrate)] {
                    guard let path, let user else { continue }
                    do throws(SignalingError) {
                        try await manager.startRecording(path: path, videoBitrate: bitrate, user: user)
                    } catch {
                        say("recording failed: \(error.message)")
                    }
                }
                if let duration {
                    Task {
                        try? await Task.sleep(for: .milliseconds(Int64(duration * 1_000)))
                        try? await manager.hangup(callID: id)
                    }
                }
            }
            if case .callRecord(let record) = event, await callID() == record.callID { return }
        }
    }
}

struct CallCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "call",
        abstract: "Place a P2P audio or video call to an account and print what happens.",
        discussion: """
        Logs in to the signaling server, calls ACCOUNT, and once the callee accepts sends audio (and video with \
        --video) directly to the callee's host, SRTP-protected. Prints the call's events as they happen and a \
        summary of the media at the end. Hangs up after --duration, on Ctrl-C, or when the callee does.
        """
    )

    @Argument(help: "The account to call.")
    var account: String

    @OptionGroup var signaling: SignalingOptions
    @OptionGroup var media: CallMediaOptions

    @Flag(help: "A video call (default: audio only).")
    var video = false

    @Option(help: "Text delivered with the invitation.")
    var extendMessage: String?

    func validate() throws {
        try media.check()
    }

    func run() async throws {
        Interruption.install()
        let recorder = try media.remoteAudioRecorder()
        let manager = NetCallManager(configuration: NetCallManager.Configuration(
            server: signaling.server, token: try signaling.loginToken(), device: signaling.device, media: media.factory(recorder: recorder)))
        do {
            guard try await Interruption.unlessRequested({ try await manager.login() }) != nil else {
                await manager.logout()
                try recorder?.close()
                say("interrupted before the call")
                return
            }
            let started = Date()
            let id = try await manager.start(callee: account, type: video ? .video : .audio,
                                             option: CallOption(videoQuality: media.videoQuality, extendMessage: extendMessage))
            say("calling \(account) callID=\(id)")
            await CallLoop.run(manager, duration: media.duration, mixTask: media.mix.task, recordings: media.webmRecordings,
                               snapshot: media.outputs.snapshot, untilRecordOf: { id }) { event in
                if case .callStatus(_, .connected) = event {
                    say("setup \(String(format: "%.0f", Date().timeIntervalSince(started) * 1_000)) ms")
                }
            }
        } catch let error as SignalingError {
            await manager.logout()
            throw CommandFailure("\(error.message) (\(error.code.rawValue))")
        }
        say(CallPrinter.summary(await manager.lastCallSummary))
        await manager.logout()
        try recorder?.close()
    }
}

struct AnswerCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "answer",
        abstract: "Wait for calls and accept or reject them, printing what happens.",
        discussion: """
        Logs in and waits. Each invitation is accepted (--auto-accept) or rejected (--reject); an accepted call's \
        media goes directly to the caller's host. Exits after --calls calls, or on Ctrl-C.
        """
    )

    @OptionGroup var signaling: SignalingOptions
    @OptionGroup var media: CallMediaOptions

    @Flag(help: "Accept every call.")
    var autoAccept = false

    @Flag(help: "Reject every call.")
    var reject = false

    @Option(help: "Calls to handle before exiting.")
    var calls = 1

    func validate() throws {
        guard autoAccept != reject else { throw ValidationError("give one of --auto-accept or --reject") }
        guard calls > 0 else { throw ValidationError("--calls \(calls) must be at least 1") }
        try media.check()
    }

    func run() async throws {
        Interruption.install()
        let recorder = try media.remoteAudioRecorder()
        let manager = NetCallManager(configuration: NetCallManager.Configuration(
            server: signaling.server, token: try signaling.loginToken(), device: signaling.device, media: media.factory(recorder: recorder)))
        do {
            guard let login = try await Interruption.unlessRequested({ try await manager.login() }) else {
                await manager.logout()
                try recorder?.close()
                say("interrupted before logging in")
                return
            }
            say("waiting for calls as \(login.account)")
        } catch let error as SignalingError {
            throw CommandFailure("\(error.message) (\(error.code.rawValue))")
        }
        let accept = autoAccept
        for _ in 0..<calls {
            let current = CallBox()
            await CallLoop.run(manager, duration: media.duration, mixTask: media.mix.task, recordings: media.webmRecordings,
                               snapshot: media.outputs.snapshot, untilRecordOf: { await current.id }) { event in
                guard case .receive(let id, _, _, _) = event else { return }
                await current.set(id)
                do throws(SignalingError) {
                    try await manager.response(callID: id, accept: accept)
                } catch {
                    say("response failed: \(error.message)")
                }
            }
            say(CallPrinter.summary(await manager.lastCallSummary))
            if Interruption.requested { break }
        }
        await manager.logout()
        try recorder?.close()
    }
}

/// The call an answering loop is handling.
actor CallBox {
    var id: UInt64?
    func set(_ id: UInt64) { self.id = id }
}
