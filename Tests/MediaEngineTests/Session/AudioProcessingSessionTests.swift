import Foundation
import MediaSimulation
import Synchronization
import Testing
import TestSupport
@testable import MediaEngine

/// The capture path's processing in calls between two sessions on loopback: bob's
/// microphone in a simulated room hears what his speaker plays.
@Suite(.serialized) struct AudioProcessingSessionTests {
    final class Heard: Sendable {
        let audio = Locked<[Int16]>([])
        let events = Locked<[MediaSession.Event]>([])
    }

    static func wavSource(_ frame: AudioFrame) throws -> AudioFileSource {
        let path = FileManager.default.temporaryDirectory.appendingPathComponent("source-\(UUID().uuidString).wav").path
        try AudioFile.writeWAV(frame, path: path)
        defer { try? FileManager.default.removeItem(atPath: path) }
        return try AudioFileSource(path: path)
    }

    /// Alice sends `aliceAudio`; bob sends `bobAudio` and plays alice on `bobSink`. Returns
    /// what alice heard of bob, her events, bob's events and bob's summary.
    static func call(aliceAudio: any AudioSource, bobAudio: any AudioSource, bobSink: (any AudioSink)?,
                     bobProcessing: AudioProcessor.Settings?, bobSampleRate: Int = AudioFrame.sampleRate, seconds: Double,
                     during: (MediaSession) async throws -> Void = { _ in }) async throws -> (Heard, Heard, MediaSession.Summary) {
        let alice = Heard()
        let bob = Heard()
        var a = MediaSession.Configuration(audio: aliceAudio, video: nil)
        a.host = "127.0.0.1"
        a.remoteAudio = { pcm in alice.audio.withLock { $0.append(contentsOf: pcm) } }
        var b = MediaSession.Configuration(audio: bobAudio, video: nil)
        b.host = "127.0.0.1"
        b.audioSink = bobSink
        b.audioProcessing = bobProcessing
        b.audioProcessingSampleRate = bobSampleRate
        let sessionA = try MediaSession(configuration: a)
        let sessionB = try MediaSession(configuration: b)
        try sessionB.start(remote: sessionA.local) { event in
            if case .remoteVideoFrame = event { return }
            bob.events.withLock { $0.append(event) }
        }
        try sessionA.start(remote: sessionB.local) { event in
            if case .speakingUsers = event { alice.events.withLock { $0.append(event) } }
        }
        let started = ContinuousClock.now
        try await during(sessionB)
        try await Task.sleep(until: started + .milliseconds(Int64(seconds * 1_000)))
        await sessionA.stop()
        let summary = await sessionB.stop()
        return (alice, bob, summary)
    }

    /// RMS dBFS of `samples` from `start` to `end` seconds.
    static func level(_ samples: [Int16], from start: Double, to end: Double) -> Double {
        let slice = samples[min(samples.count, Int(start * 48_000))..<min(samples.count, Int(end * 48_000))]
        return 20 * log10(max(rms(slice) / 32_768, 1e-8))
    }

    @Test func bobsRoomEchoesAliceAndTheCancellerRemovesItButKeepsBob() async throws {
        try await Heavy.runAlone {
            // Alice talks throughout; bob starts talking 8 s into the room's clock.
            let far = try Speech.fit(Speech.say(Speech.farText, level: -20), seconds: 20)
            let near = try Speech.fit(Speech.say(Speech.nearText, voice: "en-us+f3", level: -26), seconds: 40, offset: 8)
            let response = RoomResponse(delay: .milliseconds(10), reverberationTime: .milliseconds(250), echoLevel: -4)
            // Runs: alice talking with AEC on and off, and alice silent (bob alone, AEC on).
            var results: [String: (echo: Double, doubleTalk: Double, summary: MediaSession.Summary)] = [:]
            for (run, cancelling, talking) in [("on", true, true), ("off", false, true), ("bob alone", true, false)] {
                let room = LiveRoom(response: response, near: near)
                var settings = AudioProcessor.Settings.voice
                settings.echoCancellation = cancelling
                let aliceAudio: any AudioSource = talking ? try Self.wavSource(far) : try MediaSources.audio("silence")
                let (alice, _, summary) = try await Self.call(aliceAudio: aliceAudio, bobAudio: room.microphone, bobSink: room.speaker,
                                                              bobProcessing: settings, seconds: 13.5)
                let heard = alice.audio.withLock { $0 }
                // Alice's audio reaches bob's speaker about when the room's clock starts.
                results[run] = (Self.level(heard, from: 3.5, to: 7), Self.level(heard, from: 9.5, to: 13), summary)
                withExtendedLifetime(room) {}
            }
            let on = try #require(results["on"])
            let off = try #require(results["off"])
            let alone = try #require(results["bob alone"])
            print("call through a room: alice's echo \(on.echo) dBFS with AEC, \(off.echo) without; bob in double talk \(on.doubleTalk) "
                  + "against \(alone.doubleTalk) alone; \(String(describing: on.summary.audioProcessing))")
            #expect(off.echo - on.echo >= 25, "the echo of alice went down by \(off.echo - on.echo) dB")
            // Bob's speech is kept: far above the residual echo of alice. Over the whole
            // window (both talking, bob's pauses included) it measured 11 dB under bob alone
            // here: the canceller's high suppression, which the unreported-delay figure needs,
            // also takes some of a near end that talks over an echo 2 dB louder than itself.
            // The 10 dB bound on the near end's drop is checked block by block offline
            // (`AudioProcessingRoomTests.doubleTalk`).
            #expect(on.doubleTalk - on.echo >= 20)
            #expect(on.doubleTalk >= alone.doubleTalk - 15)
            let statistics = try #require(on.summary.audioProcessing)
            #expect(statistics.renderBlocks > 1_000, "the speaker's audio reached the canceller: \(statistics)")
            #expect(statistics.captureBlocks > 1_000)
            #expect(statistics.failedBlocks == 0)
            #expect(statistics.echoReturnLossEnhancement != nil)
        }
    }

    @Test func togglingEverySetting1000TimesDuringACallKeepsTheCallGoing() async throws {
        try await Heavy.run {
            let room = LiveRoom(response: RoomResponse(delay: .milliseconds(10)), near: nil)
            let levels: [AudioProcessor.Settings.NoiseSuppression] = [.off, .low, .moderate, .high, .veryHigh]
            var last = AudioProcessor.Settings.voice
            let (alice, _, summary) = try await Self.call(aliceAudio: try MediaSources.audio("sine:440"), bobAudio: try MediaSources.audio("sine:660"),
                                                     bobSink: room.speaker, bobProcessing: .voice, seconds: 4) { bob in
                for index in 0..<1_000 {
                    last = AudioProcessor.Settings(echoCancellation: index % 2 == 0, noiseSuppression: levels[index % 5],
                                                   gainControl: index % 3 != 0, highPassFilter: index % 7 != 0)
                    bob.setAudioProcessing(last)
                    if index % 10 == 0 { try await Task.sleep(for: .milliseconds(2)) }
                }
                #expect(bob.audioProcessing == last)
            }
            withExtendedLifetime(room) {}
            let heard = alice.audio.withLock { $0 }
            #expect(summary.failure == nil)
            let statistics = try #require(summary.audioProcessing)
            #expect(statistics.failedBlocks == 0, "\(statistics)")
            #expect(statistics.captureBlocks >= 300, "\(statistics)")
            // Bob's tone still arrives, after the toggling too.
            let tail = Array(heard.suffix(48_000))
            let frequency = tail.withUnsafeBufferPointer { AudioQuality.toneFrequency($0) }
            #expect(abs((frequency ?? 0) - 660) < 5, "alice hears \(frequency ?? 0) Hz")
        }
    }

    @Test func aLibraryThatCannotStartIsAWarningAndTheCallGoesOnUnprocessed() async throws {
        try await Heavy.run {
            let (alice, bob, summary) = try await Self.call(aliceAudio: try MediaSources.audio("sine:440"), bobAudio: try MediaSources.audio("sine:660"),
                                                       bobSink: nil, bobProcessing: .voice, bobSampleRate: 0, seconds: 2)
            let failures = bob.events.withLock { events in
                events.compactMap { event -> AudioProcessingError? in
                    if case .audioProcessingFailed(let error) = event { return error }
                    return nil
                }
            }
            #expect(failures.count == 1, "reported once: \(failures)")
            #expect(failures.first?.code == .initializationFailed)
            #expect(failures.first?.message.contains("bad sample rate") == true, "\(failures)")
            #expect(summary.audioProcessing == nil)
            #expect(summary.failure == nil)
            let heard = alice.audio.withLock { $0 }
            let frequency = Array(heard.suffix(24_000)).withUnsafeBufferPointer { AudioQuality.toneFrequency($0) }
            #expect(abs((frequency ?? 0) - 660) < 5, "the microphone goes out unprocessed: \(frequency ?? 0) Hz")
        }
    }

    @Test func steadyNoiseIsNotSpeechOnceTheVoiceDetectorRuns() async throws {
        try await Heavy.run {
            // A fan: white noise at -30 dBFS, which the level alone calls voice (above -50 dBov).
            var random = SeededRandom(seed: 3)
            let amplitude = 32_768 * pow(10, -30.0 / 20)
            let noise = AudioFrame(layout: .mono, samples: (0..<(48_000 * 4)).map { _ in Int16(max(-32_768, min(32_767, random.normal() * amplitude))) })
            var speaking: [Bool: Int] = [:]
            var volumes: [Bool: [Double]] = [:]
            for processed in [true, false] {
                let (alice, bob, _) = try await Self.call(aliceAudio: try MediaSources.audio("silence"), bobAudio: try Self.wavSource(noise), bobSink: nil,
                                                     bobProcessing: processed ? .voice : .off, seconds: 3)
                speaking[processed] = alice.events.withLock { events in
                    events.filter { if case .speakingUsers(let users) = $0 { users[""] != nil } else { false } }.count
                }
                volumes[processed] = bob.events.withLock { events in
                    events.compactMap { if case .localAudioLevel(let level) = $0 { level } else { nil } }
                }
            }
            print("speakingUsers naming bob: \(speaking); bob's levels processed \(volumes[true]?.suffix(5) ?? [])")
            #expect(speaking[false] ?? 0 >= 5, "without the detector the noise is speech")
            #expect(speaking[true] == 0, "with the detector it never is")
            // myVolume counts only voice: the fan reads as silence once the detector decides.
            #expect((volumes[true] ?? []).dropFirst(5).allSatisfy { $0 == 0 }, "\(volumes[true] ?? [])")
            #expect((volumes[false] ?? []).dropFirst(5).allSatisfy { $0 > 0.01 })
        }
    }
}
