import Foundation
import Testing
@testable import MediaEngine

@Suite struct QualityMetrics {
    @Test func psnrOfIdenticalFramesIsCappedAndDropsWithNoise() {
        var pattern = TestPattern(width: 64, height: 48)
        let frame = pattern.nextFrame()
        #expect(VideoQuality.psnr(frame, frame) >= 99)
        #expect(abs(VideoQuality.ssim(frame, frame) - 1) < 1e-9)
        var noisy = frame
        noisy.withMutablePlanes { y, _, _ in
            for i in stride(from: 0, to: y.count, by: 2) { y[i] = y[i] &+ 4 }
        }
        // Half the luma samples off by 4: MSE = 8 over Y, Y is 2/3 of all samples.
        let expected = 10 * log10(255.0 * 255.0 / (8.0 * 2 / 3))
        #expect(abs(VideoQuality.psnr(frame, noisy) - expected) < 0.2)
        #expect(VideoQuality.ssim(frame, noisy) < 1)
    }

    @Test func audioMeasuresFindDelayAndNoise() {
        var tones = ToneGenerator(.multiTone([313, 797, 1_231]))
        let source = tones.clip(seconds: 0.5).samples
        let delayed = [Int16](repeating: 0, count: 123) + source
        let lag = source.withUnsafeBufferPointer { r in
            delayed.withUnsafeBufferPointer { t in AudioQuality.bestLag(reference: r, test: t, range: 0...500) }
        }
        #expect(lag == 123)
        let halved = source.map { $0 / 2 }
        source.withUnsafeBufferPointer { r in
            halved.withUnsafeBufferPointer { t in
                #expect(AudioQuality.correlation(reference: r, test: t, lag: 0) > 0.9999)
                // The error is half the signal: SNR = 20 log10(2).
                #expect(abs(AudioQuality.snr(reference: r, test: t, lag: 0) - 6.02) < 0.05)
            }
        }
    }

    @Test func trackedCorrelationFollowsAudioThatAJitterBufferShortenedAndStretched() {
        var tones = ToneGenerator(.multiTone([313, 797, 1_231]))
        let source = tones.clip(seconds: 2).samples
        // 40 ms of delay, then 7 ms cut out at 0.6 s and 11 ms repeated at 1.2 s.
        var played = [Int16](repeating: 0, count: 1_920) + source[0..<28_800]
        played += source[29_136..<57_600]
        played += source[57_072..<source.count]
        let plain = source.withUnsafeBufferPointer { r in
            played.withUnsafeBufferPointer { t in AudioQuality.correlation(reference: r, test: t, lag: 1_920, start: 0, count: 80_000) }
        }
        let tracked = source.withUnsafeBufferPointer { r in
            played.withUnsafeBufferPointer { t in AudioQuality.trackedCorrelation(reference: r, test: t, testStart: 4_800, lagRange: 0...2_400) }
        }
        #expect(plain < 0.5, "one lag cannot fit both cuts: \(plain)")
        #expect(tracked.correlation > 0.9, "the two blocks holding a cut match only in part: \(tracked.correlation)")
        #expect(tracked.lag == 1_920 - 336 + 528, "the last block's lag includes both changes")
        var noise = SeededRandom(seed: 5)
        let unrelated = (0..<played.count).map { _ in Int16.random(in: -8_000...8_000, using: &noise) }
        let none = source.withUnsafeBufferPointer { r in
            unrelated.withUnsafeBufferPointer { t in AudioQuality.trackedCorrelation(reference: r, test: t, testStart: 4_800, lagRange: 0...960) }
        }
        #expect(none.correlation < 0.2, "noise does not correlate: \(none.correlation)")
    }
}
