#if canImport(Glibc)
import Glibc
#endif
import Foundation
import MediaEngine
import Signaling
import TestSupport
import Testing

/// Ctrl-C (SIGINT) and SIGTERM reach every long-running command in every state: waiting,
/// ringing, connecting, reconnecting, in a call or a meeting. Each ends within 2 s, with
/// status 0 (or the signal's, for a soak that has no verdict), prints its summary, and
/// leaves its recordings playable.
@Suite(.serialized) struct SignalTests {
    /// The longest a command may take to end after the signal.
    static let limit = 2.0

    /// Sends `signal` and waits for the process to end; its output and how long it took.
    static func stop(_ process: BackgroundProcess, with signal: Int32) throws -> (run: CLIRun, seconds: Double) {
        let sent = ContinuousClock.now
        if signal == SIGINT { process.interrupt() } else { process.terminate() }
        let run = try process.wait(timeout: 15)
        return (run, (ContinuousClock.now - sent) / .seconds(1))
    }

    /// A callee driven by the test over the signaling protocol: it logs in, and answers
    /// (or not) as the state under test needs.
    struct ScriptedCallee {
        let client: SignalingClient

        init(url: String, token: String) async throws {
            client = try await SignalingClient.connect(url: url, timeout: CLI.connectTimeout)
            _ = try await client.request(MessageType.login, Request.Login(token: token, device: "script"), as: Reply.Login.self)
        }

        /// The next invitation's call ID.
        func invitation() async throws -> UInt64 {
            for await event in client.events where event.type == MessageType.receive {
                return try event.body(Event.Receive.self).callID
            }
            throw CallCommands.CLIFailure("the connection ended before an invitation")
        }
    }

    @Test(arguments: [SIGINT, SIGTERM])
    func answerStopsWhileWaitingAndWhileReconnecting(signal: Int32) async throws {
        try await Heavy.run {
            let setup = try CallCommands.Setup()
            defer { setup.finish() }
            let answer = try CLI.start(["answer", "--server", setup.url, "--token-file", setup.bobFile, "--auto-accept"])
            #expect(answer.waitForOutput(containing: "waiting for calls as bob", timeout: 20), "\(answer.stderr)")
            let (waiting, seconds) = try Self.stop(answer, with: signal)
            #expect(waiting.status == 0, "\(waiting.stderr)")
            #expect(seconds < Self.limit, "waiting: ended \(seconds) s after the signal")
            #expect(waiting.stdout.contains("media: none"), "the summary: \(waiting.stdout)")

            // The server goes away: the command reconnects, and a signal still ends it.
            let again = try CLI.start(["answer", "--server", setup.url, "--token-file", setup.bobFile, "--auto-accept"])
            #expect(again.waitForOutput(containing: "waiting for calls as bob", timeout: 20), "\(again.stderr)")
            setup.server.killNow()
            #expect(again.waitForOutput(containing: "signaling connection lost", timeout: 10), "\(again.stdout)")
            let (reconnecting, later) = try Self.stop(again, with: signal)
            #expect(reconnecting.status == 0, "\(reconnecting.stderr)")
            #expect(later < Self.limit, "reconnecting: ended \(later) s after the signal")
        }
    }

    @Test func callStopsWhileRingingAndTheRecordSaysCanceled() async throws {
        try await Heavy.run {
            let setup = try CallCommands.Setup()
            defer { setup.finish() }
            let bob = try await ScriptedCallee(url: setup.url, token: setup.bob)
            let call = try CLI.start(["call", "bob", "--server", setup.url, "--token-file", setup.aliceFile, "--media-host", "127.0.0.1"])
            _ = try await bob.invitation()
            #expect(call.waitForOutput(containing: "calling bob callID=", timeout: 20), "\(call.stderr)")
            let (ringing, seconds) = try Self.stop(call, with: SIGINT)
            #expect(ringing.status == 0, "\(ringing.stderr)")
            #expect(seconds < Self.limit, "ringing: ended \(seconds) s after the signal")
            #expect(ringing.stdout.contains("callRecord callID=") && ringing.stdout.contains("alice->bob audio"), "the record: \(ringing.stdout)")
            #expect(ringing.stdout.contains("connected=0.0s"), "\(ringing.stdout)")
            #expect(ringing.stdout.contains("media:"), "the summary: \(ringing.stdout)")
            await bob.client.close()
        }
    }

    @Test func callStopsWhileConnecting() async throws {
        try await Heavy.run {
            let setup = try CallCommands.Setup()
            defer { setup.finish() }
            // Bob accepts with a media address where nothing answers: the caller's ICE checks
            // go unanswered, so it stays connecting (for up to 10 s).
            let silent = try UDPSocket(bindTo: SocketAddress(host: "127.0.0.1", port: 0))
            defer { silent.close() }
            let bob = try await ScriptedCallee(url: setup.url, token: setup.bob)
            let call = try CLI.start(["call", "bob", "--server", setup.url, "--token-file", setup.aliceFile, "--media-host", "127.0.0.1"])
            let id = try await bob.invitation()
            let media = MediaEndpoint(candidates: [MediaCandidate(host: "127.0.0.1", port: silent.localAddress.port)],
                                      srtpProfile: SRTPProfile.aesCM128HMACSHA1_80.rawValue,
                                      srtpKey: SRTPKeyingMaterial.random(profile: .aesCM128HMACSHA1_80).base64, audioSSRC: 0x1234_5678,
                                      videoSSRC: nil, iceUfrag: "silentufrag", icePassword: "silentpasswordsilentpassword")
            _ = try await bob.client.request(MessageType.response, Request.Response(callID: id, accept: true, media: media),
                                             as: Reply.Response.self)
            #expect(call.waitForOutput(containing: "accepted=true", timeout: 20), "\(call.stdout)")
            #expect(!call.stdout.contains(" connected"), "checks under way, none answered: \(call.stdout)")
            let (connecting, seconds) = try Self.stop(call, with: SIGTERM)
            #expect(connecting.status == 0, "\(connecting.stderr)")
            #expect(seconds < Self.limit, "connecting: ended \(seconds) s after the signal")
            #expect(connecting.stdout.contains("callRecord callID=\(id) alice->bob audio"), "the record: \(connecting.stdout)")
            #expect(connecting.stdout.contains("media:"), "the summary: \(connecting.stdout)")
            await bob.client.close()
        }
    }

    @Test(arguments: [SIGINT, SIGTERM])
    func callStopsInACallWithItsRecordingWhole(signal: Int32) async throws {
        try await Heavy.run {
            let setup = try CallCommands.Setup()
            defer { setup.finish() }
            let answer = try CLI.start(["answer", "--server", setup.url, "--token-file", setup.bobFile, "--auto-accept", "--audio", "sine:660"])
            #expect(answer.waitForOutput(containing: "waiting for calls as bob", timeout: 20), "\(answer.stderr)")
            let webm = setup.directory.appendingPathComponent("bob.webm").path
            let call = try CLI.start(["call", "bob", "--server", setup.url, "--token-file", setup.aliceFile, "--video", "--quality", "low",
                                      "--record-remote", webm])
            #expect(call.waitForOutput(containing: "recordStarted", timeout: 20), "\(call.stdout)\(call.stderr)")
            // Net status comes once the first second of media is measured: a recording with
            // something in it.
            #expect(call.waitForOutput(containing: "netStatus ", timeout: 20), "\(call.stdout)")
            let (inCall, seconds) = try Self.stop(call, with: signal)
            #expect(inCall.status == 0, "\(inCall.stderr)")
            #expect(seconds < Self.limit, "in a call: ended \(seconds) s after the signal")
            #expect(inCall.stdout.contains("reason=completed"), "the record: \(inCall.stdout)")
            #expect(inCall.stdout.contains("recordStopped"), "\(inCall.stdout)")
            #expect(inCall.stdout.contains("received audio packets="), "the summary: \(inCall.stdout)")
            let probe = try Probe(path: webm)
            #expect(probe.streams.map(\.codec).sorted() == ["opus", "vp8"], "\(probe.streams)")
            #expect((probe.duration ?? 0) > 0.5, "\(probe.duration ?? 0) s recorded")
            #expect(try Tool.decodeErrors(webm).isEmpty)
            // The callee handled its one call and ends by itself.
            let answered = try answer.wait(timeout: 20)
            #expect(answered.status == 0 && answered.stdout.contains("reason=completed"), "\(answered.stdout)\(answered.stderr)")
        }
    }

    @Test func meetingJoinStopsWhileConnectingAndInAMeeting() async throws {
        try await Heavy.run {
            // A "server" that takes the TCP connection and never answers the upgrade.
            let listener = try TCPListener()
            defer { listener.close() }
            let token = "x.y.z"
            let stuck = try CLI.start(["meeting", "join", "x", "--server", "ws://127.0.0.1:\(listener.port)/"],
                                      environment: ["MEDIAENGINE_TOKEN": token])
            #expect(listener.waitForConnection(timeout: 20), "the command connects")
            let (connecting, seconds) = try Self.stop(stuck, with: SIGTERM)
            #expect(connecting.status == 0, "\(connecting.stdout)\(connecting.stderr)")
            #expect(seconds < Self.limit, "connecting: ended \(seconds) s after the signal")
            #expect(connecting.stdout.contains("interrupted before joining"), "\(connecting.stdout)")

            let setup = try CallCommands.Setup()
            defer { setup.finish() }
            #expect(try CLI.run(["meeting", "reserve", "daily", "--server", setup.url, "--token-file", setup.aliceFile]).status == 0)
            let heard = setup.directory.appendingPathComponent("heard.wav").path
            let alice = try CLI.start(["meeting", "join", "daily", "--server", setup.url, "--token-file", setup.aliceFile, "--audio", "sine:440",
                                       "--record-user", "bob=\(heard)"])
            #expect(alice.waitForOutput(containing: "joined daily", timeout: 20), "\(alice.stderr)")
            let bob = try CLI.start(["meeting", "join", "daily", "--server", setup.url, "--token-file", setup.bobFile, "--audio", "sine:660"])
            #expect(bob.waitForOutput(containing: "joined daily", timeout: 20), "\(bob.stderr)")
            // Speaking reports come every 500 ms while anyone speaks: three naming bob, over a
            // second of bob in the recording.
            #expect(alice.waitForOutput(containing: " bob=0.", occurrences: 3, timeout: 20), "\(alice.stdout)")
            let (inMeeting, later) = try Self.stop(alice, with: SIGINT)
            #expect(inMeeting.status == 0, "\(inMeeting.stderr)")
            #expect(later < Self.limit, "in a meeting: ended \(later) s after the signal")
            #expect(inMeeting.stdout.contains("left") && inMeeting.stdout.contains("media bob: audio packets="), "\(inMeeting.stdout)")
            let samples = try AudioFile.read(path: heard).samples
            #expect(samples.count > 48_000, "\(samples.count) samples of bob recorded")
            let frequency = samples.dropFirst(9_600).withUnsafeBufferPointer { AudioQuality.toneFrequency($0) }
            #expect(abs((frequency ?? 0) - 660) < 3, "bob's tone: \(frequency ?? 0) Hz")
            #expect(bob.waitForOutput(containing: "user=alice reason=left", timeout: 10), "\(bob.stdout)")
            let (bobEnded, _) = try Self.stop(bob, with: SIGTERM)
            #expect(bobEnded.status == 0)
        }
    }

    @Test func receiveSendAndNetemStopMidStream() async throws {
        try await Heavy.run {
            let directory = try temporaryDirectory("signals")
            defer { try? FileManager.default.removeItem(at: directory) }
            let probe = try UDPSocket(bindTo: SocketAddress(host: "127.0.0.1", port: 0))
            let port = probe.localAddress.port
            probe.close()
            let sdp = directory.appendingPathComponent("s.sdp").path
            let wav = directory.appendingPathComponent("a.wav").path
            let proxy = try CLI.start(["netem", "--listen", "127.0.0.1:0", "--forward", "127.0.0.1:\(port)", "--loss", "0"])
            #expect(proxy.waitForOutput(containing: "proxying ", timeout: 10), "\(proxy.stderr)")
            let through = try #require(proxy.stderr.split(separator: "\n").first { $0.hasPrefix("proxying ") }?
                .split(separator: " ")[1])
            let send = ["send", "--to", "127.0.0.1:\(port)", "--audio", "sine:1000", "--audio-ssrc", "4660", "--sdp", sdp]
            #expect(try CLI.run(send + ["--sdp-only"]).status == 0)
            let receiver = try CLI.start(["receive", "--sdp", sdp, "--record", wav, "--stats"])
            #expect(receiver.waitForOutput(containing: "for audio", timeout: 10))
            let sender = try CLI.start(["send", "--to", String(through), "--audio", "sine:1000", "--audio-ssrc", "4660", "--sdp", directory.appendingPathComponent("t.sdp").path],
                                       environment: ["MEDIAENGINE_SRTP_KEY": try Self.key(in: sdp)])
            // A statistics line per stream each second: two seconds of audio received.
            #expect(receiver.waitForOutput(containing: " audio: ", occurrences: 2, timeout: 20), "\(receiver.stdout)")
            let (sent, sendSeconds) = try Self.stop(sender, with: SIGTERM)
            #expect(sent.status == 0 && sendSeconds < Self.limit, "send: \(sendSeconds) s, \(sent.stderr)")
            #expect(sent.stdout.contains("sent: audio packets="), "\(sent.stdout)")
            let (received, receiveSeconds) = try Self.stop(receiver, with: SIGINT)
            #expect(received.status == 0 && receiveSeconds < Self.limit, "receive: \(receiveSeconds) s, \(received.stderr)")
            #expect(received.stdout.contains("received audio: packets="), "\(received.stdout)")
            let (proxied, proxySeconds) = try Self.stop(proxy, with: SIGTERM)
            #expect(proxied.status == 0 && proxySeconds < Self.limit, "netem: \(proxySeconds) s, \(proxied.stderr)")
            let audio = try AudioFile.read(path: wav)
            #expect(audio.samples.count > 48_000, "\(audio.samples.count) samples recorded")
            let frequency = audio.samples.dropFirst(4_800).withUnsafeBufferPointer { AudioQuality.toneFrequency($0) }
            #expect(abs((frequency ?? 0) - 1_000) < 2, "\(frequency ?? 0) Hz")
        }
    }

    @Test func serverWithALiveCallAndASoakStop() async throws {
        try await Heavy.runAlone {
            let setup = try CallCommands.Setup()
            defer { setup.finish() }
            let answer = try CLI.start(["answer", "--server", setup.url, "--token-file", setup.bobFile, "--auto-accept"])
            #expect(answer.waitForOutput(containing: "waiting for calls as bob", timeout: 20), "\(answer.stderr)")
            let call = try CLI.start(["call", "bob", "--server", setup.url, "--token-file", setup.aliceFile])
            #expect(call.waitForOutput(containing: " connected", timeout: 20), "\(call.stdout)")
            let (server, seconds) = try Self.stop(setup.server, with: SIGTERM)
            #expect(server.status == 0 && seconds < Self.limit, "server: \(seconds) s, \(server.stderr)")
            #expect(server.stdout.contains("stopped; 1 call records"), "the record is stored: \(server.stdout)")
            for party in [call, answer] {
                let ended = try party.wait(timeout: 10)
                #expect(ended.stdout.contains("callRecord callID="), "\(ended.stdout)")
            }

            let soak = try CLI.start(["bench", "soak", "--minutes", "1", "--interval", "5"])
            #expect(soak.waitForOutput(containing: " s  rss ", timeout: 30), "\(soak.stdout)\(soak.stderr)")
            let (stopped, soakSeconds) = try Self.stop(soak, with: SIGTERM)
            #expect(stopped.status == 128 + SIGTERM, "a soak cut short has no verdict: \(stopped.status) \(stopped.stderr)")
            #expect(soakSeconds < Self.limit, "soak: ended \(soakSeconds) s after the signal")
            #expect(stopped.stderr.contains("the soak was stopped after"), "\(stopped.stderr)")
        }
    }

    /// The base64 key of an SDP file's `a=crypto` line.
    static func key(in sdp: String) throws -> String {
        let text = try String(contentsOfFile: sdp, encoding: .utf8)
        guard let range = text.range(of: "inline:") else { throw CallCommands.CLIFailure("no key in \(sdp)") }
        return String(text[range.upperBound...].prefix { !$0.isWhitespace && $0 != "|" })
    }
}

/// A TCP port that accepts connections (the kernel does, into its backlog) and never
/// answers: a server that hangs.
final class TCPListener: @unchecked Sendable {
    // @unchecked: one test owns it and calls it from one task at a time.
    private let descriptor: Int32
    private var clients: [Int32] = []
    let port: Int

    init() throws {
        let descriptor = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        self.descriptor = descriptor
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        address.sin_port = 0
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        let bound = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(descriptor, $0, length) }
        }
        guard bound == 0, listen(descriptor, 8) == 0 else { throw CallCommands.CLIFailure("cannot listen: \(errno)") }
        _ = withUnsafeMutablePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(descriptor, $0, &length) }
        }
        port = Int(UInt16(bigEndian: address.sin_port))
    }

    /// Waits until a client connects (the connection is then held, never answered).
    func waitForConnection(timeout: Double) -> Bool {
        var poller = pollfd(fd: descriptor, events: Int16(POLLIN), revents: 0)
        guard poll(&poller, 1, Int32(timeout * 1_000)) == 1 else { return false }
        let client = accept(descriptor, nil, nil)
        if client >= 0 { clients.append(client) }
        return client >= 0
    }

    func close() {
        for client in clients { _ = Glibc.close(client) }
        _ = Glibc.close(descriptor)
    }
}
