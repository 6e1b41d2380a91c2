import ArgumentParser
import Foundation
import MediaEngine

/// On or off, as an option's value.
enum Switch: String, ExpressibleByArgument, CaseIterable {
    case on, off
    var isOn: Bool { self == .on }
}

extension AudioProcessor.Settings.NoiseSuppression: ExpressibleByArgument {}

/// The capture path's processing: echo cancellation, noise suppression, gain control and
/// the high-pass filter. Unset options keep what the context chooses (on for a microphone
/// beside a speaker, off for files and synthetic sources).
struct AudioProcessingOptions: ParsableArguments {
    @Option(help: ArgumentHelp("Echo cancellation: on or off.", valueName: "on|off"))
    var aec: Switch?

    @Option(help: ArgumentHelp("Noise suppression: off, low, moderate, high or very-high.", valueName: "level"))
    var ns: AudioProcessor.Settings.NoiseSuppression?

    @Option(help: ArgumentHelp("Adaptive digital gain control: on or off.", valueName: "on|off"))
    var agc: Switch?

    @Option(help: ArgumentHelp("High-pass filter (below about 80 Hz): on or off.", valueName: "on|off"))
    var hpf: Switch?

    /// Whether any option was given.
    var isSet: Bool { aec != nil || ns != nil || agc != nil || hpf != nil }

    /// `base` with the options given applied; the others keep `base`'s.
    func settings(base: AudioProcessor.Settings) -> AudioProcessor.Settings {
        var result = base
        if let aec { result.echoCancellation = aec.isOn }
        if let ns { result.noiseSuppression = ns }
        if let agc { result.gainControl = agc.isOn }
        if let hpf { result.highPassFilter = hpf.isOn }
        return result
    }
}

struct ProcessAudioCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "process-audio",
        abstract: "Run the capture path's echo cancellation, noise suppression and gain control over recordings.",
        discussion: """
        --capture is what a microphone recorded, --render what the speaker played at the same time (both start \
        together; any rate, mono or stereo: other rates are resampled to 48 kHz). Each 10 ms of --render is \
        played, then the 10 ms captured with it is processed, as in a call, with --delay-ms from playing to the \
        echo reaching the microphone (0 to 500; the canceller also finds the delay itself). Writes the processed \
        capture to --output and prints, per window, the level captured, the level out and the reduction (with \
        the far end alone: the echo removed, ERLE), with the voice detector's share of blocks. Everything is on \
        unless switched off.
        """
    )

    @Option(help: ArgumentHelp("What the microphone recorded (WAV, FLAC, Ogg, ...).", valueName: "file"))
    var capture: String

    @Option(help: ArgumentHelp("What the speaker played meanwhile; silence when it is shorter.", valueName: "file"))
    var render: String

    @Option(help: ArgumentHelp("Where to write the processed capture (.wav).", valueName: "file"))
    var output: String

    @Option(help: ArgumentHelp("Delay from playing to the echo reaching the microphone, ms (0-500).", valueName: "ms"))
    var delayMs = 0

    @Option(help: ArgumentHelp("Length of each reported window, ms.", valueName: "ms"))
    var windowMs = 1_000

    @OptionGroup var processing: AudioProcessingOptions

    @Flag(help: "Print the report as JSON.")
    var json = false

    func validate() throws {
        guard (0...500).contains(delayMs) else {
            throw ValidationError("--delay-ms \(delayMs) is outside the 0...500 ms the echo canceller takes")
        }
        guard (10...60_000).contains(windowMs) else { throw ValidationError("--window-ms \(windowMs) is outside 10...60000") }
        guard output.hasSuffix(".wav") else { throw ValidationError("--output \(output): use a .wav file") }
        try requireDirectory(of: output, option: "--output")
    }

    func run() throws {
        let captured: AudioFrame
        let played: AudioFrame
        do {
            captured = try AudioFile.read(path: capture, resampling: true)
            played = try AudioFile.read(path: render, resampling: true)
        } catch {
            throw CommandFailure(error.message)
        }
        let options = OfflineAudioProcessing.Options(settings: processing.settings(base: .voice), delay: .milliseconds(delayMs),
                                                     window: .milliseconds(windowMs))
        let result: OfflineAudioProcessing.Result
        do {
            result = try OfflineAudioProcessing.run(capture: captured, render: played, options: options)
        } catch {
            throw CommandFailure(error.message)
        }
        do {
            try AudioFile.writeWAV(result.output, path: output)
        } catch {
            throw CommandFailure(error.message)
        }
        let report = result.report
        if json {
            let encoder = JSONEncoder()
            encoder.outputFormatting = [.sortedKeys]
            say(String(decoding: try encoder.encode(report), as: UTF8.self))
            return
        }
        say("processing: \(report.settings), delay \(report.delayMilliseconds) ms, \(String(format: "%.2f", report.seconds)) s")
        if report.renderPadded > 0 { say(String(format: "render: %.2f s shorter than the capture, played as silence", report.renderPadded)) }
        if report.renderUnused > 0 { say(String(format: "render: %.2f s longer than the capture, not used", report.renderUnused)) }
        say("   start  captured    output  reduction  voice")
        for window in report.windows {
            say(String(format: "%7.2fs %7.1f dB %7.1f dB %8.1f dB %5.0f %%", window.start, window.captureLevel, window.outputLevel,
                       window.reduction, Double(window.voiceBlocks) * 100 / Double(max(1, window.blocks))))
        }
        let statistics = report.statistics
        var summary = String(format: "voice in %.1f %% of blocks", report.voiceFraction * 100)
        if let erl = statistics.echoReturnLoss, let erle = statistics.echoReturnLossEnhancement {
            summary += String(format: "; canceller: ERL %.0f dB, ERLE %.0f dB", erl, erle)
        }
        if let delay = statistics.estimatedDelay { summary += String(format: ", echo delay %.0f ms", delay.seconds * 1_000) }
        say(summary)
    }
}
