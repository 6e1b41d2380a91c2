/// One local stream the core sends (one SSRC).
public struct SendStreamConfiguration: Sendable {
    public var kind: MediaKind
    public var ssrc: UInt32
    public var payloadType: UInt8
    /// RTP clock rate (48 000 for Opus, 90 000 for VP8).
    public var clockRate: Int
    /// The RFC 8843 MID stamped on every packet, so a receiver that does not know the SSRC
    /// yet can tell which stream it is; nil stamps none.
    public var mid: String?
    /// A simulcast layer's RFC 8852 RTP stream ID, stamped beside `mid` where the extension
    /// map has an ID for it (as a browser publishing simulcast does); nil stamps none.
    public var rid: String?
    /// Where RTP goes; nil sends it on the core's selected path.
    public var destination: SocketAddress?
    /// Where RTCP about this stream goes (sender reports, BYE); nil: the RTP destination.
    public var rtcpDestination: SocketAddress?
    /// The local socket to send from (multi-socket sessions; 0 when bundled).
    public var socket = 0
    /// First sequence number and RTP timestamp offset; random when nil (RFC 3550 5.1).
    public var firstSequenceNumber: UInt16?
    public var timestampOffset: UInt32?
    /// Video: the store NACKs are answered from, and the keyframe-request coalescing.
    public var feedback = VideoFeedbackResponder.Configuration()
    /// Video: largest RTP payload, descriptor included.
    public var maximumPayloadSize = SendStreamState.maximumPacketSize - 40
    /// A stream a forwarding server relays (`forward`): the packets keep their sender's
    /// timestamps and payload and get this stream's sequence numbers; sender reports map
    /// the media clock from the sender's own reports (`setSenderClock`).
    public var forwarded = false
    /// A forwarded stream whose sender and receiver negotiated header extension IDs apart
    /// (a WebRTC peer on either side): each packet's IDs are rewritten to the receiver's,
    /// the sender's MID erased. Nil passes them as they are (both sides use the engine's map).
    /// Either way a forwarded packet goes out with this stream's payload type.
    public var forwardedExtensions: RTPExtensionTranslation?
    /// A forwarded video stream's RTX stream, when the receiver negotiated one. The stream
    /// then keeps no retransmission history: NACKed sequence numbers wait for the
    /// forwarding server (`MediaCore.takeRetransmissionRequests`), which answers each from
    /// its publisher's plain packet with `MediaCore.retransmit`. Ignored on other streams.
    public var rtx: RTXStream?

    public init(kind: MediaKind, ssrc: UInt32, payloadType: UInt8, clockRate: Int) {
        self.kind = kind
        self.ssrc = ssrc
        self.payloadType = payloadType
        self.clockRate = clockRate
    }

    /// The engine's Opus stream: payload type 111, 48 kHz.
    public static func opus(ssrc: UInt32) -> SendStreamConfiguration {
        SendStreamConfiguration(kind: .audio, ssrc: ssrc, payloadType: 111, clockRate: 48_000)
    }

    /// The engine's VP8 stream: payload type 96, 90 kHz.
    public static func vp8(ssrc: UInt32) -> SendStreamConfiguration {
        SendStreamConfiguration(kind: .video, ssrc: ssrc, payloadType: 96, clockRate: VP8.clockRate)
    }
}

/// One remote stream the core receives.
public struct ReceiveStreamConfiguration: Sendable {
    public var kind: MediaKind
    public var payloadType: UInt8
    public var clockRate: Int
    /// Decoded channel layout (audio).
    public var layout: ChannelLayout = .mono
    /// The sender's SSRC when known: packets of other SSRCs never reach this stream. Nil
    /// takes the first authenticated packet whose MID is `mid` (and RID `rid`, when set),
    /// or, with no MID either,
    /// any SSRC with the payload type (an SDP without `a=ssrc`).
    public var ssrc: UInt32?
    /// The RFC 8843 MID the sender stamps, for binding an SSRC not announced.
    public var mid: String?
    /// A simulcast layer's RTP stream ID (RFC 8852): with `mid`, the stream binds the first
    /// authenticated packet carrying both (several layers share one MID).
    public var rid: String?
    /// Who sends it: streams of one participant are played in sync with each other.
    public var participant = ""
    /// The key the sender protects with, when it differs from the core's inbound key (SDP
    /// sessions where each section has its own `a=crypto`). This side's feedback about the
    /// stream is protected with it too.
    public var keying: SRTPKeyingMaterial?
    /// Only packets that arrive on this local socket (multi-socket sessions); nil: any.
    public var socket: Int?
    /// Audio: the jitter buffer's settings (`layout` is applied on top).
    public var jitterBuffer = AudioJitterBuffer.Configuration()
    /// Video: the frame assembly and loss recovery settings.
    public var video = VideoReceiveStream.Configuration()
    /// A forwarding server's uplink stream: packets are handed back by `handleDatagram`
    /// (after SRTP, statistics and transport feedback) instead of being buffered or
    /// assembled; video losses are still NACKed to the sender.
    public var forwarding = false
    /// Forwarding video: the NACK settings.
    public var nack = NACKGenerator.Configuration()
    /// Video: the sender's RTX stream (RFC 4588), when it retransmits on one: its packets
    /// become the originals again (OSN, SSRC, payload type) and go where those go.
    public var rtx: RTXStream?

    public init(kind: MediaKind, payloadType: UInt8, clockRate: Int, ssrc: UInt32? = nil) {
        self.kind = kind
        self.payloadType = payloadType
        self.clockRate = clockRate
        self.ssrc = ssrc
    }

    /// The engine's Opus stream: payload type 111, 48 kHz.
    public static func opus(ssrc: UInt32?) -> ReceiveStreamConfiguration {
        ReceiveStreamConfiguration(kind: .audio, payloadType: 111, clockRate: 48_000, ssrc: ssrc)
    }

    /// The engine's VP8 stream: payload type 96, 90 kHz.
    public static func vp8(ssrc: UInt32?) -> ReceiveStreamConfiguration {
        ReceiveStreamConfiguration(kind: .video, payloadType: 96, clockRate: VP8.clockRate, ssrc: ssrc)
    }
}

/// Identifies a send stream of one core.
public struct SendStreamID: Sendable, Hashable, CustomStringConvertible {
    let value: Int
    public var description: String { "send#\(value)" }
}

/// Identifies a receive stream of one core.
public struct ReceiveStreamID: Sendable, Hashable, CustomStringConvertible {
    let value: Int
    public var description: String { "receive#\(value)" }
}

/// The state of one send stream: numbering, header extensions, the counts sender reports
/// need, and for video the payloader and the retransmission store. Not thread-safe.
final class SendStreamState {
    /// Largest RTP packet written, before SRTP: an Ethernet MTU less IP, UDP and the SRTP tag.
    static let maximumPacketSize = 1_500 - 28 - 16

    let id: SendStreamID
    let configuration: SendStreamConfiguration
    /// Set once when DTLS agrees the keys after the stream was added.
    var outboundKey: Int?
    let timestampOffset: UInt32
    var sequenceNumber: UInt16
    var header: RTPHeader
    let audioLevelID: UInt8?
    let transportSequenceID: UInt8?
    var packetsSent: UInt32 = 0
    /// Payload octets sent, as RTCP SR counts them.
    var octetsSent: UInt32 = 0
    var statistics: OutboundRTPStreamStatistics
    var responder: VideoFeedbackResponder?
    /// Forwarded video with an RTX stream: its next sequence number, and the NACKed
    /// numbers waiting for the forwarding server (capacity reserved once).
    let rtx: RTXStream?
    var rtxSequenceNumber: UInt16
    var retransmissionRequests: [UInt16] = []
    var payloader: VP8Payloader
    /// A sender report goes out right after the first packet (receivers get the RTP/NTP
    /// mapping from the start; ffmpeg derives its timing from it).
    var needsFirstReport = true
    /// BYE was sent: nothing more goes out on the stream.
    var isEnded = false
    /// The newest media time (RTP units since the stream's timestamp 0) and when it was
    /// sent, so a sender report can state the media clock now.
    var lastMedia: (timestamp: UInt32, at: Duration)?
    /// Forwarded: the sender's own report set `lastMedia` (its capture clock, not arrivals).
    var hasSenderClock = false

    init(id: SendStreamID, configuration: SendStreamConfiguration, outboundKey: Int?, extensions: RTPExtensionMap,
         midID: UInt8?, random: inout SeededRandom) {
        self.id = id
        self.configuration = configuration
        self.outboundKey = outboundKey
        timestampOffset = configuration.forwarded ? 0 : configuration.timestampOffset ?? UInt32(truncatingIfNeeded: random.next())
        sequenceNumber = configuration.firstSequenceNumber ?? UInt16(truncatingIfNeeded: random.next())
        audioLevelID = configuration.kind == .audio ? extensions.id(for: RTPExtensionMap.audioLevelURI) : nil
        transportSequenceID = extensions.id(for: RTPExtensionMap.transportSequenceNumberURI)
        var elements: [RTPHeaderExtension] = []
        if let audioLevelID { elements.append(RTPHeaderExtension(id: audioLevelID, value: [0x7F])) }
        if let transportSequenceID { elements.append(RTPHeaderExtension(id: transportSequenceID, value: [0, 0])) }
        if let midID, let mid = configuration.mid, !mid.isEmpty, mid.utf8.count <= 16 {
            elements.append(RTPHeaderExtension(id: midID, value: Array(mid.utf8)))
        }
        if let ridID = extensions.id(for: RTPExtensionMap.ridURI), let rid = configuration.rid, !rid.isEmpty, rid.utf8.count <= 16 {
            elements.append(RTPHeaderExtension(id: ridID, value: Array(rid.utf8)))
        }
        let form: RTPHeaderExtensionForm = elements.allSatisfy { $0.id <= 14 } ? .oneByte : .twoByte
        header = RTPHeader(payloadType: configuration.payloadType, sequenceNumber: 0, timestamp: 0, ssrc: configuration.ssrc,
                           extensionBlock: elements.isEmpty ? nil : try? RTPHeaderExtensionBlock(form: form, elements: elements))
        statistics = OutboundRTPStreamStatistics(kind: configuration.kind, ssrc: configuration.ssrc)
        rtx = configuration.kind == .video && configuration.forwarded ? configuration.rtx : nil
        rtxSequenceNumber = UInt16(truncatingIfNeeded: random.next())
        var feedback = configuration.feedback
        if rtx != nil {
            // Retransmissions come from the publisher's history: one slot, never filled.
            feedback.history.capacity = 1
            retransmissionRequests.reserveCapacity(RTXStream.maximumPendingRequests)
        }
        responder = configuration.kind == .video ? VideoFeedbackResponder(ssrc: configuration.ssrc, configuration: feedback) : nil
        payloader = VP8Payloader(maximumPayloadSize: max(8, min(configuration.maximumPayloadSize, Self.maximumPacketSize - header.size)),
                                 firstPictureID: UInt16(truncatingIfNeeded: random.next()))
    }

    /// Payload bytes that fit in one packet after this stream's header.
    var payloadCapacity: Int { Self.maximumPacketSize - header.size }

    /// Writes the header of the next packet into `buffer` and advances the numbering.
    /// - Returns: the header's size.
    func writeHeader(into buffer: UnsafeMutableRawBufferPointer, mediaTimestamp: UInt32, marker: Bool,
                     audioLevel: AudioLevel?, transportSequence: UInt16?) throws(PacketError) -> Int {
        if let audioLevelID, let audioLevel {
            withUnsafeBytes(of: audioLevel.byte) { _ = header.extensionBlock?.overwrite(id: audioLevelID, with: $0) }
        }
        if let transportSequenceID, let transportSequence {
            withUnsafeBytes(of: transportSequence.bigEndian) { _ = header.extensionBlock?.overwrite(id: transportSequenceID, with: $0) }
        }
        header.marker = marker
        header.sequenceNumber = sequenceNumber
        header.timestamp = timestampOffset &+ mediaTimestamp
        let size = try header.serialize(into: buffer)
        sequenceNumber &+= 1
        return size
    }

    /// A sender report for the media clock at `now`: the RTP timestamp comes from the same
    /// clock as the packets', so receivers get an exact NTP/RTP mapping for lip sync.
    func senderReport(ntp: UInt64, now: Duration) -> SenderReport {
        var rtp = timestampOffset
        if let last = lastMedia {
            let elapsed = Int64((now - last.at) / .seconds(1) * Double(configuration.clockRate))
            rtp = timestampOffset &+ last.timestamp &+ UInt32(truncatingIfNeeded: max(0, elapsed))
        }
        return SenderReport(ssrc: configuration.ssrc, ntpTimestamp: ntp, rtpTimestamp: rtp, packetCount: packetsSent,
                            octetCount: octetsSent)
    }
}

/// The state of one receive stream: reception statistics, the jitter buffer (audio) or
/// frame assembly and loss recovery (video), and what its sender reports said. Not
/// thread-safe.
final class ReceiveStreamState {
    let id: ReceiveStreamID
    let configuration: ReceiveStreamConfiguration
    /// Set once when DTLS agrees the keys after the stream was added.
    var inboundKey: Int?
    var feedbackKey: Int?
    /// The SSRC bound to the stream (configured, bound by MID, or the latest seen).
    var ssrc: UInt32?
    var statistics: InboundRTPStreamStatistics
    var reception: RTPReceiveStatistics
    let jitter: AudioJitterBuffer?
    var video: VideoReceiveStream?
    /// Where its packets come from and on which socket (feedback goes back there).
    var source: (address: SocketAddress, socket: Int)?
    /// Compact NTP time of the last SR and when it arrived, for LSR/DLSR.
    var lastSenderReport: (ntp: UInt32, arrival: Duration)?
    /// Audio: playout time of the next frame; nil while the stream is idle.
    var nextPull: Duration?
    var lastArrival: Duration = .zero
    /// The last RFC 6464 level the sender stamped, and when.
    var audioLevel: (level: AudioLevel, at: Duration)?
    /// The RTP timestamp of the sender's last report and when it arrived: the media clock
    /// a forwarding server states in its own reports.
    var senderClock: (timestamp: UInt32, arrival: Duration)?
    /// The sender's last report's (NTP, RTP) pair.
    var senderMapping: SenderClockMapping?
    /// Forwarding video: the losses to NACK, by unwrapped sequence number.
    var nacks: NACKGenerator?
    var unwrapper = SequenceNumberUnwrapper()

    init(id: ReceiveStreamID, configuration: ReceiveStreamConfiguration, inboundKey: Int?, feedbackKey: Int?) throws(CodecError) {
        self.id = id
        self.configuration = configuration
        self.inboundKey = inboundKey
        self.feedbackKey = feedbackKey
        ssrc = configuration.ssrc
        statistics = InboundRTPStreamStatistics(kind: configuration.kind)
        statistics.ssrc = configuration.ssrc
        statistics.participant = configuration.participant
        statistics.mid = configuration.mid
        reception = RTPReceiveStatistics(clockRate: configuration.clockRate)
        if configuration.forwarding {
            jitter = nil
            if configuration.kind == .video { nacks = NACKGenerator(configuration: configuration.nack) }
            return
        }
        switch configuration.kind {
        case .audio:
            var settings = configuration.jitterBuffer
            settings.layout = configuration.layout
            jitter = try AudioJitterBuffer(configuration: settings)
        case .video:
            jitter = nil
            video = VideoReceiveStream(configuration: configuration.video)
        }
    }

    /// Audio samples per channel in one playout frame.
    var framePeriod: Duration {
        guard let jitter else { return .milliseconds(20) }
        return AudioFrame.duration(samplesPerChannel: jitter.configuration.frameDuration.samplesPerChannel())
    }
}
