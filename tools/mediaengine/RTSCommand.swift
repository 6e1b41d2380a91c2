import ArgumentParser
import Foundation
import MediaEngine
import MediaServer
import Signaling

/// `mediaengine rts`: real-time sessions (reliable data between two users) and conferences.
struct RTSCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "rts",
        abstract: "Real-time sessions: reliable, ordered data between two users or in a conference, relayed by the server.",
        discussion: """
        Data to send comes from standard input, one message per line (the newline is not sent), or from \
        --send-file in chunks. What arrives goes to standard output, one message per line, or to --receive-file \
        as raw bytes. Events go to standard error.
        """,
        subcommands: [RTSCallCommand.self, RTSAnswerCommand.self, RTSReserveCommand.self, RTSJoinCommand.self, RTSDumpCommand.self]
    )
}

/// Where a session's data comes from and where what arrives goes.
struct RTSDataOptions: ParsableArguments {
    @Option(help: "Send this file in chunks (default: standard input, one message per line).")
    var sendFile: String?

    @Option(help: "Bytes per chunk of --send-file (1 to 51200; 4096 is what NIM recommends).")
    var chunkSize = 4_096

    @Option(help: "Write what arrives to this file, as raw bytes (default: standard output, one message per line).")
    var receiveFile: String?

    @Flag(help: "Prefix each message written to standard output with its sender and a tab.")
    var showSender = false

    @Flag(help: "Ask the server not to record this member's data.")
    var noRecord = false

    func check() throws {
        guard (1...(50 * 1_024)).contains(chunkSize) else { throw ValidationError("--chunk-size \(chunkSize) must be 1 to 51200") }
        if let sendFile {
            var isDirectory: ObjCBool = false
            guard FileManager.default.fileExists(atPath: sendFile, isDirectory: &isDirectory) else {
                throw ValidationError("--send-file \(sendFile): no such file")
            }
            guard !isDirectory.boolValue else { throw ValidationError("--send-file \(sendFile): is a directory") }
            guard FileManager.default.isReadableFile(atPath: sendFile) else {
                throw ValidationError("--send-file \(sendFile): cannot be read (permission denied)")
            }
        }
        if let receiveFile {
            let directory = (receiveFile as NSString).deletingLastPathComponent
            var isDirectory: ObjCBool = false
            guard FileManager.default.fileExists(atPath: directory.isEmpty ? "." : directory, isDirectory: &isDirectory),
                  isDirectory.boolValue else {
                throw ValidationError("--receive-file \(receiveFile): directory \(directory) does not exist")
            }
        }
    }

    /// Where received data goes.
    func sink() throws -> RTSDataSink {
        if let receiveFile {
            guard FileManager.default.createFile(atPath: receiveFile, contents: nil), let handle = FileHandle(forWritingAtPath: receiveFile) else {
                throw CommandFailure("--receive-file \(receiveFile): cannot be created")
            }
            return RTSDataSink(handle: handle, lines: false, showSender: false)
        }
        return RTSDataSink(handle: .standardOutput, lines: true, showSender: showSender)
    }

    /// Sends every message of the input through `send`; returns how many were sent.
    func sendInput(_ send: @escaping @Sendable (Data) async throws(SignalingError) -> Void) async throws -> Int {
        var sent = 0
        if let sendFile {
            guard let handle = FileHandle(forReadingAtPath: sendFile) else { throw CommandFailure("--send-file \(sendFile): cannot be read") }
            defer { try? handle.close() }
            while !Interruption.requested {
                let chunk = handle.readData(ofLength: chunkSize)
                if chunk.isEmpty { break }
                try await send(chunk)
                sent += 1
            }
            return sent
        }
        let lines = LineReader(descriptor: 0, maximumLength: 50 * 1_024)
        var number = 0
        while !Interruption.requested, let line = await lines.next() {
            number += 1
            switch line {
            case .line(let data):
                try await send(data)
                sent += 1
            case .tooLong(let length):
                printError("rts: line \(number) is longer than the \(50 * 1_024) bytes a message may hold (\(length)+ bytes); not sent")
            }
        }
        return sent
    }
}

/// Writes received data: lines to standard output, or raw bytes to a file.
final class RTSDataSink: Sendable {
    let handle: FileHandle
    let lines: Bool
    let showSender: Bool

    init(handle: FileHandle, lines: Bool, showSender: Bool) {
        self.handle = handle
        self.lines = lines
        self.showSender = showSender
    }

    func write(_ data: RTSData) {
        guard lines else {
            handle.write(data.data)
            return
        }
        var out = Data(capacity: data.data.count + data.from.utf8.count + 2)
        if showSender { out.append(contentsOf: Array((data.from + "\t").utf8)) }
        out.append(data.data)
        out.append(0x0A)
        handle.write(out)
    }

    func close() {
        if !lines { try? handle.close() }
    }
}

/// Lines of a file descriptor, read on a thread of their own (a read blocks) and handed over
/// at most 256 ahead of the reader. A reader that stops early leaves the thread blocked
/// until the process ends (a command's input is read once).
final class LineReader: Sendable {
    enum Line: Sendable {
        case line(Data)
        /// A line longer than the maximum (its bytes are skipped); its length so far.
        case tooLong(Int)
    }

    private let queue = Locked<(lines: [Line?], waiter: CheckedContinuation<Line?, Never>?)>(([], nil))
    /// Lines handed over and not yet taken, against 256. Not a DispatchSemaphore: libdispatch
    /// traps when one is freed below its initial count (a reader that stopped early).
    private let room = NSCondition()
    nonisolated(unsafe) private var ahead = 0

    init(descriptor: Int32, maximumLength: Int) {
        Thread.detachNewThread { [self] in
            var buffer = [UInt8](repeating: 0, count: 65_536)
            var current = Data()
            var skipping = 0
            while true {
                let count = buffer.withUnsafeMutableBytes { read(descriptor, $0.baseAddress, $0.count) }
                if count < 0 && errno == EINTR { continue }
                guard count > 0 else { break }
                var start = 0
                for index in 0..<count where buffer[index] == 0x0A {
                    if skipping > 0 {
                        self.deliver(.tooLong(skipping + index - start))
                        skipping = 0
                    } else {
                        current.append(contentsOf: buffer[start..<index])
                        if current.count > maximumLength {
                            self.deliver(.tooLong(current.count))
                        } else {
                            self.deliver(.line(current))
                        }
                    }
                    current = Data()
                    start = index + 1
                }
                if skipping > 0 {
                    skipping += count - start
                } else {
                    current.append(contentsOf: buffer[start..<count])
                    if current.count > maximumLength {
                        skipping = current.count
                        current = Data()
                    }
                }
            }
            if skipping > 0 { self.deliver(.tooLong(skipping)) } else if !current.isEmpty { self.deliver(.line(current)) }
            self.deliver(nil)
        }
    }

    private func deliver(_ line: Line?) {
        room.lock()
        while ahead >= 256 { room.wait() }
        ahead += 1
        room.unlock()
        let waiter = queue.withLock { state -> CheckedContinuation<Line?, Never>? in
            if let waiter = state.waiter {
                state.waiter = nil
                return waiter
            }
            state.lines.append(line)
            return nil
        }
        if let waiter {
            taken()
            waiter.resume(returning: line)
        }
    }

    private func taken() {
        room.lock()
        ahead -= 1
        room.signal()
        room.unlock()
    }

    /// The next line; nil at the end of the input.
    func next() async -> Line? {
        await withCheckedContinuation { continuation in
            let line: Line?? = queue.withLock { state in
                guard !state.lines.isEmpty else {
                    state.waiter = continuation
                    return .none
                }
                return .some(state.lines.removeFirst())
            }
            if case .some(let line) = line {
                taken()
                continuation.resume(returning: line)
            }
        }
    }
}

/// The voice channel's media: what `rts call --audio` sends, and what `rts answer` uses when
/// a request asks for a voice channel.
struct RTSVoiceOptions: ParsableArguments {
    @Option(help: "What the voice channel sends: sine:FREQ, tones:F1,F2, silence, file:PATH, alsa:NAME.")
    var voiceSource = "sine:440"

    @Option(help: "Play the peer's voice: alsa:NAME or null.")
    var voicePlay: String?

    @Option(help: "Record the peer's voice to a .wav file.")
    var recordVoice: String?

    @Option(help: "Local address for the voice channel's media; 0.0.0.0 offers every interface.")
    var mediaHost = "0.0.0.0"

    func check() throws {
        _ = try MediaSources.audio(voiceSource)
        if let voicePlay { _ = try MediaSources.audioSink(voicePlay) }
        if let recordVoice {
            guard recordVoice.hasSuffix(".wav") else { throw ValidationError("--record-voice \(recordVoice): use a .wav file") }
            try requireDirectory(of: recordVoice, option: "--record-voice")
        }
    }

    func recorder() throws -> RemoteRecorder? { try recordVoice.map { try RemoteRecorder(path: $0) } }

    /// The voice channel's media session (audio only: a session has no video).
    func factory(recorder: RemoteRecorder?) -> MediaSessionFactory {
        let source = voiceSource
        let play = voicePlay
        let host = mediaHost
        return { _, _ in
            var configuration = MediaSession.Configuration(audio: try MediaSources.audio(source), video: nil)
            configuration.host = host
            configuration.audioSink = try play.map { try MediaSources.audioSink($0) }
            if let recorder { configuration.remoteAudio = { recorder.write($0) } }
            return configuration
        }
    }
}

/// What the commands share: a logged-in manager, and printing events.
enum RTSRunner {
    /// A manager for `signaling`; its voice channels, if any, made from `voice`.
    static func manager(_ signaling: SignalingOptions, voice: RTSVoiceOptions? = nil, recorder: RemoteRecorder? = nil) throws -> NetCallManager {
        let noVoice: MediaSessionFactory = { _, _ in throw SignalingError(.operationFailed, "this command has no voice channel") }
        let media = voice?.factory(recorder: recorder) ?? noVoice
        return NetCallManager(configuration: NetCallManager.Configuration(server: signaling.server, token: try signaling.loginToken(),
                                                                          device: signaling.device, media: media))
    }

    static func describe(_ event: RTSEvent) -> String? {
        switch event {
        case .request(let session, _, let from, let services, let text):
            "rts: request from \(from) session=\(session) services=\(services.map(\.rawValue).joined(separator: ","))"
                + (text.map { " extendMessage=\($0)" } ?? "")
        case .response(let session, let from, let accepted): "rts: \(from) \(accepted ? "accepted" : "rejected") session=\(session)"
        case .responsedByOther(let session, let accepted): "rts: another device \(accepted ? "accepted" : "rejected") session=\(session)"
        case .serviceStatus(let session, let service, let status): "rts: \(service) \(status.rawValue) session=\(session)"
        case .data: nil
        case .control(let session, let from, let text): "rts: control from \(from) session=\(session): \(text)"
        case .terminate(let session, let by, let reason): "rts: session \(session) ended (\(reason.rawValue))" + (by.map { " by \($0)" } ?? "")
        case .userJoined(_, let name, let account): "rts: \(account) joined \(name)"
        case .userLeft(_, let name, let account, let reason): "rts: \(account) left \(name) (\(reason.rawValue))"
        case .leftConference(_, let name, let error): "rts: out of \(name): \(error.message) (\(error.code.rawValue))"
        case .dataRefused(let first, let last, let count, let error):
            "rts: the server refused " + (first == last ? "message \(first)" : "\(count) of messages \(first)-\(last)")
                + ": \(error.message) (\(error.code.rawValue))"
        }
    }

    /// Reads `manager`'s events until they end: data to `sink`, everything else printed
    /// (but the end-of-input control text) and handed to `handle`; then `finished`.
    static func read(_ manager: NetCallManager, into sink: RTSDataSink, finished: @escaping @Sendable () async -> Void,
                     handle: @escaping @Sendable (RTSEvent) async -> Void) -> Task<Void, Never> {
        Task {
            for await event in manager.rtsEvents {
                if case .data(let message) = event {
                    sink.write(message)
                    continue
                }
                if case .control(_, _, endOfInput) = event {} else if let text = describe(event) { printError(text) }
                await handle(event)
            }
            await finished()
        }
    }

    /// Runs `body` on the first Ctrl-C (cancel the task when done waiting for one).
    static func onInterruption(_ body: @escaping @Sendable () async -> Void) -> Task<Void, Never> {
        Task {
            await Interruption.wait()
            if !Task.isCancelled { await body() }
        }
    }

    /// The control text a side sends once its input is all sent: a session ends once both
    /// sides sent it (or one side ends it).
    static let endOfInput = "mediaengine:eof"

    static func failure(_ error: SignalingError) -> CommandFailure {
        CommandFailure("\(error.message) (\(error.code.rawValue))")
    }
}

/// Waits for one session to end, writing its data; returns when it ended.
actor RTSSessionWatch {
    private var ended = false
    private var waiters: [CheckedContinuation<Void, Never>] = []

    func end() {
        ended = true
        for waiter in waiters { waiter.resume() }
        waiters.removeAll()
    }

    var isEnded: Bool { ended }

    func wait() async {
        if ended { return }
        await withCheckedContinuation { waiters.append($0) }
    }
}

struct RTSCallCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "call",
        abstract: "Request a session with ACCOUNT, send the input once it accepts, and print what arrives.",
        discussion: """
        Ends the session once both sides sent their input (each side's end of input is the control text \
        'mediaengine:eof'), when the other side ends it, or on Ctrl-C; with --stay, only the last two; with \
        --duration, that long after the other side accepted. With --audio a voice channel joins: a P2P audio \
        session sending --voice-source, the peer's voice played on --voice-play or recorded to --record-voice.
        """
    )

    @Argument(help: "The account to ask.")
    var account: String

    @OptionGroup var signaling: SignalingOptions
    @OptionGroup var data: RTSDataOptions

    @Option(help: "Text delivered with the request.")
    var extendMessage: String?

    @Flag(help: "A voice channel as well: a P2P audio session with the other side (exclusive with calls).")
    var audio = false

    @OptionGroup var voice: RTSVoiceOptions

    @Flag(help: "Keep the session after the input ends, until the other side ends it or Ctrl-C.")
    var stay = false

    @Option(help: "End the session this many seconds after it was accepted (default: once both inputs ended).")
    var duration: Double?

    func validate() throws {
        try data.check()
        try voice.check()
        if let duration, !(duration > 0) { throw ValidationError("--duration \(duration) must be more than 0") }
    }

    func run() async throws {
        Interruption.install()
        let recorder = try voice.recorder()
        let manager = try RTSRunner.manager(signaling, voice: voice, recorder: recorder)
        let sink = try data.sink()
        defer { sink.close() }
        // The voice recording closes once the manager stopped the voice channel (at logout).
        defer { try? recorder?.close() }
        do {
            guard try await Interruption.unlessRequested({ try await manager.login() }) != nil else {
                await manager.logout()
                return
            }
            let session = try await manager.requestRTS(callee: account, services: audio ? [.data, .audio] : [.data], extendMessage: extendMessage,
                                                       disableRecord: data.noRecord)
            printError("rts: requested session=\(session.sessionID) channel=\(session.channelID)"
                       + (session.recordFile.map { " recordFile=\($0)" } ?? ""))
            let accepted = RTSSessionWatch()
            let ended = RTSSessionWatch()
            let peerDone = RTSSessionWatch()
            let over: @Sendable () async -> Void = {
                await ended.end()
                await accepted.end()
                await peerDone.end()
            }
            let reader = RTSRunner.read(manager, into: sink, finished: over) { event in
                switch event {
                case .control(session.sessionID, _, RTSRunner.endOfInput): await peerDone.end()
                case .response(session.sessionID, _, true): await accepted.end()
                case .response(session.sessionID, _, false), .terminate(session.sessionID, _, _): await over()
                default: break
                }
            }
            let interrupted = RTSRunner.onInterruption(over)
            await accepted.wait()
            if await !ended.isEnded, !Interruption.requested {
                let sent = try await data.sendInput { message throws(SignalingError) in
                    try await manager.sendRTSData(message, sessionID: session.sessionID)
                }
                printError("rts: sent \(sent) messages")
                try? await manager.sendRTSControl(RTSRunner.endOfInput, sessionID: session.sessionID)
                if let duration {
                    let timer = Task {
                        try? await Task.sleep(for: .milliseconds(Int64(duration * 1_000)))
                        await over()
                    }
                    await ended.wait()
                    timer.cancel()
                } else if stay {
                    await ended.wait()
                } else {
                    await peerDone.wait()
                }
            }
            if await !ended.isEnded || Interruption.requested {
                try? await manager.terminateRTS(sessionID: session.sessionID)
            }
            interrupted.cancel()
            await manager.logout()
            await reader.value
        } catch let error as SignalingError {
            await manager.logout()
            throw RTSRunner.failure(error)
        }
    }
}

struct RTSAnswerCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "answer",
        abstract: "Wait for session requests, accept or reject them, and print what arrives.",
        discussion: """
        An accepted session sends the input (standard input's lines or --send-file), then the control text \
        'mediaengine:eof', and lasts until the other side ends it. Exits after --sessions sessions, or on Ctrl-C.
        """
    )

    @OptionGroup var signaling: SignalingOptions
    @OptionGroup var data: RTSDataOptions

    @Flag(help: "Accept every request.")
    var autoAccept = false

    @Flag(help: "Reject every request.")
    var reject = false

    @Option(help: "Sessions to handle before exiting.")
    var sessions = 1

    @OptionGroup(title: "Voice channel (for requests that ask for one)") var voice: RTSVoiceOptions

    func validate() throws {
        guard autoAccept != reject else { throw ValidationError("give one of --auto-accept or --reject") }
        guard sessions > 0 else { throw ValidationError("--sessions \(sessions) must be at least 1") }
        try data.check()
        try voice.check()
    }

    func run() async throws {
        Interruption.install()
        let recorder = try voice.recorder()
        let manager = try RTSRunner.manager(signaling, voice: voice, recorder: recorder)
        let sink = try data.sink()
        defer { sink.close() }
        defer { try? recorder?.close() }
        do {
            guard let login = try await Interruption.unlessRequested({ try await manager.login() }) else {
                await manager.logout()
                return
            }
            printError("rts: waiting for requests as \(login.account)")
        } catch let error as SignalingError {
            await manager.logout()
            throw RTSRunner.failure(error)
        }
        let done = RTSSessionWatch()
        let interrupted = RTSRunner.onInterruption { await done.end() }
        let answering = RTSAnswering(manager: manager, accept: autoAccept, limit: sessions, options: data)
        let reader = RTSRunner.read(manager, into: sink, finished: { await done.end() }) { event in
            if await answering.handle(event) { await done.end() }
        }
        await done.wait()
        interrupted.cancel()
        await manager.logout()
        await reader.value
    }
}

/// `rts answer`'s sessions, one at a time: answers each request, sends the input in an
/// accepted one, and counts the sessions handled.
actor RTSAnswering {
    let manager: NetCallManager
    let accept: Bool
    let limit: Int
    let options: RTSDataOptions
    private var handled = 0
    private var current: String?
    private var sending: Task<Void, Never>?

    init(manager: NetCallManager, accept: Bool, limit: Int, options: RTSDataOptions) {
        self.manager = manager
        self.accept = accept
        self.limit = limit
        self.options = options
    }

    /// Takes one event; true once `limit` sessions were handled.
    func handle(_ event: RTSEvent) async -> Bool {
        switch event {
        case .request(let session, _, _, _, _) where current == nil:
            do throws(SignalingError) {
                let file = try await manager.responseRTS(sessionID: session, accept: accept, disableRecord: options.noRecord)
                if let file { printError("rts: recordFile=\(file)") }
                if accept {
                    current = session
                    let (manager, options) = (self.manager, self.options)
                    sending = Task {
                        do {
                            let sent = try await options.sendInput { message throws(SignalingError) in
                                try await manager.sendRTSData(message, sessionID: session)
                            }
                            printError("rts: sent \(sent) messages")
                            try await manager.sendRTSControl(RTSRunner.endOfInput, sessionID: session)
                        } catch {
                            printError("rts: sending failed: \(error)")
                        }
                    }
                } else {
                    handled += 1
                }
            } catch {
                printError("rts: response failed: \(error.message) (\(error.code.rawValue))")
            }
        case .terminate(let session, _, _) where session == current:
            sending?.cancel()
            current = nil
            handled += 1
        default:
            break
        }
        return handled >= limit
    }
}

struct RTSReserveCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "reserve",
        abstract: "Reserve a conference name (it stays reserved until everyone who joined has left)."
    )

    @Argument(help: "The conference's name.")
    var name: String

    @OptionGroup var signaling: SignalingOptions

    @Option(help: "Free text kept with the conference.")
    var ext: String?

    func run() async throws {
        let manager = try RTSRunner.manager(signaling)
        do {
            try await manager.login()
            try await manager.reserveConference(name: name, ext: ext)
            say("reserved \(name)")
        } catch {
            await manager.logout()
            throw RTSRunner.failure(error)
        }
        await manager.logout()
    }
}

struct RTSJoinCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "join",
        abstract: "Join a reserved conference, send the input to everyone (or --to one member), and print what arrives.",
        discussion: """
        Leaves once the input is sent (unless --stay), or on Ctrl-C. Members joining and leaving are reported on \
        standard error.
        """
    )

    @Argument(help: "The conference's name.")
    var name: String

    @OptionGroup var signaling: SignalingOptions
    @OptionGroup var data: RTSDataOptions

    @Option(help: "Send to this member only (default: everyone else).")
    var to: String?

    @Flag(help: "Stay after the input ends, until Ctrl-C.")
    var stay = false

    func validate() throws { try data.check() }

    func run() async throws {
        Interruption.install()
        let manager = try RTSRunner.manager(signaling)
        let sink = try data.sink()
        defer { sink.close() }
        do {
            guard try await Interruption.unlessRequested({ try await manager.login() }) != nil else {
                await manager.logout()
                return
            }
            let conference = try await manager.joinConference(name: name, disableRecord: data.noRecord)
            printError("rts: joined \(name) channel=\(conference.channelID) members=\(conference.members.joined(separator: ","))"
                       + (conference.recordFile.map { " recordFile=\($0)" } ?? ""))
            let out = RTSSessionWatch()
            let reader = RTSRunner.read(manager, into: sink, finished: { await out.end() }) { event in
                if case .leftConference(conference.channelID, _, _) = event { await out.end() }
            }
            let interrupted = RTSRunner.onInterruption { await out.end() }
            let target = to
            let sent = try await data.sendInput { message throws(SignalingError) in
                try await manager.sendConferenceData(message, channelID: conference.channelID, to: target)
            }
            printError("rts: sent \(sent) messages")
            if stay { await out.wait() }
            if await !out.isEnded || Interruption.requested {
                try? await manager.leaveConference(channelID: conference.channelID)
            }
            interrupted.cancel()
            await manager.logout()
            await reader.value
        } catch let error as SignalingError {
            await manager.logout()
            throw RTSRunner.failure(error)
        }
    }
}

struct RTSDumpCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "dump",
        abstract: "Print a server recording of real-time session data: each packet's time, length and data.",
        discussion: """
        One line per record: milliseconds since the session began, the data's length, and the data (as text when \
        it is printable UTF-8, else as hex; --hex always). --json prints one JSON object per record instead.
        """
    )

    @Argument(help: "A recording file (from the server's --rts-recording-directory).")
    var file: String

    @Flag(help: "Print the data as hex.")
    var hex = false

    @Flag(help: "One JSON object per record: {\"time\": MS, \"length\": N, \"data\": BASE64}.")
    var json = false

    func run() async throws {
        let contents: RTSRecording.Contents
        do {
            contents = try RTSRecording.read(file)
        } catch {
            throw CommandFailure(error.message)
        }
        var out = ""
        for record in contents.records {
            if json {
                out += "{\"time\":\(record.timestamp),\"length\":\(record.data.count),\"data\":\"\(record.data.base64EncodedString())\"}\n"
            } else {
                let text = String(data: record.data, encoding: .utf8)
                let printable = !hex && text.map { $0.unicodeScalars.allSatisfy { !$0.properties.isNoncharacterCodePoint && ($0.value >= 0x20 || $0 == "\t") } } == true
                let shown = printable ? text! : record.data.map { String(format: "%02x", $0) }.joined()
                out += "\(record.timestamp)\t\(record.data.count)\t\(shown)\n"
            }
            if out.utf8.count > 1 << 16 {
                FileHandle.standardOutput.write(Data(out.utf8))
                out = ""
            }
        }
        FileHandle.standardOutput.write(Data(out.utf8))
        printError("\(contents.records.count) records" + (contents.truncatedTail > 0 ? "; \(contents.truncatedTail) bytes of a partial record at the end ignored" : ""))
    }
}
