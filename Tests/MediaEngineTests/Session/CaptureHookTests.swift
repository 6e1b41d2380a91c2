import Foundation
import Synchronization
import Testing
import TestSupport
@testable import MediaEngine

/// The app's audio and video hooks between capture and encoding, through two sessions on loopback.
@Suite(.serialized) struct CaptureHookTests {
    final class Received: Sendable {
        let audio = Locked<[Int16]>([])
        let frames = Locked<[VideoFrame]>([])
    }

    /// A sends to B with `hooks`; returns what B received and A's summary after `seconds`.
    func call(audio: String = "sine:440", video: String?, hooks: CaptureHooks, seconds: Double) async throws
        -> (Received, MediaSession.Summary) {
        let received = Received()
        var configurationA = MediaSession.Configuration(audio: try MediaSources.audio(audio), video: try video.map { try MediaSources.video($0) })
        configurationA.host = "127.0.0.1"
        configurationA.captureHooks = hooks
        var configurationB = MediaSession.Configuration(audio: try MediaSources.audio("silence"), video: nil)
        configurationB.host = "127.0.0.1"
        configurationB.remoteAudio = { pcm in received.audio.withLock { $0.append(contentsOf: pcm) } }
        let a = try MediaSession(configuration: configurationA)
        let b = try MediaSession(configuration: configurationB)
        try b.start(remote: a.local) { event in
            if case .remoteVideoFrame(let frame, _) = event { received.frames.withLock { if $0.count < 400 { $0.append(frame) } } }
        }
        try a.start(remote: b.local) { _ in }
        // The rates checked are per second of capture: time is what they are measured over.
        try await Task.sleep(for: .milliseconds(Int64(seconds * 1_000)))
        let summaryA = await a.stop()
        await b.stop()
        return (received, summaryA)
    }

    @Test func anAudioHookProcessesWhatIsSent() async throws {
        try await Heavy.run {
            // Reference: the same tone without a hook.
            let (plain, _) = try await call(video: nil, hooks: CaptureHooks(), seconds: 2)
            let hooks = CaptureHooks()
            hooks.setAudioHook { samples, count, rate in
                // Half the amplitude, and prove the rate is what capture runs at.
                guard rate == 48_000 else { return -1 }
                for index in 0..<count { samples[index] /= 2 }
                return count
            }
            let (halved, _) = try await call(video: nil, hooks: hooks, seconds: 2)
            let reference = rms(plain.audio.withLock { $0.detached }.dropFirst(24_000))
            let level = rms(halved.audio.withLock { $0.detached }.dropFirst(24_000))
            #expect(abs(level / reference - 0.5) <= 0.05, "hooked level \(level) against \(reference)")
            let statistics = hooks.statistics
            #expect(statistics.audioBlocksProcessed >= 90, "\(statistics)")
            #expect(statistics.audioBlocksDropped <= 3, "only the pipeline's first block is silent: \(statistics)")
            print("audio hook: level ratio \(level / reference), \(statistics)")
        }
    }

    @Test func aVoiceChangerReplacesTheToneAndASlowHookDropsWithoutStallingCapture() async throws {
        try await Heavy.run {
            let hooks = CaptureHooks()
            let slow = Atomic<Bool>(false)
            hooks.setAudioHook { [hooks] samples, count, _ in
                // Replace the microphone with 1 kHz.
                var generator = ToneGenerator(.sine(1_000))
                generator.fill(UnsafeMutableBufferPointer(start: samples, count: count))
                if slow.load(ordering: .relaxed) {
                    // Still busy when the next two blocks are captured (and go out as silence).
                    let dropped = hooks.statistics.audioBlocksDropped
                    eventuallyBlocking(timeout: .seconds(1)) { hooks.statistics.audioBlocksDropped >= dropped + 2 }
                }
                return count
            }
            let (changed, _) = try await call(video: nil, hooks: hooks, seconds: 1.5)
            let frequency = changed.audio.withLock { $0.detached }.dropFirst(24_000).withUnsafeBufferPointer { AudioQuality.toneFrequency($0) }
            #expect(abs((frequency ?? 0) - 1_000) < 5, "the far end hears the hook's tone: \(frequency ?? 0) Hz")

            // Three blocks' time per block: most blocks are dropped, and capture keeps its pace.
            slow.store(true, ordering: .relaxed)
            let before = hooks.statistics
            let (_, summary) = try await call(video: nil, hooks: hooks, seconds: 2)
            let statistics = hooks.statistics
            let dropped = statistics.audioBlocksDropped - before.audioBlocksDropped
            let processed = statistics.audioBlocksProcessed - before.audioBlocksProcessed
            let packets = summary.sent?.audioPackets ?? 0
            #expect(packets >= 95, "capture and sending keep 50 blocks/s: \(packets) in 2 s")
            #expect(dropped >= packets / 2 && processed >= 20, "dropped \(dropped), processed \(processed) of \(packets)")
            print("slow audio hook: \(packets) packets sent, \(processed) processed, \(dropped) dropped")
        }
    }

    @Test func aVideoHookSendsItsPicturesAndASlowOneDropsFrames() async throws {
        try await Heavy.run {
            let hooks = CaptureHooks()
            let slow = Atomic<Bool>(false)
            hooks.setVideoHook { [hooks] frame in
                var processed = frame
                // A "filter": the picture goes white.
                processed.withMutablePlanes { y, _, _ in y.update(repeating: 235) }
                if slow.load(ordering: .relaxed) {
                    // Still busy when the next three pictures are captured: the second and the
                    // third replace the one before them, unseen.
                    let dropped = hooks.statistics.videoFramesDropped
                    eventuallyBlocking(timeout: .seconds(1)) { hooks.statistics.videoFramesDropped >= dropped + 2 }
                }
                try? hooks.sendVideoFrame(processed)
            }
            let (received, summary) = try await call(video: "testsrc:320x240@15", hooks: hooks, seconds: 2)
            let frames = received.frames.withLock { $0.detached }
            #expect(frames.count >= 20, "\(frames.count) frames")
            let meanLuma = frames.map { frame in frame.withPlanes { y, _, _ in Double(y.reduce(0) { $0 + Int($1) }) / Double(y.count) } }
            #expect(meanLuma.allSatisfy { $0 > 225 }, "every picture received is the hook's: \(meanLuma.min() ?? 0)")
            let sent = summary.sent?.videoFrames ?? 0
            #expect(hooks.statistics.videoFramesReturned >= sent, "\(hooks.statistics), \(sent) sent")

            // Three pictures' time per picture at 15 fps: the hook sees about one in three, the
            // rest are dropped.
            slow.store(true, ordering: .relaxed)
            let before = hooks.statistics
            let (slowReceived, slowSummary) = try await call(video: "testsrc:320x240@15", hooks: hooks, seconds: 2)
            let statistics = hooks.statistics
            let dropped = statistics.videoFramesDropped - before.videoFramesDropped
            let slowSent = slowSummary.sent?.videoFrames ?? 0
            #expect(dropped >= 10, "\(dropped) pictures dropped")
            #expect((5...14).contains(slowSent), "\(slowSent) pictures sent in 2 s at 5 per second")
            #expect((slowSummary.sent?.audioPackets ?? 0) >= 95, "audio is not held up by the video hook")
            #expect(slowReceived.frames.withLock { $0.count } >= slowSent - 2)
            print("video hook: \(sent) sent; slow: \(slowSent) sent, \(dropped) dropped")
        }
    }

    @Test func badHookOutputIsRefused() async throws {
        try await Heavy.run {
            let hooks = CaptureHooks()
            #expect { try hooks.sendVideoFrame(VideoFrame(width: 16, height: 16)) } throws: { "\($0)".contains("no video hook") }
            hooks.setVideoHook { _ in }
            #expect { try hooks.sendVideoFrame(VideoFrame(width: 16, height: 16)) } throws: { "\($0)".contains("matches none") }
            hooks.setVideoHook(nil)
            // A count beyond what it was given is refused: the block goes out silent.
            hooks.setAudioHook { _, count, _ in count + 1 }
            let (received, _) = try await call(video: nil, hooks: hooks, seconds: 1)
            #expect(hooks.statistics.audioBlocksRejected >= 40 && hooks.statistics.audioBlocksProcessed == 0)
            #expect(rms(received.audio.withLock { $0.detached }[...]) < 50, "nothing of the microphone leaks")
        }
    }
}
