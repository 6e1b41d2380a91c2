import Testing
@testable import MediaEngine

extension BandwidthTests {
    @Suite struct SendSideBandwidthEstimatorTests {
        static func estimator(start: Int = 500_000, minimum: Int = 30_000, maximum: Int = 5_000_000) -> SendSideBandwidthEstimator {
            SendSideBandwidthEstimator(configuration: .init(startBitrate: start, minimumBitrate: minimum, maximumBitrate: maximum))
        }

        static func feedback(base: UInt16, _ deltas: [Int16?], reference: Int32 = 100) -> TransportFeedback {
            TransportFeedback(senderSSRC: 1, mediaSSRC: 2, baseSequenceNumber: base, referenceTime: reference,
                              feedbackPacketCount: 0, packetDeltas: deltas)
        }

        /// Sends one 1200-byte packet every `spacing` for `duration`; `arrival` gives each
        /// packet's arrival on the receiver's clock, which runs `receiverOffset` ahead of the
        /// sender's (nil: lost). Feedback every 50 ms comes back 20 ms later. Time advances
        /// in 1 ms steps; arrivals keep their exact values.
        static func drive(
            _ estimator: inout SendSideBandwidthEstimator, for duration: Duration, spacing: Duration = .milliseconds(5),
            receiverOffset: Duration = .zero, arrival: (_ send: Duration) -> Duration?
        ) {
            var generator = TransportFeedbackGenerator(configuration: .init(senderSSRC: 1))
            var inFlight: [(arrival: Duration, sequence: UInt16)] = []
            var returning: [(at: Duration, feedback: TransportFeedback)] = []
            var index = 0
            var now = Duration.zero
            while now <= duration {
                while spacing * index <= now {
                    let sequence = UInt16(truncatingIfNeeded: index)
                    estimator.packetSent(transportSequenceNumber: sequence, size: 1_200, now: now)
                    if let at = arrival(spacing * index) { inFlight.append((at, sequence)) }
                    index += 1
                }
                inFlight.sort { $0.arrival < $1.arrival }
                while let first = inFlight.first, first.arrival <= now + receiverOffset {
                    generator.packetReceived(transportSequenceNumber: first.sequence, now: first.arrival)
                    inFlight.removeFirst()
                }
                for packet in generator.feedback(now: now + receiverOffset) { returning.append((now + .milliseconds(20), packet)) }
                while let first = returning.first, first.at <= now {
                    estimator.handle(first.feedback, now: now)
                    returning.removeFirst()
                }
                now += .milliseconds(1)
            }
        }

        @Test func feedbackAboutUnknownOrExpiredPacketsIsIgnored() {
            var estimator = Self.estimator()
            for index in 0..<10 { estimator.packetSent(transportSequenceNumber: UInt16(index), size: 1_000, now: .milliseconds(index)) }
            estimator.handle(Self.feedback(base: 1_000, Array(repeating: 4, count: 10)), now: .milliseconds(100))
            #expect(estimator.statistics.unknownReports == 10)
            #expect(estimator.statistics.packetsReceived == 0)
            // 10 s after sending, the packets have expired.
            estimator.handle(Self.feedback(base: 0, Array(repeating: 4, count: 10)), now: .seconds(11))
            #expect(estimator.statistics.unknownReports == 20)
            #expect(estimator.statistics.packetsReceived == 0)
            #expect(estimator.acknowledgedBitrate == nil)
            #expect(estimator.targetBitrate == 500_000)
        }

        @Test func aPacketReportedTwiceCountsOnce() {
            var estimator = Self.estimator()
            for index in 0..<40 { estimator.packetSent(transportSequenceNumber: UInt16(index), size: 1_000, now: .milliseconds(5 * index)) }
            let feedback = Self.feedback(base: 0, Array(repeating: 20, count: 40))
            estimator.handle(feedback, now: .milliseconds(250))
            let acknowledged = estimator.acknowledgedBitrate
            #expect(acknowledged == 1_600_000)  // 39 packets after the first over 39 × 5 ms of arrivals
            estimator.handle(feedback, now: .milliseconds(250))
            #expect(estimator.statistics.packetsReceived == 40)
            #expect(estimator.statistics.duplicateReports == 40)
            #expect(estimator.acknowledgedBitrate == acknowledged)
        }

        @Test func feedbackOutOfOrderIsStillCountedOnce() {
            var estimator = Self.estimator()
            for index in 0..<20 { estimator.packetSent(transportSequenceNumber: UInt16(index), size: 1_000, now: .milliseconds(5 * index)) }
            let later = Self.feedback(base: 10, Array(repeating: 20, count: 10), reference: 101)
            let earlier = Self.feedback(base: 0, Array(repeating: 20, count: 10), reference: 100)
            estimator.handle(later, now: .milliseconds(150))
            estimator.handle(earlier, now: .milliseconds(151))
            #expect(estimator.statistics.packetsReceived == 20)
            #expect(estimator.statistics.duplicateReports == 0)
            #expect(estimator.usage == .normal)
        }

        @Test func aPacketReportedLostThenReceivedIsNotLost() {
            var estimator = Self.estimator()
            for index in 0..<3 { estimator.packetSent(transportSequenceNumber: UInt16(index), size: 1_000, now: .milliseconds(index)) }
            estimator.handle(Self.feedback(base: 0, [4, nil, 4]), now: .milliseconds(60))
            #expect(estimator.statistics.packetsLost == 1)
            estimator.handle(Self.feedback(base: 1, [40]), now: .milliseconds(110))
            #expect(estimator.statistics.packetsLost == 0)
            #expect(estimator.statistics.lateArrivals == 1)
            #expect(estimator.statistics.packetsReceived == 3)
            // Saying it is lost again changes nothing.
            estimator.handle(Self.feedback(base: 1, [nil]), now: .milliseconds(120))
            #expect(estimator.statistics.packetsLost == 0)
            #expect(estimator.statistics.duplicateReports == 1)
        }

        @Test func hugeGapsAndAFullRingStayBounded() {
            var estimator = Self.estimator()
            for index in 0..<20_000 {
                estimator.packetSent(transportSequenceNumber: UInt16(truncatingIfNeeded: index), size: 1_000, now: .microseconds(100 * index))
            }
            // 65535 statuses, nearly all about sequence numbers never sent.
            let huge = Self.feedback(base: UInt16(truncatingIfNeeded: 20_000), Array(repeating: nil, count: 65_534) + [4])
            estimator.handle(huge, now: .seconds(2))
            // Of 65535 statuses, the 8191 about packets 11808...19998 are in the ring.
            #expect(estimator.statistics.unknownReports == 65_535 - 8_191)
            #expect(estimator.statistics.packetsLost == 8_190)
            #expect(estimator.statistics.packetsReceived == 1)
            let before = estimator.statistics
            // The ring holds the newest 8192: packet 0 is gone, packet 19990 is there.
            estimator.handle(Self.feedback(base: 0, [4]), now: .seconds(2))
            estimator.handle(Self.feedback(base: UInt16(truncatingIfNeeded: 19_990), [4]), now: .seconds(2))
            #expect(estimator.statistics.unknownReports == before.unknownReports + 1)
            #expect(estimator.statistics.packetsReceived == before.packetsReceived + 1)
        }

        @Test func aGrowingQueueIsDetectedAndTheRateCutToTheAcknowledgedRate() {
            var estimator = Self.estimator(start: 2_000_000)
            // Sent every 5 ms (1.92 Mb/s) into a 10 ms-per-packet link (960 kb/s).
            var linkFree = Duration.zero
            Self.drive(&estimator, for: .seconds(2)) { send in
                linkFree = max(linkFree, send) + .milliseconds(10)
                return linkFree + .milliseconds(20)
            }
            #expect(estimator.statistics.overuseDecreases >= 1)
            #expect(estimator.usage == .overusing)
            let acknowledged = Double(estimator.acknowledgedBitrate ?? 0)
            #expect(abs(acknowledged - 960_000) < 30_000, "acknowledged \(acknowledged)")
            #expect((760_000...860_000).contains(estimator.delayBasedBitrate), "delay-based \(estimator.delayBasedBitrate)")
            #expect(estimator.targetBitrate == estimator.delayBasedBitrate)
        }

        @Test func aSteadyDelayLetsTheRateGrow() {
            var estimator = Self.estimator(start: 1_000_000)
            var random = SeededRandom(seed: 3)
            Self.drive(&estimator, for: .seconds(3)) { send in
                send + .milliseconds(20) + .microseconds(Int(random.unit() * 1_000))
            }
            #expect(estimator.statistics.overuseDecreases == 0)
            #expect(estimator.usage == .normal)
            // 8 %/s multiplicative (delay) and 5 %/s (loss) from 1 Mb/s over about 3 s.
            #expect((1_120_000...1_300_000).contains(estimator.delayBasedBitrate), "delay-based \(estimator.delayBasedBitrate)")
            #expect((1_080_000...1_200_000).contains(estimator.targetBitrate), "target \(estimator.targetBitrate)")
        }

        /// A probe's result raises an estimate the 1.5 × acknowledged cap held low, both the
        /// delay-based and the loss-based parts (else the lower would hold the target); a
        /// result below the estimate, or one while the link is overusing, changes nothing.
        @Test func aProbeResultRaisesTheEstimateUnlessTheLinkIsOverusing() {
            var estimator = Self.estimator(start: 300_000)
            var random = SeededRandom(seed: 5)
            Self.drive(&estimator, for: .seconds(2)) { send in send + .milliseconds(20) + .microseconds(Int(random.unit() * 1_000)) }
            let before = estimator.targetBitrate
            estimator.applyProbeResult(before / 2, now: .seconds(2))
            #expect(estimator.targetBitrate == before && estimator.statistics.probeResults == 0)
            estimator.applyProbeResult(3_000_000, now: .seconds(2))
            #expect(estimator.targetBitrate == 3_000_000 && estimator.delayBasedBitrate == 3_000_000, "\(before) -> \(estimator.targetBitrate)")
            #expect(estimator.statistics.probeResults == 1)

            var overusing = Self.estimator(start: 2_000_000)
            var linkFree = Duration.zero
            Self.drive(&overusing, for: .seconds(2)) { send in
                linkFree = max(linkFree, send) + .milliseconds(10)
                return linkFree + .milliseconds(20)
            }
            #expect(overusing.usage == .overusing)
            let held = overusing.targetBitrate
            overusing.applyProbeResult(3_000_000, now: .seconds(2))
            #expect(overusing.targetBitrate == held && overusing.statistics.probeResults == 0)
        }

        @Test func theReceiverClockWrappingItsReferenceTimeIsSeamless() {
            // The receiver's clock passes 2^23 × 64 ms (where the signed 24-bit reference time
            // wraps) 0.9 s in; at 1 s the link slows from 1.92 Mb/s to 960 kb/s. Only an
            // unwrapped arrival timeline measures the new rate and cuts to 0.85 of it.
            let wrap = TransportFeedback.referenceTimeTick * (1 << 23)
            let offset = wrap - .milliseconds(900)
            var estimator = Self.estimator(start: 2_000_000)
            var linkFree = Duration.zero
            Self.drive(&estimator, for: .seconds(3), receiverOffset: offset) { send in
                guard send >= .seconds(1) else { return offset + send + .milliseconds(20) }
                linkFree = max(linkFree, send) + .milliseconds(10)
                return offset + linkFree + .milliseconds(20)
            }
            #expect(estimator.statistics.overuseDecreases >= 1)
            #expect((760_000...860_000).contains(estimator.delayBasedBitrate), "delay-based \(estimator.delayBasedBitrate)")
        }

        @Test func lossAboveTenPercentCutsBelowTwoRaisesBetweenHolds() {
            var estimator = Self.estimator(start: 1_000_000)
            estimator.setRoundTripTime(.milliseconds(100))
            estimator.handleReceiverReport(fractionLost: 0, now: .seconds(1))
            #expect(estimator.lossBasedBitrate == 1_050_000)  // + 5 % over a 1 s report
            #expect(estimator.targetBitrate == 1_000_000)      // the delay-based start holds it
            estimator.handleReceiverReport(fractionLost: 64, now: .seconds(2))  // 25 %
            #expect(estimator.lossBasedBitrate == 875_000)     // × (1 − 0.125)
            #expect(estimator.targetBitrate == 875_000)
            estimator.handleReceiverReport(fractionLost: 64, now: .milliseconds(2_200))  // within 300 ms + rtt
            #expect(estimator.lossBasedBitrate == 875_000)
            estimator.handleReceiverReport(fractionLost: 64, now: .milliseconds(2_500))
            #expect(estimator.lossBasedBitrate == 765_625)
            estimator.handleReceiverReport(fractionLost: 13, now: .milliseconds(3_500))  // 5 %: hold
            #expect(estimator.lossBasedBitrate == 765_625)
            estimator.handleReceiverReport(fractionLost: 2, now: .milliseconds(4_000))   // 0.8 %: + 5 %/s × 0.5 s
            #expect(estimator.lossBasedBitrate == 784_532)
        }

        @Test func heavyLossNeverTakesTheTargetBelowTheMinimum() {
            var estimator = Self.estimator(start: 300_000, minimum: 100_000)
            for second in 1...30 { estimator.handleReceiverReport(fractionLost: 200, now: .seconds(second)) }
            #expect(estimator.targetBitrate == 100_000)
        }

        @Test func rembAndTheUserMaximumCapTheTarget() {
            var estimator = Self.estimator(start: 800_000)
            estimator.handle(.receiverEstimatedMaxBitrate(ReceiverEstimatedMaxBitrate(senderSSRC: 1, bitrate: 300_000, ssrcs: [2])),
                             now: .seconds(1))
            #expect(estimator.remoteEstimate == 300_000)
            #expect(estimator.targetBitrate == 300_000)
            estimator.setRemoteEstimate(nil)
            #expect(estimator.targetBitrate == 800_000)
            estimator.setBitrateLimits(minimum: 50_000, maximum: 200_000)
            #expect(estimator.targetBitrate == 200_000)
            #expect(estimator.delayBasedBitrate == 200_000)
            #expect(estimator.lossBasedBitrate == 200_000)
        }

        @Test func theLossEstimateTellsOpusWhatToExpect() throws {
            var estimator = Self.estimator()
            #expect(estimator.opusExpectedLossPercent == 0)
            #expect(!estimator.recommendsOpusInbandFEC)
            for second in 1...20 { estimator.handleReceiverReport(fractionLost: 13, now: .seconds(second)) }  // 5.1 %
            #expect(estimator.opusExpectedLossPercent == 5)
            #expect(estimator.recommendsOpusInbandFEC)
            let encoder = try Opus.Encoder(configuration: Opus.Configuration())
            try encoder.setExpectedPacketLoss(percent: estimator.opusExpectedLossPercent)
            try encoder.setInbandFEC(estimator.recommendsOpusInbandFEC)
            for second in 21...40 { estimator.handleReceiverReport(fractionLost: 0, now: .seconds(second)) }
            #expect(estimator.opusExpectedLossPercent == 0)
            #expect(!estimator.recommendsOpusInbandFEC)
        }
    }
}
