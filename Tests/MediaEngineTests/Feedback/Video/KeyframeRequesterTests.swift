import Testing
@testable import MediaEngine

@Suite struct KeyframeRequesterTests {
    /// Times at which `requester` sends over `duration` in 1 ms steps, with `request`
    /// called at every step (a receiver that keeps finding problems).
    func sendTimes(_ requester: inout KeyframeRequester, rtt: Duration, duration: Duration = .seconds(2),
                   reason: KeyframeRequester.Reason = .frameDeadlineMissed) -> [Duration] {
        var times: [Duration] = []
        var now = Duration.zero
        while now < duration {
            requester.request(reason, now: now)
            if requester.process(now: now, rtt: rtt) != nil { times.append(now) }
            now += .milliseconds(1)
        }
        return times
    }

    @Test func requestsGoOutAtOnceThenAtMostEvery300Milliseconds() {
        var requester = KeyframeRequester()
        let times = sendTimes(&requester, rtt: .milliseconds(100))
        #expect(times == [0, 300, 600, 900, 1_200, 1_500, 1_800].map { Duration.milliseconds($0) })
        #expect(requester.statistics.pliSent == 7 && requester.statistics.firSent == 0)
        #expect(requester.statistics.coalesced == 1_999)
    }

    @Test func aLongRTTStretchesTheInterval() {
        var requester = KeyframeRequester()
        let times = sendTimes(&requester, rtt: .milliseconds(700))
        #expect(times == [0, 700, 1_400].map { Duration.milliseconds($0) })
    }

    @Test func aKeyframeEndsTheNeedAndANewNeedStillRespectsTheInterval() {
        var requester = KeyframeRequester()
        let rtt = Duration.milliseconds(100)
        requester.request(.decoderCorruption, now: .zero)
        #expect(requester.process(now: .zero, rtt: rtt) == .pli)
        requester.keyframeReceived(now: .milliseconds(120))
        #expect(!requester.isPending)
        #expect(requester.process(now: .milliseconds(150), rtt: rtt) == nil)
        requester.request(.packetsGivenUp, now: .milliseconds(200))
        #expect(requester.process(now: .milliseconds(299), rtt: rtt) == nil)
        #expect(requester.nextRequestTime(rtt: rtt) == .milliseconds(300))
        #expect(requester.process(now: .milliseconds(300), rtt: rtt) == .pli)
    }

    @Test func aStreamRestartAsksWithFIRAndEachFIRIsANewCommand() {
        var requester = KeyframeRequester()
        let rtt = Duration.milliseconds(100)
        requester.request(.streamRestart, now: .zero)
        #expect(requester.process(now: .zero, rtt: rtt) == .fir(sequenceNumber: 0))
        #expect(requester.process(now: .milliseconds(300), rtt: rtt) == .fir(sequenceNumber: 1))
        requester.keyframeReceived(now: .milliseconds(350))
        requester.request(.frameDeadlineMissed, now: .seconds(1))
        #expect(requester.process(now: .seconds(1), rtt: rtt) == .pli)
    }

    @Test(arguments: [(KeyframeRequester.FIRPolicy.never, KeyframeRequester.Request.pli),
                      (.always, .fir(sequenceNumber: 0))])
    func thePolicyChoosesPLIOrFIR(policy: KeyframeRequester.FIRPolicy, expected: KeyframeRequester.Request) {
        var configuration = KeyframeRequester.Configuration()
        configuration.firPolicy = policy
        var requester = KeyframeRequester(configuration: configuration)
        requester.request(.streamRestart, now: .zero)
        #expect(requester.process(now: .zero, rtt: .milliseconds(50)) == expected)
    }
}
