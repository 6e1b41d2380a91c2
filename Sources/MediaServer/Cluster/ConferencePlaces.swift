import Foundation
import PostgresNIO

/// Which node hosts each real-time conference, in the store the nodes share. A conference
/// lives on the node it was reserved through: its registry entry, its relay channel and its
/// members' data connections are there, so its data never crosses the node bus. Its name is
/// unique across the cluster: a reservation through another node goes to the host, whose
/// registry says whether the name is in use. The host releases the row once the name is
/// free; rows of a dead node are swept, so its names can be reserved again elsewhere.
public struct ConferencePlaces: Sendable {
    public let registry: NodeRegistry
    public var store: PostgresCallStore { registry.store }

    public init(registry: NodeRegistry) { self.registry = registry }

    /// Places conference `name` on `node`, unless a live node hosts it already: returns the
    /// host. One statement: of two nodes placing one name at once, both get the same node.
    public func place(_ name: String, on node: NodeID) async throws(StoreError) -> NodeID {
        let deadAfter = Int64(registry.configuration.deadAfter / .milliseconds(1))
        return try await store.run("place conference \(name)") { client in
            let rows = try await client.query("""
                WITH live AS (SELECT id FROM node WHERE \(unescaped: NodeRegistry.now) - heartbeatAt < \(deadAfter)),
                placed AS (
                    INSERT INTO conferencePlace (name, node, since) VALUES (\(name), \(node.rawValue), \(unescaped: NodeRegistry.now))
                    ON CONFLICT (name) DO UPDATE SET node = EXCLUDED.node, since = EXCLUDED.since
                        WHERE conferencePlace.node NOT IN (SELECT id FROM live)
                    RETURNING node)
                SELECT COALESCE((SELECT node FROM placed), (SELECT node FROM conferencePlace WHERE name = \(name)))
                """)
            for try await host in rows.decode(String.self) {
                if let host = try? NodeID(host) { return host }
            }
            return node
        }
    }

    private var table: PlaceTable { PlaceTable(registry: registry, table: "conferencePlace", what: "conference") }

    /// The live node hosting conference `name`, if one does.
    public func host(of name: String) async throws(StoreError) -> NodeID? {
        try await table.host(of: name)
    }

    /// `node` no longer hosts conference `name`.
    public func release(_ name: String, node: NodeID) async throws(StoreError) {
        try await table.release(name, node: node)
    }

    /// Every conference's host (for tests and tools).
    public func all() async throws(StoreError) -> [String: NodeID] {
        try await table.all()
    }

    /// Removes every row of `node` (a node found dead or gone, or one starting again).
    public func sweep(_ node: NodeID) async throws(StoreError) {
        try await table.sweep(node)
    }
}
