import Foundation
@testable import MediaEngine
@testable import MediaSimulation
import Testing
import TestSupport

/// The whole sender and receiver over a real impaired path (the impairment proxy on
/// loopback, in real time): proves that NACK and retransmission, transport-wide feedback
/// and the bandwidth estimate are wired end to end. The quality figures themselves are
/// measured deterministically by the simulations in Jitter/ and Feedback/.
@Suite(.serialized) struct ImpairedSessions {
    struct Outcome: Sendable {
        var received: [MediaReceiver.StreamStatistics]
        var feedbackSent: Int
        var roundTripTime: Double?
    }

    func run(_ settings: ImpairmentSettings, seconds: Double, videoBitrate: Int)
        throws -> (sent: MediaSender.Statistics, received: Outcome) {
        // Audio and video bundled on one port, RTCP muxed, as the sender sends them.
        nonisolated(unsafe) let receiver = try MediaReceiver(streams: [
            MediaReceiver.StreamDescription(kind: .audio, payloadType: 111, clockRate: 48_000, port: 0, rtcpPort: 0,
                                            keying: nil, transportSequenceExtensionID: 3),
            MediaReceiver.StreamDescription(kind: .video, payloadType: 96, clockRate: 90_000, port: 0, rtcpPort: 0,
                                            keying: nil, transportSequenceExtensionID: 3),
        ], host: "127.0.0.1")
        let proxy = try UDPImpairmentProxy(listen: SocketAddress(host: "127.0.0.1", port: 0),
                                           forward: receiver.sockets[0].localAddress, settings: settings)
        try proxy.start()
        defer { proxy.stop() }
        let limit = Duration.seconds(seconds + 3)
        let receiving = Background { () throws -> Outcome in
            let statistics = try receiver.run(duration: limit, audio: { _ in }, video: { _ in })
            return Outcome(received: statistics.streams, feedbackSent: receiver.transportFeedbackSent,
                           roundTripTime: statistics.roundTripTime)
        }
        var configuration = MediaSender.Configuration(audio: try MediaSources.audio("sine:440"),
                                                      video: try MediaSources.video("testsrc:640x480@30"),
                                                      audioDestination: proxy.localAddress, videoDestination: proxy.localAddress)
        configuration.rtcpMux = true
        configuration.videoBitrate = videoBitrate
        let sent = try MediaSender(configuration: configuration).run(duration: .seconds(seconds))
        return (sent, try receiving.wait())
    }

    @Test func lostVideoPacketsAreRetransmittedOnNACK() async throws {
        try await Heavy.run {
            var settings = ImpairmentSettings()
            settings.lossPercent = 5
            settings.delay = .milliseconds(20)
            settings.seed = 11
            let (sent, received) = try run(settings, seconds: 4, videoBitrate: 800_000)
            let video = received.received[1]
            print("impaired 5 %: discarded \(video.packetsDiscarded), lost \(video.packetsLost), rtt \(received.roundTripTime ?? -1), NACKs \(sent.nacksReceived), retransmissions \(sent.retransmissions), recovered \(video.packetsRecovered), frames \(video.framesDecoded)/\(sent.videoFrames)")
            #expect(sent.nacksReceived > 0)
            #expect(sent.retransmissions > 0)
            #expect(video.packetsRecovered > 0)
            #expect(Double(video.framesDecoded) >= Double(sent.videoFrames) * 0.8)
            // The receiver measured the path's round trip (20 ms each way) from RRTR/DLRR, so
            // retransmissions count as recovered rather than as reordered originals.
            let rtt = try #require(received.roundTripTime)
            // At least the proxy's 2 x 20 ms; the sender answers RRTR from its send loop, so a
            // busy machine adds its scheduling delay on top.
            #expect(rtt > 0.035 && rtt < 0.250, "rtt \(rtt)")
            // How many retransmissions arrive in time depends on how promptly both threads get
            // the CPU; the share is measured deterministically by VideoLossRecoveryTests (the
            // same media core in virtual time). Here the wiring is what is proven.
            #expect(video.packetsRecovered <= sent.retransmissions)
            let audio = received.received[0]
            print("impaired 5 % audio: concealed \(audio.concealedSamples) of \(audio.totalSamplesReceived), events \(audio.concealmentEvents), lost \(audio.packetsLost), received \(audio.packetsReceived), sent \(sent.audioPackets)")
            #expect(Double(audio.concealedSamples) < Double(audio.totalSamplesReceived) * 0.15)
        }
    }

    @Test func theSenderFollowsTheEstimateUnderARateCap() async throws {
        try await Heavy.run {
            var settings = ImpairmentSettings()
            settings.rateKbps = 600
            settings.delay = .milliseconds(10)
            let (sent, received) = try run(settings, seconds: 6, videoBitrate: 1_500_000)
            let video = received.received[1]
            let lossPercent = Double(video.packetsLost) * 100 / Double(max(1, sent.videoPackets))
            print("rate cap 600 kb/s: feedback \(received.feedbackSent)/\(sent.transportFeedbackReceived), target \(sent.targetBitrate ?? 0), "
                  + "video \(sent.videoBitrate), video received \(video.bytesReceived * 8 / 6_000) kb/s, lost \(video.packetsLost) (\(lossPercent) %)")
            #expect(received.feedbackSent > 10)
            #expect(sent.transportFeedbackReceived > 10)
            #expect((sent.targetBitrate ?? .max) < 600_000, "target \(sent.targetBitrate ?? 0)")
            #expect(sent.videoBitrate < 600_000)
        }
    }
}
