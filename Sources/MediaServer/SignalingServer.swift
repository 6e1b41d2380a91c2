import Foundation
import Hummingbird
import HummingbirdWebSocket
import LiveStreaming
import Logging
import MediaEngine
import MediaRouting
import NIOCore
import ServiceLifecycle
import Signaling
import UnixSignals

/// The signaling server: WebSocket connections (Hummingbird) at path `/`, each feeding a
/// shared `SignalingHub`, plus a timer service for deadlines.
///
/// `start()` binds and returns the port; `shutdown()` ends every call with a reason,
/// stores their records, closes the connections and stops. `run(signals:)` serves until
/// SIGINT or SIGTERM and shuts down the same way.
public final class SignalingServer: Sendable {
    public struct Configuration: Sendable {
        public var host = "127.0.0.1"
        /// 0 picks a free port (`start` returns it).
        public var port = 0
        public var limits = ConnectionGuard.Limits()
        public var calls = CallRegistry.Configuration()
        public var meetings = MeetingRegistry.Configuration()
        /// Largest WebSocket frame the transport reads; bigger ones close the connection
        /// (1009). Messages under it but over `limits.maximumMessageSize` get an error reply.
        public var maximumFrameSize = 1 << 21
        /// Pending TCP connections the listener queues.
        public var backlog = 4_096
        /// Run the media port (UDP): the meetings' forwarding server (SFU) and the
        /// net-detect echo responder, announced at login.
        public var echo = true
        /// Its UDP port; nil: the same number as the signaling (TCP) port (when the TCP
        /// port was picked (0) and that number is taken in UDP, any free one).
        public var echoPort: Int?
        public var echoPolicy = EchoPolicy()
        /// The forwarding server's settings (leg timeout, keyframe requests, bandwidth).
        public var forwarding = ForwardingRouter.Configuration()
        /// Forwarding threads on the media port (`--media-threads`); legs are spread over them.
        public var mediaThreads = 1
        /// When set, the forwarding threads run under `SCHED_FIFO` at this priority (1...99;
        /// `--media-realtime-priority`): forwarding latency stays low on a machine that also
        /// runs other work. Nil: ordinary threads.
        public var mediaRealtimePriority: Int32?
        /// The address participants send media to; nil: the bind address (every IPv4
        /// interface's when bound to 0.0.0.0).
        public var publicHost: String?
        /// Serve Prometheus metrics at `GET /metrics` on the signaling port.
        public var metrics = true
        /// When set, `/metrics` answers only requests with `Authorization: Bearer <token>`
        /// (the per-leg metrics name accounts); never logged.
        public var metricsToken: String?
        /// Run live rooms (a composer per room, on the media port's meetings): the stream
        /// they push. Nil: joins with a push URL are refused.
        public var live: LiveStreamFormat? = LiveStreamFormat()
        /// Where live rooms' server recordings go.
        public var liveRecordingDirectory = "recordings"
        /// How pushes retry a target that fails.
        public var liveRetry = LiveRetryPolicy.default
        /// A TURN server (coturn with `use-auth-secret`) whose credentials each login gets
        /// in its `iceServers`; nil: logins get the media port's STUN entries only. Holds
        /// the shared secret (redacted when printed).
        public var turn: TURNRelay?
        /// Serve as one of several nodes sharing the store (which must be PostgreSQL): the
        /// node registers under its ID, heartbeats, writes its logins to presence, and
        /// takes part in calls with devices on the other nodes. Nil: a single server.
        public var cluster: ClusterNode.Configuration?
        /// Real-time sessions and conferences: limits, timeouts and the quota.
        public var rts = RTSRegistry.Configuration()
        /// The data relay's limits (its quota is `rts.quota`).
        public var rtsRelay = RTSRelay.Configuration()
        /// Where members' data is recorded (one file per member and channel); nil: nowhere.
        public var rtsRecordingDirectory: String?
        /// A WebSocket at `/echo` that sends every message back to its sender, on the same stack
        /// and pump as the data relay: the baseline `bench rts` measures the relay against.
        /// Off by default.
        public var webSocketEcho = false

        public init() {}
    }

    public let hub: SignalingHub
    private let configuration: Configuration
    private let logger: Logger
    private let state = ServerState()
    /// The forwarding server's figures (legs open, counters), when it runs.
    public var forwardingStatistics: ForwardingServer.Statistics? { state.media?.server.statistics }

    /// The metrics `/metrics` serves.
    public let metrics = ServerMetrics()
    private let store: any CallStore

    /// Creates a server; nothing is bound until `start`.
    public init(configuration: Configuration, authority: TokenAuthority, store: any CallStore, logger: Logger) {
        self.configuration = configuration
        self.logger = logger
        self.store = store
        var rts = configuration.rts
        rts.recording = configuration.rtsRecordingDirectory != nil
        hub = SignalingHub(authority: authority, store: store, limits: configuration.limits, registry: configuration.calls,
                           meetings: configuration.meetings, rts: rts, turn: configuration.turn,
                           logger: logger)
        var relaySettings = configuration.rtsRelay
        relaySettings.quota = configuration.rts.quota
        relaySettings.recordingDirectory = configuration.rtsRecordingDirectory
        let (reports, sink) = AsyncStream<RTSRelayReport>.makeStream()
        relay = RTSRelay(configuration: relaySettings, authority: authority, logger: logger) { sink.yield($0) }
        relayReports = (reports, sink)
    }

    /// The data relay of real-time sessions (its figures).
    public let relay: RTSRelay
    private let relayReports: (stream: AsyncStream<RTSRelayReport>, sink: AsyncStream<RTSRelayReport>.Continuation)

    /// Binds and starts serving in the background.
    ///
    /// - Parameter signals: Signals that trigger a graceful shutdown (the CLI passes
    ///   SIGINT and SIGTERM; tests none).
    /// - Returns: The bound port.
    /// - Throws: When the address cannot be bound (the error names it).
    public func start(signals: [UnixSignal] = []) async throws -> Int {
        let hub = self.hub
        let relay = self.relay
        if let directory = configuration.rtsRecordingDirectory {
            var isDirectory: ObjCBool = false
            guard FileManager.default.fileExists(atPath: directory, isDirectory: &isDirectory), isDirectory.boolValue else {
                throw StoreError("--rts-recording-directory \(directory): no such directory")
            }
        }
        await hub.attach(rtsRelay: relay)
        let relayReports = self.relayReports.stream
        state.setRelayReports(Task {
            for await report in relayReports { await hub.rtsRelayReported(report) }
        })
        let http = Router(context: BasicRequestContext.self)
        if configuration.metrics {
            let expected = configuration.metricsToken.map { Array("Bearer \($0)".utf8) }
            http.get("/metrics") { [metrics, state] request, _ -> Response in
                if let expected {
                    let given = request.headers[.authorization].map { Array($0.utf8) } ?? []
                    guard constantTimeEqual(given, expected) else {
                        return Response(status: .unauthorized, headers: [.wwwAuthenticate: "Bearer"])
                    }
                }
                await metrics.update(signaling: hub.metricsSnapshot, forwarding: state.media?.server.statistics)
                return Response(status: .ok, headers: [.contentType: "text/plain; version=0.0.4; charset=utf-8"],
                                body: .init(byteBuffer: ByteBuffer(string: metrics.render())))
            }
        }
        WebRTCRoutes.add(to: http, hub: hub)
        WebClientRoutes.add(to: http) { [state] in
            guard let cluster = state.cluster else { return [] }
            let nodes = (try? await cluster.membership.registry.liveNodes()) ?? cluster.membership.nodes
            return nodes.filter { $0.id != cluster.node }.map(\.signalingURL)
        }
        let bound = AsyncStream<Int>.makeStream()
        let echo = configuration.webSocketEcho
        let app = Application(
            router: http,
            // Upgrades are decided here, not by a WebSocket route: hummingbird-websocket's
            // router keeps each upgraded connection's handler in a box its request context
            // holds while the box holds the context, a cycle never freed. Through it every
            // connection ever made kept a few hundred bytes, and the handler kept the hub
            // (its store, its media server) after shutdown.
            server: .http1WebSocketUpgrade(
                configuration: .init(ws: .init(maxFrameSize: configuration.maximumFrameSize, autoPing: .enabled(timePeriod: .seconds(30))))
            ) { request, _, _ in
                guard request.method == .get, let path = request.path else { return .dontUpgrade }
                if path == "/rts" || path.hasPrefix("/rts?") {
                    return .upgrade([:]) { inbound, outbound, _ in
                        try await Self.serve(inbound: inbound, outbound: outbound, relay: relay)
                    }
                }
                if echo, path == "/echo" {
                    return .upgrade([:]) { inbound, outbound, _ in await Self.echo(inbound: inbound, outbound: outbound) }
                }
                guard path == "/" || path.hasPrefix("/?") else { return .dontUpgrade }
                return .upgrade([:]) { inbound, outbound, _ in
                    try await Self.serve(inbound: inbound, outbound: outbound, hub: hub)
                }
            },
            configuration: ApplicationConfiguration(address: .hostname(configuration.host, port: configuration.port),
                                                    serverName: "mediaengine", backlog: configuration.backlog),
            onServerRunning: { channel in
                bound.continuation.yield(channel.localAddress?.port ?? 0)
                bound.continuation.finish()
            },
            logger: logger
        )
        let group = ServiceGroup(configuration: ServiceGroupConfiguration(
            services: [.init(service: app), .init(service: HubTimer(hub: hub))],
            gracefulShutdownSignals: signals,
            logger: logger
        ))
        let task = Task {
            defer { bound.continuation.finish() }
            try await group.run()
        }
        state.set(group: group, task: task)
        for await port in bound.stream {
            if configuration.echo {
                do {
                    let (reports, sink) = AsyncStream<ForwardingRouter.Report>.makeStream()
                    let forward: @Sendable (ForwardingRouter.Report) -> Void = { sink.yield($0) }
                    let media: ForwardingServer
                    do {
                        media = try ForwardingServer(bindTo: MediaEngine.SocketAddress(host: configuration.host, port: configuration.echoPort ?? port),
                                                     configuration: configuration.forwarding, echoPolicy: configuration.echoPolicy,
                                                     workers: configuration.mediaThreads, realtimePriority: configuration.mediaRealtimePriority,
                                                     reports: forward)
                    } catch where configuration.echoPort == nil && configuration.port == 0 {
                        // A picked TCP port's number can be taken in UDP (by anything, a call's
                        // media socket): take another; the login reply names the one in use.
                        media = try ForwardingServer(bindTo: MediaEngine.SocketAddress(host: configuration.host, port: 0),
                                                     configuration: configuration.forwarding, echoPolicy: configuration.echoPolicy,
                                                     workers: configuration.mediaThreads, realtimePriority: configuration.mediaRealtimePriority,
                                                     reports: forward)
                    }
                    try media.start()
                    state.setMedia(media, reports: Task {
                        for await report in reports {
                            switch report {
                            case .legLost(let leg): await hub.mediaPlaneReported(.legLost(leg))
                            case .speaking(let meeting, let levels): await hub.mediaPlaneReported(.speaking(meeting: meeting, levels: levels))
                            case .videoLayers(let leg, let active): await hub.mediaPlaneReported(.videoLayers(leg: leg, active: active))
                            }
                        }
                    }, sink: sink)
                    let mediaPort = media.localAddress.port
                    let hosts = configuration.publicHost.map { [$0] }
                        ?? (configuration.host == "0.0.0.0" ? LocalAddresses.ipv4() : [configuration.host])
                    await hub.setEchoPort(mediaPort)
                    await hub.attach(mediaPlane: SFUMediaPlane(server: media), candidates: hosts.map { MediaCandidate(host: $0, port: mediaPort) },
                                   workerPorts: media.ports)
                    if let format = configuration.live {
                        let (liveReports, liveSink) = AsyncStream<LivePlaneReport>.makeStream()
                        var settings = LiveRooms.Configuration(recordingDirectory: configuration.liveRecordingDirectory, mediaPort: mediaPort)
                        settings.format = format
                        settings.retry = configuration.liveRetry
                        let rooms = LiveRooms(configuration: settings) { liveSink.yield($0) }
                        state.setLive(rooms, reports: Task {
                            for await report in liveReports { await hub.livePlaneReported(report) }
                        }, sink: liveSink)
                        await hub.attach(livePlane: rooms)
                    }
                } catch {
                    await shutdown()
                    throw error
                }
            }
            if let settings = configuration.cluster {
                do {
                    try await join(settings, port: port)
                } catch {
                    await shutdown()
                    throw error
                }
            }
            return port
        }
        // The group ended before binding: report why.
        try await task.value
        throw StoreError("\(configuration.host):\(configuration.port): the server stopped before it was listening")
    }

    /// Registers the node and starts its heartbeat and bus.
    private func join(_ settings: ClusterNode.Configuration, port: Int) async throws {
        guard let store = store as? PostgresCallStore else {
            throw StoreError("node \(settings.node): the nodes of a cluster share a PostgreSQL store; this one is not")
        }
        let hub = self.hub
        let cluster = ClusterNode(configuration: settings, store: store, logger: logger) {
            let figures = await hub.metricsSnapshot
            return figures.connections + figures.participants
        }
        let host = configuration.publicHost ?? configuration.host
        let media = state.media.map { "\(host):\($0.server.localAddress.port)" } ?? ""
        try await cluster.register(signalingURL: "ws://\(host):\(port)/", mediaAddress: media)
        await hub.attach(cluster: cluster)
        state.setCluster(cluster)
        let group = state.group
        cluster.start(hub: hub) {
            // Another incarnation holds this node's ID: this one must stop serving.
            await group?.triggerGracefulShutdown()
        }
    }

    /// The node's part in a cluster, when it is one.
    public var cluster: ClusterNode? { state.cluster }

    /// Waits until the server stops (after a signal or `shutdown`).
    public func wait() async throws {
        try await state.task?.value
    }

    /// Graceful shutdown; returns when the server has stopped.
    public func shutdown() async {
        guard let group = state.group else { return }
        await group.triggerGracefulShutdown()
        _ = try? await state.task?.value
        // After the hub's shutdown queued its hangups and records for other nodes.
        await state.cluster?.stop()
        relayReports.sink.finish()
        await state.relayReports?.value
        if let (rooms, reports, sink) = state.live {
            await withCheckedContinuation { continuation in Thread.detachNewThread { rooms.stopAll(); continuation.resume() } }
            sink.finish()
            await reports.value
        }
        if let (media, reports, sink) = state.media {
            await withCheckedContinuation { continuation in Thread.detachNewThread { media.stop(); continuation.resume() } }
            sink.finish()
            await reports.value
        }
    }

    /// The media port's address (meetings and net-detect), when one runs.
    public var echoAddress: MediaEngine.SocketAddress? { state.media?.server.localAddress }

    /// The live rooms' composers, when they run.
    public var liveRooms: LiveRooms? { state.live?.rooms }

    /// The forwarding server on the media port, when one runs (its figures).
    public var forwardingServer: ForwardingServer? { state.media?.server }

    /// One WebSocket connection: a writer draining the hub's queue for it, and this task
    /// reading messages into the hub.
    static func serve(inbound: WebSocketInboundStream, outbound: WebSocketOutboundWriter, hub: SignalingHub) async throws {
        let (stream, sink) = AsyncStream<OutboundMessage>.makeStream(bufferingPolicy: .bufferingOldest(SignalingHub.outboundQueueLimit))
        guard let id = await hub.open(sink) else {
            try await outbound.close(.goingAway, reason: "server shutting down")
            return
        }
        await pump(inbound: inbound, queue: stream, maximumMessageSize: Int.max) { message in
            switch message {
            case .message(let message): try await outbound.write(.text(String(decoding: message.encoded(), as: UTF8.self)))
            case .text(let data): try await outbound.write(.text(String(decoding: data, as: UTF8.self)))
            case .close(let code, let reason):
                try await outbound.close(.init(codeNumber: Int(code)), reason: reason)
                return false
            }
            return true
        } read: { message in
            switch message {
            case .text(let text): await hub.received(Data(text.utf8), from: id)
            case .binary(let buffer): await hub.received(Data(buffer.readableBytesView), from: id)
            }
        }
        await hub.closed(id)
    }
}

extension SignalingServer {
    /// Runs one WebSocket connection until either side ends it: a writer sends what `queue`
    /// yields (`write` returns false once it sent a close frame), and this task hands each
    /// message to `read`, awaiting it (so a peer sending faster than `read` takes is slowed by
    /// TCP). `abort` finishing drops the connection at once, even while a write waits.
    static func pump<Item: Sendable>(inbound: WebSocketInboundStream, queue: AsyncStream<Item>, maximumMessageSize: Int,
                                     abort: AsyncStream<Void>? = nil, write: @escaping @Sendable (Item) async throws -> Bool,
                                     read: @escaping @Sendable (WebSocketMessage) async -> Void) async {
        await withTaskGroup(of: Void.self) { group in
            group.addTask {
                do {
                    for await item in queue where try await !write(item) { return }
                } catch {
                    // The peer went away; the reader sees it too.
                }
            }
            group.addTask {
                do {
                    for try await message in inbound.messages(maxSize: maximumMessageSize) { await read(message) }
                } catch {
                    // A protocol error or an oversize frame: the transport closes the connection.
                }
            }
            if let abort { group.addTask { for await _ in abort {} } }
            await group.next()
            group.cancelAll()
        }
    }

    /// One data connection (`/rts`): a writer draining the relay's queue for it, and this task
    /// reading messages into the relay. The reader awaits the relay for each message, so a
    /// member sending faster than the relay takes is slowed by TCP, not queued.
    static func serve(inbound: WebSocketInboundStream, outbound: WebSocketOutboundWriter, relay: RTSRelay) async throws {
        let (stream, sink) = AsyncStream<RTSOutbound>.makeStream()
        let gauge = RTSQueueGauge()
        guard let id = await relay.open(sink, gauge: gauge) else {
            try await outbound.close(.goingAway, reason: "server shutting down")
            return
        }
        await pump(inbound: inbound, queue: stream, maximumMessageSize: 1 << 21, abort: gauge.aborted) { message in
            switch message {
            case .data(let buffer):
                try await outbound.write(.binary(buffer))
                gauge.sent(buffer.readableBytes)
            case .message(let message):
                try await outbound.write(.text(String(decoding: message.encoded(), as: UTF8.self)))
                gauge.sent(256)
            case .close(let code, let reason):
                try await outbound.close(.init(codeNumber: Int(code)), reason: reason)
                return false
            }
            return true
        } read: { message in
            switch message {
            case .text(let text): await relay.received(text: Data(text.utf8), from: id)
            case .binary(let buffer):
                // A sender over its quota: its next message waits (TCP holds the rest back).
                let wait = await relay.received(data: buffer, from: id)
                if wait > .zero { try? await Task.sleep(for: wait) }
            }
        }
        await relay.closed(id)
    }
}

extension SignalingServer {
    /// Messages an echo connection may have waiting to go back; beyond them it is closed
    /// (its client sends without reading).
    static let echoBacklog = 4_096

    /// One `/echo` connection: every message goes back as it came, through the same pump as a
    /// data connection, so `bench rts` compares the relay's work with the transport's alone.
    static func echo(inbound: WebSocketInboundStream, outbound: WebSocketOutboundWriter) async {
        let (stream, sink) = AsyncStream<WebSocketMessage>.makeStream(bufferingPolicy: .bufferingOldest(echoBacklog))
        let (aborted, abort) = AsyncStream<Void>.makeStream()
        await pump(inbound: inbound, queue: stream, maximumMessageSize: 1 << 21, abort: aborted) { message in
            switch message {
            case .binary(let buffer): try await outbound.write(.binary(buffer))
            case .text(let text): try await outbound.write(.text(text))
            }
            return true
        } read: { message in
            if case .dropped = sink.yield(message) { abort.finish() }
        }
        sink.finish()
    }
}

/// Ticks the hub's deadlines; on graceful shutdown, shuts the hub down first (the
/// service group stops services in reverse order, so this runs while connections are up).
struct HubTimer: Service {
    let hub: SignalingHub

    func run() async throws {
        await withGracefulShutdownHandler {
            while !Task.isCancelled && !Task.isShuttingDownGracefully {
                await hub.tick()
                try? await Task.sleep(for: .milliseconds(100))
            }
        } onGracefulShutdown: {
        }
        await hub.shutdown()
        // Let the writers flush the hangups and close frames before the listener stops.
        try? await Task.sleep(for: .milliseconds(200))
    }
}

/// The running group and task, set once by `start`.
final class ServerState: Sendable {
    private let lock = Locked<(group: ServiceGroup?, task: Task<Void, any Error>?)>((nil, nil))
    private let mediaLock = Locked<(server: ForwardingServer, reports: Task<Void, Never>, sink: AsyncStream<ForwardingRouter.Report>.Continuation)?>(nil)

    func setMedia(_ server: ForwardingServer, reports: Task<Void, Never>, sink: AsyncStream<ForwardingRouter.Report>.Continuation) {
        mediaLock.withLock { $0 = (server, reports, sink) }
    }

    var media: (server: ForwardingServer, reports: Task<Void, Never>, sink: AsyncStream<ForwardingRouter.Report>.Continuation)? {
        mediaLock.withLock { $0 }
    }

    private let liveLock = Locked<(rooms: LiveRooms, reports: Task<Void, Never>, sink: AsyncStream<LivePlaneReport>.Continuation)?>(nil)

    func setLive(_ rooms: LiveRooms, reports: Task<Void, Never>, sink: AsyncStream<LivePlaneReport>.Continuation) {
        liveLock.withLock { $0 = (rooms, reports, sink) }
    }

    var live: (rooms: LiveRooms, reports: Task<Void, Never>, sink: AsyncStream<LivePlaneReport>.Continuation)? {
        liveLock.withLock { $0 }
    }

    private let relayLock = Locked<Task<Void, Never>?>(nil)

    func setRelayReports(_ task: Task<Void, Never>) { relayLock.withLock { $0 = task } }

    var relayReports: Task<Void, Never>? { relayLock.withLock { $0 } }

    private let clusterLock = Locked<ClusterNode?>(nil)

    func setCluster(_ cluster: ClusterNode) { clusterLock.withLock { $0 = cluster } }

    var cluster: ClusterNode? { clusterLock.withLock { $0 } }

    func set(group: ServiceGroup, task: Task<Void, any Error>) {
        lock.withLock { $0 = (group, task) }
    }

    var group: ServiceGroup? { lock.withLock { $0.group } }
    var task: Task<Void, any Error>? { lock.withLock { $0.task } }
}
