import Testing
import MediaEngine

/// The coturn command line the tests and `bench relay` start it with.
@Suite struct CoturnConfigurationTests {
    @Test func argumentsListenRelayAndAuthenticateByRESTSecretOnly() {
        var configuration = CoturnConfiguration(address: "127.0.0.1", port: 23_478, realm: "media.test", secret: "s3cret",
                                                directory: "/tmp/coturn-1")
        configuration.relayPorts = 50_000...50_099
        configuration.verbose = false
        let arguments = configuration.arguments
        // No config file is read, so nothing on the host changes what it does.
        #expect(arguments.prefix(3) == ["-c", "/dev/null", "-n"])
        for expected in ["--listening-ip=127.0.0.1", "--relay-ip=127.0.0.1", "--listening-port=23478",
                         "--min-port=50000", "--max-port=50099", "--use-auth-secret", "--static-auth-secret=s3cret",
                         "--realm=media.test", "--no-tls", "--no-dtls", "--no-cli",
                         "--log-file=/tmp/coturn-1/turnserver.log", "--pidfile=/tmp/coturn-1/turnserver.pid",
                         "--userdb=/tmp/coturn-1/turndb"] {
            #expect(arguments.contains(expected), "\(expected) in \(arguments)")
        }
        #expect(configuration.logPath == "/tmp/coturn-1/turnserver.log")
        // Off unless asked for: loopback peers, quotas, verbose logging.
        #expect(!arguments.contains { $0 == "-v" || $0.hasPrefix("--allow-loopback") || $0.hasSuffix("-quota") || $0.contains("-quota=") })

        configuration.allowsLoopbackPeers = true
        configuration.userQuota = 1
        configuration.totalQuota = 10
        configuration.extraArguments = ["--no-tcp-relay"]
        let more = configuration.arguments
        #expect(Array(more.suffix(4)) == ["--user-quota=1", "--total-quota=10", "--allow-loopback-peers", "--no-tcp-relay"])
    }

    @Test func randomSecretsAre32HexDigitsAndDiffer() {
        let secrets = (0..<20).map { _ in CoturnConfiguration.randomSecret() }
        #expect(secrets.allSatisfy { $0.count == 32 && $0.allSatisfy(\.isHexDigit) }, "\(secrets)")
        #expect(Set(secrets).count == secrets.count)
    }
}
