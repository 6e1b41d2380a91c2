import Foundation
import MediaEngine

/// What the manager keeps of real-time sessions.
struct RTSState {
    struct Session {
        var channelID: UInt64
        var peer: String
        var services: [RTSService]
        var accepted: Bool
        var placed: Bool
        /// The voice channel's media: a P2P audio session (ICE, SRTP) toward the peer.
        var audio: MediaSession?
    }

    /// Data connections by URL: the own server's, and those of the cluster nodes hosting
    /// sessions or conferences this device takes part in.
    var connections: [String: RTSDataConnection] = [:]
    /// The data connection URL each channel uses.
    var channelURLs: [UInt64: String] = [:]
    /// Sessions this device is in (requested, or accepted here).
    var sessions: [String: Session] = [:]
    /// Requests ringing here, by session ID.
    var requests: [String: Event.RTSReceive] = [:]
    /// Conferences this device is in: channel ID to name.
    var conferences: [UInt64: String] = [:]
    /// Voice channels being stopped (logout waits for them, so the app's sinks are done).
    var voiceStops: [Task<Void, Never>] = []
    /// Each channel's session or conference (to name a data message's).
    var channelNames: [UInt64: (session: String?, conference: String?)] {
        var names: [UInt64: (session: String?, conference: String?)] = [:]
        for (id, session) in sessions { names[session.channelID] = (id, nil) }
        for (channelID, name) in conferences { names[channelID] = (nil, name) }
        return names
    }
}

/// A session this side requested.
public struct RTSSessionInfo: Sendable, Hashable {
    public var sessionID: String
    public var channelID: UInt64
    /// This member's recording file on the server; nil when it is not recorded.
    public var recordFile: String?
}

/// A conference this side joined.
public struct RTSConferenceInfo: Sendable, Hashable {
    public var name: String
    public var channelID: UInt64
    public var recordFile: String?
    /// Who was in it before this device, in the order they joined.
    public var members: [String]
}

/// Real-time sessions (NIM's `NIMRTSManager`) and conferences (`NIMRTSConferenceManager`):
/// reliable, ordered data between two users or among a conference's members, relayed (and
/// recorded, unless a member opts out) by the server. Events and data come out of
/// `rtsEvents`, in order.
///
/// Data goes on a data connection of its own (`/rts`), opened at the first request,
/// response or join: a member sending at full rate delays none of the signaling. Sending
/// waits for the quota the server gives (`RTSQuota`: 50 KB a message, bytes and messages a
/// second), so a sender is slowed, never refused; messages sent from one task arrive in order.
/// In a cluster, a session or conference another node hosts gets a data connection to that
/// node (the server names it when it refuses the answer or join as `misdirected`).
extension NetCallManager {
    // MARK: Sessions

    /// Asks `callee` for a session (`requestRTS`).
    /// - Parameters:
    ///   - services: `.data`, `.audio` or both. The voice channel (`.audio`) is a P2P audio
    ///     session with the callee, made with the configuration's media factory (as a call's);
    ///     it is exclusive with calls and meetings, and there is one at a time.
    ///   - extendMessage: Text the callee gets with the request.
    ///   - disableRecord: Whether the server records nobody's data in this session.
    /// - Throws: `SignalingError`: `calleeOffline`, `busy` (this side or the callee in a call or
    ///   another voice session), `rtsFull`, `serverDisconnected`, ...
    public func requestRTS(callee: String, services: [RTSService] = [.data], extendMessage: String? = nil,
                           disableRecord: Bool = false) async throws(SignalingError) -> RTSSessionInfo {
        let prepared = services.contains(.audio) ? try await prepareVoice(MessageType.rtsRequest, controlling: true) : nil
        let (audio, media) = (prepared?.session, prepared?.endpoint)
        let reply: Reply.RTSRequest
        rtsChannelsPending.withLock { $0 += 1 }
        defer { rtsChannelsPending.withLock { $0 -= 1 } }
        do throws(SignalingError) {
            // A session lives on its caller's server.
            _ = try await openDataConnection(url: ownDataURL)
            reply = try await request(MessageType.rtsRequest, Request.RTSRequest(callee: callee, services: services, extendMessage: extendMessage,
                                                                                   disableRecord: disableRecord ? true : nil, media: media),
                                      as: Reply.RTSRequest.self)
        } catch {
            if let audio { _ = await stop(audio) }
            throw error
        }
        rts.sessions[reply.sessionID] = RTSState.Session(channelID: reply.channelID, peer: callee, services: services, accepted: false,
                                                         placed: true, audio: audio)
        rts.channelURLs[reply.channelID] = ownDataURL
        return RTSSessionInfo(sessionID: reply.sessionID, channelID: reply.channelID, recordFile: reply.recordFile)
    }

    /// Answers a request (`responseRTS`). Accepting makes the data service connected.
    /// - Returns: This member's recording file when accepted and recorded.
    /// - Throws: `SignalingError`: `handledElsewhere` when another device answered first,
    ///   `rtsNotFound` when the request ended.
    @discardableResult
    public func responseRTS(sessionID: String, accept: Bool, disableRecord: Bool = false) async throws(SignalingError) -> String? {
        let invitation = rts.requests[sessionID]
        let voiceAsked = accept && invitation?.services.contains(.audio) == true
        let prepared = voiceAsked ? try await prepareVoice(MessageType.rtsResponse, controlling: false) : nil
        let (audio, media) = (prepared?.session, prepared?.endpoint)
        let reply: Reply.RTSResponse
        rtsChannelsPending.withLock { $0 += 1 }
        defer { rtsChannelsPending.withLock { $0 -= 1 } }
        let url: String
        do throws(SignalingError) {
            let body = Request.RTSResponse(sessionID: sessionID, accept: accept, disableRecord: disableRecord ? true : nil, media: media)
            (reply, url) = try await onHostingServer(opening: accept) { () async throws(SignalingError) in
                try await request(MessageType.rtsResponse, body, as: Reply.RTSResponse.self)
            }
        } catch {
            if let audio { _ = await stop(audio) }
            throw error
        }
        rts.requests[sessionID] = nil
        guard accept else { return nil }
        let peer = invitation?.from ?? ""
        rts.sessions[sessionID] = RTSState.Session(channelID: reply.channelID, peer: peer, services: invitation?.services ?? [.data],
                                                   accepted: true, placed: false, audio: audio)
        rts.channelURLs[reply.channelID] = url
        rtsEvents.push(.serviceStatus(sessionID: sessionID, .data, .connected))
        if let audio {
            if let remote = reply.media ?? invitation?.media {
                startVoice(audio, remote: remote, sessionID: sessionID)
            } else {
                endVoice(sessionID, why: "the server sent no caller media")
            }
        }
        return reply.recordFile
    }

    /// Ends a session (`terminateRTS`), once everything this side sent was relayed.
    public func terminateRTS(sessionID: String) async throws(SignalingError) {
        if let session = rts.sessions[sessionID] { try? await dataConnection(of: session.channelID)?.sync(timeout: configuration.requestTimeout) }
        _ = try await request(MessageType.rtsTerminate, Request.RTSTerminate(sessionID: sessionID), as: Reply.Empty.self)
        endVoice(sessionID, why: nil)
        forgetSession(sessionID)
    }

    /// Sends silence instead of the microphone on the voice channel (or the microphone again).
    public func setRTSMute(_ muted: Bool) {
        voice?.controls.update { $0.audioMuted = muted }
    }

    /// Plays the voice channel's peer (or, off, silences it here).
    public func setRTSSpeaker(_ on: Bool) {
        voice?.setVolume(on ? 1 : 0, participant: "")
    }

    /// The voice channel's media session, while there is one.
    public var currentRTSVoice: MediaSession? { voice }

    // MARK: The voice channel

    var voice: MediaSession? { rts.sessions.values.lazy.compactMap(\.audio).first }

    /// The voice channel shares the audio device with calls and meetings: one of them at a time.
    private func checkVoiceFree(_ type: String) throws(SignalingError) {
        if let id = currentCallID { throw SignalingError(.busy, "\(type): the voice channel is exclusive with calls, and this device is in call \(id)") }
        if meeting != nil { throw SignalingError(.busy, "\(type): the voice channel is exclusive with meetings, and this device is in one") }
        if voice != nil { throw SignalingError(.busy, "\(type): this device is in another session with a voice channel") }
    }

    /// A voice channel's media session, and its endpoint to send: refused while a call, a
    /// meeting or another voice channel holds the audio device.
    private func prepareVoice(_ type: String, controlling: Bool) async throws(SignalingError)
        -> (session: MediaSession, endpoint: MediaEndpoint) {
        try checkVoiceFree(type)
        let session = try makeSession(type: .audio, quality: .default, controlling: controlling)
        return (session, await gatheredEndpoint(of: session))
    }

    /// The session's endpoint with every candidate it gathers (a session's media endpoint
    /// travels once, in the request or the response: nothing is trickled), waiting at most
    /// `limit` for the gathering to complete.
    private func gatheredEndpoint(of session: MediaSession, limit: Duration = .seconds(3)) async -> MediaEndpoint {
        let gathered = Locked<[MediaCandidate]>([])
        let (complete, finish) = AsyncStream<Void>.makeStream()
        session.gather { event in
            switch event {
            case .localCandidate(let candidate): gathered.withLock { $0.append(MediaCandidate(candidate)) }
            case .gatheringComplete: finish.finish()
            default: break
            }
        }
        await withTaskGroup(of: Void.self) { group in
            group.addTask { for await _ in complete {} }
            group.addTask { try? await Task.sleep(for: limit) }
            await group.next()
            group.cancelAll()
        }
        finish.finish()
        var endpoint = MediaEndpoint(session.local)
        endpoint.candidates += gathered.withLock { $0 }
        return endpoint
    }

    /// Starts the voice channel toward the peer's endpoint; its state comes out of `rtsEvents`.
    private func startVoice(_ session: MediaSession, remote: MediaEndpoint, sessionID: String) {
        let events = rtsEvents
        let logger = logger
        do {
            try session.start(remote: try remote.sessionEndpoint()) { event in
                switch event {
                case .connected(let pair, _):
                    logger.info("rts \(sessionID): voice connected over \(pair)")
                    events.push(.serviceStatus(sessionID: sessionID, .audio, .connected))
                case .connectFailed(let why), .disconnected(let why):
                    logger.notice("rts \(sessionID): voice lost: \(why)")
                    events.push(.serviceStatus(sessionID: sessionID, .audio, .disconnected))
                default:
                    break
                }
            }
            // The endpoint carried every candidate the peer has.
            session.addRemoteCandidates([], complete: true)
        } catch {
            endVoice(sessionID, why: "\(error)")
        }
    }

    /// Stops a session's voice channel, if it has one (`why`: it failed, and is reported).
    func endVoice(_ sessionID: String, why: String?) {
        guard let audio = rts.sessions[sessionID]?.audio else { return }
        rts.sessions[sessionID]?.audio = nil
        if let why { logger.notice("rts \(sessionID): voice ended: \(why)") }
        rtsEvents.push(.serviceStatus(sessionID: sessionID, .audio, .disconnected))
        rts.voiceStops.append(Task.detached { _ = await audio.stop() })
    }

    /// Sends `data` to the other member (`sendRTSData`): at most the quota's size (50 KB).
    /// Waits while the quota is spent.
    /// - Throws: `messageTooLarge`, `rtsNotFound` for a session not in progress here,
    ///   `rtsNotAccepted` before the callee accepted, `serverDisconnected`.
    public func sendRTSData(_ data: Data, sessionID: String) async throws(SignalingError) {
        guard let session = rts.sessions[sessionID], let connection = dataConnection(of: session.channelID) else {
            throw SignalingError(.rtsNotFound, "sendRTSData: no session \(sessionID) in progress here")
        }
        guard session.accepted else { throw SignalingError(.rtsNotAccepted, "sendRTSData: \(session.peer) has not accepted the session yet") }
        try await connection.send(data, channelID: session.channelID, to: "")
    }

    /// Sends control text to the other member (`sendRTSControl`). It arrives after the data
    /// sent before it.
    public func sendRTSControl(_ text: String, sessionID: String) async throws(SignalingError) {
        if let session = rts.sessions[sessionID] { try await dataConnection(of: session.channelID)?.sync(timeout: configuration.requestTimeout) }
        _ = try await request(MessageType.rtsControl, Request.RTSControl(sessionID: sessionID, control: text), as: Reply.Empty.self)
    }

    // MARK: Conferences

    /// Reserves a conference name (`reserveConference`).
    /// - Throws: `meetingExists` (NIM 417) when the name is in use.
    public func reserveConference(name: String, ext: String? = nil) async throws(SignalingError) {
        _ = try await request(MessageType.reserveConference, Request.ReserveConference(name: name, ext: ext), as: Reply.Empty.self)
    }

    /// Joins a reserved conference (`joinConference`); its data and events come out of `rtsEvents`.
    public func joinConference(name: String, disableRecord: Bool = false) async throws(SignalingError) -> RTSConferenceInfo {
        rtsChannelsPending.withLock { $0 += 1 }
        defer { rtsChannelsPending.withLock { $0 -= 1 } }
        let body = Request.JoinConference(name: name, disableRecord: disableRecord ? true : nil)
        let (reply, url) = try await onHostingServer(opening: true) { () async throws(SignalingError) in
            try await request(MessageType.joinConference, body, as: Reply.JoinConference.self)
        }
        rts.conferences[reply.channelID] = reply.name
        rts.channelURLs[reply.channelID] = url
        return RTSConferenceInfo(name: reply.name, channelID: reply.channelID, recordFile: reply.recordFile, members: reply.members)
    }

    /// Leaves a conference (`leaveConference`), once everything this side sent was relayed.
    public func leaveConference(channelID: UInt64) async throws(SignalingError) {
        if rts.conferences[channelID] != nil { try? await dataConnection(of: channelID)?.sync(timeout: configuration.requestTimeout) }
        _ = try await request(MessageType.leaveConference, Request.LeaveConference(channelID: channelID), as: Reply.Empty.self)
        rts.conferences[channelID] = nil
        rts.channelURLs[channelID] = nil
    }

    /// Sends `data` in a conference: to `account`, or to everyone else (nil).
    public func sendConferenceData(_ data: Data, channelID: UInt64, to account: String? = nil) async throws(SignalingError) {
        guard rts.conferences[channelID] != nil, let connection = dataConnection(of: channelID) else {
            throw SignalingError(.rtsNotFound, "sendConferenceData: not in a conference with channel \(channelID)")
        }
        try await connection.send(data, channelID: channelID, to: account ?? "")
    }

    /// The quota the server gives this device's data (after the first request or join).
    public var rtsQuota: RTSQuota? { (rts.connections[ownDataURL] ?? rts.connections.values.first)?.quota }

    // MARK: Data connection

    /// The own server's data connection URL.
    var ownDataURL: String { RTSDataConnection.url(forSignaling: configuration.server) }

    /// The data connection channel `channelID` uses.
    private func dataConnection(of channelID: UInt64) -> RTSDataConnection? {
        rts.channelURLs[channelID].flatMap { rts.connections[$0] }
    }

    /// Runs a request that makes this device a member (`opening`: it needs a data
    /// connection first). In a cluster the session or conference may live on another node:
    /// the server then refuses it as `misdirected`, naming that node's data connection,
    /// which is opened before the request is sent once more. Returns the reply and the data
    /// connection URL the channel uses.
    private func onHostingServer<Result>(opening: Bool, _ run: () async throws(SignalingError) -> Result)
        async throws(SignalingError) -> (Result, String) {
        if opening { _ = try await openDataConnection(url: ownDataURL) }
        do throws(SignalingError) {
            return (try await run(), ownDataURL)
        } catch {
            guard opening, error.code == .misdirected, let location = error.location, location != ownDataURL else { throw error }
            logger.debug("rts: hosted elsewhere; opening the data connection at \(location)")
            _ = try await openDataConnection(url: location)
            return (try await run(), location)
        }
    }

    private func openDataConnection(url: String) async throws(SignalingError) -> RTSDataConnection {
        if let open = rts.connections[url] { return open }
        guard client != nil else { throw SignalingError(.serverDisconnected, "not connected to the server") }
        let stream = rtsEvents
        let names = rtsChannelNames
        let pending = rtsChannelsPending
        let connection = try await RTSDataConnection.open(
            url: url, token: configuration.token, device: configuration.device, timeout: configuration.requestTimeout,
            logger: logger,
            received: { [weak self] inbound in
                switch inbound {
                case .data(let frame):
                    var named = names.withLock { $0[frame.channelID] }
                    // Data of a channel whose reply is still on its way: wait for it (at most 2 s).
                    var waited = 0
                    while named == nil, waited < 400, pending.withLock({ $0 > 0 }) {
                        try? await Task.sleep(for: .milliseconds(5))
                        waited += 1
                        named = names.withLock { $0[frame.channelID] }
                    }
                    await stream.push(data: RTSData(channelID: frame.channelID, sessionID: named?.session, conference: named?.conference,
                                                    from: frame.peer, data: Data(frame.payload.readableBytesView)))
                case .event(let event):
                    await self?.handleRTSDataEvent(event)
                }
            },
            ended: { [weak self] reason in
                await self?.dataConnectionEnded(url, reason)
            })
        if let open = rts.connections[url] {
            await connection.close()
            return open
        }
        rts.connections[url] = connection
        return connection
    }

    private func dataConnectionEnded(_ url: String, _ reason: String?) {
        rts.connections[url] = nil
        let error = reason.map { $0.hasPrefix("too slow") ? SignalingError(.rtsTooSlow, "the server closed the data connection: \($0)") : nil }
            ?? nil
        rtsConnectionLost(error ?? SignalingError(.serverDisconnected, "the data connection closed\(reason.map { ": \($0)" } ?? "")"),
                          dataURL: url)
    }

    /// What this device was in ends: its connection to the server went (or, with
    /// `dataURL`, the data connection to that URL: what used it).
    func rtsConnectionLost(_ error: SignalingError, dataURL: String? = nil) {
        func lost(_ channelID: UInt64) -> Bool { dataURL == nil || rts.channelURLs[channelID] == dataURL }
        for (id, session) in rts.sessions.sorted(by: { $0.key < $1.key }) where lost(session.channelID) {
            endVoice(id, why: nil)
            rtsEvents.push(.serviceStatus(sessionID: id, .data, .disconnected))
            rtsEvents.push(.terminate(sessionID: id, by: nil, reason: .failed))
            forgetSession(id)
        }
        for (channelID, name) in rts.conferences.sorted(by: { $0.key < $1.key }) where lost(channelID) {
            rtsEvents.push(.leftConference(channelID: channelID, conference: name, error))
            rts.conferences[channelID] = nil
            rts.channelURLs[channelID] = nil
        }
    }

    /// Forgets a session that ended here.
    func forgetSession(_ id: String) {
        if let channelID = rts.sessions.removeValue(forKey: id)?.channelID { rts.channelURLs[channelID] = nil }
    }

    /// Closes the data connection (logout).
    func closeRTS() async {
        for id in rts.sessions.keys.sorted() { endVoice(id, why: nil) }
        let stops = rts.voiceStops
        rts.voiceStops.removeAll()
        for stop in stops { await stop.value }
        let connections = rts.connections.values
        rts.connections.removeAll()
        for connection in connections { await connection.close() }
        rtsEvents.finish()
    }

    // MARK: Events

    /// Events of the data connection: in order with the data.
    private func handleRTSDataEvent(_ event: ServerEvent) {
        do {
            switch event.type {
            case MessageType.rtsResponse:
                let body = try event.body(Event.RTSResponse.self)
                rtsEvents.push(.response(sessionID: body.sessionID, from: body.from, accepted: body.accepted))
                if body.accepted {
                    rts.sessions[body.sessionID]?.accepted = true
                    rtsEvents.push(.serviceStatus(sessionID: body.sessionID, .data, .connected))
                    if let audio = rts.sessions[body.sessionID]?.audio {
                        if let media = body.media {
                            startVoice(audio, remote: media, sessionID: body.sessionID)
                        } else {
                            endVoice(body.sessionID, why: "the callee accepted without media")
                        }
                    }
                } else {
                    endVoice(body.sessionID, why: nil)
                    forgetSession(body.sessionID)
                }
            case MessageType.rtsTerminate:
                let body = try event.body(Event.RTSTerminate.self)
                guard rts.sessions[body.sessionID] != nil else { return }
                endVoice(body.sessionID, why: nil)
                rtsEvents.push(.serviceStatus(sessionID: body.sessionID, .data, .disconnected))
                rtsEvents.push(.terminate(sessionID: body.sessionID, by: body.by, reason: body.reason))
                forgetSession(body.sessionID)
            case MessageType.rtsControl:
                let body = try event.body(Event.RTSControl.self)
                rtsEvents.push(.control(sessionID: body.sessionID, from: body.from, body.control))
            case MessageType.rtsUserJoined:
                let body = try event.body(Event.RTSUserJoined.self)
                rtsEvents.push(.userJoined(channelID: body.channelID, conference: body.name, account: body.account))
            case MessageType.rtsUserLeft:
                let body = try event.body(Event.RTSUserLeft.self)
                rtsEvents.push(.userLeft(channelID: body.channelID, conference: body.name, account: body.account, reason: body.reason))
            case MessageType.rtsDataRefused:
                let body = try event.body(Event.RTSDataRefused.self)
                rtsEvents.push(.dataRefused(first: body.first, last: body.last, count: body.count, body.error))
            default:
                logger.debug("ignored data connection event \(event.type)")
            }
        } catch {
            logger.notice("malformed \(event.type) event: \(error.message)")
        }
    }

    /// Events of the signaling connection; false when `event` is none of these.
    func handleRTSSignalingEvent(_ event: ServerEvent) throws(SignalingError) -> Bool {
        switch event.type {
        case MessageType.rtsReceive:
            let body = try event.body(Event.RTSReceive.self)
            rts.requests[body.sessionID] = body
            rtsEvents.push(.request(sessionID: body.sessionID, channelID: body.channelID, from: body.from, services: body.services,
                                    extendMessage: body.extendMessage))
        case MessageType.rtsResponsedByOther:
            let body = try event.body(Event.RTSResponsedByOther.self)
            rts.requests[body.sessionID] = nil
            rtsEvents.push(.responsedByOther(sessionID: body.sessionID, accepted: body.accepted))
        case MessageType.rtsTerminate:
            // A request that rang here ended, or this device's data connection went.
            let body = try event.body(Event.RTSTerminate.self)
            if rts.requests.removeValue(forKey: body.sessionID) != nil || rts.sessions[body.sessionID] != nil {
                if rts.sessions[body.sessionID] != nil {
                    endVoice(body.sessionID, why: nil)
                    rtsEvents.push(.serviceStatus(sessionID: body.sessionID, .data, .disconnected))
                }
                rtsEvents.push(.terminate(sessionID: body.sessionID, by: body.by, reason: body.reason))
                forgetSession(body.sessionID)
            }
        case MessageType.rtsLeftConference:
            let body = try event.body(Event.RTSLeftConference.self)
            if rts.conferences.removeValue(forKey: body.channelID) != nil {
                rts.channelURLs[body.channelID] = nil
                rtsEvents.push(.leftConference(channelID: body.channelID, conference: body.name, body.error))
            }
        default:
            return false
        }
        return true
    }
}
