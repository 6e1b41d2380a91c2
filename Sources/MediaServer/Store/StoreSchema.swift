import GRDB

/// The store's schema history, one list for both stores: each migration has a name (what
/// `appliedMigrations()` lists), what it does to SQLite (GRDB's schema builder) and the
/// same in PostgreSQL's SQL. A store applies the ones it has not, in order, once each.
/// Column names are the same in both; PostgreSQL folds unquoted ones to lower case.
enum StoreSchema {
    struct Migration: Sendable {
        let name: String
        let sqlite: @Sendable (Database) throws -> Void
        let postgres: [String]
    }

    static let history: [Migration] = [
        Migration(name: "v1: call records and devices", sqlite: { db in
            try db.create(table: "callRecord") { table in
                table.primaryKey("callID", .integer)
                table.column("caller", .text).notNull().indexed()
                table.column("callee", .text).notNull().indexed()
                table.column("type", .integer).notNull()
                table.column("startedAt", .integer).notNull()
                table.column("connectedDuration", .integer).notNull()
                table.column("endReason", .text).notNull()
                table.column("endedBy", .text)
            }
            try db.create(table: "device") { table in
                table.column("account", .text).notNull()
                table.column("device", .text).notNull()
                table.column("lastLogin", .integer).notNull()
                table.primaryKey(["account", "device"])
            }
        }, postgres: [
            """
            CREATE TABLE callRecord (callID BIGINT PRIMARY KEY, caller TEXT NOT NULL, callee TEXT NOT NULL, type INTEGER NOT NULL,
                startedAt BIGINT NOT NULL, connectedDuration BIGINT NOT NULL, endReason TEXT NOT NULL, endedBy TEXT)
            """,
            "CREATE INDEX callRecord_on_caller ON callRecord (caller)",
            "CREATE INDEX callRecord_on_callee ON callRecord (callee)",
            "CREATE TABLE device (account TEXT NOT NULL, device TEXT NOT NULL, lastLogin BIGINT NOT NULL, PRIMARY KEY (account, device))",
        ]),
        Migration(name: "v2: meeting records", sqlite: { db in
            try db.create(table: "meetingRecord") { table in
                table.primaryKey("callID", .integer)
                table.column("name", .text).notNull().indexed()
                table.column("reservedBy", .text).notNull()
                table.column("startedAt", .integer).notNull()
                table.column("endedAt", .integer).notNull()
            }
            try db.create(table: "meetingAttendance") { table in
                table.column("callID", .integer).notNull().indexed()
                    .references("meetingRecord", column: "callID", onDelete: .cascade)
                table.column("position", .integer).notNull()
                table.column("account", .text).notNull().indexed()
                table.column("device", .text).notNull()
                table.column("role", .text).notNull()
                table.column("joinedAt", .integer).notNull()
                table.column("leftAt", .integer).notNull()
                table.column("reason", .text)
                table.primaryKey(["callID", "position"])
            }
        }, postgres: [
            """
            CREATE TABLE meetingRecord (callID BIGINT PRIMARY KEY, name TEXT NOT NULL, reservedBy TEXT NOT NULL,
                startedAt BIGINT NOT NULL, endedAt BIGINT NOT NULL)
            """,
            "CREATE INDEX meetingRecord_on_name ON meetingRecord (name)",
            """
            CREATE TABLE meetingAttendance (callID BIGINT NOT NULL REFERENCES meetingRecord (callID) ON DELETE CASCADE,
                position INTEGER NOT NULL, account TEXT NOT NULL, device TEXT NOT NULL, role TEXT NOT NULL,
                joinedAt BIGINT NOT NULL, leftAt BIGINT NOT NULL, reason TEXT, PRIMARY KEY (callID, position))
            """,
            "CREATE INDEX meetingAttendance_on_account ON meetingAttendance (account)",
        ]),
        // Server nodes sharing the store (PostgreSQL; SQLite holds the table too, one
        // history for both, but a single node never uses it). Times are the database's
        // clock in milliseconds, so nodes' clocks never need to agree.
        Migration(name: "v3: nodes", sqlite: { db in
            try db.create(table: "node") { table in
                table.primaryKey("id", .text)
                table.column("incarnation", .text).notNull()
                table.column("signalingURL", .text).notNull()
                table.column("mediaAddress", .text).notNull()
                table.column("load", .integer).notNull()
                table.column("startedAt", .integer).notNull()
                table.column("heartbeatAt", .integer).notNull()
            }
        }, postgres: [
            """
            CREATE TABLE node (id TEXT PRIMARY KEY, incarnation TEXT NOT NULL, signalingURL TEXT NOT NULL, mediaAddress TEXT NOT NULL,
                load INTEGER NOT NULL, startedAt BIGINT NOT NULL, heartbeatAt BIGINT NOT NULL)
            """,
        ]),
        // Messages between nodes: a row per message, announced by NOTIFY on the receiving
        // node's channel, deleted once handled (PostgreSQL only; see ClusterBus).
        Migration(name: "v4: node messages", sqlite: { db in
            try db.create(table: "nodeMessage") { table in
                table.autoIncrementedPrimaryKey("id")
                table.column("toNode", .text).notNull().indexed()
                table.column("fromNode", .text).notNull()
                table.column("key", .text).notNull().unique()
                table.column("body", .blob).notNull()
            }
        }, postgres: [
            """
            CREATE TABLE nodeMessage (id BIGSERIAL PRIMARY KEY, toNode TEXT NOT NULL, fromNode TEXT NOT NULL, key TEXT NOT NULL UNIQUE,
                body BYTEA NOT NULL)
            """,
            "CREATE INDEX nodeMessage_on_toNode ON nodeMessage (toNode, id)",
        ]),
        // Which node and connection each logged-in device is on (PostgreSQL; see Presence).
        Migration(name: "v5: presence", sqlite: { db in
            try db.create(table: "presence") { table in
                table.column("account", .text).notNull()
                table.column("device", .text).notNull()
                table.column("node", .text).notNull().indexed()
                table.column("connection", .integer).notNull()
                table.column("since", .integer).notNull()
                table.primaryKey(["account", "device"])
            }
        }, postgres: [
            """
            CREATE TABLE presence (account TEXT NOT NULL, device TEXT NOT NULL, node TEXT NOT NULL, connection BIGINT NOT NULL,
                since BIGINT NOT NULL, PRIMARY KEY (account, device))
            """,
            "CREATE INDEX presence_on_node ON presence (node)",
        ]),
        // The call each account is in, whichever node owns it (PostgreSQL; see CallParties).
        Migration(name: "v6: call parties", sqlite: { db in
            try db.create(table: "callParty") { table in
                table.primaryKey("account", .text)
                table.column("callID", .integer).notNull()
                table.column("node", .text).notNull().indexed()
                table.column("since", .integer).notNull()
            }
        }, postgres: [
            "CREATE TABLE callParty (account TEXT PRIMARY KEY, callID BIGINT NOT NULL, node TEXT NOT NULL, since BIGINT NOT NULL)",
            "CREATE INDEX callParty_on_node ON callParty (node)",
            "CREATE INDEX callParty_on_callID ON callParty (callID)",
            // Call IDs of every node: each node's own counter would give two calls started
            // in the same millisecond on two nodes one ID (and one record).
            "CREATE SEQUENCE callIDs",
        ]),
        // Which node hosts each meeting, and who is in it (PostgreSQL; see MeetingPlaces).
        Migration(name: "v7: meeting places", sqlite: { db in
            try db.create(table: "meetingPlace") { table in
                table.primaryKey("name", .text)
                table.column("node", .text).notNull().indexed()
                table.column("since", .integer).notNull()
            }
            try db.create(table: "meetingMember") { table in
                table.primaryKey("account", .text)
                table.column("device", .text).notNull()
                table.column("meeting", .integer).notNull()
                table.column("host", .text).notNull().indexed()
            }
        }, postgres: [
            "CREATE TABLE meetingPlace (name TEXT PRIMARY KEY, node TEXT NOT NULL, since BIGINT NOT NULL)",
            "CREATE INDEX meetingPlace_on_node ON meetingPlace (node)",
            // Who is in which meeting on which host: a device logging in again on another
            // node finds its meeting there.
            """
            CREATE TABLE meetingMember (account TEXT PRIMARY KEY, device TEXT NOT NULL, meeting BIGINT NOT NULL,
                host TEXT NOT NULL)
            """,
            "CREATE INDEX meetingMember_on_host ON meetingMember (host)",
        ]),
        // Real-time sessions and conferences, with their members (and recording files).
        Migration(name: "v8: real-time session records", sqlite: { db in
            try db.create(table: "rtsRecord") { table in
                table.primaryKey("channelID", .integer)
                table.column("kind", .text).notNull()
                table.column("name", .text).notNull().indexed()
                table.column("createdBy", .text).notNull()
                table.column("services", .text).notNull()
                table.column("startedAt", .integer).notNull()
                table.column("endedAt", .integer).notNull()
                table.column("endReason", .text).notNull()
            }
            try db.create(table: "rtsMember") { table in
                table.column("channelID", .integer).notNull().indexed()
                    .references("rtsRecord", column: "channelID", onDelete: .cascade)
                table.column("position", .integer).notNull()
                table.column("account", .text).notNull().indexed()
                table.column("device", .text).notNull()
                table.column("joinedAt", .integer).notNull()
                table.column("leftAt", .integer).notNull()
                table.column("reason", .text).notNull()
                table.column("recordFile", .text)
                table.primaryKey(["channelID", "position"])
            }
        }, postgres: [
            """
            CREATE TABLE rtsRecord (channelID BIGINT PRIMARY KEY, kind TEXT NOT NULL, name TEXT NOT NULL, createdBy TEXT NOT NULL,
                services TEXT NOT NULL, startedAt BIGINT NOT NULL, endedAt BIGINT NOT NULL, endReason TEXT NOT NULL)
            """,
            "CREATE INDEX rtsRecord_on_name ON rtsRecord (name)",
            """
            CREATE TABLE rtsMember (channelID BIGINT NOT NULL REFERENCES rtsRecord (channelID) ON DELETE CASCADE,
                position INTEGER NOT NULL, account TEXT NOT NULL, device TEXT NOT NULL, joinedAt BIGINT NOT NULL,
                leftAt BIGINT NOT NULL, reason TEXT NOT NULL, recordFile TEXT, PRIMARY KEY (channelID, position))
            """,
            "CREATE INDEX rtsMember_on_account ON rtsMember (account)",
        ]),
        // Which node hosts each real-time conference (PostgreSQL; see ConferencePlaces).
        Migration(name: "v9: conference places", sqlite: { db in
            try db.create(table: "conferencePlace") { table in
                table.primaryKey("name", .text)
                table.column("node", .text).notNull().indexed()
                table.column("since", .integer).notNull()
            }
        }, postgres: [
            "CREATE TABLE conferencePlace (name TEXT PRIMARY KEY, node TEXT NOT NULL, since BIGINT NOT NULL)",
            "CREATE INDEX conferencePlace_on_node ON conferencePlace (node)",
        ]),
    ]

    /// The SQLite migrator: the history, in order.
    static var sqliteMigrator: DatabaseMigrator {
        var migrator = DatabaseMigrator()
        for migration in history {
            migrator.registerMigration(migration.name, migrate: migration.sqlite)
        }
        return migrator
    }
}
