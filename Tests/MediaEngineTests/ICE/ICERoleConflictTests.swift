import Testing
@testable import MediaEngine

private func address(_ text: String) -> SocketAddress { try! SocketAddress(parsing: text) }

/// RFC 8445 §7.3.1.1 and §7.2.5.1: two agents that both think they control (or both that
/// they are controlled) agree, the larger tie-breaker controlling.
@Suite struct ICERoleConflicts {
    static let alice = ICECredentials(ufrag: "aliceUF1", password: "alice-password-0123456789")
    static let bob = ICECredentials(ufrag: "bobUF222", password: "bob-password-abcdefghijklmn")
    static let lanA = address("10.0.0.1:5000"), lanB = address("10.0.0.2:6000")

    /// Both start in the same role; the seeds are swapped in the second run, so each side has
    /// the larger tie-breaker once.
    @Test(arguments: [true, false])
    func agentsThatStartInTheSameRoleAgreeAndSelectTheSamePair(bothControlling: Bool) {
        var winners: Set<Int> = []
        for seeds: [UInt64] in [[7, 8], [8, 7]] {
            var wire = WiredAgents(credentials: [Self.alice, Self.bob], told: [Self.bob, Self.alice],
                                   controlling: [bothControlling, bothControlling], seeds: seeds)
            let larger = wire.agents[0].tieBreaker > wire.agents[1].tieBreaker ? 0 : 1
            winners.insert(larger)
            wire.run(for: .milliseconds(500))
            let roles = wire.agents.map(\.checklist.controlling)
            #expect(roles[larger] && !roles[1 - larger], "the larger tie-breaker controls, exactly one does: \(roles), seeds \(seeds)")
            #expect(wire.selected[0].count == 1 && wire.selected[1].count == 1, "\(wire.selected)")
            #expect(wire.selected[0].first?.local.address == wire.selected[1].first?.remote.address
                    && wire.selected[0].first?.remote.address == wire.selected[1].first?.local.address, "the same pair on both sides")
            #expect(!wire.failed[0] && !wire.failed[1])
            // Both checks cross: the agent asked by the winner's check yields on it (the loser
            // when both control, the winner itself when both are controlled), the other answers
            // a 487, which finds the role its check carried already given up: one round, no flapping.
            let conflicts = wire.agents.map(\.statistics.roleConflicts)
            #expect(conflicts[larger] == (bothControlling ? 1 : 2) && conflicts[1 - larger] == (bothControlling ? 2 : 1),
                    "\(wire.agents.map(\.statistics))")
            #expect(wire.agents.allSatisfy { $0.statistics.dropped == 0 })
        }
        #expect(winners == [0, 1])
    }

    /// The agent whose role stands (the larger tie-breaker when both control, the smaller
    /// when both are controlled) starts checking 100 ms late, so the other learns of the
    /// conflict only from the 487 to its own check, and switches on it.
    @Test(arguments: [true, false])
    func theAgentThatYieldsOnA487AgreesWithThePeer(bothControlling: Bool) {
        for seeds: [UInt64] in [[7, 8], [8, 7]] {
            var wire = WiredAgents(credentials: [Self.alice, Self.bob], told: [Self.bob, Self.alice],
                                   controlling: [bothControlling, bothControlling], seeds: seeds)
            let larger = wire.agents[0].tieBreaker > wire.agents[1].tieBreaker ? 0 : 1
            wire.startsAt[bothControlling ? larger : 1 - larger] = wire.now + .milliseconds(100)
            wire.run(for: .milliseconds(500))
            let roles = wire.agents.map(\.checklist.controlling)
            #expect(roles[larger] && !roles[1 - larger], "\(roles), seeds \(seeds)")
            #expect(wire.agents.map(\.statistics.roleConflicts) == [1, 1], "one 487 sent, one honoured: \(wire.agents.map(\.statistics))")
            #expect(wire.selected[0].count == 1 && wire.selected[1].count == 1, "\(wire.selected)")
            #expect(wire.selected[0].first?.local.address == wire.selected[1].first?.remote.address
                    && wire.selected[0].first?.remote.address == wire.selected[1].first?.local.address, "the same pair on both sides")
        }
    }

    /// One agent, one pair to Bob's host address, its first check in hand.
    private static func checkingAgent(controlling: Bool) throws -> (ICEAgent, check: STUNMessage) {
        var agent = ICEAgent(local: alice, remote: bob, configuration: .init(controlling: controlling), now: .zero, seed: 3)
        agent.addLocal(.local(.host, address: lanA, localPreference: 30_000))
        agent.addRemote(.local(.host, address: lanB, localPreference: 30_000))
        let bytes = try #require(agent.poll(now: .zero).lazy.compactMap { if case .send(let bytes, _, _) = $0 { bytes } else { nil } }.first)
        return (agent, try STUNMessage(parsing: bytes))
    }

    private static func roleAttribute(_ message: STUNMessage) -> (controlling: Bool, tieBreaker: UInt64)? {
        for attribute in message.attributes {
            if case .iceControlling(let value) = attribute { return (true, value) }
            if case .iceControlled(let value) = attribute { return (false, value) }
        }
        return nil
    }

    @Test func checksCarryTheRoleAndTieBreaker() throws {
        for controlling in [true, false] {
            let (agent, check) = try Self.checkingAgent(controlling: controlling)
            let role = Self.roleAttribute(check)
            #expect(role?.controlling == controlling && role?.tieBreaker == agent.tieBreaker)
        }
    }

    /// A 487 answer switches the role only when it is signed with the peer's password and
    /// comes from where the check went; otherwise it is dropped and changes nothing.
    @Test func onlyASigned487FromThePeerSwitchesTheRoleAndTheCheckGoesAgainInTheNewRole() throws {
        var (agent, check) = try Self.checkingAgent(controlling: true)
        let conflict = STUNMessage(type: .bindingError, transactionID: check.transactionID,
                                   attributes: [.errorCode(code: 487, reason: "Role Conflict")])
        let bobsKey = try STUNIntegrityKey.shortTerm(password: Self.bob.password)
        let forgeries: [(String, [UInt8], SocketAddress)] = [
            ("unsigned", conflict.serialized(integrity: nil, fingerprint: true), Self.lanB),
            ("signed with another password", conflict.serialized(integrity: try .shortTerm(password: "not-bobs-password-at-all-x"),
                                                                 fingerprint: true), Self.lanB),
            ("signed, another transaction", STUNMessage(type: .bindingError, transactionID: .random(), attributes: conflict.attributes)
                .serialized(integrity: bobsKey, fingerprint: true), Self.lanB),
            ("signed, from another address", conflict.serialized(integrity: bobsKey, fingerprint: true), address("10.0.0.9:6000")),
        ]
        for (index, (what, bytes, source)) in forgeries.enumerated() {
            #expect(agent.receive(bytes, from: source, at: Self.lanA, now: .milliseconds(20)).isEmpty, "\(what)")
            #expect(agent.checklist.controlling && agent.statistics.roleConflicts == 0 && agent.statistics.dropped == index + 1, "\(what)")
            #expect(agent.checklist.state(from: Self.lanA, to: Self.lanB) == .inProgress, "\(what)")
        }

        #expect(agent.receive(conflict.serialized(integrity: bobsKey, fingerprint: true), from: Self.lanB, at: Self.lanA,
                              now: .milliseconds(20)).isEmpty)
        #expect(!agent.checklist.controlling && agent.statistics.roleConflicts == 1 && agent.statistics.dropped == forgeries.count)
        #expect(agent.checklist.state(from: Self.lanA, to: Self.lanB) == .waiting)
        // The triggered check at the next pacing slot: a new transaction, the new role, the same tie-breaker.
        let again = agent.poll(now: .milliseconds(50)).compactMap { output -> STUNMessage? in
            if case .send(let bytes, Self.lanA, Self.lanB) = output { try? STUNMessage(parsing: bytes) } else { nil }
        }
        #expect(again.count == 1 && again.first?.transactionID != check.transactionID)
        let role = again.first.flatMap(Self.roleAttribute)
        #expect(role?.controlling == false && role?.tieBreaker == agent.tieBreaker)
        // A second 487 for the old transaction is stale: nothing switches back.
        #expect(agent.receive(conflict.serialized(integrity: bobsKey, fingerprint: true), from: Self.lanB, at: Self.lanA,
                              now: .milliseconds(60)).isEmpty)
        #expect(!agent.checklist.controlling && agent.statistics.dropped == forgeries.count + 1)
    }

    /// The agent asked: our role, our tie-breaker against theirs. A 487 is answered when our
    /// role stands, else the agent switches and answers the check as usual.
    @Test(arguments: [
        // controlling, their attribute is ICE-CONTROLLING, their tie-breaker relative to ours, 487 expected
        (true, true, -1, true), (true, true, 0, true), (true, true, 1, false),
        (false, false, -1, false), (false, false, 0, false), (false, false, 1, true),
    ])
    func theAgentAskedKeepsOrSwitchesByTieBreaker(controlling: Bool, theyControl: Bool, relative: Int, conflictAnswered: Bool) throws {
        var agent = ICEAgent(local: Self.alice, remote: Self.bob, configuration: .init(controlling: controlling), now: .zero, seed: 5)
        agent.addLocal(.local(.host, address: Self.lanA, localPreference: 30_000))
        let theirs = relative < 0 ? agent.tieBreaker - 1 : relative > 0 ? agent.tieBreaker + 1 : agent.tieBreaker
        // As small as a check to us can be: the USERNAME is our ufrag and a colon.
        let request = STUNMessage(type: .bindingRequest, transactionID: .random(),
                                  attributes: [.username(Self.alice.ufrag + ":"), .priority(1),
                                               theyControl ? .iceControlling(theirs) : .iceControlled(theirs)])
        let aliceKey = try STUNIntegrityKey.shortTerm(password: Self.alice.password)
        let bytes = request.serialized(integrity: aliceKey, fingerprint: true)
        let outputs = agent.receive(bytes, from: Self.lanB, at: Self.lanA, now: .zero)
        guard case .send(let answer, Self.lanA, Self.lanB)? = outputs.first, let response = try? STUNMessage(parsing: answer) else {
            Issue.record("no answer: \(outputs)")
            return
        }
        #expect(response.transactionID == request.transactionID && response.verifyIntegrity(aliceKey, in: answer)
                && STUNMessage.verifyFingerprint(answer))
        #expect(agent.statistics.roleConflicts == 1)
        if conflictAnswered {
            #expect(response.type == .bindingError && response.errorCode?.code == 487)
            #expect(answer.count <= bytes.count, "an answer never amplifies: \(answer.count) > \(bytes.count)")
            #expect(agent.checklist.controlling == controlling, "our role stands")
            #expect(outputs.count == 1 && agent.statistics.requestsAnswered == 0 && agent.checklist.remote.isEmpty,
                    "not a check: no peer-reflexive candidate, no triggered check")
        } else {
            #expect(response.type == .bindingSuccess && response.xorMappedAddress == Self.lanB)
            #expect(agent.checklist.controlling != controlling, "switched")
            #expect(agent.statistics.requestsAnswered == 1 && agent.checklist.state(from: Self.lanA, to: Self.lanB) == .waiting)
        }
    }

    @Test func aCheckWithBothRoleAttributesIsDropped() throws {
        var agent = ICEAgent(local: Self.alice, remote: Self.bob, configuration: .init(controlling: true), now: .zero, seed: 5)
        agent.addLocal(.local(.host, address: Self.lanA, localPreference: 30_000))
        let request = STUNMessage(type: .bindingRequest, transactionID: .random(),
                                  attributes: [.username(Self.alice.ufrag + ":" + Self.bob.ufrag), .priority(1),
                                               .iceControlling(1), .iceControlled(1)])
        let bytes = request.serialized(integrity: try .shortTerm(password: Self.alice.password), fingerprint: true)
        #expect(agent.receive(bytes, from: Self.lanB, at: Self.lanA, now: .zero).isEmpty)
        #expect(agent.statistics.dropped == 1 && agent.checklist.controlling && agent.checklist.remote.isEmpty)
    }

    /// Pair priorities depend on the role (RFC 8445 §6.1.2.3): with candidates of the same
    /// two priorities on both sides, the two middle pairs swap places.
    @Test func switchingTheRoleReordersThePairsAndKeepsTheirStates() {
        let a1 = address("10.0.0.1:5000"), a2 = address("10.0.1.1:5000"), b1 = address("10.0.0.2:6000"), b2 = address("10.0.1.2:6000")
        var checklist = ICEChecklist(configuration: .init(controlling: true), now: .zero, seed: 6)
        checklist.addLocal(.local(.host, address: a1, localPreference: 30_000))
        checklist.addLocal(.local(.host, address: a2, localPreference: 20_000))
        checklist.addRemote(.local(.host, address: b1, localPreference: 30_000))
        checklist.addRemote(.local(.host, address: b2, localPreference: 20_000))
        _ = checklist.poll(now: .zero)
        func order() -> [String] { checklist.entries.map { "\($0.pair.local.address)>\($0.pair.remote.address)" } }
        func states() -> [String: ICEChecklist.PairState] {
            Dictionary(uniqueKeysWithValues: checklist.entries.map { ("\($0.pair.local.address)>\($0.pair.remote.address)", $0.state) })
        }
        #expect(order() == ["\(a1)>\(b1)", "\(a1)>\(b2)", "\(a2)>\(b1)", "\(a2)>\(b2)"], "controlling: ours count as G")
        let before = states()
        #expect(before["\(a1)>\(b1)"] == .inProgress)
        checklist.switchRole()
        #expect(!checklist.controlling && checklist.configuration.controlling, "the configuration keeps the starting role")
        #expect(order() == ["\(a1)>\(b1)", "\(a2)>\(b1)", "\(a1)>\(b2)", "\(a2)>\(b2)"], "controlled: theirs count as G")
        #expect(states() == before)
    }

    /// A nomination in flight when the agent becomes controlled goes on as an ordinary check:
    /// its success makes the pair valid, not selected; the peer's nomination selects it.
    @Test func aNominationInProgressIsForgottenWhenTheRoleSwitches() {
        var checklist = ICEChecklist(configuration: .init(controlling: true), now: .zero, seed: 7)
        checklist.addLocal(.local(.host, address: Self.lanA, localPreference: 30_000))
        checklist.addRemote(.local(.host, address: Self.lanB, localPreference: 30_000))
        guard case .check(let pair, let id, false)? = checklist.poll(now: .zero).first,
              case .check(_, let nomination, true)? = checklist.succeeded(id, from: Self.lanB, now: .milliseconds(20)).first else {
            Issue.record("a check, then a host pair's nomination at once")
            return
        }
        checklist.switchRole()
        #expect(checklist.poll(now: .milliseconds(270)) == [.check(pair, nomination, nominate: false)], "retransmitted without USE-CANDIDATE")
        #expect(checklist.succeeded(nomination, from: Self.lanB, now: .milliseconds(300)).isEmpty)
        #expect(checklist.selectedPair == nil && checklist.state(from: Self.lanA, to: Self.lanB) == .succeeded)
        #expect(checklist.received(from: Self.lanB, at: Self.lanA, priority: 1, useCandidate: true, now: .milliseconds(310)) == [.selected(pair)])
    }
}
