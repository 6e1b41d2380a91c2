import Foundation
import LiveStreaming
import MediaEngine
import MediaRouting
import Signaling

/// What the live plane must do for a live room: start its composer (a hidden audience
/// leg of the room's meeting, pushing the mixed, laid-out room), keep its picture list in
/// step, and carry the host's controls. Commands of one room are ordered.
public enum LiveCommand: Sendable, Hashable {
    case start(LiveRoomSetup)
    /// Who is in the room, in layout order (the host first, then co-hosts as they joined).
    case participants(meeting: UInt64, [MeetingParticipant])
    /// Moves the push to `url` (already checked to parse): the live plane answers with
    /// `LivePlaneReport.switched`.
    case switchURL(meeting: UInt64, url: String)
    case setEnabled(meeting: UInt64, Bool)
    case setLayout(meeting: UInt64, mixMode: Int, customLayout: String?)
    /// Ends the push (the host left or the room ended); the composer leaves.
    case stop(meeting: UInt64)
}

/// Everything a composer needs to join its room's meeting and push it. Holds keys and the
/// stream URL: never print (the description redacts them).
public struct LiveRoomSetup: Sendable, Hashable, CustomStringConvertible {
    public var meeting: UInt64
    public var name: String
    /// The composer's leg on the media plane, with both of its keys and its check token.
    public var leg: UInt64
    public var audioSSRC: UInt32
    public var credentials: ComposerCredentials
    /// Where the media plane listens.
    public var candidates: [MediaCandidate]
    public var participants: [MeetingParticipant]
    public var url: String
    public var mixMode: Int
    public var customLayout: String?
    public var serverRecording: Bool

    public var description: String { "LiveRoomSetup(meeting \(meeting), leg \(leg), mode \(mixMode), keys and URL redacted)" }
}

/// What the live plane tells the signaling side; each becomes an event to the room's host.
public enum LivePlaneReport: Sendable, Hashable {
    /// An output's status changed: "push" (the URL) or "recording".
    case status(meeting: UInt64, output: String, status: Int, error: SignalingError?)
    /// The outcome of a `switchURL` (nil: the new URL carries the room).
    case switched(meeting: UInt64, error: SignalingError?)
    /// The outcome of a `setEnabled`.
    case enabled(meeting: UInt64, Bool, error: SignalingError?)
}

/// The live plane as the signaling side drives it; like the media plane, `apply` never waits.
public protocol LivePlane: Sendable {
    func apply(_ command: LiveCommand)
}

extension MeetingRegistry {
    /// A live room's state: its host, co-hosts and push settings.
    struct LiveRoom: Sendable {
        /// Nil once the host left (the co-hosts stay; the push has ended).
        var host: String?
        var coHosts: [String] = []
        var composerLeg: UInt64
        var composerSSRC: UInt32
        var url: String
        var mixMode: Int
        var customLayout: String?
        var serverRecording: Bool

        /// The people on the picture, host first.
        var accounts: [String] { (host.map { [$0] } ?? []) + coHosts }
    }

    /// A live room holds its host and three co-hosts (NIM).
    static let liveRoomCapacity = 4

    /// Checks a join against the live-room rules before anything changes.
    func admitLive(_ meeting: Meeting, _ identity: Identity, _ request: Request.JoinMeeting) throws(SignalingError) {
        if request.bypass != nil, !liveRoomsAvailable {
            throw SignalingError(.serverUnavailable, "joinMeeting: this server runs no composer for live rooms")
        }
        guard let bypass = request.bypass else {
            if meeting.live != nil {
                throw SignalingError(.liveRoomMismatch, "joinMeeting: '\(meeting.name)' is a live room: join with bypass streaming enabled")
            }
            return
        }
        guard meeting.live != nil || meeting.members.isEmpty else {
            throw SignalingError(.liveRoomMismatch, "joinMeeting: '\(meeting.name)' is running as a plain meeting; it cannot become a live room")
        }
        guard request.role == .actor else {
            throw SignalingError(.liveRoomRole, "joinMeeting: hosts and co-hosts of a live room are actors; its audience watches the stream")
        }
        if let live = meeting.live, live.accounts.count >= Self.liveRoomCapacity {
            throw SignalingError(.liveUserCountLimit, "joinMeeting: live room '\(meeting.name)' holds its host and \(Self.liveRoomCapacity - 1) co-hosts")
        }
        if let url = bypass.url {
            if meeting.live?.host != nil {
                throw SignalingError(.liveRoomHasHost, "joinMeeting: live room '\(meeting.name)' has a host; co-hosts join without a URL")
            }
            try Self.checkTarget(url, in: "joinMeeting")
            try Self.checkLayout(mixMode: bypass.mixMode ?? 0, customLayout: bypass.customLayout, in: "joinMeeting")
        } else if meeting.live?.host == nil {
            throw SignalingError(.liveRoomHostAbsent, "joinMeeting: live room '\(meeting.name)' has no host yet; the host joins first, with the URL")
        }
    }

    /// After a live join: the room starts (host) or its picture list grows (co-host).
    mutating func liveJoined(_ id: UInt64, _ member: Member, _ request: Request.JoinMeeting, _ credentials: LegCredentials) -> [Output] {
        guard let bypass = request.bypass, var meeting = meetings[id] else { return [] }
        let account = member.identity.account
        guard bypass.url != nil || meeting.live == nil else {
            meeting.live?.coHosts.append(account)
            meetings[id] = meeting
            return liveParticipants(of: id)
        }
        guard let url = bypass.url, let composer = credentials.composer else { return [] }
        var live = meeting.live ?? LiveRoom(host: nil, composerLeg: 0, composerSSRC: 0, url: url, mixMode: 0, customLayout: nil,
                                            serverRecording: false)
        lastLeg += 1
        let used = Set(meeting.members.values.flatMap { [$0.audioSSRC] + ($0.videoSSRC.map { [$0] } ?? []) })
        var ssrc: UInt32 = 0x4C49_5645  // "LIVE"; any SSRC no participant uses
        while used.contains(ssrc) { ssrc &+= 1 }
        live.host = account
        live.composerLeg = lastLeg
        live.composerSSRC = ssrc
        live.url = url
        live.mixMode = bypass.mixMode ?? 0
        live.customLayout = bypass.customLayout
        live.serverRecording = bypass.serverRecording
        meeting.live = live
        meetings[id] = meeting
        var outputs: [Output] = [.mediaPlane(.addLeg(ForwardingRouter.LegSetup(
            id: live.composerLeg, meeting: id, account: "", publishing: false, audioSSRC: ssrc, videoSSRC: nil,
            inboundKeying: composer.composerKeying, outboundKeying: composer.serverKeying, ice: composer.ice)))]
        for other in live.accounts.compactMap({ meeting.members[$0] }) {
            outputs.append(.mediaPlane(.setForwarding(subscriber: live.composerLeg, publisher: other.leg, audio: true, video: true)))
        }
        let setup = LiveRoomSetup(meeting: id, name: meeting.name, leg: live.composerLeg, audioSSRC: ssrc, credentials: composer, candidates: mediaCandidates(forLeg: live.composerLeg), participants: liveMembers(of: meeting),
                                  url: url, mixMode: live.mixMode, customLayout: live.customLayout, serverRecording: live.serverRecording)
        outputs.append(.live(.start(setup)))
        return outputs
    }

    /// After a member of a live room left: the host's leaving ends the push; a co-host's
    /// closes its place.
    mutating func liveLeft(_ account: String, of id: UInt64) -> [Output] {
        guard var meeting = meetings[id], var live = meeting.live else { return [] }
        if live.host == account {
            live.host = nil
            meeting.live = live
            meetings[id] = meeting
            return [.live(.stop(meeting: id)), .mediaPlane(.removeLeg(live.composerLeg))]
        }
        guard let index = live.coHosts.firstIndex(of: account) else { return [] }
        live.coHosts.remove(at: index)
        meeting.live = live
        meetings[id] = meeting
        return live.host == nil ? [] : liveParticipants(of: id)
    }

    /// The composer's SSRC, which a joining participant must not take.
    func liveSSRCs(of meeting: Meeting) -> [UInt32] {
        meeting.live.map { [$0.composerSSRC] } ?? []
    }

    /// The host's controls of a live room.
    mutating func handleLive(_ identity: Identity, _ connection: ConnectionID, _ requestID: UInt64,
                             _ request: MeetingRequest) throws(SignalingError) -> [Output] {
        let type = request.type
        guard liveRoomsAvailable else { throw SignalingError(.serverUnavailable, "\(type): this server runs no composer for live rooms") }
        switch request {
        case .switchBypassStreamingURL(let request):
            var live = try hostedRoom(identity, request.callID, in: type)
            try Self.checkTarget(request.url, in: type)
            live.url = request.url
            meetings[request.callID]?.live = live
            return [Self.okReply(connection, requestID, .empty), .live(.switchURL(meeting: request.callID, url: request.url))]
        case .setBypassStreamingEnabled(let request):
            _ = try hostedRoom(identity, request.callID, in: type)
            return [Self.okReply(connection, requestID, .empty), .live(.setEnabled(meeting: request.callID, request.enabled))]
        case .setBypassStreamingMixMode(let request):
            var live = try hostedRoom(identity, request.callID, in: type)
            try Self.checkLayout(mixMode: request.mixMode, customLayout: request.customLayout, in: type, accounts: live.accounts)
            live.mixMode = request.mixMode
            live.customLayout = request.customLayout
            meetings[request.callID]?.live = live
            return [Self.okReply(connection, requestID, .empty),
                    .live(.setLayout(meeting: request.callID, mixMode: request.mixMode, customLayout: request.customLayout))]
        case .reserve, .join, .leave, .setRole, .setMute, .setVideoSize, .renegotiate:
            throw SignalingError(.invalidRequest, "\(type): not a live room's control")
        }
    }

    /// Tells the host what the live plane reported.
    public func liveReported(_ report: LivePlaneReport) -> [Output] {
        switch report {
        case .status(let id, let output, let status, let error):
            return toHost(of: id, .bypassStreamingStatus(Event.BypassStreamingStatus(callID: id, output: output, status: status, error: error)))
        case .switched(let id, let error):
            return toHost(of: id, .bypassStreamingURLSwitched(Event.BypassStreamingResult(callID: id, error: error)))
        case .enabled(let id, let enabled, let error):
            return toHost(of: id, .bypassStreamingEnabled(Event.BypassStreamingResult(callID: id, enabled: enabled, error: error)))
        }
    }

    private func toHost(of id: UInt64, _ event: PushedEvent) -> [Output] {
        guard let meeting = meetings[id], let host = meeting.live?.host, let member = meeting.members[host] else { return [] }
        return send(member, event)
    }

    private func hostedRoom(_ identity: Identity, _ id: UInt64, in request: String) throws(SignalingError) -> LiveRoom {
        guard let meeting = meetings[id], let member = meeting.members[identity.account], member.identity.device == identity.device else {
            throw SignalingError(.notInMeeting, "\(request): this device is not in meeting \(id)")
        }
        guard let live = meeting.live, live.host == identity.account else {
            throw SignalingError(.liveRoomNotHost, "\(request): only the host of a live room controls its push")
        }
        return live
    }

    private func liveMembers(of meeting: Meeting) -> [MeetingParticipant] {
        (meeting.live?.accounts ?? []).compactMap { meeting.members[$0]?.participant }
    }

    private func liveParticipants(of id: UInt64) -> [Output] {
        guard let meeting = meetings[id], let live = meeting.live, live.host != nil else { return [] }
        var outputs: [Output] = []
        for member in live.accounts.compactMap({ meeting.members[$0] }) {
            outputs.append(.mediaPlane(.setForwarding(subscriber: live.composerLeg, publisher: member.leg, audio: true, video: true)))
        }
        outputs.append(.live(.participants(meeting: id, liveMembers(of: meeting))))
        return outputs
    }

    static func checkTarget(_ url: String, in request: String) throws(SignalingError) {
        guard url.utf8.count <= 2_048 else { throw SignalingError(.bypassInvalidURL, "\(request): the push URL is longer than 2048 bytes") }
        let target: LiveTarget
        switch Result(catching: { () throws(LiveStreamError) in try LiveTarget(url) }) {
        case .success(let parsed): target = parsed
        case .failure(let error): throw SignalingError(.bypassInvalidURL, "\(request): \(error.message)")
        }
        // A client names a file in the server's recording directory, never a path of its
        // choosing: the server must not write where a stranger points it.
        if case .file(let path) = target, path.hasPrefix("/") || path.split(separator: "/").contains("..") {
            throw SignalingError(.bypassInvalidURL, "\(request): a file target is a name in the server's recording directory, not '\(path)'")
        }
    }

    static func checkLayout(mixMode: Int, customLayout: String?, in request: String, accounts: [String]? = nil) throws(SignalingError) {
        guard let mode = LiveMixMode(rawValue: mixMode) else {
            throw SignalingError(.bypassLayout, "\(request): mix mode \(mixMode) is not one of 0-4")
        }
        guard mode == .custom else { return }
        guard let customLayout, customLayout.utf8.count <= 16_384 else {
            throw SignalingError(.bypassLayout, "\(request): mix mode 4 needs a custom layout of at most 16 KiB")
        }
        do {
            let layout = try LiveLayout.custom(json: Data(customLayout.utf8))
            if let accounts { _ = try layout.places(for: accounts, width: 1_280, height: 720) }
        } catch {
            throw SignalingError(.bypassLayout, "\(request): \(error.description)")
        }
    }
}
