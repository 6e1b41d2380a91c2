import Testing
@testable import MediaEngine

private func address(_ text: String) -> SocketAddress { try! SocketAddress(parsing: text) }

@Suite struct ICECandidatePriorities {
    /// RFC 8445 §5.1.2.1 with the recommended type preferences, component 1.
    @Test(arguments: [
        (ICECandidate.Kind.host, UInt32(65_535), UInt32(2_130_706_431)),  // 126 << 24 | 65535 << 8 | 255
        (.peerReflexive, 65_535, 1_862_270_975),
        (.serverReflexive, 65_535, 1_694_498_815),
        (.relayed, 65_535, 16_777_215),
        (.host, 0, 2_113_929_471),
    ])
    func candidatePriorityFollowsTheFormula(kind: ICECandidate.Kind, localPreference: UInt32, expected: UInt32) {
        #expect(ICECandidate.priority(kind, localPreference: localPreference) == expected)
    }

    @Test func typesOrderHostPeerReflexiveServerReflexiveRelayAndIPv6BeforeIPv4() {
        let v6 = ICECandidate.localPreference(for: address("[2001:db8::1]:5000"), index: 0)
        let v4 = ICECandidate.localPreference(for: address("192.0.2.1:5000"), index: 0)
        #expect(v6 > v4 && ICECandidate.localPreference(for: address("192.0.2.2:5000"), index: 1) < v4)
        let kinds: [ICECandidate.Kind] = [.host, .peerReflexive, .serverReflexive, .relayed]
        let priorities = kinds.map { ICECandidate.priority($0, localPreference: v4) }
        #expect(priorities == priorities.sorted(by: >))
        // Any host candidate beats any reflexive one, whatever the local preferences.
        #expect(ICECandidate.priority(.host, localPreference: 0) > ICECandidate.priority(.peerReflexive, localPreference: 65_535))
    }

    /// RFC 8445 §6.1.2.3, and the same number seen from both sides.
    @Test func pairPriorityIsTheSameFromBothAgents() {
        let g = ICECandidate(foundation: "1", priority: 2_130_706_431, address: address("192.0.2.1:1000"), kind: .host)
        let d = ICECandidate(foundation: "2", priority: 1_694_498_815, address: address("198.51.100.7:2000"), kind: .serverReflexive)
        let controlling = ICECandidatePair(local: g, remote: d).priority(controlling: true)
        let expected: UInt64 = (UInt64(1_694_498_815) << 32) + UInt64(2 * 2_130_706_431 + 1)
        #expect(controlling == expected)
        #expect(ICECandidatePair(local: d, remote: g).priority(controlling: false) == controlling)
        #expect(ICECandidatePair(local: g, remote: d).pathKind == .serverReflexive)
    }

    @Test func foundationsGroupByTypeBaseAndServer() {
        let base = address("10.0.0.2:5000")
        let a = ICECandidate.local(.serverReflexive, address: address("203.0.113.9:5000"), base: base, localPreference: 1,
                                   server: address("203.0.113.1:3478"))
        let b = ICECandidate.local(.serverReflexive, address: address("203.0.113.9:6000"), base: address("10.0.0.2:6000"), localPreference: 1,
                                   server: address("203.0.113.1:3478"))
        let other = ICECandidate.local(.serverReflexive, address: address("203.0.113.9:5000"), base: base, localPreference: 1,
                                       server: address("203.0.113.2:3478"))
        let host = ICECandidate.local(.host, address: base, localPreference: 1)
        #expect(a.foundation == b.foundation, "same type, base IP and server")
        #expect(a.foundation != other.foundation && a.foundation != host.foundation)
        #expect(a.relatedAddress == base && host.relatedAddress == nil)
    }
}

@Suite struct ICECandidateChecklists {
    let host = ICECandidate.local(.host, address: address("10.0.0.2:5000"), localPreference: 30_000)
    var reflexive: ICECandidate {
        ICECandidate.local(.serverReflexive, address: address("203.0.113.9:41000"), base: host.address, localPreference: 30_000,
                           server: address("203.0.113.1:3478"))
    }
    let relay = ICECandidate.local(.relayed, address: address("203.0.113.1:50000"), base: address("203.0.113.9:41000"), localPreference: 30_000,
                                   server: address("203.0.113.1:3478"))
    let v6 = ICECandidate.local(.host, address: address("[2001:db8::2]:5000"), localPreference: 60_000)

    @Test func aReflexiveCandidateChecksFromItsBaseAndFamiliesPairOnlyWithThemselves() {
        let remoteHost = ICECandidate(foundation: "r1", priority: ICECandidate.priority(.host, localPreference: 30_000),
                                      address: address("10.1.0.5:7000"), kind: .host)
        let remoteReflexive = ICECandidate(foundation: "r2", priority: ICECandidate.priority(.serverReflexive, localPreference: 30_000),
                                           address: address("198.51.100.4:7000"), kind: .serverReflexive, relatedAddress: remoteHost.address)
        let pairs = ICECandidatePair.checklist(local: [host, reflexive, relay, v6], remote: [remoteHost, remoteReflexive], controlling: true)
        // host and srflx (sent from the host) collapse to one pair per remote; the relay adds its own; IPv6 has no partner.
        #expect(pairs.count == 4, "\(pairs)")
        #expect(pairs.allSatisfy { $0.local.kind != .serverReflexive && !$0.local.address.isIPv6 })
        #expect(pairs.first?.local.kind == .host && pairs.first?.remote.kind == .host, "host to host first")
        #expect(pairs.last?.local.kind == .relayed, "the relay last")
        let priorities = pairs.map { $0.priority(controlling: true) }
        #expect(priorities == priorities.sorted(by: >))
        #expect(ICECandidatePair.checklist(local: [host], remote: [remoteHost], controlling: true, limit: 0).isEmpty)
    }

    @Test func aReflexiveCandidateWithoutItsHostBaseIsNotChecked() {
        let remote = ICECandidate(foundation: "r", priority: 1, address: address("198.51.100.4:7000"), kind: .host)
        #expect(ICECandidatePair.checklist(local: [reflexive], remote: [remote], controlling: false).isEmpty)
    }
}

@Suite struct ICECandidateAttributes {
    @Test(arguments: [
        ("candidate:842163049 1 udp 1677729535 198.51.100.4 48320 typ srflx raddr 10.0.0.2 rport 48320 generation 0 ufrag x9 network-cost 999",
         ICECandidate.Kind.serverReflexive, "198.51.100.4:48320", String?("10.0.0.2:48320")),
        ("a=candidate:1 1 UDP 2130706431 2001:db8::7 5000 typ host", .host, "[2001:db8::7]:5000", nil),
        ("candidate:a+b/c 1 udp 16777215 203.0.113.1 50000 typ relay raddr 0.0.0.0 rport 0", .relayed, "203.0.113.1:50000", nil),
        // The unspecified address however spelled (the fuzzer's "0::" once came back as "::").
        ("candidate:c 1 udp 11 2.0.1.1 50 typ relay raddr 0:: rport 0", .relayed, "2.0.1.1:50", nil),
        ("candidate:c 1 udp 11 2001:db8::1 50 typ relay raddr 0:0::0 rport 9", .relayed, "[2001:db8::1]:50", nil),
        ("candidate:9 1 udp 1862270975 192.0.2.77 6000 typ prflx", .peerReflexive, "192.0.2.77:6000", nil),
        // Split at scalars: " \u{0301}" is one Character, but the space still ends "x".
        ("candidate:9 1 udp 1862270975 192.0.2.77 6000 typ prflx x \u{0301}", .peerReflexive, "192.0.2.77:6000", nil),
    ])
    func wellFormedCandidatesParse(line: String, kind: ICECandidate.Kind, at: String, related: String?) throws {
        let candidate = try ICECandidate(attribute: line)
        #expect(candidate.kind == kind && candidate.address == address(at) && candidate.component == 1)
        #expect(candidate.relatedAddress == related.map(address))
        #expect(try ICECandidate(attribute: candidate.attribute) == candidate, "round trip: \(candidate.attribute)")
    }

    @Test(arguments: [
        ("candidate:1 1 udp 2130706431 10.0.0.1 5000 typ", "at least 8"),
        ("candidate: 1 udp 2130706431 10.0.0.1 5000 typ host x", "component"),
        ("candidate:f@o 1 udp 2130706431 10.0.0.1 5000 typ host", "foundation"),
        ("candidate:123456789012345678901234567890123 1 udp 1 10.0.0.1 5000 typ host", "foundation"),
        ("candidate:1 0 udp 2130706431 10.0.0.1 5000 typ host", "component"),
        ("candidate:1 1 tcp 2130706431 10.0.0.1 9 typ host tcptype active", "only UDP"),
        ("candidate:1 1 udp 0 10.0.0.1 5000 typ host", "priority"),
        ("candidate:1 1 udp 99999999999 10.0.0.1 5000 typ host", "priority"),
        ("candidate:1 1 udp 2130706431 10.0.0.1 70000 typ host", "port"),
        ("candidate:1 1 udp 2130706431 3f1a6c2e-6c1d.local 5000 typ host", "literal IP"),
        ("candidate:1 1 udp 2130706431 example.com 5000 typ host", "literal IP"),
        ("candidate:1 1 udp 2130706431 10.0.0.1 5000 typ nat", "typ"),
        ("candidate:1 1 udp 2130706431 10.0.0.1 5000 kind host", "typ"),
        ("candidate:1 1 udp 1694498815 198.51.100.4 5000 typ srflx raddr", "without a value"),
        ("candidate:1 1 udp 1694498815 198.51.100.4 5000 typ srflx raddr 10.0.0.2", "raddr and rport"),
        ("candidate:1 1 udp 1694498815 198.51.100.4 5000 typ srflx raddr 10.0.0.2 generation 0", "raddr and rport"),
        ("candidate:1 1 udp 1694498815 198.51.100.4 5000 typ srflx raddr 10.0.0.x rport 5", "raddr/rport"),
    ])
    func malformedCandidatesAreTypedErrorsNamingTheField(line: String, names: String) {
        #expect {
            try ICECandidate(attribute: line)
        } throws: { error in
            (error as? SDPError)?.message.contains(names) == true
        }
    }

    @Test func anOverlongLineIsRefusedBeforeParsing() {
        let line = "candidate:1 1 udp 1 10.0.0.1 5000 typ host" + String(repeating: " x y", count: 200)
        #expect(throws: SDPError.self) { try ICECandidate(attribute: line) }
    }

    /// Candidates pointing at loopback, unspecified, link-local, multicast or the server
    /// itself are not worth a check (they reach this host or the server, not the peer).
    @Test(arguments: [
        ("127.0.0.1:5000", false), ("0.0.0.0:5000", false), ("169.254.1.1:5000", false), ("224.0.0.1:5000", false),
        ("255.255.255.255:5000", false), ("[::1]:5000", false), ("[::]:5000", false), ("[fe80::1]:5000", false), ("[ff02::1]:5000", false),
        ("[::ffff:10.0.0.1]:5000", false), ("10.0.0.1:0", false), ("203.0.113.1:3478", false),
        ("10.0.0.1:5000", true), ("198.51.100.4:1", true), ("[2001:db8::1]:5000", true),
    ])
    func onlyUsableRemoteCandidatesAreChecked(at: String, usable: Bool) {
        let candidate = ICECandidate(foundation: "1", priority: 1, address: address(at), kind: .host)
        #expect(candidate.isUsable(excluding: [address("203.0.113.1:3478")]) == usable, "\(at)")
    }
}
