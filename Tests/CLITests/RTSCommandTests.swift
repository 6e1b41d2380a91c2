import Foundation
import MediaEngine
import TestSupport
import Testing

/// `mediaengine rts` as users run it: a server with a recording directory, two terminals.
@Suite(.serialized) struct RTSCommands {
    /// `count` lines of 1 byte to 50 KB (the first two are the extremes, the rest log-uniform),
    /// each a different slice of random letters.
    static func lines(_ count: Int, seed: UInt64) -> [String] {
        var generator = SeededGenerator(seed: seed)
        let letters = Array("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789{}[]:,.".utf8)
        let base = (0..<(64 * 1_024)).map { _ in letters[Int(generator.next() % UInt64(letters.count))] }
        return (0..<count).map { index in
            let length = index == 0 ? 1 : index == 1 ? 50 * 1_024 : Int(exp(Double(generator.next() % 10_000) / 10_000 * log(51_200.0)))
            let start = Int(generator.next() % UInt64(base.count - length + 1))
            return String(decoding: base[start..<(start + length)], as: UTF8.self)
        }
    }

    /// Splits a recording file into (timestamp, data) records by hand, to check the layout.
    static func records(of path: String) throws -> [(UInt32, Data)] {
        let data = try Data(contentsOf: URL(fileURLWithPath: path))
        var records: [(UInt32, Data)] = []
        var offset = 0
        func word(_ at: Int) -> UInt32 { (0..<4).reduce(0) { $0 | UInt32(data[at + $1]) << (8 * $1) } }
        while offset + 8 <= data.count {
            let length = Int(word(offset))
            guard length >= 8, offset + length <= data.count else { break }
            records.append((word(offset + 4), data[(offset + 8)..<(offset + length)]))
            offset += length
        }
        #expect(offset == data.count, "\(path): \(data.count - offset) bytes after the last whole record")
        return records
    }

    @Test func tenThousandMessagesArriveInOrderAndTheRecordingHoldsThem() async throws {
        try await Heavy.run {
            let recordings = try temporaryDirectory("rts-recordings")
            defer { try? FileManager.default.removeItem(at: recordings) }
            // At the default quota (4 MiB/s a member): about 12 s.
            let setup = try ServerSetup(serverOptions: ["--rts-recording-directory", recordings.path])
            defer { setup.finish() }
            let lines = Self.lines(10_000, seed: 1)
            let input = setup.directory.appendingPathComponent("alice.txt").path
            try Data((lines.joined(separator: "\n") + "\n").utf8).write(to: URL(fileURLWithPath: input))
            let answer = try CLI.start(["rts", "answer", "--auto-accept", "--server", setup.url, "--token-file", setup.bobFile])
            #expect(answer.waitForOutput(containing: "waiting for requests as bob", timeout: 20), "\(answer.stderr)")
            let call = try CLI.start(["rts", "call", "bob", "--server", setup.url, "--token-file", setup.aliceFile], inputFile: input)
            let called = try call.wait(timeout: 120)
            let answered = try answer.wait(timeout: 30)
            #expect(called.status == 0 && answered.status == 0 && !called.stderr.contains("refused"), "\(called.stderr)\n\(answered.stderr)")
            #expect(answered.stdout == lines.joined(separator: "\n") + "\n", "bob got what alice sent, in order")
            #expect(called.stderr.contains("rts: sent 10000 messages"), "\(called.stderr)")
            // One recording per member: alice's holds what she sent, time stamps never going back;
            // bob's is empty (he sent nothing).
            let files = try FileManager.default.contentsOfDirectory(atPath: recordings.path).sorted()
            #expect(files.count == 2 && files[0].hasSuffix("-alice.rts") && files[1].hasSuffix("-bob.rts"), "\(files)")
            let records = try Self.records(of: recordings.appendingPathComponent(files[0]).path)
            #expect(records.map { String(decoding: $0.1, as: UTF8.self) } == lines, "\(files[0]) holds every message in order")
            let times = records.map(\.0)
            #expect(zip(times, times.dropFirst()).allSatisfy { $0 <= $1 } && times.last! > times.first! + 5_000, "\(times.prefix(5))...")
            #expect(try Self.records(of: recordings.appendingPathComponent(files[1]).path).isEmpty)
            // `rts dump` reads the same records.
            let dump = try CLI.run(["rts", "dump", recordings.appendingPathComponent(files[0]).path])
            #expect(dump.status == 0 && dump.stderr.contains("10000 records"), "\(dump.stderr)")
            let first = dump.stdout.split(separator: "\n", maxSplits: 1).first.map(String.init) ?? ""
            #expect(first == "\(times[0])\t1\t\(lines[0])", "\(first)")
        }
    }

    /// `rts call --audio`: a voice channel beside the data, each side recording what it heard
    /// of the other's tone.
    @Test func aVoiceChannelCarriesEachSidesToneBetweenTwoCLIs() async throws {
        try await Heavy.run {
            let setup = try ServerSetup()
            defer { setup.finish() }
            let aliceHeard = setup.directory.appendingPathComponent("alice-heard.wav").path
            let bobHeard = setup.directory.appendingPathComponent("bob-heard.wav").path
            let answer = try CLI.start(["rts", "answer", "--auto-accept", "--server", setup.url, "--token-file", setup.bobFile,
                                        "--voice-source", "sine:660", "--record-voice", bobHeard, "--media-host", "127.0.0.1"])
            #expect(answer.waitForOutput(containing: "waiting for requests as bob", timeout: 20), "\(answer.stderr)")
            let call = try CLI.run(["rts", "call", "bob", "--audio", "--duration", "3", "--server", setup.url, "--token-file", setup.aliceFile,
                                    "--voice-source", "sine:440", "--record-voice", aliceHeard, "--media-host", "127.0.0.1"])
            let answered = try answer.wait(timeout: 30)
            #expect(call.status == 0 && answered.status == 0, "\(call.stderr)\n\(answered.stderr)")
            #expect(call.stderr.contains("rts: audio connected") && answered.stderr.contains("rts: audio connected"),
                    "\(call.stderr)\n\(answered.stderr)")
            #expect(answered.stderr.contains("services=data,audio"), "\(answered.stderr)")
            for (file, tone, other) in [(bobHeard, 440.0, 660.0), (aliceHeard, 660.0, 440.0)] {
                let heard = try AudioFile.read(path: file).samples
                #expect(heard.count > 2 * 48_000, "\(file): \(heard.count) samples")
                let last = Array(heard.suffix(48_000))
                let level = last.withUnsafeBufferPointer { AudioQuality.toneLevel($0, frequency: tone) }
                let own = last.withUnsafeBufferPointer { AudioQuality.toneLevel($0, frequency: other) }
                #expect(level > 0.1 && own < 0.02, "\(file): \(tone) Hz at \(level), \(other) Hz at \(own)")
            }
        }
        let bad = try CLI.run(["rts", "call", "bob", "--audio", "--server", "ws://127.0.0.1:1/", "--token", "t", "--record-voice", "x.mp3"])
        #expect(bad.status != 0 && bad.stderr.contains("--record-voice x.mp3: use a .wav file"), "\(bad.stderr)")
        let source = try CLI.run(["rts", "answer", "--auto-accept", "--server", "ws://127.0.0.1:1/", "--token", "t", "--voice-source", "beep"])
        #expect(source.status != 0 && source.stderr.contains("beep"), "\(source.stderr)")
    }

    @Test func aServerKilledMidConferenceLeavesReadableRecordingsAndTellsTheMembers() async throws {
        try await Heavy.run {
            let recordings = try temporaryDirectory("rts-kill")
            defer { try? FileManager.default.removeItem(at: recordings) }
            let setup = try ServerSetup(serverOptions: ["--rts-recording-directory", recordings.path])
            defer { setup.finish() }
            let reserve = try CLI.run(["rts", "reserve", "class", "--server", setup.url, "--token-file", setup.aliceFile])
            #expect(reserve.status == 0 && reserve.stdout.contains("reserved class"), "\(reserve.stderr)")
            let bob = try CLI.start(["rts", "join", "class", "--stay", "--server", setup.url, "--token-file", setup.bobFile])
            #expect(bob.waitForOutput(containing: "rts: joined class", timeout: 20), "\(bob.stderr)")
            let alice = try CLI.start(["rts", "join", "class", "--stay", "--server", setup.url, "--token-file", setup.aliceFile], input: true)
            #expect(alice.waitForOutput(containing: "rts: joined class", timeout: 20), "\(alice.stderr)")
            for index in 0..<200 { try alice.write("stroke \(index)\n") }
            #expect(bob.waitForOutput(containing: "stroke 199", timeout: 20), "\(bob.stdout)")
            setup.server.killNow()
            let out = try bob.wait(timeout: 20)
            #expect(out.stderr.contains("rts: out of class:"), "\(out.stderr)")
            alice.interrupt()
            _ = try alice.wait(timeout: 20)
            let files = try FileManager.default.contentsOfDirectory(atPath: recordings.path).sorted()
            let aliceFile = try #require(files.first { $0.hasSuffix("-alice.rts") }, "\(files)")
            let dump = try CLI.run(["rts", "dump", "--json", recordings.appendingPathComponent(aliceFile).path])
            #expect(dump.status == 0 && dump.stderr.contains("200 records"), "\(dump.stderr)")
            #expect(dump.stdout.contains("\"data\":\"\(Data("stroke 199".utf8).base64EncodedString())\""), "\(dump.stdout)")
            // Bad files are named.
            let missing = try CLI.run(["rts", "dump", recordings.appendingPathComponent("none.rts").path])
            #expect(missing.status != 0 && missing.stderr.contains("none.rts: no such file"), "\(missing.stderr)")
            let notOne = try CLI.run(["rts", "dump", setup.aliceFile])
            #expect(notOne.status != 0 && notOne.stderr.contains("not a recording"), "\(notOne.stderr)")
            let directory = try CLI.run(["rts", "dump", recordings.path])
            #expect(directory.status != 0 && directory.stderr.contains("is a directory"), "\(directory.stderr)")
        }
    }
}

/// A small deterministic generator (SplitMix64) for reproducible inputs.
struct SeededGenerator: RandomNumberGenerator {
    var state: UInt64
    init(seed: UInt64) { state = seed }
    mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }
}
