import Foundation
import MediaEngine
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
            let client = try await SignalingClient.connect(url: url, timeout: CLI.connectTimeout)
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

    /// The store in PostgreSQL: the password from a file or PGPASSWORD, never printed; the
    /// server logs in, migrates, and says where its records are.
    @Test func serverKeepsItsRecordsInPostgreSQLWithThePasswordOutOfTheCommandLine() async throws {
        try await Heavy.run {
            let postgres = try PostgresTestServer()
            let directory = try temporaryDirectory("server-postgres")
            defer { try? FileManager.default.removeItem(at: directory) }
            let passwordFile = directory.appendingPathComponent("pgpassword")
            try Data("\(postgres.password)\n".utf8).write(to: passwordFile)
            try FileManager.default.setAttributes([.posixPermissions: 0o600], ofItemAtPath: passwordFile.path)
            let where_ = "postgres://\(postgres.user)@127.0.0.1:\(postgres.port)/postgres"
            let base = ["server", "--port", "0", "--secret-file", directory.appendingPathComponent("secret").path, "--duration", "1",
                        "--no-live"]
            for (extra, environment) in [(["--store", where_, "--store-password-file", passwordFile.path], [:]),
                                         (["--store", where_], ["PGPASSWORD": postgres.password])] {
                let run = try CLI.run(base + extra, environment: environment)
                #expect(run.status == 0, "\(run.stderr)")
                #expect(run.stdout.contains("stopped; 0 call records and 0 meeting records in \(where_)"), "\(run.stdout)")
                #expect(!run.stdout.contains(postgres.password) && !run.stderr.contains(postgres.password))
                #expect(!run.stderr.contains("warning"), "\(run.stderr)")
            }
            // In the URL it works, with a warning that does not repeat it.
            let visible = try CLI.run(base + ["--store", postgres.url()])
            #expect(visible.status == 0, "\(visible.stderr)")
            #expect(visible.stderr.contains("warning: a password in --store's URL shows the database password to every user"),
                    "\(visible.stderr)")
            #expect(!visible.stderr.contains(postgres.password) && !visible.stdout.contains(postgres.password))

            // Down: an error naming the database, not its password, before listening.
            postgres.stop()
            let down = try CLI.run(base + ["--store", where_, "--store-password-file", passwordFile.path])
            #expect(down.status != 0)
            #expect(down.stderr.contains("\(where_): cannot open the database"), "\(down.stderr)")
            #expect(!down.stdout.contains("listening on") && !down.stderr.contains(postgres.password))
        }
    }

    @Test(arguments: [
        (["token", "--account", "alice", "--secret-file", "/nonexistent/secret"], "/nonexistent/secret: cannot read the secret file"),
        (["token", "--account", "alice", "--ttl", "0"], "--ttl 0.0 must be"),
        (["token", "--account", ""], "--account must be 1 to 128 bytes"),
        (["server", "--port", "70000"], "--port 70000 is not a port number"),
        (["server", "--port", "0", "--db", "/nonexistent/dir/calls.sqlite", "--secret-file", "/tmp/mediaengine-test-secret"],
         "/nonexistent/dir/calls.sqlite: cannot open the database"),
        (["server", "--store", "mysql://root:hunter2@127.0.0.1/db"], "--store: use sqlite:PATH or postgres://"),
        (["server", "--store", "sqlite:"], "--store sqlite:PATH names no file"),
        (["server", "--store", "postgres://127.0.0.1/db"], "--store: the store URL names no user"),
        (["server", "--db", "a.sqlite", "--store", "sqlite:b.sqlite"], "--db and --store cannot be combined"),
        (["server", "--store-password-file", "/tmp/pw"], "--store-password-file needs --store postgres://"),
        (["server", "--node-id", "n1"], "--node-id needs --store postgres://"),
        (["server", "--store", "postgres://u@127.0.0.1/db", "--node-id", "Node 1"], "--node-id: node id 'Node 1' must be 1 to 32 of a-z"),
        (["server", "--reconnect-grace", "0"], "--reconnect-grace 0.0 must be within"),
        (["server", "--media-threads", "0"], "--media-threads 0 must be within 1...256"),
        (["server", "--media-realtime-priority", "100"], "--media-realtime-priority 100 must be within 1...99"),
        (["server", "--store", "postgres://u:in-url@127.0.0.1/db", "--store-password-file", "/tmp/pw"],
         "a password in --store's URL and --store-password-file cannot be combined"),
    ])
    func badOptionsAreNamed(arguments: [String], message: String) async throws {
        try await Heavy.run {
            // In a directory of its own: a bad option writes nothing (no secret file, no database).
            let directory = try temporaryDirectory("bad-options")
            defer { try? FileManager.default.removeItem(at: directory) }
            let run = try CLI.run(arguments, directory: directory)
            #expect(run.status != 0)
            #expect(run.stderr.contains(message), "\(run.stderr)")
            #expect(try FileManager.default.contentsOfDirectory(atPath: directory.path).isEmpty)
        }
    }

    /// `--media-realtime-priority` in a process that may not use it (CAP_SYS_NICE dropped
    /// from its bounding set by `setpriv`, RLIMIT_RTPRIO 0): the server does not start on
    /// ordinary threads behind the user's back, it stops and names what is missing.
    @Test func aRealTimePriorityTheProcessMayNotUseStopsTheServerAndSaysWhy() async throws {
        try await Heavy.run {
            let directory = try temporaryDirectory("realtime")
            defer { try? FileManager.default.removeItem(at: directory) }
            let process = try BackgroundProcess(
                executable: URL(fileURLWithPath: "/usr/bin/setpriv"),
                arguments: ["--bounding-set=-sys_nice", CLI.executable.path, "server", "--host", "127.0.0.1", "--port", "0",
                            "--db", directory.appendingPathComponent("calls.sqlite").path,
                            "--secret-file", directory.appendingPathComponent("server.secret").path,
                            "--media-realtime-priority", "20", "--duration", "5"])
            let run = try process.wait(timeout: 60)
            #expect(run.status != 0)
            #expect(run.stderr.contains("--media-realtime-priority: cannot run forwarding threads at real-time priority 20 (SCHED_FIFO)")
                        && run.stderr.contains("CAP_SYS_NICE"), "\(run.stderr)")
            // A failure at run time, not a misused command line: no usage text, no "cannot listen".
            #expect(!run.stderr.contains("Usage:") && !run.stderr.contains("cannot listen"), "\(run.stderr)")
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

    @Test func badTURNOptionsStopTheServerBeforeItListensAndNeverPrintTheSecret() async throws {
        try await Heavy.run {
            let directory = try temporaryDirectory("turn-options")
            defer { try? FileManager.default.removeItem(at: directory) }
            let secretText = "turn-secret-\(UUID().uuidString)"
            let good = directory.appendingPathComponent("turn.secret").path
            try Data("\(secretText)\n".utf8).write(to: URL(fileURLWithPath: good))
            let empty = directory.appendingPathComponent("empty.secret").path
            try Data("\n".utf8).write(to: URL(fileURLWithPath: empty))
            let missing = directory.appendingPathComponent("missing.secret").path
            let serverSecret = directory.appendingPathComponent("server.secret").path
            let base = ["server", "--port", "0", "--db", directory.appendingPathComponent("calls.sqlite").path,
                        "--secret-file", serverSecret, "--duration", "5"]
            let rows: [([String], String)] = [
                (["--turn-url", "turn:127.0.0.1:3478"], "--turn-url needs --turn-secret-file"),
                (["--turn-secret-file", good], "--turn-secret-file needs --turn-url"),
                (["--turn-credential-lifetime", "600"], "--turn-credential-lifetime needs --turn-url and --turn-secret-file"),
                (["--turn-url", "turn:127.0.0.1:3478", "--turn-secret-file", missing],
                 "--turn-secret-file: \(missing): cannot read the TURN secret file"),
                (["--turn-url", "turn:127.0.0.1:3478", "--turn-secret-file", directory.path],
                 "--turn-secret-file: \(directory.path): cannot read the TURN secret file"),
                (["--turn-url", "turn:127.0.0.1:3478", "--turn-secret-file", empty], "--turn-secret-file: \(empty): the TURN secret file is empty"),
                (["--turn-url", "http://127.0.0.1:3478", "--turn-secret-file", good], "--turn-url: 'http://127.0.0.1:3478': not a stun:"),
                (["--turn-url", "turn:127.0.0.1:99999", "--turn-secret-file", good], "--turn-url: 'turn:127.0.0.1:99999': port '99999'"),
                (["--turn-url", "stun:127.0.0.1:3478", "--turn-secret-file", good],
                 "--turn-url: 'stun:127.0.0.1:3478': not a TURN server over UDP"),
                (["--turn-url", "turn:127.0.0.1:3478?transport=tcp", "--turn-secret-file", good], "not a TURN server over UDP"),
                (["--turn-url", "turn:127.0.0.1:3478", "--turn-secret-file", good, "--turn-credential-lifetime", "10"],
                 "--turn-credential-lifetime 10 must be within 60...2592000 s"),
            ]
            for (options, message) in rows {
                let run = try CLI.run(base + options)
                #expect(run.status != 0, "\(options)")
                #expect(run.stderr.contains(message), "\(options): \(run.stderr)")
                #expect(!run.stdout.contains("listening on"), "\(options): \(run.stdout)")
                #expect(!run.stdout.contains(secretText) && !run.stderr.contains(secretText), "\(options): the secret is never printed")
                #expect(!FileManager.default.fileExists(atPath: serverSecret), "\(options): nothing was set up")
            }
        }
    }

    @Test func aLoginGetsTURNCredentialsCoturnTakesAndTheServerNeverPrintsThem() async throws {
        try await Heavy.run {
            let coturn = try Coturn(loopbackRealm: "media.test")
            try coturn.start()
            let directory = try temporaryDirectory("turn-server")
            defer { try? FileManager.default.removeItem(at: directory) }
            let turnSecret = directory.appendingPathComponent("turn.secret").path
            try Data("\(coturn.secret)\n".utf8).write(to: URL(fileURLWithPath: turnSecret))
            let secret = directory.appendingPathComponent("secret").path
            let server = try CLI.start(["server", "--port", "0", "--db", directory.appendingPathComponent("calls.sqlite").path,
                                        "--secret-file", secret, "--duration", "60",
                                        "--turn-url", "turn:127.0.0.1:\(coturn.port)", "--turn-secret-file", turnSecret,
                                        "--turn-credential-lifetime", "3600"])
            #expect(server.waitForOutput(containing: "listening on ws://", timeout: 20), "\(server.stderr)")
            let line = try #require(server.stdout.split(separator: "\n").first { $0.hasPrefix("listening on ") })
            let url = String(line.dropFirst("listening on ".count))
            let minted = try CLI.run(["token", "--account", "alice", "--secret-file", secret, "--ttl", "60"])
            let token = minted.stdout.trimmingCharacters(in: .whitespacesAndNewlines)
            let client = try await SignalingClient.connect(url: url, timeout: CLI.connectTimeout)
            let before = Int(Date().timeIntervalSince1970)
            let reply = try await client.request(MessageType.login, Request.Login(token: token, device: "cli"), as: Reply.Login.self)
            await client.close()

            let turn = try #require(reply.iceServers.first { $0.urls.contains("turn:127.0.0.1:\(coturn.port)") }, "\(reply.iceServers)")
            let expiry = try #require(turn.username.flatMap { Int($0.split(separator: ":")[0]) })
            #expect((before + 3_600...before + 3_610).contains(expiry), "--turn-credential-lifetime 3600")
            let credential = try #require(turn.credential)
            let configuration = try #require(try ICEGatheringServers(reply.iceServers).turn.first)
            #expect(throws: Never.self) { try TURNProbe.allocate(on: configuration.server, credentials: configuration.credentials).get() }

            server.interrupt()
            let stopped = try server.wait(timeout: 20)
            #expect(stopped.status == 0, "\(stopped.stderr)")
            for text in [stopped.stdout, stopped.stderr] {
                #expect(!text.contains(coturn.secret), "the TURN secret is never printed: \(text)")
                #expect(!text.contains(credential), "a login's TURN credential is never printed: \(text)")
            }
            withExtendedLifetime(coturn) {}
        }
    }
}
