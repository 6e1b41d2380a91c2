import Foundation
import Logging
import PostgresNIO
import Testing
import TestSupport

/// The PostgreSQL the multi-node tests share: a cluster of the test's own, password
/// logins, and NOTIFY delivered to a LISTEN on another connection.
@Suite(.serialized) struct PostgresHarness {
    @Test func aClusterOfTheTestsOwnTakesPasswordLoginsAndDeliversNotifications() async throws {
        let server = try PostgresTestServer()
        try server.createDatabase("mediaengine")
        let logger = Logger(label: "test.postgres")
        let client = PostgresClient(configuration: .init(host: "127.0.0.1", port: server.port, username: server.user,
                                                         password: server.password, database: "mediaengine", tls: .disable),
                                    backgroundLogger: logger)
        try await withThrowingTaskGroup(of: Void.self) { group in
            group.addTask { await client.run() }
            defer { group.cancelAll() }
            var sum = 0
            for try await value in try await client.query("SELECT \(40) + \(2)").decode(Int.self) { sum = value }
            #expect(sum == 42)

            // 28P01: invalid_password. (A pool retries a refused login for a minute before
            // its requests fail, and then without the server's reason: one connection says why.)
            let refused = await #expect(throws: PSQLError.self) {
                try await PostgresConnection.connect(configuration: .init(host: "127.0.0.1", port: server.port, username: server.user,
                                                                          password: "not-the-password", database: "mediaengine", tls: .disable),
                                                     id: 1, logger: logger)
            }
            #expect(refused?.serverInfo?[.sqlState] == "28P01", "\(String(reflecting: refused))")

            let heard = try await client.withConnection { connection in
                try await connection.listen(on: "node_1") { notifications in
                    try await client.query("SELECT pg_notify('node_1', \("call 7: ring"))")
                    for try await notification in notifications { return notification.payload }
                    return ""
                }
            }
            #expect(heard == "call 7: ring")
        }
    }
}
