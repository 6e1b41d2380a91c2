import MediaEngine

/// Quality of a user's network, in NIM's four levels, from loss, round trip and jitter
/// through the same index net-detect uses:
/// `(loss% / 20) * 0.5 + (rtt ms / 1200) * 0.25 + (jitter ms / 150) * 0.25`.
public enum NetStatus: Int, Sendable, Hashable, Codable, CaseIterable {
    case veryGood = 0
    case good = 1
    case bad = 2
    case veryBad = 3

    /// The index for loss (percent), round trip and jitter (milliseconds), as net-detect
    /// computes it (`NetQuality.index`, jitter in place of the RTT's mean deviation).
    public static func index(lossPercent: Double, roundTripMilliseconds: Double, jitterMilliseconds: Double) -> Double {
        NetQuality.index(lossRate: lossPercent, rttAverage: roundTripMilliseconds, rttMeanDeviation: jitterMilliseconds)
    }

    /// The level of an index, with net-detect's class boundaries.
    public init(index: Double) {
        switch NetQuality(index: index) {
        case .veryGood: self = .veryGood
        case .good: self = .good
        case .poor: self = .bad
        case .veryPoor: self = .veryBad
        }
    }
}

/// Media state of a call, as `callStatus` reports it.
public enum CallStatus: Sendable, Hashable {
    /// The peer answered our connectivity check; media flows.
    case connected
    /// Media could not be set up or stopped arriving.
    case disconnected(String)
}

/// What `NetCallManager` reports, in order, through `events`: every one is delivered,
/// however slowly the app reads (per-frame media goes through `mediaUpdates` instead).
public enum NetCallEvent: Sendable {
    /// An invitation (callee side).
    case receive(callID: UInt64, from: String, type: CallType, option: CallOption)
    /// The callee answered (caller side).
    case response(callID: UInt64, from: String, accepted: Bool)
    /// Another device of this account answered the invitation.
    case responsedByOther(callID: UInt64, accepted: Bool)
    case callStatus(callID: UInt64, CallStatus)
    /// The pair ICE chose for the media of a call or meeting leg (host, srflx, prflx or
    /// relay at each end), when media connects and again when it moves to a better pair.
    case mediaPath(callID: UInt64, ICECandidatePair, roundTripMilliseconds: Double?)
    case control(callID: UInt64, from: String, CallControl)
    /// The call ended: hung up by `by`, or by the server for `reason`.
    case hangup(callID: UInt64, by: String?, reason: CallEndReason)
    case callRecord(CallRecord)
    /// About once a second during a call, for the peer's direction of media.
    case netStatus(user: String, NetStatus, lossPercent: Double, roundTripMilliseconds: Double, jitterMilliseconds: Double)
    /// The signaling connection dropped; calls and media go on while it reconnects.
    case connectionLost(String)
    /// Logged in again after a drop.
    case reconnected
    /// The audio-file mix task played its last pass.
    case audioMixTaskCompleted(AudioFileMixTask)
    /// A WebM recording of `user` began writing to `file`.
    case recordStarted(callID: UInt64, file: String, user: String)
    /// A recording of `user` ended early (a full disk); what was written stays playable.
    case recordError(callID: UInt64, user: String, RecordingError)
    /// A recording of `user` was stopped and its file closed.
    case recordStopped(callID: UInt64, file: String, user: String)
    /// The recorded user's picture size changed; the recording goes on in the same file.
    case recordVideoSizeChanged(callID: UInt64, user: String, width: Int, height: Int)
    /// Someone joined the meeting this device is in.
    case userJoined(callID: UInt64, MeetingParticipant)
    /// Someone left it, and why.
    case userLeft(callID: UInt64, user: String, MeetingLeaveReason)
    /// Someone switched between actor and audience.
    case meetingRoleChanged(callID: UInt64, user: String, MeetingRole)
    /// This device's meeting leg: connected to the server, or lost.
    case meetingStatus(callID: UInt64, CallStatus)
    /// The meeting ended for this device without its asking (the server stopped, the
    /// leg was lost).
    case meetingError(callID: UInt64, SignalingError)
    /// The server's record of a meeting this device was in, once it ended.
    case meetingRecord(MeetingRecord)
    /// The host's live push (`output` "push") or server recording ("recording") changed
    /// status: NIM's live-stream statuses 500-508, with the failure when there is one.
    case bypassStreamingStatus(callID: UInt64, output: String, status: Int, SignalingError?)
    /// The outcome of `switchBypassStreamingURL`: nil when the new URL carries the room
    /// (the old push ended); otherwise the old push goes on.
    case bypassStreamingURLSwitched(callID: UInt64, SignalingError?)
    /// The outcome of `setBypassStreamingEnabled` (NIM's `onSetBypassStreamingEnabled`).
    case bypassStreamingEnabled(callID: UInt64, enabled: Bool, SignalingError?)
}

/// Per-frame media reports, through `NetCallManager.mediaUpdates`: a latest-value
/// channel (the newest few are kept; an app that reads slowly sees current pictures and
/// levels, never a backlog, and never holds up `events`).
public enum NetCallMediaUpdate: Sendable {
    /// A decoded picture from a user (I420, compact planes).
    case remoteVideoFrame(user: String, VideoFrame)
    /// A captured picture about to be sent.
    case localPreviewFrame(VideoFrame)
    /// Level of our own audio being sent, 0...1, every 100 ms.
    case myVolume(Double)
    /// Users heard above the speaking threshold in the last 100 ms, with their levels.
    case speakingUsers([String: Double])
}

/// How `NetCallManager` gets the media of a call: the app says which sources to use for
/// a call of this type and quality (devices, files, synthetic), and where remote audio plays.
public typealias MediaSessionFactory = @Sendable (_ type: CallType, _ quality: CallVideoQuality) throws -> MediaSession.Configuration

extension MediaCandidate {
    /// The signaling form of an ICE candidate.
    public init(_ candidate: ICECandidate) {
        self.init(host: candidate.address.host, port: candidate.address.port, type: candidate.kind.rawValue,
                  priority: candidate.priority, foundation: candidate.foundation)
    }

    /// The engine form, checked: a literal IP address, a port, a known type, a foundation
    /// of at most 32 ice-chars.
    /// - Throws: `SignalingError` `.invalidRequest` naming what is wrong.
    public func iceCandidate() throws(SignalingError) -> ICECandidate {
        let address: SocketAddress
        do {
            address = try SocketAddress(host: host, port: port)
        } catch {
            throw SignalingError(.invalidRequest, "media: candidate \(host):\(port) is not an address")
        }
        guard let kind = ICECandidate.Kind(rawValue: type ?? "host") else {
            throw SignalingError(.invalidRequest, "media: candidate type '\(type ?? "")' is not host, srflx, prflx or relay")
        }
        var candidate = ICECandidate.local(kind, address: address, localPreference: 65_535)
        if let priority {
            guard priority > 0 else { throw SignalingError(.invalidRequest, "media: candidate priority must be positive") }
            candidate.priority = priority
        }
        if let foundation {
            let iceChars = Set(ICECredentials.iceChars)
            guard (1...32).contains(foundation.count), foundation.allSatisfy(iceChars.contains) else {
                throw SignalingError(.invalidRequest, "media: candidate foundation must be 1 to 32 ice-chars")
            }
            candidate.foundation = foundation
        }
        return candidate
    }
}

extension MediaEndpoint {
    /// The signaling form of a session's endpoint.
    public init(_ endpoint: MediaSession.Endpoint) {
        self.init(candidates: endpoint.candidates.map(MediaCandidate.init), srtpProfile: endpoint.keying.profile.rawValue,
                  srtpKey: endpoint.keying.base64, audioSSRC: endpoint.audioSSRC, videoSSRC: endpoint.videoSSRC,
                  iceUfrag: endpoint.ice.ufrag, icePassword: endpoint.ice.password)
        if !endpoint.videoLayers.isEmpty { videoLayers = endpoint.videoLayers }
    }

    /// The engine form, checked.
    /// - Throws: `SignalingError` `.invalidRequest` for an unknown profile, a bad key,
    ///   address or candidate.
    public func sessionEndpoint() throws(SignalingError) -> MediaSession.Endpoint {
        guard let profile = SRTPProfile(rawValue: srtpProfile) else {
            throw SignalingError(.invalidRequest, "media: unknown SRTP profile '\(srtpProfile)'")
        }
        let keying: SRTPKeyingMaterial
        do {
            keying = try SRTPKeyingMaterial(profile: profile, base64: srtpKey)
        } catch {
            throw SignalingError(.invalidRequest, "media: \(error.message)")
        }
        var converted: [ICECandidate] = []
        for candidate in candidates { converted.append(try candidate.iceCandidate()) }
        return MediaSession.Endpoint(candidates: converted, keying: keying, audioSSRC: audioSSRC, videoSSRC: videoSSRC,
                                     ice: ICECredentials(ufrag: iceUfrag, password: icePassword))
    }
}
