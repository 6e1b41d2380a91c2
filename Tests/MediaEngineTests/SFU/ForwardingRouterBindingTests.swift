import TestSupport
import Testing
@testable import MediaEngine

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

    @Test func aRequestWithAnUnknownUsernameStaysAStrangers() {
        let router = ForwardingRouter()
        let request = STUNMessage(type: .bindingRequest, transactionID: .random(),
                                  attributes: [.username("stale"), .padding([UInt8](repeating: 0, count: 40))])
        #expect(send(request.serialized(), from: ipv4(4), to: router).isEmpty)
        #expect(router.counters.strangerDatagrams == 1)
        #expect(router.counters.bindingsAnswered == 0)
    }
}
