/// The signed distance from `reference` (a 64-bit count) to the 16-bit `sequenceNumber`,
/// the shortest way round: -32768...32767. Every 16-bit unwrapping in the engine (RTP
/// sequence numbers, transport-wide sequence numbers) goes through it.
@inline(__always)
func sequenceDistance(from reference: Int64, to sequenceNumber: UInt16) -> Int64 {
    Int64(Int16(bitPattern: sequenceNumber &- UInt16(truncatingIfNeeded: reference)))
}

/// `sequenceNumber` unwrapped to the 64-bit count nearest `reference`.
@inline(__always)
func unwrap(_ sequenceNumber: UInt16, near reference: Int64) -> Int64 {
    reference + sequenceDistance(from: reference, to: sequenceNumber)
}

/// Turns wrapping 16-bit RTP sequence numbers into a monotonic 64-bit count, taking the
/// shortest way round from the previous value (so reordering across the wrap works).
public struct SequenceNumberUnwrapper: Sendable, Hashable {
    private var last: Int64?

    public init() {}

    /// The unwrapped value of `sequenceNumber`. The first call returns it unchanged.
    public mutating func unwrap(_ sequenceNumber: UInt16) -> Int64 {
        guard let last else {
            last = Int64(sequenceNumber)
            return Int64(sequenceNumber)
        }
        let value = MediaEngine.unwrap(sequenceNumber, near: last)
        // Only move forward, so a late packet does not pull later unwrapping back.
        if value > last { self.last = value }
        return value
    }
}

/// Turns wrapping 32-bit RTP timestamps into a monotonic 64-bit count.
public struct TimestampUnwrapper: Sendable, Hashable {
    private var last: Int64?

    public init() {}

    /// The unwrapped value of `timestamp`. The first call returns it unchanged.
    public mutating func unwrap(_ timestamp: UInt32) -> Int64 {
        guard let last else {
            last = Int64(timestamp)
            return Int64(timestamp)
        }
        let delta = Int64(Int32(bitPattern: timestamp &- UInt32(truncatingIfNeeded: last)))
        let value = last + delta
        if value > last { self.last = value }
        return value
    }
}
