import Testing
@testable import MediaEngine

private func address(_ text: String) -> SocketAddress { try! SocketAddress(parsing: text) }

/// Two agents exchanging real STUN bytes on a virtual LAN (every send arrives from its own
/// address, 10 ms later). Side 0 controls unless `controlling` says otherwise; `seeds` fix
/// the tie-breakers.
struct WiredAgents {
    var agents: [ICEAgent]
    var now = Duration.seconds(10)
    var selected: [[ICECandidatePair]] = [[], []]
    var failed: [Bool] = [false, false]
    var inFlight: [(at: Duration, to: Int, bytes: [UInt8], from: SocketAddress, landing: SocketAddress)] = []
    var tamper: ([UInt8]) -> [UInt8] = { $0 }
    /// Per side: the agent is not polled before this time (it starts checking late).
    var startsAt: [Duration] = [.zero, .zero]
    let addresses = [address("10.0.0.1:5000"), address("10.0.0.2:6000")]

    init(credentials: [ICECredentials], told: [ICECredentials], controlling: [Bool] = [true, false], seeds: [UInt64] = [7, 8]) {
        agents = (0...1).map { side in
            ICEAgent(local: credentials[side], remote: told[side], configuration: .init(controlling: controlling[side]), now: .seconds(10),
                     seed: seeds[side])
        }
        for side in 0...1 {
            agents[side].addLocal(.local(.host, address: addresses[side], localPreference: 30_000))
            agents[side].addRemote(.local(.host, address: addresses[1 - side], localPreference: 30_000))
        }
    }

    mutating func handle(_ side: Int, _ outputs: [ICEAgent.Output]) {
        for output in outputs {
            switch output {
            case .send(let bytes, let from, let to):
                guard let target = addresses.firstIndex(of: to) else { continue }
                inFlight.append((now + .milliseconds(10), target, tamper(bytes), from, to))
            case .selected(let pair): selected[side].append(pair)
            case .failed: failed[side] = true
            }
        }
    }

    mutating func run(for duration: Duration) {
        let end = now + duration
        while now < end {
            for side in 0...1 where now >= startsAt[side] { handle(side, agents[side].poll(now: now)) }
            let due = inFlight.filter { $0.at <= now }
            inFlight.removeAll { $0.at <= now }
            for packet in due { handle(packet.to, agents[packet.to].receive(packet.bytes, from: packet.from, at: packet.landing, now: now)) }
            now += .milliseconds(5)
        }
    }
}

@Suite struct ICEAgentWire {
    static let alice = ICECredentials(ufrag: "aliceUF1", password: "alice-password-0123456789")
    static let bob = ICECredentials(ufrag: "bobUF222", password: "bob-password-abcdefghijklmn")

    @Test func signedChecksBothWaysSelectThePairOnBothSides() {
        var wire = WiredAgents(credentials: [Self.alice, Self.bob], told: [Self.bob, Self.alice])
        wire.run(for: .milliseconds(300))
        #expect(wire.selected[0].count == 1 && wire.selected[1].count == 1, "\(wire.selected)")
        #expect(wire.selected[0].first?.remote.address == wire.addresses[1] && wire.selected[1].first?.remote.address == wire.addresses[0])
        for side in 0...1 {
            let statistics = wire.agents[side].statistics
            #expect(statistics.requestsSent > 0 && statistics.requestsAnswered > 0 && statistics.dropped == 0 && statistics.roleConflicts == 0,
                    "\(statistics)")
        }
        #expect(wire.agents[0].statistics.responsesAccepted > 0)
    }

    /// Checks signed with the wrong password are never answered: the agent fails in its
    /// bounded time instead of connecting to whoever guessed a ufrag.
    @Test func aWrongPasswordIsNeverAnsweredAndTheCheckFails() {
        let impostor = ICECredentials(ufrag: Self.bob.ufrag, password: "not-bobs-password-at-all-x")
        var wire = WiredAgents(credentials: [Self.alice, Self.bob], told: [impostor, Self.alice])
        wire.run(for: .seconds(16))
        #expect(wire.selected[0].isEmpty && wire.failed[0], "alice never connects")
        #expect(wire.agents[1].statistics.dropped > 0 && wire.agents[1].statistics.requestsAnswered == 0,
                "bob drops what alice signs with the wrong key: \(wire.agents[1].statistics)")
    }

    @Test func tamperedOrUnknownChecksAreDroppedAndCounted() {
        var wire = WiredAgents(credentials: [Self.alice, Self.bob], told: [Self.bob, Self.alice])
        wire.tamper = { bytes in
            var changed = bytes
            changed[changed.count / 2] ^= 0x01
            return changed
        }
        wire.run(for: .milliseconds(500))
        #expect(wire.selected[0].isEmpty && wire.selected[1].isEmpty)
        #expect(wire.agents[0].statistics.dropped > 0 && wire.agents[1].statistics.dropped > 0)
        // A check for another ufrag, properly signed by someone: not ours, not answered.
        var agent = wire.agents[1]
        let stranger = STUNMessage(type: .bindingRequest, transactionID: .random(),
                                   attributes: [.username("someoneElse:x"), .priority(1)])
        let bytes = stranger.serialized(integrity: try! .shortTerm(password: Self.bob.password), fingerprint: true)
        #expect(agent.receive(bytes, from: address("198.51.100.9:1"), at: wire.addresses[1], now: wire.now).isEmpty)
        #expect(agent.statistics.dropped == wire.agents[1].statistics.dropped + 1)
        #expect(!Self.alice.description.contains(Self.alice.password))
    }

    @Test func randomCredentialsHaveTheRFCsLengthsAndAlphabet() {
        var random = SeededRandom(seed: 9)
        let credentials = ICECredentials.random(using: &random)
        #expect(credentials.ufrag.count == 8 && credentials.password.count == 24)
        #expect((credentials.ufrag + credentials.password).allSatisfy { $0.isLetter || $0.isNumber || $0 == "+" || $0 == "/" })
        #expect(ICECredentials.random(using: &random) != credentials)
    }
}
