import Foundation
import MediaEngine
import TestSupport
import Testing

/// Calls across real NATs (issue 16): `mediaengine server` (and coturn) on the lab's public
/// network, `mediaengine call` and `answer` each in a namespace behind a router that NATs
/// with nftables. ICE picks the pair each topology allows, and audio goes both ways.
@Suite(.serialized) struct NATCallTests {
    /// One topology's run: what each side printed, what each heard, how long it took.
    struct Outcome {
        var call: CLIRun
        var answer: CLIRun
        /// From starting `call` to its "connected" line (process start and login included).
        var setup: Double?
        var heardByAlice: [Int16]
        var heardByBob: [Int16]
    }

    /// The public server (and coturn, with `relay`), then `answer` in `bobHost` and `call`
    /// in `aliceHost` for `seconds`; `whileConnected` runs once the call connected and bob
    /// has recorded 2 s of alice.
    static func call(lab: NetworkLab, aliceHost: NetworkLab.Namespace, bobHost: NetworkLab.Namespace, relay: Bool,
                     seconds: Int = 3, expectConnected: Bool = true,
                     whileConnected: ((Coturn?) throws -> Void)? = nil) throws -> (Outcome, Coturn?) {
        let directory = try temporaryDirectory("natcall")
        defer { try? FileManager.default.removeItem(at: directory) }
        let serverHost = try lab.addPublicHost()
        var coturn: Coturn?
        var turnOptions: [String] = []
        if relay {
            let turn = try Coturn(lab: lab, namespace: serverHost)
            try turn.start()
            let secretFile = directory.appendingPathComponent("turn-secret").path
            try turn.secret.write(toFile: secretFile, atomically: true, encoding: .utf8)
            turnOptions = ["--turn-url", "turn:\(serverHost.address):\(turn.port)", "--turn-secret-file", secretFile]
            coturn = turn
        }
        let secret = directory.appendingPathComponent("secret").path
        let server = try lab.run(in: serverHost, CLI.executable.path,
                                 ["server", "--host", serverHost.address, "--port", "8080", "--db", directory.appendingPathComponent("db.sqlite").path,
                                  "--secret-file", secret, "--ring-timeout", "10", "--no-metrics"] + turnOptions)
        defer {
            server.interrupt()
            _ = try? server.wait(timeout: 10)
        }
        guard server.waitForOutput(containing: "listening on ws://", timeout: 20) else {
            throw ToolFailure("server did not start: \(server.stdout) \(server.stderr)")
        }
        let url = "ws://\(serverHost.address):8080"
        func token(_ account: String) throws -> String {
            try Self.tokenFile(account, secret: secret, in: directory)
        }
        let aliceWAV = directory.appendingPathComponent("alice-heard.wav").path
        let bobWAV = directory.appendingPathComponent("bob-heard.wav").path
        let answer = try lab.run(in: bobHost, CLI.executable.path,
                                 ["answer", "--server", url, "--token-file", try token("bob"), "--auto-accept", "--audio", "sine:660",
                                  "--record-remote", bobWAV])
        guard answer.waitForOutput(containing: "waiting for calls as bob", timeout: 20) else {
            throw ToolFailure("answer did not start: \(answer.stdout) \(answer.stderr)")
        }
        let started = ContinuousClock.now
        let call = try lab.run(in: aliceHost, CLI.executable.path,
                               ["call", "bob", "--server", url, "--token-file", try token("alice"), "--audio", "sine:440",
                                "--duration", String(seconds), "--record-remote", aliceWAV])
        var setup: Double?
        if call.waitForOutput(containing: "callStatus callID=", timeout: 25) {
            let elapsed = ContinuousClock.now - started
            setup = call.stdout.contains(" connected\n") ? elapsed / .seconds(1) : nil
            if setup != nil, let whileConnected {
                // A mono 16-bit WAV: 96,000 bytes a second after its header.
                let recorded = eventuallyBlocking { ((try? FileManager.default.attributesOfItem(atPath: bobWAV)[.size] as? Int) ?? nil ?? 0) >= 200_000 }
                if !recorded { Issue.record("bob recorded no 2 s of alice: \(answer.stdout) \(answer.stderr)") }
                try whileConnected(coturn)
            }
        }
        let called = try call.wait(timeout: Double(seconds) + 40)
        if !expectConnected { answer.interrupt() }
        let answered = try answer.wait(timeout: 30)
        func samples(_ path: String) -> [Int16] { (try? AudioFile.read(path: path).samples) ?? [] }
        return (Outcome(call: called, answer: answered, setup: setup, heardByAlice: samples(aliceWAV), heardByBob: samples(bobWAV)), coturn)
    }

    /// A login token for `account` in a file of its own (mode 600); its path.
    static func tokenFile(_ account: String, secret: String, in directory: URL) throws -> String {
        let token = try CLI.run(["token", "--account", account, "--secret-file", secret]).stdout
        let path = directory.appendingPathComponent("\(account).token").path
        guard FileManager.default.createFile(atPath: path, contents: Data(token.utf8), attributes: [.posixPermissions: 0o600]) else {
            throw ToolFailure("cannot write \(path)")
        }
        return path
    }

    /// The pair kind a side printed (`mediaPath callID=N KIND local=... remote=...`).
    static func pathKind(_ output: String) -> String? {
        guard let line = output.split(separator: "\n").last(where: { $0.hasPrefix("mediaPath ") }) else { return nil }
        return line.split(separator: " ").dropFirst(2).first.map(String.init)
    }

    static func tone(_ samples: [Int16]) -> Double? {
        guard samples.count > 48_000 else { return nil }
        return samples.dropFirst(9_600).withUnsafeBufferPointer { AudioQuality.toneFrequency($0) }
    }

    static func expectAudioBothWays(_ outcome: Outcome) {
        #expect(abs((tone(outcome.heardByBob) ?? 0) - 440) < 3, "bob heard alice's 440 Hz: \(tone(outcome.heardByBob) ?? 0)")
        #expect(abs((tone(outcome.heardByAlice) ?? 0) - 660) < 3, "alice heard bob's 660 Hz: \(tone(outcome.heardByAlice) ?? 0)")
    }

    @Test func behindTwoPortPreservingNATsTheCallConnectsOnAServerReflexivePair() async throws {
        try await Heavy.runAlone {
            let lab = try NetworkLab()
            defer { lab.close() }
            let alice = try lab.addHost(behind: try lab.addRouter(nat: .portPreserving))
            let bob = try lab.addHost(behind: try lab.addRouter(nat: .portPreserving))
            let (outcome, _) = try Self.call(lab: lab, aliceHost: alice, bobHost: bob, relay: false)
            #expect(outcome.call.status == 0, "\(outcome.call.stdout)\n\(outcome.call.stderr)")
            #expect(Self.pathKind(outcome.call.stdout) == "srflx", "\(outcome.call.stdout)")
            #expect(Self.pathKind(outcome.answer.stdout) == "srflx", "\(outcome.answer.stdout)")
            Self.expectAudioBothWays(outcome)
            print("nat call: port-preserving NATs, srflx pair, setup \(outcome.setup.map { String(format: "%.2f", $0) } ?? "-") s")
        }
    }

    @Test func onOneLANTheHostPairIsChosen() async throws {
        try await Heavy.runAlone {
            let lab = try NetworkLab()
            defer { lab.close() }
            let router = try lab.addRouter(nat: .portPreserving)
            let alice = try lab.addHost(behind: router)
            let bob = try lab.addHost(behind: router)
            let (outcome, _) = try Self.call(lab: lab, aliceHost: alice, bobHost: bob, relay: false)
            #expect(outcome.call.status == 0, "\(outcome.call.stdout)\n\(outcome.call.stderr)")
            #expect(Self.pathKind(outcome.call.stdout) == "host", "\(outcome.call.stdout)")
            #expect(Self.pathKind(outcome.answer.stdout) == "host", "\(outcome.answer.stdout)")
            Self.expectAudioBothWays(outcome)
            print("nat call: one LAN, host pair, setup \(outcome.setup.map { String(format: "%.2f", $0) } ?? "-") s")
        }
    }

    @Test func behindASymmetricNATTheCallGoesThroughCoturn() async throws {
        try await Heavy.runAlone {
            let lab = try NetworkLab()
            defer { lab.close() }
            let alice = try lab.addHost(behind: try lab.addRouter(nat: .symmetric))
            let bob = try lab.addHost(behind: try lab.addRouter(nat: .portPreserving))
            let (outcome, coturn) = try Self.call(lab: lab, aliceHost: alice, bobHost: bob, relay: true)
            #expect(outcome.call.status == 0, "\(outcome.call.stdout)\n\(outcome.call.stderr)")
            #expect(Self.pathKind(outcome.call.stdout) == "relay", "\(outcome.call.stdout)")
            #expect(Self.pathKind(outcome.answer.stdout) == "relay", "\(outcome.answer.stdout)")
            Self.expectAudioBothWays(outcome)
            let log = coturn?.log ?? ""
            #expect(log.contains("ALLOCATE processed, success"), "coturn allocated: \(log.suffix(2_000))")
            #expect(log.contains("CHANNEL_BIND processed, success"), "coturn bound a channel")
            coturn?.stop()
            print("nat call: symmetric NAT, relay pair through coturn, setup \(outcome.setup.map { String(format: "%.2f", $0) } ?? "-") s")
        }
    }

    /// The relay dies mid-call and no other pair can work (a symmetric NAT): the call
    /// reports `disconnected` once media has stopped for the media timeout (10 s), well
    /// before consent expires (30 s), and ends as failed.
    @Test func whenTheRelayStopsMidCallTheCallIsDisconnectedInBoundedTime() async throws {
        try await Heavy.runAlone {
            let lab = try NetworkLab()
            defer { lab.close() }
            let alice = try lab.addHost(behind: try lab.addRouter(nat: .symmetric))
            let bob = try lab.addHost(behind: try lab.addRouter(nat: .portPreserving))
            var stopped: ContinuousClock.Instant?
            let (outcome, _) = try Self.call(lab: lab, aliceHost: alice, bobHost: bob, relay: true, seconds: 40, expectConnected: false) { coturn in
                coturn?.stop()
                stopped = .now
            }
            let afterStop = try #require(stopped).duration(to: .now) / .seconds(1)
            #expect(Self.pathKind(outcome.call.stdout) == "relay", "\(outcome.call.stdout)")
            // Whichever side's media timeout fires first reports `disconnected` and hangs up
            // as failed; the other gets that hangup (or times out itself a moment later).
            let both = outcome.call.stdout + outcome.answer.stdout
            #expect(both.contains("disconnected: no media from the peer"), "\(both)")
            #expect(outcome.call.stdout.contains("reason=failed"), "the call ends as failed: \(outcome.call.stdout)")
            // The call and the callee's end both came down: within the media timeout plus a
            // margin, nowhere near the 40 s the call asked for.
            #expect(afterStop < 20, "\(afterStop) s after the relay stopped")
            #expect(abs((Self.tone(outcome.heardByBob) ?? 0) - 440) < 3, "bob heard alice before the relay stopped")
            print("nat call: relay stopped mid-call, disconnected and ended \(String(format: "%.1f", afterStop)) s later")
        }
    }

    @Test func behindASymmetricNATWithoutARelayTheCallFailsInBoundedTime() async throws {
        try await Heavy.runAlone {
            let lab = try NetworkLab()
            defer { lab.close() }
            let alice = try lab.addHost(behind: try lab.addRouter(nat: .symmetric))
            let bob = try lab.addHost(behind: try lab.addRouter(nat: .portPreserving))
            let started = ContinuousClock.now
            let (outcome, _) = try Self.call(lab: lab, aliceHost: alice, bobHost: bob, relay: false, expectConnected: false)
            let elapsed = (ContinuousClock.now - started) / .seconds(1)
            #expect(outcome.setup == nil, "never connected")
            #expect(outcome.call.stdout.contains("disconnected: ICE found no path"), "\(outcome.call.stdout)")
            #expect(outcome.call.stdout.contains("reason=failed"), "the call ends as failed: \(outcome.call.stdout)")
            #expect(Self.pathKind(outcome.call.stdout) == nil)
            print("nat call: symmetric NAT without a relay failed after \(String(format: "%.1f", elapsed)) s in all")
        }
    }

    /// The SFU is ICE-lite: it learns a participant's address from its signed checks, so
    /// one behind a symmetric NAT (whose mapping toward the server no one could predict)
    /// reaches the meeting and hears, and is heard by, a participant on another network.
    @Test func aMeetingParticipantBehindASymmetricNATReachesTheServer() async throws {
        try await Heavy.runAlone {
            let lab = try NetworkLab()
            defer { lab.close() }
            let alice = try lab.addHost(behind: try lab.addRouter(nat: .symmetric))
            let bob = try lab.addHost(behind: try lab.addRouter(nat: .portPreserving))
            let serverHost = try lab.addPublicHost()
            let server = try LabServer(lab: lab, host: serverHost, options: ["--no-metrics"])
            defer { server.stop() }
            let directory = server.directory
            let url = server.url
            func token(_ account: String) throws -> String { try server.tokenFile(account) }
            let reserved = try lab.run(in: alice, CLI.executable.path, ["meeting", "reserve", "nat", "--server", url, "--token-file", try token("alice")])
            #expect(try reserved.wait(timeout: 20).status == 0)
            let heard = directory.appendingPathComponent("alice-heard.wav").path
            let started = ContinuousClock.now
            let aliceJoin = try lab.run(in: alice, CLI.executable.path,
                                        ["meeting", "join", "nat", "--server", url, "--token-file", try token("alice"), "--audio", "sine:440",
                                         "--play", "file:\(heard)", "--duration", "6"])
            #expect(aliceJoin.waitForOutput(containing: "meetingStatus callID=", timeout: 20), "\(aliceJoin.stdout)\(aliceJoin.stderr)")
            let setup = (ContinuousClock.now - started) / .seconds(1)
            let bobJoin = try lab.run(in: bob, CLI.executable.path,
                                      ["meeting", "join", "nat", "--server", url, "--token-file", try token("bob"), "--audio", "sine:660", "--duration", "3"])
            let bobRun = try bobJoin.wait(timeout: 30)
            let aliceRun = try aliceJoin.wait(timeout: 30)
            #expect(aliceRun.stdout.contains("meetingStatus callID=") && aliceRun.stdout.contains(" connected"), "\(aliceRun.stdout)")
            #expect(!aliceRun.stdout.contains("disconnected"), "\(aliceRun.stdout)")
            #expect(Self.pathKind(aliceRun.stdout) != nil, "the chosen pair is printed: \(aliceRun.stdout)")
            #expect(bobRun.stdout.contains("media alice: audio packets="), "bob received alice: \(bobRun.stdout)")
            let samples = try AudioFile.read(path: heard).samples
            let level = samples.withUnsafeBufferPointer { AudioQuality.toneLevel($0, frequency: 660) }
            #expect(level > 0.05, "alice heard bob's tone at \(level)")
            print("nat meeting: participant behind a symmetric NAT connected in \(String(format: "%.2f", setup)) s (join included)")
        }
    }
}
