/// Answers a WebRTC peer's offer (JSEP, RFC 8829 §5.3), sans-I/O: which sections are
/// taken, with which codec, feedback and header extensions, in which direction, over one
/// BUNDLE transport keyed by DTLS-SRTP; and the answer's SDP.
///
/// What this side cannot do is refused per section (port 0, RFC 8829 §5.3.1), with the
/// reason in `WebRTCNegotiation.refusals`: data channels, codecs other than Opus and VP8,
/// a section without `a=mid` or `a=rtcp-mux`, or outside the BUNDLE group. Only when the
/// shared transport is unusable (no fingerprint, SDES only, ICE credentials missing) or no
/// section is left does it throw.
///
/// Payload types and extension IDs are the offer's, so the peer's packets need no
/// renumbering. This side's DTLS role follows `a=setup` (RFC 8842): an `actpass` offer is
/// answered with `Local.dtlsRole` (`active` by default, as browsers answer, so the answerer
/// starts the handshake; a server answers `passive`, so its profile order decides).
public enum WebRTCAnswerer {
    /// A track this side sends: the section `mid` names when it is set and that section
    /// lets this side send (a renegotiation keeps a track where it was), else the first
    /// free section of its kind that does.
    public struct Track: Sendable, Hashable {
        public var kind: MediaDescription.Kind
        public var ssrc: UInt32
        /// `a=msid`'s stream and track IDs, and the SSRC's `cname`.
        public var stream: String
        public var id: String
        public var cname: String
        /// The section it was in before, if any.
        public var mid: String?
        /// Video: the SSRC of its RTX stream, announced (`a=ssrc-group:FID`) where the
        /// section negotiates RTX; a receiver drops RTX packets of an SSRC it was not told.
        public var rtxSSRC: UInt32?

        public init(kind: MediaDescription.Kind, ssrc: UInt32, stream: String, id: String, cname: String, mid: String? = nil,
                    rtxSSRC: UInt32? = nil) {
            self.kind = kind
            self.ssrc = ssrc
            self.rtxSSRC = rtxSSRC
            self.stream = stream
            self.id = id
            self.cname = cname
            self.mid = mid
        }
    }

    /// This side's transport and what it sends.
    public struct Local: Sendable {
        public var iceUfrag: String
        public var icePassword: String
        /// A server answering every check and checking nothing itself (`a=ice-lite`).
        public var iceLite: Bool
        public var fingerprint: DTLSFingerprint
        /// Candidates known now; the first is the default (`c=` and the port).
        public var candidates: [ICECandidate]
        /// Whether `candidates` is all there will be (`a=end-of-candidates`).
        public var candidatesComplete: Bool
        public var tracks: [Track]
        /// Whether this side takes the peer's media (false: a viewer's server, say).
        public var receives: Bool
        /// The role taken when the offer leaves it open (`actpass`): `client` (active, as
        /// browsers answer: this side starts the handshake), or `server` (passive: this
        /// side's SRTP profile order decides, so AEAD_AES_128_GCM wins; a server does this).
        public var dtlsRole: DTLSRole
        /// `o=`'s session ID; an answer to a renegotiation keeps it and raises `version`.
        public var sessionID: UInt64
        public var version: UInt64

        public init(iceUfrag: String, icePassword: String, iceLite: Bool = false, fingerprint: DTLSFingerprint,
                    candidates: [ICECandidate], candidatesComplete: Bool = true, tracks: [Track] = [], receives: Bool = true,
                    dtlsRole: DTLSRole = .client, sessionID: UInt64 = UInt64.random(in: 1 ... (1 << 62)), version: UInt64 = 1) {
            self.dtlsRole = dtlsRole
            self.iceUfrag = iceUfrag
            self.icePassword = icePassword
            self.iceLite = iceLite
            self.fingerprint = fingerprint
            self.candidates = candidates
            self.candidatesComplete = candidatesComplete
            self.tracks = tracks
            self.receives = receives
            self.sessionID = sessionID
            self.version = version
        }
    }

    /// The codecs taken: Opus (stereo at 48 kHz, as RFC 7587 writes it) and VP8.
    static let audioCodec = (name: "opus", clockRate: UInt32(48_000))
    static let videoCodec = (name: "VP8", clockRate: UInt32(90_000))
    /// Feedback this side acts on, per kind (RFC 4585, RFC 5104, transport-wide CC).
    static let audioFeedback: Set<String> = ["transport-cc"]
    static let videoFeedback: Set<String> = ["nack", "nack pli", "ccm fir", "transport-cc"]
    /// Header extensions this side reads and writes.
    static let midURI = "urn:ietf:params:rtp-hdrext:sdes:mid"
    static let audioExtensions: Set<String> = [midURI, MediaDescription.ExtensionMap.transportWideSequenceNumberURI,
                                               MediaDescription.ExtensionMap.audioLevelURI]
    static let videoExtensions: Set<String> = [midURI, MediaDescription.ExtensionMap.transportWideSequenceNumberURI]
    /// Simulcast streams taken from one video section, the lowest first as the peer lists
    /// them; more are answered without, and a browser then leaves them off.
    public static let maximumSimulcastLayers = 3

    /// Answers `offer`.
    /// - Throws: `JSEPError` when the BUNDLE transport is unusable or no section can be taken.
    public static func answer(_ offer: WebRTCDescription, local: Local) throws(JSEPError) -> WebRTCNegotiation {
        if offer.sections.allSatisfy({ $0.transport.fingerprints.isEmpty }), offer.sections.contains(where: \.hasCrypto) {
            throw JSEPError(.sdesOnly, "the offer keys by SDES (a=crypto) only; WebRTC peers are keyed by DTLS-SRTP (a=fingerprint)")
        }
        var refusals: [WebRTCNegotiation.Refusal] = []
        var candidates: [(WebRTCDescription.Section, WebRTCDescription.Codec)] = []
        for section in offer.sections {
            switch acceptance(of: section, in: offer) {
            case .taken(let codec): candidates.append((section, codec))
            case .refused(let reason): refusals.append(.init(index: section.index, mid: section.mid, reason: reason))
            }
        }
        // One transport: the first section taken is the BUNDLE tag; without a BUNDLE group
        // only that one section can share it.
        if offer.bundle.isEmpty, candidates.count > 1 {
            for (section, _) in candidates.dropFirst() {
                refusals.append(.init(index: section.index, mid: section.mid, reason: "the offer has no BUNDLE group: one section per transport"))
            }
            candidates = Array(candidates.prefix(1))
        }
        guard let tag = candidates.first?.0 else {
            let reasons = refusals.map { "section \($0.index)\($0.mid.map { " (mid \($0))" } ?? ""): \($0.reason)" }
            throw JSEPError(.noUsableMedia, "no section can be taken: " + reasons.joined(separator: "; "))
        }
        let remote = try checkedTransport(tag)
        let role: DTLSRole = switch remote.setup {
        case .active: .server
        case .passive: .client
        default: local.dtlsRole
        }

        var agreed: [WebRTCNegotiation.Section] = []
        // Tracks whose section is still there and receives go back to it; the rest take the
        // first free receiving sections of their kind, in order.
        var receivingKinds: [String: MediaDescription.Kind] = [:]
        for (section, _) in candidates where section.direction == .sendReceive || section.direction == .receiveOnly {
            if let mid = section.mid { receivingKinds[mid] = section.kind }
        }
        var unsent = local.tracks.map { track in
            var track = track
            if let mid = track.mid, receivingKinds[mid] != track.kind { track.mid = nil }
            return track
        }
        for (section, codec) in candidates {
            let peerSends = section.direction == .sendReceive || section.direction == .sendOnly
            let peerReceives = section.direction == .sendReceive || section.direction == .receiveOnly
            var track: Track?
            if peerReceives, let index = unsent.firstIndex(where: { $0.kind == section.kind && $0.mid != nil && $0.mid == section.mid })
                ?? unsent.firstIndex(where: { $0.kind == section.kind && $0.mid == nil }) {
                track = unsent.remove(at: index)
            }
            let receives = peerSends && local.receives
            let direction: MediaDescription.Direction = switch (track != nil, receives) {
            case (true, true): .sendReceive
            case (true, false): .sendOnly
            case (false, true): .receiveOnly
            case (false, false): .inactive
            }
            let isAudio = section.kind == .audio
            let supportedFeedback = isAudio ? audioFeedback : videoFeedback
            let supportedExtensions = isAudio ? audioExtensions : videoExtensions
            let feedback = codec.feedback.filter { supportedFeedback.contains($0) }
            let simulcast = receives ? simulcastLayers(of: section) : []
            let extensions = supportedExtensions.union(simulcast.isEmpty ? [] : [RTPExtensionMap.ridURI])
            agreed.append(WebRTCNegotiation.Section(
                index: section.index, mid: section.mid ?? "", kind: section.kind, codec: codec,
                rtxPayloadType: section.direction == .receiveOnly && feedback.contains("nack") ? rtxPayloadType(for: codec, in: section) : nil,
                feedback: feedback,
                extensions: section.extensions.filter { extensions.contains($0.uri) }.map {
                    MediaDescription.ExtensionMap(id: $0.id, uri: $0.uri)
                },
                direction: direction, remoteSSRCs: section.ssrcs, remoteStream: section.msid, simulcast: simulcast, track: track))
        }
        let sdp = answerSDP(offer, agreed: agreed, role: role, local: local)
        return WebRTCNegotiation(answer: sdp, sections: agreed, refusals: refusals, remoteTransport: remote,
                                 remoteCandidates: candidates.flatMap { $0.0.candidates },
                                 remoteCandidatesComplete: candidates.contains { $0.0.endOfCandidates }, dtlsRole: role)
    }

    /// A section taken with its codec, or refused with the reason.
    private enum Acceptance {
        case taken(WebRTCDescription.Codec)
        case refused(String)
    }

    /// Whether `section` can be taken, and with which codec; else why not.
    private static func acceptance(of section: WebRTCDescription.Section, in offer: WebRTCDescription) -> Acceptance {
        guard !section.isRejected else { return .refused("the offer rejects it (port 0)") }
        guard section.kind == .audio || section.kind == .video else {
            return .refused("\(section.kind) sections (data channels) are not taken")
        }
        guard section.transportProtocol.rawValue.hasSuffix("RTP/SAVPF"), section.transportProtocol.rawValue.hasPrefix("UDP/TLS") else {
            return .refused("transport \(section.transportProtocol.rawValue.prefix(32)): only UDP/TLS/RTP/SAVPF (DTLS-SRTP)")
        }
        guard let mid = section.mid else { return .refused("no a=mid") }
        guard isMID(mid) else {
            return .refused("a=mid must be 1 to 16 token characters (it travels in RTP header extensions)")
        }
        guard ownsMID(section, in: offer) else { return .refused("a=mid \(mid) names an earlier section too") }
        guard offer.bundle.isEmpty || offer.bundle.contains(mid) else { return .refused("not in the BUNDLE group") }
        guard section.rtcpMux else { return .refused("no a=rtcp-mux (RTP and RTCP share one port here)") }
        let wanted = section.kind == .audio ? audioCodec : videoCodec
        guard let codec = section.codecs.first(where: { $0.isCodec(wanted.name, clockRate: wanted.clockRate) }) else {
            let offered = Set(section.codecs.map(\.name)).sorted().prefix(8).joined(separator: ", ")
            return .refused("no \(wanted.name) among the codecs offered (\(offered.isEmpty ? "none" : offered))")
        }
        return .taken(codec)
    }

    /// The `rtx` payload type the section offers for `codec` (`a=fmtp:<rtx> apt=<codec>`, RFC 4588).
    /// Taken only where the peer just receives: a peer that sends on a section with RTX
    /// retransmits only on RTX, which this side does not take.
    private static func rtxPayloadType(for codec: WebRTCDescription.Codec, in section: WebRTCDescription.Section) -> UInt8? {
        section.codecs.first { $0.isCodec("rtx", clockRate: codec.clockRate) && $0.parameters["apt"] == String(codec.payloadType) }?.payloadType
    }

    /// The simulcast streams taken from a video section the peer sends in (RFC 8853): at
    /// most `maximumSimulcastLayers`, and only where it offers the MID and RTP stream ID
    /// extensions that say which stream a packet is (its SSRCs are not announced).
    private static func simulcastLayers(of section: WebRTCDescription.Section) -> [WebRTCDescription.SimulcastLayer] {
        let uris = Set(section.extensions.map(\.uri))
        guard section.kind == .video, uris.contains(midURI), uris.contains(RTPExtensionMap.ridURI) else { return [] }
        return Array(section.simulcast.prefix(maximumSimulcastLayers))
    }

    /// Whether `section` is the first to use its mid.
    private static func ownsMID(_ section: WebRTCDescription.Section, in offer: WebRTCDescription) -> Bool {
        offer.sections.first { $0.mid == section.mid }?.index == section.index
    }

    /// The BUNDLE tag's transport, checked: DTLS fingerprints, ICE credentials, a setup role.
    private static func checkedTransport(_ tag: WebRTCDescription.Section) throws(JSEPError) -> WebRTCDescription.Transport {
        let transport = tag.transport
        let name = "section \(tag.index) (mid \(tag.mid ?? "-"))"
        guard !transport.fingerprints.isEmpty else {
            throw JSEPError(.noFingerprint, "\(name) has no usable a=fingerprint: the peer's DTLS certificate could not be checked")
        }
        guard transport.iceUfrag.map({ isICEString($0, length: 4...256) }) == true else {
            throw JSEPError(.iceCredentials, "\(name): ice-ufrag must be 4 to 256 ICE characters")
        }
        guard transport.icePassword.map({ isICEString($0, length: 22...256) }) == true else {
            throw JSEPError(.iceCredentials, "\(name): ice-pwd must be 22 to 256 ICE characters")
        }
        return transport
    }

    /// An identification tag (RFC 5888: an SDP token) short enough for the one-byte RTP
    /// header extension that carries it (RFC 8843 §15: 16 bytes).
    static func isMID(_ text: String) -> Bool {
        (1...16).contains(text.utf8.count) && SDPScanning.isToken(text)
    }

    /// ICE credentials: `length` of RFC 8839's ice-chars.
    static func isICEString(_ text: String, length: ClosedRange<Int>) -> Bool {
        length.contains(text.utf8.count) && text.utf8.allSatisfy(ICECandidate.isICEChar)
    }

    private static func answerSDP(_ offer: WebRTCDescription, agreed: [WebRTCNegotiation.Section], role: DTLSRole,
                                  local: Local) -> SessionDescription {
        let defaultCandidate = local.candidates.first
        let address = defaultCandidate.map(\.address)
        let connection: SessionDescription.Connection = address.map { $0.isIPv6 ? .ip6($0.host) : .ip4($0.host) } ?? .ip4("0.0.0.0")
        var sessionAttributes: [SessionDescription.Attribute] = []
        if !agreed.isEmpty {
            sessionAttributes.append(SessionDescription.Attribute(name: "group", value: (["BUNDLE"] + agreed.map(\.mid)).joined(separator: " ")))
        }
        if local.iceLite { sessionAttributes.append(SessionDescription.Attribute(name: "ice-lite")) }
        sessionAttributes.append(SessionDescription.Attribute(name: "msid-semantic", value: "WMS *"))
        let media: [MediaDescription] = offer.sections.map { section in
            guard let taken = agreed.first(where: { $0.index == section.index }) else {
                // A refused section keeps its mid (RFC 8829 §5.3.1), when it has a usable one.
                var attributes: [SessionDescription.Attribute] = []
                if let mid = section.mid, isMID(mid), ownsMID(section, in: offer) {
                    attributes.append(.mid(mid))
                }
                return MediaDescription(kind: section.kind, port: 0, transportProtocol: section.transportProtocol,
                                        formats: section.formats, attributes: attributes)
            }
            var attributes: [SessionDescription.Attribute] = [
                .mid(taken.mid),
                SessionDescription.Attribute(name: "ice-ufrag", value: local.iceUfrag),
                SessionDescription.Attribute(name: "ice-pwd", value: local.icePassword),
                SessionDescription.Attribute(name: "fingerprint", value: local.fingerprint.description),
                SessionDescription.Attribute(name: "setup", value: role == .client ? "active" : "passive"),
                .direction(taken.direction),
                .rtcpMux,
            ]
            if offer.sdp.media[section.index].hasAttribute(named: "rtcp-rsize") {
                attributes.append(SessionDescription.Attribute(name: "rtcp-rsize"))
            }
            attributes += taken.extensions.map { .extensionMap($0) }
            let codec = taken.codec
            attributes.append(.rtpMap(MediaDescription.RTPMap(payloadType: codec.payloadType, encodingName: codec.name,
                                                              clockRate: codec.clockRate, channels: codec.channels)))
            if taken.kind == .audio {
                attributes.append(.formatParameters(MediaDescription.FormatParameters(
                    payloadType: codec.payloadType, parameters: ["minptime": "10", "useinbandfec": "1"])))
            }
            attributes += taken.feedback.map { SessionDescription.Attribute(name: "rtcp-fb", value: "\(codec.payloadType) \($0)") }
            // The streams taken, paused where the offer paused them: a browser sets each
            // encoding's `active` from this (RFC 8853 §5.3).
            if !taken.simulcast.isEmpty {
                attributes += taken.simulcast.map { SessionDescription.Attribute(name: "rid", value: "\($0.rid) recv") }
                let streams = taken.simulcast.map { ($0.paused ? "~" : "") + $0.rid }.joined(separator: ";")
                attributes.append(SessionDescription.Attribute(name: "simulcast", value: "recv \(streams)"))
            }
            if let rtx = taken.rtxPayloadType {
                attributes.append(.rtpMap(MediaDescription.RTPMap(payloadType: rtx, encodingName: "rtx", clockRate: codec.clockRate, channels: nil)))
                attributes.append(.formatParameters(MediaDescription.FormatParameters(payloadType: rtx, parameters: ["apt": String(codec.payloadType)])))
            }
            if let track = taken.track {
                attributes.append(SessionDescription.Attribute(name: "msid", value: "\(track.stream) \(track.id)"))
                let rtxSSRC = taken.rtxPayloadType == nil ? nil : track.rtxSSRC
                if let rtxSSRC { attributes.append(SessionDescription.Attribute(name: "ssrc-group", value: "FID \(track.ssrc) \(rtxSSRC)")) }
                for ssrc in [track.ssrc] + (rtxSSRC.map { [$0] } ?? []) {
                    attributes.append(.ssrc(MediaDescription.SSRCAttribute(ssrc: ssrc, name: "cname", value: track.cname)))
                    attributes.append(.ssrc(MediaDescription.SSRCAttribute(ssrc: ssrc, name: "msid", value: "\(track.stream) \(track.id)")))
                }
            }
            // Candidates belong to the BUNDLE transport: the tag section carries them.
            if taken.index == agreed.first?.index {
                attributes += local.candidates.map { SessionDescription.Attribute(name: "candidate", value: String($0.attribute.dropFirst("candidate:".count))) }
                if local.candidatesComplete { attributes.append(SessionDescription.Attribute(name: "end-of-candidates")) }
            }
            return MediaDescription(kind: section.kind, port: address.map { UInt16($0.port) } ?? 9, transportProtocol: section.transportProtocol,
                                    payloadTypes: [codec.payloadType] + (taken.rtxPayloadType.map { [$0] } ?? []), attributes: attributes)
        }
        return SessionDescription(origin: SessionDescription.Origin(username: "-", sessionID: local.sessionID, sessionVersion: local.version,
                                                                    addressType: .ip4, address: "127.0.0.1"),
                                  name: "-", connection: connection, attributes: sessionAttributes, media: media)
    }
}

/// What an answer agreed with a WebRTC peer: the answer's SDP, the sections taken and
/// those refused, the peer's transport and this side's DTLS role.
public struct WebRTCNegotiation: Sendable {
    /// A section taken.
    public struct Section: Sendable, Hashable {
        public var index: Int
        public var mid: String
        public var kind: MediaDescription.Kind
        /// The payload type both sides use for Opus or VP8, and what the peer said of it.
        public var codec: WebRTCDescription.Codec
        /// Video this side sends and the peer only receives: the `rtx` payload type for
        /// `codec` when the offer has one and NACKs (RFC 4588); retransmissions then go on
        /// the track's RTX stream.
        public var rtxPayloadType: UInt8?
        /// Feedback both sides do (`nack`, `nack pli`, `ccm fir`, `transport-cc`).
        public var feedback: [String]
        /// Header extensions both sides use, with the offer's IDs.
        public var extensions: [MediaDescription.ExtensionMap]
        /// This side's direction in the answer.
        public var direction: MediaDescription.Direction
        /// What the peer sends in it, as it announced.
        public var remoteSSRCs: [UInt32]
        public var remoteStream: WebRTCDescription.MediaStreamID?
        /// The simulcast streams the peer sends in it and this side takes, lowest first
        /// (RFC 8853; their SSRCs are learnt from packets carrying MID and RID); empty: one
        /// stream, `remoteSSRCs`.
        public var simulcast: [WebRTCDescription.SimulcastLayer] = []
        /// What this side sends in it.
        public var track: WebRTCAnswerer.Track?
    }

    /// A section refused, and why.
    public struct Refusal: Sendable, Hashable {
        public var index: Int
        public var mid: String?
        public var reason: String
    }

    public var answer: SessionDescription
    public var sections: [Section]
    public var refusals: [Refusal]
    /// The BUNDLE transport's ICE credentials and fingerprints.
    public var remoteTransport: WebRTCDescription.Transport
    public var remoteCandidates: [ICECandidate]
    public var remoteCandidatesComplete: Bool
    public var dtlsRole: DTLSRole

    /// The header extension IDs agreed, over all sections (one BUNDLE transport: an ID means
    /// one URI in all of them), for what this side writes and reads.
    public var extensionMap: RTPExtensionMap {
        var map = RTPExtensionMap()
        for section in sections {
            for extensionMap in section.extensions { map.set(extensionMap.uri, id: extensionMap.id) }
        }
        return map
    }
}
