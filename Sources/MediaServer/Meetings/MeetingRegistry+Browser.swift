import MediaEngine
import MediaRouting
import Signaling

/// A meeting member that is a WebRTC peer on a signaling connection (a browser): what its
/// one BUNDLE transport was answered with, and whose media each of its receiving sections
/// carries. A renegotiation keeps the transport (same ICE credentials, fingerprints,
/// DTLS role, payload types and extension IDs) and moves only tracks.
struct BrowserLeg: Sendable {
    /// This side of the transport, as answered (the role taken, the session's version).
    var local: WebRTCAnswerer.Local
    var remoteTransport: WebRTCDescription.Transport
    var media: ForwardingRouter.LegSetup.Media
    /// Its video as simulcast layers by RID (its SSRCs unannounced), when it sends so.
    var videoRIDs: ForwardingRouter.LegSetup.RIDLayers?
    /// Whose stream of which kind a receiving section carries.
    struct Placement: Sendable, Hashable {
        var account: String
        var kind: MediaDescription.Kind
    }

    /// mid to the stream its section carries.
    var placed: [String: Placement]

    /// mid to account: the participants its receiving sections carry.
    var receiving: [String: String] { placed.mapValues(\.account) }
}

extension MeetingRegistry {
    /// Leg `leg`'s media addresses as host candidates of an ICE-lite answer.
    public func webRTCCandidates(forLeg leg: UInt64) -> [ICECandidate] {
        mediaCandidates(forLeg: leg).enumerated().compactMap { index, candidate -> ICECandidate? in
            guard let address = try? MediaEngine.SocketAddress(host: candidate.host, port: candidate.port) else { return nil }
            return ICECandidate.local(.host, address: address, localPreference: ICECandidate.localPreference(for: address, index: index))
        }
    }

    /// A browser's join: its offer is answered (ICE-lite, this side the DTLS server), its
    /// sending sections give its SSRCs, and its receiving sections get the actors already
    /// in the meeting, in order; one that joins later comes with the peer's next offer
    /// (`renegotiateMeeting`), which is when the server starts forwarding it.
    mutating func joinBrowser(_ identity: Identity, _ connection: ConnectionID, _ requestID: UInt64, _ request: Request.JoinMeeting,
                              offer text: String, _ credentials: LegCredentials, _ time: ServerTime) throws(SignalingError) -> [Output] {
        guard let webRTC = credentials.webRTC else {
            throw SignalingError(.serverUnavailable, "joinMeeting: this server drew no DTLS certificate for the leg")
        }
        guard request.bypass == nil else {
            throw SignalingError(.liveRoomMismatch, "joinMeeting: WebRTC peers join plain meetings; a live room's host and co-hosts join with media")
        }
        let (id, admitted) = try admit(identity, to: request.name, role: request.role, in: "joinMeeting")
        var meeting = admitted
        guard meeting.live == nil else {
            throw SignalingError(.liveRoomMismatch, "joinMeeting: '\(request.name)' is a live room; WebRTC peers join plain meetings")
        }
        let offer = try Self.parseOffer(text, in: "joinMeeting")
        let others = meeting.members.values.sorted { $0.identity.account < $1.identity.account }
        var local = WebRTCAnswerer.Local(iceUfrag: credentials.ice.ufrag, icePassword: credentials.ice.password, iceLite: true,
                                         fingerprint: webRTC.certificate.fingerprint, candidates: webRTCCandidates(forLeg: nextLeg), candidatesComplete: true,
                                         tracks: Self.tracks(of: others, placed: [:]), receives: request.role == .actor,
                                         dtlsRole: .server, sessionID: UInt64(truncatingIfNeeded: Int64(time.epochMilliseconds)) | 1)
        let negotiation = try Self.answer(offer, local: local, in: "joinMeeting")
        local.dtlsRole = negotiation.dtlsRole
        let sending = negotiation.sections.filter { $0.direction == .sendReceive || $0.direction == .receiveOnly }
        let sentAudio = sending.first { $0.kind == .audio }?.remoteSSRCs.first
        let sentVideo = sending.first { $0.kind == .video }
        let audioSSRC: UInt32
        var videoSSRC: UInt32?
        var videoRIDs: ForwardingRouter.LegSetup.RIDLayers?
        if request.role == .actor {
            guard let sentAudio else {
                throw SignalingError(.invalidRequest, "joinMeeting: an actor's offer sends Opus audio with its SSRC announced (a=sendrecv or sendonly, a=ssrc)")
            }
            audioSSRC = sentAudio
            if request.type == .video {
                if let sentVideo, let rids = Self.ridLayers(of: sentVideo) {
                    // Simulcast: subscribers get it under an SSRC of the server's.
                    videoRIDs = rids
                    videoSSRC = webRTC.spareVideoSSRC
                } else {
                    guard let ssrc = sentVideo?.remoteSSRCs.first else {
                        throw SignalingError(.invalidRequest,
                                             "joinMeeting: a video actor's offer sends VP8 video with its SSRC announced, or as simulcast (a=simulcast, a=rid)")
                    }
                    videoSSRC = ssrc
                }
            }
        } else {
            audioSSRC = webRTC.spareAudioSSRC
            videoSSRC = request.type == .video ? webRTC.spareVideoSSRC : nil
        }
        try checkSSRCs(audio: audioSSRC, video: videoSSRC, in: meeting, request: "joinMeeting")
        let media = ForwardingRouter.LegSetup.Media(negotiation)
        lastLeg += 1
        var member = Member(identity: identity, connection: connection, role: request.role, type: request.type,
                            audioSSRC: audioSSRC, videoSSRC: videoSSRC, leg: lastLeg, since: time.epochMilliseconds)
        let browser = BrowserLeg(local: local, remoteTransport: negotiation.remoteTransport, media: media, videoRIDs: videoRIDs,
                                 placed: Self.placed(negotiation))
        member.browser = browser
        meeting.members[identity.account] = member
        meeting.expiresAt = nil
        meeting.startedAt = meeting.startedAt ?? time.epochMilliseconds
        meetings[id] = meeting
        accountMeeting[identity.account] = id

        let reply = Reply.JoinMeeting(callID: id, participants: others.map(\.participant), sdp: negotiation.answer.text, receiving: browser.receiving)
        var outputs = [Self.okReply(connection, requestID, .joinMeeting(reply))]
        var setup = ForwardingRouter.LegSetup(
            id: member.leg, meeting: id, account: identity.account, publishing: request.role == .actor, audioSSRC: audioSSRC,
            videoSSRC: videoSSRC,
            keying: .dtls(role: negotiation.dtlsRole, certificate: webRTC.certificate, remoteFingerprints: negotiation.remoteTransport.fingerprints),
            media: media, ice: credentials.ice)
        setup.videoRIDs = videoRIDs
        outputs.append(.mediaPlane(.addLeg(setup)))
        return outputs + joined(member, others: others, in: id)
    }

    /// A browser's next offer on its transport: the actors now in the meeting are placed in
    /// its receiving sections (each where it was, newcomers in free ones), and forwarding
    /// follows: a participant newly placed is forwarded (from a keyframe), one no longer
    /// placed is not.
    mutating func renegotiate(_ identity: Identity, _ connection: ConnectionID, _ requestID: UInt64,
                              _ request: Request.RenegotiateMeeting) throws(SignalingError) -> [Output] {
        var member = try member(identity, of: request.callID, in: "renegotiateMeeting")
        guard var meeting = meetings[request.callID], var browser = member.browser else {
            throw SignalingError(.invalidRequest, "renegotiateMeeting: only a participant that joined with an SDP offer renegotiates")
        }
        let offer = try Self.parseOffer(request.sdp, in: "renegotiateMeeting")
        let others = meeting.members.values.filter { $0.leg != member.leg }.sorted { $0.identity.account < $1.identity.account }
        var local = browser.local
        local.version += 1
        local.tracks = Self.tracks(of: others, placed: browser.placed)
        let negotiation = try Self.answer(offer, local: local, in: "renegotiateMeeting")
        let transport = negotiation.remoteTransport
        guard transport.iceUfrag == browser.remoteTransport.iceUfrag, transport.icePassword == browser.remoteTransport.icePassword else {
            throw SignalingError(.invalidRequest, "renegotiateMeeting: ICE restarts are not supported; leave and join again")
        }
        guard Set(transport.fingerprints) == Set(browser.remoteTransport.fingerprints), negotiation.dtlsRole == browser.local.dtlsRole else {
            throw SignalingError(.invalidRequest, "renegotiateMeeting: the DTLS certificate and role stay those of the join")
        }
        let media = ForwardingRouter.LegSetup.Media(negotiation)
        guard media == browser.media else {
            throw SignalingError(.invalidRequest, "renegotiateMeeting: payload types and header extension IDs stay those of the join")
        }
        if member.role == .actor {
            let sending = negotiation.sections.filter { $0.direction == .sendReceive || $0.direction == .receiveOnly }
            let video = sending.first { $0.kind == .video }
            let keepsVideo = if let rids = browser.videoRIDs { video.flatMap(Self.ridLayers(of:)) == rids }
                else { member.videoSSRC == nil || video?.remoteSSRCs.first == member.videoSSRC }
            guard sending.first(where: { $0.kind == .audio })?.remoteSSRCs.first == member.audioSSRC, keepsVideo else {
                throw SignalingError(.invalidRequest,
                                     "renegotiateMeeting: an actor keeps sending its audio and video with the SSRCs (or simulcast RIDs) it joined with")
            }
        }
        let before = member
        browser.local = local
        browser.placed = Self.placed(negotiation)
        member.browser = browser
        meeting.members[identity.account] = member
        meetings[request.callID] = meeting

        var outputs = [Self.okReply(connection, requestID, .renegotiateMeeting(Reply.RenegotiateMeeting(
            sdp: negotiation.answer.text, receiving: browser.receiving)))]
        for other in others where before.forwarding(of: other) != member.forwarding(of: other) {
            let forwarding = member.forwarding(of: other)
            outputs.append(.mediaPlane(.setForwarding(subscriber: member.leg, publisher: other.leg, audio: forwarding.audio, video: forwarding.video)))
        }
        return outputs
    }

    /// What a browser receives: each actor's audio and video, where it was before.
    private static func tracks(of others: [Member], placed: [String: BrowserLeg.Placement]) -> [WebRTCAnswerer.Track] {
        var tracks: [WebRTCAnswerer.Track] = []
        for other in others where other.role == .actor {
            let account = other.identity.account
            let streams = [(MediaDescription.Kind.audio, other.audioSSRC)] + (other.videoSSRC.map { [(.video, $0)] } ?? [])
            for (kind, ssrc) in streams {
                let placement = BrowserLeg.Placement(account: account, kind: kind)
                tracks.append(WebRTCAnswerer.Track(kind: kind, ssrc: ssrc, stream: account, id: "\(account)-\(kind)", cname: account,
                                                   mid: placed.first { $0.value == placement }?.key,
                                                   rtxSSRC: kind == .video ? RTXStream.ssrc(forVideo: ssrc) : nil))
            }
        }
        return tracks
    }

    /// A video section's simulcast layers as taken, when the peer sends it so.
    static func ridLayers(of section: WebRTCNegotiation.Section) -> ForwardingRouter.LegSetup.RIDLayers? {
        section.simulcast.isEmpty ? nil : ForwardingRouter.LegSetup.RIDLayers(mid: section.mid, rids: section.simulcast.map(\.rid))
    }

    /// Whose stream each section of the answer carries.
    private static func placed(_ negotiation: WebRTCNegotiation) -> [String: BrowserLeg.Placement] {
        var placed: [String: BrowserLeg.Placement] = [:]
        for section in negotiation.sections {
            if let track = section.track { placed[section.mid] = BrowserLeg.Placement(account: track.stream, kind: section.kind) }
        }
        return placed
    }

    private static func parseOffer(_ text: String, in request: String) throws(SignalingError) -> WebRTCDescription {
        guard text.utf8.count <= SignalingHub.maximumOfferSize else {
            throw SignalingError(.invalidRequest, "\(request): the offer is larger than \(SignalingHub.maximumOfferSize) bytes")
        }
        do throws(JSEPError) {
            return try WebRTCDescription(parsing: text)
        } catch {
            throw SignalingError(.invalidRequest, "\(request): the offer: \(error.message)")
        }
    }

    private static func answer(_ offer: WebRTCDescription, local: WebRTCAnswerer.Local, in request: String) throws(SignalingError) -> WebRTCNegotiation {
        do throws(JSEPError) {
            return try WebRTCAnswerer.answer(offer, local: local)
        } catch {
            throw SignalingError(.invalidRequest, "\(request): \(error.message)")
        }
    }
}
