import Foundation
import Logging
import Signaling
import Testing
import TestSupport
@testable import MediaServer

/// Both stores keep the same things the same way: SQLite (a file) and PostgreSQL (a
/// cluster of the test's own).
@Suite(.serialized) struct Stores {
    enum Kind: String, CaseIterable, Sendable { case sqlite, postgres }

    /// A fresh store of `kind`, and what to keep alive while it is used.
    static func open(_ kind: Kind) async throws -> (any CallStore, AnyObject?) {
        switch kind {
        case .sqlite:
            return (try SQLiteCallStore(path: nil), nil)
        case .postgres:
            let server = try PostgresTestServer()
            try server.createDatabase("mediaengine")
            let store = try await PostgresCallStore(location: .init(url: server.url(database: "mediaengine")), logger: Self.quiet)
            return (store, server)
        }
    }

    static let quiet: Logger = {
        var logger = Logger(label: "test.store")
        logger.logLevel = .critical
        return logger
    }()

    static let meeting = MeetingRecord(callID: 1 << 52 | 5, name: "weekly", reservedBy: "alice", startedAt: 1_000, endedAt: 61_000, attendance: [
        .init(account: "bob", device: "phone", role: .audience, joinedAt: 1_000, leftAt: 3_000, reason: nil),
        .init(account: "bob", device: "phone", role: .actor, joinedAt: 3_000, leftAt: 61_000, reason: .timedOut),
        .init(account: "alice", device: "d", role: .actor, joinedAt: 2_000, leftAt: 61_000, reason: .left),
    ])

    @Test(arguments: Kind.allCases)
    func recordsDevicesAndMeetingsAreKeptAndASecondSaveReplacesTheFirst(_ kind: Kind) async throws {
        let (store, server) = try await Self.open(kind)
        defer { withExtendedLifetime(server) {} }
        let first = CallRecord(callID: 1 << 52 | 7, caller: "alice", callee: "bob", type: .video, startedAt: 1_700_000_000_000,
                               connectedDuration: 0, endReason: .missed, endedBy: nil)
        var second = CallRecord(callID: 1 << 52 | 9, caller: "bob", callee: "carol", type: .audio, startedAt: 1_700_000_100_000,
                                connectedDuration: 12_345, endReason: .completed, endedBy: "carol")
        try await store.save(first)
        try await store.save(second)
        second.connectedDuration = 12_346
        try await store.save(second)
        #expect(try await store.records(of: "bob", limit: 10) == [second, first], "newest call ID first, the second saved once")
        #expect(try await store.records(of: "bob", limit: 1) == [second])
        #expect(try await store.records(of: "carol", limit: 10) == [second])
        #expect(try await store.records(of: "dave", limit: 10).isEmpty)
        // Call IDs are unsigned, kept as their signed bit pattern.
        let top = CallRecord(callID: 1 << 63 | 3, caller: "erin", callee: "frank", type: .audio, startedAt: 5, connectedDuration: 6,
                             endReason: .rejected, endedBy: "frank")
        try await store.save(top)
        #expect(try await store.records(of: "erin", limit: 10) == [top])
        #expect(try await store.recordCount() == 3)

        try await store.deviceLoggedIn(account: "bob", device: "phone", epochMilliseconds: 1)
        try await store.deviceLoggedIn(account: "bob", device: "laptop", epochMilliseconds: 2)
        try await store.deviceLoggedIn(account: "bob", device: "phone", epochMilliseconds: 3)
        let devices = try await store.devices(of: "bob")
        #expect(devices.map(\.device) == ["laptop", "phone"] && devices.map(\.lastLogin) == [2, 3])

        try await store.saveMeeting(Self.meeting)
        try await store.saveMeeting(Self.meeting)
        #expect(try await store.meetingRecords(of: "bob", limit: 10) == [Self.meeting], "saved twice, stored once")
        #expect(try await store.meetingRecords(of: nil, limit: 10) == [Self.meeting])
        #expect(try await store.meetingRecords(of: "carol", limit: 10).isEmpty)
    }

    @Test func bothStoresApplyTheSameSchemaHistory() async throws {
        let sqlite = try SQLiteCallStore(path: nil)
        let server = try PostgresTestServer()
        let postgres = try await PostgresCallStore(location: .init(url: server.url()), logger: Self.quiet)
        let names = StoreSchema.history.map(\.name)
        #expect(try sqlite.appliedMigrations() == names)
        #expect(try await postgres.appliedMigrations() == names)
        await postgres.close()
    }

    /// Nodes starting together migrate once: each waits for the lock, then finds the
    /// migrations applied.
    @Test func storesOpeningTogetherMigrateOnce() async throws {
        let server = try PostgresTestServer()
        let location = try PostgresCallStore.Location(url: server.url())
        let stores = try await withThrowingTaskGroup(of: PostgresCallStore.self) { group in
            for _ in 0..<3 { group.addTask { try await PostgresCallStore(location: location, logger: Self.quiet) } }
            return try await group.reduce(into: []) { $0.append($1) }
        }
        #expect(stores.count == 3)
        for store in stores {
            #expect(try await store.appliedMigrations() == StoreSchema.history.map(\.name))
            await store.close()
        }
    }

    /// PostgreSQL down, a wrong password, a database that is not there, a URL that is
    /// not one: each a `StoreError` naming the URL, never the password.
    @Test func aStoreThatCannotOpenSaysWhereAndWhyWithoutThePassword() async throws {
        let server = try PostgresTestServer()
        let cases: [(String, String)] = [
            (server.url(password: "wrong-horse-battery"), "password authentication failed"),
            (server.url(database: "nothing-here"), "does not exist"),
        ]
        for (url, reason) in cases {
            let error = await #expect(throws: StoreError.self) { try await PostgresCallStore(location: .init(url: url), logger: Self.quiet) }
            let message = error?.message ?? ""
            #expect(message.contains("postgres://\(server.user)@127.0.0.1:\(server.port)/") && message.contains(reason), "\(message)")
            #expect(!message.contains(server.password) && !message.contains("wrong-horse-battery"))
        }
        let port = server.port
        server.stop()
        let down = await #expect(throws: StoreError.self) { try await PostgresCallStore(location: .init(url: server.url()), logger: Self.quiet) }
        #expect(down?.message.contains("postgres://\(server.user)@127.0.0.1:\(port)/postgres: cannot open the database") == true,
                "\(String(describing: down))")
        #expect(down?.message.contains(server.password) == false)

        for (url, message) in [("sqlite:calls.db", "is not postgres://"), ("postgres://127.0.0.1/db", "names no user"),
                               ("postgres://u@/db", "names no host"), ("postgres://u:p@127.0.0.1:5432/", "names no database")] {
            let error = #expect(throws: StoreError.self) { try PostgresCallStore.Location(url: url) }
            #expect(error?.message.contains(message) == true, "\(url): \(String(describing: error))")
        }
        let fallback = try PostgresCallStore.Location(url: "postgres://u@h/db", password: "from-a-file")
        #expect(fallback.password == "from-a-file" && fallback.port == 5_432 && fallback.description == "postgres://u@h:5432/db")
        #expect(try PostgresCallStore.Location(url: "postgresql://u:in-url@h:6000/db", password: "from-a-file").password == "in-url")
    }

    /// PostgreSQL restarting: a write that lost its connection is tried again once the
    /// pool has reconnected, and lands once.
    @Test func aStoreCarriesOnAfterPostgreSQLRestarts() async throws {
        let server = try PostgresTestServer()
        let store = try await PostgresCallStore(location: .init(url: server.url()), logger: Self.quiet)
        let record = CallRecord(callID: 1, caller: "alice", callee: "bob", type: .audio, startedAt: 1, connectedDuration: 2,
                                endReason: .completed, endedBy: "bob")
        try await store.save(record)
        try server.restart()
        try await store.save(CallRecord(callID: 2, caller: "bob", callee: "alice", type: .audio, startedAt: 3, connectedDuration: 4,
                                        endReason: .completed, endedBy: "alice"))
        try await store.saveMeeting(Self.meeting)
        #expect(try await store.records(of: "alice", limit: 10).map(\.callID) == [2, 1])
        #expect(try await store.meetingRecords(of: nil, limit: 10) == [Self.meeting])

        // Down for longer than the store waits: the write fails, naming the database.
        let brief = try await PostgresCallStore(location: .init(url: server.url()), retryWindow: .milliseconds(500), logger: Self.quiet)
        server.stop()
        let error = await #expect(throws: StoreError.self) { try await brief.recordCount() }
        #expect(error?.message.contains("postgres://\(server.user)@127.0.0.1:\(server.port)/postgres: read failed") == true,
                "\(String(describing: error))")
        await brief.close()
        await store.close()
    }
}
