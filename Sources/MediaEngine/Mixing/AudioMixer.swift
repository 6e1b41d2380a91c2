/// Mixes 48 kHz Int16 audio with per-input gains: sums in 32 bits, then saturates to
/// Int16 once, so inputs that overflow together clip instead of wrapping around.
/// Allocation-free: callers own every buffer.
public enum AudioMixer {
    /// Gains are applied in Q16 fixed point: 65536 is unity.
    static func fixedGain(_ gain: Double) -> Int64 { Int64((max(0, min(gain, 8)) * 65_536).rounded()) }

    /// Adds `input × gain` to `accumulator` over the shorter of the two lengths.
    public static func accumulate(_ input: UnsafeBufferPointer<Int16>, gain: Double, into accumulator: UnsafeMutableBufferPointer<Int32>) {
        let factor = fixedGain(gain)
        for index in 0..<min(input.count, accumulator.count) {
            accumulator[index] &+= Int32(truncatingIfNeeded: (Int64(input[index]) * factor) >> 16)
        }
    }

    /// Writes the accumulated sum to `output`, saturating at the Int16 range.
    /// - Returns: How many samples were clipped.
    @discardableResult
    public static func finish(_ accumulator: UnsafeBufferPointer<Int32>, into output: UnsafeMutableBufferPointer<Int16>) -> Int {
        var clipped = 0
        for index in 0..<min(accumulator.count, output.count) {
            output[index] = saturate(Int64(accumulator[index]), clipped: &clipped)
        }
        return clipped
    }

    /// `output = saturate(output + addition × gain)`, in place: mixing one input into a frame.
    /// - Returns: How many samples were clipped.
    @discardableResult
    public static func add(_ addition: UnsafeBufferPointer<Int16>, gain: Double, into output: UnsafeMutableBufferPointer<Int16>) -> Int {
        let factor = fixedGain(gain)
        var clipped = 0
        for index in 0..<min(addition.count, output.count) {
            output[index] = saturate(Int64(output[index]) + ((Int64(addition[index]) * factor) >> 16), clipped: &clipped)
        }
        return clipped
    }

    /// `value` limited to the Int16 range, counting the samples that had to be limited.
    @inline(__always)
    static func saturate(_ value: Int64, clipped: inout Int) -> Int16 {
        guard value > Int64(Int16.max) || value < Int64(Int16.min) else { return Int16(value) }
        clipped += 1
        return value > 0 ? .max : .min
    }

    /// Remixes interleaved frames: to mono by averaging every channel; mono to stereo or
    /// more by copying it to the first two channels; otherwise channel by channel, with
    /// channels past the input's left silent and channels past the output's dropped.
    public static func remix(_ input: UnsafeBufferPointer<Int16>, channels inputChannels: Int,
                             into output: UnsafeMutableBufferPointer<Int16>, channels outputChannels: Int) {
        let frames = min(input.count / inputChannels, output.count / outputChannels)
        if outputChannels == 1 {
            for frame in 0..<frames {
                var sum = 0
                for channel in 0..<inputChannels { sum += Int(input[frame * inputChannels + channel]) }
                output[frame] = Int16(sum / inputChannels)
            }
            return
        }
        for frame in 0..<frames {
            for channel in 0..<outputChannels {
                let source: Int16
                if inputChannels == 1 {
                    source = channel < 2 ? input[frame] : 0
                } else {
                    source = channel < inputChannels ? input[frame * inputChannels + channel] : 0
                }
                output[frame * outputChannels + channel] = source
            }
        }
    }
}
