/// Payload types and MIDs of the session's streams: the engine's own (Opus 111, VP8 96, no
/// MID) between our clients, the offer's when the session answered a WebRTC peer.
struct StreamPlan: Sendable {
    struct Codec: Sendable {
        var kind: MediaKind
        var payloadType: UInt8
        var clockRate: Int
        /// The RFC 8843 MID stamped on what is sent, and that binds what arrives without an
        /// announced SSRC.
        var mid: String?

        func send(ssrc: UInt32) -> SendStreamConfiguration {
            var stream = SendStreamConfiguration(kind: kind, ssrc: ssrc, payloadType: payloadType, clockRate: clockRate)
            stream.mid = mid
            return stream
        }

        func receive(ssrc: UInt32?) -> ReceiveStreamConfiguration {
            var stream = ReceiveStreamConfiguration(kind: kind, payloadType: payloadType, clockRate: clockRate, ssrc: ssrc)
            stream.mid = mid
            return stream
        }
    }

    var audio: Codec
    var video: Codec

    static let engine = StreamPlan(audio: Codec(kind: .audio, payloadType: 111, clockRate: 48_000),
                                   video: Codec(kind: .video, payloadType: 96, clockRate: VP8.clockRate))
}

/// A session's side of a WebRTC peer's offer: the negotiation (this side's answer in it),
/// the certificate DTLS presents, and what follows for the streams.
struct WebRTCLeg: Sendable {
    let negotiation: WebRTCNegotiation
    let certificate: DTLSCertificate
    let plan: StreamPlan
    /// The offer's header extension IDs, for what this side writes and reads.
    let extensions: RTPExtensionMap
    let audio: WebRTCNegotiation.Section
    let video: WebRTCNegotiation.Section?

    /// Answers `offer` for a session with `credentials`, `candidates` and these SSRCs.
    /// - Throws: `MediaSessionError`: `.negotiation` when the offer cannot be answered or has
    ///   no audio this side may send (a call always sends its microphone), `.keying` when no
    ///   certificate could be made.
    init(answering offer: WebRTCDescription, configuration: MediaSession.Configuration, credentials: ICECredentials,
         candidates: [ICECandidate], audioSSRC: UInt32, videoSSRC: UInt32?, cname: String) throws(MediaSessionError) {
        do throws(DTLSError) {
            certificate = try DTLSCertificate()
        } catch {
            throw MediaSessionError(.keying, "no DTLS certificate: \(error.message)")
        }
        var tracks = [WebRTCAnswerer.Track(kind: .audio, ssrc: audioSSRC, stream: cname, id: "\(cname)-audio", cname: cname)]
        if let videoSSRC {
            tracks.append(WebRTCAnswerer.Track(kind: .video, ssrc: videoSSRC, stream: cname, id: "\(cname)-video", cname: cname))
        }
        // Server-reflexive and relayed candidates come later, trickled through signaling.
        let complete = configuration.stunServers.isEmpty && configuration.turnServer == nil
        let local = WebRTCAnswerer.Local(iceUfrag: credentials.ufrag, icePassword: credentials.password, fingerprint: certificate.fingerprint,
                                         candidates: candidates, candidatesComplete: complete, tracks: tracks)
        do throws(JSEPError) {
            negotiation = try WebRTCAnswerer.answer(offer, local: local)
        } catch {
            throw MediaSessionError(.negotiation, error.message)
        }
        guard let audio = negotiation.sections.first(where: { $0.kind == .audio }), audio.direction.sends else {
            throw MediaSessionError(.negotiation, "the offer has no audio section this side can send in (a call sends its microphone)")
        }
        self.audio = audio
        video = negotiation.sections.first { $0.kind == .video }
        extensions = negotiation.extensionMap
        func codec(_ section: WebRTCNegotiation.Section?, _ kind: MediaKind, otherwise: StreamPlan.Codec) -> StreamPlan.Codec {
            guard let section else { return otherwise }
            return StreamPlan.Codec(kind: kind, payloadType: section.codec.payloadType, clockRate: Int(section.codec.clockRate), mid: section.mid)
        }
        plan = StreamPlan(audio: codec(audio, .audio, otherwise: StreamPlan.engine.audio),
                          video: codec(video, .video, otherwise: StreamPlan.engine.video))
    }

    /// Whether this side sends video: it has a camera and the answer says so.
    var sendsVideo: Bool { video?.direction.sends == true && video?.track != nil }

    /// What arrives, bound to the SSRC the offer announced, else to the MID.
    var receivedAudio: ReceiveStreamConfiguration? {
        audio.direction.receives ? plan.audio.receive(ssrc: audio.remoteSSRCs.first) : nil
    }

    var receivedVideo: ReceiveStreamConfiguration? {
        guard let video, video.direction.receives else { return nil }
        return plan.video.receive(ssrc: video.remoteSSRCs.first)
    }
}

extension MediaDescription.Direction {
    /// Whether a section with this direction (this side's) sends media.
    var sends: Bool { self == .sendReceive || self == .sendOnly }
    /// Whether it takes the peer's media.
    var receives: Bool { self == .sendReceive || self == .receiveOnly }
}

extension MediaSession {
    /// A session that answers a WebRTC peer's JSEP offer (a browser, aiortc, GStreamer's
    /// webrtcbin): media keyed by DTLS-SRTP with a certificate of its own, the offer's
    /// payload types, MIDs and header extension IDs, ICE controlled by the offerer.
    /// `webRTCAnswer` is the answer to send back; `start(events:)` starts the media.
    ///
    /// - Parameter offer: the peer's SDP offer.
    /// - Throws: `MediaSessionError`: `.negotiation` when the offer is malformed, lacks a
    ///   fingerprint, ICE credentials or a usable audio section (the reason names which),
    ///   and what `init(configuration:)` throws.
    public convenience init(configuration: Configuration, answering offer: String) throws(MediaSessionError) {
        let description: WebRTCDescription
        do throws(JSEPError) {
            description = try WebRTCDescription(parsing: offer)
        } catch {
            throw MediaSessionError(.negotiation, error.message)
        }
        try self.init(configuration: configuration, answering: description)
    }

    /// The SDP answer to the offer this session answered (nil for SDES sessions).
    public var webRTCAnswer: String? { webRTC?.negotiation.answer.text }

    /// The negotiation with the WebRTC peer (sections, refusals, roles); nil for SDES sessions.
    public var webRTCNegotiation: WebRTCNegotiation? { webRTC?.negotiation }

    /// Starts both directions toward the WebRTC peer whose offer this session answered (its
    /// media is participant ""): ICE with the offer's candidates (more come with
    /// `addRemoteCandidates`), then the DTLS handshake on the selected path; media flows
    /// once it agreed the keys (`dtlsConnected`). Returns at once. Call once.
    ///
    /// - Throws: `MediaCoreError` (`.configuration`) when the session answered no offer
    ///   (SDES sessions start with `start(remote:events:)`) or DTLS refused a setting.
    public func start(events: @escaping @Sendable (Event) -> Void) throws(MediaCoreError) {
        guard let leg = webRTC else {
            throw MediaCoreError(.configuration, "start(events:) starts a session that answered a WebRTC offer; start others with start(remote:events:)")
        }
        try connect(leg.negotiation, certificate: leg.certificate, audio: leg.receivedAudio, video: leg.receivedVideo, events: events)
    }

    /// Starts toward a WebRTC peer as `negotiation` agreed: the peer's ICE credentials and
    /// candidates, DTLS in the agreed role under `certificate`, and its streams as
    /// participant "". Nothing is sent or read before DTLS agrees the keys.
    private func connect(_ negotiation: WebRTCNegotiation, certificate: DTLSCertificate, audio: ReceiveStreamConfiguration?,
                         video: ReceiveStreamConfiguration?, events: @escaping @Sendable (Event) -> Void) throws(MediaCoreError) {
        try begin(events: events) { () throws(MediaCoreError) in
            // Before DTLS exists, so its keys cannot come first.
            state.withLock { $0.keyed = false }
            let remote = negotiation.remoteTransport
            let candidates = usableRemote(negotiation.remoteCandidates)
            try withCore { core, now throws(MediaCoreError) in
                do throws(DTLSError) {
                    try core.useDTLS(role: negotiation.dtlsRole, certificate: certificate, remoteFingerprints: remote.fingerprints, now: now)
                } catch {
                    throw MediaCoreError(.configuration, "DTLS: \(error.message)")
                }
                // Offers and answers without credentials were refused: both are there.
                core.setRemoteICE(ICECredentials(ufrag: remote.iceUfrag ?? "", password: remote.icePassword ?? ""),
                                  candidates: candidates, complete: negotiation.remoteCandidatesComplete, now: now)
            }
            try addParticipant("", audio: audio, video: video)
        }
    }
}

extension MediaSession {
    /// This session as the JSEP offerer toward a WebRTC peer (a browser it calls): an offer
    /// of its audio (and video, with a camera) on its ICE credentials and host candidates,
    /// keyed by DTLS-SRTP under a certificate made now. Its payload types and header
    /// extension IDs are the engine's, so the SDES keys the session also holds stay usable
    /// when the peer turns out to be one of our clients. Start with `start(answer:events:)`.
    ///
    /// - Throws: `MediaSessionError` (`.keying`) when no certificate could be made.
    public func webRTCOffer() throws(MediaSessionError) -> String {
        if let offer = state.withLock({ $0.offer }) { return offer.sdp.text }
        let certificate: DTLSCertificate
        do throws(DTLSError) {
            certificate = try DTLSCertificate()
        } catch {
            throw MediaSessionError(.keying, "no DTLS certificate: \(error.message)")
        }
        let configuration = parts.configuration
        let local = WebRTCOfferer.Local(
            iceUfrag: self.local.ice.ufrag, icePassword: self.local.ice.password, fingerprint: certificate.fingerprint,
            candidates: self.local.candidates, candidatesComplete: configuration.stunServers.isEmpty && configuration.turnServer == nil,
            audioSSRC: self.local.audioSSRC, videoSSRC: self.local.videoSSRC, cname: "mediaengine")
        let sdp = WebRTCOfferer.offer(local)
        state.withLock { $0.offer = (certificate, sdp) }
        return sdp.text
    }

    /// Starts both directions toward the WebRTC peer that answered `webRTCOffer()` (its
    /// media is participant ""): ICE with the answer's candidates (more come with
    /// `addRemoteCandidates`), then DTLS in the role the answer's `a=setup` left this side;
    /// media flows once the handshake agreed the keys. Returns at once. Call once.
    ///
    /// - Throws: `MediaCoreError` (`.configuration`) when no offer was made, the answer
    ///   does not parse or does not answer it (the message says why), or DTLS refused a
    ///   setting.
    public func start(answer text: String, events: @escaping @Sendable (Event) -> Void) throws(MediaCoreError) {
        guard let offer = state.withLock({ $0.offer }) else {
            throw MediaCoreError(.configuration, "start(answer:events:) follows webRTCOffer()")
        }
        let negotiation: WebRTCNegotiation
        do throws(JSEPError) {
            negotiation = try WebRTCOfferer.accept(WebRTCDescription(parsing: text), to: offer.sdp)
        } catch {
            throw MediaCoreError(.configuration, "the answer: \(error.message)")
        }
        // Bound to the SSRC the answer announced, else to the section's MID.
        func received(_ kind: MediaDescription.Kind, _ codec: StreamPlan.Codec) -> ReceiveStreamConfiguration? {
            guard let section = negotiation.sections.first(where: { $0.kind == kind }), section.direction.receives else { return nil }
            var stream = codec.receive(ssrc: section.remoteSSRCs.first)
            stream.mid = section.mid
            return stream
        }
        try connect(negotiation, certificate: offer.certificate, audio: received(.audio, StreamPlan.engine.audio),
                    video: received(.video, StreamPlan.engine.video), events: events)
    }
}
