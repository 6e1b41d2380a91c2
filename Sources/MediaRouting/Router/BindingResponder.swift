import MediaEngine

/// The server port's open STUN responder: a Binding request without a USERNAME (RFC 8489
/// section 3, a client learning its server-reflexive address) is answered with its source
/// address, from anyone, so it must not become an amplifier or a memory sink.
///
/// - An answer is never larger than its request (clients pad theirs).
/// - Each source IP (any port) has a token bucket; the IPs tracked are bounded, and past
///   the bound the longest tracked is forgotten (it starts again with a full burst).
/// - Answers wait in a small queue of their own, drained with the legs' datagrams.
///
/// Not thread-safe: one owner (the router).
struct BindingResponder {
    enum Outcome {
        case answered
        /// The request is smaller than its answer would be.
        case tooSmall
        /// Its source IP is over its rate.
        case rateLimited
        /// The queue of answers is full.
        case dropped
    }

    let rate: Double
    let burst: Double
    let capacity: Int
    private var buckets: [SocketAddress: TokenBucket] = [:]
    /// The IPs in the order first seen: a ring once `capacity` long, whose slot at
    /// `oldest` goes next.
    private var order: [SocketAddress] = []
    private var oldest = 0
    private let answers = TransmitQueue(capacity: 64)

    init(rate: Double, burst: Double, sources capacity: Int) {
        self.rate = rate
        self.burst = burst
        self.capacity = max(1, capacity)
    }

    /// Source IPs whose rate is tracked now.
    var trackedSources: Int { buckets.count }

    /// Answers `request`, which arrived as `size` bytes from `source`.
    mutating func respond(to request: STUNMessage, size: Int, from source: SocketAddress, now: Duration) -> Outcome {
        let answer = STUNBinding.answer(to: request, from: source)
        guard answer.serializedSize <= size else { return .tooSmall }
        guard admit(source, now: now) else { return .rateLimited }
        let queued = answers.enqueue(to: source, socket: 0, kind: .stun) { slot in
            (try? answer.serialize(into: slot)) ?? 0
        }
        return queued ? .answered : .dropped
    }

    /// The next answer to send, or nil.
    func pollTransmit() -> Transmit? { answers.dequeue() }

    /// Takes a token from `source`'s IP's bucket, tracking the IP first if it is new.
    private mutating func admit(_ source: SocketAddress, now: Duration) -> Bool {
        let key = source.with(port: 0)
        if var bucket = buckets[key] {
            let admitted = bucket.admit(now: now)
            buckets[key] = bucket
            return admitted
        }
        var bucket = TokenBucket(rate: rate, burst: burst)
        let admitted = bucket.admit(now: now)
        if order.count < capacity {
            order.append(key)
        } else {
            buckets[order[oldest]] = nil
            order[oldest] = key
            oldest = (oldest + 1) % order.count
        }
        buckets[key] = bucket
        return admitted
    }
}
