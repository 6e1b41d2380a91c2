import Testing
import TestSupport
@testable import MediaEngine

private final class Captured {
    var rtcpFromBob: [[UInt8]] = []
}

@Suite struct MediaCoreCalls {
    @Test func aCallCarriesEachSidesToneAndPicturesWithAuthenticatedReports() async throws {
        try await Heavy.run {
            var call = try CoreCallHarness()
            try call.run(until: .seconds(5))
            for (listener, expected) in [(call.alice, 660.0), (call.bob, 440.0)] {
                let heard = listener.played.dropFirst(24_000).withUnsafeBufferPointer { AudioQuality.toneFrequency($0) }
                #expect(abs((heard ?? 0) - expected) < 2, "tone at \(heard ?? 0) Hz")
                #expect(listener.framesDecoded >= 145, "\(listener.framesDecoded) frames decoded")
                let audio = try #require(listener.core.statistics(of: listener.audioIn))
                #expect(audio.packetsLost == 0 && audio.authenticationFailures == 0 && audio.concealedSamples < 4_800)
                let transport = listener.core.transportStatistics
                #expect(transport.rtcpReceived > 10 && transport.transportFeedbackReceived > 50)
                // Each names a stream of this side's (the receiver's latest packet's SSRC):
                // a browser takes no other.
                #expect(transport.transportFeedbackNamingNoStream == 0, "\(transport.transportFeedbackNamingNoStream) name none")
                #expect(transport.rtcpAuthenticationFailures == 0 && transport.rtcpReplays == 0 && transport.foreignPathDatagrams == 0)
                // 20 ms each way: the round trip from SR/RR and RRTR/DLRR.
                #expect(abs(listener.core.roundTripTime / .milliseconds(1) - 40) < 3, "RTT \(listener.core.roundTripTime)")
                let sent = try #require(listener.core.statistics(of: listener.audioOut))
                #expect(sent.remoteReport?.packetsLost == 0)
            }
            #expect(call.alice.keyframesEncoded == 1 && call.bob.keyframesEncoded == 1, "no keyframe was asked for")
        }
    }

    @Test func theEndOfAStreamIsAnAuthenticatedGoodbye() async throws {
        try await Heavy.run {
            var call = try CoreCallHarness(video: false)
            try call.run(until: .seconds(1))
            call.alice.core.removeSendStream(call.alice.audioOut, now: call.now)
            call.link.flush(now: call.now)
            try call.run(until: .seconds(2))
            #expect(call.bob.goodbyes == [call.bob.audioIn])
            #expect(call.bob.core.transportStatistics.goodbyesReceived == 1)
        }
    }
}

@Suite struct MediaCoreAttacks {
    /// A stranger on the path, or spoofing the peer's address without the key, sends what a
    /// real receiver would: PLI, FIR, NACK, transport feedback, a bad receiver report and BYE.
    static func forgedFeedback(about call: CoreCallHarness) -> [[UInt8]] {
        let video = call.alice.core.configuration.rtcpSSRC &+ 2
        let audio = call.alice.core.configuration.rtcpSSRC &+ 1
        let stranger: UInt32 = 0xBAD
        let packets: [RTCPPacket] = [
            .pictureLossIndication(PictureLossIndication(senderSSRC: stranger, mediaSSRC: video)),
            .fullIntraRequest(FullIntraRequest(senderSSRC: stranger, entries: [FullIntraRequest.Entry(ssrc: video, sequenceNumber: 7)])),
            .genericNACK(GenericNACK(senderSSRC: stranger, mediaSSRC: video, lostSequenceNumbers: [1, 2, 3])),
            // Every packet of the last while "lost": the estimate would collapse.
            .transportFeedback(TransportFeedback(senderSSRC: stranger, mediaSSRC: 0, baseSequenceNumber: 0, packetStatusCount: 200,
                                                 referenceTime: 0, feedbackPacketCount: 0, chunks: [.runLength(.notReceived, count: 200)],
                                                 receiveDeltas: [])),
            .receiverReport(ReceiverReport(ssrc: stranger, reports: [ReceptionReport(
                ssrc: video, fractionLost: 255, cumulativeLost: 1_000, extendedHighestSequenceNumber: 1, jitter: 90_000,
                lastSenderReport: 0, delaySinceLastSenderReport: 0)])),
            .goodbye(Goodbye(sources: [audio, video])),
        ]
        return packets.map { RTCPPacket.serializedCompound([$0]) }
    }

    @Test func forgedAndReplayedFeedbackChangesNothingAndIsCounted() async throws {
        try await Heavy.run {
            var quiet = try CoreCallHarness()
            try quiet.run(until: .seconds(6))

            var attacked = try CoreCallHarness()
            let captured = Captured()
            attacked.link.observer = { sent in
                if sent.from == .b && sent.kind == .rtcp { captured.rtcpFromBob.append(sent.bytes) }
            }
            let stranger = SocketAddress(addressBytes: [203, 0, 113, 9], port: 40_000)!
            let forged = Self.forgedFeedback(about: attacked)
            var step = Duration.seconds(1)
            while step < .seconds(6) {
                try attacked.run(until: step)
                for bytes in forged {
                    attacked.link.inject(bytes, into: .a, from: stranger, now: attacked.now)
                    attacked.link.inject(bytes, into: .a, from: attacked.link.addressB, now: attacked.now)
                    attacked.link.inject(bytes, into: .b, from: attacked.link.addressA, now: attacked.now)
                }
                // Genuine SRTCP from bob, sent again: a replay.
                for bytes in captured.rtcpFromBob.prefix(5) {
                    attacked.link.inject(bytes, into: .a, from: attacked.link.addressB, now: attacked.now)
                }
                step += .seconds(1)
            }
            try attacked.run(until: .seconds(6))

            // The media is exactly what it was without the attack.
            #expect(attacked.alice.keyframesEncoded == quiet.alice.keyframesEncoded)
            #expect(attacked.bob.framesDecoded == quiet.bob.framesDecoded)
            let video = try #require(attacked.alice.core.statistics(of: attacked.alice.videoOut!))
            let quietVideo = try #require(quiet.alice.core.statistics(of: quiet.alice.videoOut!))
            #expect(video.retransmittedPacketsSent == quietVideo.retransmittedPacketsSent)
            #expect(video.pliCount == 0 && video.nackCount == 0 && video.firCount == 0)
            #expect(attacked.alice.core.bandwidthEstimator.targetBitrate == quiet.alice.core.bandwidthEstimator.targetBitrate)
            #expect(attacked.bob.goodbyes.isEmpty, "a forged BYE ends nothing")
            #expect(try #require(attacked.bob.core.statistics(of: attacked.bob.audioIn)).endedByGoodbye == false)

            // And every forgery is counted.
            let alice = attacked.alice.core.transportStatistics
            #expect(alice.foreignPathDatagrams == 5 * forged.count, "the stranger's address is not the path")
            #expect(alice.rtcpAuthenticationFailures == 5 * forged.count, "plain RTCP from the peer's address does not authenticate")
            #expect(alice.rtcpReplays >= 5 * 4, "bob's own SRTCP sent twice is a replay: \(alice.rtcpReplays)")
            #expect(attacked.bob.core.transportStatistics.rtcpAuthenticationFailures == 5 * forged.count)
        }
    }

    @Test func rtpFromAThirdAddressIsDroppedOncePinned() async throws {
        try await Heavy.run {
            var call = try CoreCallHarness(video: false)
            let captured = Captured()
            call.link.observer = { sent in
                if sent.from == .b && sent.kind == .rtp { captured.rtcpFromBob.append(sent.bytes) }
            }
            try call.run(until: .seconds(1))
            let stranger = SocketAddress(addressBytes: [203, 0, 113, 9], port: 40_000)!
            let before = try #require(call.alice.core.statistics(of: call.alice.audioIn)).packetsReceived
            for bytes in captured.rtcpFromBob.suffix(10) { call.link.inject(bytes, into: .a, from: stranger, now: call.now) }
            #expect(call.alice.core.transportStatistics.foreignPathDatagrams == 10)
            #expect(try #require(call.alice.core.statistics(of: call.alice.audioIn)).packetsReceived == before)
        }
    }
}

@Suite struct MediaCoreConsent {
    @Test func aPeerThatStopsAnsweringLosesConsentAfterThirtySeconds() async throws {
        try await Heavy.run {
            var call = try CoreCallHarness(video: false)
            try call.run(until: .seconds(12))
            #expect(call.alice.core.transportStatistics.consentAnswersReceived >= 1)
            #expect(!call.alice.consentExpired)
            // Bob vanishes: nothing of his gets through any more.
            call.link.outages = [call.now ..< .seconds(1_000)]
            call.bobStops = call.now
            let vanished = call.now
            try call.run(until: vanished + .seconds(25))
            #expect(!call.alice.consentExpired, "consent holds for 30 s after the last answer")
            try call.run(until: vanished + .seconds(40))
            #expect(call.alice.consentExpired)
            let consent = try #require(call.alice.core.consentState)
            #expect(consent.isExpired && consent.lastGranted >= vanished - .seconds(6))
        }
    }
}
