import Foundation
import Logging
import MediaEngine
import MediaRouting
import Signaling

/// What a connection's writer task sends next.
public enum OutboundMessage: Sendable, Hashable {
    /// A message of this server's, encoded by the writer.
    case message(ServerMessage)
    /// A message encoded elsewhere: another node's, for a device connected here.
    case text(Data)
    /// Send a close frame with this code and reason, then stop.
    case close(code: UInt16, reason: String)
}

/// The server's shared state: the call registry, every connection's guard and outbound
/// queue, the token authority and the store. Transport-independent: a connection is
/// an `AsyncStream` continuation the WebSocket layer drains.
///
/// Messages of one connection are handled in order (its reader awaits each); messages of
/// different connections interleave only at awaits (token checks, store writes). Bodies
/// are never logged: they hold tokens and keys.
public actor SignalingHub {
    struct Connection {
        var sink: AsyncStream<OutboundMessage>.Continuation
        var guardian: ConnectionGuard
        var grants = Grants.all
    }

    /// Events queued per connection before it counts as too slow and is closed.
    public static let outboundQueueLimit = 4_096

    let authority: TokenAuthority
    let store: any CallStore
    private let limits: ConnectionGuard.Limits
    var registry: CallRegistry
    var meetings: MeetingRegistry
    /// Real-time sessions and conferences (their data goes through `rtsRelay`).
    var rts: RTSRegistry
    var rtsRelay: RTSRelay?
    var unsavedRTS: [RTSRecord] = []
    var mediaPlane: (any MediaPlane)?
    private var livePlane: (any LivePlane)?
    private var connections: [ConnectionID: Connection] = [:]
    var nextConnection: UInt64 = 1
    private var shuttingDown = false
    private let clock = ContinuousClock()
    private let origin: ContinuousClock.Instant
    let logger: Logger
    /// The UDP echo port announced to logged-in clients (net-detect), if one runs.
    private var echoPort: Int?
    /// The TURN server whose credentials logins get, if any.
    let turn: TURNRelay?

    func setEchoPort(_ port: Int?) { echoPort = port }

    /// Records that could not be stored, kept to retry (never dropped).
    private var unsaved: [CallRecord] = []
    private var unsavedMeetings: [MeetingRecord] = []

    /// The nodes this one shares its store with, when it is one of several.
    var cluster: ClusterNode?
    /// Calls that cross nodes: proxies of remote devices, routes of calls owned elsewhere.
    var clusterState = ClusterState()

    public init(authority: TokenAuthority, store: any CallStore, limits: ConnectionGuard.Limits = .init(),
                registry: CallRegistry.Configuration = .init(), meetings: MeetingRegistry.Configuration = .init(),
                rts: RTSRegistry.Configuration = .init(), turn: TURNRelay? = nil, logger: Logger) {
        self.authority = authority
        self.turn = turn
        self.store = store
        self.limits = limits
        self.registry = CallRegistry(configuration: registry)
        self.meetings = MeetingRegistry(configuration: meetings)
        self.rts = RTSRegistry(configuration: rts)
        self.logger = logger
        origin = clock.now
    }

    var time: ServerTime {
        ServerTime(monotonic: clock.now - origin, epochMilliseconds: Int64(Date().timeIntervalSince1970 * 1_000))
    }

    /// Connections open now.
    public var connectionCount: Int { connections.count }
    /// Live calls now.
    public var callCount: Int { registry.callCount }
    /// Meetings reserved or running now.
    public var meetingCount: Int { meetings.meetingCount }
    /// Participants in meetings now.
    public var participantCount: Int { meetings.participantCount }

    /// The counts `/metrics` reports.
    public var metricsSnapshot: ServerMetrics.Signaling {
        ServerMetrics.Signaling(connections: connectionCount, calls: callCount, meetings: meetingCount, participants: participantCount,
                                cluster: cluster?.figures(remoteDevices: clusterState.proxies.count, remoteCalls: clusterState.routes.count,
                                                          remoteParticipants: clusterState.meetingProxies.count,
                                                          participantsHostedElsewhere: clusterState.meetingRoutes.count))
    }

    /// Connects the media plane meetings run on, and where participants reach it: the
    /// media port's candidates, and each forwarding worker's port (the first being the
    /// media port; a leg's participant gets its owner's).
    public func attach(mediaPlane: any MediaPlane, candidates: [MediaCandidate], workerPorts: [Int] = []) {
        self.mediaPlane = mediaPlane
        meetings.mediaCandidates = candidates
        meetings.mediaPorts = workerPorts
    }

    /// Connects the live plane that runs live rooms' composers; without one, a join with
    /// a push URL is refused.
    public func attach(livePlane: any LivePlane) {
        self.livePlane = livePlane
        meetings.liveRoomsAvailable = true
    }

    /// Takes a report of the live plane: it goes to the room's host as an event.
    public func livePlaneReported(_ report: LivePlaneReport) async {
        await perform(meetings.liveReported(report))
    }

    /// Takes a report of the media plane: a lost leg makes its participant leave (timed
    /// out), a speaking report goes to the meeting's members.
    public func mediaPlaneReported(_ report: MediaPlaneReport) async {
        switch report {
        case .legLost(let leg):
            await perform(meetings.legLost(leg, at: time))
        case .speaking(let meeting, let levels):
            await perform(meetings.speaking(levels, in: meeting))
        case .videoLayers(let leg, let active):
            await perform(meetings.videoLayers(active, ofLeg: leg))
        }
    }

    /// Registers a new connection; nil when the server is shutting down.
    public func open(_ sink: AsyncStream<OutboundMessage>.Continuation) -> ConnectionID? {
        guard !shuttingDown else { return nil }
        let id = ConnectionID(nextConnection)
        nextConnection += 1
        connections[id] = Connection(sink: sink, guardian: ConnectionGuard(limits: limits, openedAt: time.monotonic))
        return id
    }

    /// The connection closed (either side).
    public func closed(_ id: ConnectionID) async {
        guard let connection = connections.removeValue(forKey: id) else { return }
        connection.sink.finish()
        let now = time
        let party = registry.device(of: id)
        meetings.disconnected(id, at: now)
        await perform(rts.disconnected(id, at: now))
        await perform(registry.disconnected(id, at: now))
        if cluster != nil { await clusterClosed(id, account: party?.account, device: party?.device) }
    }

    /// Handles one message from a connection: decoded once into a typed request here, at
    /// the edge, then authorized and routed to the call registry, the meeting registry or
    /// (in a cluster) the node that owns the call or hosts the meeting.
    public func received(_ data: Data, from id: ConnectionID) async {
        let now = time
        guard var connection = connections[id] else { return }
        let admitted = connection.guardian.admit(size: data.count, now: now.monotonic)
        if case .reject(let error) = admitted, error.code == .rateLimited {
            // Refused for its rate, a request is named by its ID, so its sender fails it now
            // instead of waiting out its timeout. Parsing that far costs what the fault budget
            // allows: a connection that keeps sending over its rate is closed.
            let requestID = try? Envelope.decode(data, maximumSize: limits.maximumMessageSize).id
            _ = apply(admitted, id, &connection, requestID: requestID)
            return
        }
        guard apply(admitted, id, &connection, requestID: nil) else { return }
        let message: ClientMessage
        do {
            message = try ClientMessage.decode(data, maximumSize: Int.max)
        } catch {
            _ = apply(connection.guardian.malformed(error, now: now.monotonic), id, &connection, requestID: nil)
            return
        }
        guard let requestID = message.id else {
            let error = SignalingError(.invalidRequest, "\(message.type): requests need an id")
            _ = apply(connection.guardian.malformed(error, now: now.monotonic), id, &connection, requestID: nil)
            return
        }
        guard apply(connection.guardian.checkRequestID(requestID, now: now.monotonic), id, &connection, requestID: requestID) else {
            return
        }
        connections[id] = connection
        guard connection.guardian.loggedIn, let (account, device) = registry.device(of: id) else {
            // Before a login only a login is taken; anything else, or a login that does not
            // decode, counts against the connection's budget.
            switch message.request {
            case .success(.login(let login)):
                await self.login(login, requestID: requestID, from: id)
            case .failure(let error) where message.type == MessageType.login:
                _ = apply(connection.guardian.login(succeeded: false, error: error, now: now.monotonic), id, &connection, requestID: requestID)
            default:
                let error = SignalingError(.unauthorized, "\(message.type): log in first")
                _ = apply(connection.guardian.malformed(error, now: now.monotonic), id, &connection, requestID: requestID)
            }
            return
        }
        let request: ClientRequest
        switch message.request {
        case .success(let decoded): request = decoded
        case .failure(let error):
            send(.message(.error(id: requestID, error)), to: id)
            return
        }
        switch RoutedRequest(request) {
        case .login:
            send(.message(.error(id: requestID, SignalingError(.invalidRequest, "login: this connection is already logged in"))), to: id)
        case .dataConnection(let type):
            send(.message(.error(id: requestID, SignalingError(.invalidRequest, "\(type): goes on the data connection (/rts)"))), to: id)
        case .rts(let rtsRequest):
            await handleRTS(rtsRequest, from: RTSRegistry.Identity(account: account, device: device, connection: id), requestID: requestID)
        case .meeting(let meetingRequest):
            let identity = MeetingRegistry.Identity(account: account, device: device, grants: connection.grants)
            if let cluster, let host = await meetingHost(of: meetingRequest, from: id) {
                // A meeting another node hosts: the request goes there, its reply comes back.
                cluster.send(.meetingRequest(connection: id.value, account: account, device: device, grants: connection.grants,
                                             requestID: requestID, type: meetingRequest.type,
                                             message: ClientRequest(meetingRequest).encoded(id: requestID)), to: host)
                return
            }
            let assigned: UInt64? = if case .reserve = meetingRequest { await sharedMeetingID() } else { nil }
            await handleMeeting(id, identity, requestID: requestID, meetingRequest, assignedID: assigned)
        case .call(let callRequest):
            if let owner = remoteOwner(of: callRequest, from: id), let cluster {
                // A call another node owns: the request goes there, its reply comes back.
                cluster.send(.request(connection: id.value, account: account, device: device, requestID: requestID,
                                      type: callRequest.type, message: ClientRequest(callRequest).encoded(id: requestID)), to: owner)
            } else if case .start(let start) = callRequest, cluster != nil {
                await startAcrossNodes(id, requestID: requestID, start)
            } else {
                registry.busyInSessions = rts.audioAccounts
                await perform(registry.handle(callRequest, from: id, requestID: requestID, at: now))
            }
        }
    }

    /// Runs a meeting request of `id`: a connection here, or a proxy of one on another node
    /// when this node hosts the meeting. Nothing awaits between the registry's handling and
    /// `perform` resolving where its outputs go.
    /// - Parameter assignedID: The ID a reservation gives its meeting (a cluster's).
    func handleMeeting(_ id: ConnectionID, _ identity: MeetingRegistry.Identity, requestID: UInt64, _ request: MeetingRequest,
                       assignedID: UInt64?) async {
        if case .reserve = request {} else if mediaPlane == nil {
            let error = SignalingError(.serverUnavailable, "\(request.type): this server runs no media plane for meetings")
            await perform([MeetingRegistry.Output.send(id, .error(id: requestID, error))])
            return
        }
        var credentials = Self.legCredentials()
        if case .join(let join) = request, join.sdp != nil {
            // A WebRTC peer's leg is keyed by DTLS under a certificate of its own.
            do throws(DTLSError) {
                var random = SystemRandomNumberGenerator()
                credentials.webRTC = WebRTCLegCredentials(certificate: try DTLSCertificate(commonName: "mediaengine-sfu"),
                                                          spareAudioSSRC: UInt32.random(in: 1 ... .max, using: &random),
                                                          spareVideoSSRC: UInt32.random(in: 1 ... .max, using: &random))
            } catch {
                let refusal = SignalingError(.serverUnavailable, "joinMeeting: no DTLS certificate: \(error.message)")
                await perform([MeetingRegistry.Output.send(id, .error(id: requestID, refusal))])
                return
            }
        }
        let outputs = meetings.handle(request, from: id, identity, requestID: requestID, credentials: credentials,
                                      assignedID: assignedID, at: time)
        if case .reserve(let reservation) = request { clusterState.reservationHandled(reservation.name) }
        if cluster != nil { meetingHandled(id, identity, request) }
        await perform(outputs)
    }

    /// The server's half of a new meeting leg: a fresh AEAD_AES_128_GCM key (the cheaper
    /// profile with Debian's libsrtp2) and ICE credentials.
    static func legCredentials() -> LegCredentials {
        var random = SystemRandomNumberGenerator()
        let composer = ComposerCredentials(composerKeying: .random(profile: .aeadAES128GCM), serverKeying: .random(profile: .aeadAES128GCM),
                                           ice: .random(using: &random))
        return LegCredentials(keying: .random(profile: .aeadAES128GCM), ice: .random(using: &random), composer: composer)
    }

    private func login(_ request: Request.Login, requestID: UInt64, from id: ConnectionID) async {
        let account: String
        let device: String
        let grants: Grants
        do throws(SignalingError) {
            guard !request.device.isEmpty, request.device.utf8.count <= 128 else {
                throw SignalingError(.invalidRequest, "login: device must be 1 to 128 bytes")
            }
            device = request.device
            (account, grants) = try await authority.verifyWithGrants(request.token)
        } catch {
            guard var connection = connections[id] else { return }
            _ = apply(connection.guardian.login(succeeded: false, error: error, now: time.monotonic), id, &connection,
                      requestID: requestID)
            logger.info("login failed", metadata: ["connection": "\(id)", "reason": "\(error.message)"])
            return
        }
        guard var connection = connections[id] else { return }
        let now = time
        do throws(SignalingError) {
            let (reply, outputs) = try registry.login(id, account: account, device: device, at: now)
            _ = connection.guardian.login(succeeded: true, now: now.monotonic)
            connection.grants = grants
            connections[id] = connection
            _ = meetings.connected(id, MeetingRegistry.Identity(account: account, device: device, grants: grants))
            logger.info("login", metadata: ["connection": "\(id)", "account": "\(account)", "device": "\(device)"])
            var announced = reply
            if cluster != nil {
                announced.activeCalls = (announced.activeCalls + (await clusterLoggedIn(id, account: account, device: device))).sorted()
            }
            announced.echoPort = echoPort
            announced.iceServers = iceServers(for: account)
            await perform([CallRegistry.okReply(id, requestID, .login(announced))] + outputs)
            do {
                try await store.deviceLoggedIn(account: account, device: device, epochMilliseconds: now.epochMilliseconds)
            } catch {
                logger.error("store: \(error.message)")
            }
        } catch {
            _ = apply(connection.guardian.login(succeeded: false, error: error, now: now.monotonic), id, &connection,
                      requestID: requestID)
        }
    }

    /// What a login of `account` gathers candidates with: a STUN entry per address of the
    /// media port (`ForwardingRouter` answers binding requests there), then the TURN
    /// server with fresh credentials for the account.
    func iceServers(for account: String) -> [ICEServer] {
        var servers = meetings.mediaCandidates.map { ICEServer(urls: [ICEServerURL(scheme: .stun, host: $0.host, port: $0.port).description]) }
        if let turn { servers.append(turn.iceServer(for: account)) }
        return servers
    }

    /// Carries out a guard verdict; returns true to go on with the message.
    private func apply(_ verdict: ConnectionGuard.Verdict, _ id: ConnectionID, _ connection: inout Connection,
                       requestID: UInt64?) -> Bool {
        switch verdict {
        case .accept:
            connections[id] = connection
            return true
        case .reject(let error):
            connections[id] = connection
            send(.message(.error(id: requestID, error)), to: id)
            return false
        case .close(let reason):
            connections[id] = connection
            logger.notice("closing abusive connection", metadata: ["connection": "\(id)", "reason": "\(reason)"])
            close(id, code: 1_008, reason: reason)
            return false
        }
    }

    /// Runs deadlines: call timeouts and overdue logins. Call a few times a second.
    public func tick() async {
        let now = time
        for (id, connection) in connections where connection.guardian.loginOverdue(now: now.monotonic) {
            close(id, code: 1_008, reason: "no login within \(limits.loginTimeout)")
        }
        await perform(registry.tick(at: now))
        await perform(meetings.tick(at: now))
        await perform(rts.tick(at: now))
        await rtsRelay?.tick()
        await retryUnsaved()
    }

    /// Graceful shutdown: refuses new connections, ends every call (the parties get a
    /// hangup, the records are stored), then closes every connection with 1001.
    public func shutdown() async {
        shuttingDown = true
        await perform(meetings.shutdown(at: time))
        await perform(rts.shutdown(at: time))
        await rtsRelay?.shutdown()
        await perform(registry.shutdown(at: time))
        await retryUnsaved()
        for id in connections.keys { close(id, code: 1_001, reason: "server shutting down") }
    }

    func perform(_ outputs: [CallRegistry.Output]) async {
        // Where each proxy's outputs go, taken before any await: meanwhile another task
        // may prune a proxy whose call these outputs ended.
        var remotes: [ConnectionID: ClusterState.Remote] = [:]
        if cluster != nil {
            for output in outputs {
                switch output {
                case .send(let id, _), .close(let id, _, _): remotes[id] = remote(id)
                case .record(_, let notify): for id in notify { remotes[id] = remote(id) }
                }
            }
            // Calls that end here free their parties across the nodes before anyone is
            // told (a party told of the end may start its next call at once).
            for case .record(let record, _) in outputs { await releaseParties(of: record.callID) }
        }
        for output in outputs {
            switch output {
            case .send(let id, let message):
                deliver(message, to: id, remote: remotes[id])
            case .close(let id, let code, let reason):
                if let remote = remotes[id] {
                    cluster?.send(.close(connection: remote.connection, code: code, reason: reason), to: remote.node)
                } else {
                    close(id, code: code, reason: reason)
                }
            case .record(let record, let notify):
                logger.info("call ended", metadata: ["callID": "\(record.callID)", "reason": "\(record.endReason.rawValue)"])
                do {
                    try await store.save(record)
                } catch {
                    logger.error("store: \(error.message); will retry")
                    unsaved.append(record)
                }
                let event = ServerMessage.event(.callRecord(Event.Record(record: record)))
                for id in notify {
                    deliver(event, to: id, remote: remotes[id])
                }
                if cluster != nil { callEnded(record.callID) }
            }
        }
    }

    func perform(_ outputs: [MeetingRegistry.Output]) async {
        // Where each proxy's outputs go, taken before any await (as for calls).
        var remotes: [ConnectionID: ClusterState.Remote] = [:]
        if cluster != nil, !clusterState.meetingProxies.isEmpty {
            for output in outputs {
                switch output {
                case .send(let id, _): remotes[id] = clusterState.meetingProxies[id]?.remote
                case .record(_, let notify): for id in notify { remotes[id] = clusterState.meetingProxies[id]?.remote }
                case .mediaPlane, .live: break
                }
            }
        }
        for output in outputs {
            switch output {
            case .send(let id, let message):
                deliver(message, to: id, remote: remotes[id])
            case .mediaPlane(let command):
                mediaPlane?.apply(command)
            case .live(let command):
                livePlane?.apply(command)
            case .record(let record, let notify):
                logger.info("meeting ended", metadata: ["callID": "\(record.callID)", "participants": "\(record.attendance.count)"])
                do {
                    try await store.saveMeeting(record)
                } catch {
                    logger.error("store: \(error.message); will retry")
                    unsavedMeetings.append(record)
                }
                let event = ServerMessage.event(.meetingRecord(Event.MeetingRecordEvent(record: record)))
                for id in notify {
                    deliver(event, to: id, remote: remotes[id])
                }
            }
        }
        if cluster != nil { await meetingsSettled() }
    }

    func retryUnsaved() async {
        if !unsaved.isEmpty {
            var failed: [CallRecord] = []
            for record in unsaved {
                do { try await store.save(record) } catch { failed.append(record) }
            }
            unsaved = failed
        }
        if !unsavedMeetings.isEmpty {
            var failed: [MeetingRecord] = []
            for record in unsavedMeetings {
                do { try await store.saveMeeting(record) } catch { failed.append(record) }
            }
            unsavedMeetings = failed
        }
        if !unsavedRTS.isEmpty {
            var failed: [RTSRecord] = []
            for record in unsavedRTS {
                do { try await store.saveRTS(record) } catch { failed.append(record) }
            }
            unsavedRTS = failed
        }
    }

    /// Sends `message` to a connection of this node, or through the cluster to `remote`,
    /// the node that holds it.
    func deliver(_ message: ServerMessage, to id: ConnectionID, remote: ClusterState.Remote?) {
        if let remote {
            cluster?.send(.deliver(connection: remote.connection, text: message.encoded()), to: remote.node)
        } else {
            send(.message(message), to: id)
        }
    }

    func send(_ message: OutboundMessage, to id: ConnectionID) {
        guard let connection = connections[id] else { return }
        if case .dropped = connection.sink.yield(message) {
            logger.notice("closing a connection that does not read", metadata: ["connection": "\(id)"])
            close(id, code: 1_008, reason: "too many unread messages")
        }
    }

    func close(_ id: ConnectionID, code: UInt16, reason: String) {
        guard let connection = connections[id] else { return }
        // The close goes through even when the queue is full: finishing lets the writer
        // drain what it has, and the reader's end reports the closure.
        connection.sink.yield(.close(code: code, reason: reason))
        connection.sink.finish()
    }

    /// Closes every connection of `account` without ending its calls, as a network failure
    /// would: its devices keep their calls for the reconnect grace. For operators moving
    /// clients to another server, and for tests.
    public func dropConnections(of account: String, reason: String) {
        for id in connections.keys where registry.account(of: id) == account {
            close(id, code: 1_001, reason: reason)
        }
    }

    /// The stored meeting records `account` attended (nil: any), newest first.
    public func meetingRecords(of account: String?, limit: Int = 100) async throws(StoreError) -> [MeetingRecord] {
        try await store.meetingRecords(of: account, limit: limit)
    }

    /// The stored records of an account, newest first (for tests and tools).
    public func records(of account: String, limit: Int = 100) async throws(StoreError) -> [CallRecord] {
        try await store.records(of: account, limit: limit)
    }
}
