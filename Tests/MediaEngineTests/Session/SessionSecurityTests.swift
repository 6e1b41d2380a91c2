import Foundation
import Testing
import TestSupport
@testable import MediaEngine

/// The attack that opened issue 13, on real sockets: during a video call, a process on
/// another port reads the SSRCs from the clear RTP headers and sends what a receiver would
/// send (plain RTCP: PLI, FIR, NACK, transport feedback, a receiver report claiming total
/// loss, BYE) to both ends. Before the media core pinned the path and required SRTCP, the
/// caller took the PLIs: 27 keyframes in 12 s instead of 6.
@Suite(.serialized) struct SessionSecurity {
    final class Seen: Sendable {
        let disconnected = Locked<[String]>([])
        let connected = Locked(false)
        let frames = Locked(0)
    }

    static func forged(video: UInt32, audio: UInt32) -> [[UInt8]] {
        let stranger: UInt32 = 0x0BAD_5EED
        let packets: [RTCPPacket] = [
            .pictureLossIndication(PictureLossIndication(senderSSRC: stranger, mediaSSRC: video)),
            .fullIntraRequest(FullIntraRequest(senderSSRC: stranger, entries: [FullIntraRequest.Entry(ssrc: video, sequenceNumber: 1)])),
            .genericNACK(GenericNACK(senderSSRC: stranger, mediaSSRC: video, lostSequenceNumbers: 0..<64)),
            .transportFeedback(TransportFeedback(senderSSRC: stranger, mediaSSRC: 0, baseSequenceNumber: 0, packetStatusCount: 500,
                                                 referenceTime: 0, feedbackPacketCount: 0, chunks: [.runLength(.notReceived, count: 500)],
                                                 receiveDeltas: [])),
            .receiverReport(ReceiverReport(ssrc: stranger, reports: [ReceptionReport(ssrc: video, fractionLost: 255, cumulativeLost: 10_000)])),
            .goodbye(Goodbye(sources: [audio, video])),
        ]
        return packets.map { RTCPPacket.serializedCompound([$0]) }
    }

    @Test func aStrangersFeedbackChangesNothingInACallAndIsCounted() async throws {
        try await Heavy.run {
            func make(_ audio: String) throws -> MediaSession {
                var configuration = MediaSession.Configuration(audio: try MediaSources.audio(audio), video: try MediaSources.video("testsrc:320x240@15"))
                configuration.host = "127.0.0.1"
                configuration.videoBitrate = 400_000
                return try MediaSession(configuration: configuration)
            }
            let caller = try make("sine:440")
            let callee = try make("sine:660")
            let atCaller = Seen()
            let atCallee = Seen()
            try callee.start(remote: caller.local) { event in
                switch event {
                case .disconnected(let why): atCallee.disconnected.withLock { $0.append(why) }
                case .remoteVideoFrame: atCallee.frames.withLock { $0 += 1 }
                default: break
                }
            }
            try caller.start(remote: callee.local) { event in
                switch event {
                case .connected: atCaller.connected.withLock { $0 = true }
                case .disconnected(let why): atCaller.disconnected.withLock { $0.append(why) }
                default: break
                }
            }
            let stranger = try UDPSocket(bindTo: SocketAddress(host: "127.0.0.1", port: 0))
            defer { stranger.close() }
            let forged = Self.forged(video: try #require(caller.local.videoSSRC), audio: caller.local.audioSSRC)
            let seconds = 6
            var sent = 0
            for _ in 0..<(seconds * 10) {
                for bytes in forged {
                    try bytes.withUnsafeBytes { try stranger.send($0, to: caller.local.candidates[0].address) }
                    try bytes.withUnsafeBytes { try stranger.send($0, to: callee.local.candidates[0].address) }
                    sent += 1
                }
                // Ten rounds a second for the whole call: the attack's pace is the scenario.
                try await Task.sleep(for: .milliseconds(100))
            }
            // What the call went through before either side hangs up (hanging up is a real BYE).
            let disconnections = atCaller.disconnected.withLock { $0.detached } + atCallee.disconnected.withLock { $0.detached }
            let calleeFrames = atCallee.frames.withLock { $0 }
            let callerSummary = await caller.stop()
            let calleeSummary = await callee.stop()

            let media = try #require(callerSummary.sent)
            // Keyframes: the first and the periodic one every 2 s, nothing the stranger asked for.
            let periodic = media.videoFrames / 30 + 1
            print("under attack: \(media.keyframes) keyframes in \(media.videoFrames) frames (periodic \(periodic)), "
                  + "retransmissions \(media.retransmissions), video bitrate \(media.videoBitrate), target \(media.targetBitrate ?? -1), "
                  + "forged datagrams dropped \(callerSummary.received?.transport.foreignPathDatagrams ?? -1) + "
                  + "\(calleeSummary.received?.transport.foreignPathDatagrams ?? -1)")
            #expect(atCaller.connected.withLock { $0 })
            #expect(media.keyframes <= periodic + 1, "\(media.keyframes) keyframes for \(media.videoFrames) frames")
            #expect(media.keyframeRequests <= 1 && media.nacksReceived == 0 && media.retransmissions == 0)
            // Forged transport feedback and reports claim total loss: taken, they would cut
            // video to its 50 kb/s floor.
            #expect(media.videoBitrate >= 200_000, "video bitrate \(media.videoBitrate)")
            #expect(disconnections.isEmpty, "a forged BYE ends nothing: \(disconnections)")
            #expect(calleeFrames >= media.videoFrames * 7 / 10, "\(calleeFrames) of \(media.videoFrames) frames shown")
            // Every forged datagram was counted and dropped: from a strange address once the path
            // is pinned, as unauthenticated RTCP before (the first few, during the check).
            for summary in [callerSummary, calleeSummary] {
                let transport = try #require(summary.received?.transport)
                #expect(transport.foreignPathDatagrams + transport.rtcpAuthenticationFailures == sent)
                #expect(transport.foreignPathDatagrams >= sent * 9 / 10)
            }
        }
    }
}
