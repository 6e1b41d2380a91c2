import MediaEngine

/// The forwarding server's media plane, sans-I/O: one leg per meeting participant, each a
/// `MediaCore` (SRTP and SRTCP both ways, its own reports, transport-wide feedback and
/// bandwidth estimate, retransmission history), all on one UDP port, and the routing
/// between them.
///
/// Per packet: the publisher's leg authenticates and decrypts it once; the router reads
/// its audio level or VP8 layer and keyframe bits, and each subscriber's leg renumbers it
/// (`StreamRewriter`), protects it with that leg's key and queues it. No decode, no
/// re-encode, no allocation.
///
/// - Legs are found by source address; an address joins a leg only through a STUN check
///   signed for the leg's ICE credentials (ICE-lite). Anything else from a stranger is counted and
///   never answered; check answers are rate-limited per leg and never larger than the check.
/// - A Binding request without a USERNAME (RFC 8489 section 3: a client learning its
///   server-reflexive address, `STUNBinding`) is answered with the source address, from
///   anyone, but only when the request is at least as large as the answer (clients pad
///   theirs) and within a rate per source IP kept in a bounded table; one with a USERNAME
///   no leg has stays a stranger's (a stale leg's agent must not read it as its check
///   succeeding).
/// - An audience leg's media is dropped (counted) before decryption.
/// - Subscribers' NACKs are answered from their leg's history; PLIs from all subscribers
///   of a video are merged into at most one request per `keyframeRequestInterval` to the
///   publisher, whose uplink losses the publisher's leg NACKs itself.
/// - Each subscriber's bandwidth estimate (from its transport-wide feedback) is shared out
///   by `LayerAllocator`: VP8 temporal layers go first, then the videos of the users who
///   spoke least recently; audio always goes.
/// - A leg with no authenticated check or packet for `legTimeout` is reported lost.
///
/// Split the way mediasoup names it: a `Transport` per leg, a `Producer` per published
/// stream, a `Consumer` per (subscriber, producer), each in a `Table` and naming the others
/// by ID; the open STUN responder is a `BindingResponder`. The router dispatches between
/// them and keeps the counters.
///
/// Not thread-safe: one owner (the forwarding thread).
public final class ForwardingRouter {
    public struct Configuration: Sendable {
        /// No check or authenticated packet for this long: the leg is lost.
        public var legTimeout: Duration = .seconds(15)
        /// At most one keyframe request per publisher video this often.
        public var keyframeRequestInterval: Duration = .milliseconds(500)
        /// How often speaking participants are reported (while anyone speaks).
        public var speakingInterval: Duration = .milliseconds(500)
        /// How often each subscriber's layers are chosen again.
        public var allocationInterval: Duration = .seconds(1)
        /// A video paused for bandwidth stays paused at least this long (each resume costs
        /// a keyframe, whose burst on a tight link would pause it again).
        public var pauseHold: Duration = .seconds(4)
        /// A simulcast video moves up a spatial layer only if the lowest estimate of this
        /// long allows it, and at least this long after its last move (two keyframe intervals
        /// of our clients'; each move costs a keyframe).
        public var spatialSwitchHold: Duration = .seconds(4)
        /// A simulcast layer nobody can use is paused at the publisher after this long (a
        /// view that shrinks for a moment costs no keyframe); one wanted again resumes at once.
        public var layerPauseDelay: Duration = .seconds(5)
        /// Probing a subscriber's link toward a higher layer: the longest a probe runs, the
        /// wait after the first one that fails (doubling with each failure, up to
        /// `probeBackoffLimit`; a success resets it).
        public var probeDuration: Duration = .seconds(15)
        public var probeBackoff: Duration = .seconds(5)
        public var probeBackoffLimit: Duration = .seconds(60)
        /// Each subscriber leg's bandwidth estimate. Its history of sent packets (to match
        /// feedback against) is 2,048: a second of a 20-party video meeting's downlink,
        /// where feedback comes every 50-100 ms.
        public var subscriberBandwidth: SendSideBandwidthEstimator.Configuration = {
            var settings = SendSideBandwidthEstimator.Configuration(startBitrate: 2_000_000, minimumBitrate: 100_000,
                                                                    maximumBitrate: 50_000_000)
            settings.historySize = 2_048
            return settings
        }()
        /// Bandwidth set aside for each audio stream sent to a subscriber (b/s).
        public var audioAllowance = 48_000
        public var maximumLegs = 4_096
        /// Media and RTCP datagrams taken from each leg (per second) and its burst; the
        /// rest are dropped before decryption. A 2.5 Mb/s VP8 video in 1,200-byte packets
        /// is about 260 packets a second plus 50 of audio and a few RTCP; a keyframe of
        /// a 720p picture is 60-100 packets at once. Each packet taken is forwarded to
        /// every subscriber, so this also bounds what one participant makes the server send.
        public var legPacketRate = 1_500.0
        public var legPacketBurst = 500.0
        /// Check answers per leg: rate (per second) and burst.
        public var checkRate = 20.0
        public var checkBurst = 20.0
        /// Binding requests without a USERNAME answered per source IP (any port): rate
        /// (per second) and burst. A client asks once per candidate gathering, a few times
        /// when it retransmits; a NAT's users share their IP.
        public var bindingRate = 10.0
        public var bindingBurst = 20.0
        /// Source IPs whose binding rate is tracked; past this the longest tracked is
        /// forgotten (it starts again with a full burst).
        public var bindingSources = 4_096
        /// Datagrams queued per leg (the forwarding thread drains them after every packet).
        public var transmitCapacity = 256
        /// Packets of each forwarded video kept per subscriber for NACKs (about 1 s of a
        /// 1 Mb/s video).
        public var retransmissionHistory = 128
        public var ntpEpoch = NTPTime.now()
        public var seed = UInt64.random(in: 0 ... .max)

        public init() {}
    }

    /// One participant's leg.
    public struct LegSetup: Sendable, Hashable, CustomStringConvertible {
        /// How a leg's media is keyed.
        public enum Keying: Sendable, Hashable {
            /// Keys given over signaling (our clients, the live composer): the participant's
            /// (uplink) and the server's for this leg (downlink).
            case sdes(inbound: SRTPKeyingMaterial, outbound: SRTPKeyingMaterial)
            /// A DTLS-SRTP handshake on the leg's path (a WebRTC peer): this side's role per
            /// the answer's `a=setup`, its certificate, and the fingerprints the peer's SDP
            /// sent (its certificate must match one).
            case dtls(role: DTLSRole, certificate: DTLSCertificate, remoteFingerprints: [DTLSFingerprint])
        }

        /// The payload types and header extension IDs the leg's peer uses (a WebRTC peer's
        /// are its offer's). What is forwarded to the leg is rewritten to them.
        public struct Media: Sendable, Hashable {
            public var audioPayloadType: UInt8
            public var videoPayloadType: UInt8
            public var extensions: RTPExtensionMap
            /// The `rtx` payload type (RFC 4588) for video forwarded to the leg, when its peer
            /// negotiated one: each publisher's video then comes with an RTX stream
            /// (`RTXStream.ssrc(forVideo:)`), answered from one history per publisher.
            public var videoRTXPayloadType: UInt8?

            public init(audioPayloadType: UInt8 = 111, videoPayloadType: UInt8 = 96, extensions: RTPExtensionMap = .standard,
                        videoRTXPayloadType: UInt8? = nil) {
                self.audioPayloadType = audioPayloadType
                self.videoPayloadType = videoPayloadType
                self.extensions = extensions
                self.videoRTXPayloadType = videoRTXPayloadType
            }

            /// Our clients': Opus 111, VP8 96, the engine's extension map.
            public static let engine = Media()

            /// A WebRTC peer's, as `negotiation` agreed them (the engine's payload type for a
            /// kind it did not take).
            public init(_ negotiation: WebRTCNegotiation) {
                self.init(audioPayloadType: negotiation.sections.first { $0.kind == .audio }?.codec.payloadType ?? 111,
                          videoPayloadType: negotiation.sections.first { $0.kind == .video }?.codec.payloadType ?? 96,
                          extensions: negotiation.extensionMap,
                          videoRTXPayloadType: negotiation.sections.first { $0.kind == .video && $0.rtxPayloadType != nil }?.rtxPayloadType)
            }
        }

        /// One spatial layer of a simulcast video: its SSRC and the picture size it carries.
        public typealias VideoLayer = SimulcastStream

        /// Simulcast layers the most a video has.
        public static let maximumVideoLayers = 3

        public var id: UInt64
        public var meeting: UInt64
        public var account: String
        public var publishing: Bool
        public var audioSSRC: UInt32
        /// The video's SSRC: what subscribers get it as (a simulcast video's may be its first
        /// layer's).
        public var videoSSRC: UInt32?
        /// A simulcast video's layers, lowest first (at most `maximumVideoLayers`); empty: one
        /// stream, `videoSSRC`. Each subscriber gets one layer at a time under `videoSSRC`.
        public var videoLayers: [VideoLayer] = []
        /// A WebRTC peer's simulcast video (RFC 8853), whose layers' SSRCs are not announced:
        /// each layer's SSRC is learnt from the first authenticated packet carrying its
        /// section's MID and its RID (RFC 8852), and its size from its keyframes.
        public var videoRIDs: RIDLayers?
        /// A video section's MID and its simulcast layers' RIDs, lowest first.
        public struct RIDLayers: Sendable, Hashable {
            public var mid: String
            public var rids: [String]

            public init(mid: String, rids: [String]) {
                self.mid = mid
                self.rids = rids
            }
        }

        /// How many streams the video comes as: its layers, or one.
        var videoStreamCount: Int { videoRIDs?.rids.count ?? max(videoLayers.count, 1) }

        /// What makes the video's layers unusable, or nil: at most `maximumVideoLayers`,
        /// announced by SSRC or by RID but not both, a RID simulcast with at least one RID,
        /// and either kind only with a video SSRC (what subscribers get it as).
        var videoLayoutProblem: String? {
            if videoStreamCount > Self.maximumVideoLayers {
                return "\(videoStreamCount) simulcast layers, more than the \(Self.maximumVideoLayers) a video may have"
            }
            if videoSSRC == nil && (!videoLayers.isEmpty || videoRIDs != nil) { return "simulcast layers without a video SSRC" }
            if let videoRIDs, videoRIDs.rids.isEmpty { return "a simulcast by RID with no RIDs" }
            if videoRIDs != nil && !videoLayers.isEmpty { return "simulcast layers both by SSRC and by RID" }
            return nil
        }
        public var keying: Keying
        public var media: Media
        /// The server's ICE credentials for this leg (ICE-lite): the participant's checks are
        /// signed with them.
        public var ice: ICECredentials

        public init(id: UInt64, meeting: UInt64, account: String, publishing: Bool, audioSSRC: UInt32, videoSSRC: UInt32?,
                    keying: Keying, media: Media = .engine, ice: ICECredentials) {
            self.id = id
            self.meeting = meeting
            self.account = account
            self.publishing = publishing
            self.audioSSRC = audioSSRC
            self.videoSSRC = videoSSRC
            self.keying = keying
            self.media = media
            self.ice = ice
        }

        /// A leg of one of our clients, keyed over signaling.
        public init(id: UInt64, meeting: UInt64, account: String, publishing: Bool, audioSSRC: UInt32, videoSSRC: UInt32?,
                    inboundKeying: SRTPKeyingMaterial, outboundKeying: SRTPKeyingMaterial, ice: ICECredentials) {
            self.init(id: id, meeting: meeting, account: account, publishing: publishing, audioSSRC: audioSSRC, videoSSRC: videoSSRC,
                      keying: .sdes(inbound: inboundKeying, outbound: outboundKeying), ice: ice)
        }

        /// The participant's key (uplink), when keyed over signaling.
        public var inboundKeying: SRTPKeyingMaterial? {
            if case .sdes(let inbound, _) = keying { inbound } else { nil }
        }

        /// The server's key for this leg (downlink), when keyed over signaling.
        public var outboundKeying: SRTPKeyingMaterial? {
            if case .sdes(_, let outbound) = keying { outbound } else { nil }
        }

        public var description: String { "LegSetup(\(id), meeting \(meeting), \(account), keys redacted)" }
    }

    /// What the router tells its owner.
    public enum Report: Sendable, Hashable {
        case legLost(UInt64)
        /// Speaking participants of a meeting with their levels (0...1); empty once all are silent.
        case speaking(meeting: UInt64, levels: [String: Double])
        /// The simulcast layers (lowest first) leg `leg` should send: the others nobody can
        /// use (no subscriber shows its video that large) for `layerPauseDelay`.
        case videoLayers(leg: UInt64, active: [Bool])
    }

    public struct Counters: Sendable, Hashable {
        /// Media packets that came in on legs, authenticated.
        public var packetsReceived = 0
        public var packetsForwarded = 0
        public var bytesForwarded = 0
        /// Datagrams from addresses that belong to no leg (and are no valid check).
        public var strangerDatagrams = 0
        /// Media an audience leg sent, dropped unread.
        public var audienceMediaDropped = 0
        /// Packets not sent to a subscriber that muted their sender.
        public var mutedPacketsSkipped = 0
        /// Video packets not sent to a subscriber for its bandwidth (upper layers, paused
        /// videos, frames before a keyframe).
        public var videoPacketsHeldBack = 0
        public var keyframeRequestsSent = 0
        public var checksRateLimited = 0
        /// Media and RTCP datagrams from legs over `legPacketRate`, dropped unread.
        public var mediaRateLimited = 0
        /// Binding requests without a USERNAME answered with their source address.
        public var bindingsAnswered = 0
        /// Binding requests without a USERNAME dropped for their source IP's rate.
        public var bindingsRateLimited = 0
        /// Binding requests without a USERNAME smaller than their answer (unpadded), dropped.
        public var bindingsTooSmall = 0
        /// Datagrams that start like STUN but do not parse (counted as strangers' too).
        public var stunMalformed = 0
        public var legsLost = 0
        public var legsRefused = 0
        /// DTLS-keyed legs whose handshake agreed keys, and those whose handshake failed (a
        /// certificate that matched no fingerprint, a timeout): those end as lost.
        public var dtlsConnected = 0
        public var dtlsFailed = 0
        /// Datagrams read here for a leg another worker owns, handed to it.
        public var datagramsHandedOff = 0
        /// Media packets handed, decrypted, to other workers' subscribers (once per worker).
        public var packetsHandedOff = 0
        /// Retransmissions sent on subscribers' RTX streams, and the distinct packets they
        /// carried (a packet sent again twice counts once here).
        public var rtxPacketsSent = 0
        public var packetsRetransmittedOnRTX = 0
        /// NACKed packets (of subscribers with RTX) no longer held: sent too long ago, or
        /// their publisher's packet overwritten or older than a second.
        public var retransmissionsOutOfHistory = 0
        /// NACKed packets sent again less than a round trip ago, or three times already.
        public var retransmissionsSuppressed = 0
        /// Probes toward a higher layer (padding on a subscriber's RTX stream while its
        /// estimate is below what the layer needs): started, ended by the subscriber moving
        /// up, ended by its estimate falling or by running out of time; and their padding.
        public var probesStarted = 0
        public var probesSucceeded = 0
        public var probesFailed = 0
        public var paddingPacketsSent = 0
        public var paddingBytesSent = 0

        public init() {}

        /// These and `other`'s, added (several workers' routers).
        public func adding(_ other: Counters) -> Counters {
            var sum = self
            sum.packetsReceived += other.packetsReceived
            sum.packetsForwarded += other.packetsForwarded
            sum.bytesForwarded += other.bytesForwarded
            sum.strangerDatagrams += other.strangerDatagrams
            sum.audienceMediaDropped += other.audienceMediaDropped
            sum.mutedPacketsSkipped += other.mutedPacketsSkipped
            sum.videoPacketsHeldBack += other.videoPacketsHeldBack
            sum.keyframeRequestsSent += other.keyframeRequestsSent
            sum.checksRateLimited += other.checksRateLimited
            sum.mediaRateLimited += other.mediaRateLimited
            sum.bindingsAnswered += other.bindingsAnswered
            sum.bindingsRateLimited += other.bindingsRateLimited
            sum.bindingsTooSmall += other.bindingsTooSmall
            sum.stunMalformed += other.stunMalformed
            sum.legsLost += other.legsLost
            sum.legsRefused += other.legsRefused
            sum.dtlsConnected += other.dtlsConnected
            sum.dtlsFailed += other.dtlsFailed
            sum.datagramsHandedOff += other.datagramsHandedOff
            sum.packetsHandedOff += other.packetsHandedOff
            sum.rtxPacketsSent += other.rtxPacketsSent
            sum.packetsRetransmittedOnRTX += other.packetsRetransmittedOnRTX
            sum.retransmissionsOutOfHistory += other.retransmissionsOutOfHistory
            sum.retransmissionsSuppressed += other.retransmissionsSuppressed
            sum.probesStarted += other.probesStarted
            sum.probesSucceeded += other.probesSucceeded
            sum.probesFailed += other.probesFailed
            sum.paddingPacketsSent += other.paddingPacketsSent
            sum.paddingBytesSent += other.paddingBytesSent
            return sum
        }
    }


    public let configuration: Configuration
    // The tables and counters are touched several times per packet and subscriber, on one
    // thread, never by overlapping accesses (no method that changes one calls out while it
    // does): the runtime's exclusivity checks on them cost more than the lookups.
    @exclusivity(unchecked) public internal(set) var counters = Counters()
    @exclusivity(unchecked) var transports = Table<Transport>()
    @exclusivity(unchecked) var producers = Table<Producer>()
    @exclusivity(unchecked) var consumers = Table<Consumer>()
    /// One subscriber stream's NACKed numbers at a time (capacity reserved once).
    @exclusivity(unchecked) var retransmissionRequests: [UInt16] = {
        var numbers: [UInt16] = []
        numbers.reserveCapacity(RTXStream.maximumPendingRequests)
        return numbers
    }()
    /// The owner's leg IDs, checks' ufrags and proved addresses, to transports.
    var transportByLeg: [UInt64: Transport.ID] = [:]
    var transportByUfrag: [String: Transport.ID] = [:]
    var transportByAddress: [SocketAddress: Transport.ID] = [:]
    var bindings: BindingResponder
    var reports = DrainQueue<Report>()
    var nextSpeakingCheck: Duration?
    var nextLayerCheck: Duration?
    var lastSpeaking: [UInt64: [String: Double]] = [:]
    var random: SeededRandom

    // Forwarding workers (`ForwardingRouter+Workers`): legs other workers own.
    /// This router's worker number.
    public let worker: Int
    /// Hands a packet to another worker (on the per-packet path: must not allocate or wait).
    public var handOff: ((_ worker: Int, _ header: WorkerHandoff, _ bytes: UnsafeRawBufferPointer) -> Void)?
    var remoteLegs: [UInt64: RemoteLeg] = [:]
    var ufragWorker: [String: Int] = [:]
    var addressWorker: [SocketAddress: Int] = [:]
    var workerMessages = DrainQueue<(worker: Int, message: WorkerMessage)>()
    /// How many workers there are (messages about addresses go to all the others).
    public var workerCount = 1

    /// - Parameter worker: Its number among the forwarding workers (0 when there is one).
    public init(configuration: Configuration = Configuration(), worker: Int = 0) {
        self.configuration = configuration
        self.worker = worker
        random = SeededRandom(seed: configuration.seed)
        bindings = BindingResponder(rate: configuration.bindingRate, burst: configuration.bindingBurst,
                                    sources: configuration.bindingSources)
    }

    /// Legs open now.
    public var legCount: Int { transports.count }

    // MARK: Legs

    /// Opens a leg; it sends and receives once a check signed for its credentials arrives.
    /// - Throws: `MediaCoreError` for a key libsrtp refuses, a leg ID or ufrag already in
    ///   use, or when `maximumLegs` are open.
    public func addLeg(_ setup: LegSetup, now: Duration) throws(MediaCoreError) {
        guard transportByLeg[setup.id] == nil, transportByUfrag[setup.ice.ufrag] == nil, !setup.ice.ufrag.isEmpty,
              !setup.ice.password.isEmpty else {
            counters.legsRefused += 1
            throw MediaCoreError(.configuration, "leg \(setup.id): its ID or ICE ufrag is already in use")
        }
        guard transports.count < configuration.maximumLegs else {
            counters.legsRefused += 1
            throw MediaCoreError(.configuration, "leg \(setup.id): the server holds its maximum of \(configuration.maximumLegs) legs")
        }
        if let problem = setup.videoLayoutProblem {
            counters.legsRefused += 1
            throw MediaCoreError(.configuration, "leg \(setup.id): \(problem)")
        }
        var settings = MediaCore.Configuration()
        if case .sdes(let inbound, let outbound) = setup.keying {
            settings.outboundKeying = outbound
            settings.inboundKeying = inbound
        }
        settings.extensions = setup.media.extensions
        settings.learnsPathFromChecks = true
        settings.bandwidth = configuration.subscriberBandwidth
        settings.transmitCapacity = configuration.transmitCapacity
        settings.ntpEpoch = configuration.ntpEpoch
        settings.seed = random.next()
        settings.cname = "mediaengine-sfu"
        settings.rtcpSSRC = UInt32(truncatingIfNeeded: random.next()) | 1
        let core: MediaCore
        do {
            core = try MediaCore(configuration: settings)
        } catch {
            throw MediaCoreError(.srtp, "leg \(setup.id): \(error.message)")
        }
        core.localICE = setup.ice
        if case .dtls(let role, let certificate, let fingerprints) = setup.keying {
            do throws(DTLSError) {
                try core.useDTLS(role: role, certificate: certificate, remoteFingerprints: fingerprints, now: now)
            } catch {
                counters.legsRefused += 1
                throw MediaCoreError(.configuration, "leg \(setup.id): DTLS: \(error.message)")
            }
        }
        var audio = ReceiveStreamConfiguration(kind: .audio, payloadType: setup.media.audioPayloadType, clockRate: 48_000,
                                               ssrc: setup.audioSSRC)
        audio.forwarding = true
        audio.participant = setup.account
        let audioStream = try core.addReceiveStream(audio)
        let rids = setup.videoRIDs
        var videoLayers: [Producer.Layer] = []
        if let ssrc = setup.videoSSRC {
            let streams: [(ssrc: UInt32?, rid: String?, width: Int, height: Int)] =
                if let rids { rids.rids.map { (nil, $0, 0, 0) } }
                else if setup.videoLayers.isEmpty { [(ssrc, nil, 0, 0)] }
                else { setup.videoLayers.map { ($0.ssrc, nil, $0.width, $0.height) } }
            for layer in streams {
                var video = ReceiveStreamConfiguration(kind: .video, payloadType: setup.media.videoPayloadType,
                                                       clockRate: VP8.clockRate, ssrc: layer.ssrc)
                video.mid = layer.rid == nil ? nil : rids?.mid
                video.rid = layer.rid
                video.forwarding = true
                video.participant = setup.account
                videoLayers.append(Producer.Layer(receive: try core.addReceiveStream(video), width: layer.width, height: layer.height))
            }
        }
        let id = transports.insert(Transport(
            setup: setup, core: core, checks: TokenBucket(rate: configuration.checkRate, burst: configuration.checkBurst),
            packets: TokenBucket(rate: configuration.legPacketRate, burst: configuration.legPacketBurst), now: now))
        let transport = transports[id]
        transport?.audio = producers.insert(Producer(kind: .audio, origin: .local(id), leg: setup.id, receive: audioStream,
                                                     audioLevelID: setup.media.extensions.id(for: RTPExtensionMap.audioLevelURI)))
        transport?.video = videoLayers.isEmpty ? nil
            : producers.insert(Producer(kind: .video, origin: .local(id), leg: setup.id, layers: videoLayers))
        transportByLeg[setup.id] = id
        transportByUfrag[setup.ice.ufrag] = id
    }

    /// Closes a leg: its streams end for every subscriber (BYE), and it gets nothing more.
    public func removeLeg(_ leg: UInt64, now: Duration) {
        guard let id = transportByLeg.removeValue(forKey: leg), let transport = transports.remove(id) else { return }
        transportByUfrag[transport.setup.ice.ufrag] = nil
        for address in transport.addresses where transportByAddress[address] == id { transportByAddress[address] = nil }
        for producerID in transport.producers {
            guard let producer = producers.remove(producerID) else { continue }
            for consumerID in producer.consumers {
                guard let consumer = consumers.remove(consumerID) else { continue }
                consumer.subscriberCore.removeSendStream(consumer.send, now: now)
                transports[consumer.subscriber]?.consumers.removeAll { $0 == consumerID }
            }
        }
        for consumerID in transport.consumers {
            guard let consumer = consumers.remove(consumerID) else { continue }
            producers[consumer.producer]?.consumers.removeAll { $0 == consumerID }
            unsubscribeIfIdle(consumer.producer)
        }
        transports.forEach { _, other in other.wanted[leg] = nil }
        let meeting = transport.setup.meeting
        lastSpeaking[meeting] = lastSpeaking[meeting].map { $0.filter { $0.key != transport.setup.account } }
    }

    /// Whether a leg's media is forwarded (actor) or dropped unread (audience). A leg that
    /// starts publishing gets its subscribers' streams opened (as they asked for them).
    public func setPublishing(_ leg: UInt64, _ publishing: Bool, now: Duration) {
        if let id = transportByLeg[leg], let transport = transports[id] {
            guard transport.publishing != publishing else { return }
            transport.publishing = publishing
        } else if let remote = remoteLegs[leg] {
            guard remote.publishing != publishing else { return }
            remoteLegs[leg]?.publishing = publishing
        } else {
            return
        }
        guard publishing, let source = publisher(leg) else { return }
        transports.forEach { subscriber, other in
            if let wanted = other.wanted[leg] {
                openConsumers(subscriber: subscriber, publisher: leg, audio: wanted.audio, video: wanted.video, now: now)
            }
        }
        if let video = source.video, let consumerIDs = producers[video]?.consumers {
            for consumerID in consumerIDs { consumers[consumerID]?.waitingForKeyframe = true }
            if source.setup.id == leg, transportByLeg[leg] != nil, let layers = producers[video]?.layers.indices {
                for spatial in layers { requestKeyframe(video, spatial: spatial, now: now) }
            }
        }
    }

    /// Whether `subscriber` gets `publisher`'s audio and video. The subscriber's streams
    /// for the publisher's open with the first call while the publisher publishes (or when
    /// it starts): an audience of hundreds costs no streams among themselves.
    public func setForwarding(subscriber subscriberLeg: UInt64, publisher publisherLeg: UInt64, audio: Bool, video: Bool, now: Duration) {
        guard let subscriber = transportByLeg[subscriberLeg], subscriberLeg != publisherLeg,
              let publishing = publisher(publisherLeg)?.publishing else { return }
        transports[subscriber]?.wanted[publisherLeg] = (audio, video)
        guard publishing || consumer(of: publisherLeg, kind: .audio, for: subscriber) != nil
                || consumer(of: publisherLeg, kind: .video, for: subscriber) != nil else { return }
        openConsumers(subscriber: subscriber, publisher: publisherLeg, audio: audio, video: video, now: now)
    }

    /// What the router knows of a publishing leg: its setup (keys aside), whether it
    /// publishes, its producers.
    struct Publisher {
        let setup: LegSetup
        let publishing: Bool
        let audio: Producer.ID?
        let video: Producer.ID?
        let created: Duration
    }

    /// The leg `leg` as a publisher, if the router has it.
    func publisher(_ leg: UInt64) -> Publisher? {
        guard let id = transportByLeg[leg], let transport = transports[id] else {
            return remoteLegs[leg].map { Publisher(setup: $0.setup, publishing: $0.publishing, audio: $0.audio, video: $0.video, created: $0.created) }
        }
        return Publisher(setup: transport.setup, publishing: transport.publishing, audio: transport.audio, video: transport.video,
                         created: transport.created)
    }

    /// The consumer `subscriber` has of the stream of `kind` leg `publisher` publishes, if it has one.
    func consumer(of publisher: UInt64, kind: MediaKind, for subscriber: Transport.ID) -> Consumer.ID? {
        guard let source = self.publisher(publisher), let producer = kind == .audio ? source.audio : source.video,
              let consumerIDs = producers[producer]?.consumers else { return nil }
        return consumerIDs.first { consumers[$0]?.subscriber == subscriber }
    }

    private func openConsumers(subscriber: Transport.ID, publisher leg: UInt64, audio: Bool, video: Bool, now: Duration) {
        guard let source = publisher(leg), let subscriberCore = transports[subscriber]?.core else { return }
        for (producerID, wanted) in [(source.audio, audio), (source.video, video)] {
            guard let producerID, let producer = producers[producerID] else { continue }
            let consumerID: Consumer.ID
            if let existing = consumer(of: leg, kind: producer.kind, for: subscriber) {
                consumerID = existing
            } else {
                let setup = source.setup
                guard let subscriberMedia = transports[subscriber]?.setup.media else { continue }
                var stream = producer.kind == .audio
                    ? SendStreamConfiguration(kind: .audio, ssrc: setup.audioSSRC, payloadType: subscriberMedia.audioPayloadType,
                                              clockRate: 48_000)
                    : SendStreamConfiguration(kind: .video, ssrc: setup.videoSSRC ?? 0, payloadType: subscriberMedia.videoPayloadType,
                                              clockRate: VP8.clockRate)
                stream.forwarded = true
                // Between our clients the IDs are the engine's on both sides; a WebRTC peer
                // on either side negotiated its own, and stamps a MID of its description.
                if setup.media != .engine || subscriberMedia != .engine {
                    stream.forwardedExtensions = RTPExtensionTranslation(from: setup.media.extensions, to: subscriberMedia.extensions)
                }
                stream.feedback.history.capacity = configuration.retransmissionHistory
                var retransmissions: RetransmissionMap?
                if producer.kind == .video, let rtx = subscriberMedia.videoRTXPayloadType {
                    stream.rtx = RTXStream(ssrc: RTXStream.ssrc(forVideo: stream.ssrc), payloadType: rtx)
                    retransmissions = RetransmissionMap()
                    for spatial in producer.layers.indices where producer.layers[spatial].history == nil {
                        producer.layers[spatial].history = PublisherHistory()
                    }
                }
                guard let send = try? subscriberCore.addSendStream(stream) else { continue }
                consumerID = consumers.insert(Consumer(subscriber: subscriber, subscriberCore: subscriberCore, producer: producerID,
                                                       publisher: leg, kind: producer.kind, send: send, spatialLayers: producer.layers.count,
                                                       retransmissions: retransmissions))
                producers[producerID]?.consumers.append(consumerID)
                transports[subscriber]?.consumers.append(consumerID)
                if case .remote(let owner) = producer.origin, producers[producerID]?.consumers.count == 1 {
                    workerMessages.append((owner, .subscribe(leg: leg, kind: producer.kind, worker: worker, true)))
                }
            }
            if consumers[consumerID]?.setEnabled(wanted) == true, let spatial = consumers[consumerID]?.targetSpatial {
                requestKeyframe(producerID, spatial: spatial, now: now)
            }
        }
    }

    // MARK: Datagrams

    /// Takes one datagram that arrived on the server's port (net-detect probes are the
    /// caller's): a check signed for a leg's credentials joins its source to the leg and is answered;
    /// a leg's media and RTCP go to its core, and media is forwarded. Decrypts in place.
    /// - Parameter arrival: When the datagram reached the server (its kernel stamp, see
    ///   `ArrivalClock`), what its leg's transport-wide feedback reports; `now` when nil.
    public func handleDatagram(_ datagram: UnsafeMutableRawBufferPointer, from source: SocketAddress, now: Duration,
                               arrival: Duration? = nil) {
        let bytes = UnsafeRawBufferPointer(datagram)
        let kind = DatagramKind(bytes)
        if kind == .stun {
            handleSTUN(datagram, from: source, now: now)
            return
        }
        guard kind == .rtp || kind == .rtcp || kind == .dtls, let id = transportByAddress[source], let transport = transports[id] else {
            if kind != .unknown, let other = addressWorker[source] {
                handOffDatagram(datagram, from: source, to: other, arrival: arrival ?? now)
            } else {
                counters.strangerDatagrams += 1
            }
            return
        }
        if kind == .rtp && !transport.publishing {
            counters.audienceMediaDropped += 1
            return
        }
        guard transport.packets.admit(now: now) else {
            counters.mediaRateLimited += 1
            return
        }
        guard kind != .dtls else {
            // The leg's handshake (a leg keyed over signaling counts it as unknown).
            transport.core.handleDatagram(datagram, from: source, now: now)
            drainEvents(of: transport)
            return
        }
        guard let forwarded = transport.core.handleDatagram(datagram, from: source, now: now, arrival: arrival) else {
            if kind == .rtcp {
                collectKeyframeRequests(of: transport, now: now)
                answerRetransmissionRequests(of: transport, now: now)
                passSenderClocks(of: transport)
            }
            return
        }
        counters.packetsReceived += 1
        // Handed to the other workers first, so that they copy it for their subscribers
        // while this one copies it for its own.
        if let audio = transport.audio, let producer = producers[audio], producer.receive == forwarded.stream {
            handOffMedia(forwarded.packet, of: producer, arrival: arrival ?? now)
            routeAudio(forwarded.packet, of: producer, now: now)
        } else if let video = transport.video, let producer = producers[video], let spatial = producer.layerIndex(of: forwarded.stream) {
            handOffMedia(forwarded.packet, of: producer, spatial: spatial, arrival: arrival ?? now)
            routeVideo(forwarded.packet, of: producer, id: video, spatial: spatial, now: now)
        }
    }

    private func handleSTUN(_ datagram: UnsafeMutableRawBufferPointer, from source: SocketAddress, now: Duration) {
        guard let message = try? STUNMessage(parsing: UnsafeRawBufferPointer(datagram)) else {
            counters.stunMalformed += 1
            counters.strangerDatagrams += 1
            return
        }
        let id: Transport.ID
        if message.type == .bindingRequest {
            guard let username = message.username else {
                switch bindings.respond(to: message, size: datagram.count, from: source, now: now) {
                case .answered: counters.bindingsAnswered += 1
                case .tooSmall: counters.bindingsTooSmall += 1
                case .rateLimited: counters.bindingsRateLimited += 1
                case .dropped: break
                }
                return
            }
            // One with a USERNAME no leg has stays a stranger's: a stale leg's agent must
            // not read an answer as its check succeeding.
            guard let ufrag = username.split(separator: ":", maxSplits: 1).first, let owner = transportByUfrag[String(ufrag)] else {
                if let ufrag = username.split(separator: ":", maxSplits: 1).first, let other = ufragWorker[String(ufrag)] {
                    handOffDatagram(datagram, from: source, to: other, arrival: now)
                } else {
                    counters.strangerDatagrams += 1
                }
                return
            }
            guard transports[owner]?.checks.admit(now: now) == true else {
                counters.checksRateLimited += 1
                return
            }
            id = owner
        } else if let owner = transportByAddress[source] {
            id = owner
        } else if let other = addressWorker[source] {
            handOffDatagram(datagram, from: source, to: other, arrival: now)
            return
        } else {
            counters.strangerDatagrams += 1
            return
        }
        guard let core = transports[id]?.core else { return }
        core.handleDatagram(datagram, from: source, now: now)
        // Only a check the leg's core verified (signed for its credentials) made the source its path.
        guard message.type == .bindingRequest, core.path == source,
              let learned = transports[id]?.learn(source), learned.new else { return }
        if let evicted = learned.evicted, transportByAddress[evicted] == id {
            transportByAddress[evicted] = nil
            tellWorkers(.addressForgotten(evicted))
        }
        if let previous = transportByAddress[source], previous != id { transports[previous]?.forget(source) }
        transportByAddress[source] = id
        addressWorker[source] = nil
        tellWorkers(.addressLearned(source, worker: worker))
    }

    // MARK: Time

    /// When `handleTimeout` next has work.
    public var nextTimeout: Duration? {
        var next = nextSpeakingCheck
        transports.forEach { _, transport in
            if let time = deadline(of: transport) { next = min(next ?? time, time) }
        }
        return next
    }

    /// When one leg next has work: its core's timers, its next bandwidth share, the end of
    /// its allowed silence, its probe's next padding, and its publisher's held-back
    /// keyframe requests.
    func deadline(of transport: Transport) -> Duration? {
        var next = transport.core.nextTimeout
        func consider(_ time: Duration) { next = min(next ?? time, time) }
        if !transport.lost {
            consider(transport.nextAllocation)
            consider(silenceEnds(of: transport))
        }
        if let probe = transport.probe { consider(probe.lastPadding + Self.probeInterval) }
        if let video = transport.video, let producer = producers[video] {
            for spatial in producer.layers.indices {
                if let time = producer.keyframeRequestTime(spatial: spatial, interval: configuration.keyframeRequestInterval) { consider(time) }
            }
        }
        return next
    }

    /// When a leg that stays silent counts as lost: `legTimeout` after its last
    /// authenticated arrival (or its creation).
    func silenceEnds(of transport: Transport) -> Duration {
        (transport.core.lastAuthenticatedArrival ?? transport.created) + configuration.legTimeout
    }

    /// Runs what is due on each leg (reports, feedback and NACKs, the bandwidth shares,
    /// deferred keyframe requests, lost legs), and the speaking reports.
    public func handleTimeout(now: Duration) {
        // Walked in place (no list of IDs copied out each time): nothing below adds or
        // removes a transport. A leg with nothing due is passed by: each has its own
        // timers, and running all of them whenever one was due took a fifth of a worker's
        // time with 100 legs on it.
        transports.forEach { id, transport in
            let due = deadline(of: transport).map { $0 <= now } == true
            if due { transport.core.handleTimeout(now: now) }
            drainEvents(of: transport)
            guard due else { return }
            if !transport.lost, now >= silenceEnds(of: transport) {
                markLost(transport)
            }
            if now >= transport.nextAllocation {
                transport.nextAllocation = now + configuration.allocationInterval
                allocate(id, now: now)
            }
            if transport.probe != nil { padProbe(of: transport, now: now) }
            if let video = transport.video, let producer = producers[video] {
                for spatial in producer.layers.indices
                where producer.keyframeRequestDue(spatial: spatial, now: now, interval: configuration.keyframeRequestInterval) {
                    requestKeyframe(video, spatial: spatial, now: now)
                }
            }
        }
        if nextLayerCheck.map({ now >= $0 }) ?? true {
            nextLayerCheck = now + .milliseconds(250)
            checkWantedLayers(now: now)
        }
        // A simulcast layer that stopped or came back: its subscribers move now, not at their
        // next allocation.
        var stranded: [Transport.ID] = []
        producers.forEach { _, producer in
            guard producer.isSimulcast, producer.expireLayers(now: now) else { return }
            for consumerID in producer.consumers {
                if let consumer = consumers[consumerID], !stranded.contains(consumer.subscriber) { stranded.append(consumer.subscriber) }
            }
        }
        for subscriber in stranded { allocate(subscriber, now: now) }
        if nextSpeakingCheck.map({ now >= $0 }) ?? true {
            nextSpeakingCheck = now + configuration.speakingInterval
            reportSpeaking(now: now)
        }
    }

    // MARK: Output

    /// Calls `body` with every queued datagram: Binding answers, then every leg's, in order
    /// per leg.
    public func drainTransmits(_ body: (Transmit) throws -> Void) rethrows {
        while let answer = bindings.pollTransmit() { try body(answer) }
        try transports.forEach { _, transport in
            while let transmit = transport.core.pollTransmit() { try body(transmit) }
        }
    }

    /// The next report, or nil.
    public func pollReport() -> Report? { reports.next() }

    /// Takes a leg core's events: a DTLS handshake that failed (or an association the peer
    /// closed) ends the leg as lost; the rest is the core's own business here.
    func drainEvents(of transport: Transport) {
        while let event = transport.core.pollEvent() {
            switch event {
            case .dtlsConnected:
                counters.dtlsConnected += 1
            case .dtlsFailed:
                counters.dtlsFailed += 1
                markLost(transport)
            case .dtlsClosed:
                markLost(transport)
            default:
                break
            }
        }
    }

    func markLost(_ transport: Transport) {
        guard !transport.lost else { return }
        transport.lost = true
        counters.legsLost += 1
        reports.append(.legLost(transport.setup.id))
    }
}
