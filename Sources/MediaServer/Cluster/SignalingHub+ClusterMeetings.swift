import Foundation
import Signaling

/// Meetings across the nodes of a cluster.
///
/// A meeting lives on one node, its *host*, chosen when it is reserved (`MeetingPlaces`):
/// its registry entry, its SFU legs and its record are there. A participant connected to
/// another node keeps its signaling there: that node forwards its meeting requests to the
/// host, which runs them for a *meeting proxy* (a `ConnectionID` of its own standing for
/// the remote connection) and sends what the meeting says to it back over the bus. The
/// join's reply names the host's media port, so media goes straight to the host.
extension SignalingHub {
    // MARK: Device side

    /// The node hosting the meeting a request from `id` is about, when another node does.
    /// A `reserveMeeting` places the meeting first; a `joinMeeting` looks up its host; the
    /// others follow the connection's meeting route.
    func meetingHost(of request: MeetingRequest, from id: ConnectionID) async -> NodeID? {
        guard let cluster else { return nil }
        let name: String? = switch request {
        case .reserve(let body): body.name
        case .join(let body): body.name
        default: nil
        }
        if let name {
            // A bad name: this node's registry names the problem.
            guard (try? MeetingRegistry.checkName(name, in: request.type)) != nil else { return nil }
            do {
                let host: NodeID?
                if case .reserve = request {
                    host = try await cluster.membership.places.place(name, fallback: cluster.node)
                } else {
                    host = try await cluster.membership.places.host(of: name)
                }
                if host == cluster.node {
                    if case .reserve = request { clusterState.reservationPlaced(name) } else { clusterState.placedHere.insert(name) }
                }
                return host == cluster.node ? nil : host
            } catch {
                logger.warning("meeting places unknown (\(error.message)): '\(name)' is looked for on this node only")
                return nil
            }
        }
        guard let route = clusterState.meetingRoutes[id], let callID = request.callID, callID == route.meeting,
              meetings.meetings[callID] == nil else { return nil }
        return route.host
    }

    /// The host says connection `connection` here is a member of `meeting`.
    func meetingRouted(_ meeting: UInt64, connection: UInt64, host: NodeID) {
        let id = ConnectionID(connection)
        guard registry.device(of: id) != nil else {
            // Closed before the route came: the host treats the member as disconnected.
            cluster?.send(.disconnected(connection: connection), to: host)
            return
        }
        clusterState.meetingRoutes[id] = ClusterState.MeetingRoute(host: host, meeting: meeting)
    }

    // MARK: Host side

    /// An ID for a meeting reserved here, from the IDs every node shares; nil (the
    /// registry's own) when the store cannot give one.
    func sharedMeetingID() async -> UInt64? {
        guard let cluster else { return nil }
        do {
            return try await cluster.membership.places.nextID()
        } catch {
            logger.warning("meeting ID: \(error.message); numbering the meeting locally")
            return nil
        }
    }

    /// A meeting request from a connection on another node, for a meeting hosted here.
    func hostMeetingRequest(from remote: ClusterState.Remote, _ identity: MeetingRegistry.Identity, requestID: UInt64,
                            _ request: MeetingRequest) async {
        var assigned: UInt64?
        if case .reserve(let reservation) = request {
            clusterState.reservationPlaced(reservation.name)
            assigned = await sharedMeetingID()
        }
        // From here to `perform` resolving the outputs' destinations nothing awaits, so no
        // settling can drop the proxy first.
        let proxy: ConnectionID
        if let known = clusterState.meetingProxyOf[remote] {
            proxy = known
        } else {
            proxy = ConnectionID(nextConnection)
            nextConnection += 1
            clusterState.meetingProxies[proxy] = ClusterState.MeetingProxy(remote: remote)
            clusterState.meetingProxyOf[remote] = proxy
        }
        // A member whose connection dropped takes this one (a reconnect through its node).
        _ = meetings.connected(proxy, identity)
        await handleMeeting(proxy, identity, requestID: requestID, request, assignedID: assigned)
    }

    /// A member of a meeting hosted here logged in again on another node: that connection
    /// takes the member's place (the newest login wins), and its node routes it here.
    func hostMeetingReattached(_ meeting: UInt64, from remote: ClusterState.Remote, account: String, device: String) {
        guard let member = meetings.meetings[meeting]?.members[account], member.identity.device == device else { return }
        if let old = member.connection, old != clusterState.meetingProxyOf[remote] { clusterState.removeMeetingProxy(old) }
        let proxy = clusterState.meetingProxyOf[remote] ?? {
            let proxy = ConnectionID(nextConnection)
            nextConnection += 1
            clusterState.meetingProxyOf[remote] = proxy
            return proxy
        }()
        clusterState.meetingProxies[proxy] = ClusterState.MeetingProxy(remote: remote, meeting: meeting)
        _ = meetings.connected(proxy, member.identity)
        cluster?.send(.meetingRoute(meeting: meeting, connection: remote.connection), to: remote.node)
    }

    /// After the registry ran a meeting request here: a proxy that became a member has its
    /// device node told where the member's requests go (before the reply is sent).
    func meetingHandled(_ id: ConnectionID, _ identity: MeetingRegistry.Identity, _ request: MeetingRequest) {
        guard let cluster, case .join = request, let proxy = clusterState.meetingProxies[id], proxy.meeting == nil,
              let meeting = meetings.accountMeeting[identity.account],
              meetings.meetings[meeting]?.members[identity.account]?.connection == id else { return }
        clusterState.meetingProxies[id]?.meeting = meeting
        cluster.send(.meetingRoute(meeting: meeting, connection: proxy.remote.connection), to: proxy.remote.node)
    }

    /// After meeting outputs went out: proxies that are no longer members are dropped (their
    /// device nodes told), and places of meetings that ended or lapsed here are released.
    func meetingsSettled() async {
        guard let cluster else { return }
        if !clusterState.meetingProxies.isEmpty {
            var members: Set<ConnectionID> = []
            for meeting in meetings.meetings.values {
                for member in meeting.members.values { if let connection = member.connection { members.insert(connection) } }
            }
            for (id, proxy) in clusterState.meetingProxies where !members.contains(id) {
                clusterState.removeMeetingProxy(id)
                if let meeting = proxy.meeting {
                    cluster.send(.meetingLeft(meeting: meeting, connection: proxy.remote.connection), to: proxy.remote.node)
                }
            }
        }
        await storeMembers(cluster)
        // A reservation still awaiting its meeting ID is not free: releasing its place then
        // left a reserved meeting no other node could find.
        let free = clusterState.placedHere.filter { meetings.byName[$0] == nil && clusterState.reserving[$0] == nil }
        guard !free.isEmpty else { return }
        clusterState.placedHere.subtract(free)
        for name in free.sorted() {
            do {
                try await cluster.membership.places.release(name, node: cluster.node)
            } catch {
                logger.warning("meeting place of '\(name)': \(error.message)")
            }
        }
    }

    /// Writes who joined and left the meetings hosted here since the last write, so that
    /// a member logging in again on another node is found.
    private func storeMembers(_ cluster: ClusterNode) async {
        var members: [String: MeetingPlaces.Member] = [:]
        for meeting in meetings.meetings.values {
            for (account, member) in meeting.members {
                members[account] = MeetingPlaces.Member(device: member.identity.device, meeting: meeting.id)
            }
        }
        let changed = members.filter { clusterState.storedMembers[$0.key] != $0.value }
        let gone = clusterState.storedMembers.keys.filter { members[$0] == nil }.sorted()
        guard !changed.isEmpty || !gone.isEmpty else { return }
        // Taken as written before the await: a settling meanwhile writes only what changes
        // after this one.
        clusterState.storedMembers = members
        do {
            try await cluster.membership.places.update(host: cluster.node, members: changed, gone: gone)
        } catch {
            logger.warning("meeting members: \(error.message); members logging in on other nodes may not be found")
        }
    }

    // MARK: Node death

    /// Another node died or left. Its connections in meetings hosted here dropped out (they
    /// have the reconnect grace, then time out); members here of meetings it hosted get
    /// `meetingError` and may reserve and join again (on a live node).
    func meetingNodeDied(_ dead: NodeID) async {
        let now = time
        for (proxy, entry) in clusterState.meetingProxies where entry.remote.node == dead {
            clusterState.removeMeetingProxy(proxy)
            meetings.disconnected(proxy, at: now)
        }
        for (id, route) in clusterState.meetingRoutes.sorted(by: { $0.key < $1.key }) where route.host == dead {
            clusterState.meetingRoutes[id] = nil
            let error = SignalingError(.serverUnavailable, "node \(dead), host of meeting \(route.meeting), is gone; reserve and join it again")
            send(.message(.event(.meetingError(Event.MeetingError(callID: route.meeting, error: error)))), to: id)
            logger.warning("node \(dead), host of meeting \(route.meeting), died: its members here were told")
        }
    }
}
