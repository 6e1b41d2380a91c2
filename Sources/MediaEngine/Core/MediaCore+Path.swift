// The core's side of its `PathController`: the public path API forwards to it, and what it
// asks for (datagrams, a selected pair, events) is carried out here.
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
        paths.start(local: local, controlling: controlling, hosts: hosts, stunServers: stunServers, turnServer: turnServer,
                    timeout: timeout, now: now, random: &random)
        carryOutPathActions()
    }

    /// The peer's credentials and its first candidates (`complete`: it has no more).
    public func setRemoteICE(_ credentials: ICECredentials, candidates: [ICECandidate], complete: Bool, now: Duration) {
        paths.setRemote(credentials)
        addRemoteCandidates(candidates, complete: complete, now: now)
    }

    /// More of the peer's candidates (trickled); `complete`: it has no more.
    public func addRemoteCandidates(_ candidates: [ICECandidate], complete: Bool, now: Duration) {
        paths.addRemoteCandidates(candidates, complete: complete, now: now, random: &random)
        carryOutPathActions()
    }

    /// The pair ICE selected, once it did.
    public var selectedPair: ICECandidatePair? { paths.selectedPair }

    /// The ICE agent's counters, when one runs.
    public var iceStatistics: ICEAgent.Statistics? { paths.iceStatistics }

    /// The relayed address of this side, once allocated.
    public var relayedAddress: SocketAddress? { paths.relayedAddress }

    /// The TURN client's counters, when a relay is configured.
    public var relayStatistics: TURNStatistics? { paths.relayStatistics }

    /// Selects the path to the peer without checks (an SDP session or a test).
    /// - Parameters:
    ///   - pinned: Drop RTP and RTCP from any other address from now on.
    ///   - remoteICE: The peer's ICE credentials: consent checks run on the path when given
    ///     (with this side's `localICE`).
    ///   - controlling: This side's ICE role in those checks (the two sides differ).
    public func selectPath(_ remote: SocketAddress, pinned: Bool, remoteICE: ICECredentials? = nil, controlling: Bool = true, now: Duration) {
        paths.select(remote, pinned: pinned, remoteICE: remoteICE, controlling: controlling, now: now, random: &random)
        carryOutPathActions()
    }

    /// The consent state on the selected path, when checks run.
    public var consentState: ConsentFreshness? { paths.consent }

    // MARK: DTLS-SRTP

    /// Keys this transport's media with a DTLS-SRTP handshake on the selected path
    /// (RFC 5763/5764) instead of keys given up front (the configuration's SDES keys are
    /// not used): `role` per the SDP's `a=setup`, the peer's certificate checked against
    /// every fingerprint its SDP sent, AES-GCM preferred. As the client, the handshake starts
    /// once a path is selected; as the server, it answers the peer's ClientHello from the
    /// path. No RTP or RTCP is sent or read until the keys are agreed (`dtlsConnected`); a
    /// handshake that fails or does not finish in `handshakeTimeout` is `dtlsFailed`. Call
    /// once, before the path is selected.
    /// - Throws: `DTLSError` when OpenSSL refuses the certificate or a setting.
    public func useDTLS(role: DTLSRole, certificate: DTLSCertificate, remoteFingerprints: [DTLSFingerprint],
                        handshakeTimeout: Duration = .seconds(10), initialRetransmission: Duration = .seconds(1),
                        now: Duration) throws(DTLSError) {
        let endpoint = try DTLSEndpoint(role: role, certificate: certificate, remoteFingerprints: remoteFingerprints,
                                        handshakeTimeout: handshakeTimeout, initialRetransmission: initialRetransmission)
        paths.useDTLS(endpoint, now: now)
        carryOutPathActions()
    }

    /// The DTLS association's state, when media is keyed by one.
    public var dtlsState: DTLSEndpoint.State? { paths.dtls?.state }

    /// A DTLS datagram, for the path controller's handshake.
    func handleDTLS(_ bytes: UnsafeRawBufferPointer, from source: SocketAddress, socket: Int, now: Duration) {
        paths.handleDTLS(bytes, from: source, socket: socket, now: now)
        carryOutPathActions()
    }

    /// The handshake agreed keys: every stream, those there are and those to come, is
    /// protected with them from now on.
    private func install(_ keys: DTLSSRTPKeys) {
        do {
            let local = try output.key(for: keys.local)
            try receive.useKeys(inbound: keys.remote, feedback: local)
            send.useKey(local)
            dtlsLocalKeying = keys.local
            paths.keysInstalled()
            output.emit(.dtlsConnected(keys.profile))
        } catch {
            output.emit(.dtlsFailed(DTLSError(.handshake, "SRTP refused the keys DTLS agreed: \(error.message)")))
        }
    }

    /// Sends the gathering, connectivity and consent requests that are due.
    func runPathChecks(now: Duration) {
        paths.poll(now: now, random: &random)
        carryOutPathActions()
    }

    /// STUN on the media port (the path controller's).
    func handleSTUN(_ bytes: UnsafeRawBufferPointer, from source: SocketAddress, socket: Int, now: Duration) {
        let answered = paths.counters.stunAnswered
        paths.handleSTUN(bytes, from: source, socket: socket, now: now, random: &random)
        // A check signed for this side's credentials proves the peer as a packet does.
        if paths.counters.stunAnswered > answered { lastAuthenticatedControl = now }
        carryOutPathActions()
    }

    /// A datagram from the TURN server: a peer's data is handled as if it came from the
    /// peer (at the relayed candidate). Returns false when it was not the relay's.
    func handleFromRelay(_ datagram: UnsafeMutableRawBufferPointer, from source: SocketAddress, socket: Int, now: Duration) -> Bool {
        let receipt = paths.receiveFromRelay(UnsafeRawBufferPointer(datagram), from: source, now: now)
        carryOutPathActions()
        switch receipt {
        case .notRelayed:
            return false
        case .handled:
            return true
        case .data(let peer, let range):
            paths.arrivingViaRelay = true
            defer { paths.arrivingViaRelay = false }
            handleDatagram(UnsafeMutableRawBufferPointer(rebasing: datagram[range]), from: peer, socket: socket, now: now)
            return true
        }
    }

    private func carryOutPathActions() {
        // Keys are installed after the drain: installing tells the path controller, which
        // is busy draining until then.
        var agreed: DTLSSRTPKeys?
        defer { if let agreed { install(agreed) } }
        paths.drainActions { action in
            switch action {
            case .transmit(let bytes, let destination, let socket):
                queueSTUN(bytes, to: destination, socket: socket)
            case .selected(let pair, let rtt, let first):
                if let rtt { updateRoundTripTime(rtt) }
                output.emit(first ? .connected(pair: pair, roundTripTime: rtt ?? roundTripTime) : .pathChanged(pair))
            case .event(let event):
                output.emit(event)
            case .dtls(let bytes, let destination, let socket):
                queueSTUN(bytes, to: destination, socket: socket, kind: .dtls)
            case .keysAgreed(let keys):
                agreed = keys
            }
        }
    }

    /// Queues a STUN or TURN (or, as `kind`, DTLS) datagram as it is, from `socket`.
    func queueSTUN(_ bytes: [UInt8], to destination: SocketAddress, socket: Int = 0, kind: Transmit.Kind = .stun) {
        bytes.withUnsafeBytes { _ = output.transmits.enqueue(copying: $0, to: destination, socket: socket, kind: kind) }
    }
}
