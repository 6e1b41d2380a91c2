@testable import MediaEngine
@testable import MediaRouting
@testable import MediaSimulation
import Testing
import TestSupport

/// WebRTC legs in the forwarding router, in virtual time: DTLS-SRTP keys, payload types
/// and header extension IDs of the peer's own, beside our clients' legs.
@Suite struct ForwardingRouterWebRTC {
    @Test func webRTCPeersAndOurClientsHearAndSeeEachOtherThroughTheirOwnPayloadTypesAndIDs() async throws {
        try await Heavy.runAlone { try mixedMeetingBody() }
    }

    func mixedMeetingBody() throws {
        let meeting = MeetingCoreHarness()
        var other = MeetingCoreHarness.WebRTCPeer()
        other.media = ForwardingRouter.LegSetup.Media(
            audioPayloadType: 96, videoPayloadType: 97,
            extensions: RTPExtensionMap(ids: [RTPExtensionMap.midURI: 1, RTPExtensionMap.audioLevelURI: 2,
                                              RTPExtensionMap.transportSequenceNumberURI: 4]))
        let browser = try meeting.join("browser", frequency: 440, video: true, webRTC: MeetingCoreHarness.WebRTCPeer())
        let bot = try meeting.join("bot", frequency: 550, video: true, webRTC: other)
        let client = try meeting.join("client", frequency: 660, video: true)
        try meeting.run(until: .seconds(4))

        let tones = ["browser": 440.0, "bot": 550.0, "client": 660.0]
        let people = [browser, bot, client]
        for viewer in people {
            for sender in people where sender !== viewer {
                let level = viewer.level(of: tones[sender.name]!, from: sender.name)
                #expect(level > 0.25, "\(viewer.name) hears \(sender.name)'s tone at \(level)")
                let frames = viewer.framesDecoded[sender.name] ?? 0
                #expect(frames >= 90, "\(viewer.name) decoded \(frames) frames of \(sender.name)")
                let stream = try #require(viewer.videoFrom.first { $0.value == sender.name }?.key)
                #expect(viewer.core.statistics(of: stream)?.decodeErrors == 0)
            }
        }
        #expect(meeting.router.counters.dtlsConnected == 2 && meeting.router.counters.dtlsFailed == 0)
        // Each subscriber's bandwidth estimate runs on its own transport-wide numbers:
        // the WebRTC peers' IDs reached them translated.
        for viewer in [browser, bot] {
            let estimate = try #require(meeting.router.estimatorStatistics(ofLeg: viewer.leg))
            #expect(estimate.packetsReceived > 300 && estimate.unknownReports == 0,
                    "\(viewer.name)'s transport-wide feedback reported \(estimate.packetsReceived) packets received")
        }
        // And the other way: the server's transport-wide feedback reaches each publisher,
        // whose estimate a browser's sending rate follows (without it Chrome falls to its
        // minimum, 0.8x a second).
        for publisher in people {
            let statistics = publisher.core.bandwidthEstimator.statistics
            print("webRTC: \(publisher.name) had feedback on \(statistics.packetsReceived) of its packets; video report \(String(describing: publisher.core.statistics(of: publisher.videoOut!)?.remoteReport))")
            #expect(statistics.packetsReceived > 300, "\(publisher.name): feedback on \(statistics.packetsReceived) of its packets")
        }
        // The audio level arrives under each publisher's own ID: speaking is reported.
        #expect(meeting.router.lastSpoke(leg: browser.leg) != nil && meeting.router.lastSpoke(leg: bot.leg) != nil)
        #expect(meeting.router.counters.strangerDatagrams == 0)
    }

    @Test func aPeerWhoseCertificateMatchesNoFingerprintGetsNoMediaAndItsLegIsLost() async throws {
        try await Heavy.run { try forgedCertificateBody() }
    }

    func forgedCertificateBody() throws {
        let meeting = MeetingCoreHarness()
        let client = try meeting.join("client", frequency: 660)
        var forged = MeetingCoreHarness.WebRTCPeer()
        forged.announced = MeetingCoreHarness.otherCertificate.fingerprint
        let impostor = try meeting.join("impostor", frequency: 440, webRTC: forged)
        try meeting.run(until: .seconds(3))
        #expect(meeting.router.counters.dtlsFailed == 1 && meeting.router.counters.dtlsConnected == 0)
        var reports: [ForwardingRouter.Report] = []
        while let report = meeting.router.pollReport() { reports.append(report) }
        #expect(reports.contains(.legLost(impostor.leg)), "the leg ends at once, not after the leg timeout: \(reports)")
        #expect(impostor.heard.values.allSatisfy(\.isEmpty) && (client.heard["impostor"] ?? []).isEmpty)
        #expect(meeting.router.forwardedPackets(to: impostor.leg, from: client.leg) == (0, 0))
    }

    @Test func aHandshakeThatNeverFinishesFailsTheLegAfterTenSecondsBeforeTheLegTimeout() async throws {
        try await Heavy.run { try silentPeerBody() }
    }

    func silentPeerBody() throws {
        let meeting = MeetingCoreHarness()
        let client = try meeting.join("client", frequency: 660)
        var silent = MeetingCoreHarness.WebRTCPeer()
        silent.speaksDTLS = false
        let peer = try meeting.join("silent", frequency: 440, webRTC: silent)
        try meeting.run(until: .seconds(9))
        var reports: [ForwardingRouter.Report] = []
        while let report = meeting.router.pollReport() { reports.append(report) }
        #expect(!reports.contains(.legLost(peer.leg)) && meeting.router.counters.dtlsFailed == 0, "still trying at 9 s")
        try meeting.run(until: .seconds(11))
        while let report = meeting.router.pollReport() { reports.append(report) }
        #expect(reports.contains(.legLost(peer.leg)) && meeting.router.counters.dtlsFailed == 1, "failed at 10 s: \(reports)")
        #expect((client.heard["silent"] ?? []).isEmpty, "nothing it sent unkeyed was forwarded")
    }

    @Test func dtlsFromAStrangerIsCountedAndGarbageOnALegsDTLSPathChangesNothing() async throws {
        try await Heavy.run { try strangerBody() }
    }

    func strangerBody() throws {
        let meeting = MeetingCoreHarness()
        let browser = try meeting.join("browser", frequency: 440, webRTC: MeetingCoreHarness.WebRTCPeer())
        let client = try meeting.join("client", frequency: 660)
        try meeting.run(until: .seconds(1))
        let strangers = meeting.router.counters.strangerDatagrams
        // A ClientHello-looking record from an address no check proved.
        var hello = [UInt8](repeating: 0, count: 120)
        hello[0] = 22
        hello[1] = 0xFE
        hello[2] = 0xFD
        meeting.inject(hello, from: SocketAddress(addressBytes: [192, 0, 2, 66], port: 4_444)!)
        #expect(meeting.router.counters.strangerDatagrams == strangers + 1)
        // Garbage from the browser's own address, in the DTLS range: dropped, the leg goes on.
        var random = SeededRandom(seed: 5)
        for size in [1, 13, 14, 200, 1_400] {
            var garbage = (0..<size).map { _ in UInt8(truncatingIfNeeded: random.next()) }
            garbage[0] = 23
            meeting.inject(garbage, from: browser.address)
        }
        try meeting.run(until: .seconds(3))
        #expect(meeting.router.counters.dtlsFailed == 0)
        #expect(client.level(of: 440, from: "browser", lastSeconds: 1) > 0.25 && browser.level(of: 660, from: "client", lastSeconds: 1) > 0.25)
    }
}

@Suite struct RTPExtensionTranslations {
    static let sender = RTPExtensionMap(ids: [RTPExtensionMap.midURI: 1, RTPExtensionMap.audioLevelURI: 2,
                                              RTPExtensionMap.transportSequenceNumberURI: 4, "urn:example:other": 6])
    static let receiver = RTPExtensionMap(ids: [RTPExtensionMap.audioLevelURI: 5, RTPExtensionMap.transportSequenceNumberURI: 3,
                                                RTPExtensionMap.midURI: 9])

    @Test func oneByteElementsTakeTheReceiversIDsAndTheMIDAndUnknownOnesBecomePadding() throws {
        let translation = RTPExtensionTranslation(from: Self.sender, to: Self.receiver)
        #expect(translation.destinationID(of: 2) == 5 && translation.destinationID(of: 4) == 3)
        #expect(translation.destinationID(of: 1) == nil && translation.destinationID(of: 6) == nil)
        #expect(translation.sourceID(of: 3) == 4 && translation.sourceID(of: 9) == nil)
        // mid "0" (1 byte), padding, level, twcc (2 bytes), other (3 bytes), padding to 4.
        let block: [UInt8] = [0x10, 0x30, 0x00, 0x20, 0x85, 0x41, 0x12, 0x34, 0x62, 1, 2, 3, 0x00, 0x00, 0x00, 0x00]
        var packet = [UInt8](repeating: 0, count: 12) + [0xBE, 0xDE, 0, 4] + block + [9, 9]
        packet[0] = 0x90
        packet.withUnsafeMutableBytes { translation.apply(to: $0, range: 16..<32, profile: 0xBEDE) }
        #expect(Array(packet[16..<32]) == [0, 0, 0x00, 0x50, 0x85, 0x31, 0x12, 0x34, 0, 0, 0, 0, 0, 0, 0, 0])
        #expect(packet.suffix(2) == [9, 9], "nothing past the block is touched")
        try packet.withUnsafeBytes { bytes in
            let view = try RTPPacketView(bytes)
            #expect(view.extensionValue(id: 5).map(Array.init) == [0x85] && view.extensionValue(id: 3).map(Array.init) == [0x12, 0x34])
            #expect(view.extensionValue(id: 9) == nil && view.extensionValue(id: 1) == nil)
        }
    }

    @Test func twoByteElementsAndMalformedBlocksAreRewrittenOnlyAsFarAsTheyParse() {
        let translation = RTPExtensionTranslation(from: Self.sender, to: Self.receiver)
        var bytes: [UInt8] = [2, 1, 0x85, 40, 2, 7, 7, 4, 9, 1, 2]
        bytes.withUnsafeMutableBytes { translation.apply(to: $0, range: 0..<$0.count, profile: 0x1000) }
        // Level remapped; ID 40 (past 14) erased; twcc's element claims 9 bytes past the end: left.
        #expect(bytes == [5, 1, 0x85, 0, 0, 0, 0, 4, 9, 1, 2])
        var stop: [UInt8] = [0x20, 0x85, 0xF0, 0x40, 1, 2]
        stop.withUnsafeMutableBytes { translation.apply(to: $0, range: 0..<$0.count, profile: 0xBEDE) }
        #expect(stop == [0x50, 0x85, 0xF0, 0x40, 1, 2], "ID 15 stops the walk")
        var foreign: [UInt8] = [0x20, 0x85]
        foreign.withUnsafeMutableBytes { translation.apply(to: $0, range: 0..<2, profile: 0x1234) }
        #expect(foreign == [0x20, 0x85], "a block not in RFC 8285's forms is left as it is")
    }
}
