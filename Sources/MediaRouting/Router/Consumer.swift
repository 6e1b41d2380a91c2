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
    /// Video: the highest layer the allocation allows (-1: paused).
    var allowedLayer = 3
    var pausedAt: Duration?
    /// Video: the highest layer forwarded now (changes only where decodable).
    var currentLayer = 0
    var waitingForKeyframe = true
    /// Video: the frame being decided, and whether it goes.
    private var framePicture: UInt16?
    private var frameForwarded = false
    private var rewriter = StreamRewriter()
    /// Video to a subscriber with RTX: what each packet went out as, for its NACKs.
    let retransmissions: RetransmissionMap?

    init(subscriber: Transport.ID, subscriberCore: MediaCore, producer: Producer.ID, publisher: UInt64, kind: MediaKind,
         send: SendStreamID, retransmissions: RetransmissionMap? = nil) {
        self.retransmissions = retransmissions
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

    /// A VP8 packet whose temporal layer is `layer`. Each frame is decided once, at its
    /// first packet seen, so whole frames go or stay.
    mutating func decideVideo(sequenceNumber: UInt16, descriptor: VP8PayloadDescriptor, layer: Int, isKeyframe: Bool) -> Decision {
        guard enabled else {
            rewriter.drop(sequenceNumber: sequenceNumber, descriptor: descriptor)
            return .muted
        }
        let picture = descriptor.pictureID?.value
        if picture.map({ $0 != framePicture }) ?? descriptor.startsFrame {
            framePicture = picture
            if waitingForKeyframe && isKeyframe {
                waitingForKeyframe = false
                currentLayer = max(0, allowedLayer)
            }
            if !waitingForKeyframe {
                // Down at once (upper layers are never references of lower ones); up only
                // where the frame decodes: a sync frame, or one layer above what was sent.
                currentLayer = min(currentLayer, allowedLayer)
                if layer > currentLayer && layer <= allowedLayer && (descriptor.layerSync || layer == currentLayer + 1) {
                    currentLayer = layer
                }
            }
            frameForwarded = !waitingForKeyframe && allowedLayer >= 0 && layer <= currentLayer
        }
        guard frameForwarded else {
            rewriter.drop(sequenceNumber: sequenceNumber, descriptor: descriptor)
            return .heldBack(needsKeyframe: waitingForKeyframe && allowedLayer >= 0)
        }
        let decision = numbers(for: sequenceNumber)
        if let retransmissions, case .forward(let to) = decision {
            retransmissions.record(sent: to.sequenceNumber, original: sequenceNumber, pictureShift: to.pictureShift, tl0Shift: to.tl0Shift)
        }
        return decision
    }

    private mutating func numbers(for sequenceNumber: UInt16) -> Decision {
        guard let numbers = rewriter.forward(sequenceNumber: sequenceNumber) else { return .stale }
        return .forward(Forwarding(core: subscriberCore, send: send, sequenceNumber: numbers.sequenceNumber,
                                   pictureShift: numbers.pictureShift, tl0Shift: numbers.tl0Shift))
    }

    /// The subscriber asks for it again or mutes it. Video turned back on waits for a keyframe.
    /// - Returns: whether the producer should be asked for a keyframe.
    mutating func setEnabled(_ wanted: Bool) -> Bool {
        if wanted && !enabled && kind == .video { waitingForKeyframe = true }
        enabled = wanted
        return wanted && kind == .video && waitingForKeyframe
    }

    /// The allocation's layer for this video.
    /// - Returns: whether the producer should be asked for a keyframe (a paused video resumes).
    mutating func allow(layer: Int, now: Duration) -> Bool {
        let resumes = allowedLayer < 0 && layer >= 0
        if resumes { waitingForKeyframe = true }
        if allowedLayer >= 0 && layer < 0 { pausedAt = now }
        allowedLayer = layer
        return resumes
    }
}
