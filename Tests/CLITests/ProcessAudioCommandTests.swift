import Foundation
import MediaEngine
import MediaSimulation
import TestSupport
import Testing

/// `mediaengine process-audio` over recordings of a simulated room: the same figures as the
/// engine's own run on the same files, and typed refusals of what it cannot take.
@Suite struct ProcessAudioCommand {
    let directory: URL

    init() throws {
        directory = FileManager.default.temporaryDirectory.appendingPathComponent("process-audio-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
    }

    func path(_ name: String) -> String { directory.appendingPathComponent(name).path }

    /// Far-end and near-end speech (8 s) recorded in a room with a 60 ms echo path.
    func writeRoom(near: Bool) throws -> (capture: String, render: String, far: AudioFrame, microphone: AudioFrame) {
        let far = try Speech.fit(Speech.say(Speech.farText, level: -20), seconds: 8)
        let spoken = near ? try Speech.fit(Speech.say(Speech.nearText, voice: "en-us+f3", level: -26), seconds: 8) : nil
        let recording = SimulatedRoom.record(far: far, near: spoken, response: RoomResponse(delay: .milliseconds(60)))
        try AudioFile.writeWAV(far, path: path("far.wav"))
        try AudioFile.writeWAV(recording.microphone, path: path("mic.wav"))
        return (path("mic.wav"), path("far.wav"), far, recording.microphone)
    }

    @Test func farEndFiguresMatchTheEnginesOwnRun() async throws {
        try await Heavy.run {
            let room = try writeRoom(near: false)
            let run = try CLI.run(["process-audio", "--capture", room.capture, "--render", room.render, "--output", path("out.wav"),
                                   "--delay-ms", "60", "--ns", "off", "--agc", "off", "--json"])
            #expect(run.status == 0, "\(run.stderr)")
            let report = try JSONDecoder().decode(OfflineAudioProcessing.Report.self, from: Data(run.stdout.utf8))
            #expect(report.reduction(from: 0, to: 2) >= 15, "ERLE over 0-2 s: \(report.reduction(from: 0, to: 2)) dB")
            #expect(report.reduction(from: 4, to: 8) >= 30, "ERLE over 4-8 s: \(report.reduction(from: 4, to: 8)) dB")
            // The same files through the engine: the same blocks, the same output.
            let settings = AudioProcessor.Settings(echoCancellation: true, noiseSuppression: .off, gainControl: false, highPassFilter: true)
            let own = try OfflineAudioProcessing.run(capture: room.microphone, render: room.far,
                                                     options: .init(settings: settings, delay: .milliseconds(60)))
            #expect(report.windows == own.report.windows)
            #expect(try AudioFile.read(path: path("out.wav")).samples == own.output.samples)
        }
    }

    @Test func doubleTalkPrintsEachWindowAndKeepsTheNearEnd() async throws {
        try await Heavy.run {
            let room = try writeRoom(near: true)
            let run = try CLI.run(["process-audio", "--capture", room.capture, "--render", room.render, "--output", path("out.wav"),
                                   "--delay-ms", "60"])
            #expect(run.status == 0, "\(run.stderr)")
            #expect(run.stdout.contains("processing: aec on, ns moderate, agc on, hpf on, delay 60 ms, 8.00 s"), "\(run.stdout)")
            // A line per second, and the voice detector's share of the whole.
            #expect(run.stdout.split(separator: "\n").filter { $0.hasSuffix("%") && $0.contains("dB") }.count == 8, "\(run.stdout)")
            #expect(run.stdout.contains("voice in "), "\(run.stdout)")
            let output = try AudioFile.read(path: path("out.wav"))
            #expect(output.samples.count == room.microphone.samples.count)
            // The near end is still there: the output is not silence while it speaks.
            #expect(Speech.activeLevel(output.samples) > -40, "\(Speech.activeLevel(output.samples)) dBFS")
        }
    }

    @Test func otherRatesAreResampledAndAShortRenderIsPaddedWithSilence() async throws {
        try await Heavy.run {
            let render = path("render-16k.wav")
            let capture = path("capture-16k.wav")
            for (file, seconds) in [(render, "1"), (capture, "2")] {
                let made = try Tool.run("ffmpeg", ["-nostdin", "-y", "-v", "error", "-f", "lavfi", "-i", "sine=frequency=440:sample_rate=16000",
                                                   "-t", seconds, "-ac", "1", file])
                #expect(made.status == 0, "\(made.stderr)")
            }
            let run = try CLI.run(["process-audio", "--capture", capture, "--render", render, "--output", path("out.wav"), "--json"])
            #expect(run.status == 0, "\(run.stderr)")
            let report = try JSONDecoder().decode(OfflineAudioProcessing.Report.self, from: Data(run.stdout.utf8))
            #expect(abs(report.seconds - 2) < 0.01)
            #expect(abs(report.renderPadded - 1) < 0.01)
            #expect(report.renderUnused == 0)
            #expect(try AudioFile.read(path: path("out.wav")).samplesPerChannel == 96_000)
            let text = try CLI.run(["process-audio", "--capture", capture, "--render", render, "--output", path("out.wav")])
            #expect(text.stdout.contains("render: 1.00 s shorter than the capture, played as silence"), "\(text.stdout)")
        }
    }

    @Test func filesItCannotTakeAndDelaysOutOfRangeAreRefusedByName() async throws {
        let three = path("three.wav")
        let made = try Tool.run("ffmpeg", ["-nostdin", "-y", "-v", "error", "-f", "lavfi", "-i", "sine=frequency=440:sample_rate=48000",
                                           "-t", "1", "-ac", "3", three])
        #expect(made.status == 0, "\(made.stderr)")
        let channels = try CLI.run(["process-audio", "--capture", three, "--render", three, "--output", path("out.wav")])
        #expect(channels.status != 0)
        #expect(channels.stderr.contains("three.wav") && channels.stderr.contains("3 channels"), "\(channels.stderr)")
        let delay = try CLI.run(["process-audio", "--capture", three, "--render", three, "--output", path("out.wav"), "--delay-ms", "600"])
        #expect(delay.status != 0)
        #expect(delay.stderr.contains("--delay-ms 600 is outside the 0...500 ms"), "\(delay.stderr)")
        let missing = try CLI.run(["process-audio", "--capture", path("none.wav"), "--render", three, "--output", path("out.wav")])
        #expect(missing.status != 0)
        #expect(missing.stderr.contains("none.wav"), "\(missing.stderr)")
        let directory = try CLI.run(["process-audio", "--capture", three, "--render", three, "--output", "/nonexistent/out.wav"])
        #expect(directory.status != 0)
        #expect(directory.stderr.contains("the directory /nonexistent does not exist"), "\(directory.stderr)")
    }
}

/// The engine refuses what the library cannot take, by name.
@Suite struct AudioProcessorBadInput {
    @Test func aDelayOutsideTheLibrarysRangeIsATypedErrorOfflineAndClampedLive() throws {
        let frame = AudioFrame(layout: .mono, samplesPerChannel: 4_800)
        #expect(throws: AudioProcessingError.self) {
            try OfflineAudioProcessing.run(capture: frame, render: frame, options: .init(delay: .milliseconds(501)))
        }
        do {
            _ = try OfflineAudioProcessing.run(capture: frame, render: frame, options: .init(delay: .milliseconds(-1)))
            Issue.record("a negative delay was taken")
        } catch {
            #expect(error.code == .badInput)
            #expect(error.message.contains("-1 ms is outside the 0...500 ms"), "\(error.message)")
        }
        // In a call the delay is measured: one out of range is clamped by the library and counted.
        let processor = try AudioProcessor()
        var block = AudioFrame(layout: .mono, samplesPerChannel: 960)
        processor.process(&block, delay: .milliseconds(800))
        let statistics = processor.statistics
        #expect(statistics.clampedDelays == 2)
        #expect(statistics.failedBlocks == 0)
        #expect(statistics.captureBlocks == 2)
    }

    @Test func captureAndRenderOfDifferentLengthsProcessTheCapturesLength() throws {
        let capture = AudioFrame(layout: .mono, samplesPerChannel: 48_000 + 123)
        let render = AudioFrame(layout: .stereo, samplesPerChannel: 72_000)
        let result = try OfflineAudioProcessing.run(capture: capture, render: render, options: .init())
        #expect(result.output.samplesPerChannel == 48_123)
        #expect(result.voice.count == 101)
        #expect(abs(result.report.renderUnused - 23_877.0 / 48_000) < 1e-9)
        #expect(result.report.renderPadded == 0)
        #expect(result.report.statistics.renderBlocks == 101)
    }
}
