import Foundation
import Logging
import MediaEngine
import PostgresNIO

/// One message between nodes.
public struct NodeMessage: Sendable, Hashable {
    /// The store's ID for it: increasing per sender, so a sender's messages are handled in
    /// the order it sent them.
    public var id: Int64
    public var from: NodeID
    public var body: Data
}

/// Messages between the nodes sharing a PostgreSQL store.
///
/// Sending inserts a row for the receiving node and, in the same transaction, NOTIFYs the
/// receiver's channel (`node.ID`): the notification arrives only once the row can be read.
/// A node LISTENs on its channel on a connection of its own and, on each notification,
/// reads its rows in ID order, hands each to `messages` and deletes it. NOTIFY keeps
/// nothing for a listener that is not connected, so the node reads its rows again after
/// every (re)connection and every `pollInterval` as well: a message waits at most that long
/// when a notification is lost (a silently dead listening connection, which postgres-nio
/// does not probe). A message is handed over at least once and, through a bounded memory
/// of the IDs it handed over, once: a row read again before its deletion landed is skipped.
/// Each send carries a key of its own, so a send retried after its reply was lost (the
/// first try had committed) adds no second row.
public final class NodeBus: Sendable {
    public struct Configuration: Sendable {
        /// How often the rows are read without a notification.
        public var pollInterval: Duration = .seconds(1)
        /// Largest body sent (signaling messages are at most 64 KiB).
        public var maximumBodySize = 128 * 1_024
        /// IDs remembered to skip a message handed over already.
        public var rememberedIDs = 4_096
        public init() {}
    }

    public let node: NodeID
    public let store: PostgresCallStore
    public let configuration: Configuration
    /// What other nodes sent this one, in the order each sent it.
    public let messages: AsyncStream<NodeMessage>
    private let sink: AsyncStream<NodeMessage>.Continuation
    private let logger: Logger
    private let state = Locked(DrainState())

    public init(node: NodeID, store: PostgresCallStore, configuration: Configuration = .init(), logger: Logger) {
        self.node = node
        self.store = store
        self.configuration = configuration
        self.logger = logger
        (messages, sink) = AsyncStream<NodeMessage>.makeStream()
    }

    /// The channel a node listens on.
    static func channel(_ node: NodeID) -> String { "node.\(node.rawValue)" }

    /// Sends `body` to `node`.
    /// - Throws: `StoreError` when it is too large or the store fails (after its retries).
    public func send(_ body: Data, to node: NodeID) async throws(StoreError) {
        try await send([body], to: node)
    }

    /// Sends `bodies` to `node`, in this order, in one transaction and one notification.
    /// - Throws: `StoreError` when one is too large or the store fails (after its retries).
    public func send(_ bodies: [Data], to node: NodeID) async throws(StoreError) {
        guard !bodies.isEmpty else { return }
        if let large = bodies.first(where: { $0.count > configuration.maximumBodySize }) {
            throw StoreError("a message of \(large.count) bytes for node \(node) is more than \(configuration.maximumBodySize)")
        }
        let from = self.node.rawValue
        // The keys make a retried send (its first try committed, but the reply was lost
        // with the connection) insert nothing a second time.
        let keys = bodies.map { _ in UUID().uuidString }
        let encoded = bodies.map { $0.base64EncodedString() }
        _ = try await store.transaction("send to node \(node)") { connection, logger in
            // Rows are inserted in the order given, so their IDs keep it.
            try await connection.query("""
                INSERT INTO nodeMessage (toNode, fromNode, key, body)
                SELECT \(node.rawValue), \(from), message.key, decode(message.body, 'base64')
                FROM UNNEST(\(keys)::TEXT[], \(encoded)::TEXT[]) WITH ORDINALITY AS message(key, body, position)
                ORDER BY message.position
                ON CONFLICT (key) DO NOTHING
                """, logger: logger)
            try await connection.query("SELECT pg_notify(\(Self.channel(node)), '')", logger: logger)
        }
    }

    /// Listens and hands messages over until cancelled; reconnects with backoff when the
    /// listening connection goes. The rows are read every `pollInterval` whatever the
    /// listening connection's state, so a message never waits longer than that once the
    /// store can be read.
    public func run() async {
        await withTaskGroup(of: Void.self) { group in
            group.addTask {
                while !Task.isCancelled {
                    await self.drain()
                    try? await Task.sleep(for: self.configuration.pollInterval)
                }
            }
            group.addTask { await self.listen() }
            await group.next()
            group.cancelAll()
        }
        sink.finish()
    }

    private func listen() async {
        var delay = Duration.milliseconds(100)
        while !Task.isCancelled {
            do {
                try await store.client.withConnection { connection in
                    try await connection.listen(on: Self.channel(self.node)) { notifications in
                        // Rows sent while this node was not listening.
                        await self.drain()
                        for try await _ in notifications { await self.drain() }
                    }
                }
                delay = .milliseconds(100)
            } catch {
                if Task.isCancelled { break }
                logger.debug("node bus of \(node): listening ended (\(PostgresCallStore.describe(error))); again in \(delay)")
                try? await Task.sleep(for: delay)
                delay = min(delay * 2, .seconds(5))
            }
        }
    }

    /// Reads this node's rows in ID order, hands over those not handed over yet, deletes them.
    /// Calls take turns: a notification during a read is served by the next.
    func drain() async {
        guard state.withLock({ $0.begin() }) else { return }
        repeat {
            do {
                let me = node.rawValue
                let rows: [NodeMessage] = try await store.run("read messages of node \(node)") { client in
                    var rows: [NodeMessage] = []
                    let result = try await client.query("""
                        SELECT id, fromNode, body FROM nodeMessage WHERE toNode = \(me) ORDER BY id LIMIT 1000
                        """)
                    for try await (id, from, body) in result.decode((Int64, String, Data).self) {
                        guard let from = try? NodeID(from) else { continue }
                        rows.append(NodeMessage(id: id, from: from, body: body))
                    }
                    return rows
                }
                for message in rows where state.withLock({ $0.firstTime(message.id, remembering: configuration.rememberedIDs) }) {
                    sink.yield(message)
                }
                // Exactly the rows read: a row with a lower ID than these can still commit
                // (another sender's, inserted earlier, committed later) and be read next time.
                let read = rows.map(\.id)
                if !read.isEmpty {
                    try await store.run("delete messages of node \(node)") { client in
                        try await client.query("DELETE FROM nodeMessage WHERE id = ANY(\(read))")
                    }
                }
            } catch {
                logger.debug("node bus of \(node): \(error)")
            }
        } while state.withLock { $0.end() }
    }
}

/// What a bus remembers between drains: whether one runs (and another was asked for
/// meanwhile), and the IDs handed over lately (a ring of the last `limit`).
struct DrainState: Sendable {
    private var draining = false
    private var again = false
    private var seen: Set<Int64> = []
    private var ring: [Int64] = []
    private var next = 0

    /// True when the caller should drain; false when a drain runs (it will go again).
    mutating func begin() -> Bool {
        if draining {
            again = true
            return false
        }
        draining = true
        return true
    }

    /// True when the drain should go again.
    mutating func end() -> Bool {
        if again {
            again = false
            return true
        }
        draining = false
        return false
    }

    /// Whether `id` is new; remembers the last `limit`.
    mutating func firstTime(_ id: Int64, remembering limit: Int) -> Bool {
        guard seen.insert(id).inserted else { return false }
        if ring.count < limit {
            ring.append(id)
        } else {
            seen.remove(ring[next])
            ring[next] = id
            next = (next + 1) % limit
        }
        return true
    }
}
