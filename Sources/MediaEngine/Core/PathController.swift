/// The path to the peer, sans-I/O: ICE as a full agent (RFC 8445) or lite (a server's end
/// of a leg: a check signed for `localICE` selects and pins its source), server-reflexive
/// gathering, the TURN relay candidate, and consent freshness on the selected pair
/// (RFC 7675), and the DTLS-SRTP handshake on the selected path (RFC 5763/5764) when media is
/// keyed that way.
///
/// It never sees media. It takes STUN, DTLS and the relay's datagrams and the time, and says
/// what to do as `Action`s (datagrams to send, a selected or changed pair, agreed keys,
/// events), which its
/// owner drains after every call. `MediaCore` carries them out; tests drive it alone on a
/// manual clock. Random choices (check pacing, consent jitter) come from the caller's
/// generator, so a seeded core draws the same numbers as before it had a path controller.
///
/// Not thread-safe: one owner.
struct PathController {
    enum Action {
        /// STUN or TURN bytes, as they are, from `socket`.
        case transmit([UInt8], to: SocketAddress, socket: Int)
        /// ICE selected `pair` (`first`: the first selection, the path's start), with its
        /// check's round trip when one was measured.
        case selected(ICECandidatePair, roundTripTime: Duration?, first: Bool)
        /// What the owner reports as it is (candidates, gathering, failures, consent).
        case event(MediaCore.Event)
        /// A DTLS handshake datagram for the peer, from `socket`.
        case dtls([UInt8], to: SocketAddress, socket: Int)
        /// The DTLS handshake agreed these SRTP keys: media may flow.
        case keysAgreed(DTLSSRTPKeys)
    }

    /// What it answered, refused and checked.
    struct Counters: Hashable {
        var stunAnswered = 0
        var stunRefused = 0
        /// STUN that is not a check (ICE-lite) or does not parse.
        var unknownDatagrams = 0
        var consentRequestsSent = 0
        var consentAnswersReceived = 0
        /// DTLS from an address other than the path (or before one was selected).
        var dtlsFromStrangers = 0
    }

    /// What became of a datagram from the TURN server's address.
    enum RelayReceipt {
        /// Not the relay's: handle it as any other datagram.
        case notRelayed
        /// A response that drove the TURN client.
        case handled
        /// A peer's datagram the relay delivered: handle `range` of it as if `peer` sent
        /// it (with `arrivingViaRelay` set).
        case data(peer: SocketAddress, range: Range<Int>)
    }

    static let maximumCheckedSources = 4

    let consentConfiguration: ConsentFreshness.Configuration
    /// ICE-lite: checks select their source; this side checks nothing.
    let learnsFromChecks: Bool
    let seed: UInt64
    /// The peer's address once a path is selected.
    private(set) var path: SocketAddress?
    /// Whether packets from other addresses are dropped.
    private(set) var isPinned = false
    /// This side's ICE credentials: checks signed for them are answered; nil answers none.
    var localICE: ICECredentials?
    private(set) var counters = Counters()
    /// True while a datagram the relay delivered is handled (its local candidate is the relayed one).
    var arrivingViaRelay = false

    private var ice: ICEAgent?
    /// This side's host candidates on socket 0 (a socket bound to every interface has several).
    private var iceHosts: [SocketAddress] = []
    private var gathering: ReflexiveGathering?
    private var gatheringReported = false
    private var relay: RelayState?
    private(set) var consent: ConsentFreshness?
    /// Addresses the peer sent signed connectivity checks from.
    private var checkedSources: [SocketAddress] = []
    private var actions: [Action] = []
    /// The DTLS-SRTP handshake, when media is keyed by one.
    private(set) var dtls: DTLSEndpoint?
    /// Where the handshake's datagrams go: the path, or where the peer's last DTLS came from.
    private var dtlsPeer: (address: SocketAddress, socket: Int)?
    private var keysReported = false
    /// The association failed or the peer closed it (reported once).
    private var dtlsEnded = false
    /// Media waits for keys: DTLS keys it and has not agreed them (yet, or ever).
    private(set) var awaitsKeys = false

    init(consent: ConsentFreshness.Configuration, learnsFromChecks: Bool, seed: UInt64) {
        consentConfiguration = consent
        self.learnsFromChecks = learnsFromChecks
        self.seed = seed
        actions.reserveCapacity(16)
    }

    // MARK: Figures

    var selectedPair: ICECandidatePair? { ice?.checklist.selectedPair }
    var selectedRoundTripTime: Duration? { ice?.selectedRoundTripTime }
    var iceStatistics: ICEAgent.Statistics? { ice?.statistics }
    var relayedAddress: SocketAddress? { relay?.relayed }
    var relayStatistics: TURNStatistics? { relay?.client.statistics }
    var hasRelay: Bool { relay != nil }

    /// When `poll` next has work.
    var nextDeadline: Duration? {
        var next = ice?.nextDeadline
        func consider(_ time: Duration?) {
            if let time { next = min(next ?? time, time) }
        }
        consider(gathering?.nextDeadline)
        consider(relay?.client.nextDeadline)
        consider(consent?.nextTime)
        consider(dtls?.nextTimeout)
        return next
    }

    /// Calls `body` with each action in order, and forgets them.
    mutating func drainActions(_ body: (Action) -> Void) {
        guard !actions.isEmpty else { return }
        for action in actions { body(action) }
        actions.removeAll(keepingCapacity: true)
    }

    // MARK: Starting

    /// Starts a full agent on socket 0 with `hosts`; gathers from `stunServers` and
    /// allocates on `turnServer`.
    mutating func start(local: ICECredentials, controlling: Bool, hosts: [ICECandidate], stunServers: [SocketAddress],
                        turnServer: TURNClient.Configuration?, timeout: Duration, now: Duration, random: inout SeededRandom) {
        localICE = local
        var settings = ICEChecklist.Configuration(controlling: controlling)
        settings.failAfter = timeout
        // Its own seed, drawn apart from the core's stream, so starting ICE leaves the core's
        // other random choices (RTCP intervals) as they were for the same seed.
        var agent = ICEAgent(local: local, remote: nil, configuration: settings, now: now, seed: seed ^ 0x1CE0_1CE0_1CE0_1CE0)
        for host in hosts { agent.addLocal(host) }
        iceHosts = hosts.map(\.address)
        ice = agent
        gathering = ReflexiveGathering(servers: stunServers, now: now, random: &random)
        if let turnServer {
            let state = RelayState(configuration: turnServer)
            relay = state
            state.client.start(now: now)
            drainRelay(now: now)
        }
        reportGatheringIfDone()
        poll(now: now, random: &random)
    }

    /// The peer's credentials.
    mutating func setRemote(_ credentials: ICECredentials) { ice?.setRemote(credentials) }

    /// More of the peer's candidates; `complete`: it has no more.
    mutating func addRemoteCandidates(_ candidates: [ICECandidate], complete: Bool, now: Duration, random: inout SeededRandom) {
        let selected = ice?.checklist.selectedPair
        for candidate in candidates {
            ice?.addRemote(candidate)
            openRelay(to: candidate.address, now: now)
        }
        // A peer-reflexive remote of the selected pair that signaling named after all.
        if let selected, let current = ice?.checklist.selectedPair, current != selected { actions.append(.event(.pathChanged(current))) }
        if complete { ice?.remoteCandidatesComplete() }
        poll(now: now, random: &random)
    }

    /// Selects `remote` without checks; consent checks run on it when `remoteICE` is given.
    mutating func select(_ remote: SocketAddress, pinned: Bool, remoteICE: ICECredentials?, controlling: Bool, now: Duration,
                         random: inout SeededRandom) {
        path = remote
        isPinned = pinned
        startDTLSIfClient(now: now)
        guard let remoteICE, let localICE else { return }
        if ice == nil {
            ice = ICEAgent(local: localICE, remote: remoteICE, configuration: ICEChecklist.Configuration(controlling: controlling), now: now,
                           seed: random.next())
        }
        consent = ConsentFreshness(configuration: consentConfiguration, now: now, random: &random)
    }

    // MARK: Time

    /// Sends the gathering, connectivity and consent requests that are due; reports a
    /// check that ran out of time and consent that expired.
    mutating func poll(now: Duration, random: inout SeededRandom) {
        if var gathering, !gathering.isComplete {
            for (server, bytes) in gathering.poll(now: now) { actions.append(.transmit(bytes, to: server, socket: 0)) }
            self.gathering = gathering
            reportGatheringIfDone()
        }
        if let relay, let deadline = relay.client.nextDeadline, now >= deadline {
            relay.client.update(now: now)
            drainRelay(now: now)
        }
        if var agent = ice, let deadline = agent.nextDeadline, now >= deadline {
            let outputs = agent.poll(now: now)
            ice = agent
            act(on: outputs, now: now, random: &random)
        }
        if var state = consent, let path, let agent = ice {
            let wasExpired = state.isExpired
            if let id = state.requestDue(now: now, random: &random), let request = agent.consentRequest(id) {
                actions.append(.transmit(request, to: path, socket: 0))
                counters.consentRequestsSent += 1
            }
            if state.isExpired && !wasExpired { actions.append(.event(.consentExpired)) }
            consent = state
        }
        if let dtls, let deadline = dtls.nextTimeout, now >= deadline {
            dtls.handleTimeout(now: now)
            drainDTLS()
        }
    }

    // MARK: DTLS

    /// Keys media with `endpoint`'s handshake on the selected path: as the client it starts
    /// once a path is selected, as the server it answers the first ClientHello from the path.
    /// Until it agrees keys, media waits (`awaitsKeys`).
    mutating func useDTLS(_ endpoint: DTLSEndpoint, now: Duration) {
        dtls = endpoint
        awaitsKeys = true
        startDTLSIfClient(now: now)
    }

    /// The owner protects media with the agreed keys now: it may flow.
    mutating func keysInstalled() { awaitsKeys = false }

    /// A DTLS datagram (RFC 7983: first byte 20...63). Only the path, an address the peer
    /// proved with a check, or one this side's check succeeded to (the peer's ClientHello
    /// may come as soon as it answered, before this side selected a pair: dropping it
    /// would cost a retransmission, a second) may speak DTLS; anything else is counted and
    /// dropped.
    mutating func handleDTLS(_ bytes: UnsafeRawBufferPointer, from source: SocketAddress, socket: Int, now: Duration) {
        guard let dtls else {
            counters.unknownDatagrams += 1
            return
        }
        guard path != nil && (source == path || checkedSources.contains(source)) || ice?.checklist.hasSucceeded(to: source) == true else {
            counters.dtlsFromStrangers += 1
            return
        }
        dtlsPeer = (source, socket)
        dtls.handle(bytes, now: now)
        drainDTLS()
    }

    /// The client's first flight, once there is a path to send it on; the server's
    /// deadline starts then too (`DTLSEndpoint.awaitPeer`).
    private mutating func startDTLSIfClient(now: Duration) {
        guard let dtls, case .new = dtls.state, path != nil else { return }
        guard dtls.role == .client, let path else {
            dtls.awaitPeer(now: now)
            return
        }
        dtlsPeer = (path, 0)
        dtls.start(now: now)
        drainDTLS()
    }

    /// Sends what the handshake wrote; reports the keys, then a failure or the peer's close,
    /// once each.
    private mutating func drainDTLS() {
        guard let dtls else { return }
        while let datagram = dtls.pollTransmit() {
            // A flight is only ever made after start (client) or a datagram (server), each of
            // which named the peer.
            guard let peer = dtlsPeer else { continue }
            actions.append(.dtls(datagram, to: peer.address, socket: peer.socket))
        }
        switch dtls.state {
        case .connected(let keys) where !keysReported:
            keysReported = true
            actions.append(.keysAgreed(keys))
        case .failed(let error) where !dtlsEnded:
            dtlsEnded = true
            actions.append(.event(.dtlsFailed(error)))
        case .closed where !dtlsEnded:
            dtlsEnded = true
            actions.append(.event(awaitsKeys ? .dtlsFailed(DTLSError(.handshake, "the peer closed the DTLS association before it agreed keys"))
                                             : .dtlsClosed))
        default:
            break
        }
    }

    // MARK: Datagrams

    /// Whether media from `source` is taken: always before a path is pinned, afterwards
    /// only from the path, or from an address the peer proved with a connectivity check
    /// (its token): behind a NAT or relay the peer's packets come from an address other
    /// than the candidate this side checked (a peer-reflexive address, in ICE's terms).
    func accepts(_ source: SocketAddress) -> Bool {
        !isPinned || path == nil || source == path || checkedSources.contains(source)
    }

    /// STUN on the media port: answers from STUN servers feed gathering; signed checks
    /// are answered (and, ICE-lite, select their source as the path); signed answers to
    /// this side's checks drive ICE or renew consent. Anything else is counted and dropped.
    mutating func handleSTUN(_ bytes: UnsafeRawBufferPointer, from source: SocketAddress, socket: Int, now: Duration,
                             random: inout SeededRandom) {
        guard let message = try? STUNMessage(parsing: bytes) else {
            counters.stunRefused += 1
            counters.unknownDatagrams += 1
            return
        }
        if var gathering, gathering.owns(message, from: source) {
            // A mapped address that is a host candidate already (no NAT between) adds nothing.
            if let mapped = gathering.receive(message, from: source), !iceHosts.contains(mapped),
               let base = iceHosts.first(where: { $0.isIPv6 == mapped.isIPv6 }) {
                let candidate = ICECandidate.local(.serverReflexive, address: mapped, base: base, localPreference: 65_535, server: source)
                ice?.addLocal(candidate)
                actions.append(.event(.localCandidate(candidate, server: source)))
            }
            self.gathering = gathering
            reportGatheringIfDone()
            return
        }
        if learnsFromChecks {
            answerAsLite(message, bytes, from: source, socket: socket, now: now)
            return
        }
        guard var agent = ice else {
            counters.stunRefused += 1
            return
        }
        let wire = [UInt8](bytes)
        if message.type == .bindingSuccess, source == path, var state = consent, agent.isSignedSuccess(message, wire),
           state.answered(message.transactionID, now: now) {
            consent = state
            counters.consentAnswersReceived += 1
            return
        }
        let local = arrivingViaRelay ? (relay?.relayed ?? source)
            : iceHosts.first { agent.checklist.state(from: $0, to: source) != nil } ?? iceHosts.first { $0.isIPv6 == source.isIPv6 } ?? source
        let before = agent.statistics
        let outputs = agent.receive(wire, from: source, at: local, now: now)
        ice = agent
        if agent.statistics.requestsAnswered > before.requestsAnswered {
            counters.stunAnswered += 1
            remember(source)
        } else if agent.statistics.dropped > before.dropped {
            counters.stunRefused += 1
        }
        act(on: outputs, now: now, random: &random)
    }

    /// A datagram from `source`, which may be the TURN server.
    mutating func receiveFromRelay(_ datagram: UnsafeRawBufferPointer, from source: SocketAddress, now: Duration) -> RelayReceipt {
        guard let relay, source == relay.server else { return .notRelayed }
        switch relay.client.receive(datagram, from: source, now: now) {
        case .data(let peer, let payload):
            return .data(peer: peer, range: payload)
        case .handled:
            drainRelay(now: now)
            return .handled
        case .ignored:
            return .notRelayed
        }
    }

    /// Frames a transmit to the peer for the relay when the selected pair is relayed (into
    /// the relay's scratch: nothing is allocated per packet).
    func relayed(_ transmit: Transmit) -> Transmit {
        guard let relay, let relayedAddress = relay.relayed, let path, transmit.destination == path,
              selectedPair?.local.address == relayedAddress,
              let length = try? relay.client.writeData(transmit.bytes, to: path, into: relay.scratch) else { return transmit }
        return Transmit(bytes: UnsafeRawBufferPointer(rebasing: relay.scratch[0..<length]), destination: relay.server,
                        socket: transmit.socket, kind: transmit.kind)
    }

    // MARK: Inside

    /// Carries out the agent's outputs: checks and answers go out, a selection becomes the
    /// path, a failure is reported.
    private mutating func act(on outputs: [ICEAgent.Output], now: Duration, random: inout SeededRandom) {
        for output in outputs {
            switch output {
            case .send(let bytes, let local, let destination):
                if let relayed = relay?.relayed, local == relayed {
                    sendThroughRelay(bytes, to: destination)
                } else {
                    actions.append(.transmit(bytes, to: destination, socket: 0))
                }
            case .selected(let pair):
                let first = consent == nil
                path = pair.remote.address
                isPinned = true
                if first { consent = ConsentFreshness(configuration: consentConfiguration, now: now, random: &random) }
                actions.append(.selected(pair, roundTripTime: ice?.selectedRoundTripTime, first: first))
                startDTLSIfClient(now: now)
            case .failed(let why):
                if consent == nil { actions.append(.event(.connectFailed(why))) }
            }
        }
    }

    /// ICE-lite (a server's end of a leg): a valid check selects and pins its source.
    private mutating func answerAsLite(_ message: STUNMessage, _ bytes: UnsafeRawBufferPointer, from source: SocketAddress,
                                       socket: Int, now: Duration) {
        guard let localICE, let (answer, _) = ICELite.answer(message, bytes, from: source, local: localICE) else {
            counters.stunRefused += 1
            if message.type != .bindingRequest { counters.unknownDatagrams += 1 }
            return
        }
        actions.append(.transmit(answer, to: source, socket: socket))
        counters.stunAnswered += 1
        path = source
        isPinned = true
        startDTLSIfClient(now: now)
    }

    /// The peer checks from `source`: its media may come from there too (a NAT or relay
    /// between). A few such addresses are remembered, the oldest go first.
    private mutating func remember(_ source: SocketAddress) {
        guard source != path, !checkedSources.contains(source) else { return }
        if checkedSources.count >= Self.maximumCheckedSources { checkedSources.removeFirst() }
        checkedSources.append(source)
    }

    /// Carries out what the TURN client asks: datagrams to the server, and its events (the
    /// relayed candidate, a lost allocation).
    private mutating func drainRelay(now: Duration) {
        guard let relay else { return }
        while let action = relay.client.nextAction() {
            switch action {
            case .transmit(let bytes):
                actions.append(.transmit(bytes, to: relay.server, socket: 0))
            case .event(.allocated(let relayed, _, _)):
                relay.relayed = relayed
                relay.resolved = true
                let candidate = ICECandidate.local(.relayed, address: relayed, base: relayed, localPreference: 65_535, server: relay.server)
                ice?.addLocal(candidate)
                actions.append(.event(.localCandidate(candidate, server: relay.server)))
                for remote in ice?.checklist.remoteCandidates ?? [] { openRelay(to: remote.address, now: now) }
                reportGatheringIfDone()
            case .event(.failed(let error)):
                relay.resolved = true
                actions.append(.event(.relayFailed(error.message)))
                reportGatheringIfDone()
            case .event:
                break
            }
        }
    }

    /// Binds a channel to a peer's candidate (which also permits its IP), when a relay is
    /// allocated; a full table is left as it is (the candidate is then reached directly only).
    private mutating func openRelay(to peer: SocketAddress, now: Duration) {
        guard let relay, relay.relayed != nil else { return }
        _ = try? relay.client.bindChannel(to: peer, now: now)
        drainRelay(now: now)
    }

    /// Sends `bytes` to `peer` through the relay (ChannelData once bound, else a Send
    /// indication); dropped when the relay cannot (no allocation or permission yet: ICE
    /// retransmits).
    private mutating func sendThroughRelay(_ bytes: [UInt8], to peer: SocketAddress) {
        guard let relay, let framed = try? relay.client.data(bytes, to: peer) else { return }
        actions.append(.transmit(framed, to: relay.server, socket: 0))
    }

    /// Reports `gatheringComplete` once server-reflexive gathering and the allocation both
    /// resolved.
    private mutating func reportGatheringIfDone() {
        guard !gatheringReported, gathering?.isComplete ?? true, relay?.resolved ?? true else { return }
        gatheringReported = true
        actions.append(.event(.gatheringComplete))
    }
}
