import Foundation
import Signaling

/// Real-time sessions and conferences across the nodes of a cluster.
///
/// A session lives on its caller's node, a conference on the node it was reserved through
/// (`ConferencePlaces` keeps its name unique across the cluster): its registry entry, its
/// relay channel, its recordings and its record are there. A member connected to another
/// node keeps its signaling there: that node forwards its requests about the session or
/// conference to the host, which runs them for an *RTS proxy* (a `ConnectionID` of its own
/// standing for the remote connection) and sends what they say back over the bus. The
/// member's data goes on a data connection to the host itself: a join or an answer without
/// one is refused as `misdirected`, naming the host's data URL, and the client opens it
/// and asks again. Data therefore never crosses the node bus (a row and a NOTIFY per
/// message); only signaling does.
extension SignalingHub {
    // MARK: Device side

    /// The node hosting what a request from `id` is about, when another node does. A
    /// `reserveConference` places the name (here, unless a live node hosts it); a
    /// `joinConference` looks up its host; the others follow the connection's routes.
    func rtsHost(of request: RTSRequest, from id: ConnectionID) async -> NodeID? {
        guard let cluster else { return nil }
        switch request {
        case .request:
            return nil
        case .reserve, .join:
            let name: String = switch request {
            case .reserve(let body): body.name
            case .join(let body): body.name
            default: ""
            }
            // A bad name: this node's registry names the problem.
            guard !name.isEmpty, name.utf8.count <= rts.configuration.maximumNameLength else { return nil }
            if case .join = request, rts.conferences[name] != nil { return nil }
            do {
                let host: NodeID?
                if case .reserve = request {
                    host = try await cluster.membership.conferences.place(name, on: cluster.node)
                } else {
                    host = try await cluster.membership.conferences.host(of: name)
                }
                return host == cluster.node ? nil : host
            } catch {
                logger.warning("conference places unknown (\(error.message)): '\(name)' is looked for on this node only")
                return nil
            }
        case .response(let body):
            return routedHost(session: body.sessionID, from: id)
        case .terminate(let body):
            return routedHost(session: body.sessionID, from: id)
        case .control(let body):
            return routedHost(session: body.sessionID, from: id)
        case .leave(let body):
            guard rts.channels[body.channelID] == nil else { return nil }
            return clusterState.rtsRoutes[id]?.first { $0.value.conferences[body.channelID] != nil }?.key
        }
    }

    private func routedHost(session: String, from id: ConnectionID) -> NodeID? {
        guard rts.sessions[session] == nil else { return nil }
        return clusterState.rtsRoutes[id]?.first { $0.value.sessions[session] != nil }?.key
    }

    /// A host says what connection `connection` here takes part in there.
    func rtsRouted(_ route: ClusterState.RTSRoute, connection: UInt64, host: NodeID) {
        let id = ConnectionID(connection)
        guard registry.device(of: id) != nil else {
            // Closed before the routes came: the host treats it as disconnected.
            cluster?.send(.disconnected(connection: connection), to: host)
            return
        }
        if route.sessions.isEmpty && route.conferences.isEmpty {
            clusterState.rtsRoutes[id]?[host] = nil
            if clusterState.rtsRoutes[id]?.isEmpty == true { clusterState.rtsRoutes[id] = nil }
        } else {
            clusterState.rtsRoutes[id, default: [:]][host] = route
        }
    }

    /// The hosts of the sessions and conferences connection `id` was in (it closed).
    func rtsHostsClosed(_ id: ConnectionID) -> Set<NodeID> {
        Set(clusterState.rtsRoutes.removeValue(forKey: id).map { Array($0.keys) } ?? [])
    }

    // MARK: Host side

    /// A request from a connection on another node, about a session or conference hosted
    /// here (or a conference placed here).
    func hostRTSRequest(from remote: ClusterState.Remote, account: String, device: String, requestID: UInt64,
                        _ request: RTSRequest) async {
        let proxy = rtsProxy(for: remote, account: account, device: device)
        clusterState.rtsProxies[proxy]?.running += 1
        await runRTS(request, from: RTSRegistry.Identity(account: account, device: device, connection: proxy), requestID: requestID)
        clusterState.rtsProxies[proxy]?.running -= 1
        rtsRoutesSettled()
    }

    /// The proxy standing for `remote` here (made when there is none).
    private func rtsProxy(for remote: ClusterState.Remote, account: String, device: String) -> ConnectionID {
        if let known = clusterState.rtsProxyOf[remote] { return known }
        let proxy = ConnectionID(nextConnection)
        nextConnection += 1
        clusterState.rtsProxies[proxy] = ClusterState.RTSProxy(remote: remote, account: account, device: device)
        clusterState.rtsProxyOf[remote] = proxy
        return proxy
    }

    /// The devices of `account` logged in on other nodes (a request rings them as it rings
    /// the devices here).
    func devicesElsewhere(of account: String) async -> [DevicePresence] {
        guard let cluster else { return [] }
        do {
            return try await cluster.presence.devices(of: account).filter { $0.node != cluster.node }
        } catch {
            logger.warning("presence of \(account): \(error.message); its devices on other nodes are not asked")
            return []
        }
    }

    /// Proxies for `devices` of other nodes. They take part in nothing yet: the caller must
    /// invite them before anything awaits (a settling drops idle proxies).
    func rtsProxies(for devices: [DevicePresence]) -> [RTSRegistry.Identity] {
        devices.compactMap { device in
            // A device logged in here is this node's (its presence row is being taken over).
            if registry.devices[CallRegistry.DeviceKey(account: device.account, device: device.device)]?.connection != nil { return nil }
            let remote = ClusterState.Remote(node: device.node, connection: device.connection)
            return RTSRegistry.Identity(account: device.account, device: device.device,
                                        connection: rtsProxy(for: remote, account: device.account, device: device.device))
        }
    }

    /// Claims `accounts` in `callParty` for the voice channel of session channel `session`;
    /// returns those claimed (all of them when the store cannot say: this node's own check
    /// still applies).
    func claimVoice(_ accounts: [String], session: UInt64) async -> Set<String> {
        guard let cluster else { return Set(accounts) }
        do {
            return try await cluster.membership.parties.claimVoice(accounts, session: session, node: cluster.node)
        } catch {
            logger.warning("call parties unknown (\(error.message)): calls on other nodes are not seen by a voice channel")
            return Set(accounts)
        }
    }

    /// Sends each proxy's device node the routes that changed (what the proxy takes part
    /// in here), and drops the proxies that take part in nothing and run no request.
    func rtsRoutesSettled() {
        guard let cluster, !clusterState.rtsProxies.isEmpty else { return }
        var byAccount: [String: [ConnectionID]] = [:]
        for (id, proxy) in clusterState.rtsProxies { byAccount[proxy.account, default: []].append(id) }
        var routes: [ConnectionID: ClusterState.RTSRoute] = [:]
        for session in rts.sessions.values {
            // Every proxy of the callee's account: one that did not answer is told
            // `handledElsewhere` by the host, not `rtsNotFound` by its own node.
            var ids = byAccount[session.callee] ?? []
            if clusterState.rtsProxies[session.caller.identity.connection] != nil { ids.append(session.caller.identity.connection) }
            for id in ids { routes[id, default: .init()].sessions[session.id] = session.channelID }
        }
        for conference in rts.conferences.values {
            guard let channelID = conference.channelID else { continue }
            for member in conference.members where clusterState.rtsProxies[member.identity.connection] != nil {
                routes[member.identity.connection, default: .init()].conferences[channelID] = conference.name
            }
        }
        for (id, proxy) in clusterState.rtsProxies {
            let route = routes[id] ?? .init()
            if route.sessions != proxy.sessions || route.conferences != proxy.conferences {
                clusterState.rtsProxies[id]?.sessions = route.sessions
                clusterState.rtsProxies[id]?.conferences = route.conferences
                cluster.send(.rtsRoutes(connection: proxy.remote.connection, sessions: route.sessions, conferences: route.conferences),
                             to: proxy.remote.node)
            }
            if routes[id] == nil, proxy.running == 0 { clusterState.removeRTSProxy(id) }
        }
    }

    /// Releases the places of conference names that are free here.
    func conferencesSettled() async {
        guard let cluster else { return }
        let free = clusterState.conferencesPlacedHere.filter { rts.conferences[$0] == nil }
        guard !free.isEmpty else { return }
        clusterState.conferencesPlacedHere.subtract(free)
        for name in free.sorted() {
            do {
                try await cluster.membership.conferences.release(name, node: cluster.node)
            } catch {
                logger.warning("conference place of '\(name)': \(error.message)")
            }
        }
    }

    /// A connection on another node closed: it leaves what it was in here.
    func rtsRemoteDisconnected(_ remote: ClusterState.Remote) async {
        guard let proxy = clusterState.rtsProxyOf[remote] else { return }
        let outputs = rts.disconnected(proxy, at: time)
        clusterState.removeRTSProxy(proxy)
        await perform(outputs)
    }

    // MARK: Node death

    /// Another node died or left. Its connections leave what they were in here; devices
    /// here in sessions or conferences it hosted are told those ended.
    func rtsNodeDied(_ dead: NodeID) async {
        var outputs: [RTSRegistry.Output] = []
        for (proxy, entry) in clusterState.rtsProxies.sorted(by: { $0.key < $1.key }) where entry.remote.node == dead {
            outputs += rts.disconnected(proxy, at: time)
            clusterState.removeRTSProxy(proxy)
        }
        await perform(outputs)
        let error = SignalingError(.serverUnavailable, "node \(dead), which hosted it, is gone")
        for (id, hosts) in clusterState.rtsRoutes.sorted(by: { $0.key < $1.key }) {
            guard let route = hosts[dead] else { continue }
            clusterState.rtsRoutes[id]?[dead] = nil
            if clusterState.rtsRoutes[id]?.isEmpty == true { clusterState.rtsRoutes[id] = nil }
            for (session, channelID) in route.sessions.sorted(by: { $0.key < $1.key }) {
                send(.message(.event(.rtsTerminate(Event.RTSTerminate(sessionID: session, channelID: channelID, by: nil, reason: .failed)))),
                     to: id)
            }
            for (channelID, name) in route.conferences.sorted(by: { $0.key < $1.key }) {
                send(.message(.event(.rtsLeftConference(Event.RTSLeftConference(channelID: channelID, name: name, error: error)))), to: id)
            }
            logger.warning("node \(dead) died: \(route.sessions.count) sessions and \(route.conferences.count) conferences it hosted ended for connection \(id)")
        }
    }
}
