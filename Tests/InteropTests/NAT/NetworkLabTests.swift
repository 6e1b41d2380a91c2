#if canImport(Glibc)
import Glibc
#endif
import Foundation
import MediaEngine
import TestSupport
import Testing

/// The NAT lab proved with real packets: what the far side of each kind of NAT sees, coturn
/// answering through one, and nothing left behind.
@Suite(.serialized) struct NetworkLabTests {
    /// A UDP socket bound in `namespace`, usable from the test's thread.
    func socket(_ lab: NetworkLab, in namespace: NetworkLab.Namespace, port: Int) throws -> UDPSocket {
        try lab.withNamespace(namespace) { try UDPSocket(bindTo: SocketAddress(host: "0.0.0.0", port: port)) }
    }

    /// Sends `text` from `client` to `server` (at `address`), and returns where the server
    /// saw it come from after echoing that address back to the client, which must get it.
    func echo(_ text: String, from client: UDPSocket, to server: UDPSocket, at address: SocketAddress) throws -> SocketAddress? {
        try Array(text.utf8).withUnsafeBytes { (bytes) in try client.send(bytes, to: address) }
        var buffer = [UInt8](repeating: 0, count: 1_500)
        let received = try buffer.withUnsafeMutableBytes { (raw) in try server.receive(into: raw, timeout: .seconds(2)) }
        guard let (count, source) = received, String(decoding: buffer[0..<count], as: UTF8.self) == text else { return nil }
        try Array(source.description.utf8).withUnsafeBytes { (bytes) in try server.send(bytes, to: source) }
        let answer = try buffer.withUnsafeMutableBytes { (raw) in try client.receive(into: raw, timeout: .seconds(2)) }
        guard let (answerCount, from) = answer, from == address,
              String(decoding: buffer[0..<answerCount], as: UTF8.self) == source.description
        else { return nil }
        return source
    }

    @Test func portPreservingNATShowsTheRouterAddressAndTheHostPort() async throws {
        try await Heavy.runAlone {
            let lab = try NetworkLab()
            defer { lab.close() }
            let router = try lab.addRouter(nat: .portPreserving)
            let host = try lab.addHost(behind: router)
            let server = try lab.addPublicHost()
            #expect(host.address == "10.1.0.2")
            #expect(router.wanAddress.hasPrefix("203.0.113."))

            let listening = try socket(lab, in: server, port: 5_000)
            let client = try socket(lab, in: host, port: 40_001)
            defer { listening.close(); client.close() }
            let seen = try echo("hello", from: client, to: listening, at: SocketAddress(host: server.address, port: 5_000))
            #expect(seen == (try SocketAddress(host: router.wanAddress, port: 40_001)))
        }
    }

    @Test func symmetricNATMapsEachDestinationToAnotherPort() async throws {
        try await Heavy.runAlone {
            let lab = try NetworkLab()
            defer { lab.close() }
            let router = try lab.addRouter(nat: .symmetric)
            let host = try lab.addHost(behind: router)
            let first = try lab.addPublicHost(), second = try lab.addPublicHost()

            let servers = [try socket(lab, in: first, port: 5_000), try socket(lab, in: second, port: 5_000)]
            let client = try socket(lab, in: host, port: 40_002)
            defer { servers.forEach { $0.close() }; client.close() }
            let seen = [
                try echo("one", from: client, to: servers[0], at: SocketAddress(host: first.address, port: 5_000)),
                try echo("two", from: client, to: servers[1], at: SocketAddress(host: second.address, port: 5_000)),
            ]
            #expect(seen.map { $0?.host } == [router.wanAddress, router.wanAddress])
            // One socket, two destinations, two mappings: ICE's srflx candidate is useless here.
            let ports = seen.compactMap { $0?.port }
            #expect(ports.count == 2 && ports[0] != ports[1], "mapped ports \(ports)")
        }
    }

    @Test func coturnAnswersThroughTheNATAndAllocatesWithRESTCredentials() async throws {
        try await Heavy.runAlone {
            let lab = try NetworkLab()
            defer { lab.close() }
            let router = try lab.addRouter(nat: .portPreserving)
            let host = try lab.addHost(behind: router)
            let public_ = try lab.addPublicHost()
            let coturn = try Coturn(lab: lab, namespace: public_)
            try coturn.start()
            defer { coturn.stop() }

            let server = coturn.serverAddress
            let probe = try lab.withNamespace(host) { try STUNProbe.mappedAddress(of: server, localPort: 40_003) }
            #expect(probe?.mapped == (try SocketAddress(host: router.wanAddress, port: 40_003)))

            // Two clients behind the NAT allocate relays with the helper's credentials and
            // send to each other through them.
            let (username, password) = coturn.credentials(account: "alice")
            let client = try lab.run(in: host, "turnutils_uclient", [
                "-p", String(coturn.port), "-n", "1", "-m", "1", "-l", "100", "-y", "-c",
                "-u", username, "-w", password, coturn.address,
            ])
            let run = try client.wait(timeout: 20)
            #expect(run.status == 0, "\(run.stdout)\(run.stderr)")
            #expect((run.stdout + run.stderr).contains("tot_recv_msgs=2"), "\(run.stdout)\(run.stderr)")
            #expect(coturn.log.contains("user <\(username)>: incoming packet ALLOCATE processed, success"), "\(coturn.log)")

            // Wrong credentials are refused.
            let wrong = try lab.run(in: host, "turnutils_uclient", [
                "-p", String(coturn.port), "-n", "1", "-m", "1", "-y", "-c", "-u", username, "-w", "not-the-password", coturn.address,
            ])
            let refused = try wrong.wait(timeout: 20)
            #expect(refused.status != 0, "\(refused.stdout)")
            #expect((refused.stdout + refused.stderr).contains("Cannot complete Allocation"), "\(refused.stdout)\(refused.stderr)")
        }
    }

    @Test func closeLeavesNoNamespaceOrInterface() async throws {
        try await Heavy.runAlone {
            let lab = try NetworkLab()
            let router = try lab.addRouter(nat: .symmetric)
            _ = try lab.addHost(behind: router)
            _ = try lab.addPublicHost()
            let sleeper = try lab.run(in: lab.publicNamespace, "sleep", ["30"])
            #expect(lab.existingNamespaces.count == 4)
            lab.close()
            #expect(lab.existingNamespaces.isEmpty)
            #expect(!sleeper.isRunning)
            let links = try Tool.run("ip", ["-o", "link", "show"])
            #expect(!links.stdout.contains(lab.interfacePrefix))
            let namespaces = try Tool.run("ip", ["netns", "list"])
            #expect(!namespaces.stdout.contains(lab.prefix))
        }
    }

    @Test func aNewLabDeletesTheNamespacesOfALabWhoseProcessDied() async throws {
        try await Heavy.runAlone {
            // A process ID nobody has now, as after a crashed test run.
            let dead = try #require((4_000_000 - 1_000 ..< 4_000_000).map { pid_t($0) }.first { kill($0, 0) != 0 && errno == ESRCH })
            let leftover = "\(NetworkLab.namePrefix)\(dead)-beef-pub"
            _ = try Tool.run("ip", ["netns", "add", leftover])
            let lab = try NetworkLab()
            defer { lab.close() }
            let namespaces = try Tool.run("ip", ["netns", "list"]).stdout
            #expect(!namespaces.contains(leftover), "\(namespaces)")
            #expect(namespaces.contains(lab.publicNamespace.name))
        }
    }

    @Test func coturnOnLoopbackAnswersAndRestartsOnItsPort() async throws {
        try await Heavy.runAlone {
            let coturn = try Coturn(loopbackRealm: "loop.test")
            try coturn.start()
            defer { coturn.stop() }
            let file = try String(contentsOfFile: coturn.configuration.configurationPath, encoding: .utf8)
            #expect(file.split(separator: "\n").contains("allow-loopback-peers"))
            // The secret is in its config file only: no process's command line shows it.
            // Through FileHandle: swift-foundation's Data(contentsOf:) leaks its 4 KB buffer when
            // the process goes between the open and the read (LeakSanitizer saw 60 here).
            let commandLines = ((try? FileManager.default.contentsOfDirectory(atPath: "/proc")) ?? []).map {
                BackgroundProcess.text(of: URL(fileURLWithPath: "/proc/\($0)/cmdline"))
            }
            #expect(commandLines.contains { $0.contains("turnserver") })
            #expect(!commandLines.contains { $0.contains(coturn.secret) })
            let port = coturn.port
            #expect(LivePort.stableRange.contains(port))
            let first = try STUNProbe.mappedAddress(of: coturn.serverAddress)
            #expect(first?.mapped.host == "127.0.0.1")
            #expect(first?.mapped.port == first?.local.port)
            try coturn.restart()
            #expect(coturn.port == port)
            #expect(try STUNProbe.mappedAddress(of: coturn.serverAddress) != nil)
            coturn.stop()
            #expect(!coturn.isRunning)
            #expect(try STUNProbe.mappedAddress(of: coturn.serverAddress, timeout: 0.3) == nil, "a stopped server answers nothing")
        }
    }

    @Test func restCredentialsAreHMACSHA1OfTheUsername() {
        // openssl: printf %s "1700000000:alice" | openssl dgst -sha1 -hmac secret -binary | base64
        let credentials = Coturn.credentials(secret: "secret", account: "alice", expiry: 1_700_000_000)
        #expect(credentials.username == "1700000000:alice")
        #expect(credentials.password == "d8soP47RbdIKLDUOpnJPVQyq5Ts=")
    }
}
