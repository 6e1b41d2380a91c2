extension MediaCore {
    /// Starts ICE as a full agent (RFC 8445) on socket 0: `hosts` are this side's host
    /// candidates there (sharing the socket); server-reflexive candidates are gathered
    /// from `stunServers` and a relayed one allocated on `turnServer` (each reported as
    /// `localCandidate`, then `gatheringComplete`).
    /// Checks start once the peer's credentials and candidates come (`setRemoteICE`,
    /// `addRemoteCandidates`); the selected pair becomes the pinned path (`connected`), a
    /// better one later replaces it (`pathChanged`), and none within `timeout` is
    /// `connectFailed`. Consent checks keep the selected pair alive (RFC 7675).
    public func startICE(local: ICECredentials, controlling: Bool, hosts: [ICECandidate], stunServers: [SocketAddress],
                         turnServer: TURNClient.Configuration? = nil, timeout: Duration, now: Duration) {
        localICE = local
        var settings = ICEChecklist.Configuration(controlling: controlling)
        settings.failAfter = timeout
        // Its own seed, drawn apart from the core's stream, so starting ICE leaves the core's
        // other random choices (RTCP intervals) as they were for the same seed.
        var agent = ICEAgent(local: local, remote: nil, configuration: settings, now: now, seed: configuration.seed ^ 0x1CE0_1CE0_1CE0_1CE0)
        for host in hosts { agent.addLocal(host) }
        iceHosts = hosts.map(\.address)
        ice = agent
        gathering = ReflexiveGathering(servers: stunServers, now: now, random: &random)
        if let turnServer { startRelay(turnServer, now: now) }
        reportGatheringIfDone()
        runPathChecks(now: now)
    }

    /// The peer's credentials and its first candidates (`complete`: it has no more).
    public func setRemoteICE(_ credentials: ICECredentials, candidates: [ICECandidate], complete: Bool, now: Duration) {
        remoteICE = credentials
        ice?.setRemote(credentials)
        addRemoteCandidates(candidates, complete: complete, now: now)
    }

    /// More of the peer's candidates (trickled); `complete`: it has no more.
    public func addRemoteCandidates(_ candidates: [ICECandidate], complete: Bool, now: Duration) {
        let selected = ice?.checklist.selectedPair
        for candidate in candidates {
            ice?.addRemote(candidate)
            openRelay(to: candidate.address, now: now)
        }
        // A peer-reflexive remote of the selected pair that signaling named after all.
        if let selected, let now = ice?.checklist.selectedPair, now != selected { emit(.pathChanged(now)) }
        if complete { ice?.remoteCandidatesComplete() }
        runPathChecks(now: now)
    }

    /// The pair ICE selected, once it did.
    public var selectedPair: ICECandidatePair? { ice?.checklist.selectedPair }

    /// The ICE agent's counters, when one runs.
    public var iceStatistics: ICEAgent.Statistics? { ice?.statistics }

    /// Selects the path to the peer without checks (an SDP session or a test).
    /// - Parameters:
    ///   - pinned: Drop RTP and RTCP from any other address from now on.
    ///   - remoteICE: The peer's ICE credentials: consent checks run on the path when given
    ///     (with this side's `localICE`).
    ///   - controlling: This side's ICE role in those checks (the two sides differ).
    public func selectPath(_ remote: SocketAddress, pinned: Bool, remoteICE: ICECredentials? = nil, controlling: Bool = true, now: Duration) {
        path = remote
        isPathPinned = pinned
        if let remoteICE, let localICE {
            self.remoteICE = remoteICE
            if ice == nil {
                ice = ICEAgent(local: localICE, remote: remoteICE, configuration: ICEChecklist.Configuration(controlling: controlling), now: now,
                               seed: random.next())
            }
            consent = ConsentFreshness(configuration: configuration.consent, now: now, random: &random)
        }
    }

    /// The consent state on the selected path, when checks run.
    public var consentState: ConsentFreshness? { consent }

    /// Sends the gathering, connectivity and consent requests that are due; reports a
    /// check that ran out of time and consent that expired.
    func runPathChecks(now: Duration) {
        if var gathering, !gathering.isComplete {
            for (server, bytes) in gathering.poll(now: now) { queueSTUN(bytes, to: server) }
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
            act(on: outputs, now: now)
        }
        if var state = consent, let path, let agent = ice {
            let wasExpired = state.isExpired
            if let id = state.requestDue(now: now, random: &random), let request = agent.consentRequest(id) {
                queueSTUN(request, to: path)
                counters.consentRequestsSent += 1
            }
            if state.isExpired && !wasExpired { emit(.consentExpired) }
            consent = state
        }
    }

    /// Carries out the agent's outputs: checks and answers go out, a selection becomes the
    /// path, a failure is reported.
    private func act(on outputs: [ICEAgent.Output], now: Duration) {
        for output in outputs {
            switch output {
            case .send(let bytes, let local, let destination):
                if let relayed = relay?.relayed, local == relayed {
                    sendThroughRelay(bytes, to: destination)
                } else {
                    queueSTUN(bytes, to: destination)
                }
            case .selected(let pair):
                let first = consent == nil
                path = pair.remote.address
                isPathPinned = true
                if let rtt = ice?.selectedRoundTripTime { updateRoundTripTime(rtt) }
                if first {
                    consent = ConsentFreshness(configuration: configuration.consent, now: now, random: &random)
                    emit(.connected(pair: pair, roundTripTime: ice?.selectedRoundTripTime ?? roundTripTime))
                } else {
                    emit(.pathChanged(pair))
                }
            case .failed(let why):
                if consent == nil { emit(.connectFailed(why)) }
            }
        }
    }

    /// Queues a STUN (or TURN) datagram as it is, from `socket`.
    func queueSTUN(_ bytes: [UInt8], to destination: SocketAddress, socket: Int = 0) {
        bytes.withUnsafeBytes { _ = transmits.enqueue(copying: $0, to: destination, socket: socket, kind: .stun) }
    }

    /// STUN on the media port: answers from STUN servers feed gathering; signed checks
    /// are answered (and, ICE-lite, select their source as the path); signed answers to
    /// this side's checks drive ICE or renew consent. Anything else is counted and dropped.
    func handleSTUN(_ bytes: UnsafeRawBufferPointer, from source: SocketAddress, socket: Int, now: Duration) {
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
                emit(.localCandidate(candidate, server: source))
            }
            self.gathering = gathering
            reportGatheringIfDone()
            return
        }
        if configuration.learnsPathFromChecks {
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
            lastAuthenticatedArrival = now
            remember(source)
        } else if agent.statistics.dropped > before.dropped {
            counters.stunRefused += 1
        }
        act(on: outputs, now: now)
    }

    /// ICE-lite (a server's end of a leg): a valid check selects and pins its source.
    private func answerAsLite(_ message: STUNMessage, _ bytes: UnsafeRawBufferPointer, from source: SocketAddress, socket: Int,
                              now: Duration) {
        guard let localICE, let (answer, _) = ICELite.answer(message, bytes, from: source, local: localICE) else {
            counters.stunRefused += 1
            if message.type != .bindingRequest { counters.unknownDatagrams += 1 }
            return
        }
        queueSTUN(answer, to: source, socket: socket)
        counters.stunAnswered += 1
        lastAuthenticatedArrival = now
        path = source
        isPathPinned = true
    }

    /// The peer checks from `source`: its media may come from there too (a NAT or relay
    /// between). A few such addresses are remembered, the oldest go first.
    private func remember(_ source: SocketAddress) {
        guard source != path, !checkedSources.contains(source) else { return }
        if checkedSources.count >= Self.maximumCheckedSources { checkedSources.removeFirst() }
        checkedSources.append(source)
    }
}
