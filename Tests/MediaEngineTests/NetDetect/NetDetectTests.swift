import Foundation
@testable import MediaEngine
@testable import MediaRouting
@testable import MediaSimulation
import Testing
import TestSupport

@Suite struct NetDetectQuality {
    @Test(arguments: [(3.0, 500.0, 50.0, 0.2625, NetQuality.veryGood), (10, 800, 80, 0.55, .good), (20, 1_200, 150, 1, .poor),
                      (0, 0, 0, 0, .veryGood), (40, 1_200, 150, 1.5, .veryPoor)])
    func nimReferencePointsComputeExactly(loss: Double, rtt: Double, mdev: Double, index: Double, quality: NetQuality) {
        let computed = NetQuality.index(lossRate: loss, rttAverage: rtt, rttMeanDeviation: mdev)
        #expect(computed == index, "exactly, so the class boundaries hold: \(computed)")
        #expect(NetQuality(index: computed) == quality)
    }
}

@Suite struct NetDetectMeasurements {
    let target = try! SocketAddress(host: "127.0.0.1", port: 4_000)

    func reply(_ token: UInt64, _ sequence: UInt32, _ sendTime: UInt64, size: Int = 100) -> [UInt8] {
        ProbePacket(kind: .reply, token: token, sequence: sequence, sendTime: sendTime).serialized(size: size)
    }

    @Test func duplicatesReorderingForgeriesAndStrangersAreCountedNotDoubleCounted() throws {
        var measurement = NetDetectMeasurement(token: 7, target: target, count: 5)
        for sequence in 0..<5 { measurement.sent(sequence, at: UInt64(sequence) * 20_000_000) }
        func deliver(_ bytes: [UInt8], from source: SocketAddress? = nil, at time: UInt64) {
            bytes.withUnsafeBytes { measurement.received($0, from: source ?? target, at: time) }
        }
        deliver(reply(7, 1, 20_000_000), at: 70_000_000)      // 50 ms
        deliver(reply(7, 0, 0), at: 60_000_000)               // 60 ms, reordered
        deliver(reply(7, 0, 0), at: 61_000_000)               // duplicate
        deliver(reply(8, 2, 40_000_000), at: 90_000_000)      // another task's token
        deliver(reply(7, 2, 41_000_000), at: 90_000_000)      // a send time we never used
        deliver(reply(7, 3, 60_000_000), from: try SocketAddress(host: "127.0.0.2", port: 4_000), at: 100_000_000)
        deliver([0x80, 0x60, 0, 1], at: 100_000_000)          // RTP, not a probe
        deliver(ProbePacket(kind: .request, token: 7, sequence: 3, sendTime: 60_000_000).serialized(), at: 100_000_000)
        deliver(reply(7, 3, 60_000_000), at: 130_000_000)     // 70 ms
        let result = measurement.result(taskId: 1)
        #expect(result.expandInfo.sent == 5 && result.expandInfo.received == 3)
        #expect(result.expandInfo.duplicated == 1 && result.expandInfo.reordered == 1)
        #expect(result.expandInfo.forged == 2 && result.expandInfo.foreign == 1 && result.expandInfo.malformed == 2)
        #expect(result.lossRate == 40)
        #expect(result.rttMinimal == 50 && result.rttMaximal == 70 && result.rttAverage == 60)
        // ping's mdev of 50, 60, 70: sqrt(mean of squares - square of mean) = sqrt(66.67).
        #expect(abs(result.rttMeanDeviation - (200.0 / 3).squareRoot()) < 1e-9)
        #expect(result.rtts.map { $0 ?? -1 } == [60, 50, -1, 70, -1])
    }

    @Test func theEchoAnswersOnlyWellFormedRequestsAndLimitsEachSource() throws {
        var decider = EchoDecider(policy: { var policy = EchoPolicy(); policy.rate = 10; policy.burst = 5; policy.maximumSources = 2; return policy }())
        let request = ProbePacket(kind: .request, token: 1, sequence: 0, sendTime: 0).serialized(size: 200)
        let a = try SocketAddress(host: "127.0.0.1", port: 1)
        func ask(_ bytes: [UInt8], from source: SocketAddress, at now: Duration) -> Bool {
            bytes.withUnsafeBytes { decider.shouldAnswer($0, from: source, now: now) }
        }
        #expect(!ask([0x80, 0x60] + [UInt8](repeating: 0, count: 30), from: a, at: .zero), "not a probe")
        #expect(!ask(ProbePacket(kind: .reply, token: 1, sequence: 0, sendTime: 0).serialized(), from: a, at: .zero), "replies are not reflected")
        #expect(!ask(Array(request.prefix(20)), from: a, at: .zero), "cut short")
        let burst = (0..<8).filter { _ in ask(request, from: a, at: .seconds(1)) }.count
        #expect(burst == 5, "a burst of 5, then the rate")
        #expect(ask(request, from: a, at: .milliseconds(1_100)), "10 a second refill")
        #expect(ask(request, from: try SocketAddress(host: "127.0.0.1", port: 2), at: .seconds(1)))
        #expect(!ask(request, from: try SocketAddress(host: "127.0.0.1", port: 3), at: .seconds(1)), "the table is full of live sources")
        #expect(ask(request, from: try SocketAddress(host: "127.0.0.1", port: 3), at: .seconds(30)), "idle sources are evicted")
        #expect(decider.counters.malformed == 3 && decider.counters.rateLimited == 3 && decider.counters.tableFull == 1)
        var reply = request
        reply.withUnsafeMutableBytes { ProbePacket.markAsReply($0) }
        #expect(reply.count == request.count, "a reply is never larger than its request")
        let kind = try reply.withUnsafeBytes { (bytes) throws(PacketError) in try ProbePacket(parsing: bytes).kind }
        #expect(kind == .reply)
    }
}

/// Net-detect over real sockets, through the impairment proxy.
@Suite(.serialized) struct NetDetectThroughTheProxy {
    /// A real-time run of a few seconds that blocks in its socket: in `Heavy.run`, so it never
    /// holds one of Swift's cooperative threads (on two cores, holding one for 20 s stalled
    /// every other test's start, and a signaling client's connect timed out behind it).
    @Test(arguments: [0.0, 10, 30])
    func lossAndRoundTripMatchTheProxySettings(loss: Double) async throws {
        try await Heavy.run {
            let echo = try EchoResponder(bindTo: SocketAddress(host: "127.0.0.1", port: 0))
            try echo.start()
            defer { echo.stop() }
            var settings = ImpairmentSettings()
            settings.lossPercent = loss
            settings.delay = .milliseconds(50)
            settings.jitter = .milliseconds(20)
            settings.seed = 42
            let proxy = try UDPImpairmentProxy(listen: SocketAddress(host: "127.0.0.1", port: 0), forward: echo.localAddress, settings: settings)
            try proxy.start()
            defer { proxy.stop() }
            let result = NetDetectRunner.run(taskId: 1, target: proxy.localAddress.description,
                                             options: .init(kind: .audio, count: 1_000, interval: .milliseconds(2)))
            // Loss and delay apply on the way out and on the way back.
            let expectedLoss = (1 - (1 - loss / 100) * (1 - loss / 100)) * 100
            let measuredProxyLoss = (1 - (1 - proxy.statistics.upstream.lossPercent / 100) * (1 - proxy.statistics.downstream.lossPercent / 100)) * 100
            print("net-detect through \(loss) % each way, 50 +- 20 ms: loss \(result.lossRate) % (expected \(expectedLoss)), rtt avg \(result.rttAverage) min \(result.rttMinimal) max \(result.rttMaximal) mdev \(result.rttMeanDeviation), index \(result.qualityIndex) \(result.quality)")
            #expect(result.error == nil, "\(result.error?.message ?? "")")
            #expect(abs(result.lossRate - expectedLoss) <= 2, "loss \(result.lossRate) %, the path's \(expectedLoss) %")
            #expect(abs(result.lossRate - measuredProxyLoss) <= 2, "against what the proxy did: \(measuredProxyLoss) %")
            #expect(abs(result.rttAverage - 100) <= 10, "rtt \(result.rttAverage) ms for 2 x 50 ms")
            // Two independent normal delays of sd 20 ms: the RTT's sd is 28 ms; mdev is that sd.
            #expect(abs(result.rttMeanDeviation - 20 * 2.0.squareRoot()) <= 20 * 2.0.squareRoot() * 0.15, "mdev \(result.rttMeanDeviation)")
            #expect(result.expandInfo.sent == 1_000 && result.expandInfo.duplicated == 0 && result.expandInfo.forged == 0)
            #expect(result.expandInfo.reordered > 0, "50 +- 20 ms at 2 ms spacing reorders")
        }
    }

    @Test func badTargetsFailInBoundedTime() async throws {
        try await Heavy.run {
            let quiet = try UDPSocket(bindTo: SocketAddress(host: "127.0.0.1", port: 0))
            defer { quiet.close() }
            var started = ContinuousClock.now
            let silent = NetDetectRunner.run(taskId: 1, target: quiet.localAddress.description, options: .init(count: 5, interval: .milliseconds(10)))
            #expect(silent.error?.code == .noReply)
            #expect(ContinuousClock.now - started < .seconds(3))

            let unresolvable = NetDetectRunner.run(taskId: 2, target: "no-such-host.invalid:5000", options: .init(count: 5))
            #expect(unresolvable.error?.code == .unresolvable && unresolvable.error?.message.contains("no-such-host.invalid") == true)
            #expect(NetDetectRunner.run(taskId: 3, target: "127.0.0.1:9", options: .init(count: 0)).error?.code == .invalidOptions)
            #expect(NetDetectRunner.run(taskId: 4, target: "127.0.0.1:9", options: .init(count: 5, interval: .milliseconds(-5))).error?.code == .invalidOptions)

            // Something that answers, but not with probe replies: a plain UDP echo.
            let impostor = try UDPResponder.echo()
            defer { impostor.stop() }
            started = ContinuousClock.now
            let fake = NetDetectRunner.run(taskId: 5, target: impostor.localAddress.description, options: .init(count: 5, interval: .milliseconds(10)))
            #expect(fake.error?.code == .notAnEchoResponder, "\(fake.error?.message ?? "no error")")
            #expect(fake.expandInfo.malformed == 5, "the reflected requests are counted, not taken as replies")
            #expect(ContinuousClock.now - started < .seconds(3))
        }
    }

    @Test func aStoppedTaskEndsWithAStoppedError() async throws {
        try await Heavy.run {
            let echo = try EchoResponder(bindTo: SocketAddress(host: "127.0.0.1", port: 0))
            try echo.start()
            defer { echo.stop() }
            var polls = 0
            let result = NetDetectRunner.run(taskId: 9, target: echo.localAddress.description, options: .init(count: 1_000, interval: .milliseconds(5)),
                                             stop: { polls += 1; return polls > 200 })
            #expect(result.error?.code == .stopped)
            #expect(result.expandInfo.sent < 1_000)
        }
    }
}
