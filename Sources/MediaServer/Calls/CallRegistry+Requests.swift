import Foundation
import Signaling

extension CallRegistry {
    /// Handles one request from a logged-in connection.
    ///
    /// - Parameters:
    ///   - request: What the client asks, decoded at the edge.
    ///   - requestID: The envelope id, repeated in the reply.
    ///   - assignedCallID: The ID a `start` gives its call, when a cluster drew it from the
    ///     nodes' shared sequence; nil: the registry numbers it.
    /// - Returns: The reply (first) and the events it caused, in order. Failures are
    ///   `error` replies: the connection stays up.
    public mutating func handle(_ request: CallRequest, from connection: ConnectionID, requestID: UInt64, at time: ServerTime,
                                assignedCallID: UInt64? = nil) -> [Output] {
        do throws(SignalingError) {
            guard let key = connections[connection] else {
                throw SignalingError(.unauthorized, "\(request.type): log in first")
            }
            switch request {
            case .start(let body): return try start(key, connection, requestID, body, assignedCallID, time)
            case .response(let body): return try respond(key, connection, requestID, body, time)
            case .control(let body): return try control(key, connection, requestID, body)
            case .candidates(let body): return try candidates(key, connection, requestID, body)
            case .hangup(let body): return try hangup(key, connection, requestID, body, time)
            case .mediaStatus(let body): return try mediaStatus(key, connection, requestID, body, time)
            }
        } catch {
            return [Self.errorReply(connection, requestID, error)]
        }
    }

    /// An `error` reply.
    public static func errorReply(_ connection: ConnectionID, _ requestID: UInt64?, _ error: SignalingError) -> Output {
        .send(connection, .error(id: requestID, error))
    }

    /// An `ok` reply.
    public static func okReply(_ connection: ConnectionID, _ requestID: UInt64, _ reply: ServerReply) -> Output {
        .send(connection, .reply(id: requestID, reply))
    }

    private mutating func start(_ key: DeviceKey, _ connection: ConnectionID, _ requestID: UInt64, _ request: Request.Start,
                                _ assigned: UInt64?, _ time: ServerTime) throws(SignalingError) -> [Output] {
        guard request.callee != key.account else {
            throw SignalingError(.invalidRequest, "start: you cannot call yourself")
        }
        guard !request.callee.isEmpty, request.callee.utf8.count <= 128 else {
            throw SignalingError(.invalidRequest, "start: callee must be 1 to 128 bytes")
        }
        guard request.media != nil || request.sdp != nil else {
            throw SignalingError(.invalidRequest, "start: media (an SDES endpoint) or sdp (a WebRTC offer) is required")
        }
        if let media = request.media { try Self.check(media, in: "start") }
        if let offer = request.sdp { try Self.checkDescription(offer, in: "start") }
        if let current = accountCall[key.account] {
            throw SignalingError(.busy, "start: you are already in call \(current)")
        }
        guard !busyElsewhere.contains(key.account) else {
            throw SignalingError(.busy, "start: you are already in a call")
        }
        guard !busyInSessions.contains(key.account) else {
            throw SignalingError(.busy, "start: you are in a voice session (RTS)")
        }
        let invited = devices.keys.filter { $0.account == request.callee && devices[$0]?.connection != nil }.sorted()
        guard !invited.isEmpty else {
            throw SignalingError(.calleeOffline, "start: \(request.callee) has no device online")
        }
        guard calls.count < configuration.maximumCalls else {
            throw SignalingError(.serverUnavailable, "start: the server holds its maximum of \(configuration.maximumCalls) calls")
        }
        let id = nextCallID(assigned: assigned, at: time)
        var outputs = [Self.okReply(connection, requestID, .start(Reply.Start(callID: id)))]
        let busy = accountCall[request.callee] != nil || busyElsewhere.contains(request.callee) || busyInSessions.contains(request.callee)
        calls[id] = Call(id: id, type: request.type, option: request.option, caller: key, callee: request.callee,
                         invited: busy ? [] : invited, answeredBy: nil, callerMedia: request.media, callerOffer: request.sdp, phase: .ringing,
                         deadline: time.monotonic + configuration.ringTimeout, startedAt: time.epochMilliseconds)
        accountCall[key.account] = id
        if busy {
            outputs += send(key, .control(Event.Control(callID: id, from: request.callee, control: .busyLine)))
            return outputs + end(id, reason: .busy, by: nil, at: time)
        }
        accountCall[request.callee] = id
        let invitation = Event.Receive(callID: id, from: key.account, type: request.type, option: request.option, sdp: request.sdp,
                                       sdes: request.sdp != nil && request.media != nil ? true : nil)
        for device in invited { outputs += send(device, .receive(invitation)) }
        return outputs
    }

    private mutating func respond(_ key: DeviceKey, _ connection: ConnectionID, _ requestID: UInt64,
                                  _ request: Request.Response, _ time: ServerTime) throws(SignalingError) -> [Output] {
        guard var call = calls[request.callID] else {
            throw SignalingError(.callNotFound, "response: call \(request.callID) does not exist or has ended")
        }
        guard call.invited.contains(key) else {
            throw SignalingError(.forbidden, "response: call \(request.callID) did not invite this device")
        }
        guard call.phase == .ringing else {
            throw SignalingError(.handledElsewhere, "response: call \(request.callID) was answered on another device")
        }
        let others = call.invited.filter { $0 != key }
        guard request.accept else {
            return [Self.okReply(connection, requestID, .response(Reply.Response(media: nil)))] + reject(call, by: key, at: time)
        }
        // The callee answers in a kind the caller offered: an SDES endpoint, or an SDP
        // answer to its JSEP offer.
        switch (request.media, request.sdp) {
        case (let media?, nil) where call.callerMedia != nil:
            try Self.check(media, in: "response")
        case (nil, let answer?) where call.callerOffer != nil:
            try Self.checkDescription(answer, in: "response")
        default:
            let offered = call.callerMedia != nil ? (call.callerOffer != nil ? "'media' or 'sdp'" : "'media'")
                : "'sdp', the answer to its offer (the caller is a WebRTC peer)"
            throw SignalingError(.invalidRequest, "response: accepting needs \(offered), one of them")
        }
        call.answeredBy = key
        call.phase = .accepted
        call.deadline = time.monotonic + configuration.connectTimeout
        calls[call.id] = call
        var outputs = [Self.okReply(connection, requestID, .response(Reply.Response(media: call.callerMedia)))]
        outputs += send(call.caller, .response(Event.Response(callID: call.id, from: key.account, accepted: true, media: request.media,
                                                              sdp: request.sdp)))
        for other in others {
            outputs += send(other, .responsedByOther(Event.ResponsedByOther(callID: call.id, accepted: true)))
        }
        return outputs
    }

    private mutating func control(_ key: DeviceKey, _ connection: ConnectionID, _ requestID: UInt64,
                                  _ request: Request.Control) throws(SignalingError) -> [Output] {
        let call = try party(key, of: request.callID, in: "control")
        var outputs = [Self.okReply(connection, requestID, .empty)]
        let event = Event.Control(callID: call.id, from: key.account, control: request.control)
        if key == call.caller {
            for device in call.answeredBy.map({ [$0] }) ?? call.invited { outputs += send(device, .control(event)) }
        } else {
            outputs += send(call.caller, .control(event))
        }
        return outputs
    }

    /// Trickled candidates go to the other side: from the caller to the answering device
    /// (or, while it rings, to every invited one); from the callee to the caller. At most
    /// `maximumTrickled` per call, each checked like the endpoint's.
    private mutating func candidates(_ key: DeviceKey, _ connection: ConnectionID, _ requestID: UInt64,
                                     _ request: Request.Candidates) throws(SignalingError) -> [Output] {
        var call = try party(key, of: request.callID, in: "candidates")
        guard key == call.caller || call.phase != .ringing else {
            throw SignalingError(.invalidRequest, "candidates: call \(call.id) has not been answered by this device")
        }
        guard request.candidates.count <= 16 else {
            throw SignalingError(.invalidRequest, "candidates: at most 16 at once, got \(request.candidates.count)")
        }
        guard call.trickled + request.candidates.count <= Self.maximumTrickled else {
            throw SignalingError(.invalidRequest, "candidates: call \(call.id) already passed on its \(Self.maximumTrickled) candidates")
        }
        for candidate in request.candidates { try Self.check(candidate, in: "candidates") }
        call.trickled += request.candidates.count
        calls[call.id] = call
        var outputs = [Self.okReply(connection, requestID, .empty)]
        let event = Event.Candidates(callID: call.id, from: key.account, candidates: request.candidates, complete: request.complete)
        if key == call.caller {
            for device in call.answeredBy.map({ [$0] }) ?? call.invited { outputs += send(device, .candidates(event)) }
        } else {
            outputs += send(call.caller, .candidates(event))
        }
        return outputs
    }

    private mutating func hangup(_ key: DeviceKey, _ connection: ConnectionID, _ requestID: UInt64,
                                 _ request: Request.Hangup, _ time: ServerTime) throws(SignalingError) -> [Output] {
        var id = request.callID
        if id == 0 {
            guard let current = accountCall[key.account], let call = calls[current],
                  call.caller == key || call.answeredBy == key || call.invited.contains(key) else {
                throw SignalingError(.callNotFound, "hangup: this device is in no call")
            }
            id = current
        }
        let call = try party(key, of: id, in: "hangup")
        let reply = Self.okReply(connection, requestID, .empty)
        switch call.phase {
        case .ringing where key != call.caller:
            return [reply] + reject(call, by: key, at: time)
        case .ringing:
            return [reply] + end(id, reason: .cancelled, by: key, at: time)
        case .accepted, .connected:
            return [reply] + end(id, reason: .completed, by: key, at: time)
        }
    }

    /// A callee device declines a ringing call: the caller gets `response(accepted: false)`,
    /// the callee's other devices `responsedByOther`, and the call ends as `rejected`.
    private mutating func reject(_ call: Call, by key: DeviceKey, at time: ServerTime) -> [Output] {
        var call = call
        var outputs = send(call.caller, .response(Event.Response(callID: call.id, from: key.account, accepted: false, media: nil)))
        for other in call.invited where other != key {
            outputs += send(other, .responsedByOther(Event.ResponsedByOther(callID: call.id, accepted: false)))
        }
        call.answeredBy = key
        calls[call.id] = call
        return outputs + end(call.id, reason: .rejected, by: key, at: time, skipHangupTo: [call.caller])
    }

    private mutating func mediaStatus(_ key: DeviceKey, _ connection: ConnectionID, _ requestID: UInt64,
                                      _ request: Request.MediaStatus, _ time: ServerTime) throws(SignalingError) -> [Output] {
        var call = try party(key, of: request.callID, in: "mediaStatus")
        guard key == call.caller || key == call.answeredBy, call.phase != .ringing else {
            throw SignalingError(.invalidRequest, "mediaStatus: call \(call.id) has not been answered")
        }
        let reply = Self.okReply(connection, requestID, .empty)
        guard request.connected else { return [reply] + end(call.id, reason: .failed, by: key, at: time) }
        if call.phase == .accepted {
            call.phase = .connected(since: time.monotonic)
            call.deadline = nil
            calls[call.id] = call
        }
        return [reply]
    }

    /// The call `id` if this device takes part in it (caller, answering or invited device).
    private func party(_ key: DeviceKey, of id: UInt64, in request: String) throws(SignalingError) -> Call {
        guard let call = calls[id] else {
            throw SignalingError(.callNotFound, "\(request): call \(id) does not exist or has ended")
        }
        let onCalleeSide = call.answeredBy.map { $0 == key } ?? call.invited.contains(key)
        guard key == call.caller || onCalleeSide else {
            throw SignalingError(.forbidden, "\(request): call \(id) is not yours")
        }
        return call
    }

    /// Bounds on what a peer may announce.
    /// Largest SDP offer or answer relayed (a browser's is 3 to 8 KB).
    static let maximumDescriptionSize = 64 * 1_024

    /// An SDP offer or answer the server relays without reading it: only its size and that
    /// it looks like SDP are checked (the peers negotiate).
    static func checkDescription(_ text: String, in request: String) throws(SignalingError) {
        guard text.hasPrefix("v=0"), text.utf8.count <= maximumDescriptionSize else {
            throw SignalingError(.invalidRequest, "\(request): sdp must be a session description (v=0 ...) of at most \(maximumDescriptionSize) bytes")
        }
    }

    static func check(_ media: MediaEndpoint, in request: String) throws(SignalingError) {
        guard (1...16).contains(media.candidates.count) else {
            throw SignalingError(.invalidRequest, "\(request): media needs 1 to 16 candidates, got \(media.candidates.count)")
        }
        for candidate in media.candidates { try check(candidate, in: request) }
        guard media.srtpKey.utf8.count <= 128, media.srtpProfile.utf8.count <= 64, (4...256).contains(media.iceUfrag.utf8.count),
              (22...256).contains(media.icePassword.utf8.count) else {
            throw SignalingError(.invalidRequest, "\(request): media key or profile is too long, or the ICE ufrag or password is not 4-256 and 22-256 characters")
        }
    }

    /// Bounds on one candidate.
    static func check(_ candidate: MediaCandidate, in request: String) throws(SignalingError) {
        guard (1...65_535).contains(candidate.port), !candidate.host.isEmpty, candidate.host.utf8.count <= 255,
              (candidate.type?.utf8.count ?? 0) <= 8, (candidate.foundation?.utf8.count ?? 0) <= 32 else {
            throw SignalingError(.invalidRequest, "\(request): candidate port \(candidate.port), host, type or foundation is invalid")
        }
    }
}
