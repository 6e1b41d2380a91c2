import Foundation
import Testing
import TestSupport
@testable import MediaServer

/// A node's life in the cluster: others learn of it, learn of its death (its devices
/// forgotten), and a node whose ID was taken while it was away is fenced off.
@Suite(.serialized, .timeLimit(.minutes(1))) struct NodeMemberships {
    static func membership(_ name: String, _ server: PostgresTestServer, deadAfter: Duration = .seconds(1)) async throws -> NodeMembership {
        var configuration = NodeRegistry.Configuration()
        configuration.heartbeatInterval = .milliseconds(200)
        configuration.deadAfter = deadAfter
        let store = try await PostgresCallStore(location: .init(url: server.url()), logger: Stores.quiet)
        return NodeMembership(node: try NodeID(name), presence: Presence(registry: NodeRegistry(store: store, configuration: configuration)),
                              logger: Stores.quiet) { 0 }
    }

    @Test func aNodeThatStopsIsReportedDeadOnceWithItsDevicesForgotten() async throws {
        let server = try PostgresTestServer()
        // Dead after 3 s: under a full run's load, 1 s once passed between node-2's
        // registration and node-1's first look, which then saw it dead, not live.
        let one = try await Self.membership("node-1", server, deadAfter: .seconds(3))
        let two = try await Self.membership("node-2", server, deadAfter: .seconds(3))
        try await one.register(signalingURL: "ws://one/", mediaAddress: "one:1")
        try await two.register(signalingURL: "ws://two/", mediaAddress: "two:1")
        _ = try await one.presence.arrive(account: "bob", device: "phone", node: two.node, connection: 5)
        let oneTask = Task { await one.run() }
        let twoTask = Task { await two.run() }
        defer { oneTask.cancel() }
        var events = one.events.makeAsyncIterator()
        #expect(await events.next() == .nodeLive(two.node))
        #expect(try await one.presence.devices(of: "bob").map(\.device) == ["phone"])

        twoTask.cancel()  // node-2 stops heartbeating: a crash, as the others see it
        let started = ContinuousClock.now
        #expect(await events.next() == .nodeDied(two.node))
        let took = ContinuousClock.now - started
        #expect(took < .seconds(7), "reported after \(took) (dead after 3 s, heartbeats every 200 ms)")
        #expect(try await one.presence.devices(of: "bob").isEmpty)
        #expect(try await one.presence.sweep(two.node) == 0, "swept already")
    }

    @Test func aNodeWhoseIDWasTakenWhileItWasAwayIsFenced() async throws {
        let server = try PostgresTestServer()
        let first = try await Self.membership("edge", server)
        try await first.register(signalingURL: "ws://first/", mediaAddress: "first:1")
        // Away (a long pause, a partition) for longer than deadAfter, by the database's clock:
        // a new incarnation takes the ID.
        #expect(try await eventually(every: .milliseconds(100)) {
            try await first.registry.nodes().first { $0.id == first.node }.map { $0.silence >= .milliseconds(1_300) } ?? false
        })
        let second = try await Self.membership("edge", server)
        try await second.register(signalingURL: "ws://second/", mediaAddress: "second:1")
        let task = Task { await first.run() }
        var events = first.events.makeAsyncIterator()
        #expect(await events.next() == .fenced)
        await task.value
        #expect(try await second.registry.nodes().map(\.signalingURL) == ["ws://second/"])
    }
}
