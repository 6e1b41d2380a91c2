import Testing
@testable import MediaEngine

private func address(_ text: String) -> SocketAddress { try! SocketAddress(parsing: text) }

/// Two checklists on a virtual clock, joined by a network the test describes: for a send
/// from an agent's local address to a remote address, the source the far side sees (a
/// NAT's mapping, or the relay's address), or nil when it never arrives. Answers take the
/// way back; every hop takes 10 ms.
private struct TwoAgents {
    typealias Route = (_ side: Int, _ local: SocketAddress, _ remote: SocketAddress) -> SocketAddress?
    var agents: [ICEChecklist]
    var route: Route
    /// Per agent: the local candidate address a packet sent to one of its addresses lands
    /// on (a reflexive address lands on its base; a relay's on the relayed candidate).
    var landsOn: [[SocketAddress: SocketAddress]] = [[:], [:]]
    var now = Duration.seconds(100)
    var selected: [[ICECandidatePair]] = [[], []]
    var failures: [[String]] = [[], []]
    var sent: [[(at: Duration, pair: ICECandidatePair, nominate: Bool)]] = [[], []]
    private var inFlight: [(at: Duration, deliver: Delivery)] = []

    enum Delivery {
        case request(to: Int, from: SocketAddress, at: SocketAddress, priority: UInt32, nominate: Bool, id: STUNTransactionID, sentTo: SocketAddress)
        case response(to: Int, id: STUNTransactionID, from: SocketAddress)
    }

    init(controllingLocal: [ICECandidate], controlledLocal: [ICECandidate], route: @escaping Route) {
        agents = [ICEChecklist(configuration: .init(controlling: true), now: .seconds(100), seed: 1),
                  ICEChecklist(configuration: .init(controlling: false), now: .seconds(100), seed: 2)]
        self.route = route
        for candidate in controllingLocal { agents[0].addLocal(candidate) }
        for candidate in controlledLocal { agents[1].addLocal(candidate) }
        for (side, candidates) in [controllingLocal, controlledLocal].enumerated() {
            for candidate in candidates { addLanding(side, candidate) }
        }
    }

    mutating func addLanding(_ side: Int, _ candidate: ICECandidate) {
        landsOn[side][candidate.address] = candidate.kind == .serverReflexive ? candidate.relatedAddress! : candidate.address
    }

    mutating func trickle(from side: Int, _ candidate: ICECandidate) { agents[1 - side].addRemote(candidate) }

    mutating func handle(_ side: Int, _ actions: [ICEChecklist.Action]) {
        for action in actions {
            switch action {
            case .check(let pair, let id, let nominate):
                sent[side].append((now, pair, nominate))
                guard let source = route(side, pair.local.address, pair.remote.address), let base = landsOn[1 - side][pair.remote.address] else { continue }
                inFlight.append((now + .milliseconds(10), .request(to: 1 - side, from: source, at: base, priority: pair.local.priority,
                                                                   nominate: nominate, id: id, sentTo: pair.remote.address)))
            case .selected(let pair): selected[side].append(pair)
            case .failed(let why): failures[side].append(why)
            }
        }
    }

    mutating func run(for duration: Duration) {
        let end = now + duration
        while now < end {
            for side in 0...1 { handle(side, agents[side].poll(now: now)) }
            let due = inFlight.filter { $0.at <= now }
            inFlight.removeAll { $0.at <= now }
            for (_, delivery) in due {
                switch delivery {
                case .request(let side, let source, let base, let priority, let nominate, let id, let sentTo):
                    handle(side, agents[side].received(from: source, at: base, priority: priority, useCandidate: nominate, now: now))
                    // The answer leaves from the address the check reached, back to its source.
                    inFlight.append((now + .milliseconds(10), .response(to: 1 - side, id: id, from: sentTo)))
                case .response(let side, let id, let from):
                    handle(side, agents[side].succeeded(id, from: from, now: now))
                }
            }
            now += .milliseconds(5)
        }
    }
}

@Suite struct ICEChecklistFlows {
    static let lanA = address("10.0.0.1:5000"), lanB = address("10.0.0.2:6000")
    static let natA = address("198.51.100.1:40000"), natB = address("198.51.100.2:50000")
    static let relayA = address("203.0.113.1:50000")

    static func host(_ at: SocketAddress) -> ICECandidate { .local(.host, address: at, localPreference: 30_000) }
    static func reflexive(_ at: SocketAddress, base: SocketAddress) -> ICECandidate {
        .local(.serverReflexive, address: at, base: base, localPreference: 30_000, server: address("203.0.113.1:3478"))
    }
    static func relay(_ at: SocketAddress, base: SocketAddress) -> ICECandidate {
        .local(.relayed, address: at, base: base, localPreference: 30_000, server: address("203.0.113.1:3478"))
    }

    @Test func onOneLANTheHostPairIsSelectedAtOnceByBoth() {
        let a = [Self.host(Self.lanA), Self.reflexive(Self.natA, base: Self.lanA)]
        let b = [Self.host(Self.lanB), Self.reflexive(Self.natB, base: Self.lanB)]
        // One LAN: every send arrives from the sender's own address.
        var net = TwoAgents(controllingLocal: a, controlledLocal: b) { _, local, _ in local }
        for candidate in a { net.trickle(from: 0, candidate) }
        for candidate in b { net.trickle(from: 1, candidate) }
        net.run(for: .milliseconds(300))
        #expect(net.selected[0].map(\.pathKind) == [.host], "\(net.selected[0])")
        #expect(net.selected[1].first?.local.address == Self.lanB && net.selected[1].first?.remote.address == Self.lanA)
        #expect(net.failures.allSatisfy { $0.isEmpty })
    }

    /// Behind two port-preserving NATs: host addresses do not reach each other, the
    /// reflexive ones do; the pair is selected after the srflx nomination wait (0.5 s).
    @Test func behindTwoNATsTheServerReflexivePairWins() {
        let a = [Self.host(Self.lanA), Self.reflexive(Self.natA, base: Self.lanA)]
        let b = [Self.host(Self.lanB), Self.reflexive(Self.natB, base: Self.lanB)]
        // Only the NATs' public addresses are reachable, and a send shows up from its NAT mapping.
        var net = TwoAgents(controllingLocal: a, controlledLocal: b) { side, _, remote in
            guard remote == Self.natA || remote == Self.natB else { return nil }
            return side == 0 ? Self.natA : Self.natB
        }
        for candidate in a { net.trickle(from: 0, candidate) }
        for candidate in b { net.trickle(from: 1, candidate) }
        net.run(for: .seconds(1))
        let chosen = try? #require(net.selected[0].first)
        #expect(chosen?.remote.address == Self.natB && chosen?.local.address == Self.lanA, "sent from the base: \(net.selected[0])")
        #expect(chosen?.pathKind == .serverReflexive)
        #expect(net.selected[1].first?.remote.address == Self.natA)
        let nominatedAt = net.sent[0].first { $0.nominate }?.at
        #expect(nominatedAt.map { $0 >= .seconds(100) + .milliseconds(500) } == true, "nominated after the srflx wait")
    }

    /// Only the relay works (a symmetric NAT on the other side); later the peer trickles a
    /// host candidate that works, and the agent moves to the better pair.
    @Test func aRelayPairCarriesTheCallAndABetterPairThatSucceedsLaterTakesOver() {
        let a = [Self.host(Self.lanA), Self.relay(Self.relayA, base: Self.lanA)]
        let b = [Self.host(Self.lanB)]
        // A's own address never reaches B; through the relay, A's sends come from the relay.
        var net = TwoAgents(controllingLocal: a, controlledLocal: b) { side, local, remote in
            if side == 0 { return local == Self.relayA ? Self.relayA : nil }
            return remote == Self.relayA ? local : nil
        }
        for candidate in a { net.trickle(from: 0, candidate) }
        for candidate in b { net.trickle(from: 1, candidate) }
        net.run(for: .seconds(3))
        #expect(net.selected[0].map(\.pathKind) == [.relayed], "\(net.selected[0])")
        // B gains an interface A's host address reaches directly, and trickles it.
        let late = Self.host(address("10.0.0.3:6001"))
        net.route = { side, local, remote in
            if side == 0 { return local == Self.relayA ? Self.relayA : (remote == late.address ? local : nil) }
            return remote == Self.relayA || local == late.address ? local : nil
        }
        net.addLanding(1, late)
        net.agents[1].addLocal(late)
        net.trickle(from: 1, late)
        net.run(for: .seconds(1))
        #expect(net.selected[0].map(\.pathKind) == [.relayed, .host], "switched to the host pair: \(net.selected[0])")
        #expect(net.selected[1].last?.local.address == late.address)
    }

    @Test func withNothingReachableTheAgentFailsInBoundedTime() {
        let a = [Self.host(Self.lanA)]
        let b = [Self.host(Self.lanB)]
        var net = TwoAgents(controllingLocal: a, controlledLocal: b) { _, _, _ in nil }
        for candidate in a { net.trickle(from: 0, candidate) }
        for candidate in b { net.trickle(from: 1, candidate) }
        net.agents[0].remoteCandidatesComplete()
        net.run(for: .seconds(20))
        // 7 sends with RTOs of 250 ms doubling: the pair fails after 250 * (2^7 - 1) ms = 31.75 s
        // at most, so the overall limit (15 s) ends it.
        #expect(net.failures[0].count == 1 && net.selected[0].isEmpty)
        // The reason says what each side had, so a user sees whether gathering came short.
        #expect(net.failures[0] == ["no candidate pair answered: 1 pairs checked (local host; remote host)"])
        #expect(net.agents[0].isFailed && net.agents[0].nextDeadline == nil)
        let sends = net.sent[0].map(\.at)
        #expect(sends.count == 6, "retransmissions at 0, .25, .75, 1.75, 3.75, 7.75 s, then the 15 s limit: \(sends)")
    }

    @Test func retransmissionsDoubleAndAPairFailsAfterSevenSends() {
        var configuration = ICEChecklist.Configuration(controlling: true)
        configuration.failAfter = .seconds(100)
        var agent = ICEChecklist(configuration: configuration, now: .zero, seed: 3)
        agent.addLocal(Self.host(Self.lanA))
        agent.addRemote(Self.host(Self.lanB))
        var times: [Duration] = []
        var now = Duration.zero
        while now < .seconds(60) {
            for case .check in agent.poll(now: now) { times.append(now) }
            now += .milliseconds(5)
        }
        #expect(times.map { $0 / .milliseconds(1) } == [0, 250, 750, 1_750, 3_750, 7_750, 15_750])
        #expect(agent.state(from: Self.lanA, to: Self.lanB) == .failed)
        agent.remoteCandidatesComplete()
        #expect(agent.poll(now: now).contains { if case .failed = $0 { return true }; return false }, "every pair failed and no more come")
    }

    /// A check from an unknown source is a peer-reflexive candidate: paired, checked at
    /// once (a triggered check), and the number of remote candidates stays bounded.
    @Test func checksFromUnknownSourcesArePeerReflexiveAndBounded() {
        var agent = ICEChecklist(configuration: .init(controlling: false), now: .zero, seed: 4)
        agent.addLocal(Self.host(Self.lanB))
        _ = agent.received(from: Self.natA, at: Self.lanB, priority: 1_862_270_975, useCandidate: false, now: .zero)
        #expect(agent.state(from: Self.lanB, to: Self.natA) == .waiting)
        let first = agent.poll(now: .zero)
        guard case .check(let pair, _, false)? = first.first else {
            Issue.record("a triggered check: \(first)")
            return
        }
        #expect(pair.remote.kind == .peerReflexive && pair.remote.priority == 1_862_270_975)
        for index in 0..<1_000 {
            _ = agent.received(from: address("198.51.100.9:\(10_000 + index)"), at: Self.lanB, priority: 1, useCandidate: false, now: .zero)
        }
        #expect(agent.remote.count == agent.configuration.maximumRemoteCandidates && agent.entries.count <= agent.configuration.maximumPairs)
    }

    /// A check that beats the signaling makes its source peer-reflexive; when the same
    /// address is signaled later (trickle), it takes the signaled type and priority and its
    /// pair keeps its state (RFC 8838 §11).
    @Test func aSignaledCandidateReplacesThePeerReflexiveOneLearnedFirst() {
        var agent = ICEChecklist(configuration: .init(controlling: false), now: .zero, seed: 6)
        agent.addLocal(Self.host(Self.lanB))
        _ = agent.received(from: Self.lanA, at: Self.lanB, priority: 1_862_270_975, useCandidate: false, now: .zero)
        guard case .check(_, let id, _)? = agent.poll(now: .zero).first else {
            Issue.record("no triggered check")
            return
        }
        _ = agent.succeeded(id, from: Self.lanA, now: .milliseconds(10))
        #expect(agent.state(from: Self.lanB, to: Self.lanA) == .succeeded)
        agent.addRemote(Self.host(Self.lanA))
        #expect(agent.remoteCandidates.map(\.kind) == [.host], "\(agent.remoteCandidates)")
        #expect(agent.entries.first?.pair.remote.kind == .host)
        #expect(agent.state(from: Self.lanB, to: Self.lanA) == .succeeded, "the pair keeps its state")
    }

    @Test func anAnswerFromAnotherAddressThanTheCheckWentToDoesNotCount() {
        var agent = ICEChecklist(configuration: .init(controlling: true), now: .zero, seed: 5)
        agent.addLocal(Self.host(Self.lanA))
        agent.addRemote(Self.host(Self.lanB))
        guard case .check(_, let id, _)? = agent.poll(now: .zero).first else {
            Issue.record("no check")
            return
        }
        #expect(agent.succeeded(id, from: Self.natB, now: .milliseconds(20)).isEmpty)
        #expect(agent.state(from: Self.lanA, to: Self.lanB) == .inProgress)
        // The right answer makes the pair valid: a host pair is nominated at once.
        let after = agent.succeeded(id, from: Self.lanB, now: .milliseconds(20))
        #expect(after.contains { if case .check(_, let again, true) = $0 { return again != id }; return false }, "\(after)")
    }
}
