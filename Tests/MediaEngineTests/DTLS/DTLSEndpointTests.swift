import Testing
import TestSupport
@testable import MediaEngine

/// Two DTLS endpoints wired back to back on a manual clock: each datagram one sends is
/// handed to the other (unless `drop` says otherwise), 5 ms later in the clock's terms.
private struct Wire {
    let client: DTLSEndpoint
    let server: DTLSEndpoint
    var now = Duration.seconds(100)

    /// Runs until both ends settled (or `limit` of clock passed).
    mutating func run(limit: Duration = .seconds(2)) {
        let end = now + limit
        self.client.start(now: now)
        while now < end {
            var moved = false
            while let datagram = self.client.pollTransmit() {
                moved = true
                datagram.withUnsafeBytes { server.handle($0, now: now) }
            }
            while let datagram = server.pollTransmit() {
                moved = true
                datagram.withUnsafeBytes { self.client.handle($0, now: now) }
            }
            if settled(self.client) && settled(server) { return }
            if !moved { now += .milliseconds(5) }
        }
    }

    func settled(_ endpoint: DTLSEndpoint) -> Bool {
        switch endpoint.state {
        case .connected, .closed, .failed: true
        case .new, .connecting: false
        }
    }
}

@Suite struct DTLSEndpoints {
    @Test func bothEndsAgreeOnGCMKeysThatProtectEachOthersPackets() throws {
        let (clientCertificate, serverCertificate) = (try DTLSCertificate(), try DTLSCertificate())
        var wire = Wire(client: try DTLSEndpoint(role: .client, certificate: clientCertificate, remoteFingerprints: [serverCertificate.fingerprint]),
                        server: try DTLSEndpoint(role: .server, certificate: serverCertificate, remoteFingerprints: [clientCertificate.fingerprint]))
        wire.run()
        let client = try #require(wire.client.keys, "client: \(wire.client.state)")
        let server = try #require(wire.server.keys, "server: \(wire.server.state)")
        #expect(client.profile == .aeadAES128GCM && server.profile == .aeadAES128GCM)
        #expect(client.local == server.remote && client.remote == server.local && client.local != client.remote)
        #expect(wire.client.statistics.malformedDatagrams == 0 && wire.server.statistics.malformedDatagrams == 0)

        // What the client protects with its key, the server's SRTP context for the client opens.
        let sender = try SRTPContext(keying: client.local, direction: .outbound)
        let receiver = try SRTPContext(keying: server.remote, direction: .inbound)
        var packet = [UInt8](repeating: 0, count: 1_600)
        packet[0] = 0x80
        packet[1] = 111
        packet[11] = 7
        for index in 12..<100 { packet[index] = UInt8(index) }
        let plain = Array(packet[0..<100])
        let protected = try packet.withUnsafeMutableBytes { try sender.protect($0, length: 100) }
        let opened = try packet.withUnsafeMutableBytes { try receiver.unprotect($0, length: protected) }
        #expect(Array(packet[0..<opened]) == plain)
    }

    @Test func aCertificateThatMatchesNoFingerprintIsRefused() throws {
        let (clientCertificate, serverCertificate, stranger) = (try DTLSCertificate(), try DTLSCertificate(), try DTLSCertificate())
        // The client was told the stranger's fingerprint: the real server's certificate fails.
        var wire = Wire(client: try DTLSEndpoint(role: .client, certificate: clientCertificate, remoteFingerprints: [stranger.fingerprint]),
                        server: try DTLSEndpoint(role: .server, certificate: serverCertificate, remoteFingerprints: [clientCertificate.fingerprint]))
        wire.run()
        guard case .failed(let error) = wire.client.state else { Issue.record("client: \(wire.client.state)"); return }
        #expect(error.code == .fingerprintMismatch && error.message.contains(serverCertificate.fingerprint.description))
        #expect(wire.client.keys == nil)
    }

    @Test func garbageIsCountedAndTheHandshakeGoesOn() throws {
        let (clientCertificate, serverCertificate) = (try DTLSCertificate(), try DTLSCertificate())
        let client = try DTLSEndpoint(role: .client, certificate: clientCertificate, remoteFingerprints: [serverCertificate.fingerprint])
        let server = try DTLSEndpoint(role: .server, certificate: serverCertificate, remoteFingerprints: [clientCertificate.fingerprint])
        let garbage: [[UInt8]] = [[], [22], [UInt8](repeating: 0x17, count: 40), [22, 0xFE, 0xFD] + [UInt8](repeating: 0xFF, count: 60)]
        for datagram in garbage { datagram.withUnsafeBytes { server.handle($0, now: .zero) } }
        #expect(server.statistics.malformedDatagrams == garbage.count)
        var wire = Wire(client: client, server: server)
        wire.run()
        #expect(client.keys != nil && server.keys != nil, "client \(client.state), server \(server.state)")
    }

    /// The server's last flight is lost: the client sends its own again on OpenSSL's timer,
    /// and the server, connected already, answers it. (That timer counts real time, so the
    /// loop runs in real time, the manual clock kept in step.)
    @Test func aLostFinalFlightIsSentAgainAndTheHandshakeCompletes() throws {
        let (clientCertificate, serverCertificate) = (try DTLSCertificate(), try DTLSCertificate())
        let client = try DTLSEndpoint(role: .client, certificate: clientCertificate, remoteFingerprints: [serverCertificate.fingerprint],
                                      initialRetransmission: .milliseconds(20))
        let server = try DTLSEndpoint(role: .server, certificate: serverCertificate, remoteFingerprints: [clientCertificate.fingerprint],
                                      initialRetransmission: .milliseconds(20))
        var now = Duration.seconds(1)
        var droppedFinalFlight = false
        client.start(now: now)
        let connected = eventuallyBlocking(timeout: .seconds(5), every: .milliseconds(5)) {
            now += .milliseconds(5)
            while let datagram = client.pollTransmit() { datagram.withUnsafeBytes { server.handle($0, now: now) } }
            if server.keys != nil && !droppedFinalFlight {
                while server.pollTransmit() != nil {}
                droppedFinalFlight = true
            }
            while let datagram = server.pollTransmit() { datagram.withUnsafeBytes { client.handle($0, now: now) } }
            client.handleTimeout(now: now)
            server.handleTimeout(now: now)
            return client.keys != nil
        }
        #expect(connected && droppedFinalFlight, "client \(client.state), server \(server.state)")
        #expect(client.keys?.local == server.keys?.remote && client.keys?.remote == server.keys?.local)
    }

    @Test func aHandshakeThatNeverFinishesFailsAtItsDeadline() throws {
        let client = try DTLSEndpoint(role: .client, certificate: try DTLSCertificate(), remoteFingerprints: [], handshakeTimeout: .seconds(10))
        client.start(now: .seconds(1))
        #expect(client.pollTransmit() != nil, "a ClientHello")
        let next = try #require(client.nextTimeout)
        #expect(next > .seconds(1) && next <= .seconds(11))
        client.handleTimeout(now: .seconds(11) - .milliseconds(1))
        if case .failed = client.state { Issue.record("failed before its deadline") }
        client.handleTimeout(now: .seconds(11))
        guard case .failed(let error) = client.state else { Issue.record("\(client.state)"); return }
        #expect(error.code == .timeout)
        #expect(client.nextTimeout == nil)
    }

    @Test func fingerprintsReadAndWriteAsSDPDoesAndBadOnesAreTypedErrors() throws {
        let certificate = try DTLSCertificate()
        let text = certificate.fingerprint.description
        #expect(text.hasPrefix("sha-256 ") && text.count == 8 + 32 * 3 - 1)
        #expect(try DTLSFingerprint(sdp: text) == certificate.fingerprint)
        #expect(try DTLSFingerprint(sdp: text.uppercased()) == certificate.fingerprint)
        for bad in ["", "sha-256", "sha-256 AB:CD", "md5 " + String(text.dropFirst(8)), "sha-256 " + String(text.dropFirst(8).dropLast(2)) + "ZZ",
                    "sha-256 " + String(repeating: "AB:", count: 32) + "AB"] {
            #expect(throws: DTLSError.self, "\(bad)") { try DTLSFingerprint(sdp: bad) }
        }
    }
}
