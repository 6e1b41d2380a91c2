import Foundation
import Testing
import TestSupport
@testable import MediaEngine

/// The TURN client against a real coturn on loopback, through real UDP sockets.
@Suite struct TURNCoturnTests {
    static let realm = "media.test"

    /// coturn on loopback (TestSupport's `Coturn`), started, with a secret of its own.
    static func coturn(userQuota: Int? = nil) throws -> Coturn {
        var options = Coturn.Options()
        options.userQuota = userQuota
        let coturn = try Coturn(loopbackRealm: realm, options: options)
        try coturn.start()
        return coturn
    }

    /// Moves a `TURNClient`'s datagrams through a UDP socket on a real clock.
    final class Driver {
        var client: TURNClient
        let socket: UDPSocket
        let start = ContinuousClock.now
        var events: [TURNClient.Event] = []
        /// Payloads from peers, in arrival order.
        var received: [(peer: SocketAddress, payload: [UInt8])] = []

        init(server: SocketAddress, credentials: TURNCredentials) throws {
            socket = try UDPSocket(bindTo: SocketAddress(host: "127.0.0.1", port: 0))
            client = TURNClient(configuration: .init(server: server, credentials: credentials))
        }

        deinit { socket.close() }

        var now: Duration { ContinuousClock.now - start }

        /// Sends what the client queued and keeps its events.
        func flush() throws {
            while let action = client.nextAction() {
                switch action {
                case .transmit(let bytes):
                    try bytes.withUnsafeBytes { try socket.send($0, to: client.configuration.server) }
                case .event(let event):
                    events.append(event)
                }
            }
        }

        /// Runs the client until `done` holds or `timeout` passes.
        /// - Returns: whether `done` held.
        @discardableResult
        func run(timeout: Duration, until done: (Driver) -> Bool) throws -> Bool {
            var buffer = [UInt8](repeating: 0, count: 2_048)
            let end = now + timeout
            while now < end {
                try flush()
                if done(self) { return true }
                let wait = min(client.nextDeadline.map { max($0 - now, .zero) } ?? .milliseconds(20), .milliseconds(20))
                let arrival = try buffer.withUnsafeMutableBytes { try socket.receive(into: $0, timeout: wait) }
                if let (count, source) = arrival {
                    let result = buffer.withUnsafeBytes { client.receive(UnsafeRawBufferPointer(rebasing: $0[0..<count]), from: source, now: now) }
                    if case .data(let peer, let range) = result { received.append((peer, Array(buffer[range]))) }
                }
                client.update(now: now)
            }
            try flush()
            return done(self)
        }

        /// Sends `payload` to `peer` through the relay.
        func send(_ payload: [UInt8], to peer: SocketAddress) throws {
            var buffer = [UInt8](repeating: 0, count: payload.count + 64)
            let count = try payload.withUnsafeBytes { payload in
                try buffer.withUnsafeMutableBytes { try client.writeData(payload, to: peer, into: $0) }
            }
            try buffer.withUnsafeBytes { try socket.send(UnsafeRawBufferPointer(rebasing: $0[0..<count]), to: client.configuration.server) }
        }

        var failure: TURNError? {
            if case .failed(let error) = client.state { return error }
            return nil
        }
    }

    static func credentials(expiresIn seconds: Int, secret: String, account: String = "alice") -> TURNCredentials {
        TURNCredentials.restAPI(secret: secret, account: account, expiresAt: Int(Date().timeIntervalSince1970) + seconds)
    }

    static func server(_ coturn: Coturn) throws -> SocketAddress { coturn.serverAddress }

    /// Payloads of several sizes, each unique: a datagram's index and a fill byte.
    static func payload(_ index: Int) -> [UInt8] {
        [UInt8(index)] + [UInt8](repeating: UInt8(truncatingIfNeeded: index &* 37 &+ 11), count: [1, 3, 160, 1_199][index % 4])
    }

    @Test func allocatesAndRelaysBothWaysThroughCoturn() async throws {
        try await Heavy.run {
            let coturn = try Self.coturn()
            let driver = try Driver(server: Self.server(coturn), credentials: Self.credentials(expiresIn: 600, secret: coturn.secret))
            let peer = try UDPSocket(bindTo: SocketAddress(host: "127.0.0.1", port: 0))
            defer { peer.close() }

            driver.client.start(now: driver.now)
            let allocated = try driver.run(timeout: .seconds(5)) { $0.client.state != .allocating }
            try #require(allocated && driver.client.state == .allocated, "state \(driver.client.state)\n\(coturn.log)")
            let relayed = try #require(driver.client.relayedAddress)
            #expect(relayed.host == "127.0.0.1")
            #expect(coturn.options.relayPorts.contains(relayed.port))
            #expect(driver.client.mappedAddress == driver.socket.localAddress)
            #expect(driver.client.statistics.errorsByCode == [401: 1])

            // Send indications and Data indications, with a permission only.
            try driver.client.createPermission(for: peer.localAddress, now: driver.now)
            try #require(try driver.run(timeout: .seconds(3)) { $0.events.contains(.permissionCreated(peer: peer.localAddress)) })
            var buffer = [UInt8](repeating: 0, count: 2_048)
            for index in 0..<4 {
                try driver.send(Self.payload(index), to: peer.localAddress)
                let (count, source) = try #require(try buffer.withUnsafeMutableBytes { try peer.receive(into: $0, timeout: .seconds(2)) })
                #expect(source == relayed)
                #expect(Array(buffer[0..<count]) == Self.payload(index))
                try Self.payload(100 + index).withUnsafeBytes { try peer.send($0, to: relayed) }
            }
            try driver.run(timeout: .seconds(2)) { $0.received.count == 4 }
            #expect(driver.received.map(\.payload) == (100..<104).map(Self.payload))
            #expect(driver.received.allSatisfy { $0.peer == peer.localAddress })

            // ChannelData, once the channel is bound.
            let channel = try driver.client.bindChannel(to: peer.localAddress, now: driver.now)
            try #require(try driver.run(timeout: .seconds(3)) { $0.events.contains(.channelBound(peer: peer.localAddress, channel: channel)) })
            driver.received.removeAll()
            for index in 0..<20 {
                try driver.send(Self.payload(index), to: peer.localAddress)
                let (count, source) = try #require(try buffer.withUnsafeMutableBytes { try peer.receive(into: $0, timeout: .seconds(2)) })
                #expect(source == relayed)
                #expect(Array(buffer[0..<count]) == Self.payload(index))
                try Self.payload(200 + index).withUnsafeBytes { try peer.send($0, to: relayed) }
            }
            try driver.run(timeout: .seconds(2)) { $0.received.count == 20 }
            #expect(driver.received.map(\.payload) == (200..<220).map(Self.payload))
            let statistics = driver.client.statistics
            #expect(statistics.packetsSent == 24)
            #expect(statistics.packetsReceived == 24)
            #expect(statistics.bytesSent == (0..<4).map { Self.payload($0).count }.reduce(0, +) + (0..<20).map { Self.payload($0).count }.reduce(0, +))
            #expect(statistics.ignoredDatagrams == 0)

            driver.client.close(now: driver.now)
            try #require(try driver.run(timeout: .seconds(3)) { $0.client.state == .closed })
            #expect(driver.events.last == .closed)
            let log = coturn.log
            #expect(log.contains("ALLOCATE processed, success"), "\(log)")
            #expect(log.contains("CHANNEL_BIND processed, success"), "\(log)")
            let username: String = driver.client.configuration.credentials.username
            #expect(log.contains(username), "\(log)")
        }
    }

    @Test func wrongSecretAndExpiredCredentialsAreUnauthorized() async throws {
        try await Heavy.run {
            let coturn = try Self.coturn()
            let rows: [(String, TURNCredentials)] = [
                ("wrong secret", Self.credentials(expiresIn: 600, secret: "south-secret")),
                ("expired", Self.credentials(expiresIn: -60, secret: coturn.secret)),
            ]
            for (name, credentials) in rows {
                let driver = try Driver(server: Self.server(coturn), credentials: credentials)
                driver.client.start(now: driver.now)
                try driver.run(timeout: .seconds(5)) { $0.client.state != .allocating }
                let error = try #require(driver.failure, "\(name): state \(driver.client.state)")
                #expect(error.code == .unauthorized, "\(name): \(error)")
                #expect(error.stunErrorCode == 401, "\(name)")
                #expect(driver.client.statistics.errorsByCode[401] == 2, "\(name)")  // the challenge, then the refusal
            }
        }
    }

    @Test func allocationQuotaIsTyped486() async throws {
        try await Heavy.run {
            let coturn = try Self.coturn(userQuota: 1)
            let credentials = Self.credentials(expiresIn: 600, secret: coturn.secret)
            let first = try Driver(server: Self.server(coturn), credentials: credentials)
            first.client.start(now: first.now)
            try first.run(timeout: .seconds(5)) { $0.client.state != .allocating }
            try #require(first.client.state == .allocated, "state \(first.client.state)\n\(coturn.log)")

            let second = try Driver(server: Self.server(coturn), credentials: credentials)
            second.client.start(now: second.now)
            try second.run(timeout: .seconds(5)) { $0.client.state != .allocating }
            let error = try #require(second.failure, "state \(second.client.state)")
            #expect(error.code == .allocationQuotaReached, "\(error)")
            #expect(error.stunErrorCode == 486)

            first.client.close(now: first.now)
            try first.run(timeout: .seconds(3)) { $0.client.state == .closed }
        }
    }
}
