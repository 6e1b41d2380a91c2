@testable import MediaEngine
@testable import MediaSimulation
import Testing
import TestSupport

/// End to end in virtual time: real VP8 through impaired links both ways, NACK answered
/// from the sender's history, PLI answered with forced keyframes (`VideoNetworkSimulation`).
@Suite struct VideoLossRecoveryTests {
    /// A link with `delay` one way and `loss` % random loss.
    static func link(delay: Duration, loss: Double, seed: UInt64) -> ImpairmentSettings {
        var settings = ImpairmentSettings()
        settings.delay = delay
        settings.lossPercent = loss
        settings.seed = seed
        return settings
    }

    @Test func fivePercentLossAt100MillisecondsRTTIsRecoveredByNACK() async throws {
        try await Heavy.run {
            var settings = VideoNetworkSimulation.Settings(forward: Self.link(delay: .milliseconds(50), loss: 5, seed: 11),
                                                           backward: Self.link(delay: .milliseconds(50), loss: 5, seed: 12))
            settings.duration = .seconds(20)
            settings.bitrate = 800_000
            let report = try VideoNetworkSimulation.run(settings)
            print("5 % loss, 100 ms RTT:\n\(report)")
            #expect(report.packetsLost >= 60)  // enough losses to measure
            // Recovered before the frame deadline (3 RTT = 300 ms, raised to the 400 ms floor,
            // after the blocked frame's first packet arrived).
            #expect(report.recoveredRatio >= 0.95)
            #expect(report.referenceGaps == 0 && report.decodeErrors == 0)
            #expect(report.framesDecoded >= report.framesSent * 95 / 100)
            // No frame was given up: no keyframe was needed, and the longest stall is a loss
            // that needed a second NACK (about 10 % of them), well inside the deadline.
            #expect(report.keyframesRequested == 0 && report.receiver.framesGivenUp == 0)
            #expect(report.longestGap < .milliseconds(400))
            #expect(report.freezeCount <= report.packetsLost / 5)
            #expect(report.frameDelay95 <= .milliseconds(300))
            // Retransmissions stay close to the losses: no storm.
            #expect(report.retransmissionsSent <= report.packetsLost * 3 / 2)
        }
    }

    @Test func jitterReorderingDoesNotMultiplyRetransmissions() async throws {
        try await Heavy.run {
            var forward = Self.link(delay: .milliseconds(50), loss: 5, seed: 41)
            forward.jitter = .milliseconds(10)  // packets of a frame leave together, so they reorder
            var backward = Self.link(delay: .milliseconds(50), loss: 5, seed: 42)
            backward.jitter = .milliseconds(10)
            var settings = VideoNetworkSimulation.Settings(forward: forward, backward: backward)
            settings.duration = .seconds(15)
            let report = try VideoNetworkSimulation.run(settings)
            print("5 % loss, 100 ms RTT, 10 ms jitter:\n\(report)")
            #expect(report.recoveredRatio >= 0.95)
            #expect(report.referenceGaps == 0 && report.decodeErrors == 0)
            // The wait before a first request follows the observed reordering, so late
            // originals are rarely asked for: well under 2 retransmissions per loss.
            #expect(report.retransmissionsSent < report.packetsLost * 2)
            #expect(report.receiver.framesGivenUp <= 1)
        }
    }

    @Test func afterA2SecondOutageVideoDecodesAgainWithinOneSecond() async throws {
        try await Heavy.run {
            var settings = VideoNetworkSimulation.Settings(forward: Self.link(delay: .milliseconds(50), loss: 0, seed: 21),
                                                           backward: Self.link(delay: .milliseconds(50), loss: 0, seed: 22))
            settings.duration = .seconds(6)
            settings.outages = [.seconds(2) ..< .seconds(4)]
            let report = try VideoNetworkSimulation.run(settings)
            print("2 s outage:\n\(report)")
            let recovery = try #require(report.recoveryTimes.first ?? nil)
            #expect(recovery <= .seconds(1))
            #expect(report.keyframesRequested >= 1 && report.keyframesSent >= 2)
            #expect(report.referenceGaps == 0 && report.decodeErrors == 0)
            // One freeze: the outage itself.
            #expect(report.freezeCount == 1)
            #expect(report.longestGap <= .seconds(2) + recovery + .milliseconds(100))
        }
    }

    @Test func anOutageWithBackgroundLossStillRecovers() async throws {
        try await Heavy.run {
            var settings = VideoNetworkSimulation.Settings(forward: Self.link(delay: .milliseconds(50), loss: 5, seed: 31),
                                                           backward: Self.link(delay: .milliseconds(50), loss: 5, seed: 32))
            settings.duration = .seconds(8)
            settings.outages = [.seconds(3) ..< .seconds(5)]
            let report = try VideoNetworkSimulation.run(settings)
            print("2 s outage in 5 % loss:\n\(report)")
            let recovery = try #require(report.recoveryTimes.first ?? nil)
            #expect(recovery <= .seconds(1))
            #expect(report.referenceGaps == 0 && report.decodeErrors == 0)
        }
    }

    @Test func aCleanNetworkNeedsNoFeedback() async throws {
        try await Heavy.run {
            let clean = Self.link(delay: .milliseconds(20), loss: 0, seed: 1)
            let report = try VideoNetworkSimulation.run(forward: clean, backward: clean, seconds: 3, bitrate: 500_000)
            #expect(report.packetsLost == 0 && report.nacksSent == 0 && report.keyframesRequested == 0)
            #expect(report.framesDecoded == report.framesSent)
            #expect(report.freezeCount == 0)
            #expect(report.keyframesSent == 1)
        }
    }

    @Test func theSameSettingsGiveTheSameReport() async throws {
        try await Heavy.run {
            var settings = VideoNetworkSimulation.Settings(forward: Self.link(delay: .milliseconds(30), loss: 8, seed: 5),
                                                           backward: Self.link(delay: .milliseconds(30), loss: 8, seed: 6))
            settings.duration = .seconds(3)
            let first = try VideoNetworkSimulation.run(settings)
            #expect(try first == VideoNetworkSimulation.run(settings))
        }
    }
}
