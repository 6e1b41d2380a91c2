import Testing
import TestSupport
@testable import MediaEngine
@testable import MediaRouting
@testable import MediaSimulation

/// Retransmissions on RTX streams (RFC 4588): one history per publisher video, each
/// subscriber's NACKs answered from it on its own RTX stream, renumbered as it was sent.
@Suite struct ForwardingRouterRTX {
    /// What `viewer` got of `sender`'s video.
    static func video(of sender: MeetingCoreHarness.Participant, at viewer: MeetingCoreHarness.Participant) throws -> InboundRTPStreamStatistics {
        let stream = try #require(viewer.videoFrom.first { $0.value == sender.name }?.key)
        return try #require(viewer.core.statistics(of: stream))
    }

    @Test func aSubscriberWithRTXRecoversLostVideoFromThePublishersHistoryAsOneWithPlainRetransmissionsDoes() async throws {
        try await Heavy.run { try recoversLostVideoBody() }
    }

    func recoversLostVideoBody() throws {
        let meeting = MeetingCoreHarness()
        var lossy = ImpairmentSettings()
        lossy.lossPercent = 5
        // Three temporal layers: whatever the lossy downlinks' estimates allow, a layer goes.
        let alice = try meeting.join("alice", frequency: 440, video: true, temporalLayers: 3)
        let bob = try meeting.join("bob", frequency: 550, publishing: false, rtx: 97, downlink: lossy)
        let carol = try meeting.join("carol", frequency: 660, publishing: false, downlink: lossy)
        // Counted from 2 s on: a packet lost right before the allocation paused a video is
        // given up by the receiver after the silence (the video resumes from a keyframe).
        try meeting.run(until: .seconds(2))
        let start = try [bob, carol].map { try Self.video(of: alice, at: $0) }
        try meeting.run(until: .seconds(20))

        let counters = meeting.router.counters
        for ((viewer, rtx), before): ((MeetingCoreHarness.Participant, Bool), InboundRTPStreamStatistics) in zip([(bob, true), (carol, false)], start) {
            var video = try Self.video(of: alice, at: viewer)
            video.packetsRecovered -= before.packetsRecovered
            video.packetsLost -= before.packetsLost
            video.retransmittedPacketsReceived -= before.retransmittedPacketsReceived
            let unrecovered = max(0, video.packetsLost)
            let recovered = Double(video.packetsRecovered) / Double(max(1, video.packetsRecovered + unrecovered))
            let frames = viewer.framesDecoded["alice"] ?? 0
            print("RTX \(rtx): \(viewer.name) recovered \(video.packetsRecovered) of \(video.packetsRecovered + unrecovered) lost video packets "
                + "(\(Int(recovered * 1000) / 10) %), \(video.retransmittedPacketsReceived) on RTX, \(frames) frames decoded; "
                + "downlink lost \(viewer.downlink.statistics.lost) of \(viewer.downlink.statistics.packets) datagrams; "
                + "estimate \(meeting.router.estimatedBitrate(ofLeg: viewer.leg) ?? 0) b/s; NACKs \(video.nackSent), rtx sent \(counters.rtxPacketsSent), "
                + "suppressed \(counters.retransmissionsSuppressed), out of history \(counters.retransmissionsOutOfHistory)")
            #expect(video.packetsRecovered >= 10, "\(viewer.name): \(video)")
            #expect(recovered >= 0.95, "\(viewer.name): \(video)")
            #expect(frames >= 150, "\(viewer.name) decoded \(frames) frames in 20 s")
            #expect(video.decodeErrors == 0)
            if rtx {
                #expect(video.retransmittedPacketsReceived >= video.packetsRecovered, "every recovered packet came on RTX: \(video)")
            } else {
                #expect(video.retransmittedPacketsReceived == 0)
            }
        }
        #expect(counters.rtxPacketsSent >= 10 && counters.packetsRetransmittedOnRTX >= 10, "\(counters)")
        #expect(counters.retransmissionsOutOfHistory == 0, "\(counters)")
    }

    /// The subscriber's send stream of `publisher`'s video on the router, and its next number.
    static func sendStream(of publisher: MeetingCoreHarness.Participant, to subscriber: MeetingCoreHarness.Participant,
                           in router: ForwardingRouter) throws -> (core: MediaCore, send: SendStreamID, next: UInt16) {
        let transport = try #require(router.transportByLeg[subscriber.leg])
        let id = try #require(router.consumer(of: publisher.leg, kind: .video, for: transport))
        let consumer = try #require(router.consumers[id])
        let newest = try #require(consumer.retransmissions?.newest)
        return (consumer.subscriberCore, consumer.send, newest &+ 1)
    }

    /// A NACK from `subscriber` (engine-keyed) about `publisher`'s video, as if its core sent
    /// it (a sender SSRC of its own: SRTCP numbers packets per SSRC).
    static func nack(_ numbers: [UInt16], from subscriber: MeetingCoreHarness.Participant, about publisher: MeetingCoreHarness.Participant,
                     index: inout UInt32) throws -> [UInt8] {
        let nack = GenericNACK(senderSSRC: 0x5EED_0000 | index, mediaSSRC: try #require(publisher.videoSSRC),
                               entries: numbers.map { GenericNACK.Entry(packetID: $0) })
        index += 1
        var bytes = nack.serialized() + [UInt8](repeating: 0, count: SRTPContext.trailerCapacity)
        let context = try SRTPContext(keying: try MeetingCoreHarness.clientKey(subscriber.index), direction: .outbound)
        let length = try bytes.withUnsafeMutableBytes { try context.protectRTCP($0, length: nack.serialized().count) }
        return Array(bytes[0..<length])
    }

    @Test func nacksForPacketsThatLeftTheHistoryOrCameTooOftenAreCountedAndNotAnswered() throws {
        let meeting = MeetingCoreHarness()
        let alice = try meeting.join("alice", frequency: 440, video: true)
        let bob = try meeting.join("bob", frequency: 550, publishing: false, rtx: 97)
        try meeting.run(until: .seconds(5))
        let router = meeting.router
        let stream = try Self.sendStream(of: alice, to: bob, in: router)
        #expect(stream.core.statistics(of: stream.send)?.packetsSent ?? 0 > 120, "alice's video went to bob")
        var senders: UInt32 = 1
        let before = router.counters

        // 300 packets back: bob's map still knows it, the publisher's 256-packet history not.
        meeting.inject(try Self.nack([stream.next &- 300], from: bob, about: alice, index: &senders), from: bob.address)
        #expect(router.counters.retransmissionsOutOfHistory == before.retransmissionsOutOfHistory + 1)
        // A number bob was never sent.
        meeting.inject(try Self.nack([stream.next &+ 1_000], from: bob, about: alice, index: &senders), from: bob.address)
        #expect(router.counters.retransmissionsOutOfHistory == before.retransmissionsOutOfHistory + 2)
        #expect(router.counters.rtxPacketsSent == before.rtxPacketsSent, "nothing was sent for either")

        // A recent packet: answered once; asked again at once, and again and again, it is not
        // sent again within a round trip.
        let recent = stream.next &- 3
        meeting.inject(try Self.nack([recent], from: bob, about: alice, index: &senders), from: bob.address)
        #expect(router.counters.rtxPacketsSent == before.rtxPacketsSent + 1)
        for _ in 0..<5 { meeting.inject(try Self.nack([recent], from: bob, about: alice, index: &senders), from: bob.address) }
        #expect(router.counters.rtxPacketsSent == before.rtxPacketsSent + 1)
        #expect(router.counters.retransmissionsSuppressed == before.retransmissionsSuppressed + 5)
        #expect(stream.core.statistics(of: stream.send)?.retransmittedPacketsSent == router.counters.rtxPacketsSent)
    }

    /// A leg's setup for the memory figures: every leg publishes audio and video.
    static func setup(_ leg: UInt64, rtx: UInt8?) throws -> ForwardingRouter.LegSetup {
        let key = try SRTPKeyingMaterial(profile: .aeadAES128GCM, bytes: (0..<28).map { UInt8(truncatingIfNeeded: Int(leg) * 7 + $0) })
        var media = ForwardingRouter.LegSetup.Media.engine
        media.videoRTXPayloadType = rtx
        return ForwardingRouter.LegSetup(id: leg, meeting: 1, account: "user\(leg)", publishing: true, audioSSRC: UInt32(leg) << 8 | 1,
                                         videoSSRC: UInt32(leg) << 8 | 2, keying: .sdes(inbound: key, outbound: key), media: media,
                                         ice: ICECredentials(ufrag: "leg\(leg)", password: "leg-password-\(leg)-0123456789ab"))
    }

    /// A 20-party video meeting's retransmission memory over `workers` routers (leg `id % workers`'s).
    static func memory(parties: Int, workers: Int, rtx: UInt8?) throws -> Int {
        let routers = (0..<workers).map { ForwardingRouter(configuration: ForwardingRouter.Configuration(), worker: $0) }
        for router in routers { router.workerCount = workers }
        let legs = (1...UInt64(parties)).map { $0 }
        for leg in legs {
            let setup = try setup(leg, rtx: rtx)
            for (index, router) in routers.enumerated() {
                if index == Int(leg) % workers { try router.addLeg(setup, now: .zero) } else { router.addRemoteLeg(setup, worker: Int(leg) % workers, now: .zero) }
            }
        }
        for subscriber in legs {
            for publisher in legs where publisher != subscriber {
                routers[Int(subscriber) % workers].setForwarding(subscriber: subscriber, publisher: publisher, audio: true, video: true, now: .zero)
            }
        }
        return routers.reduce(0) { $0 + $1.retransmissionMemory }
    }

    @Test func aTwentyPartyVideoMeetingsRetransmissionMemoryFallsToAHistoryPerPublisher() throws {
        let megabyte = 1_000_000.0
        for workers in [1, 2] {
            let plain = try Self.memory(parties: 20, workers: workers, rtx: nil)
            let rtx = try Self.memory(parties: 20, workers: workers, rtx: 97)
            print("20-party video meeting on \(workers) worker(s): retransmission memory \(Double(plain) / megabyte) MB with a history per "
                + "subscriber stream, \(Double(rtx) / megabyte) MB with RTX (a history per publisher per worker)")
            // 380 subscriber streams of 128 x 1.5 KB each, against 20 publishers' 256 x 1.5 KB
            // (per worker) and 380 maps of 512 entries.
            #expect(plain > 70_000_000)
            #expect(rtx * 3 < plain, "\(rtx) against \(plain)")
        }
    }
}
