import Foundation
import PostgresNIO

/// The call each account is in, in the store the nodes share, whichever node owns it: an
/// account is in at most one call across the cluster, as on one node. A node claims the
/// caller and the callee under the call's ID before it starts the call (both in one
/// statement, so of two nodes calling the same account at once one gets it), and releases
/// the rows when it ends (or at once, when the start failed). Rows of dead nodes count for nothing: a claim takes
/// them over, and they are swept.
public struct CallParties: Sendable {
    public let registry: NodeRegistry
    public var store: PostgresCallStore { registry.store }

    public init(registry: NodeRegistry) { self.registry = registry }

    /// What a claim found.
    public struct Claim: Sendable, Hashable {
        /// The call's ID, from the IDs all nodes share.
        public var callID: UInt64
        /// The accounts claimed; the others are in a call (on this node or a live other).
        public var claimed: Set<String>
        /// Where `callee`'s devices are logged in (live nodes only).
        public var devices: [DevicePresence]
    }

    /// Claims `caller` and `callee` for a call `node` is about to start, under an ID from
    /// the IDs all nodes share, and finds the callee's devices: one round trip.
    public func claim(caller: String, callee: String, node: NodeID) async throws(StoreError) -> Claim {
        let deadAfter = Int64(registry.configuration.deadAfter / .milliseconds(1))
        let accounts = [caller, callee]
        return try await store.run("claim \(caller) and \(callee)") { client in
            let rows = try await client.query("""
                WITH id AS (SELECT nextval('callIDs') AS value),
                live AS (SELECT id FROM node WHERE \(unescaped: NodeRegistry.now) - heartbeatAt < \(deadAfter)),
                claimed AS (
                    INSERT INTO callParty (account, callID, node, since)
                    SELECT account, (SELECT value FROM id), \(node.rawValue), \(unescaped: NodeRegistry.now)
                    FROM UNNEST(\(accounts)::TEXT[]) AS account
                    ON CONFLICT (account) DO UPDATE SET callID = EXCLUDED.callID, node = EXCLUDED.node, since = EXCLUDED.since
                        WHERE callParty.node NOT IN (SELECT id FROM live)
                    RETURNING account),
                devices AS (
                    SELECT device, node, connection FROM presence
                    WHERE account = \(callee) AND node IN (SELECT id FROM live) ORDER BY device)
                SELECT (SELECT value FROM id),
                    COALESCE((SELECT array_agg(account) FROM claimed), '{}'::TEXT[]),
                    COALESCE((SELECT array_agg(device) FROM devices), '{}'::TEXT[]),
                    COALESCE((SELECT array_agg(node) FROM devices), '{}'::TEXT[]),
                    COALESCE((SELECT array_agg(connection) FROM devices), '{}'::BIGINT[])
                """)
            var claim = Claim(callID: 0, claimed: [], devices: [])
            for try await (id, claimed, devices, nodes, connections) in rows.decode((Int64, [String], [String], [String], [Int64]).self) {
                claim.callID = UInt64(bitPattern: id)
                claim.claimed = Set(claimed)
                for (index, device) in devices.enumerated() where index < nodes.count && index < connections.count {
                    guard let node = try? NodeID(nodes[index]) else { continue }
                    claim.devices.append(DevicePresence(account: callee, device: device, node: node,
                                                        connection: UInt64(bitPattern: connections[index])))
                }
            }
            return claim
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

    /// The call `account` is in and the live node owning it, if it is in one.
    public func call(of account: String) async throws(StoreError) -> (callID: UInt64, node: NodeID)? {
        let deadAfter = Int64(registry.configuration.deadAfter / .milliseconds(1))
        return try await store.run("call of \(account)") { client in
            let rows = try await client.query("""
                SELECT callParty.callID, callParty.node FROM callParty JOIN node ON node.id = callParty.node
                WHERE callParty.account = \(account) AND \(unescaped: NodeRegistry.now) - node.heartbeatAt < \(deadAfter)
                """)
            for try await (id, node) in rows.decode((Int64, String).self) {
                guard let node = try? NodeID(node) else { return nil }
                return (UInt64(bitPattern: id), node)
            }
            return nil
        }
    }

    /// Claims `accounts` for a voice channel (a real-time session with audio) that `node`
    /// hosts under channel ID `session`: it is exclusive with calls, on every node. Returns
    /// the accounts claimed; the others are in a call or another voice channel.
    public func claimVoice(_ accounts: [String], session: UInt64, node: NodeID) async throws(StoreError) -> Set<String> {
        let deadAfter = Int64(registry.configuration.deadAfter / .milliseconds(1))
        return try await store.run("claim \(accounts) for a voice channel") { client in
            let rows = try await client.query("""
                WITH live AS (SELECT id FROM node WHERE \(unescaped: NodeRegistry.now) - heartbeatAt < \(deadAfter))
                INSERT INTO callParty (account, callID, node, since)
                SELECT account, \(Int64(bitPattern: session)), \(node.rawValue), \(unescaped: NodeRegistry.now)
                FROM UNNEST(\(accounts)::TEXT[]) AS account
                ON CONFLICT (account) DO UPDATE SET callID = EXCLUDED.callID, node = EXCLUDED.node, since = EXCLUDED.since
                    WHERE callParty.node NOT IN (SELECT id FROM live)
                RETURNING account
                """)
            var claimed: Set<String> = []
            for try await account in rows.decode(String.self) { claimed.insert(account) }
            return claimed
        }
    }

    /// The call `node` claimed accounts for did not start.
    public func unclaim(call: UInt64, node: NodeID) async throws(StoreError) {
        try await store.run("call \(call) parties") { client in
            try await client.query("DELETE FROM callParty WHERE callID = \(Int64(bitPattern: call)) AND node = \(node.rawValue)")
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
