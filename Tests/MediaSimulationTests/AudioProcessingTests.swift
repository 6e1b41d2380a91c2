import Foundation
import MediaEngine
import MediaSimulation
import Testing
import TestSupport

/// The capture path's processing (libwebrtc-audio-processing) on real speech in a
/// simulated room: the far end (espeak-ng) played through a decaying room response, the
/// near end speaking beside it, and steady noise.
@Suite("Audio processing in a simulated room")
struct AudioProcessingRoomTests {
    /// 12 s of far-end speech at -20 dBFS and near-end speech (another voice) at -26 dBFS,
    /// the room's echo 4 dB below the far end after 60 ms, RT60 250 ms, noise at -66 dBFS.
    static let far = Result { try Speech.fit(Speech.say(Speech.farText, voice: "en-us", level: -20), seconds: 12) }
    static let near = Result { try Speech.fit(Speech.say(Speech.nearText, voice: "en-us+f3", level: -26), seconds: 12) }
    static let room = RoomResponse(delay: .milliseconds(60), reverberationTime: .milliseconds(250), echoLevel: -4)

    /// The echo canceller alone (with the high-pass filter): what ERLE measures.
    static let echoOnly = AudioProcessor.Settings(echoCancellation: true, noiseSuppression: .off, gainControl: false, highPassFilter: true)
    static let silence = AudioFrame(layout: .mono, samplesPerChannel: 12 * 48_000)

    static func run(far: AudioFrame, near: AudioFrame?, room: RoomResponse = room, delay: Duration,
                    settings: AudioProcessor.Settings = echoOnly) throws -> (SimulatedRoom.Recording, OfflineAudioProcessing.Result) {
        let recording = SimulatedRoom.record(far: far, near: near, response: room)
        let result = try OfflineAudioProcessing.run(capture: recording.microphone, render: far,
                                                    options: .init(settings: settings, delay: delay))
        return (recording, result)
    }

    @Test("Far end alone with the true delay: ERLE at least 15 dB over 0-2 s and 30 dB over 4-12 s")
    func farEndTrueDelay() throws {
        let (_, result) = try Self.run(far: Self.far.get(), near: nil, delay: .milliseconds(60))
        let early = result.report.reduction(from: 0, to: 2)
        let settled = result.report.reduction(from: 4, to: 12)
        print("far end alone, true delay: ERLE 0-2 s \(early) dB, 4-12 s \(settled) dB; library \(result.report.statistics)")
        #expect(early >= 15)
        #expect(settled >= 30)
    }

    @Test("Far end alone with the delay misreported by ±20 ms: ERLE at least 25 dB over 4-12 s", arguments: [-20, 20])
    func farEndMisreported(error: Int) throws {
        let (_, result) = try Self.run(far: Self.far.get(), near: nil, delay: .milliseconds(60 + error))
        let settled = result.report.reduction(from: 4, to: 12)
        print("far end alone, delay off by \(error) ms: ERLE 4-12 s \(settled) dB")
        #expect(settled >= 25)
    }

    /// An echo 150 ms late with no delay reported: the library's delay-agnostic mode must find it.
    @Test("Far end alone with 150 ms of delay unreported: ERLE at least 15 dB over 4-12 s")
    func farEndUnreportedDelay() throws {
        let late = RoomResponse(delay: .milliseconds(150), reverberationTime: .milliseconds(250), echoLevel: -4)
        let (_, result) = try Self.run(far: Self.far.get(), near: nil, room: late, delay: .zero)
        let settled = result.report.reduction(from: 4, to: 12)
        print("far end alone, 150 ms unreported: ERLE 4-12 s \(settled) dB; library \(result.report.statistics)")
        #expect(settled >= 15)
    }

    @Test("Near end alone: its level within ±1 dB of the same chain with the canceller off")
    func nearEndAlone() throws {
        let near = try Self.near.get()
        let (_, on) = try Self.run(far: Self.silence, near: near, delay: .milliseconds(60), settings: .voice)
        var offSettings = AudioProcessor.Settings.voice
        offSettings.echoCancellation = false
        let (_, off) = try Self.run(far: Self.silence, near: near, delay: .milliseconds(60), settings: offSettings)
        let active = Speech.activity(near.samples)
        let onLevel = Self.level(on.output.samples, blocks: active)
        let offLevel = Self.level(off.output.samples, blocks: active)
        print("near end alone: \(onLevel) dBFS with AEC, \(offLevel) dBFS without")
        #expect(abs(onLevel - offLevel) <= 1)
    }

    @Test("Double talk: the near end's speech drops by at most 10 dB")
    func doubleTalk() throws {
        let near = try Self.near.get()
        let (_, both) = try Self.run(far: Self.far.get(), near: near, delay: .milliseconds(60))
        let (_, alone) = try Self.run(far: Self.silence, near: near, delay: .milliseconds(60))
        // Blocks where both talk, after the canceller's first 2 s.
        let nearActive = Speech.activity(near.samples)
        let farActive = Speech.activity(try Self.far.get().samples)
        let doubleTalk = nearActive.indices.map { $0 >= 200 && nearActive[$0] && farActive[$0] }
        let kept = Self.level(both.output.samples, blocks: doubleTalk)
        let reference = Self.level(alone.output.samples, blocks: doubleTalk)
        print("double talk over \(doubleTalk.filter { $0 }.count) blocks: \(kept) dBFS against \(reference) dBFS alone")
        #expect(kept >= reference - 10)
    }

    @Test("Voice detection: at most 5 % of echo-only blocks and at least 90 % of near-speech blocks are voice")
    func voiceDetection() throws {
        let far = try Self.far.get()
        let near = try Self.near.get()
        let (_, echo) = try Self.run(far: far, near: nil, delay: .milliseconds(60), settings: .voice)
        let farActive = Speech.activity(far.samples)
        let echoBlocks = farActive.indices.filter { $0 >= 200 && farActive[$0] }
        let echoVoice = Double(echoBlocks.filter { echo.voice[$0] }.count) / Double(echoBlocks.count)
        let (_, speech) = try Self.run(far: Self.silence, near: near, delay: .milliseconds(60), settings: .voice)
        let nearActive = Speech.activity(near.samples)
        let speechBlocks = nearActive.indices.filter { nearActive[$0] }
        let speechVoice = Double(speechBlocks.filter { speech.voice[$0] }.count) / Double(speechBlocks.count)
        print("VAD: \(echoVoice) of \(echoBlocks.count) echo-only blocks, \(speechVoice) of \(speechBlocks.count) speech blocks")
        #expect(echoVoice <= 0.05)
        #expect(speechVoice >= 0.9)
    }

    @Test("Noise suppression: speech in steady noise at 10 dB SNR comes out at least 10 dB better, the speech at most 3 dB lower")
    func noiseSuppression() throws {
        let near = try Self.near.get()
        let active = Speech.activity(near.samples)
        let speechLevel = Speech.activeLevel(near.samples)
        // Noise 10 dB under the speech's active level.
        let recording = SimulatedRoom.record(far: Self.silence, near: near, response: Self.room, noiseLevel: speechLevel - 10)
        let settings = AudioProcessor.Settings(echoCancellation: false, noiseSuppression: .high, gainControl: false, highPassFilter: true)
        let result = try OfflineAudioProcessing.run(capture: recording.microphone, render: Self.silence, options: .init(settings: settings))
        let pauses = active.indices.map { $0 >= 200 && !active[$0] }
        let speaking = active.indices.map { $0 >= 200 && active[$0] }
        func snr(_ samples: [Int16]) -> (snr: Double, speech: Double) {
            let noise = pow(10, Self.level(samples, blocks: pauses) / 10)
            let total = pow(10, Self.level(samples, blocks: speaking) / 10)
            let speech = max(total - noise, 1e-12)
            return (10 * log10(speech / noise), 10 * log10(speech))
        }
        let before = snr(recording.microphone.samples)
        let after = snr(result.output.samples)
        print("NS: SNR \(before.snr) -> \(after.snr) dB; speech \(before.speech) -> \(after.speech) dBFS")
        #expect(after.snr - before.snr >= 10)
        #expect(after.speech >= before.speech - 3)
    }

    static func level(_ samples: [Int16], blocks: [Bool]) -> Double { Speech.level(samples, blocks: blocks) }
}
