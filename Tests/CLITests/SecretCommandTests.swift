import Foundation
import MediaEngine
import Testing
import TestSupport

/// Secrets off the command line: tokens and SRTP keys come from files or the environment;
/// the argument forms warn; nothing any command prints or logs holds a secret.
@Suite(.serialized) struct SecretCommands {
    static let nowhere = "ws://127.0.0.1:9/"

    static func file(_ directory: URL, _ name: String, _ text: String, mode: Int = 0o600) throws -> String {
        let path = directory.appendingPathComponent(name).path
        guard FileManager.default.createFile(atPath: path, contents: Data(text.utf8), attributes: [.posixPermissions: mode]) else {
            throw ToolFailure("cannot write \(path)")
        }
        return path
    }

    @Test func theTokenArgumentWarnsWithoutShowingTheToken() async throws {
        try await Heavy.run {
            let run = try CLI.run(["call", "bob", "--server", Self.nowhere, "--token", "canary-token-4711"])
            #expect(run.status != 0, "nothing listens there")
            #expect(run.stderr.contains("warning: --token shows the login token to every user of this machine"), "\(run.stderr)")
            #expect(run.stderr.contains("use --token-file FILE or MEDIAENGINE_TOKEN"), "\(run.stderr)")
            #expect(!(run.stdout + run.stderr).contains("canary-token-4711"))
            #expect(run.stderr.contains("cannot connect to \(Self.nowhere)"), "it went on with the token: \(run.stderr)")
        }
    }

    /// Each bad way of giving a token or key is named, before anything connects.
    @Test func badTokenAndKeySourcesAreNamed() async throws {
        try await Heavy.run {
            let directory = try temporaryDirectory("secrets")
            defer { try? FileManager.default.removeItem(at: directory) }
            let empty = try Self.file(directory, "empty.token", " \n")
            let large = try Self.file(directory, "large.token", String(repeating: "x", count: 20_000))
            let token = try Self.file(directory, "t.token", "t")
            let call = ["call", "bob", "--server", Self.nowhere]
            let send = ["send", "--to", "127.0.0.1:5004", "--audio", "sine:440"]
            let cases: [(arguments: [String], environment: [String: String], message: String)] = [
                (call, [:], "give the login token with --token-file FILE or MEDIAENGINE_TOKEN"),
                (call + ["--token", "t", "--token-file", token], [:], "--token and --token-file cannot be combined"),
                (call + ["--token-file", "/nonexistent/alice.token"], [:], "--token-file /nonexistent/alice.token: no such file"),
                (call + ["--token-file", directory.path], [:], "--token-file \(directory.path): is a directory"),
                (call + ["--token-file", empty], [:], "--token-file \(empty): the file is empty"),
                (call + ["--token-file", large], [:], "--token-file \(large): 20000 bytes, more than a login token"),
                (call, ["MEDIAENGINE_TOKEN": " "], "MEDIAENGINE_TOKEN is set but empty"),
                (["meeting", "join", "m", "--server", Self.nowhere, "--token-file", "/nonexistent/t"], [:], "/nonexistent/t: no such file"),
                (send + ["--srtp-key-file", "/nonexistent/key"], [:], "--srtp-key-file /nonexistent/key: no such file"),
                (send + ["--srtp-key-file", token, "--no-srtp"], [:], "--srtp-key-file and --no-srtp cannot be combined"),
                (send + ["--srtp-key", "a", "--srtp-key-file", token], [:], "--srtp-key and --srtp-key-file cannot be combined"),
                (send + ["--sdp-only"], ["MEDIAENGINE_SRTP_KEY": "c2hvcnQ="], "--sdp-only needs --sdp FILE"),
            ]
            for (arguments, environment, message) in cases {
                let run = try CLI.run(arguments, environment: environment)
                #expect(run.status != 0, "\(arguments)")
                #expect(run.stderr.contains(message), "\(arguments): \(run.stderr)")
                #expect(!run.stderr.contains("cannot connect"), "refused before connecting: \(run.stderr)")
            }
            // A key from the environment is checked like one from an argument, without echoing it.
            let sdp = directory.appendingPathComponent("s.sdp").path
            let short = try CLI.run(send + ["--sdp", sdp, "--sdp-only"], environment: ["MEDIAENGINE_SRTP_KEY": "c2hvcnQ="])
            #expect(short.stderr.contains("needs 30 bytes of key and salt, got 5") && !short.stderr.contains("c2hvcnQ="), "\(short.stderr)")
        }
    }

    @Test func aTokenFileOthersCanReadWarns() async throws {
        try await Heavy.run {
            let directory = try temporaryDirectory("secrets")
            defer { try? FileManager.default.removeItem(at: directory) }
            let open = try Self.file(directory, "open.token", "canary-token-0815\n", mode: 0o644)
            let run = try CLI.run(["call", "bob", "--server", Self.nowhere, "--token-file", open])
            #expect(run.stderr.contains("warning: --token-file \(open) can be read by other users (mode 644); chmod 600 it"), "\(run.stderr)")
            #expect(!(run.stdout + run.stderr).contains("canary-token-0815"))
            let closed = try Self.file(directory, "closed.token", "canary-token-0815\n")
            let quiet = try CLI.run(["call", "bob", "--server", Self.nowhere, "--token-file", closed])
            #expect(!quiet.stderr.contains("warning"), "\(quiet.stderr)")
            #expect(quiet.stderr.contains("cannot connect"), "\(quiet.stderr)")
        }
    }

    /// The canary scan: a server, a call, a meeting, and SRTP send and receive, every
    /// command at the trace log level, with known tokens, server secret and SRTP key;
    /// not one of them appears in anything a command printed or logged, and neither does
    /// any SDP key line or JWT.
    @Test func noCommandPrintsOrLogsATokenKeyOrSecret() async throws {
        try await Heavy.runAlone {
            let directory = try temporaryDirectory("canary")
            defer { try? FileManager.default.removeItem(at: directory) }
            let trace = ["MEDIAENGINE_LOG_LEVEL": "trace"]
            let secretFile = directory.appendingPathComponent("server.secret").path
            let (server, url) = try CallCommands.Setup.startServer(["--port", "0", "--db", directory.appendingPathComponent("db.sqlite").path,
                                                                     "--secret-file", secretFile, "--ring-timeout", "5", "--duration", "60"],
                                                                    environment: trace)
            var outputs: [(String, CLIRun)] = []
            defer {
                server.interrupt()
                _ = try? server.wait(timeout: 10)
            }
            let secret = try String(contentsOfFile: secretFile, encoding: .utf8).trimmingCharacters(in: .whitespacesAndNewlines)
            func token(_ account: String) throws -> String {
                try CLI.run(["token", "--account", account, "--secret-file", secretFile]).stdout.trimmingCharacters(in: .whitespacesAndNewlines)
            }
            let (alice, bob, carol) = (try token("alice"), try token("bob"), try token("carol"))
            let bobFile = try Self.file(directory, "bob.token", bob)

            let answer = try CLI.start(["answer", "--server", url, "--token-file", bobFile, "--auto-accept", "--audio", "sine:660",
                                        "--media-host", "127.0.0.1"], environment: trace)
            #expect(answer.waitForOutput(containing: "waiting for calls as bob", timeout: 20), "\(answer.stderr)")
            let call = try CLI.run(["call", "bob", "--server", url, "--audio", "sine:440", "--media-host", "127.0.0.1", "--duration", "1.5"],
                                   environment: trace.merging(["MEDIAENGINE_TOKEN": alice]) { $1 })
            #expect(call.status == 0 && call.stdout.contains(" connected"), "\(call.stdout)\(call.stderr)")
            answer.interrupt()
            outputs += [("call", call), ("answer", try answer.wait(timeout: 15))]

            let carolEnvironment = trace.merging(["MEDIAENGINE_TOKEN": carol]) { $1 }
            let reserve = try CLI.run(["meeting", "reserve", "canary", "--server", url], environment: carolEnvironment)
            #expect(reserve.status == 0, "\(reserve.stderr)")
            let join = try CLI.run(["meeting", "join", "canary", "--server", url, "--audio", "sine:440", "--media-host", "127.0.0.1",
                                    "--duration", "1"], environment: carolEnvironment)
            #expect(join.stdout.contains("joined canary"), "\(join.stdout)\(join.stderr)")
            outputs += [("meeting reserve", reserve), ("meeting join", join)]

            let key = SRTPKeyingMaterial.random().base64
            let keyFile = try Self.file(directory, "srtp.key", key)
            let probe = try UDPSocket(bindTo: SocketAddress(host: "127.0.0.1", port: 0))
            let port = probe.localAddress.port
            probe.close()
            let sdp = directory.appendingPathComponent("s.sdp").path
            let send = ["send", "--to", "127.0.0.1:\(port)", "--audio", "sine:440", "--bundle", "--sdp", sdp, "--srtp-key-file", keyFile]
            outputs.append(("send --sdp-only", try CLI.run(send + ["--sdp-only"], environment: trace)))
            #expect(try String(contentsOfFile: sdp, encoding: .utf8).contains("inline:\(key)"), "the SDP file is where the key goes")
            let receive = try CLI.start(["receive", "--sdp", sdp, "--duration", "10", "--stats"], environment: trace)
            #expect(receive.waitForOutput(containing: "for audio", timeout: 10), "\(receive.stderr)")
            outputs.append(("send", try CLI.run(send + ["--duration", "1"], environment: trace)))
            outputs.append(("receive", try receive.wait(timeout: 15)))

            server.interrupt()
            outputs.append(("server", try server.wait(timeout: 10)))
            let canaries = [("alice's token", alice), ("bob's token", bob), ("carol's token", carol), ("the server secret", secret),
                            ("the SRTP key", key)]
            for (command, run) in outputs {
                let text = run.stdout + run.stderr
                #expect(!text.isEmpty || command == "send --sdp-only", "\(command) printed something to scan")
                for (name, canary) in canaries {
                    #expect(!text.contains(canary), "\(command) printed \(name)")
                }
                #expect(!text.contains("inline:") && !text.contains("srtpKey") && !text.contains("eyJ"), "\(command): \(text)")
            }
            #expect(outputs.contains { $0.1.stderr.contains("trace") || $0.1.stderr.contains("debug") || $0.1.stderr.contains("info") },
                    "the commands logged")
        }
    }
}
