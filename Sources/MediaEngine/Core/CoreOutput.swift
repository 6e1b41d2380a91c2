/// What a core's parts hand out, in the order they make it: datagrams (the transmit queue,
/// protected with this side's keys) and events. The path, the send pipeline and the receive
/// pipeline write here; the core's owner drains it (`MediaCore.pollTransmit`,
/// `pollEvent`). One owner at a time, as the core.
final class CoreOutput {
    let transmits: TransmitQueue
    /// This side's SRTP contexts (one per key in use), by index: send streams protect their
    /// packets with one, receive streams their feedback.
    private(set) var keys: [(keying: SRTPKeyingMaterial, context: SRTPContext)] = []
    /// RTCP compound packets queued.
    private(set) var rtcpSent = 0
    private var events = DrainQueue<MediaCore.Event>(capacity: 64)

    init(transmitCapacity: Int) {
        transmits = TransmitQueue(capacity: transmitCapacity)
    }

    /// The index of the context that protects with `keying`, made on first use.
    func key(for keying: SRTPKeyingMaterial) throws(SRTPError) -> Int {
        if let index = keyIndex(of: keying) { return index }
        keys.append((keying, try SRTPContext(keying: keying, direction: .outbound)))
        return keys.count - 1
    }

    /// The index of the context for `keying`, if one was made.
    func keyIndex(of keying: SRTPKeyingMaterial) -> Int? { keys.firstIndex { $0.keying == keying } }

    /// The context at `key`; nil sends plain.
    @inline(__always)
    func context(_ key: Int?) -> SRTPContext? { key.map { keys[$0].context } }

    /// Serializes `packets` as one compound packet, protects it (SRTCP) with `key` and queues it.
    @discardableResult
    func queueRTCP(_ packets: [RTCPPacket], to destination: SocketAddress, socket: Int, key: Int?) -> Bool {
        let context = context(key)
        let queued = transmits.enqueue(to: destination, socket: socket, kind: .rtcp) { slot in
            guard RTCPPacket.compoundSize(of: packets) + SRTPContext.trailerCapacity <= slot.count,
                  let written = try? RTCPPacket.serializeCompound(packets, into: slot) else { return 0 }
            guard let context else { return written }
            return (try? context.protectRTCP(slot, length: written)) ?? 0
        }
        if queued { rtcpSent += 1 }
        return queued
    }

    func emit(_ event: MediaCore.Event) { events.append(event) }

    /// The next event, or nil.
    func nextEvent() -> MediaCore.Event? { events.next() }
}

extension NTPTime {
    /// The NTP time at `now` on a clock whose zero is NTP time `epoch`.
    static func at(_ now: Duration, epoch: UInt64) -> UInt64 {
        let (seconds, attoseconds) = now.components
        let fraction = UInt64(max(0, attoseconds) / 1_000_000_000) << 32 / 1_000_000_000
        return epoch &+ (UInt64(max(0, seconds)) << 32) &+ fraction
    }
}
