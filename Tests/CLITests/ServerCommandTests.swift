import Foundation
import Signaling
import TestSupport
import Testing

@Suite struct ServerCommand {
    @Test func serverAcceptsTokensFromTheSameSecretAndStopsCleanlyOnSIGINT() async throws {
        try await Heavy.run {
            let directory = try temporaryDirectory("server")
            defer { try? FileManager.default.removeItem(at: directory) }
            let secret = directory.appendingPathComponent("secret").path
            let db = directory.appendingPathComponent("calls.sqlite").path
            let server = try CLI.start(["server", "--port", "0", "--db", db, "--secret-file", secret, "--duration", "60"])
            #expect(server.waitForOutput(containing: "listening on ws://", timeout: 20), "\(server.stderr)")
            let permissions = try FileManager.default.attributesOfItem(atPath: secret)[.posixPermissions] as? Int
            #expect(permissions == 0o600, "a new secret is private")
            let line = try #require(server.stdout.split(separator: "\n").first { $0.hasPrefix("listening on ") })
            let url = String(line.dropFirst("listening on ".count))

            let minted = try CLI.run(["token", "--account", "alice", "--secret-file", secret, "--ttl", "60"])
            #expect(minted.status == 0, "\(minted.stderr)")
            let token = minted.stdout.trimmingCharacters(in: .whitespacesAndNewlines)
            let client = try await SignalingClient.connect(url: url)
            let reply = try await client.request(MessageType.login, Request.Login(token: token, device: "cli"), as: Reply.Login.self)
            #expect(reply.account == "alice")
            await client.close()

            server.interrupt()
            let stopped = try server.wait(timeout: 20)
            #expect(stopped.status == 0, "\(stopped.stderr)")
            #expect(stopped.stdout.contains("stopped; 0 call records"), "\(stopped.stdout)")
            #expect(!stopped.stdout.contains(token) && !stopped.stderr.contains(token), "tokens are never printed by the server")
            #expect(FileManager.default.fileExists(atPath: db))
        }
    }

    @Test(arguments: [
        (["token", "--account", "alice", "--secret-file", "/nonexistent/secret"], "/nonexistent/secret: cannot read the secret file"),
        (["token", "--account", "alice", "--ttl", "0"], "--ttl 0.0 must be"),
        (["token", "--account", ""], "--account must be 1 to 128 bytes"),
        (["server", "--port", "70000"], "--port 70000 is not a port number"),
        (["server", "--port", "0", "--db", "/nonexistent/dir/calls.sqlite", "--secret-file", "/tmp/mediaengine-test-secret"],
         "/nonexistent/dir/calls.sqlite: cannot open the database"),
    ])
    func badOptionsAreNamed(arguments: [String], message: String) async throws {
        try await Heavy.run {
            let run = try CLI.run(arguments)
            #expect(run.status != 0)
            #expect(run.stderr.contains(message), "\(run.stderr)")
        }
    }

    @Test func aShortSecretIsRefused() async throws {
        try await Heavy.run {
            let directory = try temporaryDirectory("secret")
            defer { try? FileManager.default.removeItem(at: directory) }
            let secret = directory.appendingPathComponent("short").path
            try Data("too short\n".utf8).write(to: URL(fileURLWithPath: secret))
            let run = try CLI.run(["token", "--account", "alice", "--secret-file", secret])
            #expect(run.status != 0)
            #expect(run.stderr.contains("has 9 bytes, needs at least 32"), "\(run.stderr)")
        }
    }
}
