import CAVFormat
import Foundation
import MediaEngine

/// The path from a loudspeaker to a microphone in a room: a direct path after `delay`,
/// then reverberation that decays by 60 dB over the reverberation time (RT60), as
/// exponentially decaying noise. Scaled so that the echo of white noise is `echoLevel` dB
/// relative to what was played.
public struct RoomResponse: Sendable, Hashable {
    /// The taps at 48 kHz.
    public var taps: [Float]
    /// The acoustic delay: the first tap that is not zero.
    public var delay: Duration

    /// - Parameters:
    ///   - delay: from the speaker to the microphone (at least `Convolver.blockLength`).
    ///   - reverberationTime: RT60; the response ends there (60 dB down).
    ///   - echoLevel: the echo's energy relative to the far end, dB (negative: quieter).
    ///   - seed: the reverberation's noise.
    public init(delay: Duration = .milliseconds(60), reverberationTime: Duration = .milliseconds(250), echoLevel: Double = -4,
                seed: UInt64 = 1) {
        let rate = Double(AudioFrame.sampleRate)
        let start = Int((delay.seconds * rate).rounded())
        let length = max(1, Int(reverberationTime.seconds * rate))
        var random = SeededRandom(seed: seed)
        var taps = [Float](repeating: 0, count: start + length)
        // Amplitude down 60 dB (a factor of 1000) over the reverberation time.
        let decay = log(1_000.0) / Double(length)
        taps[start] = 1
        for index in 1..<length { taps[start + index] = Float(0.35 * random.normal() * exp(-decay * Double(index))) }
        let energy = taps.reduce(0.0) { $0 + Double($1) * Double($1) }
        let scale = Float((pow(10, echoLevel / 10) / energy).squareRoot())
        self.taps = taps.map { $0 * scale }
        self.delay = delay
    }
}

/// Streaming convolution with a room response: uniformly partitioned overlap-save over
/// libavutil's FFT. `process` returns as many samples as it takes and adds no delay of its
/// own: the response's first `blockLength` taps must be zero (a room's acoustic delay is
/// longer), so each output block depends only on input that has already come.
public final class Convolver {
    /// Samples per partition (5.3 ms).
    public static let blockLength = 256
    private let size = 2 * Convolver.blockLength
    private let partitions: Int
    /// Spectra of the response's partitions, shifted one block earlier: partition p holds
    /// taps (p + 1)·B ..< (p + 2)·B.
    private var partitionSpectra: [AVComplexFloat]
    /// Spectra of the last `partitions` input windows, a ring.
    private var history: [AVComplexFloat]
    private var newest = 0
    /// The last two input blocks.
    private var window: [Float]
    private var pending: [Float]
    private var pendingCount = 0
    /// Output not yet returned (starts with one block of the response's leading zeros).
    private var output: [Float]
    private var outputRead = 0
    private var scratch: [AVComplexFloat]
    private var spectrum: [AVComplexFloat]
    private var forward: OpaquePointer?
    private var forwardRun: av_tx_fn?
    private var inverse: OpaquePointer?
    private var inverseRun: av_tx_fn?

    public init(response: RoomResponse) {
        let block = Self.blockLength
        precondition(response.taps.prefix(block).allSatisfy { $0 == 0 }, "the response must start with \(block) zero taps")
        let shifted = Array(response.taps.dropFirst(block))
        partitions = max(1, (shifted.count + block - 1) / block)
        partitionSpectra = []
        history = [AVComplexFloat](repeating: AVComplexFloat(re: 0, im: 0), count: partitions * size)
        window = [Float](repeating: 0, count: size)
        pending = [Float](repeating: 0, count: block)
        output = [Float](repeating: 0, count: block)
        scratch = [AVComplexFloat](repeating: AVComplexFloat(re: 0, im: 0), count: size)
        spectrum = scratch
        var scale: Float = 1
        // Swift arrays are not aligned as libavutil's SIMD transforms want by default.
        let flags = UInt64(AV_TX_UNALIGNED.rawValue)
        guard av_tx_init(&forward, &forwardRun, AV_TX_FLOAT_FFT, 0, Int32(size), &scale, flags) == 0,
              av_tx_init(&inverse, &inverseRun, AV_TX_FLOAT_FFT, 1, Int32(size), &scale, flags) == 0 else {
            fatalError("libavutil could not make a \(size)-point FFT")
        }
        var spectra = [AVComplexFloat]()
        spectra.reserveCapacity(partitions * size)
        for partition in 0..<partitions {
            var input = [AVComplexFloat](repeating: AVComplexFloat(re: 0, im: 0), count: size)
            for index in 0..<block where partition * block + index < shifted.count {
                input[index].re = shifted[partition * block + index]
            }
            var result = input
            input.withUnsafeMutableBufferPointer { source in
                result.withUnsafeMutableBufferPointer { transform(forward, forwardRun, source.baseAddress!, $0.baseAddress!) }
            }
            spectra += result
        }
        partitionSpectra = spectra
    }

    deinit {
        av_tx_uninit(&forward)
        av_tx_uninit(&inverse)
    }

    /// Convolves the next `input.count` samples.
    public func process(_ input: UnsafeBufferPointer<Float>, into result: UnsafeMutableBufferPointer<Float>) {
        precondition(result.count >= input.count)
        let block = Self.blockLength
        for (index, sample) in input.enumerated() {
            pending[pendingCount] = sample
            pendingCount += 1
            if pendingCount == block {
                runBlock()
                pendingCount = 0
            }
            result[index] = output[outputRead]
            outputRead += 1
        }
        // Keep what is left unread at the front.
        if outputRead > 0 {
            output.removeFirst(outputRead)
            outputRead = 0
        }
    }

    private func runBlock() {
        let block = Self.blockLength
        for index in 0..<block {
            window[index] = window[block + index]
            window[block + index] = pending[index]
        }
        for index in 0..<size { scratch[index] = AVComplexFloat(re: window[index], im: 0) }
        newest = (newest + 1) % partitions
        scratch.withUnsafeMutableBufferPointer { input in
            history.withUnsafeMutableBufferPointer { ring in
                transform(forward, forwardRun, input.baseAddress!, ring.baseAddress! + newest * size)
            }
        }
        for index in 0..<size { spectrum[index] = AVComplexFloat(re: 0, im: 0) }
        for partition in 0..<partitions {
            let slot = ((newest - partition) % partitions + partitions) % partitions
            for index in 0..<size {
                let x = history[slot * size + index]
                let h = partitionSpectra[partition * size + index]
                spectrum[index].re += x.re * h.re - x.im * h.im
                spectrum[index].im += x.re * h.im + x.im * h.re
            }
        }
        spectrum.withUnsafeMutableBufferPointer { input in
            scratch.withUnsafeMutableBufferPointer { transform(inverse, inverseRun, input.baseAddress!, $0.baseAddress!) }
        }
        // Overlap-save: the second half is the linear convolution of the newest block.
        let scale = 1 / Float(size)
        for index in 0..<block { output.append(scratch[block + index].re * scale) }
    }

    private func transform(_ context: OpaquePointer?, _ run: av_tx_fn?, _ input: UnsafeMutablePointer<AVComplexFloat>,
                           _ result: UnsafeMutablePointer<AVComplexFloat>) {
        run?(context, result, input, MemoryLayout<AVComplexFloat>.stride)
    }
}

/// A microphone in a room: the far end played through a loudspeaker reaches it through
/// the room's response, beside the near end's own voice and steady noise.
public enum SimulatedRoom {
    /// What the microphone hears, and each part of it (mono, 48 kHz, as long as `far`).
    public struct Recording: Sendable {
        public var microphone: AudioFrame
        public var echo: [Float]
        public var near: [Float]
        public var noise: [Float]
    }

    /// Records `far` (played) and `near` (spoken in the room) through `response`, with
    /// white noise at `noiseLevel` dBFS (RMS; nil for none). Both are mono; `near` is cut
    /// or padded with silence to `far`'s length.
    public static func record(far: AudioFrame, near: AudioFrame?, response: RoomResponse, noiseLevel: Double? = -66,
                              seed: UInt64 = 7) -> Recording {
        precondition(far.layout == .mono && near?.layout != .stereo, "the room is mono")
        let count = far.samples.count
        let input = far.samples.map { Float($0) }
        var echo = [Float](repeating: 0, count: count)
        let convolver = Convolver(response: response)
        input.withUnsafeBufferPointer { source in echo.withUnsafeMutableBufferPointer { convolver.process(source, into: $0) } }
        var spoken = [Float](repeating: 0, count: count)
        if let near {
            for index in 0..<min(count, near.samples.count) { spoken[index] = Float(near.samples[index]) }
        }
        var noise = [Float](repeating: 0, count: count)
        if let noiseLevel {
            var random = SeededRandom(seed: seed)
            let amplitude = 32_768 * pow(10, noiseLevel / 20)
            for index in 0..<count { noise[index] = Float(random.normal() * amplitude) }
        }
        var microphone = [Int16](repeating: 0, count: count)
        for index in 0..<count {
            let sum = echo[index] + spoken[index] + noise[index]
            microphone[index] = Int16(max(-32_768, min(32_767, sum.rounded())))
        }
        return Recording(microphone: AudioFrame(layout: .mono, samples: microphone), echo: echo, near: spoken, noise: noise)
    }
}
