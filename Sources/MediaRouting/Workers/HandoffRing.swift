import Synchronization

/// A ring of fixed-size slots from one thread to one other (single producer, single
/// consumer), for handing packets between forwarding workers without a lock: the producer
/// writes a slot's bytes and its `Header` in place, then publishes it with one release
/// store; the consumer reads it after one acquire load and frees it with another release
/// store. Nothing is allocated after creation, and neither side ever waits: a full ring
/// refuses the next packet (the producer counts it as dropped), an empty one has nothing.
///
/// Each slot holds a header (a small value: which stream, where from) and up to `slotSize`
/// bytes; the headers are set up once, from `placeholder`, and overwritten in place.
public final class HandoffRing<Header>: @unchecked Sendable {
    // @unchecked: the storage is shared by exactly two threads, each touching a slot only
    // while the indices below give it to that thread (release/acquire order the bytes).
    public let capacity: Int
    public let slotSize: Int
    private let mask: Int
    private let bytes: UnsafeMutableRawPointer
    private let headers: UnsafeMutablePointer<Header>
    private let lengths: UnsafeMutablePointer<Int>
    /// Slots published by the producer (it alone stores), and taken by the consumer.
    private let published = Atomic<Int>(0)
    private let taken = Atomic<Int>(0)
    /// The producer's and consumer's own copies of the other side's index, read again only
    /// when they seem to say full or empty (so most operations touch one shared line).
    private var producerSeesTaken = 0
    private var consumerSeesPublished = 0
    /// Packets the producer could not hand over (the ring was full).
    private let refusals = Atomic<Int>(0)

    /// - Parameters:
    ///   - capacity: Slots, rounded up to a power of two (at least 2).
    ///   - slotSize: Bytes a slot holds (a datagram's largest).
    ///   - placeholder: What every slot's header holds before its first packet.
    public init(capacity: Int, slotSize: Int = 1_536, placeholder: Header) {
        var rounded = 2
        while rounded < capacity { rounded <<= 1 }
        self.capacity = rounded
        self.slotSize = slotSize
        mask = rounded - 1
        bytes = UnsafeMutableRawPointer.allocate(byteCount: rounded * slotSize, alignment: 16)
        headers = UnsafeMutablePointer<Header>.allocate(capacity: rounded)
        headers.initialize(repeating: placeholder, count: rounded)
        lengths = UnsafeMutablePointer<Int>.allocate(capacity: rounded)
        lengths.initialize(repeating: 0, count: rounded)
    }

    deinit {
        bytes.deallocate()
        headers.deinitialize(count: capacity)
        headers.deallocate()
        lengths.deallocate()
    }

    /// Packets refused because the ring was full.
    public var refused: Int { refusals.load(ordering: .relaxed) }

    // MARK: Producer side (one thread)

    /// Copies `packet` (at most `slotSize` bytes; longer is refused) with `header` into the
    /// next slot and publishes it.
    /// - Returns: false when the ring is full or the packet too long (counted as refused).
    @discardableResult
    public func push(_ packet: UnsafeRawBufferPointer, header: Header) -> Bool {
        guard packet.count <= slotSize else {
            refusals.add(1, ordering: .relaxed)
            return false
        }
        return push(header: header) { slot in
            if let base = packet.baseAddress, packet.count > 0 { slot.baseAddress!.copyMemory(from: base, byteCount: packet.count) }
            return packet.count
        }
    }

    /// Fills the next slot in place: `fill` writes up to `slotSize` bytes into the slot
    /// and returns how many; then the slot is published with `header`.
    /// - Returns: false when the ring is full (counted as refused; `fill` is not called).
    @discardableResult
    public func push(header: Header, fill: (UnsafeMutableRawBufferPointer) -> Int) -> Bool {
        let next = published.load(ordering: .relaxed)
        if next - producerSeesTaken >= capacity {
            producerSeesTaken = taken.load(ordering: .acquiring)
            if next - producerSeesTaken >= capacity {
                refusals.add(1, ordering: .relaxed)
                return false
            }
        }
        let index = next & mask
        let slot = UnsafeMutableRawBufferPointer(start: bytes + index * slotSize, count: slotSize)
        lengths[index] = min(slotSize, max(0, fill(slot)))
        headers[index] = header
        published.store(next + 1, ordering: .releasing)
        return true
    }

    // MARK: Consumer side (one thread)

    /// Hands the oldest packet to `body` (its bytes are valid only during the call, and
    /// may be changed in place: decrypted, rewritten), then frees its slot.
    /// - Returns: false when the ring is empty.
    @discardableResult
    public func pop(_ body: (UnsafeMutableRawBufferPointer, Header) -> Void) -> Bool {
        let next = taken.load(ordering: .relaxed)
        if next >= consumerSeesPublished {
            consumerSeesPublished = published.load(ordering: .acquiring)
            if next >= consumerSeesPublished { return false }
        }
        let index = next & mask
        body(UnsafeMutableRawBufferPointer(start: bytes + index * slotSize, count: lengths[index]), headers[index])
        taken.store(next + 1, ordering: .releasing)
        return true
    }

    /// Packets waiting (either side may ask; the answer may be stale by one).
    public var count: Int { published.load(ordering: .acquiring) - taken.load(ordering: .acquiring) }
}
