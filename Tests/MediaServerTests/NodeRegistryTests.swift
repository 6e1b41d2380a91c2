import Foundation
import Logging
import Testing
import TestSupport
@testable import MediaServer

/// Nodes sharing one PostgreSQL: registration, heartbeats with load, death by silence, and
/// one live node per ID.
@Suite(.serialized) struct NodeRegistries {
    static func registry(_ server: PostgresTestServer, deadAfter: Duration = .seconds(2)) async throws -> NodeRegistry {
        var configuration = NodeRegistry.Configuration()
        configuration.deadAfter = deadAfter
        return NodeRegistry(store: try await PostgresCallStore(location: .init(url: server.url()), logger: Stores.quiet),
                            configuration: configuration)
    }

    @Test func nodesRegisterReportTheirLoadAndOneThatFallsSilentIsDead() async throws {
        let server = try PostgresTestServer()
        let registry = try await Self.registry(server)
        let ids = try ["node-1", "node-2", "node-3"].map(NodeID.init)
        let incarnations = ids.map { _ in UUID() }
        for (index, id) in ids.enumerated() {
            try await registry.register(id, incarnation: incarnations[index], signalingURL: "ws://10.0.0.\(index + 1):8080/",
                                        mediaAddress: "10.0.0.\(index + 1):8080")
        }
        #expect(try await registry.heartbeat(ids[0], incarnation: incarnations[0], load: 30))
        #expect(try await registry.heartbeat(ids[1], incarnation: incarnations[1], load: 10))
        #expect(try await registry.heartbeat(ids[2], incarnation: incarnations[2], load: 20))
        let live = try await registry.liveNodes()
        #expect(live.map(\.id.rawValue) == ["node-2", "node-3", "node-1"], "least loaded first")
        #expect(live.first?.signalingURL == "ws://10.0.0.2:8080/" && live.first?.mediaAddress == "10.0.0.2:8080")

        // node-3 falls silent; the others go on. Silence is measured on the database's clock:
        // wait on that clock, not this process's.
        #expect(try await eventually(every: .milliseconds(100)) {
            try await registry.nodes().first { $0.id == ids[2] }.map { $0.silence >= .milliseconds(2_500) } ?? false
        })
        #expect(try await registry.heartbeat(ids[0], incarnation: incarnations[0], load: 30))
        #expect(try await registry.heartbeat(ids[1], incarnation: incarnations[1], load: 10))
        #expect(try await registry.liveNodes().map(\.id.rawValue) == ["node-2", "node-1"])
        let silent = try #require(try await registry.nodes().first { $0.id == ids[2] })
        #expect(silent.silence >= .milliseconds(2_500), "\(silent.silence)")

        // A graceful stop leaves no row.
        try await registry.deregister(ids[1], incarnation: incarnations[1])
        #expect(try await registry.nodes().map(\.id.rawValue) == ["node-1", "node-3"])
        await registry.store.close()
    }

    /// A second node under a live node's ID is refused; once the first has been silent for
    /// `deadAfter` the ID is free, and the first learns at its next heartbeat that it lost it.
    @Test func twoLiveNodesNeverShareAnID() async throws {
        let server = try PostgresTestServer()
        let registry = try await Self.registry(server, deadAfter: .seconds(1))
        let id = try NodeID("edge")
        let first = UUID()
        let second = UUID()
        try await registry.register(id, incarnation: first, signalingURL: "ws://a/", mediaAddress: "a:1")
        let refused = await #expect(throws: StoreError.self) {
            try await registry.register(id, incarnation: second, signalingURL: "ws://b/", mediaAddress: "b:1")
        }
        #expect(refused?.message.contains("node id edge is in use by a live node") == true, "\(String(describing: refused))")
        // Restarting the same incarnation is no conflict.
        try await registry.register(id, incarnation: first, signalingURL: "ws://a/", mediaAddress: "a:1")

        // Silent for longer than deadAfter, by the database's clock.
        #expect(try await eventually(every: .milliseconds(100)) {
            try await registry.nodes().first { $0.id == id }.map { $0.silence >= .milliseconds(1_300) } ?? false
        })
        try await registry.register(id, incarnation: second, signalingURL: "ws://b/", mediaAddress: "b:1")
        #expect(try await registry.heartbeat(id, incarnation: first, load: 1) == false, "the old incarnation is fenced off")
        #expect(try await registry.heartbeat(id, incarnation: second, load: 1))
        #expect(try await registry.nodes().map(\.signalingURL) == ["ws://b/"])

        // Four registering one free ID at once: exactly one gets it. With the 1 s deadAfter
        // above, a contestant the loaded machine held back a second would find the winner
        // already dead and rightly take the ID: this part judges liveness over a minute.
        var patient = NodeRegistry.Configuration()
        patient.deadAfter = .seconds(60)
        let contest = NodeRegistry(store: registry.store, configuration: patient)
        let contested = try NodeID("contested")
        let outcomes = await withTaskGroup(of: Bool.self) { group in
            for _ in 0..<4 {
                group.addTask {
                    (try? await contest.register(contested, incarnation: UUID(), signalingURL: "ws://c/", mediaAddress: "c:1")) != nil
                }
            }
            return await group.reduce(into: [Bool]()) { $0.append($1) }
        }
        #expect(outcomes.filter { $0 }.count == 1, "\(outcomes)")
        await registry.store.close()
    }

    @Test(arguments: ["", "Node-1", "-edge", "_edge", "edge.1", "edge 1", String(repeating: "a", count: 33), "nöde"])
    func badNodeIDsAreRefused(_ text: String) {
        let error = #expect(throws: StoreError.self) { try NodeID(text) }
        #expect(error?.message.contains("must be 1 to 32 of a-z, 0-9, - and _") == true)
    }
}
