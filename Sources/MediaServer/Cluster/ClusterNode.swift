import Foundation
import Logging
import MediaEngine
import Signaling

/// What one node tells another about calls (DESIGN: the call's owner is its caller's node;
/// the callee's devices on other nodes take part through it).
enum ClusterMessage: Sendable, Hashable, Codable {
    /// Owner → device node: the call `call` has the receiver's `connection` as a party;
    /// requests about it from that connection go to the sender. Sent before anything else
    /// about the call, so it arrives first (a sender's messages keep their order).
    case route(call: UInt64, connection: UInt64, account: String, device: String, caller: String, callee: String,
               type: CallType, startedAt: Int64)
    /// Owner → device node: send this signaling message on `connection`.
    case deliver(connection: UInt64, text: Data)
    /// Owner → device node: close `connection` (a login of its device elsewhere replaced it).
    case close(connection: UInt64, code: UInt16, reason: String)
    /// Owner → device node: the call ended (its record is stored); forget its route.
    case ended(call: UInt64)
    /// Device node → owner: a request from `connection`, logged in there as `account`
    /// on `device`, about a call the receiver owns.
    case request(connection: UInt64, account: String, device: String, requestID: UInt64, type: String, message: Data)
    /// Device node → owner: `connection` closed.
    case disconnected(connection: UInt64)
    /// Device node → owner: `device` of `account`, a party of `call` whose connection
    /// dropped, logged in again on the sender's `connection`.
    case reattached(call: UInt64, connection: UInt64, account: String, device: String)
    /// Owner → device node: the device that logged in on `connection` is not a party of
    /// `call` (the answer to `reattached`; a party gets `route`).
    case notAParty(call: UInt64, connection: UInt64)
    /// Device node → a meeting's host: a meeting request from `connection`, logged in
    /// there as `account` on `device` with `grants`.
    case meetingRequest(connection: UInt64, account: String, device: String, grants: Grants, requestID: UInt64, type: String,
                        message: Data)
    /// Host → device node: `connection` is a member of `meeting`; its requests about the
    /// meeting go to the sender. Sent before the join's reply.
    case meetingRoute(meeting: UInt64, connection: UInt64)
    /// Host → device node: `connection` is no longer a member of `meeting`.
    case meetingLeft(meeting: UInt64, connection: UInt64)
    /// Device node → host: `device` of `account`, a member of `meeting`, logged in again
    /// on the sender's `connection` (its old connection was elsewhere).
    case meetingReattached(meeting: UInt64, connection: UInt64, account: String, device: String)
    /// Device node → a session's or conference's host: a real-time session request from
    /// `connection`, logged in there as `account` on `device`.
    case rtsRequest(connection: UInt64, account: String, device: String, requestID: UInt64, type: String, message: Data)
    /// Host → device node: the sessions (ID → channel) and conferences (channel → name)
    /// hosted by the sender that `connection` takes part in, all of them (none: forget the
    /// sender for it). Their
    /// requests from that connection go to the sender. Sent before the reply or invitation
    /// that made them so.
    case rtsRoutes(connection: UInt64, sessions: [String: UInt64], conferences: [UInt64: String])

    func encoded() -> Data { (try? JSONEncoder().encode(self)) ?? Data() }

    static func decode(_ data: Data) -> ClusterMessage? { try? JSONDecoder().decode(ClusterMessage.self, from: data) }
}

/// A server node among the nodes sharing a PostgreSQL store: its membership (registration,
/// heartbeat, other nodes' deaths), its bus to the other nodes, and the presence of its
/// logged-in devices. Messages to other nodes leave through one queue, in the order they
/// were given (a call's events must not overtake each other), each as a row and a NOTIFY.
public final class ClusterNode: Sendable {
    public struct Configuration: Sendable {
        public var node: NodeID
        public var registry = NodeRegistry.Configuration()
        public var bus = NodeBus.Configuration()

        public init(node: NodeID) { self.node = node }
    }

    public let configuration: Configuration
    public var node: NodeID { configuration.node }
    let store: PostgresCallStore
    let membership: NodeMembership
    let bus: NodeBus
    var presence: Presence { membership.presence }
    /// Messages waiting to go, and a bell rung when some were added.
    private let outbox = Locked<[(NodeID, ClusterMessage)]>([])
    private let bell: AsyncStream<Void>
    private let ring: AsyncStream<Void>.Continuation
    private let tasks = Locked<[Task<Void, Never>]>([])
    private let logger: Logger

    public init(configuration: Configuration, store: PostgresCallStore, logger: Logger, load: @escaping @Sendable () async -> Int) {
        self.configuration = configuration
        self.store = store
        self.logger = logger
        let registry = NodeRegistry(store: store, configuration: configuration.registry)
        membership = NodeMembership(node: configuration.node, presence: Presence(registry: registry), logger: logger, load: load)
        bus = NodeBus(node: configuration.node, store: store, configuration: configuration.bus, logger: logger)
        (bell, ring) = AsyncStream<Void>.makeStream(bufferingPolicy: .bufferingNewest(1))
    }

    /// Registers the node (refused when a live node holds its ID).
    func register(signalingURL: String, mediaAddress: String) async throws(StoreError) {
        try await membership.register(signalingURL: signalingURL, mediaAddress: mediaAddress)
        registeredURL.withLock { $0 = signalingURL }
    }

    /// The signaling URL the node registered (clients of other nodes are sent here).
    var signalingURL: String? { registeredURL.withLock { $0 } }
    private let registeredURL = Locked<String?>(nil)

    /// Queues a message to another node.
    func send(_ message: ClusterMessage, to node: NodeID) {
        outbox.withLock { $0.append((node, message)) }
        ring.yield()
    }

    /// Sends what is queued: per node, everything queued for it in one transaction, in
    /// the order it was queued.
    private func flush() async {
        while true {
            let batch = outbox.withLock { queued in
                defer { queued = [] }
                return queued
            }
            guard !batch.isEmpty else { return }
            var order: [NodeID] = []
            var bodies: [NodeID: [Data]] = [:]
            for (node, message) in batch {
                if bodies[node] == nil { order.append(node) }
                bodies[node, default: []].append(message.encoded())
            }
            for node in order {
                let messages = bodies[node] ?? []
                do throws(StoreError) {
                    try await bus.send(messages, to: node)
                    counters.withLock { $0.sent += messages.count }
                } catch {
                    counters.withLock { $0.lost += messages.count }
                    logger.error("node bus: \(messages.count) messages to node \(node) were lost: \(error.message)")
                }
            }
        }
    }

    /// Runs the heartbeat, the bus and the outbox, handing what arrives to `hub`, until
    /// `stop`. `fenced` runs when another incarnation took this node's ID.
    func start(hub: SignalingHub, fenced: @escaping @Sendable () async -> Void) {
        let membership = self.membership, bus = self.bus, logger = self.logger, counters = self.counters
        tasks.withLock {
            $0.append(Task { await membership.run() })
            $0.append(Task {
                for await event in membership.events {
                    if case .fenced = event {
                        await fenced()
                    } else {
                        await hub.clusterEvent(event)
                    }
                }
            })
            $0.append(Task { await bus.run() })
            $0.append(Task {
                for await message in bus.messages {
                    guard let decoded = ClusterMessage.decode(message.body) else {
                        logger.warning("node bus: an undecodable message of \(message.body.count) bytes from node \(message.from) dropped")
                        continue
                    }
                    counters.withLock { $0.received += 1 }
                    await hub.clusterReceived(decoded, from: message.from)
                }
            })
        }
        // The outbox is not cancelled by `stop`: it ends when its bell is silenced, after
        // sending what was queued, so what a shutdown queued (hangups, records) goes out.
        let bell = self.bell
        outboxTask.withLock {
            $0 = Task {
                for await _ in bell { await self.flush() }
                await self.flush()
            }
        }
    }

    private let outboxTask = Locked<Task<Void, Never>?>(nil)

    /// Messages sent, received and lost so far.
    var counts: (sent: Int, received: Int, lost: Int) { counters.withLock { $0 } }
    private let counters = Locked((sent: 0, received: 0, lost: 0))

    /// The figures `/metrics` shows for this node.
    func figures(remoteDevices: Int, remoteCalls: Int, remoteParticipants: Int, participantsHostedElsewhere: Int) -> ServerMetrics.Cluster {
        let counts = self.counts
        let nodes = membership.nodes
        let deadAfter = configuration.registry.deadAfter
        return ServerMetrics.Cluster(node: node, remoteDevices: remoteDevices, remoteCalls: remoteCalls, remoteParticipants: remoteParticipants,
                                     participantsHostedElsewhere: participantsHostedElsewhere, messagesSent: counts.sent,
                                     messagesReceived: counts.received, messagesLost: counts.lost, nodes: nodes,
                                     liveNodes: nodes.filter { $0.silence < deadAfter }.count)
    }

    /// Sends what is queued, stops listening and heartbeating, and leaves the registry
    /// (other nodes see this node gone at once).
    func stop() async {
        ring.finish()
        await outboxTask.withLock { $0 }?.value
        let running = tasks.withLock { tasks in
            defer { tasks = [] }
            return tasks
        }
        for task in running { task.cancel() }
        for task in running { await task.value }
        await membership.deregister()
    }
}
