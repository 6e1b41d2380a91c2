import ArgumentParser
import CAudioProcessing
import Foundation
import MediaEngine

/// `mediaengine bench audio-processing`: the capture path's processing per 10 ms block,
/// through `AudioProcessor` and through the shim's C calls on the same audio in the same
/// run, with everything on and each feature alone; and the delay it adds.
struct AudioProcessingBench: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "audio-processing",
        abstract: "CPU per 10 ms block of echo cancellation, noise suppression and gain control, against the same C calls.",
        discussion: """
        Runs --seconds of a far end (a tone sweep) and its echo plus noise through the processor, block by block as \
        a call does (render, then capture), once through AudioProcessor (what the engine runs) and once through \
        the same libwebrtc-audio-processing calls made from C, alternating, with everything on and with each \
        feature alone. Reports CPU time per block (the thread's own, from CLOCK_THREAD_CPUTIME_ID), the ratio of \
        the two, and the delay the processing adds to the captured audio (cross-correlation of input and output \
        with the canceller off).
        """
    )

    @Option(help: "Seconds of audio per case.")
    var seconds: Double = 10

    @Flag(help: "Print the results as JSON.")
    var json = false

    struct Case: Codable {
        var name: String
        var engineMicroseconds: Double
        var cMicroseconds: Double
        var ratio: Double
    }

    struct Report: Codable {
        var blocks: Int
        var cases: [Case]
        /// The lag of the processed capture behind the captured one, ms.
        var addedDelayMilliseconds: Double
    }

    func validate() throws {
        guard seconds >= 1, seconds <= 600 else { throw ValidationError("--seconds \(seconds) is outside 1...600") }
    }

    func run() throws {
        let blocks = Int(seconds * 100)
        let (far, microphone) = Self.signals(blocks: blocks)
        let all = AudioProcessor.Settings.voice
        let cases: [(String, AudioProcessor.Settings)] = [
            ("all", all),
            ("aec", .init(echoCancellation: true, noiseSuppression: .off, gainControl: false, highPassFilter: false)),
            ("ns", .init(echoCancellation: false, noiseSuppression: .moderate, gainControl: false, highPassFilter: false)),
            ("agc", .init(echoCancellation: false, noiseSuppression: .off, gainControl: true, highPassFilter: false)),
            ("hpf", .init(echoCancellation: false, noiseSuppression: .off, gainControl: false, highPassFilter: true)),
        ]
        var results: [Case] = []
        for (name, settings) in cases {
            // Alternate the two sides, three rounds each, and keep each side's best: the
            // same machine state for both.
            var engine = Double.infinity
            var c = Double.infinity
            for _ in 0..<3 {
                engine = min(engine, try Self.engineRun(settings, far: far, microphone: microphone, blocks: blocks))
                c = min(c, try Self.cRun(settings, far: far, microphone: microphone, blocks: blocks))
            }
            results.append(Case(name: name, engineMicroseconds: engine, cMicroseconds: c, ratio: engine / c))
        }
        let report = Report(blocks: blocks, cases: results, addedDelayMilliseconds: try Self.addedDelay(microphone: microphone))
        if json {
            let encoder = JSONEncoder()
            encoder.outputFormatting = [.sortedKeys]
            say(String(decoding: try encoder.encode(report), as: UTF8.self))
            return
        }
        say("audio processing, \(blocks) blocks of 10 ms per run, CPU per block (best of 3):")
        for result in results {
            say(String(format: "  %-4@ engine %6.1f µs  C %6.1f µs  ratio %.2f", result.name as NSString, result.engineMicroseconds,
                       result.cMicroseconds, result.ratio))
        }
        say(String(format: "added delay of the capture path: %.1f ms", report.addedDelayMilliseconds))
    }

    /// A far end (a rising tone with harmonics) and the microphone: its echo 60 ms later and
    /// 6 dB down, with noise.
    static func signals(blocks: Int) -> (far: [Int16], microphone: [Int16]) {
        let count = blocks * 480
        var random = SeededRandom(seed: 5)
        var far = [Int16](repeating: 0, count: count)
        var phase = 0.0
        for index in 0..<count {
            let frequency = 200 + 1_800 * Double(index % 96_000) / 96_000
            phase += 2 * .pi * frequency / 48_000
            far[index] = Int16(6_000 * sin(phase) + 2_000 * sin(3 * phase))
        }
        var microphone = [Int16](repeating: 0, count: count)
        for index in 0..<count {
            let echo = index >= 2_880 ? Double(far[index - 2_880]) * 0.5 : 0
            microphone[index] = Int16(max(-32_768, min(32_767, echo + random.normal() * 30)))
        }
        return (far, microphone)
    }

    static func threadCPU() -> Double {
        var time = timespec()
        clock_gettime(CLOCK_THREAD_CPUTIME_ID, &time)
        return Double(time.tv_sec) + Double(time.tv_nsec) * 1e-9
    }

    /// µs of CPU per block through AudioProcessor.
    static func engineRun(_ settings: AudioProcessor.Settings, far: [Int16], microphone: [Int16], blocks: Int) throws -> Double {
        let processor = try AudioProcessor(settings: settings)
        var frame = AudioFrame(layout: .mono, samplesPerChannel: 480)
        let start = threadCPU()
        far.withUnsafeBufferPointer { played in
            for block in 0..<blocks {
                processor.render(UnsafeBufferPointer(rebasing: played[(block * 480)..<((block + 1) * 480)]), playbackDelay: .milliseconds(40))
                frame.samples.withUnsafeMutableBufferPointer { samples in
                    for index in 0..<480 { samples[index] = microphone[block * 480 + index] }
                }
                processor.process(&frame, captureDelay: .milliseconds(20))
            }
        }
        return (threadCPU() - start) * 1e6 / Double(blocks)
    }

    /// µs of CPU per block through the shim's C calls: the same library work, no Swift.
    static func cRun(_ settings: AudioProcessor.Settings, far: [Int16], microphone: [Int16], blocks: Int) throws -> Double {
        var c = settings.c
        var handle: OpaquePointer?
        guard me_apm_create(48_000, 1, 1, &c, &handle) == 0, let handle else { throw CommandFailure("the library did not start") }
        defer { me_apm_destroy(handle) }
        var block = [Int16](repeating: 0, count: 480)
        var voice: Int32 = 0
        let start = threadCPU()
        far.withUnsafeBufferPointer { played in
            block.withUnsafeMutableBufferPointer { samples in
                for index in 0..<blocks {
                    me_apm_process_render(handle, played.baseAddress! + index * 480)
                    for sample in 0..<480 { samples[sample] = microphone[index * 480 + sample] }
                    me_apm_process_capture(handle, samples.baseAddress, 60, &voice)
                }
            }
        }
        return (threadCPU() - start) * 1e6 / Double(blocks)
    }

    /// The lag of the processed capture behind the input, ms: noise suppression, gain
    /// control and the filter on white noise, the canceller off (it would remove the input).
    static func addedDelay(microphone: [Int16]) throws -> Double {
        let processor = try AudioProcessor(settings: .init(echoCancellation: false, noiseSuppression: .moderate, gainControl: true,
                                                           highPassFilter: true))
        var random = SeededRandom(seed: 9)
        let input = (0..<(48_000 * 2)).map { _ in Int16(max(-32_768, min(32_767, random.normal() * 3_000))) }
        var output = [Int16]()
        var frame = AudioFrame(layout: .mono, samplesPerChannel: 960)
        for start in stride(from: 0, to: input.count, by: 960) {
            frame.samples = Array(input[start..<(start + 960)])
            processor.process(&frame, delay: .zero)
            output.append(contentsOf: frame.samples)
        }
        let lag = input.withUnsafeBufferPointer { reference in
            output.withUnsafeBufferPointer { AudioQuality.bestLag(reference: reference, test: $0, range: 0...960, start: 48_000, window: 9_600) }
        }
        return Double(lag) / 48
    }
}
