import Foundation
import PostgresNIO

/// The call each account is in, in the store the nodes share, whichever node owns it: an
/// account is in at most one call across the cluster, as on one node. A node claims the
/// caller and the callee before it starts a call (both in one statement, so of two nodes
/// calling the same account at once one gets it), names the call once it has an ID, and
/// releases the rows when it ends. Rows of dead nodes count for nothing: a claim takes
/// them over, and they are swept.
public struct CallParties: Sendable {
    public let registry: NodeRegistry
    public var store: PostgresCallStore { registry.store }

    public init(registry: NodeRegistry) { self.registry = registry }

    /// Claims `accounts` for a call `node` is about to start, and takes the call's ID from
    /// the IDs all nodes share.
    /// - Returns: the ID, and the accounts claimed; the others are in a call (on this node
    ///   or a live other).
    public func claim(_ accounts: [String], node: NodeID) async throws(StoreError) -> (callID: UInt64, claimed: Set<String>) {
        let deadAfter = Int64(registry.configuration.deadAfter / .milliseconds(1))
        return try await store.run("claim \(accounts.count) accounts") { client in
            let rows = try await client.query("""
                WITH claimed AS (
                    INSERT INTO callParty (account, callID, node, since)
                    SELECT account, 0, \(node.rawValue), \(unescaped: NodeRegistry.now) FROM UNNEST(\(accounts)::TEXT[]) AS account
                    ON CONFLICT (account) DO UPDATE SET callID = 0, node = EXCLUDED.node, since = EXCLUDED.since
                        WHERE callParty.node NOT IN (SELECT id FROM node WHERE \(unescaped: NodeRegistry.now) - heartbeatAt < \(deadAfter))
                    RETURNING account)
                SELECT nextval('callIDs'), COALESCE((SELECT array_agg(account) FROM claimed), '{}'::TEXT[])
                """)
            var result: (UInt64, Set<String>) = (0, [])
            for try await (id, claimed) in rows.decode((Int64, [String]).self) { result = (UInt64(bitPattern: id), Set(claimed)) }
            return result
        }
    }

    /// Moves the shared call IDs past this moment's (milliseconds since 1970 x 1024, as one
    /// server numbers its calls), so they keep growing across restarts of the cluster.
    public func advanceCallIDs() async throws(StoreError) {
        try await store.run("call IDs") { client in
            try await client.query("""
                SELECT setval('callIDs', GREATEST((SELECT last_value FROM callIDs), \(unescaped: NodeRegistry.now) * 1024))
                """)
        }
    }

    /// The call that `node` claimed `accounts` for got its ID.
    public func settle(_ accounts: Set<String>, call: UInt64, node: NodeID) async throws(StoreError) {
        let list = Array(accounts)
        try await store.run("call \(call) parties") { client in
            try await client.query("""
                UPDATE callParty SET callID = \(Int64(bitPattern: call))
                WHERE account = ANY(\(list)::TEXT[]) AND node = \(node.rawValue) AND callID = 0
                """)
        }
    }

    /// The call `node` claimed `accounts` for did not start.
    public func unclaim(_ accounts: Set<String>, node: NodeID) async throws(StoreError) {
        let list = Array(accounts)
        try await store.run("unclaim \(list.count) accounts") { client in
            try await client.query("""
                DELETE FROM callParty WHERE account = ANY(\(list)::TEXT[]) AND node = \(node.rawValue) AND callID = 0
                """)
        }
    }

    /// `call` ended: its parties are free.
    public func release(call: UInt64) async throws(StoreError) {
        try await store.run("call \(call) parties") { client in
            try await client.query("DELETE FROM callParty WHERE callID = \(Int64(bitPattern: call))")
        }
    }

    /// The accounts in calls now, by the node owning each (for tests and tools).
    public func all() async throws(StoreError) -> [String: NodeID] {
        try await store.run("call parties") { client in
            var parties: [String: NodeID] = [:]
            for try await (account, node) in try await client.query("SELECT account, node FROM callParty").decode((String, String).self) {
                parties[account] = try? NodeID(node)
            }
            return parties
        }
    }

    /// Removes every row of `node` (a node found dead, or one starting again after a crash).
    public func sweep(_ node: NodeID) async throws(StoreError) {
        try await store.run("call parties of node \(node)") { client in
            try await client.query("DELETE FROM callParty WHERE node = \(node.rawValue)")
        }
    }
}
