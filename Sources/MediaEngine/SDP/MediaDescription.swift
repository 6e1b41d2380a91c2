/// One media section of a session description: an `m=` line and the `i=`, `c=`, `b=`
/// and `a=` lines under it (RFC 8866 5.14).
///
/// ```
/// m=<media> <port>[/<number of ports>] <proto> <fmt> ...
/// i=<media title>
/// c=<nettype> <addrtype> <connection-address>
/// b=<bwtype>:<bandwidth>
/// a=<attribute>[:<value>]
/// ```
///
/// Attributes are stored as written; typed accessors (`rtpMaps`, `crypto`,
/// `extensionMaps`, `ssrcAttributes`, `direction`, ...) read them. A description that
/// came from `SessionDescription(parsing:)` was validated line by line, so every known
/// attribute in it parses. One built in code is not validated: accessors skip values
/// that do not parse; re-parse `text` to check it.
///
/// `description` is the section's SDP with key material redacted.
public struct MediaDescription: Hashable, Sendable, CustomStringConvertible {
    /// The media type: `audio`, `video`, or another token.
    public struct Kind: RawRepresentable, Hashable, Sendable, CustomStringConvertible {
        /// The token as written in `m=`.
        public var rawValue: String
        /// Creates a kind from its `m=` token.
        public init(rawValue: String) { self.rawValue = rawValue }
        /// Audio.
        public static let audio = Kind(rawValue: "audio")
        /// Video.
        public static let video = Kind(rawValue: "video")
        /// Application data, such as a WebRTC data channel.
        public static let application = Kind(rawValue: "application")
        /// Real-time text.
        public static let text = Kind(rawValue: "text")
        /// The token as written in SDP.
        public var description: String { rawValue }
    }

    /// The `<proto>` field, such as `RTP/AVP` or `RTP/SAVP`.
    public struct TransportProtocol: RawRepresentable, Hashable, Sendable, CustomStringConvertible {
        /// The token as written in `m=`.
        public var rawValue: String
        /// Creates a protocol from its `m=` token.
        public init(rawValue: String) { self.rawValue = rawValue }
        /// Plain RTP (RFC 3551); what ffmpeg writes, even for SRTP streams.
        public static let rtpAVP = TransportProtocol(rawValue: "RTP/AVP")
        /// SRTP (RFC 3711).
        public static let rtpSAVP = TransportProtocol(rawValue: "RTP/SAVP")
        /// RTP with RTCP feedback (RFC 4585).
        public static let rtpAVPF = TransportProtocol(rawValue: "RTP/AVPF")
        /// SRTP with RTCP feedback (RFC 5124).
        public static let rtpSAVPF = TransportProtocol(rawValue: "RTP/SAVPF")
        /// DTLS-SRTP with feedback, as WebRTC writes it (RFC 5764).
        public static let udpTLSRTPSAVPF = TransportProtocol(rawValue: "UDP/TLS/RTP/SAVPF")

        /// Whether the formats are RTP payload types (any profile with an `RTP` part).
        public var isRTP: Bool { SDPScanning.split(rawValue[...], at: "/").contains("RTP") }
        /// Whether the profile is a secure one (`SAVP`, `SAVPF`).
        public var isSecure: Bool { SDPScanning.split(rawValue[...], at: "/").contains { $0 == "SAVP" || $0 == "SAVPF" } }

        /// The token as written in SDP.
        public var description: String { rawValue }
    }

    /// The media direction attribute (RFC 8866 6.7). Absent means `sendrecv`.
    public enum Direction: String, Hashable, Sendable, CaseIterable, CustomStringConvertible {
        /// `a=sendrecv`.
        case sendReceive = "sendrecv"
        /// `a=sendonly`.
        case sendOnly = "sendonly"
        /// `a=recvonly`.
        case receiveOnly = "recvonly"
        /// `a=inactive`.
        case inactive = "inactive"

        /// The token as written in SDP.
        public var description: String { rawValue }
    }

    /// The media type.
    public var kind: Kind
    /// The transport port; 0 rejects or disables the stream.
    public var port: UInt16
    /// The `/<number of ports>` suffix, when present.
    public var portCount: Int?
    /// The transport protocol.
    public var transportProtocol: TransportProtocol
    /// The format list as written, at least one; for RTP protocols, payload types (see
    /// `payloadTypes`).
    public var formats: [String]
    /// The `i=` title.
    public var information: String?
    /// The section's `c=` line, which overrides the session's. See
    /// `SessionDescription.effectiveConnection(for:)`.
    public var connection: SessionDescription.Connection?
    /// The `b=` lines.
    public var bandwidths: [SessionDescription.Bandwidth]
    /// The `a=` lines in order, known or not.
    public var attributes: [SessionDescription.Attribute]
    /// `k=` and lines of unknown types, kept for re-serialization.
    public var otherLines: [SessionDescription.Line]

    /// Creates a media section from its raw parts.
    /// - Parameters:
    ///   - kind: `audio`, `video`, ...
    ///   - port: The transport port.
    ///   - portCount: The `/<number of ports>` suffix.
    ///   - transportProtocol: `RTP/AVP`, `RTP/SAVP`, ...
    ///   - formats: The format tokens; payload type numbers for RTP.
    ///   - information: The `i=` title.
    ///   - connection: A `c=` line for this section only.
    ///   - bandwidths: The `b=` lines.
    ///   - attributes: The `a=` lines in order.
    ///   - otherLines: `k=` and unknown lines.
    public init(
        kind: Kind, port: UInt16, portCount: Int? = nil, transportProtocol: TransportProtocol = .rtpAVP,
        formats: [String], information: String? = nil, connection: SessionDescription.Connection? = nil,
        bandwidths: [SessionDescription.Bandwidth] = [], attributes: [SessionDescription.Attribute] = [],
        otherLines: [SessionDescription.Line] = []
    ) {
        self.kind = kind
        self.port = port
        self.portCount = portCount
        self.transportProtocol = transportProtocol
        self.formats = formats
        self.information = information
        self.connection = connection
        self.bandwidths = bandwidths
        self.attributes = attributes
        self.otherLines = otherLines
    }

    /// Creates an RTP media section.
    ///
    /// ```swift
    /// let audio = MediaDescription(kind: .audio, port: 5004, transportProtocol: .rtpSAVP,
    ///     payloadTypes: [111], attributes: [.rtpMap(RTPMap(payloadType: 111,
    ///     encodingName: "opus", clockRate: 48_000, channels: 2)), .crypto(crypto)])
    /// ```
    /// - Parameters:
    ///   - kind: `audio`, `video`, ...
    ///   - port: The RTP port.
    ///   - transportProtocol: `RTP/AVP` by default; ffmpeg accepts `RTP/SAVP` with `a=crypto`.
    ///   - payloadTypes: The payload types, in order of preference.
    ///   - connection: A `c=` line for this section only.
    ///   - bandwidths: The `b=` lines.
    ///   - attributes: The `a=` lines in order.
    public init(
        kind: Kind, port: UInt16, transportProtocol: TransportProtocol = .rtpAVP, payloadTypes: [UInt8],
        connection: SessionDescription.Connection? = nil, bandwidths: [SessionDescription.Bandwidth] = [],
        attributes: [SessionDescription.Attribute] = []
    ) {
        self.init(
            kind: kind, port: port, transportProtocol: transportProtocol, formats: payloadTypes.map(String.init),
            connection: connection, bandwidths: bandwidths, attributes: attributes)
    }

    /// The section's SDP lines with key material redacted, CRLF-separated.
    public var description: String {
        SDPWriter.lines(of: self, redacting: true).joined(separator: "\r\n")
    }
}

extension MediaDescription {
    /// The formats that are RTP payload types (numbers 0...127), in order.
    public var payloadTypes: [UInt8] {
        formats.compactMap { SDPScanning.decimal($0, as: UInt8.self) }.filter { $0 <= 127 }
    }

    /// The attributes called `name`, in order.
    public func attributes(named name: String) -> [SessionDescription.Attribute] {
        attributes.filter { $0.name == name }
    }

    /// Whether an attribute called `name` is present.
    public func hasAttribute(named name: String) -> Bool {
        attributes.contains { $0.name == name }
    }

    /// `a=rtcp-mux` (RFC 5761): RTCP shares the RTP port.
    public var rtcpMux: Bool { hasAttribute(named: "rtcp-mux") }

    /// The section's explicit direction attribute, or nil. See
    /// `SessionDescription.effectiveDirection(for:)` for the inherited value.
    public var direction: Direction? {
        attributes.lazy.compactMap { $0.value == nil ? Direction(rawValue: $0.name) : nil }.first
    }

    /// `a=mid:<tag>` (RFC 9143), the section's identification tag.
    public var mid: String? {
        attributes.first { $0.name == "mid" && !($0.value ?? "").isEmpty }?.value
    }

    /// The `b=AS:` value in kb/s.
    public var applicationSpecificBandwidth: UInt64? {
        bandwidths.first { $0.type == "AS" }?.value
    }
}
