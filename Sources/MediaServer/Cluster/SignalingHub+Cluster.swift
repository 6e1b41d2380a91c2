import Foundation
import Signaling

/// What a hub keeps about calls that cross nodes.
///
/// As a call's owner (its caller's node), the hub holds a *proxy* connection for each
/// callee device on another node: a `ConnectionID` of its own, logged in to the call
/// registry as that device, whose outputs go to the device's node over the bus. The
/// registry runs the call exactly as on one node (multi-device ring, answers, controls,
/// deadlines, the record).
///
/// As a device's node, it holds a *route* per call another node owns: which of its
/// connections take part, so their requests about the call go to the owner.
struct ClusterState: Sendable {
    struct Remote: Hashable, Sendable {
        var node: NodeID
        var connection: UInt64
    }

    /// A call another node owns, as one of its parties' nodes sees it.
    struct Route: Sendable {
        var owner: NodeID
        var account: String
        var caller: String
        var callee: String
        var type: CallType
        var startedAt: Int64
        /// This node's connections taking part, by device.
        var parties: [ConnectionID: String] = [:]
        /// Devices whose connection closed, which may log in again.
        var dropped: Set<String> = []
        /// When a party here reported media connected (for a record if the owner dies).
        var connectedAt: Duration?
    }

    /// Owner side: proxy connection → the device's node and connection there.
    var proxies: [ConnectionID: Remote] = [:]
    var proxyOf: [Remote: ConnectionID] = [:]
    /// Owner side: the nodes that hold a route of each call.
    var callNodes: [UInt64: Set<NodeID>] = [:]
    /// Device side: the calls other nodes own that connections here take part in.
    var routes: [UInt64: Route] = [:]

    mutating func removeProxy(_ id: ConnectionID) {
        if let remote = proxies.removeValue(forKey: id) { proxyOf[remote] = nil }
    }

    /// Host side: a connection on another node taking part in a meeting hosted here.
    struct MeetingProxy: Sendable {
        var remote: Remote
        /// The meeting it is a member of, once its device node was told.
        var meeting: UInt64?
    }

    /// Device side: the meeting another node hosts that a connection here is in.
    struct MeetingRoute: Sendable, Hashable {
        var host: NodeID
        var meeting: UInt64
    }

    /// Host side: meeting proxies, and the proxy of each remote connection.
    var meetingProxies: [ConnectionID: MeetingProxy] = [:]
    var meetingProxyOf: [Remote: ConnectionID] = [:]
    /// Device side: connections here in meetings other nodes host.
    var meetingRoutes: [ConnectionID: MeetingRoute] = [:]
    /// Host side: names whose meeting place is this node (released once the name is free).
    var placedHere: Set<String> = []
    /// Host side: names placed here whose reservation has not reached the registry yet (it
    /// awaits a meeting ID first): not free, though the registry does not have them yet.
    var reserving: [String: Int] = [:]

    /// A name placed here is on its way to the registry.
    mutating func reservationPlaced(_ name: String) {
        placedHere.insert(name)
        reserving[name, default: 0] += 1
    }

    /// The registry took (or refused) the reservation of `name`.
    mutating func reservationHandled(_ name: String) {
        guard let count = reserving[name] else { return }
        reserving[name] = count > 1 ? count - 1 : nil
    }
    /// Host side: the members of meetings hosted here as the store last heard of them.
    var storedMembers: [String: MeetingPlaces.Member] = [:]
    /// Device side: logins here waiting for a call's owner elsewhere to take them back.
    var pendingReattach: [ConnectionID: CheckedContinuation<Bool, Never>] = [:]

    mutating func removeMeetingProxy(_ id: ConnectionID) {
        if let proxy = meetingProxies.removeValue(forKey: id) { meetingProxyOf[proxy.remote] = nil }
    }

    /// Host side: a connection on another node taking part in sessions or conferences
    /// hosted here, or with a request of them running.
    struct RTSProxy: Sendable {
        var remote: Remote
        var account: String
        var device: String
        /// Its requests being run (it is not dropped meanwhile).
        var running = 0
        /// The routes its device node was last sent.
        var sessions: [String: UInt64] = [:]
        var conferences: [UInt64: String] = [:]
    }

    /// Device side: what one host hosts that a connection here takes part in.
    struct RTSRoute: Sendable, Hashable {
        /// Session ID → channel ID.
        var sessions: [String: UInt64] = [:]
        /// Channel ID → conference name.
        var conferences: [UInt64: String] = [:]
    }

    /// Host side: real-time session proxies, and the proxy of each remote connection.
    var rtsProxies: [ConnectionID: RTSProxy] = [:]
    var rtsProxyOf: [Remote: ConnectionID] = [:]
    /// Device side: connections here in sessions or conferences other nodes host.
    var rtsRoutes: [ConnectionID: [NodeID: RTSRoute]] = [:]
    /// Host side: conference names whose place is this node (released once free).
    var conferencesPlacedHere: Set<String> = []

    mutating func removeRTSProxy(_ id: ConnectionID) {
        if let proxy = rtsProxies.removeValue(forKey: id) { rtsProxyOf[proxy.remote] = nil }
    }
}

/// The call requests that name a call, for finding whether another node owns it.
extension SignalingHub {

    /// Joins the nodes sharing the cluster's store: logins are written to presence, calls
    /// reach devices on other nodes.
    public func attach(cluster: ClusterNode) {
        self.cluster = cluster
        // Connection numbers name connections to other nodes (in presence, routes and
        // proxies): they start from the clock, so a restarted node never reuses one that
        // a message still in flight or a peer's stale proxy names.
        let now = UInt64(max(0, time.epochMilliseconds))
        nextConnection = max(nextConnection, now << 16)
    }

    // MARK: Owner side

    /// A `start` on a node of a cluster: the caller and the callee are claimed across the
    /// nodes (one that is in a call anywhere is busy), the callee's devices on other nodes
    /// join as proxies, and the registry runs the start as on one node.
    func startAcrossNodes(_ id: ConnectionID, requestID: UInt64, _ start: Request.Start) async {
        guard let cluster, let caller = registry.account(of: id),
              !start.callee.isEmpty, start.callee.utf8.count <= 128, start.callee != caller else {
            // The registry names what is wrong with it.
            await perform(registry.handle(.start(start), from: id, requestID: requestID, at: time))
            return
        }
        let parties = cluster.membership.parties
        let accounts: Set<String> = [caller, start.callee]
        var claim: CallParties.Claim?
        do {
            claim = try await parties.claim(caller: caller, callee: start.callee, node: cluster.node)
        } catch {
            logger.warning("call parties unknown (\(error.message)): calls elsewhere are not seen as busy, devices elsewhere not called")
        }
        // No await from here to the start: nothing can prune the new proxies before the
        // call invites them, and those it did not take are pruned below.
        addRemoteDevices(claim?.devices ?? [])
        registry.busyElsewhere = claim.map { accounts.subtracting($0.claimed) } ?? []
        registry.busyInSessions = rts.audioAccounts
        // The claimed ID is unused when the start fails.
        let outputs = registry.handle(.start(start), from: id, requestID: requestID, at: time, assignedCallID: claim?.callID)
        registry.busyElsewhere = []
        let callID = claim?.callID ?? registry.lastCallID
        let started = registry.calls[callID].map { $0.caller.account == caller } ?? false
        if started { routeStartedCall(callID) }
        if let claim, !started {
            do {
                try await parties.unclaim(call: claim.callID, node: cluster.node)
            } catch {
                logger.warning("call parties: \(error.message)")
            }
        }
        await perform(outputs)
        pruneProxies()
    }

    /// Before a `start`: the callee's devices on other nodes join the registry as proxies,
    /// so the call invites them with the local ones.
    func addRemoteDevices(_ found: [DevicePresence]) {
        guard let cluster else { return }
        let now = time
        for device in found where device.node != cluster.node {
            let remote = ClusterState.Remote(node: device.node, connection: device.connection)
            guard clusterState.proxyOf[remote] == nil else { continue }
            // A device logged in here is this node's (the presence row is being taken over).
            if registry.devices[CallRegistry.DeviceKey(account: device.account, device: device.device)]?.connection != nil { continue }
            let proxy = ConnectionID(nextConnection)
            nextConnection += 1
            // A proxy for a device that is new here replaces nothing, so the login has no
            // outputs; one over the account's device limit is not called.
            guard (try? registry.login(proxy, account: device.account, device: device.device, at: now)) != nil else { continue }
            clusterState.proxies[proxy] = remote
            clusterState.proxyOf[remote] = proxy
        }
    }

    /// After a `start`: routes to the nodes of the invited proxies, before the
    /// invitations go out.
    func routeStartedCall(_ id: UInt64) {
        guard let cluster, let call = registry.calls[id] else { return }
        for key in call.invited {
            guard let proxy = registry.connection(of: key), let remote = clusterState.proxies[proxy] else { continue }
            cluster.send(.route(call: id, connection: remote.connection, account: key.account, device: key.device,
                                caller: call.caller.account, callee: call.callee, type: call.type, startedAt: call.startedAt),
                         to: remote.node)
            clusterState.callNodes[id, default: []].insert(remote.node)
        }
    }

    /// Drops proxies whose device is in no call (the registry forgets the device).
    func pruneProxies() {
        let now = time
        for proxy in Array(clusterState.proxies.keys) {
            guard let key = registry.connections[proxy] else {
                clusterState.removeProxy(proxy)
                continue
            }
            let inCall = registry.accountCall[key.account].flatMap { registry.calls[$0] }
                .map { $0.caller == key || $0.answeredBy == key || $0.invited.contains(key) } ?? false
            if !inCall {
                _ = registry.disconnected(proxy, at: now)
                clusterState.removeProxy(proxy)
            }
        }
    }

    /// Where an output for `id` goes when it is a proxy.
    func remote(_ id: ConnectionID) -> ClusterState.Remote? { clusterState.proxies[id] }

    /// A call ended: its parties are free on every node.
    func releaseParties(of callID: UInt64) async {
        do {
            try await cluster?.membership.parties.release(call: callID)
        } catch {
            logger.warning("call parties of \(callID): \(error.message)")
        }
    }

    /// After a call's record: its routes elsewhere are forgotten, and its proxies.
    func callEnded(_ callID: UInt64) {
        guard let cluster else { return }
        if let nodes = clusterState.callNodes.removeValue(forKey: callID) {
            for node in nodes { cluster.send(.ended(call: callID), to: node) }
        }
        if !clusterState.proxies.isEmpty { pruneProxies() }
    }

    // MARK: Device side

    /// The node owning the call a request from `id` is about, when another does.
    func remoteOwner(of request: CallRequest, from id: ConnectionID) -> NodeID? {
        guard cluster != nil, !clusterState.routes.isEmpty else { return nil }
        if case .start = request { return nil }
        let callID = request.callID
        if callID == 0 {
            // `hangup` of the current call: this node's own first.
            guard let account = registry.account(of: id), registry.accountCall[account] == nil else { return nil }
            return clusterState.routes.first { $0.value.parties[id] != nil }?.value.owner
        }
        guard registry.calls[callID] == nil, let route = clusterState.routes[callID], route.parties[id] != nil else { return nil }
        if case .mediaStatus(let status) = request, route.connectedAt == nil, status.connected {
            clusterState.routes[callID]?.connectedAt = time.monotonic
        }
        return route.owner
    }

    /// A login here: written to presence (a login of the same device on another node is
    /// closed there), and calls of the device owned elsewhere that it dropped out of are
    /// rejoined. Returns those calls' IDs for the login reply.
    func clusterLoggedIn(_ id: ConnectionID, account: String, device: String) async -> [UInt64] {
        guard let cluster else { return [] }
        do {
            if let previous = try await cluster.presence.arrive(account: account, device: device, node: cluster.node, connection: id.value),
               previous.node != cluster.node {
                cluster.send(.close(connection: previous.connection, code: 4_000, reason: "replaced by a new login of device \(device)"),
                             to: previous.node)
            }
        } catch {
            logger.error("presence of \(account): \(error.message); devices on other nodes cannot call this one")
        }
        var rejoined: [UInt64] = []
        // The device's old connection may not have closed here yet (its close comes after
        // this login): the new one takes its place all the same.
        for (callID, route) in clusterState.routes
        where route.account == account && (route.dropped.contains(device) || route.parties.values.contains(device)) {
            clusterState.routes[callID]?.dropped.remove(device)
            for (old, name) in route.parties where name == device { clusterState.routes[callID]?.parties[old] = nil }
            clusterState.routes[callID]?.parties[id] = device
            cluster.send(.reattached(call: callID, connection: id.value, account: account, device: device), to: route.owner)
            rejoined.append(callID)
        }
        // A device of a call another node owns, logging in on a node that has no route of
        // it (its old connection was on a third node): the owner says whether it is a party,
        // so that the reply names the call only then.
        // Likewise a member of a meeting another node hosts: the host takes the device's
        // new connection (the login reply does not name meetings).
        let lookCall = rejoined.isEmpty && registry.accountCall[account] == nil
        let lookMeeting = meetings.accountMeeting[account] == nil
        async let call = lookCall ? cluster.membership.parties.call(of: account) : nil
        async let meeting = lookMeeting ? cluster.membership.places.meeting(of: account) : nil
        do {
            if let (callID, owner) = try await call, owner != cluster.node, registry.device(of: id) != nil,
               clusterState.routes[callID] == nil {
                cluster.send(.reattached(call: callID, connection: id.value, account: account, device: device), to: owner)
                if await reattachAnswered(id) { rejoined.append(callID) }
            }
        } catch {
            logger.warning("call of \(account): \((error as? StoreError)?.message ?? "\(error)"); a call it is in elsewhere is not rejoined")
        }
        do {
            if let (member, host) = try await meeting, host != cluster.node, member.device == device, registry.device(of: id) != nil {
                cluster.send(.meetingReattached(meeting: member.meeting, connection: id.value, account: account, device: device), to: host)
            }
        } catch {
            logger.warning("meeting of \(account): \((error as? StoreError)?.message ?? "\(error)"); a meeting it is in elsewhere is not rejoined")
        }
        return rejoined.sorted()
    }

    /// Waits for the owner's answer to a login's `reattached` (a route, or `notAParty`), at
    /// most twice the time a node takes to be declared dead.
    func reattachAnswered(_ id: ConnectionID) async -> Bool {
        let wait = (cluster?.membership.registry.configuration.deadAfter ?? .seconds(5)) * 2
        return await withCheckedContinuation { continuation in
            clusterState.pendingReattach[id] = continuation
            Task { [weak self] in
                try? await Task.sleep(for: wait)
                await self?.answerReattach(id, false)
            }
        }
    }

    /// Ends a login's wait for its owner (once; later answers are ignored).
    func answerReattach(_ id: ConnectionID, _ accepted: Bool) {
        clusterState.pendingReattach.removeValue(forKey: id)?.resume(returning: accepted)
    }

    /// A connection here closed: presence forgets it, owners of its calls are told.
    func clusterClosed(_ id: ConnectionID, account: String?, device: String?) async {
        guard let cluster else { return }
        answerReattach(id, false)
        var owners: Set<NodeID> = []
        for (callID, route) in clusterState.routes {
            guard let device = route.parties[id] else { continue }
            clusterState.routes[callID]?.parties[id] = nil
            clusterState.routes[callID]?.dropped.insert(device)
            owners.insert(route.owner)
        }
        if let route = clusterState.meetingRoutes.removeValue(forKey: id) { owners.insert(route.host) }
        owners.formUnion(rtsHostsClosed(id))
        for owner in owners { cluster.send(.disconnected(connection: id.value), to: owner) }
        if let account, let device {
            do {
                try await cluster.presence.leave(account: account, device: device, node: cluster.node, connection: id.value)
            } catch {
                logger.warning("presence of \(account): \(error.message)")
            }
        }
    }

    // MARK: Messages and events

    /// A message from another node.
    func clusterReceived(_ message: ClusterMessage, from node: NodeID) async {
        let now = time
        switch message {
        case .route(let call, let connection, let account, let device, let caller, let callee, let type, let startedAt):
            let id = ConnectionID(connection)
            guard let party = registry.device(of: id), party.account == account, party.device == device else {
                // Closed before the route came: the owner treats the device as gone.
                cluster?.send(.disconnected(connection: connection), to: node)
                return
            }
            var route = clusterState.routes[call]
                ?? ClusterState.Route(owner: node, account: account, caller: caller, callee: callee, type: type, startedAt: startedAt)
            route.parties[id] = device
            clusterState.routes[call] = route
            answerReattach(id, true)
        case .notAParty(_, let connection):
            answerReattach(ConnectionID(connection), false)
        case .deliver(let connection, let text):
            send(.text(text), to: ConnectionID(connection))
        case .close(let connection, let code, let reason):
            close(ConnectionID(connection), code: code, reason: reason)
        case .ended(let call):
            clusterState.routes[call] = nil
        case .request(let connection, let account, let device, let requestID, let type, let data):
            let remote = ClusterState.Remote(node: node, connection: connection)
            guard let proxy = clusterState.proxyOf[remote], let party = registry.device(of: proxy),
                  party.account == account, party.device == device else {
                let error = SignalingError(.callNotFound, "\(type): the call does not exist or has ended")
                cluster?.send(.deliver(connection: connection, text: ServerMessage.error(id: requestID, error).encoded()), to: node)
                return
            }
            // The node bus is this node's edge for requests from devices on other nodes.
            guard case .success(let decoded)? = try? ClientMessage.decode(data, maximumSize: Int.max).request,
                  case .call(let request) = RoutedRequest(decoded) else {
                let error = SignalingError(.invalidRequest, "\(type): not a call request")
                cluster?.send(.deliver(connection: connection, text: ServerMessage.error(id: requestID, error).encoded()), to: node)
                return
            }
            await perform(registry.handle(request, from: proxy, requestID: requestID, at: now))
        case .disconnected(let connection):
            let remote = ClusterState.Remote(node: node, connection: connection)
            if let proxy = clusterState.meetingProxyOf[remote] {
                clusterState.removeMeetingProxy(proxy)
                meetings.disconnected(proxy, at: now)
            }
            await rtsRemoteDisconnected(remote)
            guard let proxy = clusterState.proxyOf[remote] else { return }
            clusterState.removeProxy(proxy)
            await perform(registry.disconnected(proxy, at: now))
        case .reattached(let call, let connection, let account, let device):
            let key = CallRegistry.DeviceKey(account: account, device: device)
            guard let entry = registry.calls[call], entry.caller == key || entry.answeredBy == key || entry.invited.contains(key) else {
                cluster?.send(.notAParty(call: call, connection: connection), to: node)
                return
            }
            // The newest login of the device takes the call (its node closed the older one
            // through presence): its old connection may still count here, a proxy of any
            // node or one of this node's, and is replaced (the registry closes it).
            if let current = registry.devices[key]?.connection { clusterState.removeProxy(current) }
            let proxy = ConnectionID(nextConnection)
            nextConnection += 1
            guard let (_, outputs) = try? registry.login(proxy, account: account, device: device, at: now) else {
                cluster?.send(.notAParty(call: call, connection: connection), to: node)
                return
            }
            let remote = ClusterState.Remote(node: node, connection: connection)
            clusterState.proxies[proxy] = remote
            clusterState.proxyOf[remote] = proxy
            clusterState.callNodes[call, default: []].insert(node)
            // The device's node routes its requests about the call here from now on.
            cluster?.send(.route(call: call, connection: connection, account: account, device: device, caller: entry.caller.account,
                                 callee: entry.callee, type: entry.type, startedAt: entry.startedAt), to: node)
            await perform(outputs)
        case .meetingRequest(let connection, let account, let device, let grants, let requestID, let type, let message):
            // The node bus is this node's edge for requests from devices on other nodes.
            guard case .success(let decoded)? = try? ClientMessage.decode(message, maximumSize: Int.max).request,
                  case .meeting(let request) = RoutedRequest(decoded) else {
                let error = SignalingError(.invalidRequest, "\(type): not a meeting request")
                cluster?.send(.deliver(connection: connection, text: ServerMessage.error(id: requestID, error).encoded()), to: node)
                return
            }
            await hostMeetingRequest(from: ClusterState.Remote(node: node, connection: connection),
                                     MeetingRegistry.Identity(account: account, device: device, grants: grants),
                                     requestID: requestID, request)
        case .meetingReattached(let meeting, let connection, let account, let device):
            hostMeetingReattached(meeting, from: ClusterState.Remote(node: node, connection: connection), account: account, device: device)
        case .meetingRoute(let meeting, let connection):
            meetingRouted(meeting, connection: connection, host: node)
        case .rtsRequest(let connection, let account, let device, let requestID, let type, let message):
            guard case .success(let decoded)? = try? ClientMessage.decode(message, maximumSize: Int.max).request,
                  case .rts(let request) = RoutedRequest(decoded) else {
                let error = SignalingError(.invalidRequest, "\(type): not a real-time session request")
                cluster?.send(.deliver(connection: connection, text: ServerMessage.error(id: requestID, error).encoded()), to: node)
                return
            }
            await hostRTSRequest(from: ClusterState.Remote(node: node, connection: connection), account: account, device: device,
                                 requestID: requestID, request)
        case .rtsRoutes(let connection, let sessions, let conferences):
            rtsRouted(ClusterState.RTSRoute(sessions: sessions, conferences: conferences), connection: connection, host: node)
        case .meetingLeft(let meeting, let connection):
            let id = ConnectionID(connection)
            if clusterState.meetingRoutes[id] == ClusterState.MeetingRoute(host: node, meeting: meeting) {
                clusterState.meetingRoutes[id] = nil
            }
        }
    }

    /// What the node's membership saw of another node.
    func clusterEvent(_ event: NodeMembership.Event) async {
        guard case .nodeDied(let dead) = event else { return }
        let now = time
        await meetingNodeDied(dead)
        await rtsNodeDied(dead)
        // Its devices in calls owned here dropped out, as a closed connection would: they
        // have the reconnect grace to log in again, then the call fails.
        for (proxy, remote) in clusterState.proxies where remote.node == dead {
            clusterState.removeProxy(proxy)
            await perform(registry.disconnected(proxy, at: now))
        }
        for callID in Array(clusterState.callNodes.keys) { clusterState.callNodes[callID]?.remove(dead) }
        // Calls it owned end here: its parties are told, and the record it can no longer
        // store is stored (an upsert by call ID: stored once whoever stores it).
        for (callID, route) in clusterState.routes.sorted(by: { $0.key < $1.key }) where route.owner == dead {
            clusterState.routes[callID] = nil
            let connected = route.connectedAt.map { Int64((now.monotonic - $0) / .milliseconds(1)) } ?? 0
            let record = CallRecord(callID: callID, caller: route.caller, callee: route.callee, type: route.type,
                                    startedAt: route.startedAt, connectedDuration: connected, endReason: .failed, endedBy: nil)
            let hangup = ServerMessage.event(.hangup(Event.Hangup(callID: callID, by: nil, reason: .failed)))
            for party in route.parties.keys.sorted() { send(.message(hangup), to: party) }
            logger.warning("node \(dead), owner of call \(callID), died: the call ended here as failed")
            await perform([CallRegistry.Output.record(record, notify: route.parties.keys.sorted())])
        }
    }
}
