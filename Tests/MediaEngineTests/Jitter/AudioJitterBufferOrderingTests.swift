import Testing
@testable import MediaEngine

/// Reordering, duplicates, late and stray packets, restarts and timestamp jumps, driven
/// by hand on a virtual clock. The target is pinned so that, whenever nothing is lost,
/// the output must be exactly what a decoder makes of the packets in order.
@Suite struct AudioJitterBufferOrderingTests {
    private static let step = Duration.milliseconds(20)

    /// The output after the initial silence, as long as the reference.
    private static func played(_ driver: JitterDriver, count: Int) -> [Int16] {
        Array(driver.output.dropFirst(driver.silentStart * 960).prefix(count))
    }

    @Test func reorderedPacketsPlayInSequenceOrder() throws {
        let stream = try OpusStream(packets: 100)
        var driver = try JitterDriver(pinnedConfiguration())
        for (index, packet) in stream.packets.enumerated() {
            // Every odd packet overtakes the even one before it.
            let arrival = Self.step * index + .milliseconds(index % 2 == 1 ? 5 : 30)
            driver.deliver(packet, sequenceNumber: UInt16(100 + index), timestamp: UInt32(960 * index), at: arrival)
        }
        driver.pull(110)
        let reference = try stream.reference()
        #expect(firstDifference(Self.played(driver, count: reference.count), reference) == nil)
        let statistics = driver.buffer.statistics
        #expect(statistics.packetsReceived == 100 && statistics.packetsLost == 0)
        #expect(driver.concealedWhilePlaying == 0 && statistics.packetsDiscarded == 0)
        #expect(driver.results.allSatisfy { $0.samplesPerChannel == 960 })
    }

    @Test func duplicatesAreCountedAndPlayedOnce() throws {
        let stream = try OpusStream(packets: 60)
        var driver = try JitterDriver(pinnedConfiguration())
        for (index, packet) in stream.packets.enumerated() {
            let arrival = Self.step * index + .milliseconds(10)
            driver.deliver(packet, sequenceNumber: UInt16(index), timestamp: UInt32(960 * index), at: arrival)
            // A copy soon after, and for every third packet one after it was played.
            driver.deliver(packet, sequenceNumber: UInt16(index), timestamp: UInt32(960 * index), at: arrival + .milliseconds(3))
            if index % 3 == 0 {
                driver.deliver(packet, sequenceNumber: UInt16(index), timestamp: UInt32(960 * index), at: arrival + .milliseconds(200))
            }
        }
        driver.pull(70)
        let reference = try stream.reference()
        #expect(firstDifference(Self.played(driver, count: reference.count), reference) == nil)
        let statistics = driver.buffer.statistics
        #expect(statistics.packetsDuplicated == 80)
        #expect(driver.outcomes.filter { $0 == .duplicate }.count == 80)
        #expect(statistics.packetsReceived == 60 && statistics.packetsDiscarded == 0 && driver.concealedWhilePlaying == 0)
    }

    @Test func veryLatePacketIsDiscardedAndItsFrameConcealed() throws {
        let stream = try OpusStream(packets: 80)
        var driver = try JitterDriver(pinnedConfiguration())
        for (index, packet) in stream.packets.enumerated() {
            let late = index == 40 ? Duration.milliseconds(500) : .zero
            driver.deliver(packet, sequenceNumber: UInt16(index), timestamp: UInt32(960 * index),
                           at: Self.step * index + .milliseconds(10) + late)
        }
        driver.pull(100)
        let statistics = driver.buffer.statistics
        #expect(driver.outcomes.filter { $0 == .late }.count == 1)
        #expect(statistics.packetsDiscarded == 1)
        #expect(driver.concealedWhilePlaying == 1 && statistics.concealmentEvents <= 2)
        #expect(statistics.packetsLost == 0, "a late packet is received, not lost")
        // Output went on: every pull a full frame, every other packet decoded.
        #expect(driver.results.count == 100 && driver.results.allSatisfy { $0.samplesPerChannel == 960 })
        #expect(statistics.jitterBufferEmittedCount == 79 * 960)
    }

    @Test func strayPacketsFarAheadOrBehindAreDroppedWithoutDisturbingTheStream() throws {
        let stream = try OpusStream(packets: 80)
        var driver = try JitterDriver(pinnedConfiguration())
        for (index, packet) in stream.packets.enumerated() {
            let sequenceNumber = UInt16(truncatingIfNeeded: 65_500 + index)  // wraps at index 36
            let arrival = Self.step * index + .milliseconds(10)
            driver.deliver(packet, sequenceNumber: sequenceNumber, timestamp: UInt32(960 * index), at: arrival)
            if index == 20 {
                driver.deliver(packet, sequenceNumber: sequenceNumber &+ 20_000, timestamp: 77, at: arrival)
            }
            if index == 50 {
                driver.deliver(packet, sequenceNumber: sequenceNumber &- 30_000, timestamp: 99_999_999, at: arrival)
            }
        }
        driver.pull(95)
        let reference = try stream.reference()
        #expect(firstDifference(Self.played(driver, count: reference.count), reference) == nil)
        let statistics = driver.buffer.statistics
        #expect(driver.outcomes.filter { $0 == .outOfRange }.count == 2)
        #expect(statistics.streamRestarts == 0 && statistics.packetsDiscarded == 2)
        #expect(statistics.packetsLost == 0, "strays must not inflate the loss count")
    }

    @Test func restartedStreamIsFollowedOnceTwoPacketsAgree() throws {
        let stream = try OpusStream(packets: 200)
        var driver = try JitterDriver(pinnedConfiguration())
        for (index, packet) in stream.packets.enumerated() {
            // At packet 100 the sender restarts with new numbering.
            let sequenceNumber = index < 100 ? UInt16(index) : UInt16(40_000 + index)
            let timestamp = index < 100 ? UInt32(960 * index) : UInt32(3_000_000_000) &+ UInt32(960 * index)
            driver.deliver(packet, sequenceNumber: sequenceNumber, timestamp: timestamp, at: Self.step * index + .milliseconds(10))
        }
        driver.pull(215)
        let statistics = driver.buffer.statistics
        #expect(driver.outcomes.contains(.outOfRange) && driver.outcomes.contains(.restarted))
        #expect(statistics.streamRestarts == 1)
        #expect(driver.results.count == 215 && driver.results.allSatisfy { $0.samplesPerChannel == 960 })
        // The new stream plays again within the target delay plus the confirming packet.
        let afterRestart = driver.results[104...]
        let resumed = try #require(afterRestart.firstIndex { $0.sources.contains(.decoded) })
        #expect(resumed - 100 <= 8, "resumed \(resumed - 100) frames after the restart")
        // Dropped: the unconfirmed first packet of the new stream, and the old stream's
        // packets still held (at most the 80 ms target's worth) when the restart came.
        #expect(statistics.packetsLost == 0 && (1...6).contains(statistics.packetsDiscarded), "\(statistics.packetsDiscarded) discarded")
        #expect(driver.buffer.packetsHeld <= 5)
    }

    @Test func resetStartsANewStreamEvenWithNearbyNumbers() throws {
        let stream = try OpusStream(packets: 100)
        var driver = try JitterDriver(pinnedConfiguration())
        for index in 0..<50 {
            driver.deliver(stream.packets[index], sequenceNumber: UInt16(index), timestamp: UInt32(960 * index),
                           at: Self.step * index + .milliseconds(10))
        }
        driver.pull(52)
        driver.buffer.reset()
        for index in 50..<100 {
            // A new SSRC whose numbers happen to be close to the old ones, timestamps not.
            driver.deliver(stream.packets[index], sequenceNumber: UInt16(index - 45), timestamp: UInt32(5_000 + 960 * index),
                           at: Self.step * index + .milliseconds(10))
        }
        driver.pull(60)
        let statistics = driver.buffer.statistics
        #expect(statistics.streamRestarts == 1)
        #expect(driver.outcomes.filter { $0 == .accepted }.count == 100, "no packet of the new stream is late or a duplicate")
        #expect(statistics.jitterBufferEmittedCount >= 95 * 960)
    }

    @Test(arguments: [Int64(3_600 * 48_000), Int64(-30 * 48_000)])
    func timestampJumpIsRebasedOntoTheSequenceNumbers(jump: Int64) throws {
        let stream = try OpusStream(packets: 120)
        var driver = try JitterDriver(pinnedConfiguration())
        for (index, packet) in stream.packets.enumerated() {
            let timestamp = Int64(960 * index) + (index >= 60 ? jump : 0)
            // One reordered pair across the jump.
            let arrival = Self.step * index + .milliseconds(index == 60 ? 40 : 10)
            driver.deliver(packet, sequenceNumber: UInt16(index), timestamp: UInt32(truncatingIfNeeded: timestamp), at: arrival)
        }
        driver.pull(130)
        let reference = try stream.reference()
        #expect(firstDifference(Self.played(driver, count: reference.count), reference) == nil)
        let statistics = driver.buffer.statistics
        #expect(statistics.timestampJumps == 1 && statistics.streamRestarts == 0)
        #expect(driver.concealedWhilePlaying == 0 && statistics.packetsDiscarded == 0)
    }

    @Test func floodWithoutPullsStaysWithinTheBoundAndPlayoutRecovers() throws {
        let stream = try OpusStream(packets: 50)
        var configuration = AudioJitterBuffer.Configuration()
        configuration.maximumPackets = 40
        var driver = try JitterDriver(configuration)
        // 1000 packets at once (a stalled playout thread, or a burst), no pull in between.
        for index in 0..<1_000 {
            let outcome = stream.packets[index % 50].withUnsafeBytes {
                driver.buffer.insert(sequenceNumber: UInt16(truncatingIfNeeded: index), timestamp: UInt32(960 * index),
                                     payload: $0, arrival: .seconds(1))
            }
            #expect(driver.buffer.packetsHeld <= 40)
            #expect(outcome == .accepted || outcome == .restarted)
        }
        #expect((30...40).contains(driver.buffer.maximumPacketsHeld))
        // Then the stream goes on in real time and playout picks it up.
        for index in 1_000..<1_100 {
            driver.deliver(stream.packets[index % 50], sequenceNumber: UInt16(truncatingIfNeeded: index),
                           timestamp: UInt32(960 * index), at: .seconds(1) + Self.step * (index - 1_000))
        }
        driver.pull(150)
        #expect(driver.mostHeld <= 40)
        #expect(driver.results.allSatisfy { $0.samplesPerChannel == 960 })
        #expect(driver.results.suffix(50).filter { $0.sources.contains(.decoded) }.count >= 40)
        #expect(driver.buffer.statistics.packetsDiscarded >= 900)
    }

    @Test(arguments: [Opus.FrameDuration.ms10, .ms20, .ms40, .ms60], ChannelLayout.allCases)
    func anyPacketDurationPlaysAsFixedFrames(duration: Opus.FrameDuration, layout: ChannelLayout) throws {
        let stream = try OpusStream(packets: 2_400 / (duration.rawValue / 10), duration: duration, layout: layout)
        var driver = try JitterDriver(pinnedConfiguration(.milliseconds(120), layout: layout))
        let spacing = AudioFrame.duration(samplesPerChannel: stream.packetSamples)
        for (index, packet) in stream.packets.enumerated() {
            driver.deliver(packet, sequenceNumber: UInt16(index), timestamp: UInt32(stream.packetSamples * index),
                           at: spacing * index + .milliseconds(15))
        }
        driver.pull(140)
        #expect(driver.results.allSatisfy { $0.samplesPerChannel == 960 })
        #expect(driver.output.count == 140 * 960 * layout.count)
        let reference = try stream.reference()
        let played = Array(driver.output.dropFirst(driver.silentStart * 960 * layout.count).prefix(reference.count))
        #expect(firstDifference(played, reference) == nil, "\(duration) \(layout)")
        #expect(driver.concealedWhilePlaying == 0)
    }

    @Test func malformedPayloadsAreCountedAndIgnored() throws {
        let stream = try OpusStream(packets: 40)
        var driver = try JitterDriver(pinnedConfiguration())
        for (index, packet) in stream.packets.enumerated() {
            driver.deliver(packet, sequenceNumber: UInt16(index), timestamp: UInt32(960 * index), at: Self.step * index)
        }
        driver.pull(10)
        let bad: [[UInt8]] = [
            [],                                   // empty
            [0x03],                               // code 3 without its frame count byte
            [0x03, 0x00],                         // code 3 with zero frames
            [0x0B, 0x3F] + [UInt8](repeating: 0, count: 10),  // 63 frames of 20 ms: over 120 ms
            [UInt8](repeating: 0x78, count: 1_600), // larger than the 1500-byte slots
        ]
        for payload in bad {
            let outcome = payload.withUnsafeBytes {
                driver.buffer.insert(sequenceNumber: 30, timestamp: 960 * 30, payload: $0, arrival: .milliseconds(200))
            }
            #expect(outcome == .malformed)
        }
        driver.pull(40)
        let statistics = driver.buffer.statistics
        #expect(statistics.packetsMalformed == bad.count)
        #expect(driver.concealedWhilePlaying == 0 && statistics.packetsReceived == 40)
        let reference = try stream.reference()
        #expect(firstDifference(Self.played(driver, count: reference.count), reference) == nil)
    }
}
