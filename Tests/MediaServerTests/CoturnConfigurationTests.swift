import Foundation
import MediaServer
import Testing
import TestSupport

/// The coturn configuration the tests and `bench relay` start it with.
@Suite struct CoturnConfigurationTests {
    @Test func theConfigFileListensRelaysAndAuthenticatesByRESTSecretOnly() throws {
        var configuration = CoturnConfiguration(address: "127.0.0.1", port: 23_478, realm: "media.test", secret: "s3cret",
                                                directory: "/tmp/coturn-1")
        configuration.relayPorts = 50_000...50_099
        configuration.verbose = false
        let lines = configuration.lines
        for expected in ["listening-ip=127.0.0.1", "relay-ip=127.0.0.1", "listening-port=23478",
                         "min-port=50000", "max-port=50099", "use-auth-secret", "static-auth-secret=s3cret",
                         "realm=media.test", "no-tls", "no-dtls", "no-cli",
                         "log-file=/tmp/coturn-1/turnserver.log", "pidfile=/tmp/coturn-1/turnserver.pid",
                         "userdb=/tmp/coturn-1/turndb"] {
            #expect(lines.contains(expected), "\(expected) in \(lines)")
        }
        #expect(configuration.logPath == "/tmp/coturn-1/turnserver.log")
        // The command line names the file and nothing else: the secret is not in the process list.
        #expect(configuration.arguments == ["-c", "/tmp/coturn-1/turnserver.conf"])
        // Off unless asked for: loopback peers, quotas, verbose logging.
        #expect(!lines.contains { $0 == "verbose" || $0.hasPrefix("allow-loopback") || $0.contains("-quota") })

        configuration.allowsLoopbackPeers = true
        configuration.userQuota = 1
        configuration.totalQuota = 10
        configuration.extraLines = ["no-tcp-relay"]
        #expect(Array(configuration.lines.suffix(4)) == ["user-quota=1", "total-quota=10", "allow-loopback-peers", "no-tcp-relay"])
    }

    @Test func theConfigFileIsTheOwnersOnly() throws {
        let directory = try temporaryDirectory("coturn-conf")
        defer { try? FileManager.default.removeItem(at: directory) }
        let configuration = CoturnConfiguration(address: "127.0.0.1", port: 23_478, realm: "media.test", secret: "s3cret-canary",
                                                directory: directory.path)
        try configuration.write()
        let attributes = try FileManager.default.attributesOfItem(atPath: configuration.configurationPath)
        #expect((attributes[.posixPermissions] as? NSNumber)?.intValue == 0o600)
        let text = try String(contentsOfFile: configuration.configurationPath, encoding: .utf8)
        #expect(text == configuration.lines.joined(separator: "\n") + "\n")
        // Written again (a restart), it stays the owner's.
        try configuration.write()
        let again = try FileManager.default.attributesOfItem(atPath: configuration.configurationPath)
        #expect((again[.posixPermissions] as? NSNumber)?.intValue == 0o600)
    }

    @Test func randomSecretsAre32HexDigitsAndDiffer() {
        let secrets = (0..<20).map { _ in CoturnConfiguration.randomSecret() }
        #expect(secrets.allSatisfy { $0.count == 32 && $0.allSatisfy(\.isHexDigit) }, "\(secrets)")
        #expect(Set(secrets).count == secrets.count)
    }
}
