import Foundation
@testable import MediaEngine
@testable import MediaSimulation
import Testing
import TestSupport

/// A client socket that sends numbered datagrams and collects what comes back.
private struct Client {
    let socket: UDPSocket
    let tag: UInt8

    init(tag: UInt8 = 0) throws {
        socket = try UDPSocket(bindTo: SocketAddress(host: "127.0.0.1", port: 0))
        self.tag = tag
    }

    /// Sends `count` datagrams of `size` bytes (tag, then a 32-bit number) to `address`.
    /// With `proxy` (the one at `address`), ten at a time, each ten once the proxy has taken
    /// in those before, so no buffer on the way overflows.
    func send(_ count: Int, to address: SocketAddress, size: Int = 100, pacedBy proxy: UDPImpairmentProxy? = nil, from first: Int = 0) throws {
        let taken = proxy?.statistics.upstream.impairment.packets ?? 0
        var bytes = [UInt8](repeating: 0, count: size)
        for (index, number) in (first..<first + count).enumerated() {
            bytes[0] = tag
            withUnsafeBytes(of: UInt32(number).bigEndian) { bytes.replaceSubrange(1..<5, with: $0) }
            try bytes.withUnsafeBytes { try socket.send($0, to: address) }
            if let proxy, (index + 1) % 10 == 0 {
                eventuallyBlocking { proxy.statistics.upstream.impairment.packets >= taken + index + 1 }
            }
        }
    }

    /// Receives until `count` datagrams came or nothing came for `quiet`.
    /// - Returns: (tag, number, sender, receive time) of each.
    func receive(upTo count: Int, quiet: Duration = .milliseconds(400)) throws -> [(tag: UInt8, number: Int, from: SocketAddress, at: ContinuousClock.Instant)] {
        var buffer = [UInt8](repeating: 0, count: 2_048)
        var received: [(tag: UInt8, number: Int, from: SocketAddress, at: ContinuousClock.Instant)] = []
        while received.count < count {
            guard let datagram = try buffer.withUnsafeMutableBytes({ try socket.receive(into: $0, timeout: quiet) }) else { break }
            guard datagram.0 >= 5 else { continue }
            let number = Int(buffer[1..<5].reduce(UInt32(0)) { $0 << 8 | UInt32($1) })
            received.append((buffer[0], number, datagram.1, .now))
        }
        return received
    }
}

private func proxy(to target: SocketAddress, _ change: (inout ImpairmentSettings) -> Void = { _ in },
                   limits: UDPImpairmentProxy.Limits = .init()) throws -> UDPImpairmentProxy {
    var settings = ImpairmentSettings()
    change(&settings)
    let proxy = try UDPImpairmentProxy(listen: SocketAddress(host: "127.0.0.1", port: 0), forward: target,
                                       settings: settings, limits: limits)
    try proxy.start()
    return proxy
}

@Suite struct UDPImpairmentProxies {
    @Test func datagramsReachTheTargetAndEchoesComeBackToTheClient() async throws {
        try await Heavy.run {
            let target = try UDPResponder.echo()
            defer { target.stop() }
            let proxy = try proxy(to: target.localAddress)
            defer { proxy.stop() }
            #expect(proxy.localAddress.port != 0)
            let client = try Client()
            try client.send(200, to: proxy.localAddress, pacedBy: proxy)
            let echoes = try client.receive(upTo: 200)
            #expect(echoes.map(\.number) == Array(0..<200), "a clean link keeps every datagram, in order")
            #expect(echoes.allSatisfy { $0.from == proxy.localAddress }, "replies come from the address the client sent to")
            let senders = target.received
            #expect(senders.count == 1 && senders.values.first == 200)
            #expect(senders.keys.first != client.socket.localAddress, "the target sees the proxy's upstream port")
            proxy.stop()
            let statistics = proxy.statistics
            #expect(statistics.upstream.delivered == 200 && statistics.downstream.delivered == 200)
            #expect(statistics.upstream.bytesSent == 200 * 100)
            #expect(statistics.upstream.lossPercent == 0 && statistics.clientsCreated == 1)
            #expect(statistics.upstream.maximumLateness < .milliseconds(50), "late by \(statistics.upstream.maximumLateness)")
        }
    }

    @Test func thirtyPercentLossEachWayCompletesAboutHalfTheRoundTrips() async throws {
        try await Heavy.run {
            let target = try UDPResponder.echo()
            defer { target.stop() }
            let proxy = try proxy(to: target.localAddress) {
                $0.lossPercent = 30
                $0.seed = 2_024
            }
            defer { proxy.stop() }
            let client = try Client()
            try client.send(400, to: proxy.localAddress, pacedBy: proxy)
            let echoes = try client.receive(upTo: 400)
            proxy.stop()
            let statistics = proxy.statistics
            let completed = Double(echoes.count) / 400
            #expect((0.40...0.58).contains(completed), "\(echoes.count) of 400 round trips completed; 0.7 x 0.7 = 0.49 expected")
            // The upstream model sees the datagrams in the order sent, so its decisions are
            // exactly those of the same model fed 400 packets.
            var model = try ImpairmentModel(settings: proxy.settings)
            for _ in 0..<400 { _ = model.process(size: 100, now: .zero) }
            #expect(statistics.upstream.impairment.lost == model.statistics.lost)
            #expect(statistics.downstream.impairment.packets == statistics.upstream.delivered, "the target echoed everything it got")
            #expect(statistics.downstream.delivered == echoes.count)
            #expect((20...40).contains(statistics.upstream.lossPercent) && (20...40).contains(statistics.downstream.lossPercent))
        }
    }

    @Test func delayIsAppliedEachWay() async throws {
        try await Heavy.run {
            let target = try UDPResponder.echo()
            defer { target.stop() }
            let proxy = try proxy(to: target.localAddress) { $0.delay = .milliseconds(100) }
            defer { proxy.stop() }
            let client = try Client()
            var roundTrips: [Duration] = []
            for number in 0..<5 {
                let sent = ContinuousClock.now
                try client.send(1, to: proxy.localAddress, from: number)
                let echo = try #require(try client.receive(upTo: 1).first)
                roundTrips.append(echo.at - sent)
            }
            // Never less than the two delays. The fastest is at most 60 ms over them: a
            // machine busy with other tests may hold any one up (one took 319 ms in CI beside
            // Chromium starting), but a proxy that delayed twice would hold up every one.
            #expect(roundTrips.allSatisfy { $0 >= .milliseconds(200) }, "round trips \(roundTrips) through 100 ms each way")
            #expect(roundTrips.min().map { $0 < .milliseconds(260) } == true, "round trips \(roundTrips) through 100 ms each way")
        }
    }

    @Test func twoClientsGetTheirOwnReplies() async throws {
        try await Heavy.run {
            let target = try UDPResponder.echo()
            defer { target.stop() }
            let proxy = try proxy(to: target.localAddress) { $0.jitter = .milliseconds(5) }
            defer { proxy.stop() }
            let first = try Client(tag: 1)
            let second = try Client(tag: 2)
            for batch in 0..<5 {
                try first.send(10, to: proxy.localAddress, pacedBy: proxy, from: batch * 10)
                try second.send(10, to: proxy.localAddress, pacedBy: proxy, from: batch * 10)
            }
            let firstEchoes = try first.receive(upTo: 50)
            let secondEchoes = try second.receive(upTo: 50)
            #expect(firstEchoes.count == 50 && firstEchoes.allSatisfy { $0.tag == 1 })
            #expect(secondEchoes.count == 50 && secondEchoes.allSatisfy { $0.tag == 2 })
            #expect(Set(firstEchoes.map(\.number)) == Set(0..<50))
            let senders = target.received
            #expect(senders.count == 2 && senders.values.allSatisfy { $0 == 50 }, "one upstream port per client: \(senders)")
            #expect(proxy.statistics.clients == 2)
        }
    }

    @Test func stopReturnsPromptlyAndCountsWhatWasStillInFlight() async throws {
        try await Heavy.run {
            let target = try UDPResponder.echo()
            defer { target.stop() }
            let proxy = try proxy(to: target.localAddress) { $0.delay = .seconds(10) }
            let client = try Client()
            try client.send(10, to: proxy.localAddress)
            #expect(await eventually { proxy.statistics.upstream.pending == 10 })
            let started = ContinuousClock.now
            proxy.stop()
            let took = ContinuousClock.now - started
            #expect(took < .milliseconds(200), "stop took \(took)")
            let statistics = proxy.statistics
            #expect(statistics.upstream.pending == 10 && statistics.upstream.delivered == 0)
            #expect(target.received.isEmpty)
            proxy.stop()
            #expect(throws: TransportError.self) { try proxy.start() }
        }
    }

    @Test func packetsBeyondThePendingCapAreDroppedAndCounted() async throws {
        try await Heavy.run {
            let target = try UDPResponder.echo()
            defer { target.stop() }
            var limits = UDPImpairmentProxy.Limits()
            limits.maximumPendingPackets = 10
            let proxy = try proxy(to: target.localAddress, { $0.delay = .milliseconds(300) }, limits: limits)
            defer { proxy.stop() }
            let client = try Client()
            try client.send(30, to: proxy.localAddress)
            let echoes = try client.receive(upTo: 30, quiet: .milliseconds(1_000))
            #expect(echoes.map(\.number) == Array(0..<10), "the first 10 fit")
            let statistics = proxy.statistics
            #expect(statistics.upstream.overflowDropped == 20 && statistics.upstream.delivered == 10)
            #expect(statistics.upstream.lossPercent == 200.0 / 3)
        }
    }

    @Test func aFullClientTableRefusesNewClientsUntilAnIdleOneExpires() async throws {
        try await Heavy.run {
            let target = try UDPResponder.echo()
            defer { target.stop() }
            var limits = UDPImpairmentProxy.Limits()
            limits.maximumClients = 1
            limits.clientIdleTimeout = .milliseconds(300)
            let proxy = try proxy(to: target.localAddress, limits: limits)
            defer { proxy.stop() }
            let first = try Client(tag: 1)
            let second = try Client(tag: 2)
            try first.send(1, to: proxy.localAddress)
            #expect(try first.receive(upTo: 1).count == 1)
            try second.send(1, to: proxy.localAddress)
            #expect(try second.receive(upTo: 1, quiet: .milliseconds(100)).isEmpty, "the table is full")
            #expect(proxy.statistics.unmappedDropped == 1)
            #expect(await eventually { proxy.statistics.clientsExpired == 1 }, "the first client's mapping expires when idle")
            try second.send(1, to: proxy.localAddress)
            #expect(try second.receive(upTo: 1).count == 1)
            #expect(proxy.statistics.clientsCreated == 2)
        }
    }

    @Test func repliesFromOtherAddressesAreDropped() async throws {
        try await Heavy.run {
            let target = try UDPResponder.echo()
            defer { target.stop() }
            let proxy = try proxy(to: target.localAddress)
            defer { proxy.stop() }
            let client = try Client()
            try client.send(1, to: proxy.localAddress)
            #expect(try client.receive(upTo: 1).count == 1)
            let upstream = try #require(target.received.keys.first)
            let stranger = try Client(tag: 9)
            try stranger.send(3, to: upstream)
            #expect(try client.receive(upTo: 1, quiet: .milliseconds(150)).isEmpty)
            #expect(await eventually { proxy.statistics.foreignDropped == 3 })
        }
    }
}
