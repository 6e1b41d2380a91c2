#if canImport(Glibc)
import Glibc
#endif

/// The capture path's processing run over recordings: what a microphone captured and what
/// the speaker played at the same time, block by block as in a call (each 10 ms of played
/// audio, then the 10 ms captured with it, with the delay between them). For users who
/// check their own room, and for tests.
public enum OfflineAudioProcessing {
    public struct Options: Sendable, Hashable {
        public var settings: AudioProcessor.Settings
        /// From playing a sample to its echo reaching the microphone (0 to 500 ms).
        public var delay: Duration
        /// The length of the report's windows.
        public var window: Duration

        public init(settings: AudioProcessor.Settings = .voice, delay: Duration = .zero, window: Duration = .seconds(1)) {
            self.settings = settings
            self.delay = delay
            self.window = window
        }
    }

    /// One window of the run: the power captured and the power that came out.
    public struct Window: Sendable, Hashable, Codable {
        /// Start, seconds from the beginning.
        public var start: Double
        /// Mean square of the captured and the processed samples (full scale 1).
        public var capturePower: Double
        public var outputPower: Double
        /// Blocks the voice detector called voice, of `blocks`.
        public var voiceBlocks: Int
        public var blocks: Int

        /// Captured over processed power, dB: with the far end alone, the echo removed (ERLE).
        public var reduction: Double { OfflineAudioProcessing.decibels(capturePower, outputPower) }
        public var captureLevel: Double { OfflineAudioProcessing.decibels(capturePower, 1) }
        public var outputLevel: Double { OfflineAudioProcessing.decibels(outputPower, 1) }
    }

    /// What a run did.
    public struct Report: Sendable, Hashable, Codable {
        public var settings: AudioProcessor.Settings
        public var delayMilliseconds: Int
        /// Seconds processed (the capture's length).
        public var seconds: Double
        public var windowSeconds: Double
        public var windows: [Window]
        /// The library's own figures at the end (its ERL, ERLE and delay estimate).
        public var statistics: AudioProcessor.Statistics
        /// Seconds of silence added to the render because it was shorter than the capture,
        /// and seconds of it left unused because it was longer.
        public var renderPadded: Double
        public var renderUnused: Double

        /// Captured over processed power from `start` to `end` seconds, dB.
        public func reduction(from start: Double, to end: Double) -> Double {
            let chosen = windows.filter { $0.start >= start - 1e-9 && $0.start + windowSeconds <= end + 1e-9 }
            return OfflineAudioProcessing.decibels(chosen.reduce(0) { $0 + $1.capturePower }, chosen.reduce(0) { $0 + $1.outputPower })
        }

        /// The fraction of blocks with voice.
        public var voiceFraction: Double {
            let blocks = windows.reduce(0) { $0 + $1.blocks }
            return blocks == 0 ? 0 : Double(windows.reduce(0) { $0 + $1.voiceBlocks }) / Double(blocks)
        }
    }

    /// What came out: the processed capture, the voice detector's call per 10 ms block, and
    /// the report.
    public struct Result: Sendable {
        public var output: AudioFrame
        public var voice: [Bool]
        public var report: Report
    }

    /// Runs `capture` (with `render` as what was played) through a processor.
    /// - Throws: `AudioProcessingError`: `badInput` for a delay outside 0...500 ms or a
    ///   window under 10 ms, `initializationFailed` when the library does not start.
    public static func run(capture: AudioFrame, render: AudioFrame, options: Options) throws(AudioProcessingError) -> Result {
        guard options.delay >= .zero, options.delay <= AudioProcessor.maximumDelay else {
            throw AudioProcessingError(.badInput, "a delay of \(Int(options.delay.seconds * 1_000)) ms is outside the 0...500 ms "
                                       + "the echo canceller takes")
        }
        let block = AudioProcessor.blockLength
        let windowBlocks = Int(options.window.seconds * 100)
        guard windowBlocks >= 1 else { throw AudioProcessingError(.badInput, "windows of \(options.window) are shorter than a 10 ms block") }
        let processor = try AudioProcessor(settings: options.settings, capture: capture.layout, render: render.layout)
        let captureChannels = capture.layout.count
        let renderChannels = render.layout.count
        let length = capture.samplesPerChannel
        let blocks = (length + block - 1) / block
        var output = [Int16](repeating: 0, count: length * captureChannels)
        var voice = [Bool]()
        voice.reserveCapacity(blocks)
        var frame = AudioFrame(layout: capture.layout, samplesPerChannel: block)
        var played = [Int16](repeating: 0, count: block * renderChannels)
        var windows: [Window] = []
        var current = Window(start: 0, capturePower: 0, outputPower: 0, voiceBlocks: 0, blocks: 0)
        var captureSum = 0.0
        var outputSum = 0.0
        var windowSamples = 0
        for index in 0..<blocks {
            let first = index * block
            let count = min(block, length - first)
            for sample in 0..<(block * renderChannels) {
                let at = first * renderChannels + sample
                played[sample] = at < render.samples.count ? render.samples[at] : 0
            }
            played.withUnsafeBufferPointer { processor.render($0) }
            for sample in 0..<(block * captureChannels) {
                frame.samples[sample] = sample < count * captureChannels ? capture.samples[first * captureChannels + sample] : 0
            }
            let heard = processor.process(&frame, delay: options.delay)
            voice.append(heard)
            for sample in 0..<(count * captureChannels) {
                let input = Double(capture.samples[first * captureChannels + sample]) / 32_768
                let processed = Double(frame.samples[sample]) / 32_768
                captureSum += input * input
                outputSum += processed * processed
                output[first * captureChannels + sample] = frame.samples[sample]
            }
            windowSamples += count * captureChannels
            current.blocks += 1
            if heard { current.voiceBlocks += 1 }
            if current.blocks == windowBlocks || index == blocks - 1 {
                current.capturePower = windowSamples == 0 ? 0 : captureSum / Double(windowSamples)
                current.outputPower = windowSamples == 0 ? 0 : outputSum / Double(windowSamples)
                windows.append(current)
                current = Window(start: Double(index + 1) / 100, capturePower: 0, outputPower: 0, voiceBlocks: 0, blocks: 0)
                captureSum = 0
                outputSum = 0
                windowSamples = 0
            }
        }
        let renderLength = render.samplesPerChannel
        let report = Report(settings: options.settings, delayMilliseconds: Int(options.delay.seconds * 1_000),
                            seconds: Double(length) / Double(AudioFrame.sampleRate), windowSeconds: Double(windowBlocks) / 100,
                            windows: windows, statistics: processor.statistics,
                            renderPadded: Double(max(0, length - renderLength)) / Double(AudioFrame.sampleRate),
                            renderUnused: Double(max(0, renderLength - length)) / Double(AudioFrame.sampleRate))
        return Result(output: AudioFrame(layout: capture.layout, samples: output), voice: voice, report: report)
    }

    /// 10·log10(a / b), with silence at -150 dB rather than infinity.
    static func decibels(_ a: Double, _ b: Double) -> Double {
        10 * log10(max(a, 1e-15) / max(b, 1e-15))
    }
}
