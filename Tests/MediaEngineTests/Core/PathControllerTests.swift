import Testing
@testable import MediaEngine

private func address(_ text: String) -> SocketAddress { try! SocketAddress(parsing: text) }

/// Two path controllers on a virtual LAN, on a manual clock: every datagram one sends
/// arrives at the other 10 ms later, from the sender's address. No core, no media, no
/// sockets: what the controllers decide is all there is to see.
private struct WiredPaths {
    static let credentials = [ICECredentials(ufrag: "leftUFRG", password: "left-password-0123456789ab"),
                              ICECredentials(ufrag: "rightUFR", password: "right-password-abcdefghijk")]
    let addresses = [address("10.0.0.1:5000"), address("10.0.0.2:6000")]
    var sides: [PathController]
    var random = [SeededRandom(seed: 1), SeededRandom(seed: 2)]
    var now = Duration.seconds(10)
    var inFlight: [(at: Duration, to: Int, bytes: [UInt8], from: SocketAddress)] = []
    /// Per side: what it reported, in order.
    var selected: [[(pair: ICECandidatePair, first: Bool)]] = [[], []]
    var events: [[MediaCore.Event]] = [[], []]
    /// Datagrams to side `n` are lost while this says so.
    var cut: [Bool] = [false, false]

    /// Side 0 a full controlling agent; side 1 a full controlled one, or ICE-lite.
    init(lite: Bool = false) {
        sides = [PathController(consent: .init(), learnsFromChecks: false, seed: 11),
                 PathController(consent: .init(), learnsFromChecks: lite, seed: 12)]
        let hosts = addresses.map { ICECandidate.local(.host, address: $0, localPreference: 30_000) }
        sides[0].start(local: Self.credentials[0], controlling: true, hosts: [hosts[0]], stunServers: [], turnServer: nil,
                       timeout: .seconds(10), now: now, random: &random[0])
        if lite {
            sides[1].localICE = Self.credentials[1]
        } else {
            sides[1].start(local: Self.credentials[1], controlling: false, hosts: [hosts[1]], stunServers: [], turnServer: nil,
                           timeout: .seconds(10), now: now, random: &random[1])
            sides[1].setRemote(Self.credentials[0])
            sides[1].addRemoteCandidates([hosts[0]], complete: true, now: now, random: &random[1])
        }
        sides[0].setRemote(Self.credentials[1])
        sides[0].addRemoteCandidates([hosts[1]], complete: true, now: now, random: &random[0])
        collect()
    }

    mutating func collect() {
        for side in 0...1 {
            sides[side].drainActions { action in
                switch action {
                case .transmit(let bytes, let destination, _):
                    guard let target = addresses.firstIndex(of: destination) else { return }
                    inFlight.append((now + .milliseconds(10), target, bytes, addresses[side]))
                case .selected(let pair, _, let first):
                    selected[side].append((pair, first))
                case .event(let event):
                    events[side].append(event)
                case .dtls, .keysAgreed:
                    break  // no DTLS here: DTLSCoreCalls drives it through the core
                }
            }
        }
    }

    mutating func run(for duration: Duration, step: Duration = .milliseconds(5)) {
        let end = now + duration
        while now < end {
            for side in 0...1 { sides[side].poll(now: now, random: &random[side]) }
            let due = inFlight.filter { $0.at <= now }
            inFlight.removeAll { $0.at <= now }
            collect()
            for packet in due where !cut[packet.to] {
                packet.bytes.withUnsafeBytes { sides[packet.to].handleSTUN($0, from: packet.from, socket: 0, now: now, random: &random[packet.to]) }
            }
            collect()
            now += step
        }
    }

    func expired(_ side: Int) -> Bool {
        events[side].contains { if case .consentExpired = $0 { return true } else { return false } }
    }
}

@Suite struct PathControllerTests {
    @Test func twoFullAgentsSelectEachOthersHostAndPinIt() {
        var wire = WiredPaths()
        #expect(wire.events[0].contains { if case .gatheringComplete = $0 { true } else { false } },
                "no STUN server and no relay: gathering is complete at once")
        wire.run(for: .milliseconds(500))
        for side in 0...1 {
            #expect(wire.selected[side].first?.first == true, "side \(side) selected a pair")
            #expect(wire.sides[side].path == wire.addresses[1 - side])
            #expect(wire.sides[side].isPinned)
            #expect(wire.sides[side].accepts(wire.addresses[1 - side]))
            #expect(!wire.sides[side].accepts(address("10.0.0.9:7000")), "once pinned, a stranger's media is refused")
            #expect(wire.sides[side].consent != nil, "consent checks run on the selected pair")
        }
        #expect(wire.sides[0].counters.stunAnswered >= 1 && wire.sides[1].counters.stunAnswered >= 1)
    }

    /// RFC 7675: with no answers the consent lasts 30 s from the last one, and then the
    /// peer is gone; while answers come, it never expires.
    @Test func consentExpiresThirtySecondsAfterThePeerStopsAnswering() {
        var wire = WiredPaths()
        wire.run(for: .seconds(60), step: .milliseconds(50))
        #expect(!wire.expired(0) && !wire.expired(1), "a minute of answered checks keeps consent")
        let requests = wire.sides[0].counters.consentRequestsSent
        #expect(requests >= 9 && requests <= 16, "a check every 5 s ± 20 %: \(requests) in a minute")
        #expect(wire.sides[0].counters.consentAnswersReceived >= requests - 1)

        wire.cut[1] = true
        let lastGranted = wire.sides[0].consent?.lastGranted ?? .zero
        wire.run(for: lastGranted + .seconds(30) - .milliseconds(100) - wire.now, step: .milliseconds(50))
        #expect(!wire.expired(0), "still within 30 s of the last answer")
        wire.run(for: .milliseconds(200), step: .milliseconds(50))
        #expect(wire.expired(0), "expired 30 s after the last answer")
        #expect(wire.sides[0].consent?.isExpired == true)
    }

    /// A server's leg: only a check signed for its credentials selects its source, and
    /// the answer goes back to where the check came from.
    @Test func iceLiteSelectsOnlyASignedChecksSource() {
        var wire = WiredPaths(lite: true)
        #expect(wire.sides[1].path == nil)
        // A stranger's check, signed with the wrong password, selects nothing.
        let impostor = ICECredentials(ufrag: WiredPaths.credentials[1].ufrag, password: "not-the-right-password-xyz")
        var forger = PathController(consent: .init(), learnsFromChecks: false, seed: 3)
        var random = SeededRandom(seed: 3)
        forger.start(local: WiredPaths.credentials[0], controlling: true,
                     hosts: [.local(.host, address: address("10.0.0.9:7000"), localPreference: 30_000)], stunServers: [],
                     turnServer: nil, timeout: .seconds(10), now: wire.now, random: &random)
        forger.setRemote(impostor)
        forger.addRemoteCandidates([.local(.host, address: wire.addresses[1], localPreference: 30_000)], complete: true,
                                   now: wire.now, random: &random)
        var forged: [[UInt8]] = []
        for step in 0..<20 {
            forger.poll(now: wire.now + .milliseconds(5 * step), random: &random)
            forger.drainActions { if case .transmit(let bytes, _, _) = $0 { forged.append(bytes) } }
        }
        #expect(!forged.isEmpty)
        for bytes in forged {
            bytes.withUnsafeBytes { wire.sides[1].handleSTUN($0, from: address("10.0.0.9:7000"), socket: 0, now: wire.now, random: &wire.random[1]) }
        }
        #expect(wire.sides[1].path == nil, "a check that does not verify selects nothing")
        #expect(wire.sides[1].counters.stunRefused == forged.count)

        wire.run(for: .milliseconds(500))
        #expect(wire.sides[1].path == wire.addresses[0])
        #expect(wire.sides[1].isPinned)
        #expect(wire.selected[0].first?.first == true, "the full agent's check was answered: it selected")
        #expect(wire.sides[0].path == wire.addresses[1])
    }

    @Test func malformedSTUNIsCountedAndChangesNothing() {
        var wire = WiredPaths()
        wire.run(for: .milliseconds(500))
        let before = wire.sides[1].counters
        let junk: [UInt8] = [0x00, 0x01, 0x00, 0x08, 0x21, 0x12, 0xA4, 0x42, 1, 2, 3]
        junk.withUnsafeBytes { wire.sides[1].handleSTUN($0, from: wire.addresses[0], socket: 0, now: wire.now, random: &wire.random[1]) }
        #expect(wire.sides[1].counters.stunRefused == before.stunRefused + 1)
        #expect(wire.sides[1].counters.unknownDatagrams == before.unknownDatagrams + 1)
        #expect(wire.sides[1].path == wire.addresses[0])
    }
}
