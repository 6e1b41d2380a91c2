import Testing
@testable import MediaEngine

@Suite struct VideoFeedbackResponderTests {
    let ssrc: UInt32 = 0xCAFE_0001
    let rtt = Duration.milliseconds(100)

    @Test func aPLIStormForcesAtMostOneKeyframePer200Milliseconds() {
        var responder = VideoFeedbackResponder(ssrc: ssrc)
        var forced = 0
        // 1000 PLIs a second for 2 s, frames every 33 ms.
        for millisecond in 0..<2_000 {
            let now = Duration.milliseconds(millisecond)
            responder.handle(.pictureLossIndication(PictureLossIndication(senderSSRC: 9, mediaSSRC: ssrc)), now: now, rtt: rtt) { _ in }
            if millisecond % 33 == 0, responder.shouldForceKeyframe(now: now) { forced += 1 }
        }
        #expect(responder.statistics.pliReceived == 2_000)
        #expect(forced == 9)  // frames at 0, 231, 462, ... 1848 ms
    }

    @Test func aRequestInsideTheIntervalWaitsInsteadOfBeingLost() {
        var responder = VideoFeedbackResponder(ssrc: ssrc)
        responder.keyframeSent(now: .zero)
        responder.handle(.pictureLossIndication(PictureLossIndication(senderSSRC: 9, mediaSSRC: ssrc)), now: .milliseconds(50),
                         rtt: rtt) { _ in }
        #expect(responder.shouldForceKeyframe(now: .milliseconds(66)) == false)
        #expect(responder.shouldForceKeyframe(now: .milliseconds(200)) == true)
        #expect(responder.shouldForceKeyframe(now: .milliseconds(233)) == false)
    }

    @Test func aRepeatedFIRNumberIsARetransmissionAndForcesNothing() {
        var responder = VideoFeedbackResponder(ssrc: ssrc)
        let fir = FullIntraRequest(senderSSRC: 9, entries: [FullIntraRequest.Entry(ssrc: ssrc, sequenceNumber: 4)])
        responder.handle(.fullIntraRequest(fir), now: .zero, rtt: rtt) { _ in }
        #expect(responder.shouldForceKeyframe(now: .zero) == true)
        responder.handle(.fullIntraRequest(fir), now: .seconds(1), rtt: rtt) { _ in }
        #expect(responder.shouldForceKeyframe(now: .seconds(1)) == false)
        let next = FullIntraRequest(senderSSRC: 9, entries: [FullIntraRequest.Entry(ssrc: ssrc, sequenceNumber: 5)])
        responder.handle(.fullIntraRequest(next), now: .seconds(2), rtt: rtt) { _ in }
        #expect(responder.shouldForceKeyframe(now: .seconds(2)) == true)
        #expect(responder.statistics.firReceived == 2 && responder.statistics.firRepeated == 1)
    }

    @Test func feedbackForUnknownSSRCsIsIgnored() throws {
        var responder = VideoFeedbackResponder(ssrc: ssrc)
        let bytes = try RetransmissionHistoryTests.packet(1)
        bytes.withUnsafeBytes { _ = responder.packetSent($0, now: .zero) }
        var resent = 0
        for other in [UInt32(0), 0xBAD, ssrc &+ 1] {
            responder.handle(.pictureLossIndication(PictureLossIndication(senderSSRC: 9, mediaSSRC: other)), now: .zero, rtt: rtt) { _ in }
            responder.handle(.fullIntraRequest(FullIntraRequest(senderSSRC: 9, entries: [.init(ssrc: other, sequenceNumber: 1)])),
                             now: .zero, rtt: rtt) { _ in }
            responder.handle(.genericNACK(GenericNACK(senderSSRC: 9, mediaSSRC: other, lostSequenceNumbers: [1])),
                             now: .zero, rtt: rtt) { _ in resent += 1 }
        }
        #expect(resent == 0)
        #expect(!responder.isKeyframeRequested)
        #expect(responder.statistics.foreignFeedback == 9)
    }
}
