import Foundation
import Logging
import MediaEngine

/// P2P calls with the semantics of NIM's `NIMNetCallManager`: start, response, control,
/// hangup, and events for all of it, over the project's signaling server, with the media
/// of the call (`MediaSession`) wired in: connectivity, SRTP keys, statistics, frames.
///
/// One call at a time. Requests throw the server's `SignalingError` (busy, callee offline,
/// handled elsewhere, ...). When the signaling connection drops, the manager reconnects
/// and logs in again as the same device; the media of a live call keeps flowing
/// meanwhile, and the server keeps the call for its reconnect grace.
public actor NetCallManager {
    public struct Configuration: Sendable {
        /// `ws://HOST:PORT/`.
        public var server: String
        /// A login token (JWT). Never logged.
        public var token: String
        /// This device's name; a reconnect uses the same one.
        public var device: String
        /// Builds the media configuration of each call.
        public var media: MediaSessionFactory
        /// Reconnect after a dropped connection.
        public var reconnect = true
        public var requestTimeout: Duration = .seconds(10)
        /// Level above which the peer counts as speaking (0...1 RMS of full scale).
        public var speakingThreshold = 0.02
        /// Rewrites where a meeting's media goes (the server's candidates) before it is
        /// used: through a relay, or a test's impairment proxy. Nil: as the server says.
        public var meetingMediaRoute: (@Sendable ([MediaCandidate]) -> [MediaCandidate])?
        /// Simulcast in meetings: how many sizes a video participant sends (1 to 3, each half
        /// the one above, none under 160×90), of which the server sends each subscriber the
        /// one its bandwidth and shown size (`setVideoSize`) allow. 1: one stream.
        public var meetingSimulcastLayers = 3
        /// Makes a video source at a preset's size, for `switchVideoQuality`; without it,
        /// switching changes the bitrate only.
        public var videoSource: (@Sendable (CallVideoQuality) throws -> any VideoSource)?

        public init(server: String, token: String, device: String = "default", media: @escaping MediaSessionFactory) {
            self.server = server
            self.token = token
            self.device = device
            self.media = media
        }
    }

    struct Call {
        var id: UInt64
        var peer: String
        var type: CallType
        var session: MediaSession
        var hangupRequested = false
        /// The V4L2 camera `switchCamera` moved to, if any.
        var camera: String?
        /// This side's trickled candidates not sent yet (until `mayTrickle`).
        var unsentCandidates: [MediaCandidate] = []
        var gatheringComplete = false
        /// Whether the media started (the peer's endpoint is known): trickled candidates
        /// from the peer go straight to the session from then on.
        var mediaStarted = false
        /// Whether this side placed the call. The server takes the caller's candidates
        /// once the call has an ID (it passes them to the ringing devices), the callee's
        /// only once its answer was accepted: before, they are refused, and a candidate
        /// gathered while the answer is on its way must wait for it, not be lost.
        var placed: Bool

        /// Whether this side's queued candidates may go to the server now.
        var mayTrickle: Bool { id != 0 && (placed || mediaStarted) }
    }

    /// Candidates the caller trickled while an invitation rings here, for when it is answered.
    private var earlyCandidates: [UInt64: (candidates: [MediaCandidate], complete: Bool)] = [:]

    public let configuration: Configuration
    /// Every event, in order, none dropped; one reader.
    public nonisolated let events: AsyncStream<NetCallEvent>
    /// Pictures and levels as they come, newest kept (`mediaUpdateBuffer` of them); one reader.
    public nonisolated let mediaUpdates: AsyncStream<NetCallMediaUpdate>
    /// Per-frame updates kept for a reader that falls behind: the newest win.
    public static let mediaUpdateBuffer = 8
    /// The app's capture hooks, used by every call (unless the media factory sets its own):
    /// `captureHooks.setAudioHook`, `setVideoHook`, `sendVideoFrame`.
    public nonisolated let captureHooks = CaptureHooks()
    let emit: AsyncStream<NetCallEvent>.Continuation
    let emitMedia: AsyncStream<NetCallMediaUpdate>.Continuation
    var client: SignalingClient?
    private var call: Call?
    /// The meeting this device is in, if any (see `NetCallManager+Meetings`).
    var meeting: MeetingState?
    /// Real-time sessions and conferences (see `NetCallManager+RTS`).
    var rts = RTSState() {
        // The data connection's reader names each message's session or conference from this
        // copy, without waiting for the actor (busy with this side's own sends).
        didSet { rtsChannelNames.withLock { $0 = rts.channelNames } }
    }
    nonisolated let rtsChannelNames = Locked<[UInt64: (session: String?, conference: String?)]>([:])
    /// Requests, answers and joins under way: until their replies name a channel, the data
    /// connection's reader may meet data of it (the others answer on the data connection,
    /// which can overtake the reply on the signaling one).
    nonisolated let rtsChannelsPending = Locked(0)
    /// Real-time sessions' data and events, in order, none dropped; one reader. Data the
    /// reader has not taken holds the data connection back (the server then sees this device
    /// as slow): read it steadily.
    public nonisolated let rtsEvents = RTSEventStream()
    private var invitations: [UInt64: Event.Receive] = [:]
    private var closing = false
    let logger = Logger(label: "mediaengine.netcall")
    /// The account the token logged in as.
    public private(set) var account: String?
    /// The ICE servers of the last login (the server's STUN entries, TURN with fresh
    /// credentials): `ICEGatheringServers(iceServers)` makes them engine types. Holds
    /// TURN credentials: never log them.
    public private(set) var iceServers: [ICEServer] = []
    private var stopping: Task<MediaSession.Summary, Never>?
    /// Both directions' figures of the last call whose media ended.
    public private(set) var lastCallSummary: MediaSession.Summary?

    public init(configuration: Configuration) {
        self.configuration = configuration
        // Control events are few (a handful per call, one net status a second): none is ever
        // dropped. Pictures and levels come 30+ times a second: only the newest are kept.
        (events, emit) = AsyncStream<NetCallEvent>.makeStream(bufferingPolicy: .unbounded)
        (mediaUpdates, emitMedia) = AsyncStream<NetCallMediaUpdate>.makeStream(bufferingPolicy: .bufferingNewest(Self.mediaUpdateBuffer))
    }

    /// The call in progress, if any; 0 while `start` has not returned its ID.
    public var currentCallID: UInt64? { call?.id }
    /// The current call's media, for its statistics and controls.
    public var currentSession: MediaSession? { call?.session }

    // MARK: Connection

    /// Connects and logs in.
    /// - Throws: `SignalingError`: the server cannot be reached, or the token is refused.
    @discardableResult
    public func login() async throws(SignalingError) -> Reply.Login {
        let client = try await SignalingClient.connect(url: configuration.server, timeout: configuration.requestTimeout)
        let reply: Reply.Login
        do {
            reply = try await client.request(MessageType.login, Request.Login(token: configuration.token, device: configuration.device),
                                             as: Reply.Login.self, timeout: configuration.requestTimeout)
        } catch {
            await client.close()
            throw error
        }
        // `logout()` while this login waited (an app or a user that gave up): the connection
        // is not kept, and no reconnect starts from it.
        guard !closing else {
            await client.close()
            throw SignalingError(.serverDisconnected, "login: logged out while logging in")
        }
        account = reply.account
        iceServers = reply.iceServers
        self.client = client
        Self.pump(client, into: self)
        return reply
    }

    /// Ends any call, and closes the connection for good.
    public func logout() async {
        closing = true
        if let call { try? await hangup(callID: call.id) }
        if let meeting { try? await leaveMeeting(callID: meeting.id) }
        await closeRTS()
        await stopMedia()
        await client?.close()
        client = nil
        emit.finish()
        emitMedia.finish()
    }

    /// Hands `client`'s events to `manager`, then reconnects when the connection drops.
    /// Holds the manager weakly, also while it waits: a manager the app lets go of
    /// without `logout()` is freed, and its `deinit` closes the connection.
    private static func pump(_ client: SignalingClient, into manager: NetCallManager) {
        let events = client.events
        Task { [weak manager] in
            for await event in events {
                guard let manager else { return }
                await manager.handle(event)
            }
            guard await manager?.connectionEnded(client) == true else { return }
            var backoff = Duration.milliseconds(200)
            while true {
                try? await Task.sleep(for: backoff)
                guard let manager, await manager.reconnect() == false else { return }
                backoff = min(backoff * 2, .seconds(5))
            }
        }
    }

    /// Notes that `client`'s connection ended; whether to reconnect.
    private func connectionEnded(_ client: SignalingClient) -> Bool {
        guard !closing, self.client === client else { return false }
        self.client = nil
        emit.yield(.connectionLost(client.connection.closure?.reason ?? "connection closed"))
        rtsConnectionLost(SignalingError(.serverDisconnected, "the signaling connection closed"))
        return configuration.reconnect
    }

    /// One reconnect attempt; whether reconnecting is over (logged in again, or closing).
    private func reconnect() async -> Bool {
        guard !closing else { return true }
        do {
            try await login()
            emit.yield(.reconnected)
            return true
        } catch {
            logger.debug("reconnect failed: \(error.message)")
            return false
        }
    }

    /// A manager let go of without `logout()`: its connection closes (the server treats
    /// that as a dropped device and ends its call after the reconnect grace), its media
    /// stops, and its event streams finish.
    deinit {
        if let client { Task { await client.close() } }
        let sessions = [call?.session, meeting?.session].compactMap { $0 }
        if !sessions.isEmpty {
            Thread.detachNewThread { for session in sessions { _ = session.stop() } }
        }
        emit.finish()
        emitMedia.finish()
    }

    func request<Body: Encodable & Sendable, Result: Decodable & Sendable>(_ type: String, _ body: Body, as result: Result.Type)
        async throws(SignalingError) -> Result {
        guard let client else { throw SignalingError(.serverDisconnected, "\(type): not connected to the server") }
        return try await client.request(type, body, as: result, timeout: configuration.requestTimeout)
    }

    // MARK: Requests

    /// Calls `callee`; returns the call's ID. The media starts when the callee accepts.
    public func start(callee: String, type: CallType, option: CallOption = CallOption()) async throws(SignalingError) -> UInt64 {
        guard call == nil else { throw SignalingError(.busy, "start: already in call \(call!.id)") }
        guard voice == nil else { throw SignalingError(.busy, "start: calls are exclusive with a real-time session's voice channel, and one is open") }
        let session = try makeSession(type: type, quality: option.videoQuality)
        call = Call(id: 0, peer: callee, type: type, session: session, placed: true)
        session.gather(events: gatheringEvents(of: session))
        let reply: Reply.Start
        do {
            // Both kinds of offer on one session: our clients accept the SDES endpoint, a
            // callee in a browser answers the JSEP offer (without a certificate, only ours can).
            let offer = try? session.webRTCOffer()
            reply = try await request(MessageType.start, Request.Start(callee: callee, type: type, option: option,
                                                                     media: MediaEndpoint(session.local), sdp: offer), as: Reply.Start.self)
        } catch {
            call = nil
            await stop(session)
            throw error
        }
        if call?.session === session {
            call?.id = reply.callID
            await sendCandidates(of: session)
        }
        return reply.callID
    }

    /// Answers an invitation. Accepting starts the media with the caller.
    public func response(callID: UInt64, accept: Bool) async throws(SignalingError) {
        guard let invitation = invitations[callID] else {
            throw SignalingError(.notStarted, "response: no invitation \(callID)")
        }
        guard accept else {
            _ = try await request(MessageType.response, Request.Response(callID: callID, accept: false, media: nil), as: Reply.Response.self)
            invitations[callID] = nil
            return
        }
        guard call == nil else { throw SignalingError(.busy, "response: already in call \(call!.id)") }
        guard voice == nil else { throw SignalingError(.busy, "response: calls are exclusive with a real-time session's voice channel, and one is open") }
        // A WebRTC caller (a browser) offered only SDP: the session answers its offer
        // (DTLS-SRTP, the offer's payload types and extensions, this side ICE controlled) and
        // starts at once with its candidates. Our clients' calls are accepted with an SDES
        // endpoint, the caller's coming back in the reply.
        let session: MediaSession
        let acceptance: Request.Response
        if let offer = invitation.sdp, invitation.sdes != true {
            session = try makeSession(type: invitation.type, quality: invitation.option.videoQuality, controlling: false, answering: offer)
            guard let answer = session.webRTCAnswer else { throw SignalingError(.operationFailed, "response: the session made no answer") }
            acceptance = Request.Response(callID: callID, accept: true, media: nil, sdp: answer)
        } else {
            session = try makeSession(type: invitation.type, quality: invitation.option.videoQuality, controlling: false)
            acceptance = Request.Response(callID: callID, accept: true, media: MediaEndpoint(session.local))
        }
        call = Call(id: callID, peer: invitation.from, type: invitation.type, session: session, placed: false)
        session.gather(events: gatheringEvents(of: session))
        do throws(SignalingError) {
            let reply = try await request(MessageType.response, acceptance, as: Reply.Response.self)
            invitations[callID] = nil
            let remote: RemoteMedia
            if acceptance.sdp != nil {
                remote = .answered
            } else {
                guard let media = reply.media else { throw SignalingError(.invalidRequest, "response: the server sent no caller media") }
                remote = .sdes(media)
            }
            try startMedia(session, remote: remote, callID: callID, peer: invitation.from)
            if let early = earlyCandidates.removeValue(forKey: callID) {
                session.addRemoteCandidates(Self.usable(early.candidates, logger: logger), complete: early.complete)
            }
            await sendCandidates(of: session)
        } catch {
            if call?.session === session { call = nil }
            await stop(session)
            throw error
        }
    }

    /// Sends a control notification to the peer.
    public func control(callID: UInt64, _ control: CallControl) async throws(SignalingError) {
        _ = try await request(MessageType.control, Request.Control(callID: callID, control: control), as: Reply.Empty.self)
    }

    /// Ends a call; `callID` 0 ends the current one even before `start` returned its ID.
    public func hangup(callID: UInt64 = 0) async throws(SignalingError) {
        let id = callID == 0 ? (call?.id ?? 0) : callID
        let ours = call != nil && (id == call?.id || id == 0)
        if ours { call?.hangupRequested = true }
        _ = try await request(MessageType.hangup, Request.Hangup(callID: id), as: Reply.Empty.self)
        if ours, call?.id != 0 { await stopMedia() }
    }

    // MARK: In-call controls

    /// Sends silence instead of the microphone (or the microphone again).
    public func setMute(_ muted: Bool) {
        call?.session.controls.update { $0.audioMuted = muted }
    }

    /// Changes the capture path's processing (echo cancellation, noise suppression, gain
    /// control, high-pass filter) of the current call or meeting from its next frame on.
    /// A session starts with its configuration's `audioProcessing` (by default: on for a
    /// microphone next to a loudspeaker, off for files and tones).
    public func setAudioProcessing(_ settings: AudioProcessor.Settings) {
        (call?.session ?? meeting?.session)?.setAudioProcessing(settings)
    }

    /// What the current call's or meeting's capture processing measured: ERLE, the echo
    /// delay, the fraction of frames with voice. Nil without a session or while it never ran.
    public var audioProcessingStatistics: AudioProcessor.Statistics? {
        (call?.session ?? meeting?.session)?.audioProcessingStatistics
    }

    /// Stops sending video while keeping the camera (or sends it again, from a keyframe).
    public func setCameraDisabled(_ disabled: Bool) {
        call?.session.controls.update { $0.videoPaused = disabled }
    }

    /// Caps the video bitrate below the quality preset's (nil removes the cap).
    public func setVideoMaxEncodeBitrate(_ bitrate: Int?) {
        call?.session.controls.update { $0.maximumVideoBitrate = bitrate }
    }

    /// Switches the current call between audio and video: video starts (from a keyframe)
    /// or pauses. Signal it to the peer with `control` (`toVideo`, `agreeToVideo`, `toAudio`),
    /// as NIM apps do; the peer's video is received whenever it sends some.
    /// - Throws: `.notStarted` without a call; `.operationFailed` when this device has no
    ///   video source.
    public func switchType(_ type: CallType) throws(SignalingError) {
        guard var call else { throw SignalingError(.notStarted, "switchType: no call in progress") }
        guard type == .audio || call.session.sendsVideo else {
            throw SignalingError(.operationFailed, "switchType: this device has no video source")
        }
        call.session.controls.update { controls in
            controls.videoPaused = type == .audio
            if type == .video { controls.keyframeRequested = true }
        }
        call.type = type
        self.call = call
    }

    /// Changes the video preset of the current call: the bitrate at once, and the picture
    /// size when `videoSource` is configured (a new source at the preset's size).
    public func switchVideoQuality(_ quality: CallVideoQuality) throws(SignalingError) {
        guard let call else { throw SignalingError(.notStarted, "switchVideoQuality: no call in progress") }
        guard call.session.sendsVideo else { throw SignalingError(.operationFailed, "switchVideoQuality: this device sends no video") }
        if let make = configuration.videoSource {
            do {
                call.session.replaceVideoSource(try make(quality))
            } catch {
                throw SignalingError(.operationFailed, "switchVideoQuality: \(error)")
            }
        }
        call.session.controls.update { $0.videoBitrate = quality.encoding.bitrate }
    }

    /// Moves the current call to the next V4L2 camera (in `/dev/video*` order, wrapping),
    /// at the size of `quality`.
    /// - Throws: `.operationFailed` when there is no other camera or it cannot be opened.
    public func switchCamera(quality: CallVideoQuality = .default) throws(SignalingError) {
        guard var call else { throw SignalingError(.notStarted, "switchCamera: no call in progress") }
        let cameras = V4L2DeviceInfo.list().map(\.path).sorted()
        let others = cameras.filter { $0 != call.camera }
        guard let next = others.first(where: { $0 > (call.camera ?? "") }) ?? others.first, cameras.count > 1 || call.camera == nil else {
            throw SignalingError(.operationFailed, "switchCamera: no other camera (\(cameras.count) found)")
        }
        let preset = quality.encoding
        do {
            call.session.replaceVideoSource(try MediaSources.video("v4l2:\(next):\(preset.width)x\(preset.height)@\(preset.frameRate)"))
        } catch {
            throw SignalingError(.operationFailed, "switchCamera: \(error)")
        }
        call.camera = next
        self.call = call
    }

    /// Mixes an audio file into what this side sends (NIM's `startAudioMix`); a running
    /// task ends. `audioMixTaskCompleted` follows its last pass.
    public func startAudioMix(_ task: AudioFileMixTask) throws(SignalingError) {
        guard let call else { throw SignalingError(.notStarted, "startAudioMix: no call in progress") }
        call.session.startAudioMix(task)
    }

    /// The task mixing now.
    public var currentAudioMixTask: AudioFileMixTask? { call?.session.currentAudioMixTask }

    public func pauseAudioMix() { call?.session.currentAudioMixTask?.pause() }
    public func resumeAudioMix() { call?.session.currentAudioMixTask?.resume() }
    public func stopAudioMix() { call?.session.stopAudioMix() }

    /// Changes the running task's loops (restarting their count) and volumes (0...1).
    public func updateAudioMix(numberOfLoops: Int? = nil, sendVolume: Double? = nil, playbackVolume: Double? = nil)
        throws(SignalingError) {
        guard let task = currentAudioMixTask else { throw SignalingError(.notStarted, "updateAudioMix: no mix task running") }
        do {
            try task.setVolumes(send: sendVolume, playback: playbackVolume)
        } catch {
            throw SignalingError(.operationFailed, "updateAudioMix: \(error.message)")
        }
        if let numberOfLoops { task.numberOfLoops = numberOfLoops }
    }

    /// Records the current call's (or meeting's) audio (every party and the file mix) to
    /// WAV or Ogg Opus by extension; nil picks a WAV in the temporary directory. Never
    /// creates directories.
    /// - Returns: The path.
    @discardableResult
    public func startAudioRecording(path: String? = nil) throws(SignalingError) -> String {
        guard let session = call?.session ?? meeting?.session else {
            throw SignalingError(.notStarted, "startAudioRecording: no call in progress")
        }
        do {
            return try session.startAudioRecording(path: path)
        } catch {
            throw SignalingError(OutputFile.missingDirectory(of: path ?? "") != nil ? .recordingInvalidPath : .recordingStartFailed,
                                 "startAudioRecording: \(error.message)")
        }
    }

    public func stopAudioRecording() throws(SignalingError) {
        guard let session = call?.session ?? meeting?.session else {
            throw SignalingError(.notStarted, "stopAudioRecording: no call in progress")
        }
        do {
            try session.stopAudioRecording()
        } catch {
            throw SignalingError(.recordingStopFailed, "stopAudioRecording: \(error.message)")
        }
    }

    public var currentAudioRecordingFilePath: String? { (call?.session ?? meeting?.session)?.currentAudioRecordingFilePath }

    /// The other party of the current call.
    public var currentPeer: String? { call?.peer }

    /// Records `user` (this account, or the peer) to WebM as the call carries it: Opus and
    /// VP8, not re-encoded, unless `videoBitrate` asks this side's video at another rate.
    /// Events: `recordStarted`, `recordVideoSizeChanged`, `recordError`, `recordStopped`.
    /// - Parameters:
    ///   - path: A .webm file in an existing directory; nil picks one in the temporary directory.
    /// - Returns: The path.
    @discardableResult
    public func startRecording(path: String? = nil, videoBitrate: Int? = nil, user: String) throws(SignalingError) -> String {
        let (session, target) = try recordingTarget(user, "startRecording")
        do {
            return try session.startRecording(target, path: path, videoBitrate: videoBitrate)
        } catch {
            throw SignalingError(Self.code(for: error), "startRecording: \(error.message)")
        }
    }

    /// Stops the recording of `user`; its file is closed with cues and duration.
    public func stopRecording(user: String) throws(SignalingError) {
        let (session, target) = try recordingTarget(user, "stopRecording")
        do {
            try session.stopRecording(target)
        } catch {
            throw SignalingError(.recordingStopFailed, "stopRecording: \(error.message)")
        }
    }

    private func recordingTarget(_ user: String, _ operation: String) throws(SignalingError) -> (MediaSession, MediaSession.RecordingTarget) {
        if let meeting {
            if user == account { return (meeting.session, .local) }
            guard meeting.participants[user] != nil else {
                throw SignalingError(.notInMeeting, "\(operation): \(user) is not in the meeting")
            }
            return (meeting.session, .participant(user))
        }
        guard let call else { throw SignalingError(.notStarted, "\(operation): no call in progress") }
        if user == account { return (call.session, .local) }
        if user == call.peer { return (call.session, .remote) }
        throw SignalingError(.operationFailed, "\(operation): \(user) is not in the call")
    }

    /// The next picture this side sends (nil without a call, a video source, or a picture
    /// within 2 s). `VideoFrame.writePNG(path:)` saves it.
    public func snapshotLocalVideo() async -> VideoFrame? {
        guard let session = call?.session else { return nil }
        return await session.snapshotLocalVideo()
    }

    /// Plays the peer's audio on `sink` from now on (another device, or nil for none).
    public func setAudioOutput(_ sink: sending (any AudioSink)?) throws(SignalingError) {
        guard let call else { throw SignalingError(.notStarted, "setAudioOutput: no call in progress") }
        call.session.replaceAudioSink(sink)
    }

    // MARK: Events

    private func handle(_ event: ServerEvent) async {
        do {
            switch event.type {
            case MessageType.receive:
                let body = try event.body(Event.Receive.self)
                invitations[body.callID] = body
                emit.yield(.receive(callID: body.callID, from: body.from, type: body.type, option: body.option))
            case MessageType.response:
                let body = try event.body(Event.Response.self)
                emit.yield(.response(callID: body.callID, from: body.from, accepted: body.accepted))
                guard let call, call.id == body.callID || call.id == 0 else { return }
                // The answer can be handled before `start` has resumed with the call's ID:
                // take it from here, or the callee's candidates that follow would not match.
                if call.id == 0 { self.call?.id = body.callID }
                let remote: RemoteMedia? = body.media.map { .sdes($0) } ?? body.sdp.map { .answer($0) }
                if body.accepted, let remote {
                    do {
                        try startMedia(call.session, remote: remote, callID: body.callID, peer: body.from)
                    } catch {
                        emit.yield(.callStatus(callID: body.callID, .disconnected(error.message)))
                        _ = try? await request(MessageType.mediaStatus, Request.MediaStatus(callID: body.callID, connected: false),
                                               as: Reply.Empty.self)
                    }
                } else if !body.accepted {
                    await stopMedia()
                }
            case MessageType.responsedByOther:
                let body = try event.body(Event.ResponsedByOther.self)
                invitations[body.callID] = nil
                earlyCandidates[body.callID] = nil
                emit.yield(.responsedByOther(callID: body.callID, accepted: body.accepted))
            case MessageType.control:
                let body = try event.body(Event.Control.self)
                emit.yield(.control(callID: body.callID, from: body.from, body.control))
            case MessageType.candidates:
                let body = try event.body(Event.Candidates.self)
                if let call, call.id == body.callID, call.mediaStarted {
                    call.session.addRemoteCandidates(Self.usable(body.candidates, logger: logger), complete: body.complete)
                } else if invitations[body.callID] != nil {
                    var early = earlyCandidates[body.callID] ?? ([], false)
                    early.candidates += body.candidates.prefix(max(0, 32 - early.candidates.count))
                    early.complete = early.complete || body.complete
                    earlyCandidates[body.callID] = early
                }
            case MessageType.hangup:
                let body = try event.body(Event.Hangup.self)
                invitations[body.callID] = nil
                earlyCandidates[body.callID] = nil
                if let call, call.id == body.callID || call.id == 0 { await stopMedia() }
                emit.yield(.hangup(callID: body.callID, by: body.by, reason: body.reason))
            case MessageType.callRecord:
                let record = try event.body(Event.Record.self).record
                if let call, call.id == record.callID { await stopMedia() }
                if stopping != nil { await stopMedia() }
                emit.yield(.callRecord(record))
            default:
                if try await !handleMeetingEvent(event), try !handleRTSSignalingEvent(event) {
                    logger.debug("ignored event \(event.type)")
                }
            }
        } catch {
            logger.notice("malformed \(event.type) event: \(error.message)")
        }
    }

    // MARK: Media

    /// The call's media. A video source the factory gives is kept even in an audio call
    /// (paused), so `switchType(.video)` can start it; the encoder's ceiling is the
    /// highest preset's bitrate, so `switchVideoQuality` can go up, and the preset's
    /// bitrate is the live target.
    /// - Parameter offer: A WebRTC peer's SDP offer the session answers.
    func makeSession(type: CallType, quality: CallVideoQuality, meeting: Bool = false, controlling: Bool = true,
                     answering offer: String? = nil) throws(SignalingError) -> MediaSession {
        do {
            var settings = try configuration.media(type, quality)
            settings.captureHooks = settings.captureHooks ?? captureHooks
            settings.iceControlling = controlling
            // A server reached on loopback is on this host, and so is any peer it introduces
            // with loopback candidates (its SFU listening on 127.0.0.1, a second client).
            settings.peerOnThisHost = settings.peerOnThisHost || Self.isLoopback(url: configuration.server)
            if !meeting && settings.stunServers.isEmpty {
                // A call's own candidates come from the login's ICE servers; a meeting leg needs
                // none (the server is ICE-lite and learns this side's address from its checks).
                do throws(ICEServerError) {
                    let servers = try ICEGatheringServers(iceServers)
                    settings.stunServers = servers.stun
                    settings.turnServer = settings.turnServer ?? servers.turn.first
                } catch {
                    logger.notice("the login's ICE servers are unusable: \(error.message)")
                }
            }
            if meeting {
                // Meeting legs: the forwarding server's profile, and layers it can thin.
                settings.profile = .aeadAES128GCM
                settings.temporalLayers = 3
                settings.videoRTXPayloadType = Self.meetingRTXPayloadType
                settings.simulcastLayers = configuration.meetingSimulcastLayers
            }
            let target = settings.videoBitrate
            settings.videoBitrate = max(target, CallVideoQuality.allCases.map(\.encoding.bitrate).max() ?? target)
            let session = try offer.map { offer throws(MediaSessionError) in try MediaSession(configuration: settings, answering: offer) }
                ?? MediaSession(configuration: settings)
            session.controls.update { controls in
                controls.videoBitrate = target
                controls.videoPaused = type == .audio
            }
            return session
        } catch let error as SignalingError {
            throw error
        } catch let error as DeviceError {
            throw SignalingError(.audioDeviceInitFailed, "media: \(error)")
        } catch let error as MediaSessionError where offer != nil {
            throw SignalingError(.invalidRequest, "the caller's offer: \(error.message)")
        } catch {
            throw SignalingError(.operationFailed, "media: \(error)")
        }
    }

    /// Whom a call's media starts toward.
    enum RemoteMedia {
        /// One of our clients, at its SDES endpoint.
        case sdes(MediaEndpoint)
        /// The WebRTC peer whose offer the session answered.
        case answered
        /// The WebRTC peer that answered the session's offer with this.
        case answer(String)
    }

    /// Starts the call's media toward `remote`.
    private func startMedia(_ session: MediaSession, remote: RemoteMedia, callID: UInt64, peer: String) throws(SignalingError) {
        let emit = self.emit
        let emitMedia = self.emitMedia
        let status = NetStatusMeter()
        let threshold = configuration.speakingThreshold
        let me = account ?? ""
        let logger = logger
        if call?.session === session { call?.mediaStarted = true }
        do {
            let handle: @Sendable (MediaSession.Event) -> Void = { [weak self] event in
                switch event {
                case .connected(let pair, let roundTripTime):
                    status.setFirstRoundTrip(roundTripTime)
                    logger.info("call \(callID): media connected over \(pair)")
                    emit.yield(.mediaPath(callID: callID, pair, roundTripMilliseconds: roundTripTime / .milliseconds(1)))
                    emit.yield(.callStatus(callID: callID, .connected))
                    Task { await self?.reportMedia(callID: callID, connected: true) }
                case .pathChanged(let pair):
                    logger.info("call \(callID): media moved to \(pair)")
                    emit.yield(.mediaPath(callID: callID, pair, roundTripMilliseconds: nil))
                case .localCandidate(let candidate):
                    Task { await self?.trickle(from: session, candidate) }
                case .gatheringComplete:
                    Task { await self?.trickle(from: session, nil) }
                case .connectFailed(let why), .disconnected(let why):
                    emit.yield(.callStatus(callID: callID, .disconnected(why)))
                    Task { await self?.reportMedia(callID: callID, connected: false) }
                case .statistics(let statistics):
                    for (participant, level, loss, rtt, jitter) in status.update(statistics) {
                        emit.yield(.netStatus(user: participant.isEmpty ? peer : participant, level, lossPercent: loss,
                                              roundTripMilliseconds: rtt, jitterMilliseconds: jitter))
                    }
                case .remoteVideoFrame(let frame, _):
                    emitMedia.yield(.remoteVideoFrame(user: peer, frame))
                case .localVideoFrame(let frame):
                    emitMedia.yield(.localPreviewFrame(frame))
                case .localAudioLevel(let level):
                    emitMedia.yield(.myVolume(level))
                case .audioMixTaskCompleted(let task):
                    emit.yield(.audioMixTaskCompleted(task))
                case .recordStarted(let target, let path):
                    emit.yield(.recordStarted(callID: callID, file: path, user: target == .local ? me : peer))
                case .recordError(let target, let error):
                    emit.yield(.recordError(callID: callID, user: target == .local ? me : peer, error))
                case .recordStopped(let target, let summary):
                    emit.yield(.recordStopped(callID: callID, file: summary.path, user: target == .local ? me : peer))
                case .recordVideoSizeChanged(let target, let width, let height):
                    emit.yield(.recordVideoSizeChanged(callID: callID, user: target == .local ? me : peer, width: width, height: height))
                case .remoteAudioLevel, .dtlsConnected:
                    break
                case .audioProcessingFailed(let error):
                    logger.warning("call \(callID): audio processing is off, the microphone goes out unprocessed: \(error.message)")
                case .speakingUsers(let levels):
                    // The peer's RFC 6464 levels (participant ""), above the app's threshold.
                    let users = levels.filter { $0.value >= threshold }
                    emitMedia.yield(.speakingUsers(Dictionary(uniqueKeysWithValues: users.map { ($0.key.isEmpty ? peer : $0.key, $0.value) })))
                }
            }
            switch remote {
            case .sdes(let media): try session.start(remote: try media.sessionEndpoint(), events: handle)
            case .answered: try session.start(events: handle)
            case .answer(let answer): try session.start(answer: answer, events: handle)
            }
        } catch {
            throw SignalingError(.operationFailed, "media: \(error)")
        }
    }

    /// The events a session sends while it gathers, before the peer is known: its
    /// candidates, to trickle.
    private func gatheringEvents(of session: MediaSession) -> @Sendable (MediaSession.Event) -> Void {
        { [weak self] event in
            switch event {
            case .localCandidate(let candidate): Task { await self?.trickle(from: session, candidate) }
            case .gatheringComplete: Task { await self?.trickle(from: session, nil) }
            default: break
            }
        }
    }

    /// Queues one of this side's candidates (nil: gathering is complete) for the peer,
    /// and sends what is queued once the server takes it (`Call.mayTrickle`).
    private func trickle(from session: MediaSession, _ candidate: ICECandidate?) async {
        guard call?.session === session else { return }
        if let candidate { call?.unsentCandidates.append(MediaCandidate(candidate)) } else { call?.gatheringComplete = true }
        await sendCandidates(of: session)
    }

    /// Sends the call's queued candidates (and the end of them) to the peer through the
    /// server, once the call has an ID. A refusal is logged: the call may still connect
    /// on the candidates already known.
    private func sendCandidates(of session: MediaSession) async {
        guard let current = call, current.session === session, current.mayTrickle,
              !current.unsentCandidates.isEmpty || current.gatheringComplete else { return }
        let batch = current.unsentCandidates
        let complete = current.gatheringComplete
        call?.unsentCandidates = []
        call?.gatheringComplete = false
        do {
            _ = try await request(MessageType.candidates, Request.Candidates(callID: current.id, candidates: batch, complete: complete),
                                  as: Reply.Empty.self)
        } catch {
            logger.notice("call \(current.id): candidates not passed on: \(error.message)")
        }
    }

    /// Whether a `ws://HOST:PORT/` URL names this host by a loopback address or `localhost`
    /// (numeric addresses only: no name is looked up).
    static func isLoopback(url: String) -> Bool {
        guard var host = URLComponents(string: url)?.host, !host.isEmpty else { return false }
        if host.hasPrefix("["), host.hasSuffix("]") { host = String(host.dropFirst().dropLast()) }
        if host.lowercased() == "localhost" { return true }
        var v4 = in_addr()
        if inet_pton(AF_INET, host, &v4) == 1 { return UInt32(bigEndian: v4.s_addr) >> 24 == 127 }
        var v6 = in6_addr()
        guard inet_pton(AF_INET6, host, &v6) == 1 else { return false }
        return withUnsafeBytes(of: &v6) { bytes in bytes.prefix(15).allSatisfy { $0 == 0 } && bytes[15] == 1 }
    }

    /// The peer's candidates that parse; the rest are logged and left out.
    static func usable(_ candidates: [MediaCandidate], logger: Logger) -> [ICECandidate] {
        candidates.compactMap { candidate in
            do throws(SignalingError) {
                return try candidate.iceCandidate()
            } catch {
                logger.notice("ignored a candidate: \(error.message)")
                return nil
            }
        }
    }

    /// NIM's number for a recording that failed to start.
    private static func code(for error: RecordingError) -> SignalingError.Code {
        switch error.kind {
        case .missingDirectory: .recordingInvalidPath
        case .cannotCreate: .recordingCreateFileFailed
        case .diskFull: .recordingDiskNearlyFull
        case .writeFailed: .recordingWriteFailed
        case .notRecording: .recordingStopFailed
        case .alreadyRecording, .nothingToRecord, .invalidOptions: .recordingStartFailed
        }
    }

    private func reportMedia(callID: UInt64, connected: Bool) async {
        _ = try? await request(MessageType.mediaStatus, Request.MediaStatus(callID: callID, connected: connected), as: Reply.Empty.self)
    }

    /// Stops the current call's media; concurrent callers all wait for the same stop, so
    /// the summary is in place when any of them returns.
    private func stopMedia() async {
        if let call {
            self.call = nil
            let session = call.session
            try? session.stopAudioRecording()
            stopping = Task { await self.stop(session) }
        }
        if let stopping {
            lastCallSummary = await stopping.value
            self.stopping = nil
        }
    }

    /// Stops a session; returns once its own threads have finished (BYE sent, buffers
    /// drained), without holding the actor or a thread meanwhile.
    @discardableResult
    func stop(_ session: MediaSession) async -> MediaSession.Summary {
        await session.stop()
    }
}

/// Turns each second's receive statistics into NIM's net status, per participant (the
/// peer of a call is participant "").
final class NetStatusMeter: Sendable {
    private let previous = Locked<[String: (received: Int, lost: Int)]>([:])
    /// The connectivity check's RTT, until RTCP measures one (milliseconds).
    private let firstRoundTrip = Locked<Double>(0)

    func setFirstRoundTrip(_ rtt: Duration) {
        firstRoundTrip.withLock { $0 = rtt / .milliseconds(1) }
    }

    /// For each participant with traffic in the second since the last call: its level,
    /// loss %, RTT ms and jitter ms.
    func update(_ statistics: MediaReceiver.Statistics) -> [(String, NetStatus, Double, Double, Double)] {
        let rtt = statistics.roundTripTime.map { $0 * 1_000 } ?? firstRoundTrip.withLock { $0 }
        let byParticipant = Dictionary(grouping: statistics.streams, by: \.participant)
        return byParticipant.keys.sorted().compactMap { participant in
            let streams = byParticipant[participant] ?? []
            let received = streams.reduce(0) { $0 + $1.packetsReceived }
            let lost = streams.reduce(0) { $0 + max(0, $1.packetsLost) }
            let (deltaReceived, deltaLost) = previous.withLock { last in
                let before = last[participant] ?? (0, 0)
                last[participant] = (received, lost)
                return (received - before.received, lost - before.lost)
            }
            guard deltaReceived + deltaLost > 0 else { return nil }
            let loss = Double(max(0, deltaLost)) * 100 / Double(deltaReceived + max(0, deltaLost))
            let jitter = (streams.first?.jitter ?? 0) * 1_000
            let index = NetStatus.index(lossPercent: loss, roundTripMilliseconds: rtt, jitterMilliseconds: jitter)
            return (participant, NetStatus(index: index), loss, rtt, jitter)
        }
    }
}
