/// Counters of one received stream, named after W3C webrtc-stats `inbound-rtp` where a
/// name exists.
public struct InboundRTPStreamStatistics: Sendable {
    public var kind: MediaKind
    public var ssrc: UInt32?
    /// The participant the stream belongs to ("" in a two-party session).
    public var participant = ""
    public var mid: String?
    public var packetsReceived = 0
    public var bytesReceived = 0
    public var packetsLost = 0
    /// Interarrival jitter, seconds.
    public var jitter = 0.0
    public var authenticationFailures = 0
    public var replays = 0
    /// RTP packets that did not parse, or had a payload type not described.
    public var malformedPackets = 0
    /// Packets behind the playout point (audio) or for a finished frame (video).
    public var packetsDiscarded = 0
    public var framesDecoded = 0
    public var keyFramesDecoded = 0
    /// Audio samples (per channel) played out, concealment included.
    public var totalSamplesReceived = 0
    /// Audio samples made up by packet loss concealment.
    public var concealedSamples = 0
    public var concealmentEvents = 0
    public var insertedSamplesForDeceleration = 0
    public var removedSamplesForAcceleration = 0
    /// Frames recovered from the next packet's in-band FEC.
    public var fecRecoveredFrames = 0
    /// Total seconds emitted audio samples spent in the jitter buffer (W3C).
    public var jitterBufferDelay = 0.0
    /// Samples emitted by the jitter buffer (W3C).
    public var jitterBufferEmittedCount = 0
    /// Mean time an audio sample spent in the jitter buffer, seconds.
    public var meanJitterBufferDelay = 0.0
    /// The jitter buffer's current target delay, seconds.
    public var jitterBufferTargetDelay = 0.0
    /// The sender's last RFC 6464 audio level, 0...1 of full scale (W3C `audioLevel`).
    public var audioLevel = 0.0
    public var decodeErrors = 0
    public var pliSent = 0
    public var firSent = 0
    /// NACK packets sent (each may list several sequence numbers).
    public var nackSent = 0
    /// Packets that came on the stream's RTX stream (W3C `retransmittedPacketsReceived`),
    /// and those too short to carry a packet (a sender's RTX padding probes).
    public var retransmittedPacketsReceived = 0
    public var rtxPaddingReceived = 0
    /// Video packets that arrived after being NACKed.
    public var packetsRecovered = 0
    public var rtcpReceived = 0
    public var endedByGoodbye = false

    public init(kind: MediaKind) { self.kind = kind }
}

/// Counters of one sent stream, named after W3C webrtc-stats `outbound-rtp`, with what
/// the receiver reported about it (`remote-inbound-rtp`).
public struct OutboundRTPStreamStatistics: Sendable, Hashable {
    public var kind: MediaKind
    public var ssrc: UInt32
    public var packetsSent = 0
    /// Payload bytes sent (W3C `bytesSent` counts payload only).
    public var bytesSent = 0
    public var framesSent = 0
    public var keyFramesSent = 0
    /// Packets sent again in answer to NACKs (W3C `retransmittedPacketsSent`).
    public var retransmittedPacketsSent = 0
    /// Payload bytes of those (W3C `retransmittedBytesSent`; on an RTX stream, the OSN too).
    public var retransmittedBytesSent = 0
    /// RTX streams: NACKed sequence numbers dropped because the forwarding server had not
    /// taken the earlier ones yet (`RTXStream.maximumPendingRequests`).
    public var retransmissionRequestsDropped = 0
    /// Padding-only packets sent on the RTX stream to probe the link, and their bytes on
    /// the wire (headers and SRTP tag included).
    public var paddingPacketsSent = 0
    public var paddingBytesSent = 0
    /// NACK, PLI and FIR packets received for this stream (W3C `nackCount`, `pliCount`, `firCount`).
    public var nackCount = 0
    public var pliCount = 0
    public var firCount = 0
    /// Keyframes forced by those requests (coalesced).
    public var keyframesForced = 0
    /// What the receiver's latest report block said, if one came.
    public var remoteReport: RemoteReport?

    public init(kind: MediaKind, ssrc: UInt32) {
        self.kind = kind
        self.ssrc = ssrc
    }
}

/// What a receiver's RTCP report block said about a sent stream.
public struct RemoteReport: Sendable, Hashable {
    public var packetsLost: Int
    /// Interarrival jitter, seconds.
    public var jitter: Double
    /// Round trip from LSR/DLSR, seconds; nil before the receiver has seen an SR.
    public var roundTripTime: Double?
    /// Share of packets lost since the previous report, 0...1.
    public var fractionLost: Double

    public init(packetsLost: Int, jitter: Double, roundTripTime: Double?, fractionLost: Double = 0) {
        self.packetsLost = packetsLost
        self.jitter = jitter
        self.roundTripTime = roundTripTime
        self.fractionLost = fractionLost
    }
}

/// Counters of the transport as a whole (W3C `transport` and `candidate-pair` where a name
/// exists): what came in that no stream took, and what was refused.
public struct TransportStatistics: Sendable, Hashable {
    /// Datagrams that are neither RTP, RTCP nor STUN.
    public var unknownDatagrams = 0
    /// RTP or RTCP from an address other than the selected path (dropped).
    public var foreignPathDatagrams = 0
    /// RTP whose payload type or SSRC matches no stream (dropped).
    public var unknownStreamPackets = 0
    /// RTP that claimed a stream already bound to another SSRC, or one of this side's own SSRCs.
    public var ssrcCollisions = 0
    /// RTCP that failed SRTCP authentication (or arrived plain where keys are in use).
    public var rtcpAuthenticationFailures = 0
    /// SRTCP packets seen before (replays) or behind the replay window.
    public var rtcpReplays = 0
    /// RTCP that authenticated but did not parse.
    public var malformedRTCP = 0
    /// RTCP compound packets accepted and sent.
    public var rtcpReceived = 0
    public var rtcpSent = 0
    /// Feedback (NACK, PLI, FIR) about an SSRC this side does not send.
    public var feedbackForUnknownStreams = 0
    /// BYE packets accepted, and the streams they ended.
    public var goodbyesReceived = 0
    /// STUN requests answered and refused (wrong token, wrong address, malformed).
    public var stunAnswered = 0
    public var stunRefused = 0
    /// Consent checks sent and answered (RFC 7675).
    public var consentRequestsSent = 0
    public var consentAnswersReceived = 0
    /// Transport-wide feedback sent and received.
    public var transportFeedbackSent = 0
    public var transportFeedbackReceived = 0
    /// Transport-wide feedback received that names no stream this side sends as its media
    /// source (used all the same; libwebrtc's sender would ignore it).
    public var transportFeedbackNamingNoStream = 0
    /// RRTR blocks answered with DLRR.
    public var referenceTimesAnswered = 0
    /// Datagrams and bytes handed to the network, and datagrams the queue had no room for.
    public var datagramsSent = 0
    public var bytesSent = 0
    public var transmitOverflows = 0
    /// Media the core could not send yet: no path selected, or its DTLS handshake has not
    /// agreed keys.
    public var packetsWithoutPath = 0
    /// DTLS datagrams handed to the handshake, and those that were not whole DTLS records
    /// (garbage, truncated): counted and dropped.
    public var dtlsDatagramsReceived = 0
    public var dtlsMalformed = 0
    /// DTLS from an address other than the selected path (or before there is one): dropped.
    public var dtlsFromStrangers = 0
    /// RTP and RTCP that came while DTLS had not agreed keys yet: dropped unread.
    public var mediaBeforeKeys = 0
    /// The round trip this side measured last (RR LSR/DLSR or XR DLRR), seconds.
    public var roundTripTime: Double?

    public init() {}

    /// Adds another part's counts (the parts of a core count different things); the round
    /// trip stays this one's.
    mutating func add(_ other: TransportStatistics) {
        unknownDatagrams += other.unknownDatagrams
        foreignPathDatagrams += other.foreignPathDatagrams
        unknownStreamPackets += other.unknownStreamPackets
        ssrcCollisions += other.ssrcCollisions
        rtcpAuthenticationFailures += other.rtcpAuthenticationFailures
        rtcpReplays += other.rtcpReplays
        malformedRTCP += other.malformedRTCP
        rtcpReceived += other.rtcpReceived
        rtcpSent += other.rtcpSent
        feedbackForUnknownStreams += other.feedbackForUnknownStreams
        goodbyesReceived += other.goodbyesReceived
        stunAnswered += other.stunAnswered
        stunRefused += other.stunRefused
        consentRequestsSent += other.consentRequestsSent
        consentAnswersReceived += other.consentAnswersReceived
        transportFeedbackSent += other.transportFeedbackSent
        transportFeedbackReceived += other.transportFeedbackReceived
        transportFeedbackNamingNoStream += other.transportFeedbackNamingNoStream
        referenceTimesAnswered += other.referenceTimesAnswered
        datagramsSent += other.datagramsSent
        bytesSent += other.bytesSent
        transmitOverflows += other.transmitOverflows
        packetsWithoutPath += other.packetsWithoutPath
        dtlsDatagramsReceived += other.dtlsDatagramsReceived
        dtlsMalformed += other.dtlsMalformed
        dtlsFromStrangers += other.dtlsFromStrangers
        mediaBeforeKeys += other.mediaBeforeKeys
    }
}
