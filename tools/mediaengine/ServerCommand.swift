import ArgumentParser
import Foundation
import LiveStreaming
import Logging
import MediaEngine
import MediaRouting
import MediaServer
import Signaling
import UnixSignals

struct ServerCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "server",
        abstract: "Run the signaling server: WebSocket logins with JWTs, P2P call setup, call records in SQLite or PostgreSQL.",
        discussion: """
        Clients connect to ws://HOST:PORT/ and log in with a token from `mediaengine token` (same secret file). \
        The database is created on first start and migrated on every start. SIGINT or SIGTERM ends live calls \
        (the parties are told, the records stored) and stops the server. Logins get the media port as a STUN server \
        and, with --turn-url and --turn-secret-file, credentials for a coturn sharing the secret (docs/turnserver.conf). \
        Several servers sharing one PostgreSQL serve as one: give each --store postgres://... and its own --node-id, \
        for example three nodes on hosts a, b and c: `mediaengine server --host 0.0.0.0 --public-host a.example \
        --store postgres://media@db.example/media --store-password-file pw --node-id a` (and b, c alike). A call \
        between clients of different nodes behaves as on one server; a meeting is placed by load on one node \
        and joined from any (docs/cluster.md).
        """
    )

    @Option(help: "Address to listen on.")
    var host = "127.0.0.1"

    @Option(help: "Port to listen on (0 picks a free one; the address is printed).")
    var port = 8_080

    @Option(help: "SQLite database file (created if missing; default mediaengine.sqlite). Same as --store sqlite:PATH.")
    var db: String?

    @Option(help: """
        Where records, devices and meetings are kept: sqlite:PATH (one node, the default) or \
        postgres://USER@HOST[:PORT]/DATABASE (several nodes sharing one PostgreSQL). Give the password with \
        --store-password-file or PGPASSWORD: one in the URL shows in the process list.
        """)
    var store: String?

    @Option(help: "File holding the PostgreSQL password (with --store postgres://...).")
    var storePasswordFile: String?

    @Option(help: "File holding the token-signing secret (created with a random secret, mode 600, if missing).")
    var secretFile = "mediaengine.secret"

    @Option(help: "Seconds a call may ring before it is missed.")
    var ringTimeout: Double = 45

    @Option(help: "Seconds a call's party whose connection dropped has to log in again before the call fails.")
    var reconnectGrace: Double = 30

    @Option(name: .customLong("node-id"), help: """
        Serve as this node of a cluster sharing --store postgres://...: 1 to 32 of a-z, 0-9, - and _. \
        Each node needs its own; clients of any node can call each other. --public-host names the address \
        the other nodes and clients reach this one at.
        """)
    var nodeID: String?

    @Option(help: "Seconds of silence after which another node is dead (its devices' calls fail after --reconnect-grace).")
    var nodeDeadAfter: Double = 5

    @Option(help: "Seconds to run (default: until SIGINT or SIGTERM).")
    var duration: Double?

    @Option(help: "Address meeting participants send media to (default: the listen address).")
    var publicHost: String?

    @Option(help: "Participants per meeting.")
    var meetingParticipants = 16

    @Option(help: "Meetings the server holds at once.")
    var maximumMeetings = 10_000

    @Option(help: "Seconds without checks or media after which a meeting participant has left (timed out).")
    var legTimeout: Double = 15

    @Option(help: "Threads forwarding meeting media, each with a socket on the media port; legs are spread over them (default: the machine's cores).")
    var mediaThreads = ProcessInfo.processInfo.activeProcessorCount

    @Option(help: ArgumentHelp("Run the forwarding threads under SCHED_FIFO at this real-time priority (1...99, as chrt -f takes it), "
        + "ahead of everything else on the machine (needs root or CAP_SYS_NICE; default: ordinary threads).", valueName: "priority"))
    var mediaRealtimePriority: Int32?

    @Option(help: "Each meeting subscriber's first bandwidth estimate, b/s (the estimate then follows its feedback).")
    var subscriberStartBitrate = 2_000_000

    @Flag(help: "Serve no Prometheus metrics (default: GET /metrics on the listen port).")
    var noMetrics = false

    @Option(help: "File holding a token that /metrics requests must carry as 'Authorization: Bearer TOKEN' (default: none needed).")
    var metricsTokenFile: String?

    @Option(help: "Directory for live rooms' server recordings (--server-recording).")
    var liveRecordingDirectory = "recordings"

    @Option(help: "Live rooms' stream: WIDTHxHEIGHT@FPS.")
    var liveSize = "1280x720@30"

    @Option(help: "Live rooms' video bitrate, b/s (CBR).")
    var liveBitrate = 2_500_000

    @Flag(help: "Run no live-room composers (joins with a push URL are refused).")
    var noLive = false

    @Option(name: .customLong("turn-url"),
            help: "A TURN server sharing --turn-secret-file's secret (coturn's use-auth-secret): turn:HOST:PORT, optionally ?transport=udp.")
    var turnURL: String?

    @Option(help: "File holding the TURN server's static-auth-secret (with --turn-url).")
    var turnSecretFile: String?

    @Option(help: "Seconds the TURN credentials of a login work (default 86400; coturn ends allocations with them).")
    var turnCredentialLifetime: Int?

    @Option(help: "Directory for real-time sessions' recordings (one file per member; default: none are recorded).")
    var rtsRecordingDirectory: String?

    @Option(help: "Bytes a second each real-time session member may send (default 4194304).")
    var rtsBytesPerSecond = RTSQuota().bytesPerSecond

    @Option(help: "Messages a second each real-time session member may send (default 1000).")
    var rtsMessagesPerSecond = RTSQuota().messagesPerSecond

    @Flag(help: "Serve a WebSocket echo at /echo (the baseline `bench rts` measures the data relay against).")
    var websocketEcho = false

    /// --turn-credential-lifetime's bounds: a minute to 30 days.
    static let turnCredentialLifetimes = 60...2_592_000

    /// --live-size and --live-bitrate as a stream format.
    func liveFormat() throws -> LiveStreamFormat {
        let parts = liveSize.split(whereSeparator: { $0 == "x" || $0 == "@" }).compactMap { Int($0) }
        guard parts.count == 3, (160...3_840).contains(parts[0]), (90...2_160).contains(parts[1]), parts[0] % 2 == 0, parts[1] % 2 == 0,
              (1...60).contains(parts[2]) else {
            throw ValidationError("--live-size \(liveSize): use WIDTHxHEIGHT@FPS, even sizes within 160x90...3840x2160, 1-60 fps")
        }
        guard (100_000...50_000_000).contains(liveBitrate) else { throw ValidationError("--live-bitrate must be within 100000...50000000 b/s") }
        var format = LiveStreamFormat()
        format.width = parts[0]
        format.height = parts[1]
        format.frameRate = parts[2]
        format.videoBitrate = liveBitrate
        return format
    }

    func validate() throws {
        _ = try liveFormat()
        if let rtsRecordingDirectory {
            var isDirectory: ObjCBool = false
            guard FileManager.default.fileExists(atPath: rtsRecordingDirectory, isDirectory: &isDirectory), isDirectory.boolValue else {
                throw ValidationError("--rts-recording-directory \(rtsRecordingDirectory): no such directory")
            }
            guard FileManager.default.isWritableFile(atPath: rtsRecordingDirectory) else {
                throw ValidationError("--rts-recording-directory \(rtsRecordingDirectory): not writable")
            }
        }
        guard (1_024...1_073_741_824).contains(rtsBytesPerSecond) else {
            throw ValidationError("--rts-bytes-per-second \(rtsBytesPerSecond) must be within 1024...1073741824")
        }
        guard (1...1_000_000).contains(rtsMessagesPerSecond) else {
            throw ValidationError("--rts-messages-per-second \(rtsMessagesPerSecond) must be within 1...1000000")
        }
        guard (1...1_000).contains(meetingParticipants) else { throw ValidationError("--meeting-participants must be within 1...1000") }
        guard maximumMeetings >= 1 else { throw ValidationError("--maximum-meetings must be at least 1") }
        guard legTimeout >= 1 && legTimeout <= 3_600 else { throw ValidationError("--leg-timeout must be within 1...3600 s") }
        guard (1...256).contains(mediaThreads) else { throw ValidationError("--media-threads \(mediaThreads) must be within 1...256") }
        if let mediaRealtimePriority, !(1...99).contains(mediaRealtimePriority) {
            throw ValidationError("--media-realtime-priority \(mediaRealtimePriority) must be within 1...99")
        }
        guard (100_000...1_000_000_000).contains(subscriberStartBitrate) else {
            throw ValidationError("--subscriber-start-bitrate must be within 100000...1000000000 b/s")
        }
        guard (0...65_535).contains(port) else { throw ValidationError("--port \(port) is not a port number") }
        guard ringTimeout > 0 && ringTimeout <= 3_600 else { throw ValidationError("--ring-timeout \(ringTimeout) must be within 0...3600 s") }
        if let duration, !(duration > 0) { throw ValidationError("--duration \(duration) must be more than 0") }
        try validateTURN()
        guard reconnectGrace > 0 && reconnectGrace <= 3_600 else {
            throw ValidationError("--reconnect-grace \(reconnectGrace) must be within 0...3600 s")
        }
        guard nodeDeadAfter >= 0.5 && nodeDeadAfter <= 600 else { throw ValidationError("--node-dead-after must be within 0.5...600 s") }
        _ = try clusterConfiguration(for: try storeChoice())
    }

    /// --node-id's cluster settings; nil without it.
    func clusterConfiguration(for store: StoreChoice) throws -> ClusterNode.Configuration? {
        guard let nodeID else { return nil }
        guard case .postgres = store else {
            throw ValidationError("--node-id needs --store postgres://...: the nodes of a cluster share a PostgreSQL store")
        }
        let id: NodeID
        do {
            id = try NodeID(nodeID)
        } catch {
            throw ValidationError("--node-id: \(error.message)")
        }
        var configuration = ClusterNode.Configuration(node: id)
        configuration.registry.deadAfter = .milliseconds(Int64(nodeDeadAfter * 1_000))
        // Five heartbeats in the time that makes a node dead: one late one is no death.
        configuration.registry.heartbeatInterval = configuration.registry.deadAfter / 5
        return configuration
    }

    /// Where the store is, from --store or --db.
    enum StoreChoice {
        case sqlite(String)
        case postgres(PostgresCallStore.Location)
    }

    /// --store or --db, parsed (no file or server is touched).
    func storeChoice() throws -> StoreChoice {
        guard let store else {
            if storePasswordFile != nil { throw ValidationError("--store-password-file needs --store postgres://...") }
            return .sqlite(db ?? "mediaengine.sqlite")
        }
        if db != nil { throw ValidationError("--db and --store cannot be combined: give one") }
        if store.hasPrefix("sqlite:") {
            let path = String(store.dropFirst("sqlite:".count))
            guard !path.isEmpty else { throw ValidationError("--store sqlite:PATH names no file") }
            if storePasswordFile != nil { throw ValidationError("--store-password-file needs --store postgres://...") }
            return .sqlite(path)
        }
        guard store.hasPrefix("postgres://") || store.hasPrefix("postgresql://") else {
            // The text may hold a password: it is not repeated.
            throw ValidationError("--store: use sqlite:PATH or postgres://USER@HOST[:PORT]/DATABASE")
        }
        do {
            return .postgres(try PostgresCallStore.Location(url: store))
        } catch {
            throw ValidationError("--store: \(error.message)")
        }
    }

    /// The store's location with its password from where it was given (warning when that
    /// is the URL); before any file is written, so a bad password option changes nothing.
    func resolvedStore() throws -> StoreChoice {
        guard case .postgres(var location) = try storeChoice() else { return try storeChoice() }
        location.password = try SecretSource.storePassword.resolve(argument: location.password, file: storePasswordFile)
        return .postgres(location)
    }

    /// Opens the store.
    /// - Returns: it, and its name for messages (a path, or the URL without the password).
    func open(_ choice: StoreChoice, logger: Logger) async throws -> (any CallStore, String) {
        do {
            switch choice {
            case .sqlite(let path):
                return (try SQLiteCallStore(path: path), path)
            case .postgres(let location):
                return (try await PostgresCallStore(location: location, logger: logger), location.description)
            }
        } catch let error as StoreError {
            throw ValidationError(error.message)
        }
    }

    /// Both TURN options or neither, a lifetime in range. The URL and the secret file are
    /// checked by `turnRelay()`, first thing in `run`.
    func validateTURN() throws {
        switch (turnURL, turnSecretFile) {
        case (nil, nil):
            if turnCredentialLifetime != nil {
                throw ValidationError("--turn-credential-lifetime needs --turn-url and --turn-secret-file")
            }
            return
        case (_?, nil): throw ValidationError("--turn-url needs --turn-secret-file (the secret shared with the TURN server)")
        case (nil, _?): throw ValidationError("--turn-secret-file needs --turn-url (the TURN server sharing the secret)")
        case (_?, _?):
            if let lifetime = turnCredentialLifetime, !Self.turnCredentialLifetimes.contains(lifetime) {
                throw ValidationError("--turn-credential-lifetime \(lifetime) must be within "
                    + "\(Self.turnCredentialLifetimes.lowerBound)...\(Self.turnCredentialLifetimes.upperBound) s")
            }
        }
    }

    /// The TURN relay of --turn-url and --turn-secret-file, nil without them.
    func turnRelay() throws -> TURNRelay? {
        guard let turnURL, let turnSecretFile else { return nil }
        do {
            let lifetime = turnCredentialLifetime.map { Duration.seconds($0) } ?? TURNRelay.defaultCredentialLifetime
            return try TURNRelay.load(url: turnURL, secretFile: turnSecretFile, credentialLifetime: lifetime)
        } catch {
            throw ValidationError("\(error.code == .badURL ? "--turn-url" : "--turn-secret-file"): \(error.message)")
        }
    }

    func run() async throws {
        let secret: ServerSecret
        // Before the database or the secret file is touched: a bad TURN or store setting
        // changes nothing.
        let turn = try turnRelay()
        let storeChoice = try resolvedStore()
        do {
            secret = try ServerSecret.load(path: secretFile, create: true)
        } catch {
            throw ValidationError(error.message)
        }
        var logger = Logger(label: "mediaengine.server")
        logger.logLevel = LogLevel.level(or: .notice)
        let (store, storeName) = try await open(storeChoice, logger: logger)
        var metricsToken: String?
        if let metricsTokenFile {
            guard let text = try? String(contentsOfFile: metricsTokenFile, encoding: .utf8),
                  case let token = text.trimmingCharacters(in: .whitespacesAndNewlines), !token.isEmpty else {
                throw ValidationError("--metrics-token-file \(metricsTokenFile): cannot read a token from it")
            }
            metricsToken = token
        }
        var configuration = SignalingServer.Configuration()
        configuration.metrics = !noMetrics
        configuration.metricsToken = metricsToken
        configuration.host = host
        configuration.port = port
        configuration.calls.ringTimeout = .milliseconds(Int64(ringTimeout * 1_000))
        configuration.calls.reconnectGrace = .milliseconds(Int64(reconnectGrace * 1_000))
        configuration.cluster = try clusterConfiguration(for: storeChoice)
        configuration.publicHost = publicHost
        configuration.live = noLive ? nil : try liveFormat()
        configuration.liveRecordingDirectory = liveRecordingDirectory
        configuration.turn = turn
        configuration.rtsRecordingDirectory = rtsRecordingDirectory
        configuration.rts.quota.bytesPerSecond = rtsBytesPerSecond
        configuration.rts.quota.messagesPerSecond = rtsMessagesPerSecond
        configuration.webSocketEcho = websocketEcho
        configuration.meetings.maximumParticipants = meetingParticipants
        configuration.meetings.maximumMeetings = maximumMeetings
        configuration.forwarding.legTimeout = .milliseconds(Int64(legTimeout * 1_000))
        configuration.mediaThreads = mediaThreads
        configuration.mediaRealtimePriority = mediaRealtimePriority
        configuration.forwarding.subscriberBandwidth.startBitrate = subscriberStartBitrate
        configuration.forwarding.subscriberBandwidth.maximumBitrate = max(configuration.forwarding.subscriberBandwidth.maximumBitrate,
                                                                         subscriberStartBitrate)
        let server = SignalingServer(configuration: configuration, authority: await TokenAuthority(secret: secret), store: store,
                                     logger: logger)
        Interruption.unblockSignals()
        let bound: Int
        do {
            bound = try await server.start(signals: [.sigint, .sigterm])
        } catch let error as TransportError where error.code == .notPermitted {
            // Not a listening problem: the forwarding threads' priority (--media-realtime-priority).
            throw CommandFailure("--media-realtime-priority: \(error.message)")
        } catch {
            throw ValidationError("cannot listen on \(host):\(port): \(error)")
        }
        // Unbuffered: scripts and tests wait for this line to learn the port.
        let authority = "\(host.contains(":") ? "[\(host)]" : host):\(bound)"
        FileHandle.standardOutput.write(Data("listening on ws://\(authority)/\n".utf8))
        FileHandle.standardOutput.write(Data("web client at http://\(authority)/, WHIP at /whip/MEETING, WHEP at /whep/MEETING/ACCOUNT\n".utf8))
        if let duration {
            Task {
                try? await Task.sleep(for: .milliseconds(Int64(duration * 1_000)))
                await server.shutdown()
            }
        }
        try await server.wait()
        if let media = server.forwardingServer?.statistics {
            print("media port (\(media.workerLegs.count) forwarding threads): \(media.router.packetsForwarded) packets forwarded, \(media.router.strangerDatagrams) from strangers, "
                + "\(media.authenticationFailures) failed SRTP; forwarding latency p50 \(Self.microseconds(media.latencyP50)), "
                + "p99 \(Self.microseconds(media.latencyP99)), p99.9 \(Self.microseconds(media.latencyP999)) (n=\(media.latencyCount))")
        }
        let records = (try? await store.recordCount()) ?? 0
        let meetings = (try? await store.meetingRecords(of: nil, limit: 1_000_000).count) ?? 0
        print("stopped; \(records) call records and \(meetings) meeting records in \(storeName)")
        await (store as? PostgresCallStore)?.close()
    }
}

extension ServerCommand {
    /// A forwarding latency in µs; "≥" when it is the histogram's ceiling (the true value
    /// is at least that).
    static func microseconds(_ duration: Duration) -> String {
        (duration >= LatencyHistogram.ceiling ? "≥" : "") + "\(Int(duration / .microseconds(1))) µs"
    }
}

struct TokenCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "token",
        abstract: "Mint a login token (JWT, HS256) for an account, signed with the server's secret."
    )

    @Option(help: "The account the token logs in as.")
    var account: String

    @Option(help: "Seconds the token stays valid.")
    var ttl: Double = 86_400

    @Option(help: "The server's secret file.")
    var secretFile = "mediaengine.secret"

    @Option(name: .customLong("meeting"), parsing: .singleValue, help: "Grant only this meeting name (repeatable; default: any).")
    var meetings: [String] = []

    @Flag(help: "Grant no publishing: the account can join meetings as audience only.")
    var noPublish = false

    func validate() throws {
        guard ttl > 0 && ttl <= 10 * 365 * 86_400 else { throw ValidationError("--ttl \(ttl) must be within 0...315360000 s") }
        guard !account.isEmpty && account.utf8.count <= 128 else { throw ValidationError("--account must be 1 to 128 bytes") }
    }

    func run() async throws {
        let secret: ServerSecret
        do {
            secret = try ServerSecret.load(path: secretFile, create: false)
        } catch {
            throw ValidationError(error.message)
        }
        let authority = await TokenAuthority(secret: secret)
        do {
            let grants = Grants(meetings: meetings.isEmpty ? nil : meetings, publish: !noPublish)
            print(try await authority.mint(account: account, lifetime: .milliseconds(Int64(ttl * 1_000)), grants: grants))
        } catch {
            throw ValidationError(error.message)
        }
    }
}
