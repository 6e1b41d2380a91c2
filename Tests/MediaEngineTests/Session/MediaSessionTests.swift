import CPNG
import Foundation
@testable import MediaEngine
@testable import MediaSimulation
import Testing
import TestSupport

/// Two P2P media sessions on loopback, as a call's two ends use them.
@Suite(.serialized) struct MediaSessions {
    /// Everything one side saw.
    final class Collected: Sendable {
        struct Seen {
            var audio: [Int16] = []
            var frames: [VideoFrame] = []
            var connected: (remote: SocketAddress, rtt: Duration)?
            var failures: [String] = []
            var disconnected: [String] = []
            var remoteLevels: [Double] = []
            var localFrames = 0
            var mixCompletions = 0
        }

        let seen = Locked(Seen())

        func handle(_ event: MediaSession.Event) {
            seen.withLock { seen in
                switch event {
                case .connected(let pair, let rtt): seen.connected = (pair.remote.address, rtt)
                case .connectFailed(let why): seen.failures.append(why)
                case .disconnected(let why): seen.disconnected.append(why)
                case .remoteVideoFrame(let frame, _): if seen.frames.count < 200 { seen.frames.append(frame) }
                case .localVideoFrame: seen.localFrames += 1
                case .remoteAudioLevel(let level, _): seen.remoteLevels.append(level)
                case .audioMixTaskCompleted: seen.mixCompletions += 1
                case .statistics, .localAudioLevel, .speakingUsers, .recordStarted, .recordError, .recordStopped, .recordVideoSizeChanged,
                     .pathChanged, .localCandidate, .gatheringComplete, .dtlsConnected, .audioProcessingFailed: break
                }
            }
        }

        /// Samples played so far.
        var audioCount: Int { seen.withLock { $0.audio.count } }

        /// A copy sharing no storage with what the session threads go on filling.
        var snapshot: Seen {
            seen.withLock { seen in
                var copy = seen
                copy.audio = seen.audio.detached
                copy.frames = seen.frames.detached
                copy.failures = seen.failures.detached
                copy.disconnected = seen.disconnected.detached
                copy.remoteLevels = seen.remoteLevels.detached
                return copy
            }
        }
    }

    /// An event handler that captures its session (as an app trickling candidates does)
    /// does not keep the session alive once it is stopped.
    @Test func aStoppedSessionIsFreedThoughItsHandlerCapturesIt() throws {
        weak var freed: MediaSession?
        do {
            var configuration = MediaSession.Configuration(audio: try MediaSources.audio("sine:440"), video: nil)
            configuration.host = "127.0.0.1"
            let session = try MediaSession(configuration: configuration)
            freed = session
            session.gather { event in if case .localCandidate = event { _ = session.local } }
            session.stop()
        }
        // Its receiving thread lets go of the session just after `stop` returns (it signals
        // the end, then returns).
        eventuallyBlocking { freed == nil }
        #expect(freed == nil, "the stopped session is freed")
    }

    /// A host this machine does not have (TEST-NET-1, RFC 5737) cannot be bound: a typed
    /// error naming the address, with the errno, not a crash or a session that never hears.
    @Test func aHostThatIsNotOursIsATypedSocketError() throws {
        var configuration = MediaSession.Configuration(audio: try MediaSources.audio("sine:440"), video: nil)
        configuration.host = "192.0.2.1"
        do throws(MediaSessionError) {
            _ = try MediaSession(configuration: configuration)
            Issue.record("bound 192.0.2.1")
        } catch {
            #expect(error.code == .socket)
            #expect(error.systemError == EADDRNOTAVAIL, "errno \(error.systemError.map(String.init) ?? "nil")")
            #expect(error.message.contains("192.0.2.1"), "\(error.message)")
        }
    }

    func waited(_ session: MediaSession) async -> MediaSession.Summary {
        await withCheckedContinuation { continuation in Thread.detachNewThread { continuation.resume(returning: session.wait()) } }
    }

    func session(audio: String, video: String?, collected: Collected, tweak: (inout MediaSession.Configuration) -> Void = { _ in })
        throws -> MediaSession {
        var configuration = MediaSession.Configuration(audio: try MediaSources.audio(audio),
                                                       video: try video.map { try MediaSources.video($0) })
        configuration.host = "127.0.0.1"
        configuration.remoteAudio = { pcm in collected.seen.withLock { $0.audio.append(contentsOf: pcm) } }
        tweak(&configuration)
        return try MediaSession(configuration: configuration)
    }

    /// Two audio-only sessions (440 Hz and 660 Hz), each started toward the other.
    func connectedPair() throws -> (MediaSession, MediaSession, Collected, Collected) {
        let atA = Collected()
        let atB = Collected()
        let a = try session(audio: "sine:440", video: nil, collected: atA)
        let b = try session(audio: "sine:660", video: nil, collected: atB)
        try b.start(remote: a.local) { atB.handle($0) }
        try a.start(remote: b.local) { atA.handle($0) }
        return (a, b, atA, atB)
    }

    @Test func twoSessionsExchangeAudioAndVideoWithQualityIntact() async throws {
        try await Heavy.run {
            let atA = Collected()
            let atB = Collected()
            let a = try session(audio: "tones:440,1000", video: "testsrc:320x240@15", collected: atA)
            let b = try session(audio: "sine:660", video: "testsrc:320x240@15", collected: atB)
            #expect(a.local.candidates.map(\.address) == [try SocketAddress(host: "127.0.0.1", port: a.local.candidates[0].address.port)])
            try b.start(remote: a.local) { atB.handle($0) }
            try a.start(remote: b.local) { atA.handle($0) }
            // Three seconds of the tones at B, 40 pictures, and B's tone back at A.
            #expect(await eventually {
                atB.audioCount >= 144_000 && atB.seen.withLock { $0.frames.count } >= 40 && atA.audioCount >= 48_000
            }, "media both ways")
            let summaryA = await a.stop()
            let summaryB = await b.stop()

            let seenA = atA.snapshot
            let seenB = atB.snapshot
            let rttA = try #require(seenA.connected?.rtt)
            #expect(rttA < .milliseconds(50), "STUN round trip on loopback: \(rttA)")
            #expect(seenB.connected != nil && seenA.failures.isEmpty && seenB.failures.isEmpty)
            #expect(summaryA.failure == nil && summaryB.failure == nil, "\(summaryA.failure ?? "") \(summaryB.failure ?? "")")

            // Audio A -> B: the two-tone source, correlated after finding the lag.
            var tones = ToneGenerator(.multiTone([440, 1_000]))
            var reference: [Int16] = []
            while reference.count < seenB.audio.count + 48_000 { reference += tones.nextFrame().samples }
            #expect(seenB.audio.count > 48_000 * 2, "\(seenB.audio.count) samples played")
            let correlation = reference.withUnsafeBufferPointer { ref in
                seenB.audio.withUnsafeBufferPointer { test in
                    AudioQuality.trackedCorrelation(reference: ref, test: test, testStart: 24_000, lagRange: -2_400...2_400).correlation
                }
            }
            #expect(correlation >= 0.9, "audio correlation \(correlation)")
            // Audio B -> A: the tone's frequency in each 100 ms after the first 200 ms, and their
            // median. Counted over the whole second at once, a few milliseconds concealed on
            // a busy machine (noise, many zero crossings) read as a higher pitch: 669.6 Hz once.
            let windows = stride(from: 9_600, through: seenA.audio.count - 4_800, by: 4_800).compactMap { start in
                seenA.audio[start..<start + 4_800].withUnsafeBufferPointer { AudioQuality.toneFrequency($0) }
            }.sorted()
            let frequency = windows.isEmpty ? 0 : windows[windows.count / 2]
            #expect(windows.count >= 7 && abs(frequency - 660) < 3, "B -> A tone \(frequency) Hz, median of \(windows)")

            // Video A -> B: each received picture matched to the source picture it came from.
            var pattern = TestPattern(width: 320, height: 240, frameRate: 15)
            let sources = (0..<60).map { _ in pattern.nextFrame() }
            let sentFrames = summaryA.sent?.videoFrames ?? 0
            #expect(seenB.frames.count >= sentFrames * 8 / 10, "\(seenB.frames.count) of \(sentFrames) frames")
            let psnrs = seenB.frames.prefix(40).map { frame in sources.map { VideoQuality.psnr($0, frame) }.max() ?? 0 }
            let meanPSNR = psnrs.reduce(0, +) / Double(max(1, psnrs.count))
            #expect(meanPSNR >= 30, "mean PSNR \(meanPSNR) dB")
            #expect(seenA.localFrames > 0, "the local preview sees captured frames")
            print("media session: rtt \(rttA), audio correlation \(correlation), video \(seenB.frames.count)/\(sentFrames) frames, PSNR \(meanPSNR) dB")
        }
    }

    @Test func aPeerThatNeverAnswersFailsToConnectInBoundedTime() async throws {
        try await Heavy.run {
            let seen = Collected()
            let a = try session(audio: "sine:440", video: nil, collected: seen) { $0.connectTimeout = .milliseconds(500) }
            let silent = try UDPSocket(bindTo: SocketAddress(host: "127.0.0.1", port: 0))
            defer { silent.close() }
            let remote = MediaSession.Endpoint(candidates: [ICECandidate.local(.host, address: silent.localAddress, localPreference: 65_535)],
                                               keying: .random(), audioSSRC: 1, videoSSRC: nil,
                                               ice: ICECredentials(ufrag: "nobody", password: "nobody-password-01234567"))
            let started = ContinuousClock.now
            try a.start(remote: remote) { seen.handle($0) }
            let summary = await waited(a)
            #expect(ContinuousClock.now - started < .seconds(3))
            #expect(seen.snapshot.failures.first?.contains("ICE found no path") == true, "\(seen.snapshot.failures)")
            #expect(summary.sent == nil, "nothing is sent to a peer that never answered")
        }
    }

    @Test func aPeerThatHangsUpEndsItsMediaWithBYE() async throws {
        try await Heavy.run {
            let (a, b, atA, _) = try connectedPair()
            // Each condition is bound before its #expect: this Swift (6.3.1) gives a closure
            // written inside a macro's argument and a later closure of the same enclosing
            // closure one mangled name, and the later one then runs the first's body (here
            // `told` polled the audio count and was true at once). tools/check-closures finds it.
            let heard = await eventually { atA.audioCount >= 24_000 }
            #expect(heard, "A hears B")
            await b.stop()
            let stopped = ContinuousClock.now
            let told = await eventually { !atA.seen.withLock { $0.disconnected.isEmpty } }
            #expect(told, "A was told nothing \(ContinuousClock.now - stopped) after B stopped (cancelled: \(Task.isCancelled))")
            await a.stop()
            #expect(atA.snapshot.disconnected.first?.contains("BYE") == true, "\(atA.snapshot.disconnected)")
        }
    }

    @Test func aPeerThatVanishesIsReportedAfterTheMediaTimeout() async throws {
        try await Heavy.run {
            let atA = Collected()
            let atB = Collected()
            let a = try session(audio: "sine:440", video: nil, collected: atA) { $0.mediaTimeout = .seconds(1) }
            let b = try session(audio: "sine:660", video: nil, collected: atB)
            // Each reaches the other only through a proxy (neither ever sees the other's own
            // address, so ICE finds no direct pair); stopping the proxies cuts B's media off
            // without a BYE, as a crashed peer or a dead network would.
            let toA = try UDPImpairmentProxy(listen: SocketAddress(host: "127.0.0.1", port: 0), forward: a.local.candidates[0].address,
                                             settings: ImpairmentSettings())
            let toB = try UDPImpairmentProxy(listen: SocketAddress(host: "127.0.0.1", port: 0), forward: b.local.candidates[0].address,
                                             settings: ImpairmentSettings())
            try toA.start()
            try toB.start()
            var aThroughProxy = a.local
            aThroughProxy.candidates = [ICECandidate.local(.host, address: toA.localAddress, localPreference: 65_535)]
            var bThroughProxy = b.local
            bThroughProxy.candidates = [ICECandidate.local(.host, address: toB.localAddress, localPreference: 65_535)]
            try b.start(remote: aThroughProxy) { atB.handle($0) }
            try a.start(remote: bThroughProxy) { atA.handle($0) }
            // Connected, and B's media reaching A: what the media timeout watches.
            #expect(await eventually { atB.seen.withLock { $0.connected != nil } && atA.audioCount >= 24_000 },
                    "connectivity checks pass through the proxy")
            toA.stop()
            toB.stop()
            let cut = Date()
            await eventually { !atA.seen.withLock { $0.disconnected.isEmpty } }
            let waited = Date().timeIntervalSince(cut)
            await a.stop()
            await b.stop()
            #expect(atA.snapshot.disconnected.first?.contains("no media from the peer for 1.0 seconds") == true, "\(atA.snapshot.disconnected)")
            #expect(waited < 3, "reported \(waited) s after the cut")
        }
    }

    @Test func muteSendsSilence() async throws {
        try await Heavy.run {
            let (a, b, _, atB) = try connectedPair()
            func lastLevel() -> Double? { atB.seen.withLock { $0.remoteLevels.last } }
            #expect(await eventually { (lastLevel() ?? 0) > 0.2 }, "B hears A")
            let before = lastLevel() ?? 0
            a.controls.update { $0.audioMuted = true }
            #expect(await eventually { (lastLevel() ?? 1) < 0.01 }, "B hears A's silence")
            let after = lastLevel() ?? 1
            await a.stop()
            await b.stop()
            #expect(before > 0.2, "a full-scale-ish sine is loud: \(before)")
            #expect(after < 0.01, "muted: \(after)")
        }
    }

    @Test func aMixedFileArrivesAtTheSendVolumeAndCompletesAfterItsLoops() async throws {
        try await Heavy.run {
            let atA = Collected()
            let atB = Collected()
            let path = FileManager.default.temporaryDirectory.appendingPathComponent("mix-\(UInt32.random(in: 0 ... .max)).wav").path
            defer { try? FileManager.default.removeItem(atPath: path) }
            try writeWAV(sine(500, rate: 44_100, seconds: 0.5, amplitude: 0.6), rate: 44_100, to: path)
            let speaker = CapturingSink()
            let a = try session(audio: "silence", video: nil, collected: atA) { $0.audioSink = speaker }
            let b = try session(audio: "silence", video: nil, collected: atB)
            try b.start(remote: a.local) { atB.handle($0) }
            try a.start(remote: b.local) { atA.handle($0) }
            #expect(await eventually { atB.audioCount >= 24_000 }, "B hears A")
            let task = try AudioFileMixTask(fileURL: URL(fileURLWithPath: path))
            task.numberOfLoops = 2
            try task.setVolumes(send: 0.5, playback: 0.25)
            let heardBefore = atB.snapshot.audio.count
            a.startAudioMix(task)
            // Three plays of 0.5 s, then their end heard at B: its last 500 ms silent (the
            // blocks checked below end up to 200 ms before what was heard).
            #expect(await eventually {
                atA.seen.withLock { $0.mixCompletions } == 1
                    && atB.seen.withLock { seen in
                        seen.audio.count >= heardBefore + 96_000 && seen.audio.suffix(24_000).allSatisfy { $0.magnitude < 300 }
                    }
            }, "the mix completed and went quiet")
            await a.stop()
            await b.stop()
            #expect(atA.snapshot.mixCompletions == 1, "one completion after 3 plays of 0.5 s")
            let heard = Array(atB.snapshot.audio.dropFirst(heardBefore))
            // The loudest stretch: the file at half volume, 0.6 x 0.5 of full scale.
            let blocks = stride(from: 0, to: heard.count - 4_800, by: 4_800).map { start -> Double in
                let block = heard[start..<(start + 4_800)]
                return (block.reduce(0.0) { $0 + Double($1) * Double($1) } / 4_800).squareRoot() / 32_768
            }
            let expected = 0.6 * 0.5 / 2.0.squareRoot()
            let loud = blocks.filter { $0 > expected / 2 }
            #expect(loud.count >= 10, "\(loud.count) blocks of 100 ms carried the file")
            let median = loud.sorted()[loud.count / 2]
            #expect(abs(median - expected) / expected < 0.1, "RMS \(median), expected \(expected)")
            #expect(blocks.suffix(3).allSatisfy { $0 < 0.01 }, "silence after the last pass")
            // Locally, the file plays at its playback volume, mixed into the peer's (silent) audio.
            let played = speaker.samples
            let local = stride(from: 0, to: max(0, played.count - 4_800), by: 4_800).map { start -> Double in
                let block = played[start..<(start + 4_800)]
                return (block.reduce(0.0) { $0 + Double($1) * Double($1) } / 4_800).squareRoot() / 32_768
            }
            let localExpected = 0.6 * 0.25 / 2.0.squareRoot()
            let localLoud = local.filter { $0 > localExpected / 2 }.sorted()
            #expect(localLoud.count >= 10, "\(localLoud.count) blocks played locally")
            let localMedian = localLoud.isEmpty ? 0 : localLoud[localLoud.count / 2]
            #expect(abs(localMedian - localExpected) / localExpected < 0.1, "local RMS \(localMedian), expected \(localExpected)")
        }
    }

    /// Collects what a session plays.
    final class CapturingSink: AudioSink, Sendable {
        let layout = ChannelLayout.mono
        let name = "capture"
        private let store = Locked<[Int16]>([])
        func write(_ samples: UnsafeBufferPointer<Int16>) throws { store.withLock { $0.append(contentsOf: samples) } }
        func close() throws {}
        var samples: [Int16] { store.withLock { $0.detached } }
    }

    /// Power of `frequency` in `samples` (Goertzel), relative to full scale.
    static func tonePower(_ samples: ArraySlice<Int16>, _ frequency: Double) -> Double {
        let coefficient = 2 * cos(2 * .pi * frequency / 48_000)
        var (previous, beforePrevious) = (0.0, 0.0)
        for sample in samples {
            let current = Double(sample) / 32_768 + coefficient * previous - beforePrevious
            beforePrevious = previous
            previous = current
        }
        let power = previous * previous + beforePrevious * beforePrevious - coefficient * previous * beforePrevious
        return power / Double(samples.count * samples.count)
    }

    @Test func theCallAudioRecordingHoldsBothPartiesAndTheMix() async throws {
        try await Heavy.run {
            let directory = FileManager.default.temporaryDirectory.appendingPathComponent("callrec-\(UInt32.random(in: 0 ... .max))")
            try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
            defer { try? FileManager.default.removeItem(at: directory) }
            let mixPath = directory.appendingPathComponent("mix.wav").path
            try writeWAV(sine(1_000, rate: 48_000, seconds: 1, amplitude: 0.6), rate: 48_000, to: mixPath)
            let (a, b, atA, atB) = try connectedPair()

            let wav = directory.appendingPathComponent("call.wav").path
            let ogg = directory.appendingPathComponent("call.ogg").path
            #expect(try a.startAudioRecording(path: wav) == wav)
            #expect(throws: MixError.self) { try a.startAudioRecording(path: ogg) }
            #expect(try b.startAudioRecording(path: ogg) == ogg)
            #expect(a.currentAudioRecordingFilePath == wav)
            let mix = try AudioFileMixTask(fileURL: URL(fileURLWithPath: mixPath))
            mix.numberOfLoops = -1
            try mix.setVolumes(send: 0.5)
            a.startAudioMix(mix)
            // Two seconds of the call heard at each end while they record.
            let heard = (atA.audioCount, atB.audioCount)
            #expect(await eventually { atA.audioCount >= heard.0 + 96_000 && atB.audioCount >= heard.1 + 96_000 }, "two seconds recorded")
            try a.stopAudioRecording()
            try b.stopAudioRecording()
            #expect(a.currentAudioRecordingFilePath == nil)
            #expect(throws: MixError.self) { try a.stopAudioRecording() }
            await a.stop()
            await b.stop()

            let recorded = try AudioFile.read(path: wav).samples
            #expect(abs(Double(recorded.count) / 48_000 - 2) < 0.3, "\(Double(recorded.count) / 48_000) s recorded")
            let middle = recorded.dropFirst(24_000).prefix(48_000)
            let own = Self.tonePower(middle, 440)
            let peer = Self.tonePower(middle, 660)
            let file = Self.tonePower(middle, 1_000)
            let absent = Self.tonePower(middle, 1_500)
            #expect(own > 100 * absent && peer > 100 * absent && file > 100 * absent,
                    "440 \(own), 660 \(peer), 1000 \(file), 1500 (absent) \(absent)")
            let opus = try AudioFile.read(path: ogg).samples
            let seconds: Double = Double(opus.count) / 48_000
            #expect(abs(seconds - 2) < 0.3, "Ogg Opus: \(seconds) s")
        }
    }

    @Test func recordingToAMissingDirectoryOrAnUnknownTypeIsRefused() async throws {
        try await Heavy.run {
            let a = try session(audio: "sine:440", video: nil, collected: Collected())
            do throws(MixError) {
                try a.startAudioRecording(path: "/nonexistent/dir/call.wav")
                Issue.record("recorded into a directory that does not exist")
            } catch {
                #expect(error.message.contains("the directory /nonexistent/dir does not exist"), "\(error.message)")
            }
            #expect(!FileManager.default.fileExists(atPath: "/nonexistent/dir"), "no directory was created")
            #expect(throws: MixError.self) { try a.startAudioRecording(path: FileManager.default.temporaryDirectory.appendingPathComponent("x.mp3").path) }
            let chosen = try a.startAudioRecording()
            #expect(chosen.hasSuffix(".wav") && FileManager.default.fileExists(atPath: chosen))
            try a.stopAudioRecording()
            try? FileManager.default.removeItem(atPath: chosen)
        }
    }

    @Test func aSnapshotIsTheNextPictureSentAndSavesAsPNG() async throws {
        try await Heavy.run {
            let atA = Collected()
            let atB = Collected()
            let a = try session(audio: "sine:440", video: "testsrc:160x120@15", collected: atA)
            let b = try session(audio: "sine:660", video: nil, collected: atB)
            try b.start(remote: a.local) { atB.handle($0) }
            try a.start(remote: b.local) { atA.handle($0) }
            let picture = try #require(await a.snapshotLocalVideo())
            #expect(picture.width == 160 && picture.height == 120)
            #expect(await b.snapshotLocalVideo(timeout: .milliseconds(100)) == nil, "no video source, no snapshot")
            await a.stop()
            await b.stop()

            let path = FileManager.default.temporaryDirectory.appendingPathComponent("snap-\(UInt32.random(in: 0 ... .max)).png").path
            defer { try? FileManager.default.removeItem(atPath: path) }
            try picture.writePNG(path: path)
            var image = png_image()
            image.version = UInt32(PNG_IMAGE_VERSION)
            #expect(png_image_begin_read_from_file(&image, path) != 0, "libpng reads it back")
            image.format = UInt32(PNG_FORMAT_RGB)
            var pixels = [UInt8](repeating: 0, count: Int(image.width * image.height) * 3)
            #expect(pixels.withUnsafeMutableBufferPointer { png_image_finish_read(&image, nil, $0.baseAddress, 160 * 3, nil) } != 0)
            #expect(image.width == 160 && image.height == 120)
            // The top-left of the test pattern is not uniform grey: the PNG holds a picture.
            let distinct = Set(stride(from: 0, to: pixels.count, by: 3).map { pixels[$0] })
            #expect(distinct.count > 10, "\(distinct.count) distinct red values")
            do throws(MediaFileError) {
                try picture.writePNG(path: "/nonexistent/dir/snap.png")
                Issue.record("wrote into a missing directory")
            } catch {
                #expect(error.description.contains("/nonexistent/dir/snap.png"), "\(error)")
            }
        }
    }
}
