import Foundation
import PostgresNIO

/// A table of names and the node hosting each (`meetingPlace`, `conferencePlace`): the
/// queries meeting and conference places share.
struct PlaceTable: Sendable {
    let registry: NodeRegistry
    /// The table's name (one of this module's, never from outside).
    let table: String
    /// What its names are, for errors ("meeting", "conference").
    let what: String
    var store: PostgresCallStore { registry.store }

    /// The live node hosting `name`, if one does.
    func host(of name: String) async throws(StoreError) -> NodeID? {
        let deadAfter = Int64(registry.configuration.deadAfter / .milliseconds(1))
        return try await store.run("\(what) \(name)") { client in
            let rows = try await client.query("""
                SELECT \(unescaped: table).node FROM \(unescaped: table) JOIN node ON node.id = \(unescaped: table).node
                WHERE \(unescaped: table).name = \(name) AND \(unescaped: NodeRegistry.now) - node.heartbeatAt < \(deadAfter)
                """)
            for try await node in rows.decode(String.self) { return try? NodeID(node) }
            return nil
        }
    }

    /// `node` no longer hosts `name`.
    func release(_ name: String, node: NodeID) async throws(StoreError) {
        try await store.run("\(what) \(name)") { client in
            try await client.query("DELETE FROM \(unescaped: table) WHERE name = \(name) AND node = \(node.rawValue)")
        }
    }

    /// Every name's host.
    func all() async throws(StoreError) -> [String: NodeID] {
        try await store.run("\(what) places") { client in
            var places: [String: NodeID] = [:]
            for try await (name, node) in try await client.query("SELECT name, node FROM \(unescaped: table)").decode((String, String).self) {
                places[name] = try? NodeID(node)
            }
            return places
        }
    }

    /// Removes every row of `node`.
    func sweep(_ node: NodeID) async throws(StoreError) {
        try await store.run("\(what) places of node \(node)") { client in
            try await client.query("DELETE FROM \(unescaped: table) WHERE node = \(node.rawValue)")
        }
    }
}
