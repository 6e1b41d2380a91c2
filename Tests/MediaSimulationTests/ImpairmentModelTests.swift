@testable import MediaEngine
@testable import MediaSimulation
import Testing

/// What a model did to a stream fed on a virtual clock: no sockets, no sleeps.
private struct ModelRun {
    var sent: [Duration] = []
    var fates: [ImpairmentModel.Fate] = []
    var statistics = ImpairmentModel.Statistics()

    /// Arrival times of the first copies, in the order the packets were sent (nil: dropped).
    var arrivals: [Duration?] {
        fates.map { if case .delivered(let at, _) = $0 { at } else { nil } }
    }
}

/// Feeds `packets` packets of `size` bytes, one every `spacing`, starting at zero: by
/// default 10,000 packets of 200 bytes every 20 ms, a 50 packet/s audio stream.
private func run(_ settings: ImpairmentSettings, packets: Int = 10_000, size: Int = 200,
                 spacing: Duration = .milliseconds(20)) throws -> ModelRun {
    var model = try ImpairmentModel(settings: settings)
    var result = ModelRun()
    for index in 0..<packets {
        let now = spacing * index
        result.sent.append(now)
        result.fates.append(model.process(size: size, now: now))
    }
    result.statistics = model.statistics
    return result
}

private func settings(_ change: (inout ImpairmentSettings) -> Void) -> ImpairmentSettings {
    var settings = ImpairmentSettings()
    change(&settings)
    return settings
}

/// Mean length of the runs of consecutive lost packets.
private func meanBurstLength(_ fates: [ImpairmentModel.Fate]) -> Double {
    var bursts = 0
    var lost = 0
    var previousLost = false
    for fate in fates {
        let isLost = fate == .lost
        if isLost {
            lost += 1
            if !previousLost { bursts += 1 }
        }
        previousLost = isLost
    }
    return bursts == 0 ? 0 : Double(lost) / Double(bursts)
}

@Suite struct ImpairmentModels {
    @Test func lossDelayAndJitterMatchTheSettings() throws {
        let result = try run(settings {
            $0.lossPercent = 10
            $0.delay = .milliseconds(50)
            $0.jitter = .milliseconds(20)
            $0.seed = 42
        })
        let statistics = result.statistics
        #expect(statistics.packets == 10_000)
        #expect(statistics.lost + statistics.delivered == 10_000)
        #expect((9...11).contains(statistics.lossPercent), "loss \(statistics.lossPercent) % for 10 %")
        let mean = statistics.meanDelay / .milliseconds(1)
        #expect((45...55).contains(mean), "mean delay \(mean) ms for 50 ms")
        let deviation = statistics.delayDeviation * 1_000
        #expect((18...22).contains(deviation), "delay deviation \(deviation) ms for 20 ms of jitter")
        let median = statistics.delayPercentile(0.5) / .milliseconds(1)
        #expect((45...55).contains(median), "median delay \(median) ms")
        // A normal 20 ms wide puts 98 % of delays below mean + 2.05 sigma = 91 ms.
        let p98 = statistics.delayPercentile(0.98) / .milliseconds(1)
        #expect((82...100).contains(p98), "98th percentile \(p98) ms")
        #expect(statistics.duplicated == 0 && statistics.reordered == 0 && statistics.queueDropped == 0)
    }

    @Test func lossWithoutBurstsIsIndependent() throws {
        let result = try run(settings { $0.lossPercent = 10 })
        #expect((9...11).contains(result.statistics.lossPercent))
        // Independent 10 % loss: runs last 1 / 0.9 = 1.11 packets on average.
        let burst = meanBurstLength(result.fates)
        #expect((1.05...1.2).contains(burst), "mean run of losses \(burst)")
    }

    @Test func burstLossHasTheMeanBurstLengthAndTheOverallLoss() throws {
        let result = try run(settings {
            $0.lossPercent = 10
            $0.burstLength = 4
            $0.seed = 7
        })
        let loss = result.statistics.lossPercent
        #expect((9...11).contains(loss), "loss \(loss) % for 10 % in bursts of 4")
        let burst = meanBurstLength(result.fates)
        #expect((3.6...4.4).contains(burst), "mean burst \(burst) packets for 4")
    }

    /// Regression: with bursts of N, the model could not lose more than N/(N+1) of the
    /// packets (loss 100 % in bursts of 5 lost 82.6 %, loss 90 % in bursts of 2 lost 65.7 %).
    @Test(arguments: [(100.0, 5.0), (90.0, 2.0), (75.0, 2.0)])
    func lossAboveWhatBurstsOfNAllowStillReachesTheSetting(loss: Double, burst: Double) throws {
        let result = try run(settings {
            $0.lossPercent = loss
            $0.burstLength = burst
        })
        let measured = result.statistics.lossPercent
        #expect(abs(measured - loss) <= loss * 0.05, "loss \(measured) % for \(loss) % in bursts of \(burst)")
        if loss < 100 { #expect(meanBurstLength(result.fates) >= burst) }
    }

    @Test func duplicateAndReorderSharesMatchTheSettings() throws {
        let result = try run(settings {
            $0.delay = .milliseconds(50)
            $0.duplicatePercent = 20
            $0.reorderPercent = 25
            $0.seed = 3
        })
        let statistics = result.statistics
        #expect(statistics.delivered == 10_000 && statistics.lost == 0)
        let duplicated = Double(statistics.duplicated) * 100 / Double(statistics.delivered)
        #expect((18...22).contains(duplicated), "duplicated \(duplicated) % for 20 %")
        // Every copy, original or duplicate, is reordered (sent at once) on its own.
        let reordered = Double(statistics.reordered) * 100 / Double(statistics.delivered + statistics.duplicated)
        #expect((22.5...27.5).contains(reordered), "reordered \(reordered) % for 25 %")
        var immediate = 0
        var copiesApart = 0
        for (sent, fate) in zip(result.sent, result.fates) {
            guard case .delivered(let at, let copy) = fate else { continue }
            #expect(at == sent || at == sent + .milliseconds(50))
            if at == sent { immediate += 1 }
            if let copy, copy != at { copiesApart += 1 }
        }
        let immediateShare = Double(immediate) * 100 / Double(statistics.delivered)
        #expect((22.5...27.5).contains(immediateShare), "\(immediateShare) % of originals skipped the delay")
        #expect(copiesApart > 0, "a copy gets its own delay")
    }

    @Test func rateCapHoldsThroughputAndBoundsTheQueueingDelay() throws {
        // 1,250-byte packets every 10 ms: 1,000 kb/s into a 500 kb/s link.
        let size = 1_250
        let result = try run(settings {
            $0.rateKbps = 500
            $0.queueLimit = .milliseconds(300)
        }, size: size, spacing: .milliseconds(10))
        let statistics = result.statistics
        #expect(statistics.queueDropped > 0 && statistics.lost == 0)
        #expect(statistics.delivered + statistics.queueDropped == 10_000)
        let delivered = result.arrivals.compactMap { $0 }
        let span = try #require(delivered.max()) - result.sent[0]
        let throughput = Double(delivered.count * size * 8) / (span / .seconds(1)) / 1_000
        #expect((450...550).contains(throughput), "delivered \(throughput) kb/s through a 500 kb/s cap")
        // About half is dropped, and no packet waits longer than the queue limit plus its own
        // 20 ms on the wire.
        #expect((4_500...5_500).contains(statistics.queueDropped), "\(statistics.queueDropped) queue drops")
        let longest = statistics.delays.max() ?? .zero
        #expect(longest <= .milliseconds(320), "longest delay \(longest)")
        #expect(statistics.delays.min() == .milliseconds(20), "a packet takes 20 ms on the wire")
    }

    @Test func trafficUnderTheRateCapIsNotQueued() throws {
        // 1,250-byte packets every 40 ms: 250 kb/s into a 500 kb/s link.
        let result = try run(settings { $0.rateKbps = 500 }, size: 1_250, spacing: .milliseconds(40))
        #expect(result.statistics.queueDropped == 0)
        #expect(result.statistics.delays.allSatisfy { $0 == .milliseconds(20) })
    }

    @Test func theSameSeedRepeatsTheRunAndAnotherSeedDoesNot() throws {
        let busy = settings {
            $0.lossPercent = 5
            $0.burstLength = 2
            $0.delay = .milliseconds(40)
            $0.jitter = .milliseconds(10)
            $0.reorderPercent = 5
            $0.duplicatePercent = 5
            $0.rateKbps = 100
            $0.seed = 11
        }
        let first = try run(busy)
        let again = try run(busy)
        #expect(first.fates == again.fates)
        #expect(first.statistics == again.statistics)
        var reseeded = busy
        reseeded.seed = 12
        let other = try run(reseeded)
        let differing = zip(first.fates, other.fates).filter { $0 != $1 }.count
        #expect(differing > 5_000, "only \(differing) of 10,000 fates differ with another seed")
    }

    @Test func jitterWiderThanThePacketSpacingReordersPackets() throws {
        func outOfOrder(_ jitter: Duration) throws -> Int {
            let arrivals = try run(settings {
                $0.delay = .milliseconds(50)
                $0.jitter = jitter
            }).arrivals.compactMap { $0 }
            var latest = Duration.zero
            var count = 0
            for arrival in arrivals {
                if arrival < latest { count += 1 }
                latest = max(latest, arrival)
            }
            return count
        }
        // Two packets 20 ms apart swap when their jitters differ by more than 20 ms.
        let reordered = try outOfOrder(.milliseconds(30))
        #expect(reordered > 1_000, "\(reordered) of 10,000 packets arrived after a later one")
        #expect(try outOfOrder(.zero) == 0)
    }

    @Test(arguments: [
        (settings { $0.lossPercent = 120 }, "loss 120.0 % is outside 0...100"),
        (settings { $0.reorderPercent = -1 }, "reorder -1.0 % is outside 0...100"),
        (settings { $0.duplicatePercent = .nan }, "duplicate nan %"),
        (settings { $0.burstLength = 2_000 }, "burst length 2000.0 is outside 0...1000"),
        (settings { $0.delay = .milliseconds(-5) }, "delay and jitter must be between 0 and 60 s"),
        (settings { $0.jitter = .seconds(61) }, "delay and jitter must be between 0 and 60 s"),
        (settings { $0.rateKbps = 0 }, "rate 0 kb/s is outside 1...10000000"),
        (settings { $0.queueLimit = .zero }, "queue limit must be positive"),
    ])
    func settingsOutOfRangeAreRefusedNamingThem(settings: ImpairmentSettings, message: String) {
        let error = #expect(throws: ImpairmentError.self) { try ImpairmentModel(settings: settings) }
        #expect(error?.message.contains(message) == true, "\(String(describing: error))")
    }
}
