@testable import MediaEngine
@testable import MediaSimulation
import Testing
import TestSupport

/// The target and playout delays follow the network: up in a jitter spike, back down in
/// calm, and steady against sender clock drift.
@Suite struct AudioJitterBufferDelayTests {
    private static func network(jitter: Duration, seed: UInt64 = 3) -> ImpairmentSettings {
        var settings = ImpairmentSettings()
        settings.delay = .milliseconds(60)
        settings.jitter = jitter
        settings.seed = seed
        return settings
    }

    /// Mean playout delay between two timeline points (W3C jitterBufferDelay difference).
    private static func meanDelay(_ report: AudioNetworkSimulation.Report, from start: Int, to end: Int) -> Duration {
        let first = report.timeline[start - 1].statistics
        let last = report.timeline[end - 1].statistics
        let samples = last.jitterBufferEmittedCount - first.jitterBufferEmittedCount
        return .seconds((last.jitterBufferDelay - first.jitterBufferDelay) / Double(max(1, samples)))
    }

    @Test func delayRisesInAJitterSpikeAndComesBackDownInCalm() async throws {
        try await Heavy.run {
            var options = AudioNetworkSimulation.Options()
            options.seconds = 75
            // 20 s at 5 ms jitter, 10 s at 60 ms, then 45 s at 5 ms again.
            options.networkChanges = [
                .init(at: .seconds(20), settings: Self.network(jitter: .milliseconds(60), seed: 4)),
                .init(at: .seconds(30), settings: Self.network(jitter: .milliseconds(5), seed: 5)),
            ]
            let report = try AudioNetworkSimulation.run(settings: Self.network(jitter: .milliseconds(5)), options: options)
            let calm = report.timeline[19].targetDelay
            let spike = report.timeline[29].targetDelay
            let after = report.timeline[74].targetDelay
            let calmDelay = Self.meanDelay(report, from: 10, to: 20)
            let spikeDelay = Self.meanDelay(report, from: 25, to: 30)
            let afterDelay = Self.meanDelay(report, from: 65, to: 75)
            print("jitter spike: target \(calm.inMilliseconds) -> \(spike.inMilliseconds) -> \(after.inMilliseconds) ms, "
                  + "mean delay \(calmDelay.inMilliseconds) -> \(spikeDelay.inMilliseconds) -> \(afterDelay.inMilliseconds) ms, "
                  + "concealment \(report.concealmentPercent) %")
            #expect(spike > calm + .milliseconds(60), "target \(calm) in calm, \(spike) in the spike")
            #expect(spikeDelay > calmDelay + .milliseconds(50))
            // Back down: within 15 ms of where it was before the spike.
            #expect(after < calm + .milliseconds(15), "target \(after) after calm, \(calm) before")
            #expect(afterDelay < calmDelay + .milliseconds(15), "delay \(afterDelay) after calm, \(calmDelay) before")
            #expect(report.framesPulled == 3_750)
        }
    }

    @Test(arguments: [0.005, -0.005])
    func clockDriftKeepsTheDelayNearTheTarget(skew: Double) async throws {
        try await Heavy.run {
            var options = AudioNetworkSimulation.Options()
            options.seconds = 60
            options.senderClockSkew = skew
            let report = try AudioNetworkSimulation.run(settings: Self.network(jitter: .milliseconds(10)), options: options)
            let statistics = report.statistics
            let stretched = skew > 0 ? statistics.removedSamplesForAcceleration - statistics.insertedSamplesForDeceleration
                : statistics.insertedSamplesForDeceleration - statistics.removedSamplesForAcceleration
            // 0.5 % of 60 s is 300 ms: 14 400 samples to drop (fast sender) or add (slow sender).
            print("clock skew \(skew): net stretch \(stretched) samples, mean delay \(report.meanPlayoutDelay.inMilliseconds) ms, "
                  + "target \(report.meanTargetDelay.inMilliseconds) ms, most held \(report.maximumPacketsHeld), "
                  + "concealment \(report.concealmentPercent) %")
            #expect((10_000...19_000).contains(stretched), "net stretch \(stretched) samples")
            for point in report.timeline.dropFirst(5) {
                let offset = abs(point.currentDelay.inMilliseconds - point.targetDelay.inMilliseconds)
                #expect(offset <= 40, "at \(point.time): delay \(point.currentDelay), target \(point.targetDelay)")
            }
            #expect(abs(Self.meanDelay(report, from: 40, to: 60).inMilliseconds - report.meanTargetDelay.inMilliseconds) <= 20)
            #expect(report.maximumPacketsHeld <= 10)
            #expect(report.concealmentPercent < 1)
            #expect(report.framesPulled == 3_000)
        }
    }

    @Test func fastSenderOfAContinuousToneStaysBounded() async throws {
        try await Heavy.run {
            // Never quiet, so only the forced (cross-faded) drops keep the delay in check.
            var options = AudioNetworkSimulation.Options()
            options.seconds = 60
            options.signal = .tones
            options.senderClockSkew = 0.005
            let report = try AudioNetworkSimulation.run(settings: Self.network(jitter: .milliseconds(10)), options: options)
            let statistics = report.statistics
            print("continuous tone, sender 0.5 % fast: dropped \(statistics.removedSamplesForAcceleration) samples, "
                  + "most held \(report.maximumPacketsHeld), final delay \(report.timeline.last?.currentDelay.inMilliseconds ?? 0) ms")
            #expect(report.maximumPacketsHeld <= 12)
            #expect(statistics.removedSamplesForAcceleration >= 10_000)
            let last = try #require(report.timeline.last)
            #expect(last.currentDelay < last.targetDelay + .milliseconds(100))
        }
    }
}
