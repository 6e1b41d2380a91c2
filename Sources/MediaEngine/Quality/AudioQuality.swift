import Foundation

/// Objective audio fidelity: align a decoded signal with its source, then measure
/// correlation and SNR.
///
/// Signals are single channels (pass one channel of a stereo frame, or mono samples).
/// Codec output lags its input by the codec's delay, so every measure takes a `lag`:
/// `test[i + lag]` is compared with `reference[i]`.
public enum AudioQuality {
    /// The lag in `range` at which `test` best matches `reference` (highest normalised
    /// cross-correlation), searched over at most `window` samples from `start`.
    public static func bestLag(reference: UnsafeBufferPointer<Int16>, test: UnsafeBufferPointer<Int16>,
                               range: ClosedRange<Int>, start: Int = 0, window: Int = 9_600) -> Int {
        var best = range.lowerBound
        var bestScore = -Double.infinity
        for lag in range {
            let score = correlation(reference: reference, test: test, lag: lag, start: start, count: window)
            if score > bestScore {
                bestScore = score
                best = lag
            }
        }
        return best
    }

    /// Pearson correlation of `reference[start..<start+count]` with the lagged test
    /// signal; the span is clipped to what both signals hold. Returns 0 when a span is
    /// empty or silent.
    public static func correlation(reference: UnsafeBufferPointer<Int16>, test: UnsafeBufferPointer<Int16>,
                                   lag: Int, start: Int = 0, count: Int = .max) -> Double {
        let span = overlap(reference.count, test.count, lag: lag, start: start, count: count)
        guard !span.isEmpty else { return 0 }
        var sumA = 0.0, sumB = 0.0, sumAA = 0.0, sumBB = 0.0, sumAB = 0.0
        for i in span {
            let a = Double(reference[i])
            let b = Double(test[i + lag])
            sumA += a
            sumB += b
            sumAA += a * a
            sumBB += b * b
            sumAB += a * b
        }
        let n = Double(span.count)
        let covariance = sumAB - sumA * sumB / n
        let varianceA = sumAA - sumA * sumA / n
        let varianceB = sumBB - sumB * sumB / n
        guard varianceA > 0, varianceB > 0 else { return 0 }
        return covariance / (varianceA * varianceB).squareRoot()
    }

    /// Signal-to-noise ratio in dB: source energy over the energy of the difference,
    /// on the same span as `correlation`. Infinite for identical signals.
    public static func snr(reference: UnsafeBufferPointer<Int16>, test: UnsafeBufferPointer<Int16>,
                           lag: Int, start: Int = 0, count: Int = .max) -> Double {
        let span = overlap(reference.count, test.count, lag: lag, start: start, count: count)
        guard !span.isEmpty else { return 0 }
        var signal = 0.0, noise = 0.0
        for i in span {
            let a = Double(reference[i])
            let d = Double(test[i + lag]) - a
            signal += a * a
            noise += d * d
        }
        guard noise > 0 else { return .infinity }
        guard signal > 0 else { return -.infinity }
        return 10 * log10(signal / noise)
    }

    /// Correlation of audio that went through a jitter buffer, which shortens and stretches
    /// it a little to follow the network: the test signal is cut into blocks, each block is
    /// aligned on its own (the first searched over `lagRange`, the next within
    /// `trackingRange` of the previous lag), and the blocks' correlations are averaged.
    ///
    /// - Parameters:
    ///   - testStart: First test sample to use (skip the start-up).
    ///   - blockSize: Samples per block (100 ms by default).
    ///   - lagRange: Offsets of the reference against the test for the first block:
    ///     `test[testStart + i]` is compared with `reference[testStart + i - lag]`.
    /// - Returns: The mean correlation, and the lag of the last block (samples).
    public static func trackedCorrelation(reference: UnsafeBufferPointer<Int16>, test: UnsafeBufferPointer<Int16>,
                                          testStart: Int, blockSize: Int = 4_800, lagRange: ClosedRange<Int>,
                                          trackingRange: Int = 480) -> (correlation: Double, lag: Int) {
        var lag: Int?
        var sum = 0.0
        var blocks = 0
        var position = testStart
        while position + blockSize <= test.count {
            let range = lag.map { max(lagRange.lowerBound, $0 - trackingRange)...min(lagRange.upperBound, $0 + trackingRange) } ?? lagRange
            var best = (lag: range.lowerBound, score: -Double.infinity)
            for candidate in range where position - candidate >= 0 && position - candidate + blockSize <= reference.count {
                let score = correlation(reference: reference, test: test, lag: candidate, start: position - candidate, count: blockSize)
                if score > best.score { best = (candidate, score) }
            }
            guard best.score > -Double.infinity else { break }
            lag = best.lag
            sum += best.score
            blocks += 1
            position += blockSize
        }
        return (blocks == 0 ? 0 : sum / Double(blocks), lag ?? 0)
    }

    /// Indices `i` of the reference such that `i` and `i + lag` are valid.
    private static func overlap(_ referenceCount: Int, _ testCount: Int, lag: Int, start: Int, count: Int) -> Range<Int> {
        let lower = max(start, max(0, -lag))
        let upperByCount = count > referenceCount ? referenceCount : start + count
        let upper = min(upperByCount, min(referenceCount, testCount - lag))
        return lower < upper ? lower..<upper : 0..<0
    }

    /// The frequency of a tone, from the spacing of its rising zero crossings (each
    /// located to a fraction of a sample by linear interpolation). Accurate to well under
    /// 1 Hz for a clean tone of a second; meaningless for noise or chords.
    /// - Returns: Hz, or nil when fewer than two rising crossings are found.
    public static func toneFrequency(_ samples: UnsafeBufferPointer<Int16>, sampleRate: Int = AudioFrame.sampleRate) -> Double? {
        var first: Double?
        var last = 0.0
        var crossings = 0
        var index = 1
        while index < samples.count {
            let a = Double(samples[index - 1])
            let b = Double(samples[index])
            if a < 0 && b >= 0 {
                let position = Double(index - 1) + (-a) / (b - a)
                if first == nil { first = position }
                last = position
                crossings += 1
            }
            index += 1
        }
        guard let first, crossings >= 2, last > first else { return nil }
        return Double(crossings - 1) * Double(sampleRate) / (last - first)
    }

    /// The amplitude of the component at `frequency` (Goertzel), as a fraction of full
    /// scale: 0.5 for a sine at half scale, about 0 when the frequency is absent. Tells
    /// the tones of a mix apart where `toneFrequency` cannot.
    public static func toneLevel(_ samples: UnsafeBufferPointer<Int16>, frequency: Double,
                                 sampleRate: Int = AudioFrame.sampleRate) -> Double {
        guard !samples.isEmpty else { return 0 }
        let coefficient = 2 * cos(2 * Double.pi * frequency / Double(sampleRate))
        var previous = 0.0
        var beforePrevious = 0.0
        for sample in samples {
            let current = Double(sample) / 32_768 + coefficient * previous - beforePrevious
            beforePrevious = previous
            previous = current
        }
        let power = previous * previous + beforePrevious * beforePrevious - coefficient * previous * beforePrevious
        return 2 * power.squareRoot() / Double(samples.count)
    }
}
