import MediaEngine

/// What one subscriber gets of one producer (mediasoup's consumer): a send stream on the
/// subscriber's transport, the renumbering that keeps that stream continuous however much
/// is held back, and for video the layer that goes and whether it waits for a keyframe.
///
/// A value in the router's consumer table; it names its transports and producer by ID.
struct Consumer {
    typealias ID = Table<Consumer>.ID

    /// What becomes of one packet of the producer's.
    enum Decision {
        /// The subscriber muted this producer for itself.
        case muted
        /// Video held back for the subscriber's bandwidth, or before a keyframe (then the
        /// producer is asked for one).
        case heldBack(needsKeyframe: Bool)
        /// A duplicate or a packet too old to place: nothing is sent.
        case stale
        /// A simulcast layer the subscriber neither gets nor is switching to.
        case otherLayer
        /// Send it on the subscriber's transport, under these numbers.
        case forward(Forwarding)
    }

    /// Where a packet goes and as what.
    struct Forwarding {
        let core: MediaCore
        let send: SendStreamID
        let sequenceNumber: UInt16
        let pictureShift: UInt16
        let tl0Shift: UInt8
        /// What to take off its RTP timestamp (a simulcast layer's, to continue the stream's).
        let timestampShift: UInt32
    }

    let subscriber: Transport.ID
    /// The subscriber transport's core, which protects and queues what goes: read for
    /// every packet, so held here rather than looked up (it is a leaf: it names nothing
    /// of the router's).
    let subscriberCore: MediaCore
    let producer: Producer.ID
    /// The producer's leg (its publishing state, its voice activity, its ID for the order
    /// of videos), wherever it is.
    let publisher: UInt64
    let kind: MediaKind
    let send: SendStreamID
    /// The subscriber wants it (not muted for them).
    var enabled = true
    /// Video: the highest temporal layer the allocation allows (-1: paused).
    var allowedLayer = 3
    var pausedAt: Duration?
    /// Video: the highest temporal layer forwarded now (changes only where decodable).
    var currentLayer = 0
    var waitingForKeyframe = true
    /// Simulcast: the spatial layer forwarded now (it changes at a keyframe of the target),
    /// the one the allocation chose, and since when.
    private(set) var currentSpatial: Int
    private(set) var targetSpatial: Int
    private(set) var targetChangedAt: Duration?
    /// Simulcast: the highest spatial layer the subscriber's shown size needs
    /// (`ForwardingRouter.setVideoSize`).
    var spatialCap = Int.max
    /// Simulcast: the size the subscriber shows the video at, as it last said (nil: it
    /// did not say); the cap follows the layers' sizes as they are learnt.
    var shownSize: (width: Int, height: Int)?
    /// Simulcast: what is taken off each layer's timestamps (the last switch to it set it).
    private var timestampShifts: [UInt32]
    /// Video: the frame being decided, and whether it goes.
    private var framePicture: UInt16?
    private var frameForwarded = false
    private var rewriter = StreamRewriter()
    /// Video: what the newest packet went out as, for a switch to continue it.
    private var lastPictureID: UInt16?
    private var lastTL0: UInt8?
    private var lastTimestamp: UInt32?
    private var lastMarker = true
    private var lastSentAt: Duration = .zero
    /// Simulcast switches made.
    private(set) var spatialSwitches = 0
    /// Video to a subscriber with RTX: what each packet went out as, for its NACKs.
    let retransmissions: RetransmissionMap?

    init(subscriber: Transport.ID, subscriberCore: MediaCore, producer: Producer.ID, publisher: UInt64, kind: MediaKind,
         send: SendStreamID, spatialLayers: Int = 1, retransmissions: RetransmissionMap? = nil) {
        self.retransmissions = retransmissions
        currentSpatial = spatialLayers - 1
        targetSpatial = spatialLayers - 1
        timestampShifts = [UInt32](repeating: 0, count: spatialLayers)
        self.subscriber = subscriber
        self.subscriberCore = subscriberCore
        self.producer = producer
        self.publisher = publisher
        self.kind = kind
        self.send = send
    }

    /// The layer the subscriber gets now (-1: none, paused or before a keyframe).
    var forwardedLayer: Int { enabled && allowedLayer >= 0 && !waitingForKeyframe ? currentLayer : -1 }

    /// An audio packet: forwarded unless muted.
    mutating func decideAudio(sequenceNumber: UInt16) -> Decision {
        guard enabled else {
            rewriter.drop(sequenceNumber: sequenceNumber)
            return .muted
        }
        return numbers(for: sequenceNumber)
    }

    /// The spatial layer the subscriber gets now (-1: none, paused or before a keyframe).
    var forwardedSpatial: Int { forwardedLayer < 0 ? -1 : currentSpatial }

    /// A VP8 packet of spatial layer `spatial` (0 unless simulcast) whose temporal layer is
    /// `layer`. Each frame is decided once, at its first packet seen, so whole frames go or
    /// stay; a switch to the target spatial layer happens at its keyframe's first packet,
    /// and until then the current layer goes on.
    mutating func decideVideo(_ packet: RTPPacketView, spatial: Int, descriptor: VP8PayloadDescriptor, layer: Int, isKeyframe: Bool,
                              of producer: Producer, now: Duration) -> Decision {
        let sequenceNumber = packet.sequenceNumber
        guard enabled else {
            if spatial == currentSpatial { rewriter.drop(sequenceNumber: sequenceNumber, descriptor: descriptor) }
            return .muted
        }
        if spatial != currentSpatial {
            guard spatial == targetSpatial, allowedLayer >= 0 else { return .otherLayer }
            guard isKeyframe else { return .heldBack(needsKeyframe: true) }
            switchLayer(to: spatial, at: packet, descriptor: descriptor, of: producer, now: now)
        }
        // Going up, the current layer keeps its temporal layers until the switch; going
        // down (or staying), it is thinned at once.
        let allowed = targetSpatial > currentSpatial ? 3 : allowedLayer
        let picture = descriptor.pictureID?.value
        if picture.map({ $0 != framePicture }) ?? descriptor.startsFrame {
            framePicture = picture
            if waitingForKeyframe && isKeyframe && allowed >= 0 {
                waitingForKeyframe = false
                currentLayer = max(0, allowed)
            }
            if !waitingForKeyframe {
                // Down at once (upper layers are never references of lower ones); up only
                // where the frame decodes: a sync frame, or one layer above what was sent.
                currentLayer = min(currentLayer, allowed)
                if layer > currentLayer && layer <= allowed && (descriptor.layerSync || layer == currentLayer + 1) {
                    currentLayer = layer
                }
            }
            frameForwarded = !waitingForKeyframe && allowed >= 0 && layer <= currentLayer
        }
        guard frameForwarded else {
            rewriter.drop(sequenceNumber: sequenceNumber, descriptor: descriptor)
            return .heldBack(needsKeyframe: waitingForKeyframe && allowed >= 0 && spatial == targetSpatial)
        }
        let decision = numbers(for: sequenceNumber, timestampShift: timestampShifts[spatial])
        if case .forward(let to) = decision {
            retransmissions?.record(sent: to.sequenceNumber, original: sequenceNumber, spatialLayer: spatial,
                                    pictureShift: to.pictureShift, tl0Shift: to.tl0Shift)
            if to.sequenceNumber == rewriter.lastSequenceNumber {
                lastPictureID = picture.map { $0 &- to.pictureShift }
                lastTL0 = descriptor.tl0PictureIndex.map { $0 &- to.tl0Shift }
                lastTimestamp = packet.timestamp &- to.timestampShift
                lastMarker = packet.marker
                lastSentAt = now
            }
        }
        return decision
    }

    /// What is taken off layer `spatial`'s timestamps now (for its retransmissions).
    func timestampShift(ofLayer spatial: Int) -> UInt32 { spatial < timestampShifts.count ? timestampShifts[spatial] : 0 }

    /// Moves to layer `spatial` at `packet`, the first of its keyframe: its numbers follow
    /// the last ones sent, and its timestamps the last one by the time between them, through
    /// the layers' sender reports when both came (then exactly as captured), else by the
    /// wall clock; never at or before the last one sent (mediasoup and LiveKit do the same).
    private mutating func switchLayer(to spatial: Int, at packet: RTPPacketView, descriptor: VP8PayloadDescriptor, of producer: Producer,
                                      now: Duration) {
        let pictureShift = lastPictureID.map { (descriptor.pictureID?.value ?? 0) &- ($0 &+ 1) } ?? 0
        let tl0Shift = lastTL0.map { (descriptor.tl0PictureIndex ?? 0) &- ($0 &+ 1) } ?? 0
        rewriter.rebase(at: packet.sequenceNumber, skip: !lastMarker, pictureShift: pictureShift, tl0Shift: tl0Shift)
        var shift: UInt32 = 0
        if let lastTimestamp {
            if let new = producer.layers[spatial].timestampOffset, let old = producer.layers[currentSpatial].timestampOffset {
                shift = timestampShifts[currentSpatial] &+ (new &- old)
            } else {
                let elapsed = UInt32(truncatingIfNeeded: Int64((now - lastSentAt) / .seconds(1) * Double(VP8.clockRate)))
                shift = packet.timestamp &- (lastTimestamp &+ elapsed)
            }
            // Never at or before the last one: the layers' frames of one instant come one after
            // another, so the old layer's may have gone just before; one tick on keeps the
            // order with no skew worth the name.
            let ahead = Int32(bitPattern: (packet.timestamp &- shift) &- lastTimestamp)
            if ahead <= 0 { shift = packet.timestamp &- (lastTimestamp &+ 1) }
        }
        timestampShifts[spatial] = shift
        currentSpatial = spatial
        framePicture = nil
        waitingForKeyframe = true
        spatialSwitches += 1
    }

    private mutating func numbers(for sequenceNumber: UInt16, timestampShift: UInt32 = 0) -> Decision {
        guard let numbers = rewriter.forward(sequenceNumber: sequenceNumber) else { return .stale }
        return .forward(Forwarding(core: subscriberCore, send: send, sequenceNumber: numbers.sequenceNumber,
                                   pictureShift: numbers.pictureShift, tl0Shift: numbers.tl0Shift, timestampShift: timestampShift))
    }

    /// The subscriber asks for it again or mutes it. Video turned back on waits for a keyframe.
    /// - Returns: whether the producer should be asked for a keyframe.
    mutating func setEnabled(_ wanted: Bool) -> Bool {
        if wanted && !enabled && kind == .video { waitingForKeyframe = true }
        enabled = wanted
        return wanted && kind == .video && waitingForKeyframe
    }

    /// The allocation's layers for this video: spatial layer `spatial` (0 unless simulcast)
    /// up to temporal layer `layer` (-1: paused).
    /// - Returns: the spatial layer whose keyframe the producer should be asked for (a
    ///   paused video resumes, or the target moved to another layer), or nil.
    mutating func allow(spatial: Int = 0, layer: Int, now: Duration) -> Int? {
        let resumes = allowedLayer < 0 && layer >= 0
        if resumes { waitingForKeyframe = true }
        if allowedLayer >= 0 && layer < 0 { pausedAt = now }
        allowedLayer = layer
        guard layer >= 0 else { return nil }
        if spatial != targetSpatial {
            targetSpatial = spatial
            targetChangedAt = now
        }
        return resumes || targetSpatial != currentSpatial ? targetSpatial : nil
    }
}
