/// One side's ICE credentials (RFC 8445 §5.3): the username fragment and password that
/// authenticate its connectivity checks (short-term credentials, RFC 8489 §9.1).
public struct ICECredentials: Sendable, Hashable, CustomStringConvertible {
    public var ufrag: String
    /// Never printed.
    public var password: String

    public init(ufrag: String, password: String) {
        self.ufrag = ufrag
        self.password = password
    }

    /// Fresh credentials: an 8-character ufrag and a 24-character password of ice-chars
    /// (RFC 8839 asks for at least 4 and 22: 128 bits of randomness in the password).
    /// RFC 8445's ice-chars, of which ufrags, passwords and foundations are made.
    public static let iceChars = Array("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/")

    public static func random(using generator: inout some RandomNumberGenerator) -> ICECredentials {
        let alphabet = iceChars
        func draw(_ count: Int) -> String { String((0..<count).map { _ in alphabet[Int.random(in: 0..<alphabet.count, using: &generator)] }) }
        return ICECredentials(ufrag: draw(8), password: draw(24))
    }

    public var description: String { "ICECredentials(ufrag \(ufrag), password redacted)" }
}

/// The ICE agent's wire side, sans-I/O: it turns `ICEChecklist`'s checks into STUN binding
/// requests (USERNAME "theirs:ours", PRIORITY, ICE-CONTROLLING or -CONTROLLED with the
/// tie-breaker, USE-CANDIDATE when nominating, MESSAGE-INTEGRITY with the peer's password,
/// FINGERPRINT), answers the peer's checks (XOR-MAPPED-ADDRESS, integrity with our
/// password) and feeds answers back. Anything that fails the fingerprint, the username or
/// the integrity is counted and dropped, never answered.
///
/// Role conflicts (both agents controlling, or both controlled) are resolved as RFC 8445
/// §7.3.1.1 and §7.2.5.1 say: the larger tie-breaker controls. The agent that keeps its
/// role answers the peer's check with a signed 487 (Role Conflict), never larger than the
/// check; the agent that yields switches (`checklist.controlling`) and checks the pair
/// again with its new role. The tie-breaker never changes.
public struct ICEAgent: Sendable {
    public enum Output: Sendable, Hashable {
        /// Send `bytes` from the local candidate at `from` (a host address, or a relayed
        /// one to send through the TURN client) to `to`.
        case send([UInt8], from: SocketAddress, to: SocketAddress)
        case selected(ICECandidatePair)
        case failed(String)
    }

    public struct Statistics: Sendable, Hashable {
        public var requestsSent = 0
        public var requestsAnswered = 0
        public var responsesAccepted = 0
        /// Bad fingerprint, unknown username, bad integrity, stray transaction.
        public var dropped = 0
        /// Checks that carried our own role, and signed 487 answers to our checks.
        public var roleConflicts = 0
    }

    /// The role attribute a check of ours carried: a 487 answer says that role must yield.
    private enum SentRole: Sendable { case controlling, controlled, both }

    public private(set) var checklist: ICEChecklist
    public let local: ICECredentials
    public private(set) var remote: ICECredentials?
    public let tieBreaker: UInt64
    public private(set) var statistics = Statistics()
    /// The role each check in flight carried (retransmissions across a switch carry both).
    private var sentRoles: [STUNTransactionID: SentRole] = [:]

    public init(local: ICECredentials, remote: ICECredentials?, configuration: ICEChecklist.Configuration, now: Duration,
                seed: UInt64 = UInt64.random(in: .min ... .max)) {
        var random = SeededRandom(seed: seed)
        self.local = local
        self.remote = remote
        tieBreaker = random.next()
        checklist = ICEChecklist(configuration: configuration, now: now, seed: random.next())
    }

    /// The peer's credentials, when they come after the agent started.
    public mutating func setRemote(_ credentials: ICECredentials) { remote = credentials }
    public mutating func addLocal(_ candidate: ICECandidate) { checklist.addLocal(candidate) }
    public mutating func addRemote(_ candidate: ICECandidate) { checklist.addRemote(candidate) }
    public mutating func remoteCandidatesComplete() { checklist.remoteCandidatesComplete() }
    public var nextDeadline: Duration? { checklist.nextDeadline }

    public mutating func poll(now: Duration) -> [Output] { translate(checklist.poll(now: now)) }

    /// A STUN message that arrived at the local candidate `at` from `source`.
    public mutating func receive(_ bytes: [UInt8], from source: SocketAddress, at local: SocketAddress, now: Duration) -> [Output] {
        guard STUNMessage.verifyFingerprint(bytes), let message = try? STUNMessage(parsing: bytes) else {
            statistics.dropped += 1
            return []
        }
        switch message.type {
        case .bindingRequest: return answer(message, bytes, from: source, at: local, now: now)
        case .bindingSuccess, .bindingError: return accept(message, bytes, from: source, now: now)
        default:
            statistics.dropped += 1
            return []
        }
    }

    private mutating func answer(_ request: STUNMessage, _ bytes: [UInt8], from source: SocketAddress, at local: SocketAddress,
                                 now: Duration) -> [Output] {
        guard let username = request.username, username.hasPrefix(self.local.ufrag + ":"),
              let key = try? STUNIntegrityKey.shortTerm(password: self.local.password), request.verifyIntegrity(key, in: bytes),
              let priority = request.attributes.lazy.compactMap({ if case .priority(let value) = $0 { value } else { nil } }).first else {
            statistics.dropped += 1
            return []
        }
        let roles = request.attributes.compactMap { attribute -> (controlling: Bool, tieBreaker: UInt64)? in
            switch attribute {
            case .iceControlling(let value): (true, value)
            case .iceControlled(let value): (false, value)
            default: nil
            }
        }
        guard roles.count <= 1 else {
            statistics.dropped += 1
            return []
        }
        if let theirs = roles.first, theirs.controlling == checklist.controlling {
            statistics.roleConflicts += 1
            // §7.3.1.1: the larger tie-breaker controls; on a tie, the agent asked does.
            let ourRoleStands = checklist.controlling == (tieBreaker >= theirs.tieBreaker)
            if ourRoleStands { return roleConflict(request, bytes, key: key, from: source, at: local) }
            checklist.switchRole()
        }
        let nominated = request.attributes.contains(.useCandidate)
        statistics.requestsAnswered += 1
        let response = STUNMessage(type: .bindingSuccess, transactionID: request.transactionID, attributes: [.xorMappedAddress(source)])
        var outputs: [Output] = [.send(response.serialized(integrity: key, fingerprint: true), from: local, to: source)]
        outputs += translate(checklist.received(from: source, at: local, priority: priority, useCandidate: nominated, now: now))
        return outputs
    }

    /// The 487 answer: we keep our role and the request is not a check. 76 bytes (ERROR-CODE
    /// with "Role Conflict", MESSAGE-INTEGRITY, FINGERPRINT), while a signed check with
    /// USERNAME, PRIORITY and a role attribute has at least 80: checked anyway, so that an
    /// answer can never amplify.
    private mutating func roleConflict(_ request: STUNMessage, _ bytes: [UInt8], key: STUNIntegrityKey, from source: SocketAddress,
                                       at local: SocketAddress) -> [Output] {
        let response = STUNMessage(type: .bindingError, transactionID: request.transactionID,
                                   attributes: [.errorCode(code: 487, reason: "Role Conflict")])
        let answer = response.serialized(integrity: key, fingerprint: true)
        guard answer.count <= bytes.count else {
            statistics.dropped += 1
            return []
        }
        return [.send(answer, from: local, to: source)]
    }

    /// Notes the role a check carried; forgets checks that ended once there are more notes
    /// than pairs (so at most about `maximumPairs` are kept).
    private mutating func remember(_ role: SentRole, for id: STUNTransactionID) {
        let earlier = sentRoles[id]
        sentRoles[id] = earlier == nil || earlier == role ? role : .both
        guard sentRoles.count > checklist.entries.count else { return }
        let live = Set(checklist.entries.compactMap(\.transaction))
        sentRoles = sentRoles.filter { live.contains($0.key) }
    }

    private mutating func accept(_ response: STUNMessage, _ bytes: [UInt8], from source: SocketAddress, now: Duration) -> [Output] {
        guard let remote, let key = try? STUNIntegrityKey.shortTerm(password: remote.password), response.verifyIntegrity(key, in: bytes) else {
            statistics.dropped += 1
            return []
        }
        if response.type == .bindingError {
            guard response.errorCode?.code == 487 else {
                checklist.failed(response.transactionID)
                return []
            }
            // §7.2.5.1: the role our check carried yields, if it is still ours; either way the
            // pair is checked again, with the role we have then.
            guard let sent = sentRoles[response.transactionID], checklist.conflicted(response.transactionID, from: source) else {
                statistics.dropped += 1
                return []
            }
            sentRoles[response.transactionID] = nil
            statistics.roleConflicts += 1
            if sent == (checklist.controlling ? .controlling : .controlled) { checklist.switchRole() }
            return []
        }
        let outputs = checklist.succeeded(response.transactionID, from: source, now: now)
        statistics.responsesAccepted += 1
        return translate(outputs)
    }

    /// Checks become signed binding requests; the rest passes through.
    private mutating func translate(_ actions: [ICEChecklist.Action]) -> [Output] {
        actions.compactMap { action -> Output? in
            switch action {
            case .check(let pair, let id, let nominate):
                guard let remote, let key = try? STUNIntegrityKey.shortTerm(password: remote.password) else { return nil }
                // The priority a peer-reflexive candidate learned from this check would have.
                let priority = ICECandidate.priority(.peerReflexive, localPreference: (pair.local.priority >> 8) & 0xFFFF,
                                                     component: pair.local.component)
                let controlling = checklist.controlling
                var attributes: [STUNMessage.Attribute] = [.username("\(remote.ufrag):\(local.ufrag)"), .priority(priority),
                                                           controlling ? .iceControlling(tieBreaker) : .iceControlled(tieBreaker)]
                if nominate { attributes.append(.useCandidate) }
                statistics.requestsSent += 1
                remember(controlling ? .controlling : .controlled, for: id)
                let request = STUNMessage(type: .bindingRequest, transactionID: id, attributes: attributes)
                return .send(request.serialized(integrity: key, fingerprint: true), from: pair.local.address, to: pair.remote.address)
            case .selected(let pair): return .selected(pair)
            case .failed(let why): return .failed(why)
            }
        }
    }
}

extension ICEAgent {
    /// A consent-freshness request (RFC 7675 §5.1: an ICE binding request on the selected
    /// pair) with transaction `id`, signed with the peer's password; nil before the peer's
    /// credentials are known.
    public func consentRequest(_ id: STUNTransactionID) -> [UInt8]? {
        guard let remote, let key = try? STUNIntegrityKey.shortTerm(password: remote.password) else { return nil }
        let role: STUNMessage.Attribute = checklist.controlling ? .iceControlling(tieBreaker) : .iceControlled(tieBreaker)
        let priority = ICECandidate.priority(.peerReflexive, localPreference: 65_535)
        let request = STUNMessage(type: .bindingRequest, transactionID: id,
                                  attributes: [.username("\(remote.ufrag):\(local.ufrag)"), .priority(priority), role])
        return request.serialized(integrity: key, fingerprint: true)
    }

    /// Whether `bytes` is a success response signed by the peer (its password) with a
    /// valid fingerprint: a consent answer the caller then matches by transaction.
    public func isSignedSuccess(_ message: STUNMessage, _ bytes: [UInt8]) -> Bool {
        guard message.type == .bindingSuccess, STUNMessage.verifyFingerprint(bytes), let remote,
              let key = try? STUNIntegrityKey.shortTerm(password: remote.password) else { return false }
        return message.verifyIntegrity(key, in: bytes)
    }

    /// The round trip of the selected pair's last successful check, if measured.
    public var selectedRoundTripTime: Duration? { checklist.selectedRoundTripTime }
}

/// ICE-lite's answering side (RFC 8445 §2.5), for a server's end of a leg: it checks
/// nothing itself; it answers each binding request whose USERNAME starts with its ufrag
/// and whose MESSAGE-INTEGRITY verifies with its password, signed, with the source as
/// XOR-MAPPED-ADDRESS, never with more bytes than the request had.
public enum ICELite {
    /// The signed answer to `request` (whose wire form is `bytes`) from `source`, or nil
    /// when it is not a valid check for `local` (fingerprint, username, integrity).
    public static func answer(_ request: STUNMessage, _ bytes: UnsafeRawBufferPointer, from source: SocketAddress,
                              local: ICECredentials) -> (answer: [UInt8], nominated: Bool)? {
        guard request.type == .bindingRequest, STUNMessage.verifyFingerprint(bytes),
              let username = request.username, username.hasPrefix(local.ufrag + ":"),
              let key = try? STUNIntegrityKey.shortTerm(password: local.password), request.verifyIntegrity(key, in: bytes) else { return nil }
        let answer = STUNMessage(type: .bindingSuccess, transactionID: request.transactionID, attributes: [.xorMappedAddress(source)])
            .serialized(integrity: key, fingerprint: true)
        guard answer.count <= bytes.count else { return nil }
        return (answer, request.attributes.contains(.useCandidate))
    }
}
