import Foundation

/// `mediaengine server` on a host of a `NetworkLab` (port 8080 of the host's address), with
/// its database and secret in a temporary directory, and login tokens in files of their own.
public final class LabServer: @unchecked Sendable {
    public let host: NetworkLab.Namespace
    public let process: BackgroundProcess
    /// Where the database, the secret and the tokens live (removed by `stop`).
    public let directory: URL
    public let secretFile: String

    /// Starts the server and waits until it listens.
    /// - Throws: `ToolFailure` with its output when it does not start.
    public init(lab: NetworkLab, host: NetworkLab.Namespace, options: [String] = []) throws {
        self.host = host
        directory = try temporaryDirectory("labserver")
        secretFile = directory.appendingPathComponent("secret").path
        process = try lab.run(in: host, CLI.executable.path,
                              ["server", "--host", host.address, "--port", "8080", "--db", directory.appendingPathComponent("db.sqlite").path,
                               "--secret-file", secretFile] + options)
        guard process.waitForOutput(containing: "listening on ws://", timeout: 20) else {
            stop()
            throw ToolFailure("server did not start: \(process.stdout) \(process.stderr)")
        }
    }

    public var url: String { "ws://\(host.address):8080" }
    public var http: String { "http://\(host.address):8080" }

    /// A login token for `account` in a file of its own (mode 600); its path.
    public func tokenFile(_ account: String) throws -> String {
        let token = try CLI.run(["token", "--account", account, "--secret-file", secretFile]).stdout
        let path = directory.appendingPathComponent("\(account).token").path
        guard FileManager.default.createFile(atPath: path, contents: Data(token.utf8), attributes: [.posixPermissions: 0o600]) else {
            throw ToolFailure("cannot write \(path)")
        }
        return path
    }

    /// Stops the server (Ctrl-C, as a user would) and removes its directory.
    public func stop() {
        process.interrupt()
        _ = try? process.wait(timeout: 10)
        try? FileManager.default.removeItem(at: directory)
    }
}
