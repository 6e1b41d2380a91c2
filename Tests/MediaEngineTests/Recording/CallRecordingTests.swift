import Foundation
@testable import MediaEngine
@testable import MediaSimulation
import Testing
import TestSupport

/// Per-user WebM recordings of P2P calls on loopback, checked with ffprobe and ffmpeg.
@Suite(.serialized) struct CallRecordings {
    /// The recording events one side saw.
    final class Seen: Sendable {
        struct State {
            var started: [(MediaSession.RecordingTarget, String)] = []
            var errors: [RecordingError] = []
            var stopped: [MediaRecorder.Summary] = []
            var sizes: [(Int, Int)] = []
            var disconnected = false
        }

        let state = Locked(State())

        func handle(_ event: MediaSession.Event) {
            state.withLock { state in
                switch event {
                case .recordStarted(let target, let path): state.started.append((target, path))
                case .recordError(_, let error): state.errors.append(error)
                case .recordStopped(_, let summary): state.stopped.append(summary)
                case .recordVideoSizeChanged(_, let width, let height): state.sizes.append((width, height))
                case .disconnected: state.disconnected = true
                default: break
                }
            }
        }

        /// A copy sharing no storage with what the session threads go on filling.
        var snapshot: State {
            state.withLock { state in
                State(started: state.started.detached, errors: state.errors.detached, stopped: state.stopped.detached,
                      sizes: state.sizes.detached, disconnected: state.disconnected)
            }
        }
    }

    func session(audio: any AudioSource, video: (any VideoSource)?) throws -> MediaSession {
        var configuration = MediaSession.Configuration(audio: audio, video: video)
        configuration.host = "127.0.0.1"
        configuration.videoBitrate = 600_000
        return try MediaSession(configuration: configuration)
    }

    func stopRecording(_ session: MediaSession, _ target: MediaSession.RecordingTarget) async throws -> MediaRecorder.Summary {
        try await withCheckedThrowingContinuation { continuation in
            Thread.detachNewThread {
                do throws(RecordingError) {
                    continuation.resume(returning: try session.stopRecording(target))
                } catch {
                    continuation.resume(throwing: error)
                }
            }
        }
    }

    /// Pictures `session` decoded so far.
    func picturesDecoded(_ session: MediaSession) -> Int {
        session.receiveStatistics.streams.first { $0.kind == .video }?.framesDecoded ?? 0
    }

    @Test func aTenSecondCallRecordsToWebMThatFFmpegPlays() async throws {
        try await Heavy.run {
            let directory = try temporaryDirectory("webm")
            let tones = ToneGenerator.Signal.multiTone([440, 1_000])
            let a = try session(audio: FiniteTone(tones, seconds: 10), video: FinitePattern(width: 320, height: 240, frameRate: 15, frames: 150))
            let b = try session(audio: try MediaSources.audio("sine:660"), video: nil)
            let atA = Seen()
            let atB = Seen()
            let remotePath = directory.appendingPathComponent("remote.webm").path
            let localPath = directory.appendingPathComponent("local.webm").path
            try b.start(remote: a.local) { atB.handle($0) }
            try b.startRecording(.remote, path: remotePath)
            try a.start(remote: b.local) { atA.handle($0) }
            try a.startRecording(.local, path: localPath)
            // A's sources end after 10 s; its BYE ends B's receiving.
            let began = ContinuousClock.now
            await eventually { atB.snapshot.disconnected }
            print("webm: the peer's media ended after \(ContinuousClock.now - began)")
            let remote = try await stopRecording(b, .remote)
            await a.stop()
            await b.stop()
            let local = try #require(atA.snapshot.stopped.first, "stopping the session stops its recordings")

            #expect(atB.snapshot.started.map(\.1) == [remotePath] && atA.snapshot.started.map(\.1) == [localPath])
            #expect(remote.failure == nil && local.failure == nil)
            for (path, summary) in [(remotePath, remote), (localPath, local)] {
                let probe = try Probe(path: path)
                #expect(probe.streams.map(\.codec).sorted() == ["opus", "vp8"], "\(path): \(probe.streams)")
                let video = try #require(probe.streams.first { $0.kind == "video" })
                #expect(video.width == 320 && video.height == 240)
                let duration = try #require(probe.duration)
                #expect(abs(duration - 10) <= 0.2, "\(path): duration \(duration) s")
                #expect(try Tool.decodeErrors(path).isEmpty, "\(path) decodes without errors")
                let decoded = try Tool.decodedAudio(path)
                let correlation = fileCorrelation(decoded, source: FiniteTone.samples(tones, seconds: 10))
                #expect(correlation >= 0.9, "\(path): audio correlation \(correlation)")
                #expect(summary.audioPackets >= 495 && summary.videoFrames >= 148, "\(summary)")
                print("webm \(path.hasSuffix("remote.webm") ? "remote" : "local"): duration \(duration) s, "
                    + "\(summary.audioPackets) audio packets, \(summary.videoFrames) frames, \(summary.bytes) bytes, correlation \(correlation)")
            }
        }
    }

    @Test func aResolutionChangeMidRecordingGoesOnInTheSameFile() async throws {
        try await Heavy.run {
            let directory = try temporaryDirectory("webm")
            let a = try session(audio: try MediaSources.audio("sine:440"), video: try MediaSources.video("testsrc:320x240@15"))
            let b = try session(audio: try MediaSources.audio("sine:660"), video: nil)
            let atB = Seen()
            let path = directory.appendingPathComponent("resized.webm").path
            try b.start(remote: a.local) { atB.handle($0) }
            try a.start(remote: b.local) { _ in }
            #expect(await eventually { picturesDecoded(b) >= 8 }, "B sees A")
            // About 22 pictures (1.5 s at 15 fps) of each size in the recording.
            try b.startRecording(.remote, path: path)
            let before = picturesDecoded(b)
            #expect(await eventually { picturesDecoded(b) >= before + 22 }, "pictures at 320x240")
            a.replaceVideoSource(try MediaSources.video("testsrc:640x480@15"))
            #expect(await eventually { !atB.snapshot.sizes.isEmpty }, "the recording's size changed")
            let resized = picturesDecoded(b)
            #expect(await eventually { picturesDecoded(b) >= resized + 22 }, "pictures at 640x480")
            let summary = try await stopRecording(b, .remote)
            await a.stop()
            await b.stop()

            #expect(atB.snapshot.sizes.map { "\($0.0)x\($0.1)" } == ["640x480"], "recordVideoSizeChanged")
            #expect(summary.resolutionChanges == 1 && summary.failure == nil)
            #expect(try Tool.decodeErrors(path).isEmpty)
            let sizes = try Probe.frameSizes(path: path)
            #expect(sizes.first == "320x240" && sizes.last == "640x480", "\(sizes.count) frames")
            #expect(sizes.count >= 35, "\(sizes.count) frames of about 45 sent")
        }
    }

    @Test func aFullDiskEndsTheRecordingWithAnErrorAndKeepsWhatWasWritten() async throws {
        try await Heavy.run {
            let directory = try smallDisk(kilobytes: 160)
            defer { _ = try? Tool.run("umount", [directory.path]) }
            let a = try session(audio: try MediaSources.audio("sine:440"), video: try MediaSources.video("testsrc:320x240@15"))
            let b = try session(audio: try MediaSources.audio("sine:660"), video: nil)
            let atB = Seen()
            let path = directory.appendingPathComponent("full.webm").path
            try b.start(remote: a.local) { atB.handle($0) }
            try b.startRecording(.remote, path: path)
            try a.start(remote: b.local) { _ in }
            await eventually { !atB.snapshot.errors.isEmpty }
            let summary = try await stopRecording(b, .remote)
            await a.stop()
            await b.stop()

            let error = try #require(atB.snapshot.errors.first, "a recordError event")
            #expect(error.kind == .diskFull && error.message.contains(path), "\(error)")
            #expect(summary.failure?.kind == .diskFull)
            // What was written up to the failure plays: whole clusters only.
            #expect(try Tool.decodeErrors(path).isEmpty)
            let frames = try Probe.frameSizes(path: path)
            #expect(frames.count >= 15, "\(frames.count) frames kept, \(summary.bytes) bytes")
            print("full disk: \(frames.count) frames kept in \(summary.bytes) bytes; \(error)")
        }
    }

    @Test func aFullDiskStopsTheCallAudioRecordingAndKeepsWhatWasWritten() async throws {
        try await Heavy.run {
            let directory = try smallDisk(kilobytes: 64)
            defer { _ = try? Tool.run("umount", [directory.path]) }
            let path = directory.appendingPathComponent("call.wav").path
            let recorder = try CallAudioRecorder(path: path)
            var tone = ToneGenerator(.sine(440))
            // 2 s of audio is 192 KB: the disk fills after about a third of it.
            for _ in 0..<100 { recorder.local(tone.nextFrame()) }
            #expect { try recorder.stop() } throws: { "\($0)".contains("stopped early") && "\($0)".contains(path) }
            let kept = try AudioFile.read(path: path)
            #expect(kept.samplesPerChannel >= 14_400, "\(kept.samplesPerChannel) samples kept")
            let frequency = kept.samples.withUnsafeBufferPointer { AudioQuality.toneFrequency($0) }
            #expect(abs((frequency ?? 0) - 440) < 2)
        }
    }

    /// A fresh tmpfs of `kilobytes`, to fill up (the caller unmounts it).
    func smallDisk(kilobytes: Int) throws -> URL {
        let directory = try temporaryDirectory("tmpfs")
        let mount = try Tool.run("mount", ["-t", "tmpfs", "-o", "size=\(kilobytes)k", "tmpfs", directory.path])
        guard mount.status == 0 else { throw ToolFailure("mounting a \(kilobytes) KiB tmpfs for a full disk: \(mount.stderr)") }
        return directory
    }

    @Test func badRecordingRequestsGetTypedErrors() async throws {
        try await Heavy.run {
            let directory = try temporaryDirectory("webm")
            let a = try session(audio: try MediaSources.audio("sine:440"), video: nil)
            // Before the call starts the peer's media is unknown.
            #expect(throws: RecordingError.self) { try a.startRecording(.remote, path: directory.appendingPathComponent("r.webm").path) }
            #expect { try a.stopRecording(.local) } throws: { ($0 as? RecordingError)?.kind == .notRecording }
            #expect { try a.startRecording(.local, path: "/nonexistent-dir/x.webm") } throws: {
                ($0 as? RecordingError)?.kind == .missingDirectory && "\($0)".contains("/nonexistent-dir")
            }
            #expect { try a.startRecording(.local, path: directory.appendingPathComponent("x.mp4").path) } throws: {
                ($0 as? RecordingError)?.kind == .invalidOptions
            }
            #expect { try a.startRecording(.local, path: directory.appendingPathComponent("x.webm").path, videoBitrate: 5) } throws: {
                ($0 as? RecordingError)?.kind == .invalidOptions
            }
            #expect { try a.startRecording(.local, path: directory.path) } throws: { ($0 as? RecordingError)?.kind == .invalidOptions }
            let path = try a.startRecording(.local, path: directory.appendingPathComponent("y.webm").path)
            #expect { try a.startRecording(.local) } throws: { ($0 as? RecordingError)?.kind == .alreadyRecording }
            let summary = try a.stopRecording(.local)
            // Stopped before any media came: no file is left, and the summary says why.
            #expect(summary.path == path && summary.audioPackets == 0 && summary.failure?.kind == .nothingToRecord)
            #expect(!FileManager.default.fileExists(atPath: path))
            await a.stop()
        }
    }
}

/// A recording of what arrives over a lossy path.
@Suite struct LossyRecordings {
    @Test func audioLostOnTheWayIsConcealedAndTheTrackKeepsItsLength() async throws {
        try await Heavy.run {
            let directory = try temporaryDirectory("webm-lossy")
            nonisolated(unsafe) let receiver = try MediaReceiver(streams: [
                MediaReceiver.StreamDescription(kind: .audio, payloadType: 111, clockRate: 48_000, port: 0, rtcpPort: 0, keying: nil),
            ], host: "127.0.0.1")
            var settings = ImpairmentSettings()
            settings.lossPercent = 10
            settings.delay = .milliseconds(20)
            settings.seed = 5
            let proxy = try UDPImpairmentProxy(listen: SocketAddress(host: "127.0.0.1", port: 0),
                                               forward: receiver.sockets[0].localAddress, settings: settings)
            try proxy.start()
            defer { proxy.stop() }
            let path = directory.appendingPathComponent("lossy.webm").path
            let recorder = try MediaRecorder(path: path, audioChannels: 1, video: false)
            receiver.encodedMedia = { recorder.offer($0) }
            let receiving = Background { () throws -> Int in
                try receiver.run(duration: .seconds(14), audio: { _ in }, video: { _ in }).streams[0].packetsLost
            }
            let tones = ToneGenerator.Signal.multiTone([440, 1_000])
            var configuration = MediaSender.Configuration(audio: FiniteTone(tones, seconds: 10), video: nil,
                                                          audioDestination: proxy.localAddress, videoDestination: proxy.localAddress)
            configuration.rtcpMux = true
            _ = try MediaSender(configuration: configuration).run(duration: nil)
            let lost = try receiving.wait()
            let summary = recorder.stop()

            #expect(lost >= 25, "\(lost) packets lost on the way")
            #expect(summary.audioPacketsConcealed == lost, "every lost packet's place is filled: \(summary.audioPacketsConcealed) of \(lost)")
            // A loss before the first packet or after the last is not a hole anyone can see.
            #expect((498...500).contains(summary.audioPackets + summary.audioPacketsConcealed), "\(summary)")
            let probe = try Probe(path: path)
            #expect(abs((probe.duration ?? 0) - 10) <= 0.2, "\(probe.duration ?? 0) s")
            #expect(try Tool.decodeErrors(path).isEmpty)
            let decoded = try Tool.decodedAudio(path)
            #expect(abs(Double(decoded.count) / 48_000 - 10) <= 0.2, "decoded \(Double(decoded.count) / 48_000) s: no hole shortens the track")
            let correlation = fileCorrelation(decoded, source: FiniteTone.samples(tones, seconds: 10))
            #expect(correlation >= 0.8, "correlation \(correlation) with 10 % of the packets concealed")
            print("lossy recording: \(lost) lost, \(summary.audioPacketsConcealed) concealed, decoded \(Double(decoded.count) / 48_000) s, correlation \(correlation)")
        }
    }
}

/// The recorder fed directly: what it writes always decodes, whatever arrives.
@Suite struct RecorderOrdering {
    /// A video frame whose timestamp goes back is not written, and neither are the frames
    /// after it until a keyframe: they may refer to it, and a file must never hold a frame
    /// a decoder cannot decode.
    @Test func aFrameOutOfOrderIsDroppedWithWhatFollowsItUntilAKeyframe() async throws {
        try await Heavy.run {
            let directory = try temporaryDirectory("webm-order")
            defer { try? FileManager.default.removeItem(at: directory) }
            let path = directory.appendingPathComponent("order.webm").path
            final class Asked: Sendable { let count = Locked(0) }
            let asked = Asked()
            let recorder = try MediaRecorder(path: path, audioChannels: 1, video: true) { notice in
                if case .keyframeNeeded = notice { asked.count.withLock { $0 += 1 } }
            }
            var codec = VP8.Configuration(width: 160, height: 120, bitrate: 200_000)
            codec.keyframeInterval = 30
            let vp8 = try VP8.Encoder(configuration: codec)
            let opus = try Opus.Encoder(configuration: Opus.Configuration())
            var pattern = TestPattern(width: 160, height: 120)
            var tone = ToneGenerator(.sine(440))
            let start = ContinuousClock.now
            for index in 0..<60 {
                let time = start + .milliseconds(Int64(index) * 100 / 3)
                for part in 0..<2 where index * 2 + part < 100 {
                    let packet = try opus.encode(tone.nextFrame())
                    packet.withUnsafeBytes {
                        recorder.offer(EncodedMedia(kind: .audio, data: $0, rtpTimestamp: UInt32((index * 2 + part) * 960), time: time))
                    }
                }
                let frame = try #require(try vp8.encode(pattern.nextFrame()))
                // Frame 10 claims a time 0.67 s in the past.
                let timestamp = UInt32(100_000 + index * 3_000 - (index == 10 ? 60_000 : 0))
                frame.data.withUnsafeBytes {
                    recorder.offer(EncodedMedia(kind: .video, data: $0, rtpTimestamp: timestamp, isKeyframe: frame.isKeyframe,
                                                width: 160, height: 120, time: time))
                }
            }
            let summary = recorder.stop()
            #expect(summary.droppedOutOfOrder == 1)
            #expect(summary.droppedAwaitingKeyframe == 19, "frames 11 to 29 wait for the keyframe at 30: \(summary)")
            #expect(summary.videoFrames == 40 && summary.keyframes == 2)
            #expect(asked.count.withLock { $0 } >= 1, "a keyframe was asked for")
            let errors = try Tool.decodeErrors(path)
            #expect(errors.isEmpty, "decodes cleanly: \(errors)")
        }
    }
}
