extension TURNClient {
    enum RequestKind: Sendable, Hashable {
        case allocate
        case refresh(lifetime: UInt32)
        case createPermission(peer: SocketAddress)
        case channelBind(peer: SocketAddress, channel: UInt16)

        var type: STUNMessage.MessageType {
            switch self {
            case .allocate: .allocateRequest
            case .refresh: .refreshRequest
            case .createPermission: .createPermissionRequest
            case .channelBind: .channelBindRequest
            }
        }
    }

    struct Transaction: Sendable {
        let id: STUNTransactionID
        let kind: RequestKind
        let bytes: [UInt8]
        let authenticated: Bool
        /// 438 answers already followed, so that a server cannot keep the client looping.
        let staleNonceRetries: Int
        var transmissions = 1
        var nextTransmission: Duration
    }

    /// A permission's or channel's refresh schedule.
    struct PeerTimer: Sendable {
        /// The server confirmed it at least once.
        var installed: Bool
        /// A request for it is outstanding.
        var pending: Bool
        var refreshAt: Duration?
    }

    struct Channel: Sendable {
        let number: UInt16
        var timer: PeerTimer
    }

    /// Permissions last 300 s (RFC 8656 section 9); refreshed a minute early.
    static let permissionRefresh: Duration = .seconds(240)
    /// Channel bindings last 600 s (section 12); rebound a minute early.
    static let channelRefresh: Duration = .seconds(540)
    private static let maximumStaleNonceRetries = 3
    private static let udpProtocol: UInt8 = 17

    /// The earliest time `update(now:)` has something to do: a retransmission, a timeout
    /// or a refresh. Nil when nothing is scheduled.
    public var nextDeadline: Duration? {
        var deadline = transactions.map(\.nextTransmission).min()
        func consider(_ time: Duration?) {
            guard let time else { return }
            deadline = min(deadline ?? time, time)
        }
        guard state == .allocated else { return deadline }
        consider(allocationRefreshAt)
        for timer in permissions.values where timer.installed && !timer.pending { consider(timer.refreshAt) }
        for channel in channels.values where channel.timer.installed && !channel.timer.pending { consider(channel.timer.refreshAt) }
        return deadline
    }

    /// Retransmits unanswered requests, times out those past their last try, and sends
    /// the refreshes that are due. Call at `nextDeadline` (earlier or later is harmless).
    public mutating func update(now: Duration) {
        var index = 0
        while index < transactions.count {
            guard transactions[index].nextTransmission <= now else { index += 1; continue }
            if transactions[index].transmissions >= configuration.maximumTransmissions {
                let kind = transactions.remove(at: index).kind
                fail(kind, TURNError(.timeout, "TURN \(kind.type) got no response after \(configuration.maximumTransmissions) transmissions"))
                continue
            }
            transactions[index].transmissions += 1
            transactions[index].nextTransmission = now + retransmissionTimeout(after: transactions[index].transmissions)
            statistics.retransmissions += 1
            actions.append(.transmit(transactions[index].bytes))
            index += 1
        }
        guard state == .allocated else { return }
        if let refreshAt = allocationRefreshAt, refreshAt <= now {
            allocationRefreshAt = nil
            send(.refresh(lifetime: Self.seconds(configuration.requestedLifetime)), now: now)
        }
        for (ip, timer) in permissions where timer.installed && !timer.pending && (timer.refreshAt ?? now) <= now {
            permissions[ip]?.pending = true
            send(.createPermission(peer: ip), now: now)
        }
        for (peer, channel) in channels where channel.timer.installed && !channel.timer.pending && (channel.timer.refreshAt ?? now) <= now {
            channels[peer]?.timer.pending = true
            send(.channelBind(peer: peer, channel: channel.number), now: now)
        }
    }

    /// The wait after transmission `count` (1-based): the initial RTO doubled per
    /// retransmission, capped; after the last one, how long to wait for a late answer.
    private func retransmissionTimeout(after count: Int) -> Duration {
        var timeout = configuration.initialRetransmissionTimeout
        for _ in 1..<max(count, 1) where timeout < configuration.maximumRetransmissionTimeout { timeout = timeout * 2 }
        return min(timeout, configuration.maximumRetransmissionTimeout)
    }

    /// Builds, queues and tracks a request; signed once the server's realm and nonce are known.
    mutating func send(_ kind: RequestKind, now: Duration, staleNonceRetries: Int = 0) {
        var attributes: [STUNMessage.Attribute] = []
        switch kind {
        case .allocate:
            attributes.append(.requestedTransport(Self.udpProtocol))
            attributes.append(.lifetime(Self.seconds(configuration.requestedLifetime)))
        case .refresh(let lifetime):
            attributes.append(.lifetime(lifetime))
        case .createPermission(let peer):
            attributes.append(.xorPeerAddress(peer))
        case .channelBind(let peer, let channel):
            attributes.append(.channelNumber(channel))
            attributes.append(.xorPeerAddress(peer))
        }
        if let software = configuration.software { attributes.append(.software(software)) }
        if key != nil, let realm, let nonce {
            attributes += [.username(configuration.credentials.username), .realm(realm), .nonce(nonce)]
        }
        let id = STUNTransactionID.random()
        let message = STUNMessage(type: kind.type, transactionID: id, attributes: attributes)
        let bytes = message.serialized(integrity: key, fingerprint: true)
        transactions.append(Transaction(
            id: id, kind: kind, bytes: bytes, authenticated: key != nil, staleNonceRetries: staleNonceRetries,
            nextTransmission: now + retransmissionTimeout(after: 1)
        ))
        statistics.requestsSent += 1
        actions.append(.transmit(bytes))
    }

    /// Consumes a response to an outstanding request.
    ///
    /// - Returns: false when it answers nothing outstanding or fails authentication.
    mutating func handleResponse(_ message: STUNMessage, bytes: UnsafeRawBufferPointer, now: Duration) -> Bool {
        guard message.type.messageClass == .successResponse || message.type.messageClass == .errorResponse,
              let index = transactions.firstIndex(where: { $0.id == message.transactionID }),
              transactions[index].kind.type.method == message.type.method
        else { return false }
        let transaction = transactions[index]
        let hasIntegrity = message.attributes.contains { if case .messageIntegrity = $0 { true } else { false } }
        if let key, transaction.authenticated {
            // RFC 8489 section 9.2.5 lets servers leave MESSAGE-INTEGRITY off some error
            // responses, but a success must carry it, and any that is present must verify.
            if hasIntegrity ? !message.verifyIntegrity(key, in: bytes) : message.type.messageClass == .successResponse {
                return false
            }
        }
        transactions.remove(at: index)
        if message.type.messageClass == .successResponse {
            succeeded(transaction.kind, message, now: now)
        } else {
            failed(transaction, message, now: now)
        }
        return true
    }

    private mutating func failed(_ transaction: Transaction, _ message: STUNMessage, now: Duration) {
        let (code, reason) = message.errorCode ?? (500, "error response without ERROR-CODE")
        statistics.errorsByCode[code, default: 0] += 1
        switch code {
        case 401 where !transaction.authenticated:
            guard let realm = message.realm, let nonce = message.nonce else { break }
            do {
                key = try STUNIntegrityKey.longTerm(
                    username: configuration.credentials.username, realm: realm, password: configuration.credentials.password
                )
            } catch {
                return fail(transaction.kind, TURNError(.invalidCredentials, "TURN credentials: \(error)"))
            }
            self.realm = realm
            self.nonce = nonce
            return send(transaction.kind, now: now)
        case 438 where transaction.staleNonceRetries < Self.maximumStaleNonceRetries:
            guard let nonce = message.nonce else { break }
            self.nonce = nonce
            if let realm = message.realm, realm != self.realm, let newKey = try? STUNIntegrityKey.longTerm(
                username: configuration.credentials.username, realm: realm, password: configuration.credentials.password
            ) {
                self.realm = realm
                key = newKey
            }
            return send(transaction.kind, now: now, staleNonceRetries: transaction.staleNonceRetries + 1)
        default:
            break
        }
        fail(transaction.kind, TURNError.server(code, reason: reason, request: "\(transaction.kind.type)"))
    }

    private mutating func succeeded(_ kind: RequestKind, _ message: STUNMessage, now: Duration) {
        switch kind {
        case .allocate:
            guard let relayed = message.xorRelayedAddress else {
                return fail(kind, TURNError(.badResponse, "TURN Allocate success without XOR-RELAYED-ADDRESS"))
            }
            let lifetime = Duration.seconds(Int(message.lifetime ?? Self.seconds(configuration.requestedLifetime)))
            relayedAddress = relayed
            mappedAddress = message.xorMappedAddress
            state = .allocated
            allocationRefreshAt = now + Self.refreshDelay(lifetime)
            emit(.allocated(relayed: relayed, mapped: message.xorMappedAddress, lifetime: lifetime))
        case .refresh(lifetime: 0):
            finishClosing()
        case .refresh:
            let lifetime = Duration.seconds(Int(message.lifetime ?? Self.seconds(configuration.requestedLifetime)))
            allocationRefreshAt = now + Self.refreshDelay(lifetime)
            emit(.refreshed(lifetime: lifetime))
        case .createPermission(let peer):
            let ip = peer.with(port: 0)
            guard let timer = permissions[ip] else { return }
            permissions[ip] = PeerTimer(installed: true, pending: false, refreshAt: now + Self.permissionRefresh)
            if !timer.installed { emit(.permissionCreated(peer: peer)) }
        case .channelBind(let peer, let number):
            guard let channel = channels[peer], channel.number == number else { return }
            channels[peer]?.timer = PeerTimer(installed: true, pending: false, refreshAt: now + Self.channelRefresh)
            // A binding installs or refreshes the permission too (RFC 8656 section 12.2).
            let ip = peer.with(port: 0)
            if permissions[ip]?.pending == false {
                permissions[ip]?.installed = true
                permissions[ip]?.refreshAt = now + Self.permissionRefresh
            }
            if !channel.timer.installed { emit(.channelBound(peer: peer, channel: number)) }
        }
    }

    /// Reports a failed request and undoes what it was for.
    mutating func fail(_ kind: RequestKind, _ error: TURNError) {
        switch kind {
        case .allocate:
            guard state == .allocating else { return }
            state = .failed(error)
            emit(.failed(error))
        case .refresh(lifetime: 0):
            finishClosing()
        case .refresh:
            guard state == .allocated else { return }
            state = .failed(error)
            transactions.removeAll()
            emit(.failed(error))
        case .createPermission(let peer):
            let ip = peer.with(port: 0)
            guard let timer = permissions[ip] else { return }
            if timer.installed, error.code == .timeout {
                // Keep a working permission through one lost refresh; retry shortly.
                permissions[ip]?.pending = false
                permissions[ip]?.refreshAt = nil
                return
            }
            permissions[ip] = nil
            emit(.permissionFailed(peer: peer, error))
        case .channelBind(let peer, let number):
            guard channels[peer]?.number == number else { return }
            channels[peer] = nil
            peersByChannel[number] = nil
            // Drop the permission entry the binding made for itself, unless it is in use.
            let ip = peer.with(port: 0)
            if let timer = permissions[ip], !timer.installed, !timer.pending,
               !channels.keys.contains(where: { $0.with(port: 0) == ip }) {
                permissions[ip] = nil
            }
            emit(.channelBindFailed(peer: peer, error))
        }
    }

    private mutating func finishClosing() {
        guard state == .closing else { return }
        state = .closed
        transactions.removeAll()
        emit(.closed)
    }

    /// When to refresh an allocation of `lifetime`: a minute early, but not before half.
    static func refreshDelay(_ lifetime: Duration) -> Duration {
        max(lifetime - .seconds(60), lifetime / 2)
    }

    static func seconds(_ duration: Duration) -> UInt32 {
        UInt32(clamping: duration.components.seconds)
    }
}
