import Foundation
import PostgresNIO

/// Where a logged-in device is: its node and its connection there.
public struct DevicePresence: Sendable, Hashable {
    public var account: String
    public var device: String
    public var node: NodeID
    public var connection: UInt64
}

/// Which node each logged-in device is on, in the store the nodes share: a login writes its
/// row (taking over the device's row from wherever it was), a closed connection removes
/// its own row only, and rows of dead nodes (silent for the registry's `deadAfter`) are
/// never listed and are swept.
public struct Presence: Sendable {
    public let registry: NodeRegistry
    public var store: PostgresCallStore { registry.store }

    public init(registry: NodeRegistry) { self.registry = registry }

    /// `device` of `account` logged in on `node`'s `connection`.
    /// - Returns: where it was logged in before, if elsewhere (that connection is to be closed).
    public func arrive(account: String, device: String, node: NodeID, connection: UInt64) async throws(StoreError) -> DevicePresence? {
        try await store.transaction("presence of \(account)") { db, logger in
            let rows = try await db.query("""
                SELECT node, connection FROM presence WHERE account = \(account) AND device = \(device) FOR UPDATE
                """, logger: logger)
            var previous: DevicePresence?
            for try await (oldNode, oldConnection) in rows.decode((String, Int64).self) {
                if let oldNode = try? NodeID(oldNode), oldNode != node || UInt64(bitPattern: oldConnection) != connection {
                    previous = DevicePresence(account: account, device: device, node: oldNode, connection: UInt64(bitPattern: oldConnection))
                }
            }
            try await db.query("""
                INSERT INTO presence (account, device, node, connection, since)
                VALUES (\(account), \(device), \(node.rawValue), \(Int64(bitPattern: connection)), \(unescaped: NodeRegistry.now))
                ON CONFLICT (account, device) DO UPDATE SET node = EXCLUDED.node, connection = EXCLUDED.connection, since = EXCLUDED.since
                """, logger: logger)
            return previous
        }
    }

    /// The connection closed: its row goes, unless the device has logged in elsewhere since.
    public func leave(account: String, device: String, node: NodeID, connection: UInt64) async throws(StoreError) {
        try await store.run("presence of \(account)") { client in
            try await client.query("""
                DELETE FROM presence WHERE account = \(account) AND device = \(device) AND node = \(node.rawValue)
                    AND connection = \(Int64(bitPattern: connection))
                """)
        }
    }

    /// The devices of `account` on live nodes, by device.
    public func devices(of account: String) async throws(StoreError) -> [DevicePresence] {
        let deadAfter = Int64(registry.configuration.deadAfter / .milliseconds(1))
        return try await store.run("presence of \(account)") { client in
            let rows = try await client.query("""
                SELECT presence.device, presence.node, presence.connection FROM presence JOIN node ON node.id = presence.node
                WHERE presence.account = \(account) AND \(unescaped: NodeRegistry.now) - node.heartbeatAt < \(deadAfter)
                ORDER BY presence.device
                """)
            var devices: [DevicePresence] = []
            for try await (device, node, connection) in rows.decode((String, String, Int64).self) {
                guard let node = try? NodeID(node) else { continue }
                devices.append(DevicePresence(account: account, device: device, node: node, connection: UInt64(bitPattern: connection)))
            }
            return devices
        }
    }

    /// Removes every row of `node` (a node found dead, or one starting again after a crash).
    /// - Returns: how many there were.
    @discardableResult
    public func sweep(_ node: NodeID) async throws(StoreError) -> Int {
        try await store.run("presence of node \(node)") { client in
            var count = 0
            for try await _ in try await client.query("DELETE FROM presence WHERE node = \(node.rawValue) RETURNING account").decode(String.self) {
                count += 1
            }
            return count
        }
    }
}
