import Foundation
import Signaling

extension SignalingHub {
    /// Connects the relay that carries real-time sessions' data.
    public func attach(rtsRelay relay: RTSRelay) {
        rtsRelay = relay
    }

    /// Takes a report of the relay: a device whose data connection went leaves its channels.
    public func rtsRelayReported(_ report: RTSRelayReport) async {
        switch report {
        case .dataConnectionLost(let account, let device, let tooSlow):
            await perform(rts.dataConnectionLost(account: account, device: device, tooSlow: tooSlow, at: time))
        }
    }

    /// Takes a real-time session request of a connection here: runs it, or (in a cluster)
    /// forwards it to the node hosting its session or conference.
    func handleRTS(_ request: RTSRequest, from identity: RTSRegistry.Identity, requestID: UInt64) async {
        guard rtsRelay != nil else {
            let error = SignalingError(.serverUnavailable, "\(request.type): this server runs no data relay for real-time sessions")
            send(.message(.error(id: requestID, error)), to: identity.connection)
            return
        }
        if let cluster, let host = await rtsHost(of: request, from: identity.connection) {
            // Hosted elsewhere: the request goes there, its reply comes back.
            cluster.send(.rtsRequest(connection: identity.connection.value, account: identity.account, device: identity.device,
                                     requestID: requestID, type: request.type,
                                     message: ClientRequest(request).encoded(id: requestID)), to: host)
            return
        }
        await runRTS(request, from: identity, requestID: requestID)
    }

    /// Runs a real-time session request here, for a connection here or a proxy of one on
    /// another node. Joining anything needs the device's data connection to this node
    /// first: what is relayed to a member must have somewhere to go. A device of another
    /// node is told where to open it (`misdirected`, with the location).
    func runRTS(_ request: RTSRequest, from identity: RTSRegistry.Identity, requestID: UInt64) async {
        guard let relay = rtsRelay else { return }
        let joins: Bool = switch request {
        case .request, .join: true
        case .response(let body): body.accept
        default: false
        }
        if joins, await !relay.isConnected(account: identity.account, device: identity.device) {
            let error: SignalingError
            if clusterState.rtsProxies[identity.connection] != nil, let location = cluster?.signalingURL.map(RTSDataConnection.url(forSignaling:)) {
                error = SignalingError(.misdirected, "\(request.type): this session or conference is hosted by another server: "
                                       + "open this device's data connection at \(location), then send the request again", location: location)
            } else {
                error = SignalingError(.invalidRequest, "\(request.type): open this device's data connection (/rts) and log in on it first")
            }
            await perform([RTSRegistry.Output.send(identity.connection, .error(id: requestID, error))])
            return
        }
        var calleeDevices: [RTSRegistry.Identity] = []
        var busyElsewhere: Set<String> = []
        var assigned: UInt64?
        var voiceClaim: (channelID: UInt64, accounts: Set<String>)?
        let sessionID = UUID().uuidString
        var elsewhere: [DevicePresence] = []
        if case .request(let body) = request, cluster != nil {
            assigned = await sharedMeetingID()
            if body.services.contains(.audio), let channelID = assigned {
                // The voice channel is exclusive with calls on every node: its parties
                // are claimed as a call's are, and one claimed elsewhere is busy.
                let accounts = [identity.account, body.callee]
                let claimed = await claimVoice(accounts, session: channelID)
                busyElsewhere = Set(accounts).subtracting(claimed)
                voiceClaim = (channelID, claimed)
            }
            elsewhere = await devicesElsewhere(of: body.callee)
        } else if case .join(let body) = request, cluster != nil, let conference = rts.conferences[body.name], conference.channelID == nil {
            assigned = await sharedMeetingID()
        }
        if case .reserve(let body) = request, cluster != nil { clusterState.conferencesPlacedHere.insert(body.name) }
        // From here to `perform` resolving where the outputs go nothing awaits: a settling
        // meanwhile would drop the callee's proxies, made here, before the request invites them.
        if case .request(let body) = request {
            calleeDevices = registry.onlineDevices(of: body.callee).map {
                RTSRegistry.Identity(account: body.callee, device: $0.device, connection: $0.connection)
            } + rtsProxies(for: elsewhere)
        }
        let calls = registry
        let outputs = rts.handle(request, from: identity, requestID: requestID, calleeDevices: calleeDevices,
                                 inCall: { calls.accountCall[$0] != nil || busyElsewhere.contains($0) }, sessionID: sessionID,
                                 assignedChannelID: assigned, at: time)
        if let voiceClaim, !voiceClaim.accounts.isEmpty, rts.sessions[sessionID] == nil {
            await releaseParties(of: voiceClaim.channelID)
        }
        await perform(outputs)
    }

    func perform(_ outputs: [RTSRegistry.Output]) async {
        // Where each proxy's outputs go, taken before any await; then the proxies' device
        // nodes learn their routes, before any reply or invitation that needs them.
        var remotes: [ConnectionID: ClusterState.Remote] = [:]
        if cluster != nil, !clusterState.rtsProxies.isEmpty {
            for case .send(let id, _) in outputs { remotes[id] = clusterState.rtsProxies[id]?.remote }
            rtsRoutesSettled()
        }
        if cluster != nil {
            // Voice channels that end free their parties for calls on every node before
            // anyone is told (who is told may call at once).
            for case .record(let record) in outputs where record.kind == .session && record.services.contains(.audio) {
                await releaseParties(of: record.channelID)
            }
        }
        var commands: [RTSRelayCommand] = []
        for output in outputs {
            switch output {
            case .send(let id, let message):
                // What the relay must announce first (a join before its reply) goes before.
                if !commands.isEmpty {
                    await rtsRelay?.apply(commands)
                    commands.removeAll()
                }
                deliver(message, to: id, remote: remotes[id])
            case .relay(let command):
                commands.append(command)
            case .record(let record):
                logger.info("real-time session ended", metadata: ["channelID": "\(record.channelID)", "kind": "\(record.kind.rawValue)",
                                                                 "reason": "\(record.endReason.rawValue)"])
                do {
                    try await store.saveRTS(record)
                } catch {
                    logger.error("store: \(error.message); will retry")
                    unsavedRTS.append(record)
                }
            }
        }
        if !commands.isEmpty { await rtsRelay?.apply(commands) }
        if cluster != nil { await conferencesSettled() }
    }

    /// The stored real-time session records `account` was in (nil: any), newest first.
    public func rtsRecords(of account: String?, limit: Int = 100) async throws(StoreError) -> [RTSRecord] {
        try await store.rtsRecords(of: account, limit: limit)
    }
}

extension CallRegistry {
    /// The devices of `account` connected now, in name order.
    func onlineDevices(of account: String) -> [(device: String, connection: ConnectionID)] {
        devices.compactMap { key, device in
            guard key.account == account, let connection = device.connection else { return nil }
            return (key.device, connection)
        }.sorted { $0.device < $1.device }
    }
}
