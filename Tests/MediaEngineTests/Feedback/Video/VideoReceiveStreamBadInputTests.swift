import Testing
@testable import MediaEngine

/// Hostile and broken input: the stream counts and drops it, keeps its bounds and never stalls.
@Suite struct VideoReceiveStreamBadInputTests {
    typealias Fixture = VideoFeedbackFixture

    /// `packet` with its sequence number replaced.
    static func renumbered(_ packet: [UInt8], _ sequenceNumber: UInt16) -> [UInt8] {
        var bytes = packet
        bytes[2] = UInt8(sequenceNumber >> 8)
        bytes[3] = UInt8(sequenceNumber & 0xFF)
        return bytes
    }

    @Test func farFutureAndVeryLateNumbersAreDroppedWithoutDisturbingTheStream() throws {
        let packets = try Fixture.packets(Fixture.frames(20))
        var driver = VideoStreamDriver()
        var strays: [VideoReceiveStream.InsertResult] = []
        for (index, packet) in packets.enumerated() {
            try driver.insert(packet.bytes)
            if index % 10 == 5 {
                // A copy 30 000 ahead, one 20 000 behind, and one just before the window.
                strays.append(try driver.insert(Self.renumbered(packet.bytes, packet.sequenceNumber &+ 30_000)))
                strays.append(try driver.insert(Self.renumbered(packet.bytes, packet.sequenceNumber &- 20_000)))
                strays.append(try driver.insert(Self.renumbered(packet.bytes, packet.sequenceNumber &- 200)))
            }
            driver.advance(to: driver.now + .milliseconds(10))
        }
        #expect(strays.allSatisfy { $0 == .outOfRange || $0 == .late })
        #expect(strays.count(where: { $0 == .late }) == strays.count / 3)
        #expect(driver.frames.count == 20)
        #expect(try driver.decodeAll() == 20)
        #expect(driver.nacks.isEmpty && driver.pliCount == 0 && driver.firNumbers.isEmpty)
        #expect(driver.stream.statistics.resynchronizations == 0)
    }

    @Test func aRunOfFarAwayNumbersRestartsTheStreamAndAsksWithFIR() throws {
        let frames = try Fixture.frames(30, keyframesAt: [0, 10, 20])
        var driver = VideoStreamDriver()
        // The sender restarts with new numbers after frame 9 (same SSRC).
        let before = try Fixture.packets(Array(frames[0..<10]), firstSequence: 1_000)
        let after = try Fixture.packets(Array(frames[10..<20]), firstSequence: 40_000)
        for packet in before { try driver.insert(packet.bytes) }
        #expect(driver.frames.count == 10)
        var results: [VideoReceiveStream.InsertResult] = []
        for packet in after {
            results.append(try driver.insert(packet.bytes))
            driver.advance(to: driver.now + .milliseconds(5))
        }
        // Three packets are refused, the fourth restarts the stream; the keyframe lost its
        // start, so no frame comes until the sender answers the FIR.
        #expect(Array(results.prefix(4)) == [.outOfRange, .outOfRange, .outOfRange, .stored])
        #expect(driver.stream.statistics.resynchronizations == 1)
        driver.advance(to: driver.now + .milliseconds(250))
        #expect(driver.firNumbers == [0])
        #expect(driver.frames.count == 10)
        let answer = try Fixture.packets(Array(frames[20..<30]), firstSequence: after.last!.sequenceNumber &+ 1)
        for packet in answer { try driver.insert(packet.bytes) }
        #expect(driver.frames.count == 20)
        #expect(try driver.decodeAll() == 20)
    }

    @Test func aNewSSRCAfterTheOldOneFellSilentTakesOverAtOnce() throws {
        let frames = try Fixture.frames(20, keyframesAt: [0, 10])
        let first = try Fixture.packets(Array(frames[0..<10]), ssrc: 0xAAAA, firstSequence: 5)
        let second = try Fixture.packets(Array(frames[10..<20]), ssrc: 0xBBBB, firstSequence: 60_000)
        var driver = VideoStreamDriver()
        for packet in first { try driver.insert(packet.bytes) }
        driver.advance(to: .milliseconds(600))  // the old sender stopped
        for packet in second.prefix(3) { try driver.insert(packet.bytes) }
        #expect(try driver.insert(first[3].bytes) == .otherSource)  // a straggler of the old stream
        for packet in second.dropFirst(3) { try driver.insert(packet.bytes) }
        driver.advance(to: .milliseconds(1_100))
        #expect(driver.stream.ssrc == 0xBBBB)
        #expect(driver.stream.statistics.sourceChanges == 1)
        #expect(driver.frames.count == 10 + 10)
        #expect(try driver.decodeAll() == 20)
        // The new stream began with a keyframe: nothing to ask for.
        #expect(driver.firNumbers.isEmpty && driver.pliCount == 0 && driver.nacks.isEmpty)
    }

    @Test func aNewSSRCWhileTheOldOneIsLiveMustProveItselfAndCannotFlapBack() throws {
        let frames = try Fixture.frames(30, keyframesAt: [0, 10, 20])
        let first = try Fixture.packets(Array(frames[0..<10]), ssrc: 0xAAAA, firstSequence: 5)
        let second = try Fixture.packets(Array(frames[10..<20]), ssrc: 0xBBBB, firstSequence: 60_000)
        var driver = VideoStreamDriver()
        var results: [VideoReceiveStream.InsertResult] = []
        for (old, new) in zip(first, second) {       // both senders live, interleaved
            try driver.insert(old.bytes)
            results.append(try driver.insert(new.bytes))
        }
        for old in first.dropFirst(second.count) { try driver.insert(old.bytes) }
        // Three packets of the newcomer are refused, the fourth takes over and asks for a keyframe.
        #expect(Array(results.prefix(4)) == [.otherSource, .otherSource, .otherSource, .stored])
        #expect(driver.stream.ssrc == 0xBBBB && driver.stream.statistics.sourceChanges == 1)
        #expect(driver.firNumbers == [0])
        // The old sender's packets, in sequence, do not take the stream back.
        #expect(driver.stream.statistics.otherSourcePackets >= first.count - 4)
        // The keyframe answering the FIR decodes.
        let answer = try Fixture.packets(Array(frames[20..<30]), ssrc: 0xBBBB, firstSequence: second.last!.sequenceNumber &+ 1)
        for packet in answer { try driver.insert(packet.bytes) }
        #expect(driver.frames.suffix(10).first?.isKeyframe == true)
        #expect(driver.deltaFramesFollowTheirReferences)
    }

    @Test func aStrayPacketOfAnotherSSRCDoesNotDisturbALiveStream() throws {
        let packets = try Fixture.packets(Fixture.frames(10))
        var driver = VideoStreamDriver()
        for (index, packet) in packets.enumerated() {
            try driver.insert(packet.bytes)
            if index % 5 == 0 {
                var stray = packet.bytes
                stray[8] ^= UInt8(truncatingIfNeeded: index + 1)  // a different SSRC each time
                #expect(try driver.insert(stray) == .otherSource)
            }
        }
        #expect(driver.frames.count == 10)
        #expect(driver.stream.statistics.sourceChanges == 0)
    }

    @Test func aStreamWhoseFirstKeyframeLostItsStartAsksForOneAfter200Milliseconds() throws {
        let packets = try Fixture.packets(Fixture.frames(10))
        var driver = VideoStreamDriver()
        for packet in packets.dropFirst() {
            try driver.insert(packet.bytes)
            driver.advance(to: driver.now + .milliseconds(5))
        }
        driver.advance(to: .milliseconds(195))
        #expect(driver.pliCount == 0)
        driver.advance(to: .milliseconds(205))
        #expect(driver.pliCount == 1)
        #expect(driver.frames.isEmpty)
        #expect(driver.stream.keyframeRequestStatistics.reasons[.missingKeyframe] == 1)
    }

    @Test func decoderCorruptionHoldsDeltasUntilTheRequestedKeyframe() throws {
        let packets = try Fixture.packets(Fixture.frames(20, keyframesAt: [0, 12]))
        var driver = VideoStreamDriver()
        for packet in packets where packet.frame < 5 { try driver.insert(packet.bytes) }
        driver.stream.decoderReportedCorruption(now: driver.now)
        driver.process()
        #expect(driver.pliCount == 1)
        for packet in packets where packet.frame >= 5 { try driver.insert(packet.bytes) }
        #expect(driver.frames.count == 5 + 8)  // frames 5-11 are held back
        #expect(driver.frames[5].isKeyframe)
        #expect(driver.stream.keyframeRequestStatistics.reasons[.decoderCorruption] == 1)
    }

    @Test func malformedAndOversizedPayloadsAreCountedAndNotAskedFor() throws {
        var configuration = VideoReceiveStream.Configuration()
        configuration.maximumPayloadSize = 350  // the fixture's payloads are at most 300 bytes
        var driver = VideoStreamDriver(configuration: configuration)
        let packets = try Fixture.packets(Fixture.frames(6))
        let oversized = try RTPPacket(header: RTPHeader(payloadType: 96, sequenceNumber: packets[3].sequenceNumber, timestamp: 0,
                                                        ssrc: 0x1111_2222), payload: [0x10] + [UInt8](repeating: 0, count: 400)).serialized()
        let malformed = try RTPPacket(header: RTPHeader(payloadType: 96, sequenceNumber: packets[4].sequenceNumber, timestamp: 0,
                                                        ssrc: 0x1111_2222), payload: [0x80]).serialized()  // X set, no X byte
        for (index, packet) in packets.enumerated() {
            switch index {
            case 3: #expect(try driver.insert(oversized) == .oversized)
            case 4: #expect(try driver.insert(malformed) == .malformed)
            default: try driver.insert(packet.bytes)
            }
        }
        driver.advance(to: .milliseconds(300))
        #expect(driver.nacks.isEmpty)
        #expect(driver.stream.statistics.malformedPackets == 1 && driver.stream.statistics.oversizedPackets == 1)
    }

    @Test func aJumpPastASmallWindowDropsWhatFallsOutAndStaysBounded() throws {
        var configuration = VideoReceiveStream.Configuration()
        configuration.packetCapacity = 64
        var driver = VideoStreamDriver(configuration: configuration)
        let packets = try Fixture.packets(Fixture.frames(30, keyframesAt: [0, 25]))
        // Frame 1 loses a packet, so everything after it is held; the window fills.
        let lost = packets.first { $0.frame == 1 }!.sequenceNumber
        for packet in packets where packet.sequenceNumber != lost {
            try driver.insert(packet.bytes)
            #expect(driver.stream.heldPackets <= 64)
        }
        #expect(driver.stream.statistics.windowOverflows > 0)
        #expect(driver.stream.statistics.framesGivenUp == 1)
        #expect(driver.frames.last?.isKeyframe == false && driver.frames.contains { $0.isKeyframe && $0 != driver.frames[0] })
        #expect(driver.deltaFramesFollowTheirReferences)
    }

    @Test func aFloodOfRandomPacketsKeepsEveryBoundAndAValidStreamStillDecodesAfterIt() throws {
        var driver = VideoStreamDriver()
        var random = SeededRandom(seed: 42)
        let template = try Fixture.packets(Fixture.frames(3))
        var base: UInt16 = 0
        var largestNACK = 0
        var largestHeld = 0
        var largestMissing = 0
        var largestCandidates = 0
        for step in 0..<20_000 {
            var bytes = template[Int(random.next() % UInt64(template.count))].bytes
            // Numbers scattered from 200 behind to 1200 ahead of a slowly moving base.
            let number = base &+ UInt16(truncatingIfNeeded: Int(random.next() % 1_400) - 200)
            base &+= 1
            bytes[1] = (bytes[1] & 0x7F) | (random.chance(0.3) ? 0x80 : 0)        // marker
            bytes[2] = UInt8(number >> 8)
            bytes[3] = UInt8(number & 0xFF)
            if random.chance(0.5) { bytes[4] = UInt8(truncatingIfNeeded: random.next()) }  // timestamp
            if random.chance(0.01) { bytes[11] ^= 1 }                             // a stray SSRC
            for index in 12..<min(bytes.count, 20) where random.chance(0.1) {      // descriptor and frame tag
                bytes[index] = UInt8(truncatingIfNeeded: random.next())
            }
            _ = try driver.insert(bytes)
            if step % 10 == 0 { driver.advance(to: driver.now + .milliseconds(1)) }
            largestNACK = max(largestNACK, driver.nacks.last?.count ?? 0)
            largestHeld = max(largestHeld, driver.stream.heldPackets)
            largestMissing = max(largestMissing, driver.stream.missingPackets)
            largestCandidates = max(largestCandidates, driver.stream.keyframeCandidates.count)
        }
        let statistics = driver.stream.statistics
        // The flood reached every path.
        #expect(statistics.packetsStored > 1_000 && statistics.outOfRangePackets > 1_000 && statistics.otherSourcePackets > 100)
        #expect(statistics.duplicatePackets + statistics.latePackets > 1_000)
        #expect(statistics.framesAssembled > 0 && statistics.packetsDiscarded > 1_000)
        #expect(driver.stream.nackStatistics.requests > 1_000 && driver.stream.nackStatistics.cleared > 1_000)
        // Every bound held, and feedback stayed paced.
        #expect(largestHeld <= 1_024 && statistics.peakHeldPackets <= 1_024)
        #expect(largestMissing <= 1_000 && largestNACK <= 1_000 && largestCandidates <= 16)
        #expect(driver.pliCount + driver.firNumbers.count <= 2 * Int(driver.now / .milliseconds(300)) + 2)
        // A real sender on a new SSRC is decoded once it proves itself.
        let before = driver.frames.count
        let clean = try Fixture.packets(Fixture.frames(5), ssrc: 0x7777, firstSequence: 10)
        for packet in clean { try driver.insert(packet.bytes) }
        let answer = try Fixture.packets(Fixture.frames(5), ssrc: 0x7777, firstSequence: clean.last!.sequenceNumber &+ 1)
        for packet in answer { try driver.insert(packet.bytes) }
        #expect(driver.stream.ssrc == 0x7777)
        #expect(driver.frames.count - before == 5)
        #expect(driver.frames.suffix(5).allSatisfy { $0.firstSequenceNumber > clean.last!.sequenceNumber })
    }
}
