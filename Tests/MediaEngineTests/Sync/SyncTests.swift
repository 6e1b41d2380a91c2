import Testing
@testable import MediaEngine

@Suite struct RTCPIntervals {
    @Test func senderAtOneMegabitReportsAboutEveryHalfSecondWithTheReducedMinimum() {
        var interval = RTCPInterval(sessionBandwidth: 1_000_000, weSent: true)
        // Reduced minimum 360 / 1000 kb/s = 0.36 s, halved for the first report.
        #expect(abs(interval.nominalInterval - 0.18) < 1e-9)
        interval.reportSent(size: 100)
        #expect(abs(interval.nominalInterval - 0.36) < 1e-9)
        var random = SeededRandom(seed: 7)
        let draws = (0..<1_000).map { _ in interval.nextInterval(using: &random) / .seconds(1) }
        // Uniform in [0.5, 1.5] x 0.36 s / (e - 3/2).
        let center: Double = 0.36 / 1.21828
        let lowest: Double = draws.min() ?? 0
        let highest: Double = draws.max() ?? 0
        let mean: Double = draws.reduce(0, +) / 1_000
        #expect(lowest >= 0.5 * center - 1e-9)
        #expect(highest <= 1.5 * center + 1e-9)
        #expect(abs(mean - center) < 0.01)
    }

    @Test func withoutTheReducedMinimumReportsAreFiveSecondsApart() {
        var interval = RTCPInterval(sessionBandwidth: 64_000, weSent: false, reducedMinimum: false)
        #expect(interval.nominalInterval == 2.5)
        interval.reportSent(size: 72)
        #expect(interval.nominalInterval == 5)
    }

    @Test func manyMembersOnALowRateStretchTheInterval() {
        var interval = RTCPInterval(sessionBandwidth: 64_000, weSent: false, reducedMinimum: false)
        interval.members = 500
        interval.senders = 2
        for _ in 0..<200 { interval.reportSent(size: 200) }
        // 498 receivers share 75 % of 5 % of 64 kb/s with 228-byte reports (UDP/IP included).
        let expected: Double = 498 * 228 / 300
        #expect(abs(interval.nominalInterval - expected) < 0.5)
    }
}

@Suite struct LipSyncing {
    @Test func senderReportsMapTimestampsAcrossTheWrap() {
        let ntp: UInt64 = (3_900_000_000 << 32) | (1 << 31)  // .5 s
        let mapping = SenderClockMapping(ntp: ntp, rtpTimestamp: UInt32.max - 479, clockRate: 48_000)
        let later: Double = mapping.captureTime(of: 480) - 3_900_000_000.52
        let earlier: Double = mapping.captureTime(of: UInt32.max - 48_479) - 3_899_999_999.5
        #expect(abs(later) < 1e-6)
        #expect(abs(earlier) < 1e-6)
    }

    /// Audio takes 80 ms from capture to playout, video 210 ms: lip sync brings the
    /// offset within 60 ms by delaying audio, in steps.
    @Test(arguments: [(0.080, 0.210), (0.250, 0.090)])
    func offsetConvergesWithinSixtyMilliseconds(audioPath: Double, videoPath: Double) {
        var sync = LipSync()
        let clockOffset = 12.345  // local clock minus sender clock
        let start = 3_900_000_000.0
        func ntp(_ seconds: Double) -> UInt64 {
            UInt64(seconds) << 32 | UInt64((seconds - seconds.rounded(.down)) * 4_294_967_296)
        }
        sync.audioSenderReport(SenderClockMapping(ntp: ntp(start), rtpTimestamp: 1_000, clockRate: 48_000))
        sync.videoSenderReport(SenderClockMapping(ntp: ntp(start), rtpTimestamp: 7_000, clockRate: 90_000))
        var worst = 0.0
        for second in 0..<20 {
            for frame in 0..<50 {
                let capture: Double = Double(second) + Double(frame) * 0.02
                let audioTimestamp = UInt32(1_000 + Int(capture * 48_000))
                let audioExtra: Double = sync.audioExtraDelay / .seconds(1)
                let audioTime: Double = start + capture + clockOffset + audioPath + audioExtra
                sync.audioPlayed(timestamp: audioTimestamp, localTime: audioTime)
                if frame % 2 == 0 {
                    let videoTimestamp = UInt32(7_000 + Int(capture * 90_000))
                    let videoExtra: Double = sync.videoExtraDelay / .seconds(1)
                    let videoTime: Double = start + capture + clockOffset + videoPath + videoExtra
                    sync.videoShown(timestamp: videoTimestamp, localTime: videoTime)
                }
            }
            sync.update()
            if second >= 10 { worst = max(worst, abs((sync.offset ?? .seconds(1)) / .seconds(1))) }
        }
        #expect(worst < 0.060, "offset \(worst * 1000) ms after 10 s")
        let added: Double = (audioPath < videoPath ? sync.audioExtraDelay : sync.videoExtraDelay) / .seconds(1)
        let needed: Double = abs(videoPath - audioPath)
        #expect(abs(added - needed) < 0.045, "added \(added * 1000) ms")
    }
}
