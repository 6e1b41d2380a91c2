@testable import MediaEngine
@testable import MediaSimulation
import Testing
import TestSupport

/// Whole streams through the seeded network model (`AudioNetworkSimulation`).
@Suite struct AudioJitterBufferNetworkTests {
    /// 10 % random loss, 50 ms delay with 30 ms jitter (standard deviation), seed 7.
    private static var lossyNetwork: ImpairmentSettings {
        var settings = ImpairmentSettings()
        settings.lossPercent = 10
        settings.delay = .milliseconds(50)
        settings.jitter = .milliseconds(30)
        settings.seed = 7
        return settings
    }

    private static func describe(_ report: AudioNetworkSimulation.Report) -> String {
        let statistics = report.statistics
        return "loss \(report.networkLossPercent) %, concealment \(report.concealmentPercent) %, mean delay "
            + "\(report.meanPlayoutDelay.inMilliseconds) ms (target \(report.meanTargetDelay.inMilliseconds) ms), "
            + "FEC recovered \(statistics.fecRecoveredFrames), late \(statistics.packetsDiscarded), "
            + "events \(statistics.concealmentEvents), silent concealed \(statistics.silentConcealedSamples), accelerated \(statistics.removedSamplesForAcceleration), "
            + "decelerated \(statistics.insertedSamplesForDeceleration), most held \(report.maximumPacketsHeld)"
    }

    @Test func sixtySecondsThroughTenPercentLossAndThirtyMillisecondJitter() async throws {
        try await Heavy.run {
            let report = try AudioNetworkSimulation.run(settings: Self.lossyNetwork, seconds: 60, fec: false)
            print("jitter buffer, 60 s, FEC off: \(Self.describe(report))")
            // Exactly one full frame per pull: 3000 frames, no gap.
            #expect(report.framesPulled == 3_000)
            #expect(report.statistics.totalSamplesReceived == (3_000 - report.framesBeforeStart) * 960)
            #expect(report.framesBeforeStart <= 10, "started after \(report.framesBeforeStart) frames")
            #expect(abs(report.networkLossPercent - 10) < 1.5, "network lost \(report.networkLossPercent) %")
            // Concealment is the loss, plus the few packets later than the target allows.
            #expect(abs(report.concealmentPercent - report.networkLossPercent) <= 2,
                    "concealment \(report.concealmentPercent) % vs loss \(report.networkLossPercent) %")
            #expect(report.meanPlayoutDelay <= .milliseconds(100), "mean delay \(report.meanPlayoutDelay)")
            #expect(report.maximumPacketsHeld <= AudioJitterBuffer.Configuration().maximumPackets)
            #expect(report.statistics.jitter > 0.01, "RFC 3550 jitter \(report.statistics.jitter) s")
        }
    }

    @Test func inBandFECConcealsLessOnTheSameNetwork() async throws {
        try await Heavy.run {
            let plain = try AudioNetworkSimulation.run(settings: Self.lossyNetwork, seconds: 60, fec: false)
            let protected = try AudioNetworkSimulation.run(settings: Self.lossyNetwork, seconds: 60, fec: true)
            print("jitter buffer, 60 s, FEC on: \(Self.describe(protected))")
            #expect(protected.framesPulled == 3_000)
            // Talkspurts carry LBRR; the pauses between them (about a third of the time) do not.
            #expect(protected.statistics.fecPacketsReceived > 1_500, "LBRR in \(protected.statistics.fecPacketsReceived) packets")
            #expect(protected.statistics.fecRecoveredFrames > 150, "FEC recovered \(protected.statistics.fecRecoveredFrames) frames")
            #expect(protected.concealmentPercent < plain.concealmentPercent / 2,
                    "FEC on \(protected.concealmentPercent) % vs off \(plain.concealmentPercent) %")
            // What concealment remains is mostly in the pauses, where it is silent.
            let audible = { (report: AudioNetworkSimulation.Report) in
                report.statistics.concealedSamples - report.statistics.silentConcealedSamples
            }
            #expect(audible(protected) * 3 < audible(plain), "audible concealment FEC on \(audible(protected)) vs off \(audible(plain))")
            #expect(protected.meanPlayoutDelay <= .milliseconds(100), "mean delay \(protected.meanPlayoutDelay)")
        }
    }

    @Test func cleanNetworkPlaysEverythingAtTheMinimumDelay() async throws {
        try await Heavy.run {
            var settings = ImpairmentSettings()
            settings.delay = .milliseconds(40)
            let report = try AudioNetworkSimulation.run(settings: settings, seconds: 20, fec: false)
            let statistics = report.statistics
            #expect(statistics.concealedSamples == 0)
            #expect(statistics.packetsLost == 0 && statistics.packetsDiscarded == 0)
            #expect(report.timeline.last.map { $0.targetDelay <= .milliseconds(25) } == true)
            // W3C jitterBufferDelay per sample is the time from arrival to playout: here the target.
            #expect(abs(report.meanPlayoutDelay.inMilliseconds - 20) <= 10, "mean delay \(report.meanPlayoutDelay)")
        }
    }

    @Test func badSettingsAreRefusedWithTypedErrors() async throws {
        try await Heavy.run {
            var settings = ImpairmentSettings()
            settings.lossPercent = 140
            #expect(throws: ImpairmentError.self) { try AudioNetworkSimulation.run(settings: settings, seconds: 1, fec: false) }
            #expect(throws: ImpairmentError.self) { try AudioNetworkSimulation.run(settings: ImpairmentSettings(), seconds: -1, fec: false) }
            var options = AudioNetworkSimulation.Options()
            options.jitterBuffer.maximumPackets = 1
            #expect(throws: CodecError.self) { try AudioNetworkSimulation.run(settings: ImpairmentSettings(), options: options) }
            var configuration = AudioJitterBuffer.Configuration()
            configuration.minimumTargetDelay = .milliseconds(500)
            configuration.maximumTargetDelay = .milliseconds(100)
            #expect(throws: CodecError.self) { try AudioJitterBuffer(configuration: configuration) }
        }
    }
}
