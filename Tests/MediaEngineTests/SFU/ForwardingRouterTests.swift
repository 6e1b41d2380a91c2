import Testing
@testable import MediaEngine

/// The forwarding server's media plane, in virtual time: participants are media cores on
/// simulated links, the server a `ForwardingRouter`.
@Suite struct ForwardingRouterMeetings {
    @Test func everyActorHearsTheOthersNotItselfAndTheAudienceHearsAllAndSendsNothing() throws {
        let meeting = MeetingCoreHarness()
        let alice = try meeting.join("alice", frequency: 440)
        let bob = try meeting.join("bob", frequency: 550)
        let carol = try meeting.join("carol", frequency: 660)
        let dave = try meeting.join("dave", frequency: 770, publishing: false)
        try meeting.run(until: .seconds(3))

        let tones = ["alice": 440.0, "bob": 550.0, "carol": 660.0]
        for listener in [alice, bob, carol, dave] {
            let expected = tones.keys.filter { $0 != listener.name }.sorted()
            #expect(listener.heard.keys.filter { !(listener.heard[$0]?.isEmpty ?? true) }.sorted() == expected,
                    "\(listener.name) hears exactly the other actors")
            for speaker in expected {
                let own = listener.level(of: tones[speaker]!, from: speaker)
                #expect(own > 0.25, "\(listener.name) hears \(speaker)'s tone at \(own)")
                for (other, frequency) in tones where other != speaker {
                    #expect(listener.level(of: frequency, from: speaker) < own * 0.05, "\(speaker)'s stream to \(listener.name) holds only \(speaker)")
                }
            }
        }
        #expect(meeting.router.forwardedPackets(to: alice.leg, from: dave.leg) == (0, 0))
        #expect(meeting.router.counters.audienceMediaDropped == 0, "the audience sent nothing")
        #expect(meeting.router.counters.strangerDatagrams == 0)
        // Two seconds of media each way at least, audio only: 50 packets a second.
        #expect(meeting.router.forwardedPackets(to: dave.leg, from: alice.leg).audio >= 130)
    }

    @Test func mutingAUserForOneSubscriberStopsForwardingToItOnlyAndUnmutingLeavesNoGap() throws {
        let meeting = MeetingCoreHarness()
        let alice = try meeting.join("alice", frequency: 440)
        let bob = try meeting.join("bob", frequency: 550)
        let carol = try meeting.join("carol", frequency: 660)
        try meeting.run(until: .seconds(2))
        meeting.router.setForwarding(subscriber: alice.leg, publisher: bob.leg, audio: false, video: true, now: meeting.now)
        let before = meeting.router.forwardedPackets(to: alice.leg, from: bob.leg).audio
        let heardBefore = alice.heard["bob"]?.count ?? 0
        try meeting.run(until: .seconds(4))
        #expect(meeting.router.forwardedPackets(to: alice.leg, from: bob.leg).audio - before <= 1, "nothing more goes to alice")
        #expect((alice.heard["bob"]?.count ?? 0) - heardBefore <= 3 * 960 + 4_800, "alice's stream of bob went idle")
        #expect(meeting.router.counters.mutedPacketsSkipped >= 90)
        #expect(carol.level(of: 550, from: "bob", lastSeconds: 1) > 0.2, "carol still hears bob")

        meeting.router.setForwarding(subscriber: alice.leg, publisher: bob.leg, audio: true, video: true, now: meeting.now)
        try meeting.run(until: .seconds(6))
        #expect(alice.level(of: 550, from: "bob", lastSeconds: 1) > 0.2, "bob is back for alice")
        let stream = try #require(alice.audioFrom.first { $0.value == "bob" }?.key)
        #expect(alice.core.statistics(of: stream)?.packetsLost == 0, "the muted stretch left no hole in the numbering")
    }

    @Test func anAudienceThatSendsAnywayIsDroppedUntilItBecomesAnActor() throws {
        let meeting = MeetingCoreHarness()
        let alice = try meeting.join("alice", frequency: 440)
        let dave = try meeting.join("dave", frequency: 770, publishing: false)
        dave.sends = true
        try meeting.run(until: .seconds(2))
        #expect(meeting.router.counters.audienceMediaDropped >= 80)
        #expect(meeting.router.forwardedPackets(to: alice.leg, from: dave.leg).audio == 0)
        #expect(alice.heard["dave"]?.isEmpty ?? true)

        meeting.router.setPublishing(dave.leg, true, now: meeting.now)
        try meeting.run(until: .seconds(4))
        #expect(alice.level(of: 770, from: "dave", lastSeconds: 1) > 0.2, "dave is heard once an actor")
    }

    @Test func strangersAndForgedChecksGetNoAnswerAndNoPlace() throws {
        let meeting = MeetingCoreHarness()
        let alice = try meeting.join("alice", frequency: 440)
        let bob = try meeting.join("bob", frequency: 550)
        try meeting.run(until: .seconds(1))
        let stranger = SocketAddress(addressBytes: [198, 51, 100, 99], port: 6_000)!
        // A check with a wrong token, RTP copied from alice's header, an RTCP BYE: nothing
        // is answered and nothing reaches bob.
        var check = [UInt8](repeating: 0, count: 200)
        let request = STUNMessage(type: .bindingRequest, transactionID: .random(), attributes: [.username("guess")])
        let size = try check.withUnsafeMutableBytes { try request.serialize(into: $0) }
        var rtp = [UInt8](repeating: 0, count: 172)
        rtp[0] = 0x80
        rtp[1] = 111
        rtp.withUnsafeMutableBytes { $0.storeBytes(of: alice.audioSSRC.bigEndian, toByteOffset: 8, as: UInt32.self) }
        let bye: [UInt8] = [0x81, 203, 0, 1] + withUnsafeBytes(of: alice.audioSSRC.bigEndian) { Array($0) }
        let bobBefore = bob.heard["alice"]?.count ?? 0
        for _ in 0..<50 {
            meeting.inject(Array(check[0..<size]), from: stranger)
            meeting.inject(rtp, from: stranger)
            meeting.inject(bye, from: stranger)
        }
        #expect(meeting.router.counters.strangerDatagrams == 150)
        try meeting.run(until: .seconds(2))
        #expect((bob.heard["alice"]?.count ?? 0) > bobBefore, "alice is still heard")
        let legStatistics = try #require(meeting.router.transportStatistics(ofLeg: alice.leg))
        #expect(legStatistics.stunAnswered < 20, "only alice's own checks were answered")
    }

    @Test func aLegThatGoesSilentIsReportedLostOnce() throws {
        var configuration = ForwardingRouter.Configuration()
        configuration.legTimeout = .seconds(3)
        let meeting = MeetingCoreHarness(configuration: configuration)
        _ = try meeting.join("alice", frequency: 440)
        let bob = try meeting.join("bob", frequency: 550)
        try meeting.run(until: .seconds(1))
        meeting.participants.removeAll { $0 === bob }
        var reports: [ForwardingRouter.Report] = []
        try meeting.run(until: .seconds(5))
        while let report = meeting.router.pollReport() { reports.append(report) }
        #expect(reports.filter { if case .legLost = $0 { true } else { false } } == [.legLost(bob.leg)])
    }

    @Test func speakingParticipantsAreReportedWithTheirLevels() throws {
        let meeting = MeetingCoreHarness()
        _ = try meeting.join("alice", frequency: 440)
        let bob = try meeting.join("bob", frequency: 550)
        bob.tone = ToneGenerator(.silence)
        try meeting.run(until: .seconds(2))
        var last: [String: Double]?
        while let report = meeting.router.pollReport() {
            if case .speaking(_, let levels) = report { last = levels }
        }
        let levels = try #require(last)
        #expect(Set(levels.keys) == ["alice"], "bob is silent")
        // A 0.3 sine has an RMS of 0.212; RFC 6464 keeps it to 1 dB.
        #expect(abs((levels["alice"] ?? 0) - 0.212) < 0.03)
    }
}
