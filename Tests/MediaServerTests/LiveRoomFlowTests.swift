import Foundation
@testable import LiveStreaming
import MediaEngine
@testable import MediaServer
import Signaling
import Synchronization
import Testing
import TestSupport

/// Whole live rooms: a host (a red picture, 440 Hz) and a co-host (blue, 660 Hz) as
/// `NetCallManager`s through a real server, whose composer pushes the room to nginx-rtmp
/// or icecast2, and ffmpeg pulling what they serve. Each runs alone (two real-time
/// participants, the server's composer and encoder, a streaming server and ffmpeg take
/// the machine).
@Suite(.serialized) struct LiveRoomFlows {
    typealias Member = MeetingFlows.Member

    /// A small stream, so the encoder leaves the participants their share of 2 cores.
    static func server(recordings: URL? = nil) async throws -> TestServer {
        try await TestServer.start { configuration in
            var format = LiveStreamFormat()
            format.width = 640
            format.height = 360
            format.frameRate = 15
            format.videoBitrate = 600_000
            configuration.live = format
            if let recordings { configuration.liveRecordingDirectory = recordings.path }
        }
    }

    static func members(_ server: TestServer) async throws -> (host: Member, coHost: Member) {
        (try await Member(server: server, account: "alice", audio: "sine:440", video: "color:ff0000:320x180@15"),
         try await Member(server: server, account: "bob", audio: "sine:660", video: "color:0000ff:320x180@15"))
    }

    static func status(_ wanted: Int, output: String = "push") -> (NetCallEvent) -> Bool {
        { event in
            if case .bypassStreamingStatus(_, output, wanted, _) = event { return true }
            return false
        }
    }

    static func statuses(_ member: Member, output: String = "push") -> [Int] {
        member.snapshot.events.compactMap { event in
            if case .bypassStreamingStatus(_, output, let status, _) = event { return status }
            return nil
        }
    }

    /// Pulls `seconds` of `url`: the audio and the last pictures (64x36, rgb24).
    static func pull(_ url: String, seconds: Double, in directory: URL, readTimeout: Double = 5) throws -> (audio: [Int16], frames: [[UInt8]]) {
        let name = UUID().uuidString
        let audio = directory.appendingPathComponent("\(name).s16").path
        let video = directory.appendingPathComponent("\(name).rgb").path
        try Pull.run(url: url, seconds: seconds, audioTo: audio, videoTo: video, videoSize: (64, 36), readTimeout: readTimeout)
        return (try readS16(audio), try readRGBFrames(video, width: 64, height: 36))
    }

    /// Samples a pull of `url` gets in `seconds` when nobody publishes there (ffmpeg gives
    /// up after its read timeout: an error exit is the expected outcome).
    static func samplesOfIdle(_ url: String, seconds: Double, in directory: URL) throws -> Int {
        let audio = directory.appendingPathComponent("\(UUID().uuidString).s16").path
        _ = try Pull.start(url: url, seconds: seconds, audioTo: audio, videoTo: nil, videoSize: (64, 36), readTimeout: 1)
            .wait(timeout: seconds + 15)
        return ((try? FileManager.default.attributesOfItem(atPath: audio)[.size] as? Int) ?? nil ?? 0) / 2
    }

    static func level(_ audio: [Int16], _ frequency: Double) -> Double {
        // The last 4 s: past the pull's start-up.
        toneLevel(audio.suffix(4 * 48_000), frequency: frequency, sampleRate: 48_000)
    }

    static func isRed(_ colour: (r: Double, g: Double, b: Double)) -> Bool { colour.r > 170 && colour.g < 70 && colour.b < 70 }
    static func isBlue(_ colour: (r: Double, g: Double, b: Double)) -> Bool { colour.b > 170 && colour.r < 70 && colour.g < 70 }

    @Test func hostAndCoHostToNginxRTMPLayoutsURLSwitchAndBypassOffOn() async throws {
        try await Heavy.runAlone {
            let directory = try temporaryDirectory("live-room")
            defer { try? FileManager.default.removeItem(at: directory) }
            let nginx = try NginxRTMP()
            try nginx.start()
            let server = try await Self.server()
            defer { Task { await server.server.shutdown() } }
            let (alice, bob) = try await Self.members(server)
            try await alice.manager.reserveMeeting(name: "show")
            _ = try await alice.manager.joinMeeting(name: "show", type: .video,
                                                    bypass: BypassStreaming(url: nginx.url(key: "room"), mixMode: 2))
            _ = try await bob.manager.joinMeeting(name: "show", type: .video, bypass: BypassStreaming())
            #expect(await alice.wait(timeout: 15, for: Self.status(LiveStreamStatus.pushing.rawValue)) != nil,
                    "pushing; statuses: \(Self.statuses(alice))")
            #expect(nginx.waitForPublisher(key: "room", timeout: 10))

            // Mode 2: both tones; the left half red (the host), the right half blue.
            let first = try Self.pull(nginx.url(key: "room"), seconds: 8, in: directory)
            let (host, coHost) = (Self.level(first.audio, 440), Self.level(first.audio, 660))
            #expect(host > 0.05 && coHost > 0.05, "both tones in the stream: 440 Hz \(host), 660 Hz \(coHost)")
            #expect(Self.level(first.audio, 1_000) < 0.01)
            let last = try #require(first.frames.last, "pictures pulled")
            let left = regionAverage(last, width: 64, height: 36, x0: 0.05, y0: 0.3, x1: 0.45, y1: 0.7)
            let right = regionAverage(last, width: 64, height: 36, x0: 0.55, y0: 0.3, x1: 0.95, y1: 0.7)
            #expect(Self.isRed(left) && Self.isBlue(right), "mode 2: left \(left), right \(right)")

            // Mode 0 while live: the host fills the frame, the co-host in the right column.
            // Asked and acknowledged before the pull starts: its last picture, 3 s of stream
            // later, shows the layout the room has by then.
            try await alice.manager.setBypassStreamingMixMode(0)
            let floating = try #require(try Self.pull(nginx.url(key: "room"), seconds: 3, in: directory).frames.last)
            let body = regionAverage(floating, width: 64, height: 36, x0: 0.05, y0: 0.1, x1: 0.6, y1: 0.9)
            let column = regionAverage(floating, width: 64, height: 36, x0: 0.78, y0: 0.04, x1: 0.96, y1: 0.2)
            #expect(Self.isRed(body) && Self.isBlue(column), "mode 0: body \(body), right column \(column)")

            // A switch to a target that does not answer: a typed error, the old push goes on.
            var closed = Int.random(in: 20_000..<32_000)
            while !LivePort.isFree(closed) { closed += 1 }
            try await alice.manager.switchBypassStreamingURL("rtmp://127.0.0.1:\(closed)/live/nowhere")
            let refused = await alice.wait(timeout: 15) { event in
                if case .bypassStreamingURLSwitched(_, .some) = event { return true }
                return false
            }
            guard case .bypassStreamingURLSwitched(_, let error?) = refused else {
                Issue.record("no failed switch: \(alice.snapshot.events)")
                return
            }
            #expect(error.code == .bypassConnectFailed, "\(error)")
            #expect(Self.level(try Self.pull(nginx.url(key: "room"), seconds: 3, in: directory).audio, 440) > 0.05, "the old push goes on")

            // The switch to a second key: it carries the room within 3 s; the first ends.
            let started = Date()
            try await alice.manager.switchBypassStreamingURL(nginx.url(key: "second"))
            #expect(nginx.waitForPublisher(key: "second", timeout: 3), "the second key is published within 3 s")
            let moved = Date().timeIntervalSince(started)
            #expect(await alice.wait(timeout: 5) { event in
                if case .bypassStreamingURLSwitched(_, nil) = event { return true }
                return false
            } != nil)
            let second = try Self.pull(nginx.url(key: "second"), seconds: 4, in: directory)
            #expect(Self.level(second.audio, 440) > 0.05 && Self.level(second.audio, 660) > 0.05, "the room on the second key")
            let old = try Self.samplesOfIdle(nginx.url(key: "room"), seconds: 2, in: directory)
            #expect(old < 4_800, "the first key carries nothing any more: \(old) samples")
            print("live room: URL switch carried in \(String(format: "%.2f", moved)) s")

            // bypass off: the push ends; bypass on: it resumes.
            try await alice.manager.setBypassStreamingEnabled(false)
            #expect(await alice.wait(timeout: 5) { event in
                if case .bypassStreamingEnabled(_, false, nil) = event { return true }
                return false
            } != nil)
            #expect(nginx.waitForPublishers(key: "second", timeout: 10) { $0.active == 0 }, "the push ended: \(nginx.publishers(key: "second"))")
            let off = try Self.samplesOfIdle(nginx.url(key: "second"), seconds: 2, in: directory)
            #expect(off < 4_800, "nothing while off: \(off) samples")
            let before = nginx.publishers(key: "second").published
            try await alice.manager.setBypassStreamingEnabled(true)
            #expect(await eventually(timeout: .seconds(5)) { nginx.publishers(key: "second").published > before }, "published again")
            let on = try Self.pull(nginx.url(key: "second"), seconds: 3, in: directory)
            #expect(Self.level(on.audio, 660) > 0.05, "the room again after bypass on")

            try await bob.manager.leaveMeeting()
            try await alice.manager.leaveMeeting()
        }
    }

    @Test func theRoomToIcecastAsWebMAndTheServerRecordingHoldsTheWholeSession() async throws {
        try await Heavy.runAlone {
            let directory = try temporaryDirectory("live-icecast")
            defer { try? FileManager.default.removeItem(at: directory) }
            let recordings = directory.appendingPathComponent("recordings")
            let icecast = try Icecast()
            try icecast.start()
            let server = try await Self.server(recordings: recordings)
            defer { Task { await server.server.shutdown() } }
            let (alice, bob) = try await Self.members(server)
            try await alice.manager.reserveMeeting(name: "radio")
            let began = Date()
            _ = try await alice.manager.joinMeeting(name: "radio", type: .video,
                                                    bypass: BypassStreaming(url: icecast.sourceURL(mount: "/room.webm"), mixMode: 2,
                                                                            serverRecording: true))
            _ = try await bob.manager.joinMeeting(name: "radio", type: .video, bypass: BypassStreaming())
            #expect(await alice.wait(timeout: 15, for: Self.status(LiveStreamStatus.pushing.rawValue)) != nil,
                    "pushing; statuses: \(Self.statuses(alice))")
            #expect(await alice.wait(timeout: 15, for: Self.status(LiveStreamStatus.pushing.rawValue, output: "recording")) != nil,
                    "recording; statuses: \(Self.statuses(alice, output: "recording"))")
            #expect(icecast.waitForMount("/room.webm", timeout: 10))
            let pulled = try Self.pull(icecast.listenURL(mount: "/room.webm"), seconds: 6, in: directory)
            let (host, coHost) = (Self.level(pulled.audio, 440), Self.level(pulled.audio, 660))
            #expect(host > 0.05 && coHost > 0.05, "both tones from icecast: 440 Hz \(host), 660 Hz \(coHost)")
            let last = try #require(pulled.frames.last, "pictures pulled")
            #expect(Self.isRed(regionAverage(last, width: 64, height: 36, x0: 0.05, y0: 0.3, x1: 0.45, y1: 0.7)))
            #expect(Self.isBlue(regionAverage(last, width: 64, height: 36, x0: 0.55, y0: 0.3, x1: 0.95, y1: 0.7)))

            try await bob.manager.leaveMeeting()
            try await alice.manager.leaveMeeting()
            let session = Date().timeIntervalSince(began)
            // The host left: the composer stops and closes the recording.
            #expect(await eventually(timeout: .seconds(10)) { server.server.liveRooms?.roomCount == 0 }, "the room's composer ended")
            let files = try FileManager.default.contentsOfDirectory(atPath: recordings.path).filter { $0.hasSuffix(".flv") }
            let file = recordings.appendingPathComponent(try #require(files.first, "a server recording in \(recordings.path)")).path
            let audio = directory.appendingPathComponent("recording.s16").path
            let decode = try BackgroundProcess(program: "ffmpeg", arguments: ["-hide_banner", "-loglevel", "error", "-i", file, "-map", "0:a:0",
                                                                              "-ac", "1", "-ar", "48000", "-f", "s16le", "-y", audio])
                .wait(timeout: 60)
            #expect(decode.status == 0, "\(decode.stderr)")
            let samples = try readS16(audio)
            let seconds = Double(samples.count) / 48_000
            #expect(seconds > session - 3 && seconds < session + 1, "the recording holds the session: \(seconds) s of \(session) s")
            let middle = samples[(samples.count / 4)..<(samples.count * 3 / 4)]
            #expect(toneLevel(middle, frequency: 440, sampleRate: 48_000) > 0.05 && toneLevel(middle, frequency: 660, sampleRate: 48_000) > 0.05,
                    "both tones in the recording")
            print("live room: server recording \(String(format: "%.1f", seconds)) s of a \(String(format: "%.1f", session)) s session")
        }
    }

    @Test func anUnreachableTargetRetriesAndAPushThatLosesNginxResumesWhenItReturns() async throws {
        try await Heavy.runAlone {
            let directory = try temporaryDirectory("live-restart")
            defer { try? FileManager.default.removeItem(at: directory) }
            var port = Int.random(in: 20_000..<32_000)
            while !LivePort.isFree(port) { port += 1 }
            let nginx = try NginxRTMP()
            let server = try await Self.server()
            defer { Task { await server.server.shutdown() } }
            let (alice, bob) = try await Self.members(server)
            try await alice.manager.reserveMeeting(name: "show")
            // nginx is not there yet: connecting, connect failed, retried; the room is fine.
            _ = try await alice.manager.joinMeeting(name: "show", type: .video,
                                                    bypass: BypassStreaming(url: "rtmp://127.0.0.1:\(port)/live/room"))
            _ = try await bob.manager.joinMeeting(name: "show", type: .video, bypass: BypassStreaming())
            #expect(await alice.wait(timeout: 10, for: Self.status(LiveStreamStatus.connectFailed.rawValue)) != nil)
            #expect(await eventually { Self.statuses(alice).filter { $0 == LiveStreamStatus.connectFailed.rawValue }.count >= 2 },
                    "retried: \(Self.statuses(alice))")
            #expect(await eventually { bob.heardCount("alice") >= 48_000 }, "bob hears alice")
            #expect(bob.level(of: 440, from: "alice") > 0.2, "the participants' call goes on")

            try nginx.start(port: port)
            #expect(nginx.waitForPublisher(key: "room", timeout: 5), "the push connects once nginx is there")
            #expect(await alice.wait(timeout: 10, for: Self.status(LiveStreamStatus.pushing.rawValue)) != nil)

            // nginx down for 5 s mid-stream, then back on its port: the push resumes by itself.
            let heardBefore = bob.heardCount("alice")
            nginx.stop()
            // Bob must hear alice all through it, and the push's retries back off meanwhile.
            // The outage's length is the scenario: nginx stays away for 5 s.
            try await Task.sleep(for: .seconds(5))
            let heardDuring = bob.heardCount("alice") - heardBefore
            #expect(heardDuring > 4 * 48_000, "bob heard alice all along: \(heardDuring) samples in 5 s")
            #expect(Self.statuses(alice).contains(LiveStreamStatus.pushFailed.rawValue), "the failure reported: \(Self.statuses(alice))")
            try nginx.restart()
            let back = Date()
            #expect(nginx.waitForPublisher(key: "room", timeout: 5), "published again within 5 s of nginx returning")
            let resumed = Date().timeIntervalSince(back)
            let pulled = try Self.pull(nginx.url(key: "room"), seconds: 4, in: directory)
            #expect(Self.level(pulled.audio, 440) > 0.05 && Self.level(pulled.audio, 660) > 0.05, "the room again")
            #expect(bob.level(of: 440, from: "alice") > 0.2 && alice.level(of: 660, from: "bob") > 0.2, "the call unaffected")
            print("live room: push resumed \(String(format: "%.2f", resumed)) s after nginx returned")
            try await bob.manager.leaveMeeting()
            try await alice.manager.leaveMeeting()
        }
    }

    /// Silence until armed, then a 1 kHz tone; remembers when its first tone sample was
    /// captured (the session reads its source paced to the wall clock).
    final class MarkedTone: AudioSource, @unchecked Sendable {
        // @unchecked: `generator` is the sending thread's alone; the rest are atomics and a lock.
        let layout = ChannelLayout.mono
        let name = "marked tone"
        let armed = Atomic<Bool>(false)
        let started = Locked<ContinuousClock.Instant?>(nil)
        private var generator = ToneGenerator(.sine(1_000), amplitude: 0.5)

        func read(into frame: inout AudioFrame) throws -> Bool {
            guard armed.load(ordering: .relaxed) else {
                frame.samples.withUnsafeMutableBufferPointer { $0.update(repeating: 0) }
                return true
            }
            started.withLock { $0 = $0 ?? .now }
            frame.samples.withUnsafeMutableBufferPointer { generator.fill($0) }
            return true
        }
    }

    /// Glass to glass: from the host's microphone (a tone starting on cue) to the audio
    /// ffmpeg pulls from nginx-rtmp, through the server's SFU, composer, AAC encoder and
    /// FLV push. The issue's goal is 1.5 s.
    @Test func glassToGlassFromAHostsToneToTheAudioPulledFromNginx() async throws {
        try await Heavy.runAlone {
            let directory = try temporaryDirectory("live-delay")
            defer { try? FileManager.default.removeItem(at: directory) }
            let nginx = try NginxRTMP()
            try nginx.start()
            let server = try await Self.server()
            defer { Task { await server.server.shutdown() } }
            let tone = MarkedTone()
            let media: MediaSessionFactory = { _, _ in
                var configuration = MediaSession.Configuration(audio: tone, video: try MediaSources.video("color:ff0000:320x180@15"))
                configuration.host = "127.0.0.1"
                configuration.videoBitrate = 300_000
                return configuration
            }
            let host = NetCallManager(configuration: NetCallManager.Configuration(server: server.url, token: try await server.token("alice"), media: media))
            try await host.login()
            let events = Locked<[NetCallEvent]>([])
            let hostEvents = host.events
            Task { for await event in hostEvents { events.withLock { $0.append(event) } } }
            try await host.reserveMeeting(name: "show")
            _ = try await host.joinMeeting(name: "show", type: .video, bypass: BypassStreaming(url: nginx.url(key: "room")))
            #expect(nginx.waitForPublisher(key: "room", timeout: 15), "published; events: \(events.withLock { $0.detached })")

            let file = directory.appendingPathComponent("pulled.s16").path
            let pull = try BackgroundProcess(program: "ffmpeg", arguments: [
                "-hide_banner", "-loglevel", "error", "-nostdin", "-fflags", "nobuffer", "-rw_timeout", "5000000", "-i", nginx.url(key: "room"),
                "-map", "0:a:0", "-ac", "1", "-ar", "48000", "-f", "s16le", "-flush_packets", "1", "-y", file])
            defer { pull.terminate() }
            func size() -> Int { (try? FileManager.default.attributesOfItem(atPath: file)[.size] as? Int) ?? nil ?? 0 }
            // The pull runs steadily (two seconds of the room's silence) before the cue.
            #expect(await eventually(timeout: .seconds(15)) { size() > 2 * 96_000 }, "the pull flows: \(pull.stderr)")
            let offset = size() & ~1
            tone.armed.store(true, ordering: .relaxed)
            var heard: ContinuousClock.Instant?
            var read = offset
            let handle = try FileHandle(forReadingFrom: URL(fileURLWithPath: file))
            defer { try? handle.close() }
            try handle.seek(toOffset: UInt64(offset))
            // Read every 5 ms: when the tone is seen is the measurement.
            try await eventually(timeout: .seconds(5), every: .milliseconds(5)) {
                let data = handle.readDataToEndOfFile()
                let now = ContinuousClock.now
                let whole = data.count & ~1
                read += whole
                if whole < data.count { try handle.seek(toOffset: UInt64(read)) }
                let loud = data.withUnsafeBytes { raw in
                    (0..<whole / 2).contains { abs(Int(Int16(littleEndian: raw.loadUnaligned(fromByteOffset: $0 * 2, as: Int16.self)))) > 8_000 }
                }
                if loud { heard = now }
                return loud
            }
            let spoken = try #require(tone.started.withLock { $0 }, "the tone was captured")
            let arrived = try #require(heard, "the tone reached the puller within 5 s")
            let delay = (arrived - spoken) / .seconds(1)
            print("live room: glass to glass \(String(format: "%.3f", delay)) s (host's tone to ffmpeg's pull from nginx-rtmp)")
            #expect(delay > 0 && delay <= 1.5, "glass to glass \(delay) s; the goal is 1.5 s")
            try await host.leaveMeeting()
            await host.logout()
        }
    }
}
