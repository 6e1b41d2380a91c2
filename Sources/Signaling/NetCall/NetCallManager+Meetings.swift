import Foundation
import MediaEngine

/// The meeting this device is in: its media leg to the server and who is there.
struct MeetingState {
    var id: UInt64
    var name: String
    var role: MeetingRole
    var session: MediaSession
    var participants: [String: MeetingParticipant]
    var leaving = false
}

/// Multi-party meetings through the server's forwarding server, with the semantics of
/// NIM's meeting API: reserve, join (actor or audience), leave, role, per-user mute (the
/// server stops forwarding), and the events: `userJoined`, `userLeft`,
/// `meetingRoleChanged`, `meetingStatus`, `meetingError`, `meetingRecord`, per-user
/// `netStatus`; pictures per user and the server's speaking report go through
/// `mediaUpdates`. A device is in one call or one meeting at a time.
extension NetCallManager {
    /// The meeting in progress, if any.
    public var currentMeetingID: UInt64? { meeting?.id }
    /// Who else is in the meeting now, by account.
    public var meetingParticipants: [MeetingParticipant] {
        (meeting?.participants.values.map { $0 } ?? []).sorted { $0.account < $1.account }
    }
    /// The current meeting's media, for its statistics and controls.
    public var currentMeetingSession: MediaSession? { meeting?.session }

    /// Reserves a meeting name (until everyone who joined has left).
    /// - Throws: `SignalingError`: `meetingExists` for a name in use, `forbidden` without
    ///   the grant, `tooManyMeetings`.
    @discardableResult
    public func reserveMeeting(name: String, ext: String? = nil) async throws(SignalingError) -> Reply.ReserveMeeting {
        try await request(MessageType.reserveMeeting, Request.ReserveMeeting(name: name, ext: ext), as: Reply.ReserveMeeting.self)
    }

    /// The RTX payload type meeting legs take the server's video retransmissions on (the
    /// engine's VP8 is 96; browsers pair 97 with it too).
    static let meetingRTXPayloadType: UInt8 = 97

    /// Joins a reserved meeting; its media starts at once (an audience sends nothing).
    /// - Returns: The meeting's ID and who was already there.
    /// - Throws: `SignalingError`: `meetingNotFound`, `meetingFull`, `alreadyInMeeting`,
    ///   `forbidden` (no grant), `busy` (in a call), or a local media failure.
    @discardableResult
    ///
    /// With `bypass`, it joins a live room: as its host when `bypass.url` is set (the
    /// server pushes the room there), as a co-host otherwise; the live-room rules'
    /// failures are `liveRoom*` and `liveUserCountLimit` errors, a bad URL
    /// `bypassInvalidURL`, a bad custom layout `bypassLayout`.
    public func joinMeeting(name: String, role: MeetingRole = .actor, type: CallType = .audio, videoQuality: CallVideoQuality = .default,
                            ext: String? = nil, bypass: BypassStreaming? = nil)
    async throws(SignalingError) -> (callID: UInt64, participants: [MeetingParticipant]) {
        guard meeting == nil else { throw SignalingError(.alreadyInMeeting, "joinMeeting: already in meeting \(meeting!.name)") }
        guard currentCallID == nil else { throw SignalingError(.busy, "joinMeeting: in call \(currentCallID!)") }
        guard voice == nil else { throw SignalingError(.busy, "joinMeeting: a real-time session's voice channel is open") }
        let session = try makeSession(type: type, quality: videoQuality, meeting: true)
        session.controls.update { controls in
            controls.audioPaused = role == .audience
            controls.videoPaused = role == .audience || type == .audio
        }
        var local = MediaEndpoint(session.local)
        local.candidates = []
        local.rtxPayloadType = Self.meetingRTXPayloadType
        let reply: Reply.JoinMeeting
        do {
            reply = try await request(MessageType.joinMeeting, Request.JoinMeeting(name: name, role: role, type: type, videoQuality: videoQuality,
                                                                                   ext: ext, media: local, bypass: bypass),
                                  as: Reply.JoinMeeting.self)
        } catch {
            await stop(session)
            throw error
        }
        meeting = MeetingState(id: reply.callID, name: name, role: role, session: session,
                               participants: Dictionary(uniqueKeysWithValues: reply.participants.map { ($0.account, $0) }))
        do throws(SignalingError) {
            guard let server = reply.media else {
                throw SignalingError(.malformedMessage, "joinMeeting: the server's reply has no media endpoint")
            }
            try startMeetingMedia(session, server: server, participants: reply.participants, callID: reply.callID)
        } catch {
            meeting = nil
            _ = try? await request(MessageType.leaveMeeting, Request.LeaveMeeting(callID: reply.callID), as: Reply.Empty.self)
            await stop(session)
            throw error
        }
        return (reply.callID, reply.participants)
    }

    /// Leaves the meeting; its media stops.
    public func leaveMeeting(callID: UInt64 = 0) async throws(SignalingError) {
        guard var current = meeting, callID == 0 || callID == current.id else {
            throw SignalingError(.notInMeeting, "leaveMeeting: not in meeting \(callID)")
        }
        current.leaving = true
        meeting = current
        defer { meeting = nil }
        await stop(current.session)
        _ = try await request(MessageType.leaveMeeting, Request.LeaveMeeting(callID: current.id), as: Reply.Empty.self)
    }

    /// Switches between actor (sends) and audience (sends nothing) in the meeting.
    public func setMeetingRole(_ role: MeetingRole) async throws(SignalingError) {
        guard let current = meeting else { throw SignalingError(.notInMeeting, "setMeetingRole: not in a meeting") }
        _ = try await request(MessageType.setMeetingRole, Request.SetMeetingRole(callID: current.id, role: role), as: Reply.Empty.self)
        let sendsVideo = current.session.sendsVideo
        current.session.controls.update { controls in
            controls.audioPaused = role == .audience
            controls.videoPaused = role == .audience || !sendsVideo
            controls.keyframeRequested = role == .actor
        }
        meeting?.role = role
    }

    /// Stops (or resumes) the server forwarding `user`'s audio to this device.
    public func setAudioMute(_ muted: Bool, forUser user: String) async throws(SignalingError) {
        try await setMeetingMute(user: user, audio: muted, video: nil)
    }

    /// Stops (or resumes) the server forwarding `user`'s video to this device.
    public func setVideoMute(_ muted: Bool, forUser user: String) async throws(SignalingError) {
        try await setMeetingMute(user: user, audio: nil, video: muted)
    }

    /// Tells the server the size, in pixels, this device shows `user`'s video at (0×0 while
    /// it is not shown): of a simulcast video the server then sends the smallest layer
    /// about that size, and no more (less when this device's bandwidth is short). Before
    /// any call, the largest layer the bandwidth allows comes.
    /// - Throws: `SignalingError`: `notInMeeting` (not in one, or `user` is not in it),
    ///   `invalidRequest` for a size out of 0...16384.
    public func setVideoSize(_ size: (width: Int, height: Int), forUser user: String) async throws(SignalingError) {
        guard let current = meeting else { throw SignalingError(.notInMeeting, "setVideoSize: not in a meeting") }
        _ = try await request(MessageType.setVideoSize, Request.SetVideoSize(callID: current.id, user: user, width: size.width, height: size.height),
                              as: Reply.Empty.self)
    }

    private func setMeetingMute(user: String, audio: Bool?, video: Bool?) async throws(SignalingError) {
        guard let current = meeting else { throw SignalingError(.notInMeeting, "setMeetingMute: not in a meeting") }
        _ = try await request(MessageType.setMeetingMute, Request.SetMeetingMute(callID: current.id, user: user, audio: audio, video: video),
                              as: Reply.Empty.self)
    }

    // MARK: Live rooms (the host's controls)

    /// Moves the room's push to `url` without restarting the room; the outcome comes as
    /// `bypassStreamingURLSwitched` (the old push goes on until the new one carries the room).
    /// - Throws: `bypassInvalidURL` for a URL that does not parse, `liveRoomNotHost`.
    public func switchBypassStreamingURL(_ url: String) async throws(SignalingError) {
        guard let current = meeting else { throw SignalingError(.notInMeeting, "switchBypassStreamingUrl: not in a meeting") }
        _ = try await request(MessageType.switchBypassStreamingURL, Request.SwitchBypassStreamingURL(callID: current.id, url: url),
                              as: Reply.Empty.self)
    }

    /// Stops or resumes the room's push; the outcome comes as `bypassStreamingEnabled`.
    /// - Throws: `liveRoomNotHost`.
    public func setBypassStreamingEnabled(_ enabled: Bool) async throws(SignalingError) {
        guard let current = meeting else { throw SignalingError(.notInMeeting, "setBypassStreamingEnabled: not in a meeting") }
        _ = try await request(MessageType.setBypassStreamingEnabled, Request.SetBypassStreamingEnabled(callID: current.id, enabled: enabled),
                              as: Reply.Empty.self)
    }

    /// Changes the room's video mix mode (0-4; 4 with `customLayout`) while live.
    /// - Throws: `bypassLayout` for an unknown mode or a bad layout, `liveRoomNotHost`.
    public func setBypassStreamingMixMode(_ mixMode: Int, customLayout: String? = nil) async throws(SignalingError) {
        guard let current = meeting else { throw SignalingError(.notInMeeting, "setBypassStreamingMixMode: not in a meeting") }
        _ = try await request(MessageType.setBypassStreamingMixMode,
                              Request.SetBypassStreamingMixMode(callID: current.id, mixMode: mixMode, customLayout: customLayout),
                              as: Reply.Empty.self)
    }

    // MARK: Events

    /// Handles a meeting event; false for a type that is not one.
    func handleMeetingEvent(_ event: ServerEvent) async throws(SignalingError) -> Bool {
        switch event.type {
        case MessageType.userJoined:
            let body = try event.body(Event.UserJoined.self)
            if var current = meeting, current.id == body.callID {
                current.participants[body.participant.account] = body.participant
                meeting = current
                try? current.session.addParticipant(MediaSession.Participant(id: body.participant.account, audioSSRC: body.participant.audioSSRC,
                                                                             videoSSRC: body.participant.videoSSRC))
            }
            emit.yield(.userJoined(callID: body.callID, body.participant))
        case MessageType.userLeft:
            let body = try event.body(Event.UserLeft.self)
            if var current = meeting, current.id == body.callID {
                current.participants[body.account] = nil
                meeting = current
                current.session.removeParticipant(body.account)
            }
            emit.yield(.userLeft(callID: body.callID, user: body.account, body.reason))
        case MessageType.meetingRoleChanged:
            let body = try event.body(Event.MeetingRoleChanged.self)
            meeting?.participants[body.account]?.role = body.role
            emit.yield(.meetingRoleChanged(callID: body.callID, user: body.account, body.role))
        case MessageType.meetingError:
            let body = try event.body(Event.MeetingError.self)
            if let current = meeting, current.id == body.callID {
                meeting = nil
                await stop(current.session)
            }
            emit.yield(.meetingError(callID: body.callID, body.error))
        case MessageType.speakingUsers:
            let body = try event.body(Event.SpeakingUsers.self)
            if meeting?.id == body.callID { emitMedia.yield(.speakingUsers(body.levels)) }
        case MessageType.videoLayers:
            let body = try event.body(Event.VideoLayers.self)
            if let current = meeting, current.id == body.callID, body.active.count <= 3 {
                current.session.controls.update { $0.videoLayersActive = body.active }
            }
        case MessageType.meetingRecord:
            emit.yield(.meetingRecord(try event.body(Event.MeetingRecordEvent.self).record))
        case MessageType.bypassStreamingStatus:
            let body = try event.body(Event.BypassStreamingStatus.self)
            emit.yield(.bypassStreamingStatus(callID: body.callID, output: body.output, status: body.status, body.error))
        case MessageType.bypassStreamingURLSwitched:
            let body = try event.body(Event.BypassStreamingResult.self)
            emit.yield(.bypassStreamingURLSwitched(callID: body.callID, body.error))
        case MessageType.bypassStreamingEnabled:
            let body = try event.body(Event.BypassStreamingResult.self)
            emit.yield(.bypassStreamingEnabled(callID: body.callID, enabled: body.enabled ?? false, body.error))
        default:
            return false
        }
        return true
    }

    // MARK: Media

    private func startMeetingMedia(_ session: MediaSession, server: MediaEndpoint, participants: [MeetingParticipant],
                                   callID: UInt64) throws(SignalingError) {
        var route = server
        if let rewrite = configuration.meetingMediaRoute { route.candidates = rewrite(server.candidates) }
        var endpoint = try route.sessionEndpoint()
        endpoint.audioSSRC = 0
        let emit = self.emit
        let emitMedia = self.emitMedia
        let status = NetStatusMeter()
        let me = account ?? ""
        let logger = logger
        let members = participants.map { MediaSession.Participant(id: $0.account, audioSSRC: $0.audioSSRC, videoSSRC: $0.videoSSRC) }
        do {
            try session.join(server: endpoint, participants: members) { [weak self] event in
                switch event {
                case .connected(let pair, let roundTripTime):
                    status.setFirstRoundTrip(roundTripTime)
                    emit.yield(.mediaPath(callID: callID, pair, roundTripMilliseconds: roundTripTime / .milliseconds(1)))
                    emit.yield(.meetingStatus(callID: callID, .connected))
                case .pathChanged(let pair):
                    emit.yield(.mediaPath(callID: callID, pair, roundTripMilliseconds: nil))
                case .localCandidate, .gatheringComplete:
                    break  // the server is ICE-lite: it learns this side's address from the checks
                case .connectFailed(let why), .disconnected(let why):
                    emit.yield(.meetingStatus(callID: callID, .disconnected(why)))
                    Task { await self?.meetingLegLost(callID: callID, why) }
                case .statistics(let statistics):
                    for (participant, level, loss, rtt, jitter) in status.update(statistics) where !participant.isEmpty {
                        emit.yield(.netStatus(user: participant, level, lossPercent: loss, roundTripMilliseconds: rtt, jitterMilliseconds: jitter))
                    }
                case .remoteVideoFrame(let frame, let participant):
                    emitMedia.yield(.remoteVideoFrame(user: participant, frame))
                case .localVideoFrame(let frame):
                    emitMedia.yield(.localPreviewFrame(frame))
                case .localAudioLevel(let level):
                    emitMedia.yield(.myVolume(level))
                case .audioMixTaskCompleted(let task):
                    emit.yield(.audioMixTaskCompleted(task))
                case .recordStarted(let target, let path):
                    emit.yield(.recordStarted(callID: callID, file: path, user: target.participantID ?? me))
                case .recordError(let target, let error):
                    emit.yield(.recordError(callID: callID, user: target.participantID ?? me, error))
                case .recordStopped(let target, let summary):
                    emit.yield(.recordStopped(callID: callID, file: summary.path, user: target.participantID ?? me))
                case .recordVideoSizeChanged(let target, let width, let height):
                    emit.yield(.recordVideoSizeChanged(callID: callID, user: target.participantID ?? me, width: width, height: height))
                case .remoteAudioLevel, .speakingUsers, .dtlsConnected:
                    // Meetings report speakers from the server (`speakingUsers` events).
                    break
                case .audioProcessingFailed(let error):
                    logger.warning("meeting \(callID): audio processing is off, the microphone goes out unprocessed: \(error.message)")
                }
            }
        } catch {
            throw SignalingError(.operationFailed, "media: \(error)")
        }
    }

    /// The leg to the server stopped working (no answer to checks): the meeting is over for
    /// this device; the server will time the participant out too.
    private func meetingLegLost(callID: UInt64, _ why: String) async {
        guard let current = meeting, current.id == callID, !current.leaving else { return }
        meeting = nil
        await stop(current.session)
        _ = try? await request(MessageType.leaveMeeting, Request.LeaveMeeting(callID: callID), as: Reply.Empty.self)
        emit.yield(.meetingError(callID: callID, SignalingError(.connectTimeout, "meeting leg lost: \(why)")))
    }
}
