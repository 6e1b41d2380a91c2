import Foundation
import Testing
import TestSupport
@testable import MediaServer

/// Which node each device is on: logins across nodes, a relogin elsewhere, closes that
/// must not remove a newer login, and a dead node's stale rows.
@Suite(.serialized) struct PresenceAcrossNodes {
    @Test func devicesAreListedWhereTheyAreAndADeadNodesRowsAreNot() async throws {
        let server = try PostgresTestServer()
        // Every check that needs the nodes live follows a heartbeat of all three, so a slow
        // step (a loaded machine) cannot make one look dead.
        let deadAfter = Duration.seconds(2)
        let registry = try await NodeRegistries.registry(server, deadAfter: deadAfter)
        let presence = Presence(registry: registry)
        let nodes = try ["node-1", "node-2", "node-3"].map(NodeID.init)
        let incarnations = nodes.map { _ in UUID() }
        for (index, node) in nodes.enumerated() {
            try await registry.register(node, incarnation: incarnations[index], signalingURL: "ws://n\(index)/", mediaAddress: "n\(index):1")
        }
        func beat() async throws {
            for (index, node) in nodes.enumerated() { _ = try await registry.heartbeat(node, incarnation: incarnations[index], load: 0) }
        }
        #expect(try await presence.arrive(account: "bob", device: "phone", node: nodes[1], connection: 7) == nil)
        #expect(try await presence.arrive(account: "bob", device: "laptop", node: nodes[2], connection: 9) == nil)
        #expect(try await presence.arrive(account: "alice", device: "d", node: nodes[0], connection: 1) == nil)
        try await beat()
        #expect(try await presence.devices(of: "bob").map { "\($0.device)@\($0.node):\($0.connection)" }
                == ["laptop@node-3:9", "phone@node-2:7"])

        // The phone logs in again on node-1: node-2's connection is named to be closed, and
        // its close afterwards does not remove the new row.
        let previous = try await presence.arrive(account: "bob", device: "phone", node: nodes[0], connection: 2)
        #expect(previous == DevicePresence(account: "bob", device: "phone", node: nodes[1], connection: 7))
        try await presence.leave(account: "bob", device: "phone", node: nodes[1], connection: 7)
        try await beat()
        #expect(try await presence.devices(of: "bob").map { "\($0.device)@\($0.node)" } == ["laptop@node-3", "phone@node-1"])
        try await presence.leave(account: "bob", device: "phone", node: nodes[0], connection: 2)
        try await beat()
        #expect(try await presence.devices(of: "bob").map(\.device) == ["laptop"])

        // node-3 falls silent (a crash): its rows are no longer listed, then swept. Silence is
        // measured on the database's clock: wait on that clock, not this process's.
        #expect(try await eventually(every: .milliseconds(100)) {
            try await registry.nodes().first { $0.id == nodes[2] }.map { $0.silence >= deadAfter + .milliseconds(300) } ?? false
        })
        _ = try await registry.heartbeat(nodes[0], incarnation: incarnations[0], load: 0)
        #expect(try await presence.devices(of: "bob").isEmpty)
        #expect(try await presence.devices(of: "alice").map(\.device) == ["d"])
        #expect(try await presence.sweep(nodes[2]) == 1)
        #expect(try await presence.sweep(nodes[2]) == 0)
        await registry.store.close()
    }
}
