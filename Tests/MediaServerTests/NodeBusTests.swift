import Foundation
import Logging
import Testing
import TestSupport
@testable import MediaServer

/// Messages between nodes through PostgreSQL: each delivered once, in its sender's order,
/// across a PostgreSQL restart and to a node that was not listening when it was sent.
@Suite(.serialized) struct NodeBuses {
    /// A bus running for node `name`, and its task.
    static func bus(_ name: String, _ server: PostgresTestServer) async throws -> (NodeBus, Task<Void, Never>) {
        let store = try await PostgresCallStore(location: .init(url: server.url()), logger: Stores.quiet)
        let bus = NodeBus(node: try NodeID(name), store: store, logger: Stores.quiet)
        return (bus, Task { await bus.run() })
    }

    /// What a bus hands over, collected as it comes.
    actor Inbox {
        private(set) var messages: [NodeMessage] = []

        init(_ bus: NodeBus) {
            let stream = bus.messages
            Task { await self.read(stream) }
        }

        private func read(_ stream: AsyncStream<NodeMessage>) async {
            for await message in stream { messages.append(message) }
        }

        /// The first `count` messages, once there are that many, or those within `timeout`.
        func first(_ count: Int, timeout: Duration = .seconds(20)) async -> [NodeMessage] {
            await eventually(timeout: timeout) { messages.count >= count }
            return Array(messages.prefix(count))
        }
    }

    static func text(_ message: NodeMessage) -> String { String(decoding: message.body, as: UTF8.self) }

    @Test func twoSendersMessagesArriveOnceEachInTheirOrder() async throws {
        let server = try PostgresTestServer()
        let (one, oneTask) = try await Self.bus("node-1", server)
        let (two, twoTask) = try await Self.bus("node-2", server)
        let (three, threeTask) = try await Self.bus("node-3", server)
        defer { [oneTask, twoTask, threeTask].forEach { $0.cancel() } }
        let count = 150
        let inbox = Inbox(two)
        try await withThrowingTaskGroup(of: Void.self) { group in
            for sender in [one, three] {
                group.addTask {
                    for index in 0..<count { try await sender.send(Data("\(sender.node) \(index)".utf8), to: two.node) }
                }
            }
            try await group.waitForAll()
        }
        let messages = await inbox.first(2 * count)
        #expect(messages.count == 2 * count)
        for sender in ["node-1", "node-3"] {
            let sent = messages.filter { $0.from.rawValue == sender }.map(Self.text)
            #expect(sent == (0..<count).map { "\(sender) \($0)" }, "\(sender)'s messages once each, in order")
        }
        #expect(Set(messages.map(\.id)).count == messages.count)
    }

    @Test func messagesOutliveARestartOfPostgreSQLAndANodeThatWasNotListening() async throws {
        let server = try PostgresTestServer()
        let (one, oneTask) = try await Self.bus("node-1", server)
        defer { oneTask.cancel() }
        let two = try NodeID("node-2")
        // node-2 is not running yet: its messages wait in the store.
        for index in 0..<5 { try await one.send(Data("early \(index)".utf8), to: two) }
        let (receiver, receiverTask) = try await Self.bus("node-2", server)
        defer { receiverTask.cancel() }
        let inbox = Inbox(receiver)
        #expect(await inbox.first(5).map(Self.text) == (0..<5).map { "early \($0)" })
        for index in 0..<5 { try await one.send(Data("before \(index)".utf8), to: two) }
        try server.restart()
        for index in 0..<5 { try await one.send(Data("after \(index)".utf8), to: two) }
        let waited = ContinuousClock.now
        let got = await inbox.first(15).dropFirst(5).map(Self.text)
        let left = try await Self.rowsLeft(server)
        #expect(got == (0..<5).map { "before \($0)" } + (0..<5).map { "after \($0)" },
                "\(got) after \(ContinuousClock.now - waited); rows left: \(left)")
    }

    /// The messages still in the store, for a failure's message.
    static func rowsLeft(_ server: PostgresTestServer) async throws -> [String] {
        let store = try await PostgresCallStore(location: .init(url: server.url()), logger: Stores.quiet)
        let rows = try await store.run("rows left") { client in
            var rows: [String] = []
            for try await (id, to, body) in try await client.query("SELECT id, toNode, body FROM nodeMessage ORDER BY id").decode((Int64, String, Data).self) {
                rows.append("\(id)→\(to): \(String(decoding: body, as: UTF8.self))")
            }
            return rows
        }
        await store.close()
        return rows
    }

    @Test func aBodyLargerThanTheLimitIsRefused() async throws {
        let server = try PostgresTestServer()
        let store = try await PostgresCallStore(location: .init(url: server.url()), logger: Stores.quiet)
        let bus = NodeBus(node: try NodeID("node-1"), store: store, logger: Stores.quiet)
        let error = await #expect(throws: StoreError.self) {
            try await bus.send(Data(count: 128 * 1_024 + 1), to: try NodeID("node-2"))
        }
        #expect(error?.message.contains("131073 bytes for node node-2 is more than 131072") == true, "\(String(describing: error))")
        await store.close()
    }
}
