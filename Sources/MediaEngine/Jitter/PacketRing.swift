/// The packets a jitter buffer holds: a ring of fixed slots keyed by unwrapped sequence
/// number (`sequence mod capacity`), with every payload copied into one block allocated
/// up front. Holding at most `capacity` packets, each at most `maximumPayloadSize` bytes,
/// is what bounds the buffer's memory.
///
/// The owner keeps sequence numbers within one window of `capacity` consecutive values,
/// so two held packets never share a slot. Single owner, not thread-safe.
final class PacketRing {
    /// What is known about one held packet.
    struct Entry {
        /// Unwrapped sequence number.
        var sequence: Int64 = 0
        /// Unwrapped RTP timestamp, rebased across timestamp jumps (48 kHz units).
        var timestamp: Int64 = 0
        var arrival: Duration = .zero
        var length = 0
        var samplesPerChannel = 0
        var hasLBRR = false
        var occupied = false
    }

    let capacity: Int
    let maximumPayloadSize: Int
    private(set) var count = 0
    private var entries: [Entry]
    private let storage: UnsafeMutableRawBufferPointer

    init(capacity: Int, maximumPayloadSize: Int) {
        self.capacity = capacity
        self.maximumPayloadSize = maximumPayloadSize
        entries = [Entry](repeating: Entry(), count: capacity)
        storage = .allocate(byteCount: capacity * maximumPayloadSize, alignment: 16)
    }

    deinit { storage.deallocate() }

    private func slot(_ sequence: Int64) -> Int {
        let remainder = Int(sequence % Int64(capacity))
        return remainder < 0 ? remainder + capacity : remainder
    }

    /// The entry for `sequence`, or nil when that packet is not held.
    func entry(_ sequence: Int64) -> Entry? {
        let entry = entries[slot(sequence)]
        return entry.occupied && entry.sequence == sequence ? entry : nil
    }

    /// Whether `sequence` is held.
    func contains(_ sequence: Int64) -> Bool {
        let entry = entries[slot(sequence)]
        return entry.occupied && entry.sequence == sequence
    }

    /// The payload of a held packet, valid until that packet is removed.
    func payload(_ sequence: Int64) -> UnsafeRawBufferPointer {
        let index = slot(sequence)
        let start = index * maximumPayloadSize
        return UnsafeRawBufferPointer(rebasing: storage[start..<(start + entries[index].length)])
    }

    /// Copies `payload` into the slot of `entry.sequence`, replacing whatever was there.
    /// - Precondition: `payload.count <= maximumPayloadSize`.
    func store(_ entry: Entry, payload: UnsafeRawBufferPointer) {
        precondition(payload.count <= maximumPayloadSize, "payload exceeds the slot size")
        let index = slot(entry.sequence)
        if !entries[index].occupied { count += 1 }
        var stored = entry
        stored.length = payload.count
        stored.occupied = true
        entries[index] = stored
        if !payload.isEmpty {
            UnsafeMutableRawBufferPointer(rebasing: storage[(index * maximumPayloadSize)...]).copyMemory(from: payload)
        }
    }

    /// Removes `sequence` if held; true when it was.
    @discardableResult
    func remove(_ sequence: Int64) -> Bool {
        let index = slot(sequence)
        guard entries[index].occupied, entries[index].sequence == sequence else { return false }
        entries[index].occupied = false
        count -= 1
        return true
    }

    /// The lowest held sequence number in `lower ..< lower + capacity`, or nil.
    func lowest(from lower: Int64) -> Int64? {
        guard count > 0 else { return nil }
        for offset in 0..<Int64(capacity) where contains(lower + offset) {
            return lower + offset
        }
        return nil
    }

    /// Removes every packet; returns how many were held.
    @discardableResult
    func removeAll() -> Int {
        let removed = count
        for index in entries.indices { entries[index].occupied = false }
        count = 0
        return removed
    }
}
