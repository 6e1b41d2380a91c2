/// The ICE checklist of one agent (RFC 8445 §6.1.2-§8, one data stream, one component),
/// sans-I/O and codec-free: it decides which pair to check when, retransmits, learns
/// peer-reflexive candidates from incoming checks, nominates and selects, and says so as
/// `Action`s; the caller turns checks into STUN binding requests (with the agents'
/// credentials and PRIORITY, USE-CANDIDATE, ICE-CONTROLLING/-CONTROLLED) and feeds back
/// what answers.
///
/// Timing: one new check every `pacing` (Ta, 50 ms; triggered checks first); each check is
/// retransmitted after an RTO that starts at `initialRTO` and doubles, and a pair fails
/// after `maximumSends` unanswered sends. The controlling agent nominates the best
/// succeeded pair once it has waited the pair type's `nominationWait` since checks began
/// (pion's: host 0, srflx 0.5 s, prflx 1 s, relay 2 s), and nominates again when a better
/// pair succeeds later; the controlled agent selects what is nominated. With nothing
/// selected `failAfter` after the start, or every pair failed once the peer said it has
/// no more candidates, the agent fails.
///
/// Roles: the agent starts in `configuration.controlling`'s role and may switch once a
/// role conflict is resolved (RFC 8445 §7.3.1.1, §7.2.5.1; the caller decides, with the
/// tie-breakers): `switchRole()` reorders the pairs by their priorities in the new role
/// and keeps their states.
///
/// Memory: at most `maximumPairs` pairs and `maximumRemoteCandidates` remote candidates
/// (a stranger's flood of checks from new addresses cannot grow it).
public struct ICEChecklist: Sendable {
    public struct Configuration: Sendable, Hashable {
        /// The role the agent starts in; `ICEChecklist.controlling` is the one it has now.
        public var controlling: Bool
        public var pacing: Duration = .milliseconds(50)
        public var initialRTO: Duration = .milliseconds(250)
        public var maximumSends = 7
        public var failAfter: Duration = .seconds(15)
        public var maximumPairs = 100
        public var maximumRemoteCandidates = 32

        public init(controlling: Bool) { self.controlling = controlling }

        /// How long the controlling agent waits, from the start of checks, before it
        /// nominates a pair of this kind (a better one may still succeed meanwhile).
        public func nominationWait(_ kind: ICECandidate.Kind) -> Duration {
            switch kind {
            case .host: .zero
            case .serverReflexive: .milliseconds(500)
            case .peerReflexive: .seconds(1)
            case .relayed: .seconds(2)
            }
        }
    }

    public enum PairState: Sendable, Hashable {
        case frozen, waiting, inProgress, succeeded, failed
    }

    /// What the caller must do.
    public enum Action: Sendable, Hashable {
        /// Send a binding request for `pair` (from its local candidate's base, or through
        /// its relay) with this transaction ID; `nominate`: with USE-CANDIDATE.
        case check(ICECandidatePair, STUNTransactionID, nominate: Bool)
        /// Media goes over this pair from now on (a first selection or a better one).
        case selected(ICECandidatePair)
        /// No pair can work.
        case failed(String)
    }

    struct Entry: Sendable {
        var pair: ICECandidatePair
        var state: PairState
        var transaction: STUNTransactionID?
        var sends = 0
        var nextSend: Duration = .zero
        var rto: Duration = .zero
        var nominating = false
        var nominated = false
        /// When the last check went out, and the round trip its answer measured.
        var lastSent: Duration = .zero
        var roundTripTime: Duration?
    }

    public let configuration: Configuration
    /// Whether the agent controls now (it starts as `configuration` says; see `switchRole()`).
    public private(set) var controlling: Bool
    private(set) var entries: [Entry] = []
    private(set) var local: [ICECandidate] = []
    private(set) var remote: [ICECandidate] = []
    /// Pairs owed a triggered check, in arrival order (keys: indices move as pairs come).
    private var triggered: [ICECandidatePair.Key] = []
    private var started: Duration
    private var nextPacing: Duration
    private var remoteComplete = false
    private var finished = false
    public private(set) var selectedPair: ICECandidatePair?
    private var random: SeededRandom

    /// - Parameter seed: Draws transaction IDs (a test's fixed seed, or a random one).
    public init(configuration: Configuration, now: Duration, seed: UInt64 = UInt64.random(in: .min ... .max)) {
        self.configuration = configuration
        controlling = configuration.controlling
        started = now
        nextPacing = now
        random = SeededRandom(seed: seed)
    }

    /// The state of the pair from `local` to `remote`, if there is one.
    public func state(from local: SocketAddress, to remote: SocketAddress) -> PairState? {
        entries.first { $0.pair.local.address == local && $0.pair.remote.address == remote }?.state
    }

    /// Whether checks are over (a selection stands or the agent failed).
    public var isFailed: Bool { finished && selectedPair == nil }

    /// A local candidate gathered (host, server-reflexive, relayed).
    public mutating func addLocal(_ candidate: ICECandidate) {
        guard !local.contains(candidate) else { return }
        local.append(candidate)
        rebuild()
    }

    /// A remote candidate trickled over signaling; unusable ones are for the caller to drop.
    public mutating func addRemote(_ candidate: ICECandidate) {
        if let known = remote.firstIndex(where: { $0.address == candidate.address }) {
            // A check got here before the signaling (trickle): the peer-reflexive candidate
            // learned from it becomes the signaled one, its pairs keeping their states
            // (RFC 8838 §11).
            guard remote[known].kind == .peerReflexive, candidate.kind != .peerReflexive else { return }
            remote[known] = candidate
            for index in entries.indices where entries[index].pair.remote.address == candidate.address {
                entries[index].pair.remote = candidate
            }
            if selectedPair?.remote.address == candidate.address { selectedPair?.remote = candidate }
            rebuild()
            return
        }
        guard remote.count < configuration.maximumRemoteCandidates else { return }
        remote.append(candidate)
        rebuild()
    }

    /// The peer has sent all its candidates: once every pair failed, the agent fails.
    public mutating func remoteCandidatesComplete() { remoteComplete = true }

    /// Forms the pairs anew, keeping the states of those already there.
    private mutating func rebuild() {
        let old = Dictionary(entries.map { (ICECandidatePair.Key($0.pair), $0) }, uniquingKeysWith: { first, _ in first })
        let pairs = ICECandidatePair.checklist(local: local, remote: remote, controlling: controlling,
                                               limit: configuration.maximumPairs)
        var unfrozen = Set(old.values.filter { $0.state != .frozen }.map { $0.pair.local.foundation + "/" + $0.pair.remote.foundation })
        entries = pairs.map { pair in
            if let existing = old[ICECandidatePair.Key(pair)] { return existing }
            // The first pair of each foundation starts waiting; the rest wait for it (§6.1.2.6).
            let foundation = pair.local.foundation + "/" + pair.remote.foundation
            let state: PairState = unfrozen.insert(foundation).inserted ? .waiting : .frozen
            return Entry(pair: pair, state: state)
        }
        let present = Set(entries.map { ICECandidatePair.Key($0.pair) })
        triggered = triggered.filter { present.contains($0) }
    }

    /// The round trip measured by the selected pair's last successful check.
    public var selectedRoundTripTime: Duration? {
        guard let selectedPair else { return nil }
        return entries.first { $0.pair == selectedPair }?.roundTripTime
    }

    /// The peer's candidates known so far (signaled and peer-reflexive).
    public var remoteCandidates: [ICECandidate] { remote }

    /// When the agent next has work.
    public var nextDeadline: Duration? {
        guard !finished || selectedPair != nil else { return nil }
        // Selected and nothing left to check: no timer until something arrives.
        if selectedPair != nil, triggered.isEmpty, !entries.contains(where: { [.waiting, .frozen, .inProgress].contains($0.state) }) {
            return nil
        }
        var next = nextPacing
        for entry in entries where entry.state == .inProgress { next = min(next, entry.nextSend) }
        if selectedPair == nil { next = min(next, started + configuration.failAfter) }
        return next
    }

    /// Runs the timers due at `now`: a new check every `pacing`, retransmissions, the
    /// nomination, the overall failure.
    public mutating func poll(now: Duration) -> [Action] {
        guard !(finished && selectedPair == nil) else { return [] }
        var actions: [Action] = []
        for index in entries.indices where entries[index].state == .inProgress && entries[index].nextSend <= now {
            if entries[index].sends >= configuration.maximumSends {
                entries[index].state = .failed
                entries[index].transaction = nil
            } else {
                actions.append(send(index, now: now))
            }
        }
        if now >= nextPacing {
            nextPacing = now + configuration.pacing
            if let index = nextToCheck() { actions.append(start(index, now: now)) }
        }
        actions += nominate(now: now)
        if selectedPair == nil, now >= started + configuration.failAfter || (remoteComplete && !entries.isEmpty && entries.allSatisfy({ $0.state == .failed })) {
            finished = true
            actions.append(.failed(entries.isEmpty ? "no candidate pair to check (no usable remote candidates; \(candidateSummary))"
                                   : "no candidate pair answered: \(entries.count) pairs checked (\(candidateSummary))"))
        }
        return actions
    }

    /// The kinds of candidates each side had when checks ended ("local host, srflx; remote
    /// host"): tells a user whether gathering or the peer's signaling came short.
    private var candidateSummary: String {
        func kinds(_ candidates: [ICECandidate]) -> String {
            candidates.isEmpty ? "none" : candidates.map(\.kind.rawValue).joined(separator: ", ")
        }
        return "local \(kinds(local)); remote \(kinds(remote))"
    }

    /// A triggered check first, then the best waiting pair, then the best frozen one.
    private mutating func nextToCheck() -> Int? {
        while let key = triggered.first {
            triggered.removeFirst()
            if let index = entries.firstIndex(where: { ICECandidatePair.Key($0.pair) == key }),
               entries[index].state != .succeeded && entries[index].state != .inProgress { return index }
        }
        if let index = entries.indices.first(where: { entries[$0].state == .waiting }) { return index }
        return entries.indices.first { entries[$0].state == .frozen }
    }

    private mutating func start(_ index: Int, now: Duration) -> Action {
        entries[index].state = .inProgress
        entries[index].sends = 0
        entries[index].rto = configuration.initialRTO
        entries[index].transaction = STUNTransactionID.random(using: &random)
        return send(index, now: now)
    }

    private mutating func send(_ index: Int, now: Duration) -> Action {
        if entries[index].sends > 0 { entries[index].rto = entries[index].rto * 2 }
        entries[index].sends += 1
        entries[index].nextSend = now + entries[index].rto
        entries[index].lastSent = now
        return .check(entries[index].pair, entries[index].transaction!, nominate: entries[index].nominating)
    }

    /// Whether a check to `remote` ever succeeded (a pair being nominated is in progress
    /// again, but answered once): the peer proved it answers there, so its DTLS may come
    /// from there before a pair is selected.
    public func hasSucceeded(to remote: SocketAddress) -> Bool {
        entries.contains { $0.roundTripTime != nil && $0.state != .failed && $0.pair.remote.address == remote }
    }

    /// A success response to transaction `id`, from `source`. Only an answer from the
    /// address the check went to counts (RFC 8445 §7.2.5.2.1, symmetric addresses).
    public mutating func succeeded(_ id: STUNTransactionID, from source: SocketAddress, now: Duration) -> [Action] {
        guard let index = entries.firstIndex(where: { $0.transaction == id }), entries[index].pair.remote.address == source else { return [] }
        entries[index].transaction = nil
        entries[index].state = .succeeded
        entries[index].roundTripTime = now - entries[index].lastSent
        // Pairs of the same foundation are likely to work too: let them go (§7.2.5.3.3).
        let foundation = entries[index].pair.local.foundation + "/" + entries[index].pair.remote.foundation
        for other in entries.indices where entries[other].state == .frozen
            && entries[other].pair.local.foundation + "/" + entries[other].pair.remote.foundation == foundation {
            entries[other].state = .waiting
        }
        if entries[index].nominating {
            entries[index].nominating = false
            entries[index].nominated = true
        }
        return nominate(now: now) + select()
    }

    /// An error response, or a check that cannot be sent (the relay is gone): the pair fails.
    public mutating func failed(_ id: STUNTransactionID) {
        guard let index = entries.firstIndex(where: { $0.transaction == id }) else { return }
        entries[index].transaction = nil
        entries[index].state = .failed
    }

    /// A connectivity check arrived from `source` at `local`'s base (already
    /// authenticated by the caller). A source that is no known remote candidate is a
    /// peer-reflexive one, with the `priority` its check carried (§7.3.1.3); the pair gets a
    /// triggered check, and with `useCandidate` (controlled side) it counts as nominated.
    public mutating func received(from source: SocketAddress, at local: SocketAddress, priority: UInt32, useCandidate: Bool,
                                  now: Duration) -> [Action] {
        if !remote.contains(where: { $0.address == source }) {
            addRemote(ICECandidate(foundation: ICECandidate.foundation(.peerReflexive, base: source, server: nil), priority: priority,
                                   address: source, kind: .peerReflexive))
        }
        guard let index = entries.firstIndex(where: { $0.pair.local.address == local && $0.pair.remote.address == source }) else { return [] }
        if useCandidate && !controlling { entries[index].nominated = true }
        switch entries[index].state {
        case .succeeded:
            return select()
        case .inProgress:
            return []
        case .frozen, .waiting, .failed:
            entries[index].state = .waiting
            let key = ICECandidatePair.Key(entries[index].pair)
            if !triggered.contains(key) { triggered.append(key) }
            return []
        }
    }

    /// Takes the other role (a role conflict resolved, RFC 8445 §7.3.1.1): pair priorities
    /// depend on the role (§6.1.2.3), so the pairs are reordered, their states kept. A
    /// nomination belongs to the role that made or received it, so nominations in progress
    /// or not yet selected are forgotten (a nominating check goes on as an ordinary one);
    /// a selection stands. The tie-breaker stays as it is.
    public mutating func switchRole() {
        controlling.toggle()
        rebuild()
        for index in entries.indices {
            entries[index].nominating = false
            if entries[index].pair != selectedPair { entries[index].nominated = false }
        }
    }

    /// A role-conflict answer (487) to transaction `id`, from `source` (the address the
    /// check went to): the pair waits for a triggered check, which carries the role the
    /// agent has then (§7.2.5.1). Whether to switch is the caller's call: it knows which
    /// role the check carried. Returns false for a transaction or address not ours.
    @discardableResult
    public mutating func conflicted(_ id: STUNTransactionID, from source: SocketAddress) -> Bool {
        guard let index = entries.firstIndex(where: { $0.transaction == id }), entries[index].pair.remote.address == source else { return false }
        entries[index].transaction = nil
        entries[index].state = .waiting
        let key = ICECandidatePair.Key(entries[index].pair)
        if !triggered.contains(key) { triggered.append(key) }
        return true
    }

    /// The controlling agent's regular nomination: the best succeeded pair once its type's
    /// wait has passed, again whenever a better one succeeds.
    private mutating func nominate(now: Duration) -> [Action] {
        guard controlling,
              let best = entries.indices.first(where: { entries[$0].state == .succeeded }),
              !entries[best].nominated, !entries[best].nominating,
              now >= started + configuration.nominationWait(entries[best].pair.pathKind) else { return [] }
        entries[best].nominating = true
        entries[best].state = .inProgress
        return [start(best, now: now)]
    }

    /// The best nominated, succeeded pair, when it changed.
    private mutating func select() -> [Action] {
        guard let best = entries.first(where: { $0.nominated && $0.state == .succeeded })?.pair, best != selectedPair else { return [] }
        selectedPair = best
        finished = true
        return [.selected(best)]
    }

}
