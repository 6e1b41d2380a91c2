/// The relay candidate (RFC 8656 through `TURNClient`, RFC 8445 §5.1.1.2): the core
/// allocates on the TURN server from socket 0, offers the relayed address as a candidate,
/// binds a channel to each of the peer's candidates, sends checks through the relay when
/// a pair's local candidate is the relayed one, and unwraps what the relay delivers as if
/// it came from the peer. When ICE selects a relayed pair, every datagram to the peer is
/// framed as ChannelData into one scratch buffer at `pollTransmit`: nothing is allocated
/// per packet.
final class RelayState {
    var client: TURNClient
    /// The relayed address, once allocated.
    var relayed: SocketAddress?
    /// Whether the allocation resolved (allocated or failed): gathering waits for it.
    var resolved = false
    /// Where a relayed datagram is framed for sending.
    let scratch = UnsafeMutableRawBufferPointer.allocate(byteCount: TransmitQueue.slotSize + 64, alignment: 16)

    init(configuration: TURNClient.Configuration) {
        client = TURNClient(configuration: configuration)
    }

    deinit { scratch.deallocate() }

    var server: SocketAddress { client.configuration.server }
}

extension MediaCore {
    /// Starts the allocation (from `startICE`).
    func startRelay(_ configuration: TURNClient.Configuration, now: Duration) {
        let state = RelayState(configuration: configuration)
        relay = state
        state.client.start(now: now)
        drainRelay(now: now)
    }

    /// The relayed address of this side, once allocated.
    public var relayedAddress: SocketAddress? { relay?.relayed }

    /// The TURN client's counters, when a relay is configured.
    public var relayStatistics: TURNStatistics? { relay?.client.statistics }

    /// Carries out what the TURN client asks: datagrams to the server, and its events (the
    /// relayed candidate, a lost allocation).
    func drainRelay(now: Duration) {
        guard let relay else { return }
        while let action = relay.client.nextAction() {
            switch action {
            case .transmit(let bytes):
                queueSTUN(bytes, to: relay.server)
            case .event(.allocated(let relayed, _, _)):
                relay.relayed = relayed
                relay.resolved = true
                let candidate = ICECandidate.local(.relayed, address: relayed, base: relayed, localPreference: 65_535, server: relay.server)
                ice?.addLocal(candidate)
                emit(.localCandidate(candidate, server: relay.server))
                for remote in ice?.checklist.remoteCandidates ?? [] { openRelay(to: remote.address, now: now) }
                reportGatheringIfDone()
            case .event(.failed(let error)):
                relay.resolved = true
                emit(.relayFailed(error.message))
                reportGatheringIfDone()
            case .event:
                break
            }
        }
    }

    /// Binds a channel to a peer's candidate (which also permits its IP), when a relay is
    /// allocated; a full table is left as it is (the candidate is then reached directly only).
    func openRelay(to peer: SocketAddress, now: Duration) {
        guard let relay, relay.relayed != nil else { return }
        _ = try? relay.client.bindChannel(to: peer, now: now)
        drainRelay(now: now)
    }

    /// Sends `bytes` to `peer` through the relay (ChannelData once bound, else a Send
    /// indication); dropped when the relay cannot (no allocation or permission yet: ICE
    /// retransmits).
    func sendThroughRelay(_ bytes: [UInt8], to peer: SocketAddress) {
        guard let relay, let framed = try? relay.client.data(bytes, to: peer) else { return }
        queueSTUN(framed, to: relay.server)
    }

    /// A datagram from the TURN server: a peer's data is handled as if it came from the
    /// peer (at the relayed candidate); responses drive the client. Returns false when it
    /// was not the relay's (the caller handles it as any other datagram).
    func handleFromRelay(_ datagram: UnsafeMutableRawBufferPointer, from source: SocketAddress, socket: Int, now: Duration) -> Bool {
        guard let relay, source == relay.server else { return false }
        switch relay.client.receive(UnsafeRawBufferPointer(datagram), from: source, now: now) {
        case .data(let peer, let payload):
            arrivingViaRelay = true
            defer { arrivingViaRelay = false }
            handleDatagram(UnsafeMutableRawBufferPointer(rebasing: datagram[payload]), from: peer, socket: socket, now: now)
            return true
        case .handled:
            drainRelay(now: now)
            return true
        case .ignored:
            return false
        }
    }

    /// Frames a transmit to the peer for the relay when the selected pair is relayed.
    func relayed(_ transmit: Transmit) -> Transmit {
        guard let relay, let relayedAddress = relay.relayed, let path, transmit.destination == path,
              selectedPair?.local.address == relayedAddress,
              let length = try? relay.client.writeData(transmit.bytes, to: path, into: relay.scratch) else { return transmit }
        return Transmit(bytes: UnsafeRawBufferPointer(rebasing: relay.scratch[0..<length]), destination: relay.server,
                        socket: transmit.socket, kind: transmit.kind)
    }

    /// Emits `gatheringComplete` once server-reflexive gathering and the allocation both
    /// resolved.
    func reportGatheringIfDone() {
        guard !gatheringReported, gathering?.isComplete ?? true, relay?.resolved ?? true else { return }
        gatheringReported = true
        emit(.gatheringComplete)
    }
}
