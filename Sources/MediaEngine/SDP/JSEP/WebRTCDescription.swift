/// What a WebRTC peer's SDP says, read once into types (JSEP, RFC 8829): per media section
/// its mid, direction, codecs with their feedback, header extensions, msid and SSRCs, and
/// the transport it uses (ICE credentials, DTLS fingerprints and setup role, candidates).
///
/// Reading never fails for one section's sake: a section with a value it cannot read keeps
/// what it could, and `WebRTCAnswerer` decides what to refuse. Only text that is not SDP
/// at all throws (`JSEPError.malformed`, wrapping the `SDPError`).
///
/// Session-level `ice-ufrag`, `ice-pwd`, `fingerprint` and `setup` apply to every section
/// without its own (RFC 8839, RFC 8842), as aiortc and GStreamer write them.
public struct WebRTCDescription: Sendable, Hashable {
    /// A DTLS role as `a=setup` offers or answers it (RFC 8842).
    public enum Setup: String, Sendable, Hashable {
        /// Either: what an offer says.
        case actpass
        /// This side starts the handshake (the DTLS client).
        case active
        /// This side waits for it (the DTLS server).
        case passive
    }

    /// ICE and DTLS parameters of one transport.
    public struct Transport: Sendable, Hashable {
        public var iceUfrag: String?
        public var icePassword: String?
        /// Every `a=fingerprint` that parsed; the peer's certificate must match one.
        public var fingerprints: [DTLSFingerprint]
        public var setup: Setup?
        /// Whether the peer is ICE-lite (`a=ice-lite`, session level).
        public var iceLite: Bool
    }

    /// One payload type: its `rtpmap`, `fmtp` parameters and `rtcp-fb` values.
    public struct Codec: Sendable, Hashable {
        public var payloadType: UInt8
        /// As written (`opus`, `VP8`, `rtx`); compare case-insensitively.
        public var name: String
        public var clockRate: UInt32
        public var channels: Int?
        public var parameters: [String: String]
        /// `nack`, `nack pli`, `ccm fir`, `transport-cc`, `goog-remb`, ...; those written
        /// for `*` included.
        public var feedback: [String]

        /// Whether this is `name`/`clockRate` (names compare case-insensitively).
        public func isCodec(_ name: String, clockRate: UInt32) -> Bool {
            self.name.lowercased() == name.lowercased() && self.clockRate == clockRate
        }
    }

    /// `a=msid:<stream> <track>` (RFC 8830).
    public struct MediaStreamID: Sendable, Hashable {
        public var stream: String
        public var track: String?
    }

    /// One simulcast stream a peer sends (RFC 8853): its RID, and whether the peer offers it
    /// paused (`~`).
    public struct SimulcastLayer: Sendable, Hashable {
        public var rid: String
        public var paused: Bool

        public init(rid: String, paused: Bool = false) {
            self.rid = rid
            self.paused = paused
        }
    }

    /// One `m=` section.
    public struct Section: Sendable, Hashable {
        /// Its place in the description (0-based); an answer keeps the offer's order.
        public var index: Int
        public var kind: MediaDescription.Kind
        public var port: UInt16
        public var transportProtocol: MediaDescription.TransportProtocol
        /// The `m=` line's formats as written (an answer refusing the section repeats them).
        public var formats: [String]
        public var mid: String?
        /// `a=bundle-only` (RFC 8843): port 0 without being refused.
        public var bundleOnly: Bool
        public var direction: MediaDescription.Direction
        public var rtcpMux: Bool
        /// Codecs in the order of the `m=` line, the peer's preference.
        public var codecs: [Codec]
        public var extensions: [MediaDescription.ExtensionMap]
        public var msid: MediaStreamID?
        /// SSRCs the peer announced (`a=ssrc`), media first, then what `ssrc-group:FID`
        /// names as retransmission.
        public var ssrcs: [UInt32]
        /// `a=rid` values (simulcast layers), in order.
        public var rids: [String]
        /// The simulcast streams the peer sends (`a=simulcast:send`), in its order, each
        /// with an `a=rid:<id> send` line and an ID the RTP stream ID extension can carry
        /// (1 to 16 letters, digits, `-` or `_`); of alternatives (`,`) the first. Empty
        /// without simulcast.
        public var simulcast: [SimulcastLayer]
        /// The section's own transport attributes merged over the session's.
        public var transport: Transport
        /// Candidates in the section that parsed (mDNS and TCP ones are skipped).
        public var candidates: [ICECandidate]
        public var endOfCandidates: Bool
        /// Whether the section carries `a=crypto` (SDES keys).
        public var hasCrypto: Bool

        /// Refused by the peer or by us: port 0 and not bundle-only.
        public var isRejected: Bool { port == 0 && !bundleOnly }
    }

    /// The mids of the first `a=group:BUNDLE`, in order; empty without one.
    public var bundle: [String]
    public var sections: [Section]
    /// The description as parsed.
    public let sdp: SessionDescription

    /// Reads `text`.
    /// - Throws: `JSEPError.malformed` when it is not SDP this parser takes (too large,
    ///   malformed lines); its message is the `SDPError`'s.
    public init(parsing text: String) throws(JSEPError) {
        do {
            self.init(try SessionDescription(parsing: text))
        } catch {
            throw JSEPError(.malformed, "the SDP does not parse: \(error.message)")
        }
    }

    /// Reads a parsed description.
    public init(_ sdp: SessionDescription) {
        self.sdp = sdp
        let session = Self.transport(sdp.attributes, inheriting: nil)
        bundle = sdp.attributes.lazy.filter { $0.name == "group" }.compactMap { attribute -> [String]? in
            let fields = SDPScanning.split((attribute.value ?? "")[...], at: " ").map(String.init)
            return fields.first == "BUNDLE" ? Array(fields.dropFirst()) : nil
        }.first ?? []
        sections = sdp.media.enumerated().map { index, media in
            Self.section(media, index: index, session: session, sessionDirection: sdp.direction)
        }
    }

    /// The section whose mid is `mid`.
    public func section(mid: String) -> Section? { sections.first { $0.mid == mid } }

    private static func transport(_ attributes: [SessionDescription.Attribute], inheriting base: Transport?) -> Transport {
        var transport = base ?? Transport(iceUfrag: nil, icePassword: nil, fingerprints: [], setup: nil, iceLite: false)
        var ownFingerprints: [DTLSFingerprint] = []
        for attribute in attributes {
            switch attribute.name {
            case "ice-ufrag": transport.iceUfrag = attribute.value
            case "ice-pwd": transport.icePassword = attribute.value
            case "ice-lite": transport.iceLite = true
            case "setup": transport.setup = attribute.value.flatMap(Setup.init(rawValue:))
            case "fingerprint":
                if let value = attribute.value, let fingerprint = try? DTLSFingerprint(sdp: value) { ownFingerprints.append(fingerprint) }
            default: break
            }
        }
        if !ownFingerprints.isEmpty { transport.fingerprints = ownFingerprints }
        return transport
    }

    private static func section(_ media: MediaDescription, index: Int, session: Transport,
                                sessionDirection: MediaDescription.Direction?) -> Section {
        let maps = Dictionary(media.rtpMaps.map { ($0.payloadType, $0) }, uniquingKeysWith: { first, _ in first })
        var feedback: [String: [String]] = [:]
        for attribute in media.attributes(named: "rtcp-fb") {
            guard let value = attribute.value, let space = value.firstIndex(of: " ") else { continue }
            feedback[String(value[..<space]), default: []].append(String(value[value.index(after: space)...]))
        }
        let codecs: [Codec] = media.payloadTypes.compactMap { payloadType in
            guard let map = maps[payloadType] else { return nil }
            return Codec(payloadType: payloadType, name: map.encodingName, clockRate: map.clockRate, channels: map.channels,
                         parameters: media.formatParameters(for: payloadType)?.parameters ?? [:],
                         feedback: (feedback["*"] ?? []) + (feedback[String(payloadType)] ?? []))
        }
        let msid = media.attributes(named: "msid").first?.value.map { value -> MediaStreamID in
            let fields = SDPScanning.split(value[...], at: " ")
            return MediaStreamID(stream: fields.first.map(String.init) ?? "", track: fields.dropFirst().first.map(String.init))
        }
        let repairs = Set(media.attributes(named: "ssrc-group").flatMap { attribute -> [UInt32] in
            let fields = SDPScanning.split((attribute.value ?? "")[...], at: " ")
            return fields.first == "FID" ? fields.dropFirst(2).compactMap { UInt32($0) } : []
        })
        let announced = media.ssrcs
        return Section(
            index: index, kind: media.kind, port: media.port, transportProtocol: media.transportProtocol, formats: media.formats,
            mid: media.mid, bundleOnly: media.hasAttribute(named: "bundle-only"),
            direction: media.direction ?? sessionDirection ?? .sendReceive, rtcpMux: media.rtcpMux, codecs: codecs,
            extensions: media.extensionMaps, msid: msid,
            ssrcs: announced.filter { !repairs.contains($0) } + announced.filter { repairs.contains($0) },
            rids: media.attributes(named: "rid").compactMap { $0.value.flatMap { SDPScanning.split($0[...], at: " ").first.map(String.init) } },
            simulcast: simulcast(media),
            transport: transport(media.attributes, inheriting: session),
            candidates: media.attributes(named: "candidate").compactMap { attribute in
                attribute.value.flatMap { try? ICECandidate(attribute: $0) }
            },
            endOfCandidates: media.hasAttribute(named: "end-of-candidates"),
            hasCrypto: media.hasAttribute(named: "crypto"))
    }

    /// The send half of `a=simulcast` (RFC 8853 §5.1: `send q;h;~f`, maybe beside a `recv`
    /// half), kept to the streams with an `a=rid:<id> send` line (RFC 8851), once each.
    private static func simulcast(_ media: MediaDescription) -> [SimulcastLayer] {
        let sent = Set(media.attributes(named: "rid").compactMap { attribute -> Substring? in
            let fields = SDPScanning.split((attribute.value ?? "")[...], at: " ")
            return fields.count >= 2 && fields[1] == "send" ? fields[0] : nil
        })
        guard let value = media.attributes(named: "simulcast").first?.value else { return [] }
        let fields = SDPScanning.split(value[...], at: " ")
        guard let send = fields.firstIndex(of: "send"), send + 1 < fields.count else { return [] }
        var layers: [SimulcastLayer] = []
        for stream in SDPScanning.split(fields[send + 1], at: ";") {
            guard var first = SDPScanning.split(stream, at: ",").first else { continue }
            let paused = first.hasPrefix("~")
            if paused { first = first.dropFirst() }
            let rid = String(first)
            guard isRID(rid), sent.contains(first), !layers.contains(where: { $0.rid == rid }) else { continue }
            layers.append(SimulcastLayer(rid: rid, paused: paused))
        }
        return layers
    }

    /// An RTP stream ID the one-byte header extension carries: 1 to 16 of RFC 8851's
    /// rid-id characters (letters, digits, `-`, `_`).
    public static func isRID(_ text: String) -> Bool {
        (1...16).contains(text.utf8.count)
            && text.utf8.allSatisfy { ($0 >= 0x30 && $0 <= 0x39) || ($0 | 0x20 >= 0x61 && $0 | 0x20 <= 0x7A) || $0 == 0x2D || $0 == 0x5F }
    }
}
