import Foundation
import PostgresNIO

/// Which node hosts each meeting, in the store the nodes share. A meeting lives on one
/// node's forwarding server (SFU), chosen when it is reserved: the least loaded live node
/// that runs a media port. A participant connected to another node sends its meeting
/// requests there through its own node, and its media straight to the host's UDP address.
/// The host releases the row when the meeting ends or its reservation lapses; rows of a
/// dead node are swept, so its meetings can be reserved again elsewhere.
public struct MeetingPlaces: Sendable {
    public let registry: NodeRegistry
    public var store: PostgresCallStore { registry.store }

    public init(registry: NodeRegistry) { self.registry = registry }

    /// Places meeting `name`: the node already hosting it when that node is live, else the
    /// least loaded live node with a media port (its load counting the meetings placed on
    /// it since its last heartbeat), else `fallback`. One statement: of two nodes placing
    /// one name at once, both get the same node.
    public func place(_ name: String, fallback: NodeID) async throws(StoreError) -> NodeID {
        let deadAfter = Int64(registry.configuration.deadAfter / .milliseconds(1))
        return try await store.run("place meeting \(name)") { client in
            let rows = try await client.query("""
                WITH live AS (SELECT id, load, mediaAddress FROM node WHERE \(unescaped: NodeRegistry.now) - heartbeatAt < \(deadAfter)),
                choice AS (
                    SELECT live.id FROM live WHERE live.mediaAddress <> ''
                    ORDER BY live.load + (SELECT count(*) FROM meetingPlace WHERE meetingPlace.node = live.id), live.id LIMIT 1),
                placed AS (
                    INSERT INTO meetingPlace (name, node, since)
                    VALUES (\(name), COALESCE((SELECT id FROM choice), \(fallback.rawValue)), \(unescaped: NodeRegistry.now))
                    ON CONFLICT (name) DO UPDATE SET node = EXCLUDED.node, since = EXCLUDED.since
                        WHERE meetingPlace.node NOT IN (SELECT id FROM live)
                    RETURNING node)
                SELECT COALESCE((SELECT node FROM placed), (SELECT node FROM meetingPlace WHERE name = \(name)))
                """)
            for try await node in rows.decode(String.self) {
                if let node = try? NodeID(node) { return node }
            }
            return fallback
        }
    }

    private var table: PlaceTable { PlaceTable(registry: registry, table: "meetingPlace", what: "meeting") }

    /// The live node hosting meeting `name`, if one does.
    public func host(of name: String) async throws(StoreError) -> NodeID? {
        try await table.host(of: name)
    }

    /// Meeting IDs come from the IDs calls use: two nodes reserving in the same
    /// millisecond would otherwise number two meetings (and their records) alike.
    public func nextID() async throws(StoreError) -> UInt64 {
        try await store.run("meeting ID") { client in
            for try await id in try await client.query("SELECT nextval('callIDs')").decode(Int64.self) {
                return UInt64(bitPattern: id)
            }
            throw StoreError("meeting ID: nextval returned nothing")
        }
    }

    /// `node` no longer hosts meeting `name` (it ended, lapsed, or was never made).
    public func release(_ name: String, node: NodeID) async throws(StoreError) {
        try await table.release(name, node: node)
    }

    /// Every meeting's host (for tests and tools).
    public func all() async throws(StoreError) -> [String: NodeID] {
        try await table.all()
    }

    /// A meeting member as the store keeps it.
    public struct Member: Sendable, Hashable {
        public var device: String
        public var meeting: UInt64
    }

    /// The host's members changed: `members` are in its meetings now (added or moved),
    /// `gone` no longer are.
    public func update(host: NodeID, members: [String: Member], gone: [String]) async throws(StoreError) {
        let accounts = members.keys.sorted()
        let devices = accounts.map { members[$0]!.device }
        let meetings = accounts.map { Int64(bitPattern: members[$0]!.meeting) }
        _ = try await store.transaction("meeting members of node \(host)") { connection, logger in
            if !gone.isEmpty {
                try await connection.query("DELETE FROM meetingMember WHERE host = \(host.rawValue) AND account = ANY(\(gone))",
                                           logger: logger)
            }
            if !accounts.isEmpty {
                try await connection.query("""
                    INSERT INTO meetingMember (account, device, meeting, host)
                    SELECT account, device, meeting, \(host.rawValue)
                    FROM UNNEST(\(accounts)::TEXT[], \(devices)::TEXT[], \(meetings)::BIGINT[]) AS m (account, device, meeting)
                    ON CONFLICT (account) DO UPDATE SET device = EXCLUDED.device, meeting = EXCLUDED.meeting, host = EXCLUDED.host
                    """, logger: logger)
            }
        }
    }

    /// The meeting `account` is in, on a live host, if it is in one.
    public func meeting(of account: String) async throws(StoreError) -> (member: Member, host: NodeID)? {
        let deadAfter = Int64(registry.configuration.deadAfter / .milliseconds(1))
        return try await store.run("meeting of \(account)") { client in
            let rows = try await client.query("""
                SELECT meetingMember.device, meetingMember.meeting, meetingMember.host FROM meetingMember
                JOIN node ON node.id = meetingMember.host
                WHERE meetingMember.account = \(account) AND \(unescaped: NodeRegistry.now) - node.heartbeatAt < \(deadAfter)
                """)
            for try await (device, meeting, host) in rows.decode((String, Int64, String).self) {
                guard let host = try? NodeID(host) else { return nil }
                return (Member(device: device, meeting: UInt64(bitPattern: meeting)), host)
            }
            return nil
        }
    }

    /// Removes every row of `node` (a node found dead or gone, or one starting again).
    public func sweep(_ node: NodeID) async throws(StoreError) {
        try await table.sweep(node)
        try await store.run("meeting members of node \(node)") { client in
            try await client.query("DELETE FROM meetingMember WHERE host = \(node.rawValue)")
        }
    }
}
