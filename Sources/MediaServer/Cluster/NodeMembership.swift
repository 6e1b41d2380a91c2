import Foundation
import Logging
import MediaEngine

/// A node's life among the nodes sharing a store: registers, then heartbeats with its load
/// every `heartbeatInterval` and watches the others. It reports a node that went silent
/// for `deadAfter` once (after sweeping its presence rows), and reports `fenced` when its
/// own ID was taken over (it had been silent that long itself): the node must stop serving.
public final class NodeMembership: Sendable {
    public enum Event: Sendable, Hashable {
        /// Another node went silent for `deadAfter`, or left; its presence rows are swept.
        case nodeDied(NodeID)
        /// Another node is live (first seen, or back after being reported dead).
        case nodeLive(NodeID)
        /// This node's ID belongs to another incarnation now.
        case fenced
    }

    public let node: NodeID
    public let incarnation = UUID()
    public let presence: Presence
    public var registry: NodeRegistry { presence.registry }
    /// The call each account is in, across the nodes.
    public var parties: CallParties { CallParties(registry: registry) }
    /// Which node hosts each meeting.
    public var places: MeetingPlaces { MeetingPlaces(registry: registry) }
    /// Which node hosts each real-time conference.
    public var conferences: ConferencePlaces { ConferencePlaces(registry: registry) }
    /// Every node as the last heartbeat saw it.
    public var nodes: [NodeInfo] { lastSeen.withLock { $0 } }
    private let lastSeen = Locked<[NodeInfo]>([])
    public let events: AsyncStream<Event>
    private let sink: AsyncStream<Event>.Continuation
    private let load: @Sendable () async -> Int
    private let logger: Logger

    /// - Parameter load: What the node reports as its load at each heartbeat.
    public init(node: NodeID, presence: Presence, logger: Logger, load: @escaping @Sendable () async -> Int) {
        self.node = node
        self.presence = presence
        self.load = load
        self.logger = logger
        (events, sink) = AsyncStream<Event>.makeStream()
    }

    /// Registers this incarnation, sweeping presence rows an earlier one left (a crash).
    /// - Throws: `StoreError` when a live node holds the ID, or the store fails.
    public func register(signalingURL: String, mediaAddress: String) async throws(StoreError) {
        try await registry.register(node, incarnation: incarnation, signalingURL: signalingURL, mediaAddress: mediaAddress)
        try await sweep(node)
        try await parties.advanceCallIDs()
    }

    /// Heartbeats and watches until cancelled or fenced.
    public func run() async {
        var live: Set<NodeID> = []
        var dead: Set<NodeID> = []
        while !Task.isCancelled {
            do {
                guard try await registry.heartbeat(node, incarnation: incarnation, load: await load()) else {
                    logger.error("node \(node): another node took this node's ID; stopping")
                    sink.yield(.fenced)
                    break
                }
                let nodes = try await registry.nodes()
                lastSeen.withLock { $0 = nodes }
                for other in nodes where other.id != node {
                    if other.silence >= registry.configuration.deadAfter {
                        guard !dead.contains(other.id) else { continue }
                        let swept = try await sweep(other.id)
                        logger.warning("node \(other.id) is dead (silent \(other.silence)); \(swept) devices of it forgotten")
                        dead.insert(other.id)
                        live.remove(other.id)
                        sink.yield(.nodeDied(other.id))
                    } else if live.insert(other.id).inserted {
                        dead.remove(other.id)
                        sink.yield(.nodeLive(other.id))
                    }
                }
                // A node that left the registry (a graceful stop) is as gone as a dead one.
                for gone in live.subtracting(nodes.map(\.id)).sorted(by: { $0.rawValue < $1.rawValue }) {
                    try await sweep(gone)
                    logger.notice("node \(gone) left")
                    live.remove(gone)
                    sink.yield(.nodeDied(gone))
                }
            } catch {
                // The store is unreachable: this node goes on serving what it has; it is
                // fenced later if it stayed away too long.
                logger.warning("node \(node): heartbeat failed: \(error.message)")
            }
            try? await Task.sleep(for: registry.configuration.heartbeatInterval)
        }
        sink.finish()
    }

    /// Forgets what `node` left in the store: its devices' presence, its calls' claims, the
    /// meetings and conferences it hosted, and the bus messages waiting for it.
    /// - Returns: how many devices were forgotten.
    @discardableResult
    func sweep(_ node: NodeID) async throws(StoreError) -> Int {
        let devices = try await presence.sweep(node)
        try await discardMessages(to: node)
        try await parties.sweep(node)
        try await places.sweep(node)
        try await conferences.sweep(node)
        return devices
    }

    /// Drops the bus messages waiting for `node`: they were for an incarnation that is
    /// gone (its connections, its calls), never for the next one.
    func discardMessages(to node: NodeID) async throws(StoreError) {
        try await registry.store.run("messages of node \(node)") { client in
            try await client.query("DELETE FROM nodeMessage WHERE toNode = \(node.rawValue)")
        }
    }

    /// Leaves the registry (a graceful stop): others see the node gone at once.
    public func deregister() async {
        try? await presence.sweep(node)
        try? await parties.sweep(node)
        try? await places.sweep(node)
        try? await conferences.sweep(node)
        try? await registry.deregister(node, incarnation: incarnation)
    }
}
