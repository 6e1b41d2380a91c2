@testable import MediaEngine
@testable import MediaSimulation
import Testing
import TestSupport

/// Streams coming and going on a live core, SSRC collisions and streams found by MID.
@Suite struct MediaCoreStreams {
    @Test func aStreamRemovedAndAddedAHundredTimesWhileMediaFlowsPlaysOnAfterwards() async throws {
        try await Heavy.run {
            var call = try CoreCallHarness(video: false)
            try call.run(until: .seconds(1))
            let ssrc = call.bob.core.configuration.rtcpSSRC &+ 1
            for round in 0..<100 {
                call.alice.core.removeReceiveStream(call.alice.audioIn)
                try call.run(until: call.now + .milliseconds(20))
                call.alice.audioIn = try call.alice.core.addReceiveStream(.opus(ssrc: ssrc))
                // A send stream of a new SSRC comes and goes too: the peer knows none of them.
                let extra = try call.alice.core.addSendStream(.opus(ssrc: 0x7000 + UInt32(round)))
                try call.run(until: call.now + .milliseconds(20))
                call.alice.core.removeSendStream(extra, now: call.now)
            }
            #expect(call.alice.core.receiveStreamIDs.count == 1 && call.alice.core.sendStreamIDs.count == 1, "nothing left behind")
            #expect(call.alice.core.transportStatistics.unknownStreamPackets >= 50, "bob's packets while his stream was gone are counted")
            let played = call.alice.played.count
            try call.run(until: call.now + .seconds(2))
            let heard = call.alice.played[played...].dropFirst(24_000).withUnsafeBufferPointer { AudioQuality.toneFrequency($0) }
            #expect(abs((heard ?? 0) - 660) < 2, "bob's tone after the churn: \(heard ?? 0) Hz")
            // Bob's side: alice's own stream never stopped.
            #expect(call.bob.goodbyes.isEmpty)
            #expect(try #require(call.bob.core.statistics(of: call.bob.audioIn)).packetsLost == 0)
        }
    }

    @Test func takenSSRCsAreTypedErrors() async throws {
        try await Heavy.run {
            let core = try MediaCore(configuration: MediaCore.Configuration())
            _ = try core.addReceiveStream(.opus(ssrc: 5))
            _ = try core.addSendStream(.opus(ssrc: 9))
            let receive = #expect(throws: MediaCoreError.self) { try core.addReceiveStream(.vp8(ssrc: 5)) }
            #expect(receive?.code == .ssrcCollision)
            let send = #expect(throws: MediaCoreError.self) { try core.addSendStream(.vp8(ssrc: 9)) }
            #expect(send?.code == .ssrcCollision)
            var named = ReceiveStreamConfiguration.opus(ssrc: nil)
            named.mid = "a"
            _ = try core.addReceiveStream(named)
            #expect(throws: MediaCoreError.self) { try core.addReceiveStream(named) }
        }
    }

    /// Two cores, alice sending Opus on streams she configures, bob receiving on streams he
    /// configures; returns what bob's streams got.
    func exchange(send: [SendStreamConfiguration], receive: [ReceiveStreamConfiguration], seconds: Int = 1,
                  extensions: RTPExtensionMap = .standard) throws -> (bob: MediaCore, streams: [ReceiveStreamID], events: [MediaCore.Event]) {
        var a = MediaCore.Configuration()
        a.extensions = extensions
        a.outboundKeying = CoreCallHarness.keyA
        a.inboundKeying = CoreCallHarness.keyB
        a.seed = 3
        var b = a
        b.outboundKeying = CoreCallHarness.keyB
        b.inboundKeying = CoreCallHarness.keyA
        b.seed = 4
        var link = try VirtualLink(a: try MediaCore(configuration: a), b: try MediaCore(configuration: b),
                                   forward: ImpairmentSettings(), backward: ImpairmentSettings())
        let senders = try send.map { try link.a.addSendStream($0) }
        let receivers = try receive.map { try link.b.addReceiveStream($0) }
        link.a.selectPath(link.addressB, pinned: true, now: .zero)
        link.b.selectPath(link.addressA, pinned: true, now: .zero)
        let encoder = try Opus.Encoder(configuration: Opus.Configuration())
        var tone = ToneGenerator(.sine(440))
        var events: [MediaCore.Event] = []
        for index in 0..<(seconds * 50) {
            let now = Duration.milliseconds(20 * index)
            let packet = try encoder.encode(tone.nextFrame())
            for sender in senders {
                packet.withUnsafeBytes { _ = link.a.sendAudio(sender, payload: $0, mediaTimestamp: UInt32(index * 960), now: now) }
            }
            link.flush(now: now)
            link.deliverEach(until: now + .milliseconds(19))
            link.b.handleTimeout(now: now)
            while let event = link.b.pollEvent() { events.append(event) }
        }
        return (link.b, receivers, events)
    }

    @Test func aStreamAnnouncedByMIDBindsTheFirstSSRCThatCarriesItAndNoOtherCanTakeIt() async throws {
        try await Heavy.run {
            var first = SendStreamConfiguration.opus(ssrc: 0xAAAA)
            first.mid = "0"
            var impostor = SendStreamConfiguration.opus(ssrc: 0xBBBB)
            impostor.mid = "0"
            var expected = ReceiveStreamConfiguration.opus(ssrc: nil)
            expected.mid = "0"
            let (bob, streams, events) = try exchange(send: [first, impostor], receive: [expected])
            let bound = events.compactMap { event -> UInt32? in
                if case .streamBound(_, let ssrc) = event { return ssrc }
                return nil
            }
            #expect(bound == [0xAAAA], "bound once, to the first SSRC with the MID")
            let statistics = try #require(bob.statistics(of: streams[0]))
            #expect(statistics.ssrc == 0xAAAA && statistics.packetsReceived == 50)
            #expect(bob.transportStatistics.ssrcCollisions == 50, "every packet of the impostor")
        }
    }

    @Test func simulcastLayersSharingAMIDBindByTheirRIDsAndASecondSSRCForALayerIsACollision() async throws {
        try await Heavy.run {
            var extensions = RTPExtensionMap.standard
            extensions.set(RTPExtensionMap.ridURI, id: 10)
            // A browser's layers q and f (h is announced but never sent), and a second SSRC
            // claiming q.
            let senders = [(0xA1, "q"), (0xA3, "f"), (0xA4, "q")].map { ssrc, rid in
                var layer = SendStreamConfiguration.opus(ssrc: UInt32(ssrc))
                layer.mid = "1"
                layer.rid = rid
                return layer
            }
            let receivers = ["q", "h", "f"].map { rid in
                var layer = ReceiveStreamConfiguration.opus(ssrc: nil)
                layer.mid = "1"
                layer.rid = rid
                return layer
            }
            let (bob, streams, events) = try exchange(send: senders, receive: receivers, extensions: extensions)
            let bound = events.compactMap { event -> UInt32? in
                if case .streamBound(_, let ssrc) = event { return ssrc }
                return nil
            }
            #expect(Set(bound) == [0xA1, 0xA3] && bound.count == 2, "each layer bound once, to its first SSRC: \(bound)")
            #expect(try #require(bob.statistics(of: streams[0])).ssrc == 0xA1 && bob.statistics(of: streams[0])?.packetsReceived == 50)
            #expect(bob.statistics(of: streams[1])?.packetsReceived == 0, "h never came")
            #expect(try #require(bob.statistics(of: streams[2])).ssrc == 0xA3 && bob.statistics(of: streams[2])?.packetsReceived == 50)
            #expect(bob.transportStatistics.ssrcCollisions == 50, "every packet of the second q")
            // A layer's MID and RID are taken once: a second stream for them is refused.
            #expect(throws: MediaCoreError.self) { try bob.addReceiveStream(receivers[0]) }
            // A stream by MID alone beside them would take any of their packets: refused too.
            var plain = ReceiveStreamConfiguration.opus(ssrc: nil)
            plain.mid = "1"
            #expect(throws: MediaCoreError.self) { try bob.addReceiveStream(plain) }
        }
    }

    @Test func thisSidesOwnSSRCComingBackIsACollisionNotMedia() async throws {
        try await Heavy.run {
            var a = MediaCore.Configuration()
            a.outboundKeying = CoreCallHarness.keyA
            a.inboundKeying = CoreCallHarness.keyA
            let core = try MediaCore(configuration: a)
            let stream = try core.addSendStream(.opus(ssrc: 0x1234))
            let peer = SocketAddress(addressBytes: [198, 51, 100, 2], port: 5_000)!
            core.selectPath(peer, pinned: true, now: .zero)
            for index in 0..<10 {
                _ = core.sendAudio(stream, payload: UnsafeRawBufferPointer(start: nil, count: 0), mediaTimestamp: UInt32(index * 960),
                                   now: .milliseconds(20 * index))
                // The packets come back, as a loop in the network would bring them.
                while let transmit = core.pollTransmit() {
                    guard transmit.kind == .rtp else { continue }
                    var copy = Array(transmit.bytes)
                    copy.withUnsafeMutableBytes { core.handleDatagram($0, from: peer, now: .milliseconds(20 * index)) }
                }
            }
            #expect(core.transportStatistics.ssrcCollisions == 10)
            #expect(core.receiveStreamIDs.isEmpty)
        }
    }
}

/// Connectivity checks the core answers: only those signed for its ICE credentials,
/// never with more bytes than the request.
@Suite struct MediaCoreChecks {
    static let ours = ICECredentials(ufrag: "ours", password: "our-password-0123456789ab")

    func answers(username: String, password: String, from source: SocketAddress) throws -> [Transmit.Kind] {
        let core = try MediaCore(configuration: MediaCore.Configuration())
        let host = ICECandidate.local(.host, address: SocketAddress(addressBytes: [192, 0, 2, 1], port: 5_000)!, localPreference: 65_535)
        core.startICE(local: Self.ours, controlling: false, hosts: [host], stunServers: [], timeout: .seconds(5), now: .zero)
        let request = STUNMessage(type: .bindingRequest, transactionID: .random(),
                                  attributes: [.username(username), .priority(1_000), .iceControlling(7)])
        var bytes = request.serialized(integrity: try .shortTerm(password: password), fingerprint: true)
        bytes.withUnsafeMutableBytes { core.handleDatagram($0, from: source, now: .zero) }
        var kinds: [Transmit.Kind] = []
        while let transmit = core.pollTransmit() {
            #expect(transmit.bytes.count <= bytes.count, "an answer is never larger than its request")
            if transmit.destination == source { kinds.append(transmit.kind) }
        }
        return kinds
    }

    @Test func aSignedCheckIsAnsweredOverIPv4AndIPv6AndOthersAreNot() throws {
        let v4 = SocketAddress(addressBytes: [198, 51, 100, 7], port: 4_000)!
        let v6 = SocketAddress(addressBytes: [0x20, 0x01, 0x0D, 0xB8] + [UInt8](repeating: 0, count: 11) + [1], port: 4_000)!
        #expect(try answers(username: "ours:theirs", password: Self.ours.password, from: v4).first == .stun)
        #expect(try answers(username: "ours:theirs", password: Self.ours.password, from: v6).first == .stun)
        #expect(try answers(username: "someone:theirs", password: Self.ours.password, from: v4).isEmpty, "another ufrag")
        #expect(try answers(username: "ours:theirs", password: "a-wrong-password-0123456", from: v4).isEmpty, "a wrong password")
    }
}
