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
        /// Its picture size as the publisher announced it (0 when it did not).
        let width: Int
        let height: Int
        /// Video: the cumulative rates of its temporal layers over the last full window;
        /// empty until one was measured, or once it stopped.
        var rates: [Int] = []
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

        init(receive: ReceiveStreamID?, width: Int = 0, height: Int = 0) {
            self.receive = receive
            self.width = width
            self.height = height
        }
    }

    /// A layer with no packet for this long has stopped: nobody is switched to it.
    static let layerTimeout: Duration = .milliseconds(500)

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

    init(kind: MediaKind, origin: Origin, leg: UInt64, layers: [Layer], audioLevelID: UInt8? = nil) {
        precondition(!layers.isEmpty && layers.count <= 4)
        self.kind = kind
        self.origin = origin
        self.leg = leg
        self.layers = layers
        self.audioLevelID = audioLevelID
    }

    convenience init(kind: MediaKind, origin: Origin, leg: UInt64, receive: ReceiveStreamID?, audioLevelID: UInt8? = nil) {
        self.init(kind: kind, origin: origin, leg: leg, layers: [Layer(receive: receive)], audioLevelID: audioLevelID)
    }

    /// Its first stream's (the only one, or simulcast layer 0).
    var receive: ReceiveStreamID? { layers[0].receive }

    var isSimulcast: Bool { layers.count > 1 }

    /// Layer 0's temporal layer rates (a simulcast video's lowest).
    var layerRates: [Int] { layers[0].rates }

    /// The layer `stream` carries, if it is one of its streams (a search of at most four).
    func layerIndex(of stream: ReceiveStreamID) -> Int? {
        for index in layers.indices where layers[index].receive == stream { return index }
        return nil
    }

    /// Whether layer `spatial` sent within `layerTimeout` and has measured rates.
    func isLive(_ spatial: Int, now: Duration) -> Bool {
        guard let last = layers[spatial].lastArrival else { return false }
        return now - last <= Self.layerTimeout && !layers[spatial].rates.isEmpty
    }

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
    /// is never closed by a packet).
    /// - Returns: whether a layer stopped now.
    @discardableResult
    func expireLayers(now: Duration) -> Bool {
        var expired = false
        for index in layers.indices {
            if let last = layers[index].lastArrival, now - last > Self.layerTimeout, !layers[index].rates.isEmpty {
                layers[index].rates = []
                layers[index].windowStart = nil
                for slot in layers[index].bytes.indices { layers[index].bytes[slot] = 0 }
                expired = true
            }
        }
        return expired
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
        guard layers[spatial].keyframeWanted, let last = layers[spatial].lastKeyframeRequest else { return false }
        return now - last >= interval
    }
}
