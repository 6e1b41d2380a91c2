extension MediaCore {
    /// Starts looking for the peer: STUN binding requests to each candidate every 50 ms
    /// with the peer's token, until one answers (`connected`: that address becomes the
    /// pinned path and consent checks start) or `timeout` passes (`connectFailed`).
    public func startConnectivityCheck(candidates: [SocketAddress], remoteToken: String, timeout: Duration, now: Duration) {
        if !remoteToken.isEmpty { self.remoteToken = remoteToken }
        connectivity = ConnectivityChecker(candidates: candidates, token: remoteToken, now: now, timeout: timeout)
        runPathChecks(now: now)
    }

    /// Selects the path to the peer without a check (an SDP session or a test).
    /// - Parameters:
    ///   - pinned: Drop RTP and RTCP from any other address from now on.
    ///   - remoteToken: The peer's STUN token: consent checks run on the path when given.
    public func selectPath(_ remote: SocketAddress, pinned: Bool, remoteToken: String? = nil, now: Duration) {
        path = remote
        isPathPinned = pinned
        if let remoteToken, !remoteToken.isEmpty {
            self.remoteToken = remoteToken
            consent = ConsentFreshness(configuration: configuration.consent, now: now, random: &random)
        }
    }

    /// The consent state on the selected path, when checks run.
    public var consentState: ConsentFreshness? { consent }

    /// Sends the connectivity and consent requests that are due; reports a check that
    /// ran out of time and consent that expired.
    func runPathChecks(now: Duration) {
        if var check = connectivity {
            if now >= check.deadline {
                connectivity = nil
                emit(.connectFailed)
            } else {
                check.requestsDue(now: now) { candidate, request in queueSTUN(request, to: candidate, socket: 0) }
                connectivity = check
            }
        }
        if var state = consent, let path, let token = remoteToken {
            let wasExpired = state.isExpired
            if let id = state.requestDue(now: now, random: &random) {
                queueSTUN(STUNMessage(type: .bindingRequest, transactionID: id, attributes: [.username(token)]), to: path, socket: 0)
                counters.consentRequestsSent += 1
            }
            if state.isExpired && !wasExpired { emit(.consentExpired) }
            consent = state
        }
    }

    private func queueSTUN(_ message: STUNMessage, to destination: SocketAddress, socket: Int) {
        transmits.enqueue(to: destination, socket: socket, kind: .stun) { slot in
            (try? message.serialize(into: slot)) ?? 0
        }
    }

    /// A binding request with this side's token is answered with the address it came from
    /// (XOR-MAPPED-ADDRESS), never with more bytes than it had; answers to this side's own
    /// requests complete the connectivity check or renew consent. The rest is counted.
    func handleSTUN(_ bytes: UnsafeRawBufferPointer, from source: SocketAddress, socket: Int, now: Duration) {
        guard let message = try? STUNMessage(parsing: bytes) else {
            counters.stunRefused += 1
            counters.unknownDatagrams += 1
            return
        }
        switch message.type {
        case .bindingRequest:
            guard let token = localToken, message.username == token else {
                counters.stunRefused += 1
                counters.unknownDatagrams += 1
                return
            }
            let answer = STUNMessage(type: .bindingSuccess, transactionID: message.transactionID, attributes: [.xorMappedAddress(source)])
            guard answer.serializedSize <= bytes.count else {
                counters.stunRefused += 1
                return
            }
            queueSTUN(answer, to: source, socket: socket)
            counters.stunAnswered += 1
            lastAuthenticatedArrival = now
            if configuration.learnsPathFromChecks {
                path = source
                isPathPinned = true
                return
            }
            // The peer checks from here: its media may come from here too (a NAT or relay
            // between). A few such addresses are remembered, the oldest go first.
            if source != path, !checkedSources.contains(source) {
                if checkedSources.count >= Self.maximumCheckedSources { checkedSources.removeFirst() }
                checkedSources.append(source)
            }
        case .bindingSuccess:
            if let check = connectivity, let result = check.result(of: message, from: source, now: now) {
                connectivity = nil
                path = result.remote
                isPathPinned = true
                updateRoundTripTime(result.roundTripTime)
                if let token = remoteToken, !token.isEmpty {
                    consent = ConsentFreshness(configuration: configuration.consent, now: now, random: &random)
                }
                emit(.connected(remote: result.remote, roundTripTime: result.roundTripTime, mappedAddress: result.mappedAddress))
            } else if source == path, var state = consent, state.answered(message.transactionID, now: now) {
                consent = state
                counters.consentAnswersReceived += 1
            } else {
                counters.stunRefused += 1
            }
        default:
            counters.stunRefused += 1
            counters.unknownDatagrams += 1
        }
    }
}
