import Foundation

/// `mediaengine server` as users run it (port 0, a database and a secret in a temporary
/// directory), with tokens for alice and bob in files of their own.
public struct ServerSetup: Sendable {
    public let directory: URL
    public let server: BackgroundProcess
    public let url: String
    public let alice: String
    public let bob: String
    /// The tokens in files of their own (mode 600), as the README shows them.
    public let aliceFile: String
    public let bobFile: String

    public init(serverOptions: [String] = []) throws {
        directory = try temporaryDirectory("call")
        let secret = directory.appendingPathComponent("secret").path
        (server, url) = try Self.startServer(["--port", "0", "--db", directory.appendingPathComponent("calls.sqlite").path,
                                              "--secret-file", secret, "--ring-timeout", "5", "--duration", "120"] + serverOptions)
        alice = try CLI.run(["token", "--account", "alice", "--secret-file", secret]).stdout.trimmingCharacters(in: .whitespacesAndNewlines)
        bob = try CLI.run(["token", "--account", "bob", "--secret-file", secret]).stdout.trimmingCharacters(in: .whitespacesAndNewlines)
        aliceFile = try Self.writeToken(alice, to: directory.appendingPathComponent("alice.token").path)
        bobFile = try Self.writeToken(bob, to: directory.appendingPathComponent("bob.token").path)
    }

    /// The server's HTTP address (`http://HOST:PORT`), for WHIP, WHEP and `/metrics`.
    public var httpURL: String { "http" + url.dropFirst("ws".count).dropLast() }

    /// A token for `account` in a file of its own (mode 600); returns the file's path.
    public func tokenFile(_ account: String) throws -> String {
        let secret = directory.appendingPathComponent("secret").path
        let token = try CLI.run(["token", "--account", account, "--secret-file", secret]).stdout.trimmingCharacters(in: .whitespacesAndNewlines)
        return try Self.writeToken(token, to: directory.appendingPathComponent("\(account).token").path)
    }

    /// Writes `token` to `path`, readable by its owner only; returns the path.
    public static func writeToken(_ token: String, to path: String) throws -> String {
        guard FileManager.default.createFile(atPath: path, contents: Data((token + "\n").utf8), attributes: [.posixPermissions: 0o600]) else {
            throw ToolFailure("cannot write \(path)")
        }
        return path
    }

    /// `mediaengine server` with `options`, once it listens, and its URL.
    public static func startServer(_ options: [String], environment: [String: String] = [:]) throws -> (BackgroundProcess, String) {
        let server = try CLI.start(["server"] + options, environment: environment)
        guard server.waitForOutput(containing: "listening on ws://", timeout: 20),
              let line = server.stdout.split(separator: "\n").first(where: { $0.hasPrefix("listening on ") }) else {
            throw ToolFailure("server did not start: \(server.stderr)")
        }
        return (server, String(line.dropFirst("listening on ".count)))
    }

    public func finish() {
        server.interrupt()
        _ = try? server.wait(timeout: 10)
        try? FileManager.default.removeItem(at: directory)
    }
}

