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

    /// Runs a real-time session request. Joining anything needs the device's data connection
    /// first: what is relayed to a member must have somewhere to go.
    func handleRTS(_ request: RTSRequest, from identity: RTSRegistry.Identity, requestID: UInt64) async {
        guard let relay = rtsRelay else {
            let error = SignalingError(.serverUnavailable, "\(request.type): this server runs no data relay for real-time sessions")
            send(.message(.error(id: requestID, error)), to: identity.connection)
            return
        }
        // A node's registry and relay know its own members only: a conference reserved on two
        // nodes would be two conferences under one name, a callee on another node offline.
        // Until channels are placed across nodes, a cluster refuses them outright.
        if cluster != nil {
            let error = SignalingError(.serverUnavailable, "\(request.type): real-time sessions are not available across cluster nodes yet; "
                                       + "use a single server for them")
            send(.message(.error(id: requestID, error)), to: identity.connection)
            return
        }
        let joins: Bool = switch request {
        case .request, .join: true
        case .response(let body): body.accept
        default: false
        }
        if joins, await !relay.isConnected(account: identity.account, device: identity.device) {
            let error = SignalingError(.invalidRequest, "\(request.type): open this device's data connection (/rts) and log in on it first")
            send(.message(.error(id: requestID, error)), to: identity.connection)
            return
        }
        var calleeDevices: [RTSRegistry.Identity] = []
        if case .request(let body) = request {
            calleeDevices = registry.onlineDevices(of: body.callee).map {
                RTSRegistry.Identity(account: body.callee, device: $0.device, connection: $0.connection)
            }
        }
        let calls = registry
        let outputs = rts.handle(request, from: identity, requestID: requestID, calleeDevices: calleeDevices,
                                 inCall: { calls.accountCall[$0] != nil }, at: time)
        await perform(outputs)
    }

    func perform(_ outputs: [RTSRegistry.Output]) async {
        var commands: [RTSRelayCommand] = []
        for output in outputs {
            switch output {
            case .send(let id, let message):
                // What the relay must announce first (a join before its reply) goes before.
                if !commands.isEmpty {
                    await rtsRelay?.apply(commands)
                    commands.removeAll()
                }
                send(.message(message), to: id)
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
