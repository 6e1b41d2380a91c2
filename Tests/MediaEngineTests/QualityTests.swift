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
}
