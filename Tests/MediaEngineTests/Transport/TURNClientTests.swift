import Testing
@testable import MediaEngine

/// The TURN client's state machine against a scripted server on a manual clock.
@Suite struct TURNClientTests {
    /// Plays the server: answers the client's requests the way coturn does.
    struct ScriptedServer {
        let address = try! SocketAddress(host: "203.0.113.1", port: 3_478)
        let credentials = TURNCredentials(username: "1700000000:alice", password: "c2VjcmV0")
        let realm = "media.test"
        var nonce = "nonce-1"
        let relayed = try! SocketAddress(host: "203.0.113.1", port: 49_200)
        let mapped = try! SocketAddress(host: "198.51.100.7", port: 40_000)

        var key: STUNIntegrityKey {
            try! STUNIntegrityKey.longTerm(username: credentials.username, realm: realm, password: credentials.password)
        }

        func challenge(_ request: STUNMessage, code: Int = 401) -> [UInt8] {
            STUNMessage(type: errorType(request), transactionID: request.transactionID, attributes: [
                .errorCode(code: code, reason: code == 401 ? "Unauthorized" : "Stale Nonce"), .realm(realm), .nonce(nonce),
            ]).serialized(fingerprint: true)
        }

        func success(_ request: STUNMessage, _ attributes: [STUNMessage.Attribute] = [], key: STUNIntegrityKey? = nil) -> [UInt8] {
            let type = STUNMessage.MessageType(method: request.type.method, messageClass: .successResponse)
            return STUNMessage(type: type, transactionID: request.transactionID, attributes: attributes)
                .serialized(integrity: key ?? self.key, fingerprint: true)
        }

        func allocated(_ request: STUNMessage, lifetime: UInt32 = 600) -> [UInt8] {
            success(request, [.xorRelayedAddress(relayed), .xorMappedAddress(mapped), .lifetime(lifetime)])
        }

        func error(_ request: STUNMessage, _ code: Int, signed: Bool = true) -> [UInt8] {
            STUNMessage(type: errorType(request), transactionID: request.transactionID, attributes: [
                .errorCode(code: code, reason: "refused"),
            ]).serialized(integrity: signed ? key : nil, fingerprint: true)
        }

        private func errorType(_ request: STUNMessage) -> STUNMessage.MessageType {
            STUNMessage.MessageType(method: request.type.method, messageClass: .errorResponse)
        }
    }

    static let peer = try! SocketAddress(host: "192.0.2.10", port: 5_000)

    /// Drains the client's actions.
    static func drain(_ client: inout TURNClient) -> (sent: [[UInt8]], events: [TURNClient.Event]) {
        var sent: [[UInt8]] = []
        var events: [TURNClient.Event] = []
        while let action = client.nextAction() {
            switch action {
            case .transmit(let bytes): sent.append(bytes)
            case .event(let event): events.append(event)
            }
        }
        return (sent, events)
    }

    static func only(_ sent: [[UInt8]], sourceLocation: SourceLocation = #_sourceLocation) throws -> STUNMessage {
        try #require(sent.count == 1, "sent \(sent.count) datagrams", sourceLocation: sourceLocation)
        return try STUNMessage(parsing: sent[0])
    }

    /// A client taken through the challenge to `.allocated` at time 0.
    static func allocatedClient(_ server: ScriptedServer, maximumPeers: Int = 64) throws -> TURNClient {
        var configuration = TURNClient.Configuration(server: server.address, credentials: server.credentials)
        configuration.maximumPeers = maximumPeers
        var client = TURNClient(configuration: configuration)
        client.start(now: .zero)
        let first = try only(drain(&client).sent)
        #expect(client.receive(server.challenge(first), from: server.address, now: .zero) == .handled)
        let second = try only(drain(&client).sent)
        #expect(client.receive(server.allocated(second), from: server.address, now: .zero) == .handled)
        _ = drain(&client)
        try #require(client.state == .allocated)
        return client
    }

    @Test func challengeThenAllocate() throws {
        let server = ScriptedServer()
        var client = TURNClient(configuration: .init(server: server.address, credentials: server.credentials))
        client.start(now: .zero)
        #expect(client.state == .allocating)
        let firstBytes = try #require(Self.drain(&client).sent.first)
        let first = try STUNMessage(parsing: firstBytes)
        #expect(first.type == .allocateRequest)
        #expect(first.attributes.contains(.requestedTransport(17)))
        #expect(first.username == nil)
        #expect(!first.attributes.contains { $0.type == STUNMessage.Attribute.messageIntegrityType })
        #expect(STUNMessage.verifyFingerprint(firstBytes))

        #expect(client.receive(server.challenge(first), from: server.address, now: .milliseconds(20)) == .handled)
        let (sent, events) = Self.drain(&client)
        #expect(events.isEmpty)
        let secondBytes = try #require(sent.first)
        let second = try STUNMessage(parsing: secondBytes)
        #expect(second.type == .allocateRequest)
        #expect(second.transactionID != first.transactionID)
        #expect(second.username == server.credentials.username)
        #expect(second.realm == server.realm)
        #expect(second.nonce == server.nonce)
        #expect(second.verifyIntegrity(server.key, in: secondBytes))
        #expect(STUNMessage.verifyFingerprint(secondBytes))

        #expect(client.receive(server.allocated(second), from: server.address, now: .milliseconds(40)) == .handled)
        #expect(Self.drain(&client).events == [.allocated(relayed: server.relayed, mapped: server.mapped, lifetime: .seconds(600))])
        #expect(client.state == .allocated)
        #expect(client.relayedAddress == server.relayed)
        #expect(client.mappedAddress == server.mapped)
        #expect(client.statistics.requestsSent == 2)
        #expect(client.statistics.errorsByCode == [401: 1])
        #expect(client.statistics.retransmissions == 0)
    }

    @Test func refreshesAMinuteBeforeTheLifetimeEnds() throws {
        let server = ScriptedServer()
        var client = try Self.allocatedClient(server)
        #expect(client.nextDeadline == .seconds(540))
        client.update(now: .seconds(539))
        #expect(Self.drain(&client).sent.isEmpty)
        client.update(now: .seconds(540))
        let refreshBytes = try #require(Self.drain(&client).sent.first)
        let refresh = try STUNMessage(parsing: refreshBytes)
        #expect(refresh.type == .refreshRequest)
        #expect(refresh.lifetime == 600)
        #expect(refresh.verifyIntegrity(server.key, in: refreshBytes))
        // The server grants only 300 s: the next refresh comes 240 s later.
        #expect(client.receive(server.success(refresh, [.lifetime(300)]), from: server.address, now: .seconds(540)) == .handled)
        #expect(Self.drain(&client).events == [.refreshed(lifetime: .seconds(300))])
        #expect(client.nextDeadline == .seconds(780))
        #expect(TURNClient.refreshDelay(.seconds(100)) == .seconds(50))  // never before half
    }

    @Test func staleNonceIsRetriedWithTheNewNonce() throws {
        var server = ScriptedServer()
        var client = TURNClient(configuration: .init(server: server.address, credentials: server.credentials))
        client.start(now: .zero)
        let first = try Self.only(Self.drain(&client).sent)
        _ = client.receive(server.challenge(first), from: server.address, now: .zero)
        let second = try Self.only(Self.drain(&client).sent)
        server.nonce = "nonce-2"
        #expect(client.receive(server.challenge(second, code: 438), from: server.address, now: .zero) == .handled)
        let thirdBytes = try #require(Self.drain(&client).sent.first)
        let third = try STUNMessage(parsing: thirdBytes)
        #expect(third.nonce == "nonce-2")
        #expect(third.verifyIntegrity(server.key, in: thirdBytes))
        _ = client.receive(server.allocated(third), from: server.address, now: .zero)
        #expect(client.state == .allocated)
        #expect(client.statistics.errorsByCode == [401: 1, 438: 1])
    }

    @Test(arguments: [
        (486, TURNError.Code.allocationQuotaReached), (508, .insufficientCapacity), (437, .allocationMismatch),
        (401, .unauthorized), (403, .forbidden), (500, .serverError),
    ])
    func allocateErrorsAreTyped(code: Int, expected: TURNError.Code) throws {
        let server = ScriptedServer()
        var client = TURNClient(configuration: .init(server: server.address, credentials: server.credentials))
        client.start(now: .zero)
        let first = try Self.only(Self.drain(&client).sent)
        _ = client.receive(server.challenge(first), from: server.address, now: .zero)
        let second = try Self.only(Self.drain(&client).sent)
        // A 401 to a signed request means wrong or expired credentials, not a challenge.
        #expect(client.receive(server.error(second, code, signed: code != 401), from: server.address, now: .zero) == .handled)
        let (sent, events) = Self.drain(&client)
        #expect(sent.isEmpty)
        guard case .failed(let error) = client.state else {
            Issue.record("state \(client.state)")
            return
        }
        #expect(error.code == expected)
        #expect(error.stunErrorCode == code)
        #expect(error.description.contains("\(code)"))
        #expect(events == [.failed(error)])
    }

    @Test func unansweredRequestsRetransmitThenTimeOut() throws {
        let server = ScriptedServer()
        var client = TURNClient(configuration: .init(server: server.address, credentials: server.credentials))
        client.start(now: .zero)
        var sentAt: [Duration] = [.zero]
        var first: [UInt8]?
        first = Self.drain(&client).sent.first
        var failedAt: Duration?
        while let deadline = client.nextDeadline, failedAt == nil {
            client.update(now: deadline)
            let (sent, events) = Self.drain(&client)
            for bytes in sent {
                #expect(bytes == first)  // a retransmission repeats the bytes, transaction ID included
                sentAt.append(deadline)
            }
            if case .failed(let error)? = events.first {
                #expect(error.code == .timeout)
                failedAt = deadline
            }
        }
        let expected: [Duration] = [0, 500, 1_500, 3_500, 5_500, 7_500, 9_500].map { (milliseconds: Int) -> Duration in .milliseconds(milliseconds) }
        #expect(sentAt == expected)
        #expect(failedAt == .milliseconds(11_500))
        #expect(client.statistics.retransmissions == 6)
        #expect(client.statistics.requestsSent == 1)
        guard case .failed(let error) = client.state else { Issue.record("state \(client.state)"); return }
        #expect(error.code == .timeout)
    }

    @Test func forgedMalformedAndStrayResponsesAreIgnored() throws {
        let server = ScriptedServer()
        var client = TURNClient(configuration: .init(server: server.address, credentials: server.credentials))
        client.start(now: .zero)
        let first = try Self.only(Self.drain(&client).sent)
        _ = client.receive(server.challenge(first), from: server.address, now: .zero)
        let request = try Self.only(Self.drain(&client).sent)
        let wrongKey = try STUNIntegrityKey.longTerm(username: "mallory", realm: server.realm, password: "guess")
        let unsigned = STUNMessage(type: .allocateSuccess, transactionID: request.transactionID, attributes: [
            .xorRelayedAddress(server.relayed), .lifetime(600),
        ]).serialized()
        let forged = server.success(request, [.xorRelayedAddress(server.relayed), .lifetime(600)], key: wrongKey)
        let stray = STUNMessage(type: .allocateSuccess, transactionID: .random(), attributes: []).serialized(integrity: server.key)
        let wrongMethod = STUNMessage(type: .refreshSuccess, transactionID: request.transactionID).serialized(integrity: server.key)
        var truncated = server.allocated(request)
        truncated.removeLast(4)
        let elsewhere = try SocketAddress(host: "203.0.113.99", port: 3_478)
        let ignored: [([UInt8], SocketAddress)] = [
            (unsigned, server.address), (forged, server.address), (stray, server.address), (wrongMethod, server.address),
            (truncated, server.address), ([0xDE, 0xAD], server.address), (server.allocated(request), elsewhere),
            ([0x40, 0x00, 0x00, 0x00], server.address),  // ChannelData on an unbound channel
        ]
        for (bytes, source) in ignored {
            #expect(client.receive(bytes, from: source, now: .zero) == .ignored)
        }
        #expect(client.state == .allocating)
        #expect(client.statistics.ignoredDatagrams == ignored.count)
        #expect(Self.drain(&client).events.isEmpty)
        #expect(client.receive(server.allocated(request), from: server.address, now: .zero) == .handled)
        #expect(client.state == .allocated)
    }

    @Test func permissionsChannelsAndDataBothWays() throws {
        let server = ScriptedServer()
        var client = try Self.allocatedClient(server)
        let peer = Self.peer

        #expect(throws: TURNError.self) { try client.data([1], to: peer) }  // no permission yet
        try client.createPermission(for: peer, now: .seconds(1))
        let permissionBytes = try #require(Self.drain(&client).sent.first)
        let permission = try STUNMessage(parsing: permissionBytes)
        #expect(permission.type == .createPermissionRequest)
        #expect(permission.xorPeerAddress == peer)
        #expect(permission.verifyIntegrity(server.key, in: permissionBytes))
        _ = client.receive(server.success(permission), from: server.address, now: .seconds(1))
        #expect(Self.drain(&client).events == [.permissionCreated(peer: peer)])

        // Without a channel: Send indication out, Data indication in.
        let send = try STUNMessage(parsing: client.data([1, 2, 3, 4, 5], to: peer))
        #expect(send.type == .sendIndication)
        #expect(send.xorPeerAddress == peer)
        #expect(send.data == [1, 2, 3, 4, 5])
        let indication = STUNMessage(type: .dataIndication, transactionID: .random(), attributes: [
            .xorPeerAddress(peer), .data([9, 8, 7]),
        ]).serialized()
        guard case .data(let from, let range) = client.receive(indication, from: server.address, now: .seconds(2)) else {
            Issue.record("Data indication not delivered")
            return
        }
        #expect(from == peer)
        #expect(Array(indication[range]) == [9, 8, 7])
        let stranger = STUNMessage(type: .dataIndication, transactionID: .random(), attributes: [
            .xorPeerAddress(try SocketAddress(host: "192.0.2.99", port: 1)), .data([1]),
        ]).serialized()
        #expect(client.receive(stranger, from: server.address, now: .seconds(2)) == .ignored)

        // With a channel: ChannelData both ways.
        let channel = try client.bindChannel(to: peer, now: .seconds(3))
        #expect(channel == 0x4000)
        #expect(try client.bindChannel(to: peer, now: .seconds(3)) == 0x4000)
        let bindBytes = try #require(Self.drain(&client).sent.first)
        let bind = try STUNMessage(parsing: bindBytes)
        #expect(bind.type == .channelBindRequest)
        #expect(bind.attributes.contains(.channelNumber(0x4000)))
        #expect(client.boundChannel(for: peer) == nil)
        _ = client.receive(server.success(bind), from: server.address, now: .seconds(3))
        #expect(Self.drain(&client).events == [.channelBound(peer: peer, channel: 0x4000)])
        #expect(try client.data([1, 2, 3, 4, 5], to: peer) == [0x40, 0x00, 0x00, 0x05, 1, 2, 3, 4, 5, 0, 0, 0])
        let incoming: [UInt8] = [0x40, 0x00, 0x00, 0x02, 0xAB, 0xCD, 0x00, 0x00]
        #expect(client.receive(incoming, from: server.address, now: .seconds(4)) == .data(peer: peer, payload: 4..<6))
        #expect(client.statistics.bytesSent == 10)
        #expect(client.statistics.bytesReceived == 5)
        #expect(client.statistics.packetsReceived == 2)

        // Refreshes: the permission 240 s after the ChannelBind (which refreshed it too),
        // the channel every 540 s.
        client.update(now: .seconds(242))
        #expect(Self.drain(&client).sent.isEmpty)
        client.update(now: .seconds(243))
        let refreshed = try Self.only(Self.drain(&client).sent)
        #expect(refreshed.type == .createPermissionRequest)
        _ = client.receive(server.success(refreshed), from: server.address, now: .seconds(243))
        #expect(Self.drain(&client).events.isEmpty)  // already installed: no new event
        client.update(now: .seconds(543))
        let (sent, _) = Self.drain(&client)
        let types = try sent.map { try STUNMessage(parsing: $0).type }
        #expect(types.contains(.channelBindRequest))
        #expect(types.contains(.refreshRequest))
    }

    @Test func tablesAreBounded() throws {
        let server = ScriptedServer()
        var client = try Self.allocatedClient(server, maximumPeers: 2)
        try client.createPermission(for: SocketAddress(host: "192.0.2.1", port: 1), now: .zero)
        try client.createPermission(for: SocketAddress(host: "192.0.2.1", port: 2), now: .zero)  // same IP: same entry
        try client.createPermission(for: SocketAddress(host: "192.0.2.2", port: 1), now: .zero)
        let error = #expect(throws: TURNError.self) {
            try client.createPermission(for: SocketAddress(host: "192.0.2.3", port: 1), now: .zero)
        }
        #expect(error?.code == .tooManyPeers)
        try client.bindChannel(to: SocketAddress(host: "192.0.2.1", port: 1), now: .zero)
        try client.bindChannel(to: SocketAddress(host: "192.0.2.1", port: 2), now: .zero)
        let channelError = #expect(throws: TURNError.self) {
            try client.bindChannel(to: SocketAddress(host: "192.0.2.2", port: 3), now: .zero)
        }
        #expect(channelError?.code == .tooManyPeers)

        var idle = TURNClient(configuration: .init(server: server.address, credentials: server.credentials))
        let notAllocated = #expect(throws: TURNError.self) { try idle.createPermission(for: Self.peer, now: .zero) }
        #expect(notAllocated?.code == .notAllocated)
        #expect(throws: TURNError.self) { try idle.data([1], to: Self.peer) }
    }

    @Test func refusedBindingsAndLostAllocationsAreReported() throws {
        let server = ScriptedServer()
        var client = try Self.allocatedClient(server)
        let channel = try client.bindChannel(to: Self.peer, now: .seconds(1))
        let bind = try Self.only(Self.drain(&client).sent)
        _ = client.receive(server.error(bind, 403), from: server.address, now: .seconds(1))
        let events = Self.drain(&client).events
        guard case .channelBindFailed(let peer, let error)? = events.first else {
            Issue.record("events \(events)")
            return
        }
        #expect(peer == Self.peer)
        #expect(error.code == .forbidden)
        #expect(client.boundChannel(for: Self.peer) == nil)
        // The permission the binding made for itself went with it.
        let noPermission = #expect(throws: TURNError.self) { try client.data([1], to: Self.peer) }
        #expect(noPermission?.code == .noPermission)
        // Numbers advance: a refused one is not offered again at once.
        #expect(channel == 0x4000)
        #expect(try client.bindChannel(to: Self.peer, now: .seconds(2)) == 0x4001)
        _ = Self.drain(&client)

        // A Refresh answered 437: the allocation is gone.
        client.update(now: .seconds(540))
        let refresh = try #require(Self.drain(&client).sent.compactMap { try? STUNMessage(parsing: $0) }.first { $0.type == .refreshRequest })
        _ = client.receive(server.error(refresh, 437), from: server.address, now: .seconds(540))
        guard case .failed(let lost) = client.state else {
            Issue.record("state \(client.state)")
            return
        }
        #expect(lost.code == .allocationMismatch)
        #expect(Self.drain(&client).events.contains(.failed(lost)))
        #expect(client.nextDeadline == nil)
        #expect(throws: TURNError.self) { try client.data([1], to: Self.peer) }
    }

    @Test func closeDeletesTheAllocation() throws {
        let server = ScriptedServer()
        var client = try Self.allocatedClient(server)
        client.close(now: .seconds(10))
        #expect(client.state == .closing)
        let refreshBytes = try #require(Self.drain(&client).sent.first)
        let refresh = try STUNMessage(parsing: refreshBytes)
        #expect(refresh.type == .refreshRequest)
        #expect(refresh.lifetime == 0)
        #expect(refresh.verifyIntegrity(server.key, in: refreshBytes))
        _ = client.receive(server.success(refresh, [.lifetime(0)]), from: server.address, now: .seconds(10))
        #expect(client.state == .closed)
        #expect(Self.drain(&client).events == [.closed])
        #expect(client.nextDeadline == nil)
    }

    @Test func restCredentialsMatchCoturnsFormula() {
        let credentials = TURNCredentials.restAPI(secret: "north", account: "alice", expiresAt: 1_700_000_000)
        #expect(credentials.username == "1700000000:alice")
        // base64(HMAC-SHA1("north", "1700000000:alice")), computed independently with
        // `printf %s 1700000000:alice | openssl dgst -sha1 -hmac north -binary | base64`.
        #expect(credentials.password == Self.restPasswordFromOpenSSL)
    }

    static let restPasswordFromOpenSSL = "Cd/49soE35ICqcJF/bCTn8Z4OyE="
}
