import Testing
@testable import MediaEngine

/// Every bandwidth-estimation suite nests in here, so `--filter BandwidthTests` runs them all.
@Suite struct BandwidthTests {}

extension BandwidthTests {
    @Suite struct TransportFeedbackGeneratorTests {
        static func generator(historySize: Int = 4_096, maximumPacketSize: Int = 1_200) -> TransportFeedbackGenerator {
            var configuration = TransportFeedbackGenerator.Configuration(senderSSRC: 7, mediaSSRC: 9)
            configuration.historySize = historySize
            configuration.maximumPacketSize = maximumPacketSize
            return TransportFeedbackGenerator(configuration: configuration)
        }

        /// Every status of `packets`, in order, with absolute arrival times (reference + offset).
        static func statuses(_ packets: [TransportFeedback]) -> [(UInt16, Duration?)] {
            packets.flatMap { feedback in
                feedback.packets.map { ($0.sequenceNumber, $0.receiveOffset.map { feedback.referenceTimestamp + $0 }) }
            }
        }

        @Test func reportsEveryPacketOnceAtTheIntervalWithoutDrift() throws {
            var generator = Self.generator()
            // Arrivals 5.13 ms apart: not a multiple of the 250 µs tick, so rounding shows.
            let arrivals = (0..<40).map { Duration.seconds(3) + .microseconds(5_130 * $0) }
            for (index, arrival) in arrivals.prefix(9).enumerated() {
                generator.packetReceived(transportSequenceNumber: UInt16(index), now: arrival)
            }
            #expect(generator.nextFeedbackTime == .seconds(3) + .milliseconds(50))
            #expect(generator.feedback(now: .seconds(3) + .milliseconds(49)).isEmpty)
            let first = generator.feedback(now: .seconds(3) + .milliseconds(50))
            #expect(first.count == 1)
            #expect(first.first?.baseSequenceNumber == 0)
            #expect(first.first?.packetStatusCount == 9)
            #expect(first.first?.feedbackPacketCount == 0)
            #expect(first.first?.senderSSRC == 7)
            // Nothing new: nothing to send, and no timer until the next packet.
            #expect(generator.feedback(now: .seconds(3) + .milliseconds(100)).isEmpty)
            #expect(generator.nextFeedbackTime == nil)
            for (index, arrival) in arrivals.enumerated().dropFirst(9) {
                generator.packetReceived(transportSequenceNumber: UInt16(index), now: arrival)
            }
            let second = generator.feedback(now: .seconds(4))
            #expect(second.map(\.baseSequenceNumber) == [9])
            #expect(second.first?.feedbackPacketCount == 1)
            let reported = Self.statuses(first + second)
            #expect(reported.map(\.0) == (0..<40).map(UInt16.init))
            for ((sequence, arrival), truth) in zip(reported, arrivals) {
                let error = abs(((arrival ?? .zero) - truth) / .microseconds(1))
                #expect(error <= 125, "packet \(sequence): \(error) µs off")
            }
            // The wire form carries the same.
            for feedback in first + second {
                #expect(try TransportFeedback(parsing: feedback.serialized()) == feedback)
            }
            #expect(generator.statistics.feedbackPackets == 2)
            #expect(generator.statistics.statusesReported == 40)
        }

        @Test func gapsAreReportedAsNotReceived() {
            var generator = Self.generator()
            for sequence: UInt16 in [0, 1, 3, 6] {
                generator.packetReceived(transportSequenceNumber: sequence, now: .milliseconds(Int(sequence)))
            }
            let statuses = Self.statuses(generator.feedback(now: .seconds(1)))
            #expect(statuses.map(\.0) == [0, 1, 2, 3, 4, 5, 6])
            #expect(statuses.map { $0.1 != nil } == [true, true, false, true, false, false, true])
        }

        @Test func sequenceNumbersWrapSeamlessly() {
            var generator = Self.generator()
            let sequences = (0..<12).map { UInt16(65_530) &+ UInt16($0) }
            for (index, sequence) in sequences.enumerated() {
                generator.packetReceived(transportSequenceNumber: sequence, now: .milliseconds(index))
            }
            let packets = generator.feedback(now: .seconds(1))
            #expect(packets.count == 1)
            #expect(packets.first?.baseSequenceNumber == 65_530)
            #expect(Self.statuses(packets).map(\.0) == sequences)
            #expect(Self.statuses(packets).allSatisfy { $0.1 != nil })
        }

        @Test func reorderedArrivalsKeepTheirOwnTimes() {
            var generator = Self.generator()
            let arrivals: [(UInt16, Duration)] = [(0, .milliseconds(10)), (2, .milliseconds(12)), (1, .milliseconds(15)), (3, .milliseconds(16))]
            for (sequence, arrival) in arrivals { generator.packetReceived(transportSequenceNumber: sequence, now: arrival) }
            let packets = generator.feedback(now: .seconds(1))
            let statuses = Self.statuses(packets)
            #expect(statuses.map(\.1) == [.milliseconds(10), .milliseconds(15), .milliseconds(12), .milliseconds(16)])
            // 2 arrived before 1, so its delta is negative: a two-bit chunk carries it.
            #expect(packets.first?.receiveDeltas == [40, 20, -12, 16])
        }

        @Test func duplicatesKeepTheFirstArrival() {
            var generator = Self.generator()
            generator.packetReceived(transportSequenceNumber: 5, now: .milliseconds(1))
            generator.packetReceived(transportSequenceNumber: 5, now: .milliseconds(9))
            generator.packetReceived(transportSequenceNumber: 6, now: .milliseconds(10))
            #expect(generator.statistics.duplicates == 1)
            #expect(Self.statuses(generator.feedback(now: .seconds(1))).map(\.1) == [.milliseconds(1), .milliseconds(10)])
        }

        @Test func aLatePacketIsReportedAgainAsReceived() {
            var generator = Self.generator()
            for sequence: UInt16 in [0, 1, 3] {
                generator.packetReceived(transportSequenceNumber: sequence, now: .milliseconds(Int(sequence) * 5))
            }
            let first = Self.statuses(generator.feedback(now: .milliseconds(60)))
            #expect(first.map { $0.1 != nil } == [true, true, false, true])
            generator.packetReceived(transportSequenceNumber: 2, now: .milliseconds(70))
            generator.packetReceived(transportSequenceNumber: 4, now: .milliseconds(71))
            let second = Self.statuses(generator.feedback(now: .milliseconds(200)))
            #expect(second.map(\.0) == [2, 3, 4])
            #expect(second.map(\.1) == [.milliseconds(70), .milliseconds(15), .milliseconds(71)])
        }

        @Test func manyPacketsSplitUnderTheSizeLimitWithoutGapsOrOverlap() throws {
            var generator = Self.generator(maximumPacketSize: 200)
            var random = SeededRandom(seed: 11)
            var expected: [(UInt16, Bool)] = []
            for index in 0..<3_000 {
                let sequence = UInt16(truncatingIfNeeded: 64_000 + index)
                let received = !random.chance(0.3)
                expected.append((sequence, received))
                // Jittered arrivals, so deltas take both sizes.
                let arrival = Duration.microseconds(index * 400 + Int(random.unit() * 70_000))
                if received { generator.packetReceived(transportSequenceNumber: sequence, now: arrival) }
            }
            // The last sequence number decides how far the report goes.
            let packets = generator.feedback(now: .seconds(10))
            #expect(packets.count > 10)
            var next = packets.first?.baseSequenceNumber
            for (index, feedback) in packets.enumerated() {
                #expect(feedback.serializedSize <= 200, "packet \(index): \(feedback.serializedSize) bytes")
                #expect(feedback.baseSequenceNumber == next, "packet \(index)")
                #expect(feedback.feedbackPacketCount == UInt8(index))
                next = feedback.baseSequenceNumber &+ feedback.packetStatusCount
                #expect(try TransportFeedback(parsing: feedback.serialized()) == feedback)
            }
            // From the first packet received to the last one: earlier losses are unknowable.
            let reported = expected[expected.firstIndex { $0.1 }!...expected.lastIndex { $0.1 }!]
            let statuses = Self.statuses(packets)
            #expect(statuses.map(\.0) == reported.map(\.0))
            #expect(statuses.map { $0.1 != nil } == reported.map(\.1))
        }

        @Test func chunkCountPredictionMatchesTheEncoding() {
            var random = SeededRandom(seed: 5)
            let symbols: [TransportFeedback.StatusSymbol] = [.notReceived, .receivedSmallDelta, .receivedLargeDelta]
            for _ in 0..<200 {
                var encoder = TransportFeedback.ChunkEncoder()
                let runny = random.chance(0.5)
                var previous = symbols[0]
                for _ in 0..<Int(random.unit() * 300) {
                    let symbol = runny && random.chance(0.9) ? previous : symbols[Int(random.unit() * 3)]
                    let predicted = encoder.chunkCount(adding: symbol)
                    encoder.add(symbol)
                    #expect(encoder.finished().count == predicted)
                    previous = symbol
                }
            }
        }

        @Test func deltasBeyondEightSecondsStartANewPacket() {
            var generator = Self.generator()
            generator.packetReceived(transportSequenceNumber: 10, now: .milliseconds(100))
            generator.packetReceived(transportSequenceNumber: 11, now: .seconds(9))
            let packets = generator.feedback(now: .seconds(9))
            #expect(packets.map(\.baseSequenceNumber) == [10, 11])
            #expect(Self.statuses(packets).map(\.1) == [.milliseconds(100), .seconds(9)])
        }

        @Test func aHugeForwardGapReportsOnlyTheHistoryWindow() {
            var generator = Self.generator(historySize: 1_024)
            generator.packetReceived(transportSequenceNumber: 0, now: .zero)
            #expect(generator.feedback(now: .seconds(1)).count == 1)
            generator.packetReceived(transportSequenceNumber: 30_000, now: .seconds(2))
            let statuses = Self.statuses(generator.feedback(now: .seconds(3)))
            #expect(statuses.count == 1_024)
            #expect(statuses.first.map { Int($0.0) } == 30_000 - 1_023)
            #expect(statuses.filter { $0.1 != nil }.map(\.0) == [30_000])
        }

        @Test func packetsOlderThanTheWindowAreDroppedAndARestartIsFollowed() {
            var generator = Self.generator(historySize: 1_024)
            for sequence in UInt16(5_000)..<5_010 {
                generator.packetReceived(transportSequenceNumber: sequence, now: .milliseconds(Int(sequence)))
            }
            _ = generator.feedback(now: .seconds(10))
            generator.packetReceived(transportSequenceNumber: 100, now: .seconds(11))
            #expect(generator.statistics.tooOld == 1)
            #expect(generator.feedback(now: .seconds(12)).isEmpty)
            // A sender that restarted far back: after 16 such packets the generator follows it.
            for sequence in UInt16(101)..<121 {
                generator.packetReceived(transportSequenceNumber: sequence, now: .seconds(13) + .milliseconds(Int(sequence)))
            }
            #expect(generator.statistics.restarts == 1)
            let statuses = Self.statuses(generator.feedback(now: .seconds(14)))
            #expect(statuses.map(\.0) == Array(115..<121))
            #expect(statuses.allSatisfy { $0.1 != nil })
        }

        @Test func theReferenceTimeWrapsAt24Bits() throws {
            var generator = Self.generator()
            // 2^23 × 64 ms is 536870.912 s: past it, the signed 24-bit field wraps negative.
            let arrival = Duration.seconds(537_000) + .microseconds(1_250)
            generator.packetReceived(transportSequenceNumber: 1, now: arrival)
            let packet = try #require(generator.feedback(now: arrival + .seconds(1)).first)
            #expect(packet.referenceTime < 0)
            let period = TransportFeedback.referenceTimeTick * (1 << 24)
            #expect(packet.referenceTimestamp + packet.packets[0].receiveOffset! + period == arrival)
        }

        @Test func anIdleStreamSendsNothing() {
            var generator = Self.generator()
            #expect(generator.nextFeedbackTime == nil)
            #expect(generator.feedback(now: .seconds(5)).isEmpty)
        }
    }
}
