import Foundation
import Logging
import PostgresNIO

/// A server node's name among the nodes sharing a store: 1 to 32 of a-z, 0-9, `-` and `_`,
/// starting with a letter or digit (it names the node's notification channel too).
public struct NodeID: Sendable, Hashable, CustomStringConvertible {
    public let rawValue: String

    /// - Throws: `StoreError` saying what the name may hold.
    public init(_ text: String) throws(StoreError) {
        let allowed = Set("abcdefghijklmnopqrstuvwxyz0123456789-_")
        guard (1...32).contains(text.count), text.allSatisfy(allowed.contains), text.first != "-", text.first != "_" else {
            throw StoreError("node id '\(text.prefix(40))' must be 1 to 32 of a-z, 0-9, - and _, starting with a letter or digit")
        }
        rawValue = text
    }

    public var description: String { rawValue }
}

/// A node as the store has it.
public struct NodeInfo: Sendable, Hashable {
    public var id: NodeID
    /// Where its clients connect: `ws://HOST:PORT/`.
    public var signalingURL: String
    /// Where meeting participants send media: `HOST:PORT`.
    public var mediaAddress: String
    /// Its load as it last reported it (signaling connections plus media legs).
    public var load: Int
    /// How long ago it last reported, by the database's clock.
    public var silence: Duration
}

/// The nodes sharing a PostgreSQL store: each registers itself, then reports its load every
/// `heartbeatInterval`; one silent for `deadAfter` is dead. Times are the database's clock,
/// so nodes' clocks never need to agree.
///
/// Each start of a node is an incarnation (a random ID). A node registering under an ID
/// whose row another incarnation heartbeated within `deadAfter` is refused: two live nodes
/// never share an ID. One that was declared dead and whose ID was taken finds out at its
/// next heartbeat (no row of its incarnation), and must stop serving.
public struct NodeRegistry: Sendable {
    public struct Configuration: Sendable {
        public var heartbeatInterval: Duration = .seconds(1)
        public var deadAfter: Duration = .seconds(5)
        public init() {}
    }

    public let store: PostgresCallStore
    public let configuration: Configuration

    public init(store: PostgresCallStore, configuration: Configuration = .init()) {
        self.store = store
        self.configuration = configuration
    }

    /// The database's clock in milliseconds.
    static let now = "(EXTRACT(EPOCH FROM clock_timestamp()) * 1000)::BIGINT"

    /// Registers `id` for this incarnation.
    /// - Throws: `StoreError` when a live node holds the ID, or the store fails.
    public func register(_ id: NodeID, incarnation: UUID, signalingURL: String, mediaAddress: String) async throws(StoreError) {
        let deadAfter = Int64(configuration.deadAfter / .milliseconds(1))
        let taken = try await store.transaction("register node \(id)") { connection, logger in
            // Registrations of one ID take turns (a lock on the ID, held to the end of the
            // transaction: a row lock would not exist yet for a new ID), so the second
            // sees the first's row.
            try await connection.query("SELECT pg_advisory_xact_lock(hashtext(\("node " + id.rawValue)))", logger: logger)
            let rows = try await connection.query("""
                SELECT incarnation, \(unescaped: Self.now) - heartbeatAt FROM node WHERE id = \(id.rawValue)
                """, logger: logger)
            for try await (holder, silence) in rows.decode((String, Int64).self)
            where holder != incarnation.uuidString && silence < deadAfter {
                return Optional(silence)
            }
            try await connection.query("""
                INSERT INTO node (id, incarnation, signalingURL, mediaAddress, load, startedAt, heartbeatAt)
                VALUES (\(id.rawValue), \(incarnation.uuidString), \(signalingURL), \(mediaAddress), 0,
                        \(unescaped: Self.now), \(unescaped: Self.now))
                ON CONFLICT (id) DO UPDATE SET incarnation = EXCLUDED.incarnation, signalingURL = EXCLUDED.signalingURL,
                    mediaAddress = EXCLUDED.mediaAddress, load = 0, startedAt = EXCLUDED.startedAt, heartbeatAt = EXCLUDED.heartbeatAt
                """, logger: logger)
            return Int64?.none
        }
        if let taken {
            throw StoreError("node id \(id) is in use by a live node (its last heartbeat was \(taken) ms ago): give each node its own --node-id")
        }
    }

    /// Reports this incarnation alive with `load`.
    /// - Returns: false when the row is no longer this incarnation's (it was declared dead
    ///   and another node took the ID, or it was removed): the node must stop serving.
    public func heartbeat(_ id: NodeID, incarnation: UUID, load: Int) async throws(StoreError) -> Bool {
        try await store.run("heartbeat of node \(id)") { client in
            let rows = try await client.query("""
                UPDATE node SET heartbeatAt = \(unescaped: Self.now), load = \(Int32(clamping: load))
                WHERE id = \(id.rawValue) AND incarnation = \(incarnation.uuidString) RETURNING id
                """)
            for try await _ in rows.decode(String.self) { return true }
            return false
        }
    }

    /// Removes this incarnation's row (a node stopping gracefully).
    public func deregister(_ id: NodeID, incarnation: UUID) async throws(StoreError) {
        try await store.run("deregister node \(id)") { client in
            try await client.query("DELETE FROM node WHERE id = \(id.rawValue) AND incarnation = \(incarnation.uuidString)")
        }
    }

    /// Every registered node, live and dead, by ID.
    public func nodes() async throws(StoreError) -> [NodeInfo] {
        try await store.run("read nodes") { client in
            let rows = try await client.query("""
                SELECT id, signalingURL, mediaAddress, load, \(unescaped: Self.now) - heartbeatAt FROM node ORDER BY id
                """)
            var nodes: [NodeInfo] = []
            for try await (id, url, media, load, silence) in rows.decode((String, String, String, Int32, Int64).self) {
                guard let id = try? NodeID(id) else { continue }
                nodes.append(NodeInfo(id: id, signalingURL: url, mediaAddress: media, load: Int(load), silence: .milliseconds(silence)))
            }
            return nodes
        }
    }

    /// The nodes that reported within `deadAfter`, least loaded first.
    public func liveNodes() async throws(StoreError) -> [NodeInfo] {
        try await nodes().filter { $0.silence < configuration.deadAfter }.sorted { ($0.load, $0.id.rawValue) < ($1.load, $1.id.rawValue) }
    }
}
