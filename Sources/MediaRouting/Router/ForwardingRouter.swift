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
        public var id: UInt64
        public var meeting: UInt64
        public var account: String
        public var publishing: Bool
        public var audioSSRC: UInt32
        public var videoSSRC: UInt32?
        /// The participant's key (uplink).
        public var inboundKeying: SRTPKeyingMaterial
        /// The server's key for this leg (downlink).
        public var outboundKeying: SRTPKeyingMaterial
        /// The server's ICE credentials for this leg (ICE-lite): the participant's checks are
        /// signed with them.
        public var ice: ICECredentials

        public init(id: UInt64, meeting: UInt64, account: String, publishing: Bool, audioSSRC: UInt32, videoSSRC: UInt32?,
                    inboundKeying: SRTPKeyingMaterial, outboundKeying: SRTPKeyingMaterial, ice: ICECredentials) {
            self.id = id
            self.meeting = meeting
            self.account = account
            self.publishing = publishing
            self.audioSSRC = audioSSRC
            self.videoSSRC = videoSSRC
            self.inboundKeying = inboundKeying
            self.outboundKeying = outboundKeying
            self.ice = ice
        }

        public var description: String { "LegSetup(\(id), meeting \(meeting), \(account), keys redacted)" }
    }

    /// What the router tells its owner.
    public enum Report: Sendable, Hashable {
        case legLost(UInt64)
        /// Speaking participants of a meeting with their levels (0...1); empty once all are silent.
        case speaking(meeting: UInt64, levels: [String: Double])
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

        public init() {}
    }

    final class Publication {
        let kind: MediaKind
        let receive: ReceiveStreamID
        var targets: [Target] = []
        /// Audio: when the participant last spoke (voice activity over the threshold).
        var spokeAt: Duration?
        /// Video: bytes per temporal layer in the current window, and the cumulative
        /// rates measured over the last one.
        var layerBytes = [Int](repeating: 0, count: 4)
        /// Empty until a full window was measured.
        var layerRates: [Int] = []
        var windowStart: Duration?
        var lastKeyframeRequest: Duration?
        var keyframeWanted = false

        init(kind: MediaKind, receive: ReceiveStreamID) {
            self.kind = kind
            self.receive = receive
        }
    }

    final class Target {
        unowned let subscriber: Leg
        unowned let publisher: Leg
        let publication: Publication
        let send: SendStreamID
        /// The subscriber wants it (not muted for them).
        var enabled = true
        /// Video: the highest layer the allocation allows (-1: paused).
        var allowedLayer = 3
        var pausedAt: Duration?
        /// Video: the highest layer forwarded now (changes only where decodable).
        var currentLayer = 0
        var waitingForKeyframe = true
        /// Video: the frame being decided, and whether it goes.
        var framePicture: UInt16?
        var frameForwarded = false
        var rewriter = StreamRewriter()

        init(subscriber: Leg, publisher: Leg, publication: Publication, send: SendStreamID) {
            self.subscriber = subscriber
            self.publisher = publisher
            self.publication = publication
            self.send = send
        }
    }

    final class Leg {
        let setup: LegSetup
        let core: MediaCore
        var publishing: Bool
        var audio: Publication?
        var video: Publication?
        /// As a subscriber: what it gets of each publisher.
        var targets: [Target] = []
        /// As a subscriber: what it asked for of each leg (by ID), publishing or not.
        var wanted: [UInt64: (audio: Bool, video: Bool)] = [:]
        var addresses: [SocketAddress] = []
        var checks: TokenBucket
        /// Media and RTCP datagrams taken from the leg (`legPacketRate`).
        var packets: TokenBucket
        let created: Duration
        var lost = false
        var nextAllocation: Duration

        init(setup: LegSetup, core: MediaCore, checks: TokenBucket, packets: TokenBucket, now: Duration) {
            self.setup = setup
            self.core = core
            publishing = setup.publishing
            self.checks = checks
            self.packets = packets
            created = now
            nextAllocation = now + .seconds(1)
        }
    }

    public let configuration: Configuration
    public private(set) var counters = Counters()
    var legs: [UInt64: Leg] = [:]
    var legByUfrag: [String: Leg] = [:]
    var legByAddress: [SocketAddress: Leg] = [:]
    var reports: [Report] = []
    var reportHead = 0
    var nextSpeakingCheck: Duration?
    var lastSpeaking: [UInt64: [String: Double]] = [:]
    var random: SeededRandom
    static let maximumAddressesPerLeg = 4
    /// Binding rate per source IP (port 0), and the IPs in the order they were first seen
    /// (a ring once `bindingSources` long: the slot at `bindingOldest` goes next).
    var bindingBuckets: [SocketAddress: TokenBucket] = [:]
    var bindingSourceOrder: [SocketAddress] = []
    var bindingOldest = 0
    /// Binding answers, drained with the legs' datagrams (after every datagram in).
    let bindingAnswers = TransmitQueue(capacity: 64)

    public init(configuration: Configuration = Configuration()) {
        self.configuration = configuration
        random = SeededRandom(seed: configuration.seed)
    }

    deinit {
        // A publication lists its targets and each target keeps its publication: without
        // breaking that cycle, a router dropped with legs open kept them all (and their
        // targets' legs) allocated.
        for leg in legs.values {
            leg.audio?.targets.removeAll()
            leg.video?.targets.removeAll()
            leg.targets.removeAll()
        }
    }

    /// Legs open now.
    public var legCount: Int { legs.count }

    // MARK: Legs and forwarding

    /// Opens a leg; it sends and receives once a check signed for its credentials arrives.
    /// - Throws: `MediaCoreError` for a key libsrtp refuses, a leg ID or ufrag already in
    ///   use, or when `maximumLegs` are open.
    public func addLeg(_ setup: LegSetup, now: Duration) throws(MediaCoreError) {
        guard legs[setup.id] == nil, legByUfrag[setup.ice.ufrag] == nil, !setup.ice.ufrag.isEmpty, !setup.ice.password.isEmpty else {
            counters.legsRefused += 1
            throw MediaCoreError(.configuration, "leg \(setup.id): its ID or ICE ufrag is already in use")
        }
        guard legs.count < configuration.maximumLegs else {
            counters.legsRefused += 1
            throw MediaCoreError(.configuration, "leg \(setup.id): the server holds its maximum of \(configuration.maximumLegs) legs")
        }
        var settings = MediaCore.Configuration()
        settings.outboundKeying = setup.outboundKeying
        settings.inboundKeying = setup.inboundKeying
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
        let leg = Leg(setup: setup, core: core, checks: TokenBucket(rate: configuration.checkRate, burst: configuration.checkBurst),
                      packets: TokenBucket(rate: configuration.legPacketRate, burst: configuration.legPacketBurst), now: now)
        var audio = ReceiveStreamConfiguration.opus(ssrc: setup.audioSSRC)
        audio.forwarding = true
        audio.participant = setup.account
        leg.audio = Publication(kind: .audio, receive: try core.addReceiveStream(audio))
        if let ssrc = setup.videoSSRC {
            var video = ReceiveStreamConfiguration.vp8(ssrc: ssrc)
            video.forwarding = true
            video.participant = setup.account
            leg.video = Publication(kind: .video, receive: try core.addReceiveStream(video))
        }
        legs[setup.id] = leg
        legByUfrag[setup.ice.ufrag] = leg
    }

    /// Closes a leg: its streams end for every subscriber (BYE), and it gets nothing more.
    public func removeLeg(_ id: UInt64, now: Duration) {
        guard let leg = legs.removeValue(forKey: id) else { return }
        legByUfrag[leg.setup.ice.ufrag] = nil
        for address in leg.addresses where legByAddress[address] === leg { legByAddress[address] = nil }
        for publication in [leg.audio, leg.video].compactMap({ $0 }) {
            for target in publication.targets {
                target.subscriber.core.removeSendStream(target.send, now: now)
                // Its subscriber must forget it too: a target outliving its publisher's leg
                // reads a destroyed `unowned` leg (the next allocation trapped on it).
                target.subscriber.targets.removeAll { $0 === target }
            }
            publication.targets.removeAll()
        }
        for target in leg.targets {
            target.publication.targets.removeAll { $0 === target }
        }
        leg.targets.removeAll()
        for other in legs.values { other.wanted[id] = nil }
        lastSpeaking[leg.setup.meeting] = lastSpeaking[leg.setup.meeting].map { $0.filter { $0.key != leg.setup.account } }
    }

    /// Whether a leg's media is forwarded (actor) or dropped unread (audience). A leg that
    /// starts publishing gets its subscribers' streams opened (as they asked for them).
    public func setPublishing(_ id: UInt64, _ publishing: Bool, now: Duration) {
        guard let leg = legs[id], leg.publishing != publishing else { return }
        leg.publishing = publishing
        guard publishing else { return }
        for subscriber in legs.values {
            if let wanted = subscriber.wanted[id] { openTargets(subscriber: subscriber, publisher: leg, audio: wanted.audio, video: wanted.video, now: now) }
        }
        if let video = leg.video {
            for target in video.targets { target.waitingForKeyframe = true }
            requestKeyframe(leg, video, now: now)
        }
    }

    /// Whether `subscriber` gets `publisher`'s audio and video. The subscriber's streams
    /// for the publisher's open with the first call while the publisher publishes (or when
    /// it starts): an audience of hundreds costs no streams among themselves.
    public func setForwarding(subscriber subscriberID: UInt64, publisher publisherID: UInt64, audio: Bool, video: Bool, now: Duration) {
        guard let subscriber = legs[subscriberID], let publisher = legs[publisherID], subscriber !== publisher else { return }
        subscriber.wanted[publisherID] = (audio, video)
        let opened = [publisher.audio, publisher.video].contains { $0?.targets.contains { $0.subscriber === subscriber } == true }
        guard publisher.publishing || opened else { return }
        openTargets(subscriber: subscriber, publisher: publisher, audio: audio, video: video, now: now)
    }

    private func openTargets(subscriber: Leg, publisher: Leg, audio: Bool, video: Bool, now: Duration) {
        for (publication, wanted) in [(publisher.audio, audio), (publisher.video, video)] {
            guard let publication else { continue }
            let target: Target
            if let existing = publication.targets.first(where: { $0.subscriber === subscriber }) {
                target = existing
            } else {
                let ssrc = publication.kind == .audio ? publisher.setup.audioSSRC : publisher.setup.videoSSRC ?? 0
                var stream = publication.kind == .audio ? SendStreamConfiguration.opus(ssrc: ssrc) : SendStreamConfiguration.vp8(ssrc: ssrc)
                stream.forwarded = true
                stream.feedback.history.capacity = configuration.retransmissionHistory
                guard let send = try? subscriber.core.addSendStream(stream) else { continue }
                target = Target(subscriber: subscriber, publisher: publisher, publication: publication, send: send)
                publication.targets.append(target)
                subscriber.targets.append(target)
            }
            if wanted && !target.enabled && publication.kind == .video { target.waitingForKeyframe = true }
            target.enabled = wanted
            if wanted && publication.kind == .video && target.waitingForKeyframe { requestKeyframe(publisher, publication, now: now) }
        }
    }

    // MARK: Datagrams

    /// Takes one datagram that arrived on the server's port (net-detect probes are the
    /// caller's): a check signed for a leg's credentials joins its source to the leg and is answered;
    /// a leg's media and RTCP go to its core, and media is forwarded. Decrypts in place.
    public func handleDatagram(_ datagram: UnsafeMutableRawBufferPointer, from source: SocketAddress, now: Duration) {
        let bytes = UnsafeRawBufferPointer(datagram)
        let kind = DatagramKind(bytes)
        if kind == .stun {
            handleCheck(datagram, from: source, now: now)
            return
        }
        guard kind == .rtp || kind == .rtcp, let leg = legByAddress[source] else {
            counters.strangerDatagrams += 1
            return
        }
        if kind == .rtp && !leg.publishing {
            counters.audienceMediaDropped += 1
            return
        }
        guard leg.packets.admit(now: now) else {
            counters.mediaRateLimited += 1
            return
        }
        guard let forwarded = leg.core.handleDatagram(datagram, from: source, now: now) else {
            if kind == .rtcp {
                collectKeyframeRequests(of: leg, now: now)
                passSenderClocks(of: leg)
            }
            return
        }
        counters.packetsReceived += 1
        if let audio = leg.audio, forwarded.stream == audio.receive {
            routeAudio(forwarded.packet, of: leg, audio, now: now)
        } else if let video = leg.video, forwarded.stream == video.receive {
            routeVideo(forwarded.packet, of: leg, video, now: now)
        }
    }

    private func handleCheck(_ datagram: UnsafeMutableRawBufferPointer, from source: SocketAddress, now: Duration) {
        guard let message = try? STUNMessage(parsing: UnsafeRawBufferPointer(datagram)) else {
            counters.stunMalformed += 1
            counters.strangerDatagrams += 1
            return
        }
        let leg: Leg
        if message.type == .bindingRequest {
            guard let username = message.username else {
                answerBinding(message, size: datagram.count, from: source, now: now)
                return
            }
            guard let ufrag = username.split(separator: ":", maxSplits: 1).first, let owner = legByUfrag[String(ufrag)] else {
                counters.strangerDatagrams += 1
                return
            }
            guard owner.checks.admit(now: now) else {
                counters.checksRateLimited += 1
                return
            }
            leg = owner
        } else if let owner = legByAddress[source] {
            leg = owner
        } else {
            counters.strangerDatagrams += 1
            return
        }
        leg.core.handleDatagram(datagram, from: source, now: now)
        // Only a check the leg's core verified (signed for its credentials) made the source its path.
        guard message.type == .bindingRequest, leg.core.path == source, !leg.addresses.contains(source) else { return }
        if let previous = legByAddress[source], previous !== leg {
            previous.addresses.removeAll { $0 == source }
        }
        if leg.addresses.count >= Self.maximumAddressesPerLeg {
            let oldest = leg.addresses.removeFirst()
            if legByAddress[oldest] === leg { legByAddress[oldest] = nil }
        }
        leg.addresses.append(source)
        legByAddress[source] = leg
    }

    /// Answers a Binding request without credentials with `source`, if it is at least as
    /// large as the answer and its source IP is within its rate.
    private func answerBinding(_ request: STUNMessage, size: Int, from source: SocketAddress, now: Duration) {
        let answer = STUNBinding.answer(to: request, from: source)
        guard answer.serializedSize <= size else {
            counters.bindingsTooSmall += 1
            return
        }
        guard admitBinding(from: source, now: now) else {
            counters.bindingsRateLimited += 1
            return
        }
        let queued = bindingAnswers.enqueue(to: source, socket: 0, kind: .stun) { slot in
            (try? answer.serialize(into: slot)) ?? 0
        }
        if queued { counters.bindingsAnswered += 1 }
    }

    /// Takes a token from `source`'s IP's bucket, tracking the IP first if it is new.
    private func admitBinding(from source: SocketAddress, now: Duration) -> Bool {
        let key = source.with(port: 0)
        if var bucket = bindingBuckets[key] {
            let admitted = bucket.admit(now: now)
            bindingBuckets[key] = bucket
            return admitted
        }
        var bucket = TokenBucket(rate: configuration.bindingRate, burst: configuration.bindingBurst)
        let admitted = bucket.admit(now: now)
        if bindingSourceOrder.count < max(1, configuration.bindingSources) {
            bindingSourceOrder.append(key)
        } else {
            bindingBuckets[bindingSourceOrder[bindingOldest]] = nil
            bindingSourceOrder[bindingOldest] = key
            bindingOldest = (bindingOldest + 1) % bindingSourceOrder.count
        }
        bindingBuckets[key] = bucket
        return admitted
    }

    /// Source IPs whose binding rate is tracked now.
    var bindingSourceCount: Int { bindingBuckets.count }

    private func routeAudio(_ packet: RTPPacketView, of publisher: Leg, _ audio: Publication, now: Duration) {
        if let id = RTPExtensionMap.standard.id(for: RTPExtensionMap.audioLevelURI), let value = packet.extensionValue(id: id),
           value.count >= 1 {
            let level = AudioLevel(byte: value[0])
            if level.voiceActivity { audio.spokeAt = now }
        }
        for target in audio.targets {
            guard target.enabled else {
                target.rewriter.drop(sequenceNumber: packet.sequenceNumber)
                counters.mutedPacketsSkipped += 1
                continue
            }
            guard let numbers = target.rewriter.forward(sequenceNumber: packet.sequenceNumber) else { continue }
            if target.subscriber.core.forward(target.send, packet: packet, sequenceNumber: numbers.sequenceNumber, now: now) {
                counters.packetsForwarded += 1
                counters.bytesForwarded += packet.bytes.count
            }
        }
    }

    private func routeVideo(_ packet: RTPPacketView, of publisher: Leg, _ video: Publication, now: Duration) {
        let payload = UnsafeRawBufferPointer(rebasing: packet.bytes[packet.payloadRange])
        guard let (descriptor, size) = try? VP8PayloadDescriptor.parse(payload) else { return }
        let layer = Int(min(descriptor.temporalLayerID ?? 0, 3))
        let isKeyframe = descriptor.startsFrame && size < payload.count && payload[size] & 0x01 == 0
        meter(video, layer: layer, bytes: packet.bytes.count, now: now)
        let picture = descriptor.pictureID?.value
        for target in video.targets {
            guard target.enabled else {
                target.rewriter.drop(sequenceNumber: packet.sequenceNumber, descriptor: descriptor)
                counters.mutedPacketsSkipped += 1
                continue
            }
            // Each frame is decided once, at its first packet seen: whole frames go or stay.
            let newFrame = picture.map { $0 != target.framePicture } ?? descriptor.startsFrame
            if newFrame {
                target.framePicture = picture
                if target.waitingForKeyframe && isKeyframe {
                    target.waitingForKeyframe = false
                    target.currentLayer = max(0, target.allowedLayer)
                }
                if !target.waitingForKeyframe {
                    // Down at once (upper layers are never references of lower ones); up only
                    // where the frame decodes: a sync frame, or one layer above what was sent.
                    target.currentLayer = min(target.currentLayer, target.allowedLayer)
                    if layer > target.currentLayer && layer <= target.allowedLayer
                        && (descriptor.layerSync || layer == target.currentLayer + 1) {
                        target.currentLayer = layer
                    }
                }
                target.frameForwarded = !target.waitingForKeyframe && target.allowedLayer >= 0 && layer <= target.currentLayer
            }
            guard target.frameForwarded else {
                target.rewriter.drop(sequenceNumber: packet.sequenceNumber, descriptor: descriptor)
                counters.videoPacketsHeldBack += 1
                if target.waitingForKeyframe && target.allowedLayer >= 0 { requestKeyframe(publisher, video, now: now) }
                continue
            }
            guard let numbers = target.rewriter.forward(sequenceNumber: packet.sequenceNumber) else { continue }
            let sent = target.subscriber.core.forward(target.send, packet: packet, sequenceNumber: numbers.sequenceNumber,
                                                      isKeyframe: isKeyframe, now: now) { payload in
                StreamRewriter.shiftVP8(payload, pictureShift: numbers.pictureShift, tl0Shift: numbers.tl0Shift)
            }
            if sent {
                counters.packetsForwarded += 1
                counters.bytesForwarded += packet.bytes.count
            }
        }
    }

    /// Adds a video packet to its layer's count; each second the cumulative layer rates
    /// are measured anew.
    private func meter(_ video: Publication, layer: Int, bytes: Int, now: Duration) {
        guard let start = video.windowStart else {
            video.windowStart = now
            video.layerBytes[layer] += bytes
            return
        }
        let elapsed = now - start
        if elapsed >= .seconds(1) {
            let deepest = video.layerBytes.lastIndex { $0 > 0 } ?? 0
            var total = 0
            video.layerRates = (0...deepest).map { index in
                total += video.layerBytes[index]
                return Int(Double(total * 8) / (elapsed / .seconds(1)))
            }
            for index in video.layerBytes.indices { video.layerBytes[index] = 0 }
            video.windowStart = now
        }
        video.layerBytes[layer] += bytes
    }

    /// Asks a publisher for a keyframe, at most once per interval (a later wish is kept
    /// and sent when the interval has passed).
    private func requestKeyframe(_ publisher: Leg, _ video: Publication, now: Duration) {
        if let last = video.lastKeyframeRequest, now - last < configuration.keyframeRequestInterval {
            video.keyframeWanted = true
            return
        }
        video.lastKeyframeRequest = now
        video.keyframeWanted = false
        publisher.core.requestKeyframe(video.receive)
        counters.keyframeRequestsSent += 1
    }

    /// Subscribers' PLIs and FIRs (their leg's responder coalesced them) become requests
    /// to the publishers.
    private func collectKeyframeRequests(of subscriber: Leg, now: Duration) {
        for target in subscriber.targets where target.publication.kind == .video {
            if subscriber.core.shouldForceKeyframe(target.send, now: now) {
                requestKeyframe(target.publisher, target.publication, now: now)
            }
        }
    }

    /// A publisher's sender reports state its media clock; each subscriber's reports about
    /// the forwarded streams keep that mapping, so audio and video stay in sync there.
    private func passSenderClocks(of publisher: Leg) {
        for publication in [publisher.audio, publisher.video].compactMap({ $0 }) {
            guard let clock = publisher.core.senderClock(of: publication.receive) else { continue }
            for target in publication.targets {
                target.subscriber.core.setSenderClock(target.send, timestamp: clock.timestamp, at: clock.arrival)
            }
        }
    }

    // MARK: Time

    /// When `handleTimeout` next has work.
    public var nextTimeout: Duration? {
        var next = nextSpeakingCheck
        for leg in legs.values {
            if let time = leg.core.nextTimeout { next = min(next ?? time, time) }
            if !leg.lost { next = min(next ?? leg.nextAllocation, leg.nextAllocation) }
        }
        return next
    }

    /// Runs every leg's reports, feedback and NACKs, the bandwidth shares, deferred
    /// keyframe requests, lost legs and speaking reports.
    public func handleTimeout(now: Duration) {
        for leg in legs.values {
            leg.core.handleTimeout(now: now)
            if !leg.lost, now - (leg.core.lastAuthenticatedArrival ?? leg.created) > configuration.legTimeout {
                leg.lost = true
                counters.legsLost += 1
                reports.append(.legLost(leg.setup.id))
            }
            if now >= leg.nextAllocation {
                leg.nextAllocation = now + configuration.allocationInterval
                allocate(leg, now: now)
            }
            if let video = leg.video, video.keyframeWanted, let last = video.lastKeyframeRequest,
               now - last >= configuration.keyframeRequestInterval {
                requestKeyframe(leg, video, now: now)
            }
        }
        if nextSpeakingCheck.map({ now >= $0 }) ?? true {
            nextSpeakingCheck = now + configuration.speakingInterval
            reportSpeaking(now: now)
        }
    }

    /// Shares a subscriber's estimate out among its videos, most recent speakers first.
    private func allocate(_ leg: Leg, now: Duration) {
        let videos = leg.targets.filter { $0.publication.kind == .video && $0.enabled }
        guard !videos.isEmpty else { return }
        let audios = leg.targets.filter { $0.publication.kind == .audio && $0.enabled && $0.publisher.publishing }.count
        let budget = leg.core.bandwidthEstimator.targetBitrate - audios * configuration.audioAllowance
        // A video whose rates are not measured yet keeps what it has.
        let ordered = videos.filter { $0.publisher.publishing && !$0.publication.layerRates.isEmpty }.sorted { first, second in
            let a = first.publisher.audio?.spokeAt ?? first.publisher.created - .seconds(86_400)
            let b = second.publisher.audio?.spokeAt ?? second.publisher.created - .seconds(86_400)
            return a != b ? a > b : first.publisher.setup.id < second.publisher.setup.id
        }
        let layers = LayerAllocator.allocate(budget: budget, videos: ordered.map { target in
            // A video within its pause hold cannot fit (and so holds the others at their base).
            let held = target.allowedLayer < 0 && target.pausedAt.map { now - $0 < configuration.pauseHold } == true
            return LayerAllocator.Video(layerRates: held ? [Int.max / 4] : target.publication.layerRates,
                                        current: target.allowedLayer < 0 ? -1 : target.currentLayer)
        })
        for (target, layer) in zip(ordered, layers) {
            if target.allowedLayer < 0 && layer >= 0 {
                target.waitingForKeyframe = true
                requestKeyframe(target.publisher, target.publication, now: now)
            }
            if target.allowedLayer >= 0 && layer < 0 { target.pausedAt = now }
            target.allowedLayer = layer
        }
    }

    private func reportSpeaking(now: Duration) {
        var meetings: [UInt64: [String: Double]] = [:]
        for leg in legs.values where leg.publishing {
            guard let audio = leg.audio, let spoke = audio.spokeAt, now - spoke <= configuration.speakingInterval,
                  let level = leg.core.recentAudioLevel(audio.receive, now: now, window: configuration.speakingInterval) else {
                if meetings[leg.setup.meeting] == nil { meetings[leg.setup.meeting] = [:] }
                continue
            }
            meetings[leg.setup.meeting, default: [:]][leg.setup.account] = level.amplitude
        }
        for meeting in meetings.keys.sorted() {
            let levels = meetings[meeting] ?? [:]
            let before = lastSpeaking[meeting] ?? [:]
            guard !levels.isEmpty || !before.isEmpty else { continue }
            lastSpeaking[meeting] = levels
            reports.append(.speaking(meeting: meeting, levels: levels))
        }
        for meeting in lastSpeaking.keys where meetings[meeting] == nil { lastSpeaking[meeting] = nil }
    }

    // MARK: Output

    /// Calls `body` with every queued datagram: Binding answers, then every leg's, in order
    /// per leg.
    public func drainTransmits(_ body: (Transmit) throws -> Void) rethrows {
        while let answer = bindingAnswers.dequeue() { try body(answer) }
        for leg in legs.values {
            while let transmit = leg.core.pollTransmit() { try body(transmit) }
        }
    }

    /// The next report, or nil.
    public func pollReport() -> Report? {
        guard reportHead < reports.count else {
            if reportHead > 0 {
                reports.removeAll(keepingCapacity: true)
                reportHead = 0
            }
            return nil
        }
        defer { reportHead += 1 }
        return reports[reportHead]
    }

    // MARK: Figures

    /// Media and RTCP that failed SRTP authentication, over all legs.
    public var authenticationFailures: Int {
        legs.values.reduce(0) { total, leg in
            let streams = [leg.audio, leg.video].compactMap { $0 }.reduce(0) {
                $0 + (leg.core.statistics(of: $1.receive)?.authenticationFailures ?? 0)
            }
            return total + streams + leg.core.transportStatistics.rtcpAuthenticationFailures
        }
    }

    /// Replayed media and RTCP, over all legs.
    public var replays: Int {
        legs.values.reduce(0) { total, leg in
            let streams = [leg.audio, leg.video].compactMap { $0 }.reduce(0) { $0 + (leg.core.statistics(of: $1.receive)?.replays ?? 0) }
            return total + streams + leg.core.transportStatistics.rtcpReplays
        }
    }

    /// One leg's figures, for monitoring (`/metrics`).
    public struct LegStatistics: Sendable, Hashable {
        public var id: UInt64
        public var meeting: UInt64
        public var account: String
        /// Uplink: media that came from the participant, and what was lost on the way.
        public var packetsReceived = 0
        public var packetsLost = 0
        /// Downlink: media sent to it, and what its reports say was lost (cumulative, and
        /// the worst stream's share in its latest report).
        public var packetsSent = 0
        public var packetsLostDownlink = 0
        public var fractionLostDownlink = 0.0
        /// Feedback from it as a subscriber (NACK and PLI/FIR packets), and sent to it as a
        /// publisher (NACKs for its uplink, keyframe requests).
        public var nacksReceived = 0
        public var keyframeRequestsReceived = 0
        public var nacksSent = 0
        public var keyframeRequestsSent = 0
        /// SRTP and SRTCP packets that failed authentication or were replays.
        public var authenticationFailures = 0
        /// The downlink's bandwidth estimate (b/s).
        public var estimatedBitrate = 0

        public init(id: UInt64, meeting: UInt64, account: String) {
            self.id = id
            self.meeting = meeting
            self.account = account
        }
    }

    /// Every open leg's figures, by leg ID.
    public var legStatistics: [LegStatistics] {
        legs.values.sorted { $0.setup.id < $1.setup.id }.map { leg in
            var figures = LegStatistics(id: leg.setup.id, meeting: leg.setup.meeting, account: leg.setup.account)
            for publication in [leg.audio, leg.video] {
                guard let publication, let inbound = leg.core.statistics(of: publication.receive) else { continue }
                figures.packetsReceived += inbound.packetsReceived
                figures.packetsLost += max(0, inbound.packetsLost)
                figures.nacksSent += inbound.nackSent
                figures.keyframeRequestsSent += inbound.pliSent + inbound.firSent
                figures.authenticationFailures += inbound.authenticationFailures + inbound.replays
            }
            for target in leg.targets {
                guard let outbound = leg.core.statistics(of: target.send) else { continue }
                figures.packetsSent += outbound.packetsSent
                figures.nacksReceived += outbound.nackCount
                figures.keyframeRequestsReceived += outbound.pliCount + outbound.firCount
                if let report = outbound.remoteReport {
                    figures.packetsLostDownlink += max(0, report.packetsLost)
                    figures.fractionLostDownlink = max(figures.fractionLostDownlink, report.fractionLost)
                }
            }
            let transport = leg.core.transportStatistics
            figures.authenticationFailures += transport.rtcpAuthenticationFailures + transport.rtcpReplays
            figures.estimatedBitrate = leg.core.bandwidthEstimator.targetBitrate
            return figures
        }
    }

    /// A leg's transport counters (SRTP failures, foreign paths, feedback).
    public func transportStatistics(ofLeg id: UInt64) -> TransportStatistics? { legs[id]?.core.transportStatistics }

    /// A subscriber leg's bandwidth estimate (b/s).
    public func estimatedBitrate(ofLeg id: UInt64) -> Int? { legs[id]?.core.bandwidthEstimator.targetBitrate }

    /// What `subscriber` was sent of `publisher`'s streams: packets per kind.
    public func forwardedPackets(to subscriber: UInt64, from publisher: UInt64) -> (audio: Int, video: Int) {
        guard let leg = legs[subscriber] else { return (0, 0) }
        var result = (audio: 0, video: 0)
        for target in leg.targets where target.publisher.setup.id == publisher {
            let sent = leg.core.statistics(of: target.send)?.packetsSent ?? 0
            if target.publication.kind == .audio { result.audio = sent } else { result.video = sent }
        }
        return result
    }

    /// The highest temporal layer `subscriber` gets of `publisher`'s video now (-1: paused
    /// or none).
    public func forwardedLayer(to subscriber: UInt64, from publisher: UInt64) -> Int {
        guard let target = legs[subscriber]?.targets.first(where: { $0.publisher.setup.id == publisher && $0.publication.kind == .video }),
              target.enabled, target.allowedLayer >= 0, !target.waitingForKeyframe else { return -1 }
        return target.currentLayer
    }

    /// The cumulative bitrates of a publisher's video layers, as last measured (b/s).
    public func layerRates(ofLeg id: UInt64) -> [Int] { legs[id]?.video?.layerRates ?? [] }
}
