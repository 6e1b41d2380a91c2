/// The packets `VideoReceiveStream` holds, in a ring keyed by unwrapped sequence number:
/// slot `sequence & mask`, each with a fixed share of one preallocated payload buffer, so
/// storing and releasing allocate nothing. The caller keeps every held sequence number
/// inside one window of `capacity` numbers, so two never share a slot.
struct VideoPacketRing: Sendable {
    /// What is known of one held packet; the VP8 payload descriptor is already stripped.
    struct Packet: Sendable {
        var sequence: Int64
        var timestamp: UInt32
        var arrival: Duration
        var length: Int
        /// A padding-only packet: it carries no media and ends no frame.
        var isFiller: Bool
        /// S = 1 and PID = 0: the first packet of a frame.
        var startsFrame: Bool
        /// The first packet of a keyframe (frame tag and start code checked).
        var startsKeyframe: Bool
        var marker: Bool
        var pictureID: UInt16?
    }

    private static let empty = Int64.min

    let capacity: Int
    let slotSize: Int
    private let mask: Int
    private var packets: [Packet]
    private var storage: [UInt8]
    /// Packets held.
    private(set) var count = 0

    /// - Precondition: `capacity` is a power of two.
    init(capacity: Int, slotSize: Int) {
        precondition(capacity > 0 && capacity & (capacity - 1) == 0, "ring capacity must be a power of two")
        self.capacity = capacity
        self.slotSize = slotSize
        mask = capacity - 1
        let vacant = Packet(sequence: Self.empty, timestamp: 0, arrival: .zero, length: 0, isFiller: false, startsFrame: false,
                            startsKeyframe: false, marker: false, pictureID: nil)
        packets = [Packet](repeating: vacant, count: capacity)
        storage = [UInt8](repeating: 0, count: capacity * slotSize)
    }

    /// The packet with `sequence`, if held.
    subscript(sequence: Int64) -> Packet? {
        let packet = packets[Int(truncatingIfNeeded: sequence) & mask]
        return packet.sequence == sequence ? packet : nil
    }

    func contains(_ sequence: Int64) -> Bool {
        packets[Int(truncatingIfNeeded: sequence) & mask].sequence == sequence
    }

    /// Stores `packet` with `payload` (at most `slotSize` bytes), replacing whatever held its slot.
    mutating func store(_ packet: Packet, payload: UnsafeRawBufferPointer) {
        precondition(payload.count <= slotSize && packet.sequence != Self.empty, "payload larger than a ring slot")
        let index = Int(truncatingIfNeeded: packet.sequence) & mask
        if packets[index].sequence == Self.empty { count += 1 }
        var stored = packet
        stored.length = payload.count
        packets[index] = stored
        let offset = index * slotSize
        storage.withUnsafeMutableBytes { bytes in
            UnsafeMutableRawBufferPointer(rebasing: bytes[offset..<(offset + payload.count)]).copyMemory(from: payload)
        }
    }

    /// Frees the slot of `sequence` if it holds that packet.
    /// - Returns: whether it did.
    @discardableResult
    mutating func remove(_ sequence: Int64) -> Bool {
        let index = Int(truncatingIfNeeded: sequence) & mask
        guard packets[index].sequence == sequence else { return false }
        packets[index].sequence = Self.empty
        count -= 1
        return true
    }

    /// Frees every slot.
    mutating func removeAll() {
        for index in packets.indices { packets[index].sequence = Self.empty }
        count = 0
    }

    /// Appends the payload of held packet `sequence` to `output`.
    func appendPayload(of sequence: Int64, to output: inout [UInt8]) {
        let index = Int(truncatingIfNeeded: sequence) & mask
        let packet = packets[index]
        guard packet.sequence == sequence else { return }
        let offset = index * slotSize
        storage.withUnsafeBytes { bytes in
            output.append(contentsOf: UnsafeRawBufferPointer(rebasing: bytes[offset..<(offset + packet.length)]))
        }
    }
}
