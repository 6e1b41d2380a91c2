/// The packets the sender sent, by transport-wide sequence number, for matching
/// feedback: a fixed ring of `capacity` entries (older ones are overwritten) plus an age
/// limit, so feedback about a packet sent too long ago counts as unknown.
struct SentPacketHistory: Sendable {
    /// What the feedback said about a packet so far.
    enum State: UInt8, Sendable {
        case inFlight, lost, received
    }

    struct Entry: Sendable {
        var sequence: Int64 = .min
        var size = 0
        var sendTime: Duration = .zero
        var state = State.inFlight
    }

    private var entries: [Entry]
    private var unwrapper = SequenceNumberUnwrapper()
    /// The highest unwrapped sequence number sent.
    private(set) var newest: Int64?

    init(capacity: Int) {
        entries = Array(repeating: Entry(), count: max(1, capacity))
    }

    mutating func record(sequenceNumber: UInt16, size: Int, sendTime: Duration) {
        let sequence = unwrapper.unwrap(sequenceNumber)
        newest = max(newest ?? sequence, sequence)
        entries[slot(sequence)] = Entry(sequence: sequence, size: size, sendTime: sendTime)
    }

    /// The slot of the packet a feedback sequence number names: the unwrapped value
    /// nearest the newest sent, if that packet is still held and younger than `maximumAge`.
    func find(_ sequenceNumber: UInt16, now: Duration, maximumAge: Duration) -> Int? {
        guard let newest else { return nil }
        let sequence = unwrap(sequenceNumber, near: newest)
        let index = slot(sequence)
        guard entries[index].sequence == sequence, now - entries[index].sendTime <= maximumAge else { return nil }
        return index
    }

    subscript(index: Int) -> Entry {
        get { entries[index] }
        set { entries[index] = newValue }
    }

    private func slot(_ sequence: Int64) -> Int {
        let remainder = Int(sequence % Int64(entries.count))
        return remainder < 0 ? remainder + entries.count : remainder
    }
}
