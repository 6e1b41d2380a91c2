import Testing
@testable import MediaEngine

/// `VideoReceiveStream` fed real VP8 frames, packet by packet, on a manual clock.
@Suite struct VideoReceiveStreamTests {
    typealias Fixture = VideoFeedbackFixture

    /// 20 frames (keyframe first) as RTP packets, 33 ms of arrival time per frame.
    static func stream(frames count: Int = 20, keyframesAt: Set<Int> = [0]) throws -> [Fixture.Packet] {
        try Fixture.packets(Fixture.frames(count, keyframesAt: keyframesAt))
    }

    /// Sends `packets` in the given order, each frame's packets 33 ms after the previous
    /// frame's, processing every 5 ms in between.
    static func deliver(_ packets: [Fixture.Packet], to driver: inout VideoStreamDriver, start: Duration = .zero) throws {
        for packet in packets {
            driver.advance(to: max(driver.now, start + .milliseconds(33 * packet.frame)))
            try driver.insert(packet.bytes)
        }
    }

    @Test func inOrderPacketsGiveEveryFrameDecodableWithoutFeedback() throws {
        let packets = try Self.stream()
        #expect(packets.count > 40)  // several packets per frame
        var driver = VideoStreamDriver()
        try Self.deliver(packets, to: &driver)
        #expect(driver.frames.count == 20)
        #expect(driver.frames.first?.isKeyframe == true)
        #expect(driver.deltaFramesFollowTheirReferences)
        #expect(try driver.decodeAll() == 20)
        #expect(driver.nacks.isEmpty && driver.pliCount == 0)
        #expect(driver.stream.heldPackets == 0)
    }

    @Test func packetsReorderedAcrossFramesAreAssembledInOrder() throws {
        var packets = try Self.stream()
        // Reverse every run of 7 packets: reordering inside and across frames.
        for start in stride(from: 0, to: packets.count, by: 7) {
            packets[start..<min(start + 7, packets.count)].reverse()
        }
        var driver = VideoStreamDriver()
        for packet in packets { try driver.insert(packet.bytes) }
        driver.advance(to: .milliseconds(100))
        #expect(driver.frames.count == 20)
        #expect(driver.frames.map(\.timestamp) == driver.frames.map(\.timestamp).sorted())
        #expect(driver.deltaFramesFollowTheirReferences)
        #expect(try driver.decodeAll() == 20)
        #expect(driver.nacks.isEmpty)  // all inside the reordering wait
    }

    @Test func duplicatesAreCountedAndDroppedOnce() throws {
        let packets = try Self.stream()
        var driver = VideoStreamDriver()
        var results: [VideoReceiveStream.InsertResult] = []
        for packet in packets {
            results.append(try driver.insert(packet.bytes))
            results.append(try driver.insert(packet.bytes))
        }
        #expect(driver.frames.count == 20)
        #expect(try driver.decodeAll() == 20)
        // The second copy is a duplicate while its frame is held and late once it was handed out.
        #expect(results.count(where: { $0 == .stored }) == packets.count)
        #expect(driver.stream.statistics.duplicatePackets + driver.stream.statistics.latePackets == packets.count)
    }

    @Test func aLostPacketIsNACKedAndTheFramesBehindItWaitForItsRetransmission() throws {
        let packets = try Self.stream()
        let lost = packets.first { $0.frame == 5 }!
        var driver = VideoStreamDriver()
        try Self.deliver(packets.filter { $0.frame < 12 && $0.sequenceNumber != lost.sequenceNumber }, to: &driver)
        // Frames 0-4 are out; 5-11 wait behind the hole, which was asked for at 175 and 280 ms.
        #expect(driver.frames.count == 5)
        #expect(driver.nacks == [[lost.sequenceNumber], [lost.sequenceNumber]])
        // The retransmission arrives at 363 ms, inside the deadline (165 + 400 ms).
        #expect(try driver.insert(lost.bytes) == .recovered)
        #expect(driver.frames.count == 12)
        try Self.deliver(packets.filter { $0.frame >= 12 }, to: &driver)
        #expect(driver.frames.count == 20)
        #expect(driver.deltaFramesFollowTheirReferences)
        #expect(try driver.decodeAll() == 20)
        #expect(driver.pliCount == 0)
        #expect(driver.stream.statistics.packetsRecovered == 1)
        #expect(driver.nacks.count == 2)
    }

    @Test func aFrameMissingPastItsDeadlineIsGivenUpAndOnlyAKeyframeFollows() throws {
        let packets = try Self.stream(frames: 40, keyframesAt: [0, 30])
        let lost = packets.first { $0.frame == 5 }!
        var driver = VideoStreamDriver()
        try Self.deliver(packets.filter { $0.frame < 15 && $0.sequenceNumber != lost.sequenceNumber }, to: &driver)
        let gapSeen = Duration.milliseconds(33 * 5)
        driver.advance(to: gapSeen + .milliseconds(399))
        #expect(driver.pliCount == 0 && driver.frames.count == 5)
        driver.advance(to: gapSeen + .milliseconds(405))
        #expect(driver.pliCount == 1)
        #expect(driver.stream.isAwaitingKeyframe)
        // The packet comes too late; the deltas after it are useless; the keyframe at 30 restarts decoding.
        #expect(try driver.insert(lost.bytes) == .late)
        try Self.deliver(packets.filter { $0.frame >= 15 }, to: &driver, start: driver.now)
        #expect(driver.frames.map(\.isKeyframe) == [true] + Array(repeating: false, count: 4) + [true]
            + Array(repeating: false, count: 9))
        #expect(driver.deltaFramesFollowTheirReferences)
        #expect(try driver.decodeAll() == 15)
        #expect(driver.stream.statistics.framesGivenUp == 1)
        // Repeated at most every 300 ms while waiting for the keyframe.
        #expect(driver.pliCount <= 1 + Int((driver.now - gapSeen) / .milliseconds(300)))
    }

    @Test func nextProcessTimeNamesTheNextNACKAndTheDeadline() throws {
        let packets = try Self.stream(frames: 3)
        var driver = VideoStreamDriver()
        #expect(driver.stream.nextProcessTime() == nil)
        for packet in packets where packet.frame == 0 { try driver.insert(packet.bytes) }
        #expect(driver.stream.nextProcessTime() == nil)
        // Frame 1 loses its first packet; its second arrives at 33 ms.
        driver.now = .milliseconds(33)
        try driver.insert(packets.filter { $0.frame == 1 }[1].bytes)
        #expect(driver.stream.nextProcessTime() == .milliseconds(43))           // first NACK
        driver.now = .milliseconds(43)
        driver.process()
        #expect(driver.nacks.count == 1)
        #expect(driver.stream.nextProcessTime() == .milliseconds(43 + 105))     // retry
    }

    @Test func aCompleteKeyframeIsHandedOutWithoutWaitingForOlderGaps() throws {
        let packets = try Self.stream(frames: 12, keyframesAt: [0, 8])
        var driver = VideoStreamDriver()
        try Self.deliver(packets.filter { $0.frame != 6 }, to: &driver)
        #expect(driver.frames.map(\.isKeyframe).count(where: { $0 }) == 2)
        #expect(driver.frames.count == 6 + 4)   // 0-5, then 8-11
        #expect(driver.deltaFramesFollowTheirReferences)
        #expect(driver.stream.missingPackets == 0)  // the keyframe made frame 6's packets useless
    }

    @Test func timestampJumpsDoNotDisturbAssembly() throws {
        let frames = try Fixture.frames(12)
        var packets = try Fixture.packets(Array(frames[0..<6]), firstSequence: 100, firstTimestamp: 1_000)
        let next = packets.last!.sequenceNumber &+ 1
        // The sender's clock jumps by half the timestamp space, then wraps.
        packets += try Fixture.packets(Array(frames[6...]), firstSequence: next, firstTimestamp: 0xFFFF_F000, timestampStep: 3_000)
            .map { Fixture.Packet(bytes: $0.bytes, frame: $0.frame + 6, sequenceNumber: $0.sequenceNumber) }
        var driver = VideoStreamDriver()
        try Self.deliver(packets, to: &driver)
        #expect(driver.frames.count == 12)
        #expect(try driver.decodeAll() == 12)
        #expect(driver.pliCount == 0 && driver.nacks.isEmpty)
    }

    @Test func paddingBetweenFramesKeepsTheChain() throws {
        let packets = try Self.stream(frames: 6)
        var driver = VideoStreamDriver()
        var sequence = packets.first!.sequenceNumber
        for (index, packet) in packets.enumerated() {
            // Shift each frame's numbers by one padding packet sent before it.
            if index > 0, packet.frame != packets[index - 1].frame {
                try driver.insert(try Fixture.padding(sequenceNumber: sequence, timestamp: 5))
                sequence &+= 1
            }
            var bytes = packet.bytes
            bytes[2] = UInt8(sequence >> 8)
            bytes[3] = UInt8(sequence & 0xFF)
            try driver.insert(bytes)
            sequence &+= 1
        }
        #expect(driver.frames.count == 6)
        #expect(driver.stream.statistics.paddingPackets == 5)
        #expect(try driver.decodeAll() == 6)
    }
}
