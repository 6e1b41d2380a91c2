import MediaEngine

/// One stream a participant publishes (mediasoup's producer): its receive stream on the
/// publisher's transport, the consumers it goes to, and what the router learns from it
/// (when the participant last spoke; the rate of each VP8 temporal layer) or owes it (a
/// keyframe request held back by the interval).
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

    let kind: MediaKind
    let origin: Origin
    /// The publisher's leg.
    let leg: UInt64
    /// Its receive stream on the publisher's transport (nil for one from another worker).
    let receive: ReceiveStreamID?
    /// Local: the other workers that have subscribers of it (it hands them every packet).
    var remoteWorkers: [Int] = []
    var consumers: [Consumer.ID] = []
    /// Video with subscribers that take RTX: its recent packets, kept once for all of them.
    var history: PublisherHistory?
    /// Audio: when the participant last spoke (voice activity over the threshold).
    var spokeAt: Duration?
    /// Video: the cumulative rates of its layers over the last full window; empty until
    /// one was measured.
    private(set) var layerRates: [Int] = []
    private var layerBytes = [Int](repeating: 0, count: 4)
    private var windowStart: Duration?
    private var lastKeyframeRequest: Duration?
    /// A request the interval held back, sent once it has passed.
    private(set) var keyframeWanted = false

    /// Audio: the ID of the RFC 6464 level in the publisher's packets.
    let audioLevelID: UInt8?

    init(kind: MediaKind, origin: Origin, leg: UInt64, receive: ReceiveStreamID?, audioLevelID: UInt8? = nil) {
        self.kind = kind
        self.origin = origin
        self.leg = leg
        self.receive = receive
        self.audioLevelID = audioLevelID
    }

    /// Adds a video packet to its layer's count; each second the cumulative layer rates
    /// are measured anew.
    func meter(layer: Int, bytes: Int, now: Duration) {
        guard let start = windowStart else {
            windowStart = now
            layerBytes[layer] += bytes
            return
        }
        let elapsed = now - start
        if elapsed >= .seconds(1) {
            let deepest = layerBytes.lastIndex { $0 > 0 } ?? 0
            var total = 0
            layerRates = (0...deepest).map { index in
                total += layerBytes[index]
                return Int(Double(total * 8) / (elapsed / .seconds(1)))
            }
            for index in layerBytes.indices { layerBytes[index] = 0 }
            windowStart = now
        }
        layerBytes[layer] += bytes
    }

    /// A keyframe is wanted: at most one request per `interval` goes to the publisher (a
    /// later wish is kept until the interval has passed).
    /// - Returns: whether to send the request now.
    func wantsKeyframe(now: Duration, interval: Duration) -> Bool {
        if let lastKeyframeRequest, now - lastKeyframeRequest < interval {
            keyframeWanted = true
            return false
        }
        lastKeyframeRequest = now
        keyframeWanted = false
        return true
    }

    /// Whether a held-back request is due.
    func keyframeRequestDue(now: Duration, interval: Duration) -> Bool {
        guard keyframeWanted, let lastKeyframeRequest else { return false }
        return now - lastKeyframeRequest >= interval
    }
}
