import ArgumentParser
import Foundation
import MediaEngine
import Signaling
import Synchronization

struct MeetingCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "meeting",
        abstract: "Reserve and join multi-party meetings through the server's forwarding server (SFU).",
        subcommands: [Reserve.self, Join.self]
    )

    struct Reserve: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Reserve a meeting name (until everyone who joined has left, or 24 h unjoined)."
        )

        @Argument(help: "The meeting's name.")
        var name: String

        @OptionGroup var signaling: SignalingOptions

        @Option(help: "Free text kept with the meeting.")
        var ext: String?

        func run() async throws {
            let manager = NetCallManager(configuration: NetCallManager.Configuration(
                server: signaling.server, token: try signaling.loginToken(), device: signaling.device,
                media: { _, _ in throw CommandFailure("reserving sends no media") }))
            do throws(SignalingError) {
                try await manager.login()
                let reply = try await manager.reserveMeeting(name: name, ext: ext)
                say("reserved \(reply.name) (lapses unjoined at \(Date(timeIntervalSince1970: Double(reply.expiresAt) / 1_000)))")
            } catch {
                await manager.logout()
                throw CommandFailure("\(error.message) (\(error.code.rawValue))")
            }
            await manager.logout()
        }
    }

    struct Join: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Join a reserved meeting headlessly and print what happens.",
            discussion: """
            Sends audio (and video with --video) to the server once, which forwards it to every other participant, \
            and plays the mix of everyone this participant hears on --play (file:PATH.wav keeps it). Prints \
            userJoined, userLeft, speakingUsers, per-user netStatus and meetingError as they happen, and a per-user \
            media summary at the end. Leaves after --duration, on Ctrl-C, or with the `leave` command.

            With --commands, reads one command per line on standard input: role actor|audience, mute, unmute, \
            mute-audio-of USER, unmute-audio-of USER, mute-video-of USER, unmute-video-of USER, leave; and the live \
            room host's: url URL, bypass on|off, mix-mode N.

            Live rooms: --bypass-url URL joins as the host of a live room: the server mixes the room's audio, lays out \
            its video (--mix-mode 0-4: floating right, floating left, lattice fit, lattice fill, custom from \
            --layout FILE.json) and pushes it to rtmp://, rtmps://, icecast://, http:// (PUT) or a .flv/.mp4/.webm \
            file; --server-recording also records it on the server. --bypass joins as a co-host. Status events \
            (bypassStreamingStatus 500-508) print as they happen.
            """
        )

        @Argument(help: "The meeting's name.")
        var name: String

        @OptionGroup var signaling: SignalingOptions

        @Flag(help: "Join as audience: receive only, send nothing.")
        var audience = false

        @Flag(help: "Send video too.")
        var video = false

        @Option(help: "Audio to send: sine:FREQ, tones:F1,F2, silence, file:PATH, alsa:NAME.")
        var audio = "sine:440"

        @Option(help: "Video to send: testsrc[:WxH[@FPS]], v4l2:/dev/videoN[:WxH[@FPS]], file:PATH.y4m (default: a test pattern at the quality's size).")
        var videoSource: String?

        @Option(help: "Video quality: default, low, medium, high, 480p, 540p, 720p.")
        var quality = "default"

        @Option(help: "Send video as this many sizes, each half the next and none under 160x90 (1-3; 1: one stream, no simulcast). The server sends each participant the one its bandwidth and shown size allow.")
        var simulcastLayers = 3

        @Option(help: "Play what this participant hears: null, alsa:NAME, or file:PATH.wav (kept in a file).")
        var play: String?

        @Option(help: "Record the meeting's audio (everyone heard) to a .wav or .ogg file.")
        var recordAudio: String?

        @Option(name: .customLong("record-user"), parsing: .singleValue, help: "Record one participant: ACCOUNT=FILE.webm (as received) or ACCOUNT=FILE.wav; repeatable.")
        var recordUsers: [String] = []

        @Option(name: .customLong("mute-audio-of"), parsing: .singleValue, help: "Do not receive this user's audio (the server stops forwarding it); repeatable.")
        var muteAudioOf: [String] = []

        @Option(name: .customLong("mute-video-of"), parsing: .singleValue, help: "Do not receive this user's video; repeatable.")
        var muteVideoOf: [String] = []

        @Option(help: "Local address for media.")
        var mediaHost = "0.0.0.0"

        @OptionGroup var processing: AudioProcessingOptions

        @Option(help: "Leave this many seconds after joining (default: on Ctrl-C or `leave`).")
        var duration: Double?

        @Flag(help: "Print events as JSON lines.")
        var json = false

        @Option(help: "Host a live room: push the room to this URL (rtmp://, rtmps://, icecast://, http://, or a .flv/.mp4/.webm path).")
        var bypassURL: String?

        @Flag(help: "Join a live room as a co-host.")
        var bypass = false

        @Option(help: "Live room video layout (with --bypass-url): 0 floating right, 1 floating left, 2 lattice fit, 3 lattice fill.")
        var mixMode: Int?

        @Option(help: "Live room custom layout (mix mode 4): a JSON file of areas per account.")
        var layout: String?

        @Flag(help: "Also record the live room on the server (with --bypass-url).")
        var serverRecording = false

        /// The live-room options, nil for a plain join.
        func bypassOptions() throws -> BypassStreaming? {
            guard bypassURL != nil || bypass else { return nil }
            let custom = try layout.map { path in
                do { return try String(contentsOfFile: path, encoding: .utf8) } catch {
                    throw ValidationError("--layout \(path): cannot read it (\(error.localizedDescription))")
                }
            }
            return BypassStreaming(url: bypassURL, mixMode: custom != nil ? 4 : mixMode, customLayout: custom, serverRecording: serverRecording)
        }

        @Flag(help: "Read commands from standard input, one per line.")
        var commands = false

        var videoQuality: CallVideoQuality { CallVideoQuality(rawValue: quality) ?? .default }

        /// --record-user values, split.
        func userRecordings() throws -> [(user: String, path: String)] {
            try recordUsers.map { value in
                let parts = value.split(separator: "=", maxSplits: 1).map(String.init)
                guard parts.count == 2, !parts[0].isEmpty, parts[1].hasSuffix(".webm") || parts[1].hasSuffix(".wav") else {
                    throw ValidationError("--record-user \(value): use ACCOUNT=FILE.webm or ACCOUNT=FILE.wav")
                }
                try requireDirectory(of: parts[1], option: "--record-user")
                return (parts[0], parts[1])
            }
        }

        func validate() throws {
            guard CallVideoQuality(rawValue: quality) != nil else {
                throw ValidationError("--quality '\(quality)' is not one of \(CallVideoQuality.allCases.map(\.rawValue).joined(separator: ", "))")
            }
            if let duration, !(duration > 0) { throw ValidationError("--duration \(duration) must be more than 0") }
            guard (1...3).contains(simulcastLayers) else {
                throw ValidationError("--simulcast-layers \(simulcastLayers): use 1 (one stream), 2 or 3")
            }
            if bypassURL != nil, bypass { throw ValidationError("--bypass-url (host) and --bypass (co-host) exclude each other") }
            if bypassURL == nil, mixMode != nil || layout != nil || serverRecording {
                throw ValidationError("--mix-mode, --layout and --server-recording are the host's: give --bypass-url")
            }
            if mixMode != nil, layout != nil { throw ValidationError("--layout is mix mode 4; give one of --mix-mode and --layout") }
            if let mixMode, !(0...3).contains(mixMode) {
                throw ValidationError("--mix-mode \(mixMode): use 0-3 (0 floating right, 1 floating left, 2 lattice fit, 3 lattice fill), or --layout FILE.json")
            }
            if audience, bypassURL != nil || bypass { throw ValidationError("a live room's hosts and co-hosts are actors: drop --audience") }
            _ = try bypassOptions()
            if let recordAudio {
                guard recordAudio.hasSuffix(".wav") || recordAudio.hasSuffix(".ogg") else {
                    throw ValidationError("--record-audio \(recordAudio): use a .wav or .ogg file")
                }
                try requireDirectory(of: recordAudio, option: "--record-audio")
            }
            _ = try userRecordings()
            _ = try MediaSources.audio(audio)
            if let videoSource { _ = try MediaSources.video(videoSource) }
            if let play, play.hasPrefix("file:") {
                try requireDirectory(of: String(play.dropFirst(5)), option: "--play")
            } else if let play {
                _ = try MediaSources.audioSink(play)
            }
        }

        func run() async throws {
            let recordings = try userRecordings()
            let wavRecorders = Locked<[String: RemoteRecorder]>([:])
            for (user, path) in recordings where path.hasSuffix(".wav") {
                let recorder = try RemoteRecorder(path: path)
                wavRecorders.withLock { $0[user] = recorder }
            }
            let recorders = wavRecorders.withLock { $0 }
            let audio = self.audio
            let videoSource = self.videoSource
            let play = self.play
            let host = mediaHost
            let sendsVideo = video
            let processing = self.processing
            let layers = simulcastLayers
            /// What the session sends of its video, said once joined.
            let sentVideo = Locked<String?>(nil)
            let factory: MediaSessionFactory = { _, quality in
                let preset = quality.encoding
                let source = videoSource ?? "testsrc:\(preset.width)x\(preset.height)@\(preset.frameRate)"
                var configuration = MediaSession.Configuration(audio: try MediaSources.audio(audio),
                                                               video: sendsVideo ? try MediaSources.video(source) : nil)
                configuration.host = host
                configuration.videoBitrate = preset.bitrate
                configuration.audioSink = try play.map { try MediaSources.audioSink($0) }
                if let video = configuration.video {
                    let sizes = MediaSession.simulcastSizes(width: video.width, height: video.height, layers: layers).map { "\($0.width)x\($0.height)" }
                    sentVideo.withLock { $0 = sizes.count > 1 ? "video as \(sizes.count) simulcast layers: \(sizes.joined(separator: ", "))"
                                                              : "video as one stream: \(sizes.joined())" }
                }
                if processing.isSet { configuration.audioProcessing = processing.settings(base: configuration.defaultAudioProcessing) }
                if !recorders.isEmpty {
                    configuration.participantAudio = { user, pcm in recorders[user]?.write(pcm) }
                }
                return configuration
            }
            var settings = NetCallManager.Configuration(server: signaling.server, token: try signaling.loginToken(), device: signaling.device,
                                                        media: factory)
            settings.meetingSimulcastLayers = layers
            let manager = NetCallManager(configuration: settings)
            // From before the login: Ctrl-C or SIGTERM while connecting or joining ends the
            // command too (and, once joined, leaves).
            Interruption.install()
            let mutes = StandingMutes(manager: manager, audio: Set(muteAudioOf), video: Set(muteVideoOf))
            let id: UInt64
            do {
                let name = self.name, role: MeetingRole = audience ? .audience : .actor, type: CallType = video ? .video : .audio
                let videoQuality = self.videoQuality, bypass = try? bypassOptions()
                let started = Date()
                guard let joined = try await Interruption.unlessRequested({
                    try await manager.login()
                    return try await manager.joinMeeting(name: name, role: role, type: type, videoQuality: videoQuality, bypass: bypass)
                }) else {
                    await bounded(.seconds(1)) { await Self.leave(manager) }
                    await manager.logout()
                    for recorder in recorders.values { try recorder.close() }
                    say("interrupted before joining")
                    return
                }
                id = joined.callID
                say("joined \(name) callID=\(id) as \(audience ? "audience" : "actor") in \(String(format: "%.0f", Date().timeIntervalSince(started) * 1_000)) ms; "
                    + "participants: \(joined.participants.map(\.account).joined(separator: ", "))")
                if let sending = sentVideo.withLock({ $0 }) { say("sending \(sending)") }
                await mutes.applyToPresent()
                if let recordAudio { say("recording the meeting's audio to \(try await manager.startAudioRecording(path: recordAudio))") }
            } catch let error as SignalingError {
                await manager.logout()
                throw CommandFailure("\(error.message) (\(error.code.rawValue))")
            }
            let webm = recordings.filter { $0.path.hasSuffix(".webm") }
            var started: Set<String> = []
            func startRecordings() async {
                for (user, path) in webm where !started.contains(user) {
                    guard await manager.meetingParticipants.contains(where: { $0.account == user }) else { continue }
                    do throws(SignalingError) {
                        try await manager.startRecording(path: path, user: user)
                        started.insert(user)
                    } catch {
                        say("recording \(user) failed: \(error.message)")
                    }
                }
            }
            await startRecordings()

            // The latest figures, kept while the meeting runs: the summary at the end.
            let shared = Shared()
            let duration = self.duration
            let finish = Task {
                let deadline = duration.map { Date().addingTimeInterval($0) }
                while !Task.isCancelled {
                    if let session = await manager.currentMeetingSession {
                        let statistics = session.receiveStatistics
                        // Per user and kind, the last figures seen: a user who left keeps theirs.
                        shared.latest.withLock { latest in
                            for stream in statistics.streams { latest["\(stream.participant)/\(stream.kind.rawValue)"] = stream }
                        }
                    }
                    if Interruption.requested || deadline.map({ Date() >= $0 }) == true || shared.ended.load(ordering: .relaxed) { break }
                    try? await Task.sleep(for: .milliseconds(100))
                }
                // A server that does not answer cannot hold the command past its 2 s.
                await bounded(.seconds(1)) { await Self.leave(manager) }
                await manager.logout()
            }
            if commands {
                Task {
                    await Self.readCommands(manager, mutes: mutes)
                    shared.ended.store(true, ordering: .relaxed)
                }
            }
            let json = self.json
            let speaking = Task {
                for await update in manager.mediaUpdates {
                    guard case .speakingUsers(let levels) = update else { continue }
                    let text = levels.keys.sorted().map { "\($0)=\(String(format: "%.3f", levels[$0] ?? 0))" }.joined(separator: " ")
                    say(json ? Self.json(["event": "speakingUsers", "levels": levels]) : "speakingUsers \(text)")
                }
            }
            // Until logout ends the stream: after --duration, Ctrl-C, `leave`, or a meetingError.
            for await event in manager.events {
                say(json ? Self.json(event) : (CallPrinter.line(event) ?? "\(event)"))
                if case .userJoined(_, let participant) = event {
                    await mutes.apply(to: participant.account)
                    await startRecordings()
                }
                if case .meetingError(let meeting, _) = event, meeting == id { shared.ended.store(true, ordering: .relaxed) }
            }
            await finish.value
            speaking.cancel()
            say(Self.summary(shared.latest.withLock { Array($0.values) }))
            for recorder in recorders.values { try recorder.close() }
        }

        /// What the event loop and the tasks beside it share.
        final class Shared: Sendable {
            let latest = Locked<[String: InboundRTPStreamStatistics]>([:])
            let ended = Atomic<Bool>(false)
        }

        static func leave(_ manager: NetCallManager) async {
            guard await manager.currentMeetingID != nil else { return }
            do {
                try await manager.leaveMeeting()
                say("left")
            } catch {
                say("leave failed: \(error.message)")
            }
        }

        static func readCommands(_ manager: NetCallManager, mutes: StandingMutes) async {
            // Standard input is read on a thread of its own: a blocking read must not hold
            // one of Swift's few cooperative threads.
            let (lines, sink) = AsyncStream<String>.makeStream()
            Thread.detachNewThread {
                while let line = readLine() { sink.yield(line) }
                sink.finish()
            }
            for await line in lines {
                let words = line.split(separator: " ").map(String.init)
                guard let verb = words.first else { continue }
                let user = words.count > 1 ? words[1] : ""
                do throws(SignalingError) {
                    switch (verb, words.count) {
                    case ("role", 2) where ["actor", "audience"].contains(user):
                        try await manager.setMeetingRole(user == "actor" ? .actor : .audience)
                    case ("mute", 1): await manager.setMute(true)
                    case ("unmute", 1): await manager.setMute(false)
                    case ("mute-audio-of", 2), ("unmute-audio-of", 2), ("mute-video-of", 2), ("unmute-video-of", 2):
                        let present = try await mutes.set(verb.hasSuffix("audio-of") ? .audio : .video, of: user, muted: verb.hasPrefix("mute"))
                        say("ok \(line)" + (present ? "" : " (\(user) is not in the meeting: applies when they join)"))
                        continue
                    case ("url", 2): try await manager.switchBypassStreamingURL(user)
                    case ("bypass", 2) where ["on", "off"].contains(user): try await manager.setBypassStreamingEnabled(user == "on")
                    case ("mix-mode", 2) where Int(user).map({ (0...3).contains($0) }) == true:
                        try await manager.setBypassStreamingMixMode(Int(user)!)
                    case ("leave", 1):
                        return
                    default:
                        say("unknown command '\(line)': role actor|audience, mute, unmute, mute-audio-of USER, unmute-audio-of USER, "
                            + "mute-video-of USER, unmute-video-of USER, leave; live host: url URL, bypass on|off, mix-mode 0-3")
                        continue
                    }
                    say("ok \(line)")
                } catch {
                    say("\(line) failed: \(error.message) (\(error.code.rawValue))")
                }
            }
        }

        /// Per user: what arrived of their audio and video.
        static func summary(_ streams: [InboundRTPStreamStatistics]) -> String {
            let users = Dictionary(grouping: streams, by: \.participant)
            guard !users.isEmpty else { return "media: none received" }
            return users.keys.sorted().map { user in
                let parts = (users[user] ?? []).sorted { $0.kind.rawValue < $1.kind.rawValue }.map { stream in
                    var text = "\(stream.kind.rawValue) packets=\(stream.packetsReceived) lost=\(stream.packetsLost)"
                    if stream.kind == .audio, stream.totalSamplesReceived > 0 {
                        text += " concealed=\(String(format: "%.1f", Double(stream.concealedSamples) * 100 / Double(stream.totalSamplesReceived)))%"
                    } else if stream.kind == .video {
                        text += " frames=\(stream.framesDecoded)"
                    }
                    return text
                }
                return "media \(user): " + parts.joined(separator: "; ")
            }.joined(separator: "\n")
        }

        static func json(_ event: NetCallEvent) -> String {
            var object: [String: Any] = ["event": "\(event)".split(separator: "(").first.map(String.init) ?? "event"]
            object["text"] = CallPrinter.line(event) ?? "\(event)"
            return json(object)
        }

        static func json(_ object: [String: Any]) -> String {
            guard let data = try? JSONSerialization.data(withJSONObject: object, options: [.sortedKeys]) else { return "{}" }
            return String(decoding: data, as: UTF8.self)
        }
    }
}
