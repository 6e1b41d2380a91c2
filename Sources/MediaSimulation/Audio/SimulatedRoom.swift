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
    /// The response's length in taps.
    public let length: Int
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
        length = response.taps.count
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
        // The multiply-accumulate over every partition, on raw pointers: it is the
        // simulation's whole cost, and a real-time room must keep up in a debug build too.
        let (n, count, latest) = (size, partitions, newest)
        spectrum.withUnsafeMutableBufferPointer { sum in
            history.withUnsafeBufferPointer { ring in
                partitionSpectra.withUnsafeBufferPointer { response in
                    let out = sum.baseAddress!
                    out.update(repeating: AVComplexFloat(re: 0, im: 0), count: n)
                    for partition in 0..<count {
                        let slot = (latest - partition + count) % count
                        let x = ring.baseAddress! + slot * n
                        let h = response.baseAddress! + partition * n
                        for index in 0..<n {
                            let a = x[index], b = h[index]
                            out[index].re += a.re * b.re - a.im * b.im
                            out[index].im += a.re * b.im + a.im * b.re
                        }
                    }
                }
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

/// A room in real time for calls: a loudspeaker (`speaker`, an `AudioSink`) and a
/// microphone (`microphone`, an `AudioSource`) on one 48 kHz clock, as a sound card's
/// playback and capture share one. What the speaker plays reaches the microphone through
/// the room's response, beside near-end speech and noise.
///
/// The speaker plays each write after what it still holds; when it ran dry it starts again
/// one period (20 ms) ahead of the clock, as a device restarting after an underrun. The
/// microphone's reads block until the clock has passed the frame, as a capture device's do.
/// Both report their delays as ALSA devices do, so a session treats them as real devices.
public final class LiveRoom: @unchecked Sendable {
    // @unchecked: everything mutable is behind `lock`.
    private let lock = NSLock()
    private let convolver: Convolver
    private let near: [Int16]
    private let noiseAmplitude: Double
    private var random = SeededRandom(seed: 11)
    private var start: Duration?
    /// Samples of played audio scheduled (and convolved) from the clock's start.
    private var scheduled = 0
    /// The echo of every scheduled sample from `echoBase` on.
    private var echo: [Float] = []
    private var echoBase = 0
    /// The microphone's next sample.
    private var captured: Int?
    private var feed = [Float](repeating: 0, count: 4_800)
    private var result = [Float](repeating: 0, count: 4_800)

    public let speaker: Speaker
    public let microphone: Microphone

    /// - Parameters:
    ///   - response: speaker to microphone (its delay at least `Convolver.blockLength` samples).
    ///   - near: what the near end says, from the microphone's first frame on (repeated).
    ///   - noiseLevel: steady white noise at the microphone, dBFS RMS.
    public init(response: RoomResponse, near: AudioFrame?, noiseLevel: Double = -66) {
        convolver = Convolver(response: response)
        self.near = near?.samples ?? []
        noiseAmplitude = 32_768 * pow(10, noiseLevel / 20)
        speaker = Speaker()
        microphone = Microphone()
        speaker.room = self
        microphone.room = self
    }

    /// The clock, in samples since the room's first use.
    private func clock() -> Int {
        let now = MonotonicClock.now()
        if start == nil { start = now }
        return Int(((now - start!).seconds * Double(AudioFrame.sampleRate)).rounded(.down))
    }

    /// Plays `samples` (mono) after what is queued; returns what was queued before, as time.
    fileprivate func play(_ samples: UnsafeBufferPointer<Int16>) {
        lock.lock()
        defer { lock.unlock() }
        let now = clock()
        // Ran dry: the device starts again a period ahead.
        if scheduled < now { schedule(silence: now + 960 - scheduled) }
        var offset = 0
        while offset < samples.count {
            let count = min(feed.count, samples.count - offset)
            for index in 0..<count { feed[index] = Float(samples[offset + index]) }
            convolve(count)
            offset += count
        }
    }

    fileprivate var queued: Duration {
        lock.lock()
        defer { lock.unlock() }
        return AudioFrame.duration(samplesPerChannel: max(0, scheduled - clock()))
    }

    private func schedule(silence count: Int) {
        // Past the response's length, silence echoes as silence: only that much is
        // convolved (a long gap costs no more than a short one).
        let convolved = min(count, convolver.length + 2 * Convolver.blockLength)
        if count > convolved {
            defer {
                echo.append(contentsOf: repeatElement(0, count: count - convolved))
                scheduled += count - convolved
            }
        }
        var left = convolved
        while left > 0 {
            let chunk = min(feed.count, left)
            for index in 0..<chunk { feed[index] = 0 }
            convolve(chunk)
            left -= chunk
        }
    }

    private func convolve(_ count: Int) {
        feed.withUnsafeBufferPointer { input in
            result.withUnsafeMutableBufferPointer { output in
                convolver.process(UnsafeBufferPointer(rebasing: input[0..<count]), into: output)
            }
        }
        echo.append(contentsOf: result[0..<count])
        scheduled += count
    }

    /// Fills `frame` (mono) with what the microphone hears next, once the clock has passed
    /// it; returns how long ago its first sample was captured.
    fileprivate func capture(into frame: inout AudioFrame) -> Duration {
        let count = frame.samples.count
        lock.lock()
        var now = clock()
        let first = captured ?? max(0, now - count)
        lock.unlock()
        while now < first + count {
            Thread.sleep(forTimeInterval: Double(first + count - now) / Double(AudioFrame.sampleRate))
            lock.lock()
            now = clock()
            lock.unlock()
        }
        lock.lock()
        defer { lock.unlock() }
        // The speaker played nothing for this stretch: silence, and its echo.
        if scheduled < first + count { schedule(silence: first + count - scheduled) }
        for index in 0..<count {
            let position = first + index
            var sample = Double(echo[position - echoBase]) + random.normal() * noiseAmplitude
            if !near.isEmpty { sample += Double(near[position % near.count]) }
            frame.samples[index] = Int16(max(-32_768, min(32_767, sample.rounded())))
        }
        captured = first + count
        // Keep the echo from the next frame on.
        let keep = first + count - echoBase
        if keep > 48_000 {
            echo.removeFirst(keep)
            echoBase += keep
        }
        return AudioFrame.duration(samplesPerChannel: max(0, clock() - first))
    }

    /// The room's loudspeaker.
    public final class Speaker: AudioSink, @unchecked Sendable {
        fileprivate weak var room: LiveRoom?
        public let layout = ChannelLayout.mono
        public let name = "room speaker"
        public func write(_ samples: UnsafeBufferPointer<Int16>) throws { room?.play(samples) }
        public func close() throws {}
        public var playbackDelay: Duration? { room?.queued ?? .zero }
    }

    /// The room's microphone.
    public final class Microphone: AudioSource, @unchecked Sendable {
        fileprivate weak var room: LiveRoom?
        private var lastDelay = Duration.zero
        public let layout = ChannelLayout.mono
        public let name = "room microphone"
        public func read(into frame: inout AudioFrame) throws -> Bool {
            guard let room else { return false }
            lastDelay = room.capture(into: &frame)
            return true
        }
        public var captureDelay: Duration? { lastDelay }
    }
}
