import MediaEngine

/// One stream a participant publishes (mediasoup's producer): its receive streams on the
/// publisher's transport (one, or a simulcast video's layers), the consumers it goes to,
/// and what the router learns from it (when the participant last spoke; the rate of each
/// layer) or owes it (keyframe requests held back by the interval).
///
/// An object in the router's producer table (read for every packet it sends: a class keeps
/// that to one reference); it names its transport and consumers by ID.
final class Producer {
    typealias ID = Table<Producer>.ID

    /// Where its packets come from: a transport of this router's (decrypted there), or
    /// another forwarding worker that hands them over decrypted.
    enum Origin: Equatable {
        case local(Transport.ID)
        case remote(worker: Int)
    }

    /// One stream of it: the only one, or one spatial layer of a simulcast video (lowest
    /// first), each its own SSRC, sequence numbers, timestamps and VP8 PictureIDs.
    struct Layer {
        /// Its receive stream on the publisher's transport (nil for one from another worker).
        let receive: ReceiveStreamID?
        /// Its picture size as the publisher announced it or its last keyframe said (0
        /// before either).
        var width: Int
        var height: Int
        /// Video: the cumulative rates of its temporal layers over the last full window;
        /// empty until one was measured, or once it stopped.
        var rates: [Int] = []
        /// The rates it had when it last stopped: what it will likely take when it comes
        /// back, until measured anew.
        var previousRates: [Int] = []
        var bytes = [Int](repeating: 0, count: 4)
        var windowStart: Duration?
        var lastArrival: Duration?
        /// Its timestamps less layer 0's at the same instant, from both layers' sender
        /// reports (nil until both came).
        var timestampOffset: UInt32?
        /// Video with subscribers that take RTX: its recent packets, kept once for all of them.
        var history: PublisherHistory?
        var lastKeyframeRequest: Duration?
        /// A request the interval held back, sent once it has passed.
        var keyframeWanted = false
        /// Simulcast: when a subscriber last could use it (its shown size reaches it, or it
        /// gets it now).
        var wantedAt: Duration?

        init(receive: ReceiveStreamID?, width: Int = 0, height: Int = 0) {
            self.receive = receive
            self.width = width
            self.height = height
        }
    }

    /// A layer with no packet for this long has stopped: nobody is switched to it.
    static let layerTimeout: Duration = .milliseconds(500)
    /// Simulcast: the layers live at the last look (a bit per layer).
    private var liveLayers: UInt8 = 0

    let kind: MediaKind
    let origin: Origin
    /// The publisher's leg.
    let leg: UInt64
    var layers: [Layer]
    /// Local: the other workers that have subscribers of it (it hands them every packet).
    var remoteWorkers: [Int] = []
    var consumers: [Consumer.ID] = []
    /// Audio: when the participant last spoke (voice activity over the threshold).
    var spokeAt: Duration?

    /// Audio: the ID of the RFC 6464 level in the publisher's packets.
    let audioLevelID: UInt8?
    /// Simulcast, local: the layers other workers' subscribers can use, by worker (a bit
    /// per layer); and the layers the publisher was last told to send.
    var remoteWantedLayers: [Int: UInt8] = [:]
    var activeLayers: UInt8
    /// Simulcast, remote: the layers last told to its owner.
    var toldWantedLayers: UInt8?

    init(kind: MediaKind, origin: Origin, leg: UInt64, layers: [Layer], audioLevelID: UInt8? = nil) {
        precondition(!layers.isEmpty && layers.count <= 4)
        self.kind = kind
        self.origin = origin
        self.leg = leg
        self.layers = layers
        self.audioLevelID = audioLevelID
        activeLayers = UInt8((1 << layers.count) - 1)
    }

    convenience init(kind: MediaKind, origin: Origin, leg: UInt64, receive: ReceiveStreamID?, audioLevelID: UInt8? = nil) {
        self.init(kind: kind, origin: origin, leg: leg, layers: [Layer(receive: receive)], audioLevelID: audioLevelID)
    }

    /// Its first stream's (the only one, or simulcast layer 0).
    var receive: ReceiveStreamID? { layers[0].receive }

    var isSimulcast: Bool { layers.count > 1 }

    /// The highest layer a subscriber showing the video at `width`x`height` needs: the
    /// smallest at least 90 % of that size each way (else the top; 0 when hidden).
    func spatialCap(width: Int, height: Int) -> Int {
        guard width > 0, height > 0 else { return 0 }
        return layers.indices.first { layers[$0].width * 10 >= width * 9 && layers[$0].height * 10 >= height * 9 } ?? layers.count - 1
    }

    /// The layer `stream` carries, if it is one of its streams (a search of at most four).
    func layerIndex(of stream: ReceiveStreamID) -> Int? {
        for index in layers.indices where layers[index].receive == stream { return index }
        return nil
    }

    /// Whether layer `spatial` sent within `layerTimeout` and has rates (measured, or those
    /// it had before it stopped).
    func isLive(_ spatial: Int, now: Duration) -> Bool {
        guard let last = layers[spatial].lastArrival else { return false }
        return now - last <= Self.layerTimeout && !rates(of: spatial).isEmpty
    }

    /// Layer `spatial`'s temporal layer rates: measured, or else those it had before it stopped.
    func rates(of spatial: Int) -> [Int] { layers[spatial].rates.isEmpty ? layers[spatial].previousRates : layers[spatial].rates }

    /// Adds a video packet of spatial layer `spatial` to its temporal layer's count; each
    /// second that layer's cumulative rates are measured anew.
    func meter(spatial: Int, layer: Int, bytes: Int, now: Duration) {
        layers[spatial].lastArrival = now
        guard let start = layers[spatial].windowStart else {
            layers[spatial].windowStart = now
            layers[spatial].bytes[layer] += bytes
            return
        }
        let elapsed = now - start
        if elapsed >= .seconds(1) {
            // A window that spans a stop of the layer measures from its restart.
            let counted = layers[spatial].bytes
            let deepest = counted.lastIndex { $0 > 0 } ?? 0
            var total = 0
            layers[spatial].rates = elapsed > .seconds(2) ? [] : (0...deepest).map { index in
                total += counted[index]
                return Int(Double(total * 8) / (elapsed / .seconds(1)))
            }
            for index in counted.indices { layers[spatial].bytes[index] = 0 }
            layers[spatial].windowStart = now
        }
        layers[spatial].bytes[layer] += bytes
    }

    /// Forgets the rates of layers that stopped sending (a window whose layer went quiet
    /// is never closed by a packet; they are kept as `previousRates`), and notes which
    /// layers are live.
    /// - Returns: whether a layer stopped or came back since the last look.
    @discardableResult
    func expireLayers(now: Duration) -> Bool {
        var live: UInt8 = 0
        for index in layers.indices {
            if let last = layers[index].lastArrival, now - last > Self.layerTimeout, !layers[index].rates.isEmpty {
                layers[index].previousRates = layers[index].rates
                layers[index].rates = []
                layers[index].windowStart = nil
                for slot in layers[index].bytes.indices { layers[index].bytes[slot] = 0 }
            }
            if isLive(index, now: now) { live |= 1 << index }
        }
        defer { liveLayers = live }
        return live != liveLayers
    }

    /// A keyframe of layer `spatial` is wanted: at most one request per `interval` goes to
    /// the publisher (a later wish is kept until the interval has passed).
    /// - Returns: whether to send the request now.
    func wantsKeyframe(spatial: Int = 0, now: Duration, interval: Duration) -> Bool {
        if let last = layers[spatial].lastKeyframeRequest, now - last < interval {
            layers[spatial].keyframeWanted = true
            return false
        }
        layers[spatial].lastKeyframeRequest = now
        layers[spatial].keyframeWanted = false
        return true
    }

    /// Whether a held-back request for layer `spatial` is due.
    func keyframeRequestDue(spatial: Int = 0, now: Duration, interval: Duration) -> Bool {
        keyframeRequestTime(spatial: spatial, interval: interval).map { now >= $0 } ?? false
    }

    /// When the held-back request for layer `spatial` may go, or nil if none is held back.
    func keyframeRequestTime(spatial: Int, interval: Duration) -> Duration? {
        guard layers[spatial].keyframeWanted, let last = layers[spatial].lastKeyframeRequest else { return nil }
        return last + interval
    }
}
