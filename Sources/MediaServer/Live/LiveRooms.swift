import Foundation
import LiveStreaming
import MediaEngine
import Signaling

/// The live plane: one composer per live room. Each joins its room's meeting as the
/// server's own hidden audience leg (a `MediaSession` to the forwarding server on
/// loopback), so it gets what any participant gets: every member's decoded pictures and
/// the mixed audio, in real time. A `LiveComposer` lays the pictures out and a
/// `LiveStreamer` encodes once and pushes to the URL (and the server recording).
///
/// `apply` never waits: each room runs its commands in order on a queue of its own
/// (starting a room binds a socket; stopping one writes trailers and joins threads).
public final class LiveRooms: LivePlane {
    public struct Configuration: Sendable {
        /// The stream every room pushes: canvas size, frame rate, bitrates.
        public var format = LiveStreamFormat()
        public var retry = LiveRetryPolicy.default
        /// Where `bypassStreamingServerRecording` files go (created if missing).
        public var recordingDirectory: String
        /// The forwarding server's port; the composers reach it on loopback.
        public var mediaPort: Int

        public init(recordingDirectory: String, mediaPort: Int) {
            self.recordingDirectory = recordingDirectory
            self.mediaPort = mediaPort
        }
    }

    public let configuration: Configuration
    private let report: @Sendable (LivePlaneReport) -> Void
    private let rooms = Locked<[UInt64: Room]>([:])

    /// - Parameter report: Gets every status change and control outcome, in order per room.
    public init(configuration: Configuration, report: @escaping @Sendable (LivePlaneReport) -> Void) {
        self.configuration = configuration
        self.report = report
    }

    /// Rooms running now.
    public var roomCount: Int { rooms.withLock { $0.values.filter { $0.running != nil }.count } }

    /// The streamer of a running room (its outputs' figures), if any.
    public func streamer(ofMeeting id: UInt64) -> LiveStreamer? {
        rooms.withLock { $0[id]?.running?.streamer }
    }

    public func apply(_ command: LiveCommand) {
        let meeting: UInt64
        switch command {
        case .start(let setup): meeting = setup.meeting
        case .participants(let id, _), .switchURL(let id, _), .setEnabled(let id, _), .setLayout(let id, _, _), .stop(let id): meeting = id
        }
        let room = rooms.withLock { rooms in
            if let room = rooms[meeting] { return room }
            let room = Room(meeting: meeting)
            rooms[meeting] = room
            return room
        }
        room.queue.async { [self] in
            run(command, in: room)
            if case .stop = command {
                rooms.withLock { rooms in if rooms[meeting] === room { rooms[meeting] = nil } }
            }
        }
    }

    /// Stops every room (the server is stopping); returns once all have ended.
    public func stopAll() {
        for room in rooms.withLock({ Array($0.values) }) {
            room.queue.sync { room.running?.stop(); room.running = nil }
        }
        rooms.withLock { $0 = [:] }
    }

    /// One room's composer and its queue. Commands change `running` only on `queue`, one
    /// at a time; `roomCount` and `streamer(ofMeeting:)` read it from other threads, so it
    /// is behind a lock of its own (ThreadSanitizer found the unguarded read: a reader
    /// could take the reference while a stop released it).
    final class Room: Sendable {
        let meeting: UInt64
        let queue: DispatchQueue
        private let current = Locked<Running?>(nil)

        init(meeting: UInt64) {
            self.meeting = meeting
            queue = DispatchQueue(label: "live-room-\(meeting)")
        }

        var running: Running? {
            get { current.withLock { $0 } }
            set { current.withLock { $0 = newValue } }
        }
    }

    /// What a started room runs.
    final class Running: Sendable {
        let session: MediaSession
        let composer: LiveComposer
        let streamer: LiveStreamer
        let members: Locked<[MeetingParticipant]>

        init(session: MediaSession, composer: LiveComposer, streamer: LiveStreamer, members: [MeetingParticipant]) {
            self.session = session
            self.composer = composer
            self.streamer = streamer
            self.members = Locked(members)
        }

        func stop() {
            composer.stop()
            streamer.stop()
            _ = session.stop()
        }
    }

    private func run(_ command: LiveCommand, in room: Room) {
        let id = room.meeting
        switch command {
        case .start(let setup):
            room.running?.stop()
            room.running = nil
            do {
                room.running = try start(setup)
            } catch {
                report(.status(meeting: id, output: "push", status: LiveStreamStatus.internalError.rawValue,
                               error: SignalingError(.bypassInternal, "the composer could not start: \(error)")))
            }
        case .participants(_, let members):
            guard let running = room.running else { return }
            let previous = running.members.withLock { old in defer { old = members }; return old }
            for gone in previous where !members.contains(where: { $0.account == gone.account }) {
                running.session.removeParticipant(gone.account)
            }
            for member in members where !previous.contains(where: { $0.account == member.account }) {
                try? running.session.addParticipant(Self.participant(member))
            }
            running.composer.setParticipants(members.map(\.account))
        case .switchURL(_, let url):
            guard let running = room.running else { return }
            let report = self.report
            do {
                let target = try target(url)
                running.streamer.switchOutput(id: "push", to: target) { result in
                    switch result {
                    case .success: report(.switched(meeting: id, error: nil))
                    case .failure(let error): report(.switched(meeting: id, error: Self.signalingError(error)))
                    }
                }
            } catch {
                report(.switched(meeting: id, error: Self.signalingError(error)))
            }
        case .setEnabled(_, let enabled):
            guard let running = room.running else { return }
            running.streamer.setEnabled(enabled, output: "push")
            report(.enabled(meeting: id, enabled, error: nil))
        case .setLayout(_, let mode, let custom):
            guard let running = room.running else { return }
            do throws(SignalingError) {
                running.composer.setLayout(try Self.layout(mode, custom))
            } catch {
                report(.status(meeting: id, output: "push", status: LiveStreamStatus.layoutError.rawValue, error: error))
            }
        case .stop:
            room.running?.stop()
            room.running = nil
        }
    }

    private func start(_ setup: LiveRoomSetup) throws -> Running {
        let format = configuration.format
        let id = setup.meeting
        let report = self.report
        let streamer = try LiveStreamer(format: format, retry: configuration.retry) { event in
            report(.status(meeting: id, output: event.output, status: event.status.rawValue, error: event.error.map(Self.signalingError)))
        }
        let layout = try Self.layout(setup.mixMode, setup.customLayout)
        let composer = LiveComposer(format: format, layout: layout, participants: setup.participants.map(\.account), streamer: streamer) { event in
            switch event {
            case .layoutError(let error):
                report(.status(meeting: id, output: "push", status: LiveStreamStatus.layoutError.rawValue,
                               error: SignalingError(.bypassLayout, error.description)))
            }
        }
        // The composer sends nothing the server forwards (its leg is an audience's): a
        // silent source, paused; it only receives, and its RTCP asks for keyframes.
        var settings = MediaSession.Configuration(audio: ToneSource(ToneGenerator(.silence), name: "silence"), video: nil)
        settings.host = "127.0.0.1"
        settings.profile = setup.credentials.composerKeying.profile
        settings.localKeying = setup.credentials.composerKeying
        settings.localAudioSSRC = setup.audioSSRC
        settings.remoteAudio = { pcm in composer.offer(audio: pcm) }
        settings.remoteVideo = { participant, picture in composer.offer(picture, participant: participant) }
        let session = try MediaSession(configuration: settings)
        session.controls.update { controls in
            controls.audioPaused = true
            controls.videoPaused = true
        }
        // Its leg's forwarding worker's port (the media port with one worker).
        let address = try MediaEngine.SocketAddress(host: "127.0.0.1", port: setup.candidates.first?.port ?? configuration.mediaPort)
        let server = MediaSession.Endpoint(candidates: [ICECandidate.local(.host, address: address, localPreference: 65_535)],
                                           keying: setup.credentials.serverKeying, audioSSRC: 0, videoSSRC: nil,
                                           ice: setup.credentials.ice)
        try session.join(server: server, participants: setup.participants.map(Self.participant)) { _ in }
        streamer.addOutput(id: "push", target: try target(setup.url))
        if setup.serverRecording {
            try FileManager.default.createDirectory(atPath: configuration.recordingDirectory, withIntermediateDirectories: true)
            let stamp = Int(Date().timeIntervalSince1970)
            let path = (configuration.recordingDirectory as NSString).appendingPathComponent("live-\(setup.meeting)-\(stamp).flv")
            streamer.addOutput(id: "recording", target: try LiveTarget(path))
        }
        composer.start()
        return Running(session: session, composer: composer, streamer: streamer, members: setup.participants)
    }

    /// A client's target; a file is a name in the recording directory (the registry
    /// refused absolute paths and `..`).
    private func target(_ url: String) throws -> LiveTarget {
        let target = try LiveTarget(url)
        guard case .file(let name) = target else { return target }
        try FileManager.default.createDirectory(atPath: configuration.recordingDirectory, withIntermediateDirectories: true)
        return .file((configuration.recordingDirectory as NSString).appendingPathComponent(name))
    }

    static func participant(_ member: MeetingParticipant) -> MediaSession.Participant {
        MediaSession.Participant(id: member.account, audioSSRC: member.audioSSRC, videoSSRC: member.videoSSRC)
    }

    static func layout(_ mode: Int, _ custom: String?) throws(SignalingError) -> LiveLayout {
        guard let mixMode = LiveMixMode(rawValue: mode) else { throw SignalingError(.bypassLayout, "mix mode \(mode) is not one of 0-4") }
        guard mixMode == .custom else { return LiveLayout(mode: mixMode) }
        do {
            return try LiveLayout.custom(json: Data((custom ?? "").utf8))
        } catch {
            throw SignalingError(.bypassLayout, error.description)
        }
    }

    static func signalingError(_ error: any Error) -> SignalingError {
        if let error = error as? LiveStreamError { return SignalingError(SignalingError.Code(rawValue: error.code), error.description) }
        return SignalingError(.bypassInternal, "\(error)")
    }
}
