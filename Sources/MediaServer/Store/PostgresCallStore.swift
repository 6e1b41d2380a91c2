import Foundation
import Logging
import NIOCore
import PostgresNIO
import Signaling

/// The store several server nodes share: PostgreSQL through postgres-nio, with the same
/// schema history as `SQLiteCallStore` (`StoreSchema`), migrated on start under an advisory
/// lock so that nodes starting together apply each migration once.
///
/// Queries go through a `PostgresClient` pool, which reconnects by itself with backoff
/// when the server restarts. A query that fails because the connection went (a restart, a
/// network fault) is tried again with backoff for up to `retryWindow`: every write is an
/// upsert or a whole transaction, so a retried one is stored once. Errors name the database
/// by its URL without the password.
public final class PostgresCallStore: CallStore {
    /// Where the database is: host, port, user, password and database name.
    public struct Location: Sendable, Hashable, CustomStringConvertible {
        public var host: String
        public var port: Int
        public var user: String
        public var password: String?
        public var database: String

        /// Parses `postgres://USER[:PASSWORD]@HOST[:PORT]/DATABASE` (also `postgresql://`);
        /// user and password may be percent-encoded.
        /// - Parameter password: Used when the URL has none (from a file or `PGPASSWORD`).
        /// - Throws: `StoreError` naming what is missing; the message never holds a password.
        public init(url: String, password fallback: String? = nil) throws(StoreError) {
            guard let components = URLComponents(string: url), ["postgres", "postgresql"].contains(components.scheme ?? "") else {
                throw StoreError("the store URL is not postgres://USER[:PASSWORD]@HOST[:PORT]/DATABASE")
            }
            guard let host = components.host, !host.isEmpty else { throw StoreError("the store URL names no host") }
            guard let user = components.user, !user.isEmpty else { throw StoreError("the store URL names no user") }
            let database = String(components.path.drop { $0 == "/" })
            guard !database.isEmpty, !database.contains("/") else { throw StoreError("the store URL names no database") }
            self.host = host
            port = components.port ?? 5_432
            self.user = user
            password = components.password ?? fallback
            self.database = database
        }

        /// The URL without the password.
        public var description: String { "postgres://\(user)@\(host):\(port)/\(database)" }

        var clientConfiguration: PostgresClient.Configuration {
            PostgresClient.Configuration(host: host, port: port, username: user, password: password, database: database, tls: .disable)
        }

        var connectionConfiguration: PostgresConnection.Configuration {
            PostgresConnection.Configuration(host: host, port: port, username: user, password: password, database: database, tls: .disable)
        }
    }

    public let location: Location
    /// How long a query that lost its connection is retried.
    public let retryWindow: Duration
    let client: PostgresClient
    private let runner: Task<Void, Never>
    private let logger: Logger

    /// Connects, brings the schema up to date and starts the pool.
    ///
    /// - Throws: `StoreError` naming the URL (without its password) when the server cannot
    ///   be reached, refuses the login or the migration fails.
    public init(location: Location, retryWindow: Duration = .seconds(30), logger: Logger) async throws(StoreError) {
        self.location = location
        self.retryWindow = retryWindow
        self.logger = logger
        // One connection first: a pool would retry a refused login for a minute, then fail
        // without the server's reason.
        do {
            let connection = try await PostgresConnection.connect(configuration: location.connectionConfiguration, id: 0, logger: logger)
            do {
                try await Self.migrate(connection, logger: logger)
            } catch {
                try? await connection.close()
                throw error
            }
            try await connection.close()
        } catch {
            throw StoreError("\(location): cannot open the database: \(Self.describe(error))")
        }
        let client = PostgresClient(configuration: location.clientConfiguration, backgroundLogger: logger)
        self.client = client
        runner = Task { await client.run() }
    }

    deinit { runner.cancel() }

    /// Ends the pool's connections.
    public func close() async {
        runner.cancel()
        await runner.value
    }

    /// Applies what of `StoreSchema.history` the database lacks, in one transaction under an
    /// advisory lock (a node starting meanwhile waits, then finds them applied).
    static func migrate(_ connection: PostgresConnection, logger: Logger) async throws {
        try await connection.query("BEGIN", logger: logger)
        do {
            try await connection.query("SELECT pg_advisory_xact_lock(\(Self.migrationLock))", logger: logger)
            try await connection.query("CREATE TABLE IF NOT EXISTS schemaMigration (name TEXT PRIMARY KEY)", logger: logger)
            var applied: Set<String> = []
            for try await name in try await connection.query("SELECT name FROM schemaMigration", logger: logger).decode(String.self) {
                applied.insert(name)
            }
            for migration in StoreSchema.history where !applied.contains(migration.name) {
                for statement in migration.postgres {
                    try await connection.query(PostgresQuery(unsafeSQL: statement), logger: logger)
                }
                try await connection.query("INSERT INTO schemaMigration (name) VALUES (\(migration.name))", logger: logger)
            }
            try await connection.query("COMMIT", logger: logger)
        } catch {
            _ = try? await connection.query("ROLLBACK", logger: logger)
            throw error
        }
    }

    /// The advisory lock key migrations hold: "MEDIAENG" in ASCII.
    static let migrationLock: Int64 = 0x4D45_4449_4145_4E47

    /// The migrations applied, oldest first in the history's order.
    public func appliedMigrations() async throws(StoreError) -> [String] {
        try await run("read") { client in
            var applied: Set<String> = []
            for try await name in try await client.query("SELECT name FROM schemaMigration").decode(String.self) { applied.insert(name) }
            return StoreSchema.history.map(\.name).filter(applied.contains)
        }
    }

    public func save(_ record: CallRecord) async throws(StoreError) {
        try await run("write") { client in
            try await client.query("""
                INSERT INTO callRecord (callID, caller, callee, type, startedAt, connectedDuration, endReason, endedBy)
                VALUES (\(Int64(bitPattern: record.callID)), \(record.caller), \(record.callee), \(Int32(record.type.rawValue)),
                        \(record.startedAt), \(record.connectedDuration), \(record.endReason.rawValue), \(record.endedBy))
                ON CONFLICT (callID) DO UPDATE SET caller = EXCLUDED.caller, callee = EXCLUDED.callee, type = EXCLUDED.type,
                    startedAt = EXCLUDED.startedAt, connectedDuration = EXCLUDED.connectedDuration,
                    endReason = EXCLUDED.endReason, endedBy = EXCLUDED.endedBy
                """)
        }
    }

    public func deviceLoggedIn(account: String, device: String, epochMilliseconds: Int64) async throws(StoreError) {
        try await run("write") { client in
            try await client.query("""
                INSERT INTO device (account, device, lastLogin) VALUES (\(account), \(device), \(epochMilliseconds))
                ON CONFLICT (account, device) DO UPDATE SET lastLogin = EXCLUDED.lastLogin
                """)
        }
    }

    public func records(of account: String, limit: Int) async throws(StoreError) -> [CallRecord] {
        try await run("read") { client in
            let rows = try await client.query("""
                SELECT callID, caller, callee, type, startedAt, connectedDuration, endReason, endedBy FROM callRecord
                WHERE caller = \(account) OR callee = \(account) ORDER BY callID DESC LIMIT \(Int64(max(0, limit)))
                """)
            var records: [CallRecord] = []
            for try await (id, caller, callee, type, startedAt, connected, reason, endedBy)
                in rows.decode((Int64, String, String, Int32, Int64, Int64, String, String?).self) {
                // Rows another version wrote with values this one does not know are skipped.
                guard let type = CallType(rawValue: Int(type)), let reason = CallEndReason(rawValue: reason) else { continue }
                records.append(CallRecord(callID: UInt64(bitPattern: id), caller: caller, callee: callee, type: type, startedAt: startedAt,
                                          connectedDuration: connected, endReason: reason, endedBy: endedBy))
            }
            return records
        }
    }

    public func devices(of account: String) async throws(StoreError) -> [(device: String, lastLogin: Int64)] {
        try await run("read") { client in
            var devices: [(device: String, lastLogin: Int64)] = []
            let rows = try await client.query("SELECT device, lastLogin FROM device WHERE account = \(account) ORDER BY device")
            for try await (device, lastLogin) in rows.decode((String, Int64).self) { devices.append((device, lastLogin)) }
            return devices
        }
    }

    public func recordCount() async throws(StoreError) -> Int {
        try await run("read") { client in
            var count: Int64 = 0
            for try await value in try await client.query("SELECT COUNT(*) FROM callRecord").decode(Int64.self) { count = value }
            return Int(count)
        }
    }

    public func saveMeeting(_ record: MeetingRecord) async throws(StoreError) {
        let logger = logger
        try await run("write") { client in
            try await client.withTransaction(logger: logger) { connection in
                let id = Int64(bitPattern: record.callID)
                try await connection.query("DELETE FROM meetingAttendance WHERE callID = \(id)", logger: logger)
                try await connection.query("""
                    INSERT INTO meetingRecord (callID, name, reservedBy, startedAt, endedAt)
                    VALUES (\(id), \(record.name), \(record.reservedBy), \(record.startedAt), \(record.endedAt))
                    ON CONFLICT (callID) DO UPDATE SET name = EXCLUDED.name, reservedBy = EXCLUDED.reservedBy,
                        startedAt = EXCLUDED.startedAt, endedAt = EXCLUDED.endedAt
                    """, logger: logger)
                for (position, entry) in record.attendance.enumerated() {
                    try await connection.query("""
                        INSERT INTO meetingAttendance (callID, position, account, device, role, joinedAt, leftAt, reason)
                        VALUES (\(id), \(Int32(position)), \(entry.account), \(entry.device), \(entry.role.rawValue),
                                \(entry.joinedAt), \(entry.leftAt), \(entry.reason?.rawValue))
                        """, logger: logger)
                }
            }
        }
    }

    public func meetingRecords(of account: String?, limit: Int) async throws(StoreError) -> [MeetingRecord] {
        try await run("read") { client in
            let rows = try await client.query("""
                SELECT callID, name, reservedBy, startedAt, endedAt FROM meetingRecord
                WHERE \(account)::TEXT IS NULL OR callID IN (SELECT callID FROM meetingAttendance WHERE account = \(account))
                ORDER BY callID DESC LIMIT \(Int64(max(0, limit)))
                """)
            var records: [MeetingRecord] = []
            for try await (id, name, reservedBy, startedAt, endedAt) in rows.decode((Int64, String, String, Int64, Int64).self) {
                records.append(MeetingRecord(callID: UInt64(bitPattern: id), name: name, reservedBy: reservedBy, startedAt: startedAt,
                                             endedAt: endedAt, attendance: []))
            }
            for index in records.indices {
                let entries = try await client.query("""
                    SELECT account, device, role, joinedAt, leftAt, reason FROM meetingAttendance
                    WHERE callID = \(Int64(bitPattern: records[index].callID)) ORDER BY position
                    """)
                for try await (account, device, role, joinedAt, leftAt, reason)
                    in entries.decode((String, String, String, Int64, Int64, String?).self) {
                    guard let role = MeetingRole(rawValue: role) else { continue }
                    records[index].attendance.append(MeetingRecord.Attendance(
                        account: account, device: device, role: role, joinedAt: joinedAt, leftAt: leftAt,
                        reason: reason.flatMap(MeetingLeaveReason.init(rawValue:))))
                }
            }
            return records
        }
    }

    public func saveRTS(_ record: RTSRecord) async throws(StoreError) {
        let logger = logger
        try await run("write") { client in
            try await client.withTransaction(logger: logger) { connection in
                let id = Int64(bitPattern: record.channelID)
                try await connection.query("DELETE FROM rtsMember WHERE channelID = \(id)", logger: logger)
                try await connection.query("""
                    INSERT INTO rtsRecord (channelID, kind, name, createdBy, services, startedAt, endedAt, endReason)
                    VALUES (\(id), \(record.kind.rawValue), \(record.name), \(record.createdBy), \(RTSRecord.servicesText(record.services)),
                            \(record.startedAt), \(record.endedAt), \(record.endReason.rawValue))
                    ON CONFLICT (channelID) DO UPDATE SET kind = EXCLUDED.kind, name = EXCLUDED.name, createdBy = EXCLUDED.createdBy,
                        services = EXCLUDED.services, startedAt = EXCLUDED.startedAt, endedAt = EXCLUDED.endedAt,
                        endReason = EXCLUDED.endReason
                    """, logger: logger)
                for (position, member) in record.members.enumerated() {
                    try await connection.query("""
                        INSERT INTO rtsMember (channelID, position, account, device, joinedAt, leftAt, reason, recordFile)
                        VALUES (\(id), \(Int32(position)), \(member.account), \(member.device), \(member.joinedAt), \(member.leftAt),
                                \(member.reason.rawValue), \(member.recordFile))
                        """, logger: logger)
                }
            }
        }
    }

    public func rtsRecords(of account: String?, limit: Int) async throws(StoreError) -> [RTSRecord] {
        try await run("read") { client in
            let rows = try await client.query("""
                SELECT channelID, kind, name, createdBy, services, startedAt, endedAt, endReason FROM rtsRecord
                WHERE \(account)::TEXT IS NULL OR channelID IN (SELECT channelID FROM rtsMember WHERE account = \(account))
                ORDER BY channelID DESC LIMIT \(Int64(max(0, limit)))
                """)
            var records: [RTSRecord] = []
            for try await (id, kind, name, createdBy, services, startedAt, endedAt, endReason)
                in rows.decode((Int64, String, String, String, String, Int64, Int64, String).self) {
                guard let kind = RTSRecord.Kind(rawValue: kind), let reason = RTSEndReason(rawValue: endReason) else { continue }
                records.append(RTSRecord(channelID: UInt64(bitPattern: id), kind: kind, name: name, createdBy: createdBy,
                                         services: RTSRecord.services(services), startedAt: startedAt, endedAt: endedAt,
                                         endReason: reason, members: []))
            }
            for index in records.indices {
                let entries = try await client.query("""
                    SELECT account, device, joinedAt, leftAt, reason, recordFile FROM rtsMember
                    WHERE channelID = \(Int64(bitPattern: records[index].channelID)) ORDER BY position
                    """)
                for try await (account, device, joinedAt, leftAt, reason, recordFile)
                    in entries.decode((String, String, Int64, Int64, String, String?).self) {
                    guard let reason = RTSLeaveReason(rawValue: reason) else { continue }
                    records[index].members.append(RTSRecord.Member(account: account, device: device, joinedAt: joinedAt, leftAt: leftAt,
                                                                   reason: reason, recordFile: recordFile))
                }
            }
            return records
        }
    }

    /// Runs `body` in one transaction (retried whole when the connection went).
    func transaction<T: Sendable>(_ what: String, _ body: @escaping @Sendable (PostgresConnection, Logger) async throws -> T)
        async throws(StoreError) -> T {
        let logger = logger
        return try await run(what) { client in
            try await client.withTransaction(logger: logger) { connection in try await body(connection, logger) }
        }
    }

    func run<T: Sendable>(_ what: String, _ body: @escaping @Sendable (PostgresClient) async throws -> T) async throws(StoreError) -> T {
        let deadline = ContinuousClock.now + retryWindow
        var delay = Duration.milliseconds(50)
        let client = client
        while true {
            do {
                // The pool holds a query while it has no connection (for a minute, while
                // PostgreSQL is down): an attempt ends at the deadline instead.
                return try await withThrowingTaskGroup(of: T?.self) { group in
                    group.addTask { try await body(client) }
                    group.addTask {
                        try await Task.sleep(until: deadline)
                        return nil
                    }
                    defer { group.cancelAll() }
                    guard let first = try await group.next(), let result = first else {
                        throw StoreUnreachable(window: self.retryWindow)
                    }
                    return result
                }
            } catch {
                guard Self.lostConnection(error), ContinuousClock.now + delay < deadline, !Task.isCancelled else {
                    throw StoreError("\(location): \(what) failed: \(Self.describe(error))")
                }
                logger.debug("store: \(what) lost its connection; trying again in \(delay)")
                try? await Task.sleep(for: delay)
                delay = min(delay * 2, .seconds(2))
            }
        }
    }

    /// No connection within the retry window.
    struct StoreUnreachable: Error, CustomStringConvertible {
        let window: Duration
        var description: String { "no connection to the database within \(window)" }
    }

    /// Whether `error` says the connection went rather than the query was wrong: the
    /// server closed it or shut down (SQLSTATE class 57P), or the link failed (class 08).
    static func lostConnection(_ error: any Error) -> Bool {
        if let error = error as? PostgresTransactionError {
            return [error.beginError, error.closureError, error.commitError].contains { $0.map(lostConnection) ?? false }
        }
        guard let error = error as? PSQLError else { return false }
        if [.serverClosedConnection, .connectionError, .uncleanShutdown].contains(error.code) { return true }
        let state = error.serverInfo?[.sqlState] ?? ""
        return error.code == .server && (state.hasPrefix("57P") || state.hasPrefix("08"))
    }

    /// What went wrong, in the server's words when it said something.
    static func describe(_ error: any Error) -> String {
        if let error = error as? PSQLError {
            if let message = error.serverInfo?[.message] {
                return "\(message) (SQLSTATE \(error.serverInfo?[.sqlState] ?? "?"))"
            }
            if let underlying = error.underlying { return "\(error.code): \(underlying)" }
            return "\(error.code)"
        }
        if let error = error as? PostgresTransactionError {
            return describe(error.closureError ?? error.commitError ?? error.beginError ?? error.rollbackError ?? error)
        }
        return "\(error)"
    }
}
