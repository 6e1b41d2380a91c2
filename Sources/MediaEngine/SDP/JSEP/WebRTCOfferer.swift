/// This side as the JSEP offerer (RFC 8829 §5.2) toward a WebRTC peer, sans-I/O: the offer
/// of a call (Opus and VP8 over one BUNDLE transport keyed by DTLS-SRTP, `a=setup:actpass`,
/// the engine's payload types and header extension IDs), then what the peer's answer
/// agreed: the sections it took, its transport, and this side's DTLS role.
///
/// The engine's numbers are offered (Opus 111, VP8 96; audio level 1, transport-wide
/// sequence numbers 3, MID 4): an answer keeps an offer's payload types and IDs, so what
/// this side sends and reads needs no renumbering.
public enum WebRTCOfferer {
    /// This side of the call.
    public struct Local: Sendable {
        public var iceUfrag: String
        public var icePassword: String
        public var fingerprint: DTLSFingerprint
        /// Host candidates known now; the first is the default. More come by trickle.
        public var candidates: [ICECandidate]
        public var candidatesComplete: Bool
        public var audioSSRC: UInt32
        /// Nil: an audio call (no video section).
        public var videoSSRC: UInt32?
        public var cname: String
        public var sessionID: UInt64

        public init(iceUfrag: String, icePassword: String, fingerprint: DTLSFingerprint, candidates: [ICECandidate],
                    candidatesComplete: Bool, audioSSRC: UInt32, videoSSRC: UInt32?, cname: String,
                    sessionID: UInt64 = UInt64.random(in: 1 ... (1 << 62))) {
            self.iceUfrag = iceUfrag
            self.icePassword = icePassword
            self.fingerprint = fingerprint
            self.candidates = candidates
            self.candidatesComplete = candidatesComplete
            self.audioSSRC = audioSSRC
            self.videoSSRC = videoSSRC
            self.cname = cname
            self.sessionID = sessionID
        }
    }

    static let audio = (payloadType: UInt8(111), mid: "0")
    static let video = (payloadType: UInt8(96), mid: "1")

    /// The offer: an audio section, and a video one when this side has a camera; both
    /// send and receive.
    public static func offer(_ local: Local) -> SessionDescription {
        let extensions = RTPExtensionMap.standard
        var media: [MediaDescription] = []
        var mids: [String] = []
        for (kind, ssrc) in [(MediaDescription.Kind.audio, Optional(local.audioSSRC)), (.video, local.videoSSRC)] {
            guard let ssrc else { continue }
            let isAudio = kind == .audio
            let (payloadType, mid) = isAudio ? audio : video
            mids.append(mid)
            var attributes: [SessionDescription.Attribute] = [
                .mid(mid),
                SessionDescription.Attribute(name: "ice-ufrag", value: local.iceUfrag),
                SessionDescription.Attribute(name: "ice-pwd", value: local.icePassword),
                SessionDescription.Attribute(name: "ice-options", value: "trickle"),
                SessionDescription.Attribute(name: "fingerprint", value: local.fingerprint.description),
                SessionDescription.Attribute(name: "setup", value: "actpass"),
                .direction(.sendReceive),
                .rtcpMux,
                SessionDescription.Attribute(name: "rtcp-rsize"),
            ]
            let uris = isAudio ? WebRTCAnswerer.audioExtensions : WebRTCAnswerer.videoExtensions
            attributes += uris.sorted().compactMap { uri in extensions.id(for: uri).map { .extensionMap(MediaDescription.ExtensionMap(id: $0, uri: uri)) } }
            attributes.append(.rtpMap(MediaDescription.RTPMap(payloadType: payloadType, encodingName: isAudio ? "opus" : "VP8",
                                                              clockRate: isAudio ? 48_000 : 90_000, channels: isAudio ? 2 : nil)))
            if isAudio {
                attributes.append(.formatParameters(MediaDescription.FormatParameters(
                    payloadType: payloadType, parameters: ["minptime": "10", "useinbandfec": "1"])))
            }
            let feedback = isAudio ? WebRTCAnswerer.audioFeedback : WebRTCAnswerer.videoFeedback
            attributes += feedback.sorted().map { SessionDescription.Attribute(name: "rtcp-fb", value: "\(payloadType) \($0)") }
            let track = "\(local.cname)-\(isAudio ? "audio" : "video")"
            attributes.append(SessionDescription.Attribute(name: "msid", value: "\(local.cname) \(track)"))
            attributes.append(.ssrc(MediaDescription.SSRCAttribute(ssrc: ssrc, name: "cname", value: local.cname)))
            attributes.append(.ssrc(MediaDescription.SSRCAttribute(ssrc: ssrc, name: "msid", value: "\(local.cname) \(track)")))
            if isAudio {
                // Candidates belong to the BUNDLE transport: the first section carries them.
                attributes += local.candidates.map { SessionDescription.Attribute(name: "candidate", value: String($0.attribute.dropFirst("candidate:".count))) }
                if local.candidatesComplete { attributes.append(SessionDescription.Attribute(name: "end-of-candidates")) }
            }
            let port = local.candidates.first.map { UInt16($0.address.port) } ?? 9
            media.append(MediaDescription(kind: kind, port: port, transportProtocol: MediaDescription.TransportProtocol(rawValue: "UDP/TLS/RTP/SAVPF"),
                                          payloadTypes: [payloadType], attributes: attributes))
        }
        let address = local.candidates.first?.address
        let connection: SessionDescription.Connection = address.map { $0.isIPv6 ? .ip6($0.host) : .ip4($0.host) } ?? .ip4("0.0.0.0")
        return SessionDescription(origin: SessionDescription.Origin(username: "-", sessionID: local.sessionID, sessionVersion: 1,
                                                                    addressType: .ip4, address: "127.0.0.1"),
                                  name: "-", connection: connection,
                                  attributes: [SessionDescription.Attribute(name: "group", value: (["BUNDLE"] + mids).joined(separator: " ")),
                                               SessionDescription.Attribute(name: "msid-semantic", value: "WMS *")],
                                  media: media)
    }

    /// What the peer's answer to `offer` agreed.
    /// - Throws: `JSEPError` when the answer is not one to this offer (its sections, an
    ///   undecided or missing DTLS role, no fingerprint, no ICE credentials, no audio taken
    ///   with Opus 111).
    public static func accept(_ answer: WebRTCDescription, to offer: SessionDescription) throws(JSEPError) -> WebRTCNegotiation {
        guard answer.sections.count == offer.media.count else {
            throw JSEPError(.malformed, "the answer has \(answer.sections.count) sections for the offer's \(offer.media.count)")
        }
        var sections: [WebRTCNegotiation.Section] = []
        var refusals: [WebRTCNegotiation.Refusal] = []
        for (section, offered) in zip(answer.sections, offer.media) {
            guard section.kind == offered.kind, section.mid == offered.mid else {
                throw JSEPError(.malformed, "answer section \(section.index) is not the offer's \(offered.kind) section \(offered.mid ?? "-")")
            }
            let payloadType = section.kind == .audio ? audio.payloadType : video.payloadType
            guard !section.isRejected, let codec = section.codecs.first(where: { $0.payloadType == payloadType }) else {
                refusals.append(.init(index: section.index, mid: section.mid, reason: "the answer rejects it or takes another codec"))
                continue
            }
            // This side's direction: the answer's, seen from here.
            let direction: MediaDescription.Direction = switch section.direction {
            case .sendReceive: .sendReceive
            case .sendOnly: .receiveOnly
            case .receiveOnly: .sendOnly
            default: .inactive
            }
            sections.append(WebRTCNegotiation.Section(
                index: section.index, mid: section.mid ?? "", kind: section.kind, codec: codec, rtxPayloadType: nil, feedback: codec.feedback,
                extensions: section.extensions, direction: direction, remoteSSRCs: section.ssrcs, remoteStream: section.msid, track: nil))
        }
        guard let tag = answer.sections.first(where: { !$0.isRejected }), sections.contains(where: { $0.kind == .audio }) else {
            throw JSEPError(.noUsableMedia, "the answer takes no Opus audio")
        }
        let transport = tag.transport
        guard !transport.fingerprints.isEmpty else { throw JSEPError(.noFingerprint, "the answer has no usable a=fingerprint") }
        guard transport.iceUfrag.map({ WebRTCAnswerer.isICEString($0, length: 4...256) }) == true,
              transport.icePassword.map({ WebRTCAnswerer.isICEString($0, length: 22...256) }) == true else {
            throw JSEPError(.iceCredentials, "the answer's ice-ufrag or ice-pwd is missing or malformed")
        }
        let role: DTLSRole
        switch transport.setup {
        case .active: role = .server
        case .passive: role = .client
        default: throw JSEPError(.malformed, "an answer's a=setup is active or passive (RFC 5763)")
        }
        return WebRTCNegotiation(answer: offer, sections: sections, refusals: refusals, remoteTransport: transport,
                                 remoteCandidates: answer.sections.flatMap(\.candidates),
                                 remoteCandidatesComplete: answer.sections.contains { $0.endOfCandidates }, dtlsRole: role)
    }
}
