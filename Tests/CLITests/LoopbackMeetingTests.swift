import Foundation
import MediaEngine
import TestSupport
import Testing

/// One machine, the simple way: `mediaengine server --host 127.0.0.1` (the default) and
/// `meeting join` processes with no media options. The SFU offers its loopback address,
/// and participants that reached the server on loopback use it.
@Suite(.serialized) struct LoopbackMeetingCommands {
    @Test func threeParticipantsAndALiveRoomOnALoopbackServer() async throws {
        try await Heavy.runAlone {
            let nginx = try NginxRTMP()
            try nginx.start()
            defer { nginx.stop() }
            let setup = try CallCommands.Setup(serverOptions: ["--host", "127.0.0.1", "--live-size", "320x240@15"])
            defer { setup.finish() }
            let secret = setup.directory.appendingPathComponent("secret").path
            let carol = try CLI.run(["token", "--account", "carol", "--secret-file", secret]).stdout.trimmingCharacters(in: .whitespacesAndNewlines)
            let carolFile = try CallCommands.Setup.writeToken(carol, to: setup.directory.appendingPathComponent("carol.token").path)
            #expect(try CLI.run(["meeting", "reserve", "loop", "--server", setup.url, "--token-file", setup.aliceFile]).status == 0)

            func heard(_ user: String) -> String { setup.directory.appendingPathComponent("\(user)-heard.wav").path }
            // alice hosts a live room pushed to nginx-rtmp, bob and carol are its co-hosts; bob
            // asks, before carol is there, not to hear her (a standing preference: applied when
            // she arrives).
            let alice = try CLI.start(["meeting", "join", "loop", "--server", setup.url, "--token-file", setup.aliceFile, "--audio", "sine:440",
                                       "--play", "file:\(heard("alice"))", "--bypass-url", nginx.url(key: "loop"), "--duration", "12"])
            #expect(alice.waitForOutput(containing: "joined loop", timeout: 20), "\(alice.stdout)\(alice.stderr)")
            let bob = try CLI.start(["meeting", "join", "loop", "--server", setup.url, "--token-file", setup.bobFile, "--audio", "sine:660",
                                     "--play", "file:\(heard("bob"))", "--bypass", "--mute-audio-of", "carol", "--duration", "11"])
            #expect(bob.waitForOutput(containing: "joined loop", timeout: 20), "\(bob.stdout)\(bob.stderr)")
            let carolJoin = try CLI.start(["meeting", "join", "loop", "--server", setup.url, "--token-file", carolFile, "--audio", "sine:880",
                                           "--play", "file:\(heard("carol"))", "--bypass", "--duration", "9"])
            #expect(carolJoin.waitForOutput(containing: "joined loop", timeout: 20), "\(carolJoin.stdout)\(carolJoin.stderr)")
            #expect(alice.waitForOutput(containing: "output=push status=505", timeout: 20), "pushing: \(alice.stdout)")
            #expect(nginx.waitForPublisher(key: "loop", timeout: 10), "nginx-rtmp has the room: \(nginx.log)")
            // What nginx-rtmp serves of the room: all three tones, mixed.
            let pulled = setup.directory.appendingPathComponent("pulled.s16").path
            try Pull.run(url: nginx.url(key: "loop"), seconds: 3, audioTo: pulled, videoTo: nil, videoSize: (64, 36))
            let room = try readS16(pulled)
            #expect(room.count > 2 * 48_000, "\(room.count) samples pulled")
            for tone in [440.0, 660, 880] {
                #expect(toneLevel(room, frequency: tone, sampleRate: 48_000) > 0.02, "\(tone) Hz in the pushed room")
            }

            for process in [carolJoin, bob, alice] {
                let run = try process.wait(timeout: 30)
                #expect(run.status == 0, "\(run.stdout)\(run.stderr)")
                #expect(!run.stdout.contains("ICE found no path"), "\(run.stdout)")
                #expect(run.stdout.contains("meetingStatus callID=") && run.stdout.contains(" connected"), "\(run.stdout)")
            }
            // Over each whole recording: a tone present for part of it still stands far above
            // one never forwarded (a second of a 0.3 tone in 8 s is about 0.04).
            func level(_ user: String, _ frequency: Double) throws -> Double {
                let samples = try AudioFile.read(path: heard(user)).samples
                return samples.withUnsafeBufferPointer { AudioQuality.toneLevel($0, frequency: frequency) }
            }
            let carolHears = (try level("carol", 440), try level("carol", 660))
            #expect(carolHears.0 > 0.02 && carolHears.1 > 0.02, "carol hears alice and bob: \(carolHears)")
            #expect(try level("alice", 880) > 0.02, "alice hears carol")
            #expect(try level("bob", 440) > 0.02, "bob hears alice")
            let bobHearsCarol = try level("bob", 880)
            #expect(bobHearsCarol < 0.005, "bob muted carol before she joined: \(bobHearsCarol)")
            #expect(try level("carol", 880) < 0.005, "nobody hears themselves")
        }
    }
}
