@testable import MediaEngine
@testable import MediaRouting
import Testing
import TestSupport

/// STUN Binding at the server's media port (RFC 8489 section 3): clients without a leg
/// learn their server-reflexive address, but never get more bytes than they sent, nor more
/// answers than their IP's rate, and malformed STUN is counted and dropped.
@Suite struct ForwardingRouterBindings {
    struct Answer {
        let bytes: [UInt8]
        let destination: SocketAddress
    }

    /// Hands `bytes` to `router` as if from `source` at `now`; returns what it sends.
    func send(_ bytes: [UInt8], from source: SocketAddress, to router: ForwardingRouter, at now: Duration = .zero) -> [Answer] {
        var copy = bytes
        copy.withUnsafeMutableBytes { router.handleDatagram($0, from: source, now: now) }
        var answers: [Answer] = []
        router.drainTransmits { answers.append(Answer(bytes: Array($0.bytes), destination: $0.destination)) }
        return answers
    }

    func ipv4(_ last: UInt8, port: Int = 40_000) -> SocketAddress { SocketAddress(addressBytes: [198, 51, 100, last], port: port)! }

    @Test func aPaddedRequestLearnsItsSourceAddressOverIPv4AndIPv6() throws {
        let router = ForwardingRouter()
        let sources = [ipv4(7, port: 40_001),
                       SocketAddress(addressBytes: [0x20, 0x01, 0x0d, 0xb8] + [UInt8](repeating: 0, count: 11) + [7], port: 40_002)!]
        for source in sources {
            let request = STUNBinding.request()
            let bytes = request.serialized()
            #expect(bytes.count == 44)
            let answers = send(bytes, from: source, to: router)
            try #require(answers.count == 1)
            #expect(answers[0].destination == source)
            #expect(answers[0].bytes.count == STUNBinding.answerSize(ipv6: source.isIPv6))
            #expect(answers[0].bytes.count <= bytes.count)
            let answer = try STUNMessage(parsing: answers[0].bytes)
            #expect(answer.type == .bindingSuccess)
            #expect(answer.transactionID == request.transactionID)
            #expect(answer.xorMappedAddress == source)
            #expect(STUNBinding.mappedAddress(from: answers[0].bytes, transactionID: request.transactionID) == source)
            #expect(STUNBinding.mappedAddress(from: answers[0].bytes, transactionID: .random()) == nil, "another transaction's answer")
        }
        #expect(router.counters.bindingsAnswered == 2)
        #expect(router.counters.strangerDatagrams == 0)
        #expect(router.legCount == 0, "a binding joins no leg")
    }

    @Test func anAnswerIsNeverLargerThanItsRequest() throws {
        let router = ForwardingRouter()
        var sent = 0
        for (index, padding) in [0, 1, 4, 5, 8, 12, 16, 17, 20, 24, 100].enumerated() {
            for ipv6 in [false, true] {
                let source = ipv6 ? SocketAddress(addressBytes: [0x20, 0x01, 0x0d, 0xb8] + [UInt8](repeating: 0, count: 11) + [UInt8(index)], port: 5_000)!
                    : ipv4(UInt8(index), port: 5_000)
                let bytes = STUNBinding.request(padding: padding).serialized()
                let answers = send(bytes, from: source, to: router)
                sent += 1
                let fits = bytes.count >= STUNBinding.answerSize(ipv6: ipv6)
                #expect(answers.count == (fits ? 1 : 0), "\(bytes.count)-byte request from \(source)")
                for answer in answers { #expect(answer.bytes.count <= bytes.count) }
            }
        }
        // IPv4 answers are 32 bytes: padding of 5 or more (padded to 8) fits; IPv6 ones are
        // 44: 17 or more (padded to 20).
        #expect(router.counters.bindingsAnswered == 8 + 4)
        #expect(router.counters.bindingsTooSmall == sent - 12)
    }

    @Test func anUnpaddedRequestIsCountedAndDropped() {
        let router = ForwardingRouter()
        let bytes = STUNBinding.request(padding: 0).serialized()
        #expect(bytes.count == 20)
        #expect(send(bytes, from: ipv4(9), to: router).isEmpty)
        #expect(router.counters.bindingsTooSmall == 1)
        #expect(router.counters.bindingsAnswered == 0)
        #expect(router.counters.strangerDatagrams == 0)
        #expect(router.bindingSourceCount == 0, "a dropped request takes no place in the table")
    }

    @Test func eachSourceIPGetsItsBurstThenItsRate() {
        let router = ForwardingRouter()  // burst 20, 10 per second
        let bytes = STUNBinding.request().serialized()
        let flooder = ipv4(1), other = ipv4(2)
        let first = (0..<30).map { _ in send(bytes, from: flooder, to: router).count }.reduce(0, +)
        #expect(first == 20, "the burst")
        #expect(router.counters.bindingsRateLimited == 10)
        #expect(send(bytes, from: flooder.with(port: 40_999), to: router).isEmpty, "another port of the same IP shares its bucket")
        #expect(send(bytes, from: other, to: router).count == 1, "another IP is still answered")

        let later = (0..<15).map { _ in send(bytes, from: flooder, to: router, at: .seconds(1)).count }.reduce(0, +)
        #expect(later == 10, "10 tokens a second")
        #expect(router.counters.bindingsAnswered == 31)
        #expect(router.counters.bindingsRateLimited == 16)
    }

    @Test func theRateTableStaysBoundedUnderAFloodOfSources() {
        var configuration = ForwardingRouter.Configuration()
        configuration.bindingSources = 4_096
        let router = ForwardingRouter(configuration: configuration)
        let bytes = STUNBinding.request().serialized()
        var answered = 0
        for index in 0..<10_000 {
            let source = SocketAddress(addressBytes: [10, UInt8(index >> 16), UInt8((index >> 8) & 0xFF), UInt8(index & 0xFF)], port: 3_000)!
            answered += send(bytes, from: source, to: router).count
            #expect(router.bindingSourceCount <= 4_096)
        }
        #expect(answered == 10_000)
        #expect(router.bindingSourceCount == 4_096)
        // The newest source keeps its bucket: 19 more of its burst, then nothing.
        let newest = SocketAddress(addressBytes: [10, 0, UInt8(9_999 >> 8), UInt8(9_999 & 0xFF)], port: 3_000)!
        let again = (0..<25).map { _ in send(bytes, from: newest, to: router).count }.reduce(0, +)
        #expect(again == 19)
    }

    @Test func malformedSTUNIsCountedAndDropped() {
        let router = ForwardingRouter()
        let good = STUNBinding.request().serialized()
        var badLength = good
        badLength[3] = 200  // Message Length past the datagram's end
        var oddLength = good
        oddLength[3] = 22  // not a multiple of 4
        var overrun = good
        overrun[23] = 60  // PADDING's length runs past the end
        var noCookie = good
        noCookie[4] = 0
        let malformed: [[UInt8]] = [
            Array(good[0..<40]),  // truncated
            [0x00], [0x01, 0x01], Array(good[0..<19]),
            badLength, oddLength, overrun, noCookie,
        ]
        for bytes in malformed {
            #expect(send(bytes, from: ipv4(3), to: router).isEmpty, "\(bytes.count) bytes")
        }
        #expect(router.counters.stunMalformed == malformed.count)
        #expect(router.counters.bindingsAnswered == 0)
        #expect(send(good, from: ipv4(3), to: router).count == 1, "a good request after them is answered")
    }

    /// A check signed for a leg's credentials is answered (ICE-lite) only when the answer
    /// fits in the check's own bytes: the shortest valid checks (a 1-character ufrag of
    /// the client, no PRIORITY) are smaller than a signed answer over IPv6.
    @Test func aSignedCheckIsNeverAnsweredWithMoreBytesThanItHad() throws {
        let router = ForwardingRouter()
        let setup = try leg(1)
        try router.addLeg(setup, now: .zero)
        let integrity = try STUNIntegrityKey.shortTerm(password: setup.ice.password)
        let ipv6 = SocketAddress(addressBytes: [0x20, 0x01, 0x0d, 0xb8] + [UInt8](repeating: 0, count: 11) + [9], port: 5_000)!
        var answered = 0
        for (source, extra) in [(ipv4(9), []), (ipv4(9), [STUNMessage.Attribute.priority(0x6E00_01FF)]), (ipv6, []),
                                (ipv6, [.priority(0x6E00_01FF)]), (ipv6, [.priority(0x6E00_01FF), .iceControlling(42)])] {
            let check = STUNMessage(type: .bindingRequest, transactionID: .random(), attributes: [.username("l1:c")] + extra)
                .serialized(integrity: integrity, fingerprint: true)
            let answers = send(check, from: source, to: router)
            for answer in answers {
                #expect(answer.bytes.count <= check.count, "a \(answer.bytes.count)-byte answer to a \(check.count)-byte check")
                answered += 1
            }
            // Signed answers: 20 + XOR-MAPPED-ADDRESS (12, or 24 over IPv6) + 24 + 8.
            let fits = check.count >= (source.isIPv6 ? 76 : 64)
            #expect(answers.count == (fits ? 1 : 0), "\(check.count)-byte check from \(source)")
        }
        #expect(answered == 2, "only the IPv4 check with PRIORITY (68 bytes) and the IPv6 one with both attributes (80) fit their answers")
    }

    func leg(_ id: UInt64) throws -> ForwardingRouter.LegSetup {
        let key = try SRTPKeyingMaterial(profile: .aeadAES128GCM, bytes: [UInt8](repeating: UInt8(id), count: 28))
        return ForwardingRouter.LegSetup(id: id, meeting: 7, account: "user\(id)", publishing: true, audioSSRC: UInt32(id) << 8, videoSSRC: nil,
                                         inboundKeying: key, outboundKeying: key,
                                         ice: ICECredentials(ufrag: "l\(id)", password: "leg-password-\(id)-0123456789ab"))
    }

    func check(_ setup: ForwardingRouter.LegSetup) throws -> [UInt8] {
        let integrity = try STUNIntegrityKey.shortTerm(password: setup.ice.password)
        return STUNMessage(type: .bindingRequest, transactionID: .random(),
                           attributes: [.username("\(setup.ice.ufrag):client"), .priority(0x6E00_01FF), .iceControlling(42)])
            .serialized(integrity: integrity, fingerprint: true)
    }

    @Test func legsBeyondTheServersMaximumAreRefusedWithATypedError() throws {
        var configuration = ForwardingRouter.Configuration()
        configuration.maximumLegs = 3
        let router = ForwardingRouter(configuration: configuration)
        for id: UInt64 in 1...3 { try router.addLeg(leg(id), now: .zero) }
        #expect {
            try router.addLeg(leg(4), now: .zero)
        } throws: { error in
            (error as? MediaCoreError)?.message.contains("maximum of 3 legs") == true
        }
        #expect(router.legCount == 3)
        #expect(router.counters.legsRefused == 1)
        router.removeLeg(2, now: .zero)
        try router.addLeg(leg(4), now: .zero)
        #expect(router.legCount == 3, "a leg that left makes room")
    }

    @Test func checksBeyondALegsRateGetNoAnswer() throws {
        let router = ForwardingRouter()
        let setup = try leg(1)
        try router.addLeg(setup, now: .zero)
        var answered = 0
        for _ in 0..<50 { answered += send(try check(setup), from: ipv4(1), to: router).count }
        #expect(answered == 20, "the leg's burst")
        #expect(router.counters.checksRateLimited == 30)
        // A second later, 20 more tokens (20 a second).
        answered = 0
        for _ in 0..<50 { answered += send(try check(setup), from: ipv4(1), to: router, at: .seconds(1)).count }
        #expect(answered == 20)
    }

    /// A client that moves between networks checks in from a new address; the leg keeps
    /// its last four, and the oldest becomes a stranger's again.
    @Test func aLegKeepsItsLastFourAddressesOnly() throws {
        let router = ForwardingRouter()
        let setup = try leg(1)
        try router.addLeg(setup, now: .zero)
        let addresses = (1...5).map { ipv4(UInt8($0)) }
        for address in addresses {
            #expect(send(try check(setup), from: address, to: router).count == 1, "the check from \(address) is answered")
        }
        #expect(router.addresses(ofLeg: 1) == Array(addresses.suffix(4)))
        #expect(router.routedAddressCount == 4, "the table holds each leg's last four addresses")
        var rtcp: [UInt8] = [0x80, 201, 0, 1, 0, 0, 1, 0]
        let strangers = router.counters.strangerDatagrams
        _ = send(rtcp, from: addresses[0], to: router)
        #expect(router.counters.strangerDatagrams == strangers + 1, "the first address is a stranger's again")
        rtcp[7] = 1
        _ = send(rtcp, from: addresses[4], to: router)
        #expect(router.counters.strangerDatagrams == strangers + 1, "the latest address belongs to the leg")
    }

    @Test func aRequestWithAnUnknownUsernameStaysAStrangers() {
        let router = ForwardingRouter()
        let request = STUNMessage(type: .bindingRequest, transactionID: .random(),
                                  attributes: [.username("stale"), .padding([UInt8](repeating: 0, count: 40))])
        #expect(send(request.serialized(), from: ipv4(4), to: router).isEmpty)
        #expect(router.counters.strangerDatagrams == 1)
        #expect(router.counters.bindingsAnswered == 0)
    }
}
