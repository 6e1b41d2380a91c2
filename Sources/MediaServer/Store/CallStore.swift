import Foundation
import GRDB
import Signaling

/// A failure of the server's store, naming the database and what went wrong.
public struct StoreError: Error, Sendable, Hashable, CustomStringConvertible {
    public let message: String

    public init(_ message: String) { self.message = message }

    public var description: String { message }
}

/// Where the server keeps what must outlive it: call records and the devices that logged in.
public protocol CallStore: Sendable {
    /// Stores one finished call. A record with the same callID replaces the old one.
    func save(_ record: CallRecord) async throws(StoreError)
    /// Notes a login of `device` of `account` at `epochMilliseconds`.
    func deviceLoggedIn(account: String, device: String, epochMilliseconds: Int64) async throws(StoreError)
    /// The newest records where `account` was caller or callee, newest first.
    func records(of account: String, limit: Int) async throws(StoreError) -> [CallRecord]
    /// The devices `account` has logged in from, by name, with their last login.
    func devices(of account: String) async throws(StoreError) -> [(device: String, lastLogin: Int64)]
    /// Records stored.
    func recordCount() async throws(StoreError) -> Int
    /// Stores one finished meeting with its attendance. A record with the same callID
    /// replaces the old one.
    func saveMeeting(_ record: MeetingRecord) async throws(StoreError)
    /// The newest meeting records `account` attended (nil: any), newest first.
    func meetingRecords(of account: String?, limit: Int) async throws(StoreError) -> [MeetingRecord]
    /// Stores one finished real-time session or conference with its members. A record with
    /// the same channelID replaces the old one.
    func saveRTS(_ record: RTSRecord) async throws(StoreError)
    /// The newest real-time session and conference records `account` was in (nil: any), newest first.
    func rtsRecords(of account: String?, limit: Int) async throws(StoreError) -> [RTSRecord]
}

/// The embedded default store: one SQLite file through GRDB, created on first start and
/// migrated on every start (`DatabaseMigrator`: migrations run once each, in order).
/// Writes go through GRDB's serialized queue; WAL mode lets them survive a crash between
/// records. `path` nil keeps everything in memory (tests).
public final class SQLiteCallStore: CallStore {
    private let database: DatabaseQueue
    private let name: String

    /// Opens or creates the database and brings its schema up to date.
    ///
    /// - Throws: `StoreError` naming the path when it cannot be opened (a missing
    ///   directory, no permission, not a database) or migrated.
    public init(path: String?) throws(StoreError) {
        name = path ?? ":memory:"
        do {
            if let path {
                var configuration = Configuration()
                configuration.journalMode = .wal
                database = try DatabaseQueue(path: path, configuration: configuration)
            } else {
                database = try DatabaseQueue()
            }
            try Self.migrator.migrate(database)
        } catch {
            throw StoreError("\(name): cannot open the database: \(Self.describe(error))")
        }
    }

    static var migrator: DatabaseMigrator { StoreSchema.sqliteMigrator }

    /// The migrations applied, oldest first.
    public func appliedMigrations() throws(StoreError) -> [String] {
        do {
            return try database.read { db in try Self.migrator.appliedMigrations(db) }
        } catch {
            throw StoreError("\(name): \(Self.describe(error))")
        }
    }

    public func save(_ record: CallRecord) async throws(StoreError) {
        try await write { db in
            try db.execute(sql: """
                INSERT OR REPLACE INTO callRecord (callID, caller, callee, type, startedAt, connectedDuration, endReason, endedBy)
                VALUES (?, ?, ?, ?, ?, ?, ?, ?)
                """, arguments: [Int64(bitPattern: record.callID), record.caller, record.callee, record.type.rawValue,
                                 record.startedAt, record.connectedDuration, record.endReason.rawValue, record.endedBy])
        }
    }

    public func deviceLoggedIn(account: String, device: String, epochMilliseconds: Int64) async throws(StoreError) {
        try await write { db in
            try db.execute(sql: "INSERT OR REPLACE INTO device (account, device, lastLogin) VALUES (?, ?, ?)",
                           arguments: [account, device, epochMilliseconds])
        }
    }

    public func records(of account: String, limit: Int) async throws(StoreError) -> [CallRecord] {
        try await read { db in
            try Row.fetchAll(db, sql: """
                SELECT * FROM callRecord WHERE caller = ? OR callee = ? ORDER BY callID DESC LIMIT ?
                """, arguments: [account, account, max(0, limit)]).compactMap(Self.record)
        }
    }

    public func devices(of account: String) async throws(StoreError) -> [(device: String, lastLogin: Int64)] {
        try await read { db in
            try Row.fetchAll(db, sql: "SELECT device, lastLogin FROM device WHERE account = ? ORDER BY device",
                             arguments: [account]).map { (device: $0["device"], lastLogin: $0["lastLogin"]) }
        }
    }

    public func recordCount() async throws(StoreError) -> Int {
        try await read { db in try Int.fetchOne(db, sql: "SELECT COUNT(*) FROM callRecord") ?? 0 }
    }

    public func saveMeeting(_ record: MeetingRecord) async throws(StoreError) {
        try await write { db in
            let id = Int64(bitPattern: record.callID)
            try db.execute(sql: "DELETE FROM meetingAttendance WHERE callID = ?", arguments: [id])
            try db.execute(sql: """
                INSERT OR REPLACE INTO meetingRecord (callID, name, reservedBy, startedAt, endedAt) VALUES (?, ?, ?, ?, ?)
                """, arguments: [id, record.name, record.reservedBy, record.startedAt, record.endedAt])
            for (position, entry) in record.attendance.enumerated() {
                try db.execute(sql: """
                    INSERT INTO meetingAttendance (callID, position, account, device, role, joinedAt, leftAt, reason)
                    VALUES (?, ?, ?, ?, ?, ?, ?, ?)
                    """, arguments: [id, position, entry.account, entry.device, entry.role.rawValue, entry.joinedAt, entry.leftAt,
                                     entry.reason?.rawValue])
            }
        }
    }

    public func meetingRecords(of account: String?, limit: Int) async throws(StoreError) -> [MeetingRecord] {
        try await read { db in
            let rows = try Row.fetchAll(db, sql: """
                SELECT * FROM meetingRecord
                WHERE ?1 IS NULL OR callID IN (SELECT callID FROM meetingAttendance WHERE account = ?1)
                ORDER BY callID DESC LIMIT ?2
                """, arguments: [account, max(0, limit)])
            return try rows.map { row in
                let id: Int64 = row["callID"]
                let attendance = try Row.fetchAll(db, sql: "SELECT * FROM meetingAttendance WHERE callID = ? ORDER BY position",
                                                  arguments: [id]).compactMap { entry -> MeetingRecord.Attendance? in
                    guard let role = MeetingRole(rawValue: entry["role"]) else { return nil }
                    let reason: String? = entry["reason"]
                    return MeetingRecord.Attendance(account: entry["account"], device: entry["device"], role: role,
                                                    joinedAt: entry["joinedAt"], leftAt: entry["leftAt"],
                                                    reason: reason.flatMap(MeetingLeaveReason.init(rawValue:)))
                }
                return MeetingRecord(callID: UInt64(bitPattern: id), name: row["name"], reservedBy: row["reservedBy"],
                                     startedAt: row["startedAt"], endedAt: row["endedAt"], attendance: attendance)
            }
        }
    }

    public func saveRTS(_ record: RTSRecord) async throws(StoreError) {
        try await write { db in
            let id = Int64(bitPattern: record.channelID)
            try db.execute(sql: "DELETE FROM rtsMember WHERE channelID = ?", arguments: [id])
            try db.execute(sql: """
                INSERT OR REPLACE INTO rtsRecord (channelID, kind, name, createdBy, services, startedAt, endedAt, endReason)
                VALUES (?, ?, ?, ?, ?, ?, ?, ?)
                """, arguments: [id, record.kind.rawValue, record.name, record.createdBy, RTSRecord.servicesText(record.services),
                                 record.startedAt, record.endedAt, record.endReason.rawValue])
            for (position, member) in record.members.enumerated() {
                try db.execute(sql: """
                    INSERT INTO rtsMember (channelID, position, account, device, joinedAt, leftAt, reason, recordFile)
                    VALUES (?, ?, ?, ?, ?, ?, ?, ?)
                    """, arguments: [id, position, member.account, member.device, member.joinedAt, member.leftAt,
                                     member.reason.rawValue, member.recordFile])
            }
        }
    }

    public func rtsRecords(of account: String?, limit: Int) async throws(StoreError) -> [RTSRecord] {
        try await read { db in
            let rows = try Row.fetchAll(db, sql: """
                SELECT * FROM rtsRecord
                WHERE ?1 IS NULL OR channelID IN (SELECT channelID FROM rtsMember WHERE account = ?1)
                ORDER BY channelID DESC LIMIT ?2
                """, arguments: [account, max(0, limit)])
            return try rows.compactMap { row -> RTSRecord? in
                let id: Int64 = row["channelID"]
                guard let kind = RTSRecord.Kind(rawValue: row["kind"]), let reason = RTSEndReason(rawValue: row["endReason"]) else {
                    return nil
                }
                let members = try Row.fetchAll(db, sql: "SELECT * FROM rtsMember WHERE channelID = ? ORDER BY position",
                                               arguments: [id]).compactMap { entry -> RTSRecord.Member? in
                    guard let reason = RTSLeaveReason(rawValue: entry["reason"]) else { return nil }
                    return RTSRecord.Member(account: entry["account"], device: entry["device"], joinedAt: entry["joinedAt"],
                                            leftAt: entry["leftAt"], reason: reason, recordFile: entry["recordFile"])
                }
                return RTSRecord(channelID: UInt64(bitPattern: id), kind: kind, name: row["name"], createdBy: row["createdBy"],
                                 services: RTSRecord.services(row["services"]), startedAt: row["startedAt"], endedAt: row["endedAt"],
                                 endReason: reason, members: members)
            }
        }
    }

    /// A row as a record; rows another version wrote with values this one does not know are skipped.
    private static func record(_ row: Row) -> CallRecord? {
        guard let type = CallType(rawValue: row["type"]), let reason = CallEndReason(rawValue: row["endReason"]) else {
            return nil
        }
        let id: Int64 = row["callID"]
        return CallRecord(callID: UInt64(bitPattern: id), caller: row["caller"], callee: row["callee"], type: type,
                          startedAt: row["startedAt"], connectedDuration: row["connectedDuration"], endReason: reason,
                          endedBy: row["endedBy"])
    }

    private func write(_ body: @escaping @Sendable (Database) throws -> Void) async throws(StoreError) {
        do {
            try await database.write(body)
        } catch {
            throw StoreError("\(name): write failed: \(Self.describe(error))")
        }
    }

    private func read<T: Sendable>(_ body: @escaping @Sendable (Database) throws -> T) async throws(StoreError) -> T {
        do {
            return try await database.read(body)
        } catch {
            throw StoreError("\(name): read failed: \(Self.describe(error))")
        }
    }

    private static func describe(_ error: any Error) -> String {
        if let error = error as? DatabaseError { return error.message ?? "SQLite error \(error.resultCode.rawValue)" }
        return "\(error)"
    }
}
