/// Decoded samples waiting to be played, between the decoder (which writes whole packets
/// of 2.5 to 120 ms) and the playout clock (which takes one fixed frame per pull).
///
/// A producer writes into `freeSpace`, then either `commit`s what it wrote or, to speed
/// playout up, `discardWritten`s it; the next chunk committed after a discard is
/// cross-faded with the head of the discarded one, which continues the audio before the
/// cut, so the seam is smooth. Storage is allocated once. Single owner, not thread-safe.
final class PlayoutQueue {
    /// Length of the cross-fade over a cut, in samples per channel (2.5 ms).
    static let crossFadeLength = 120

    let channels: Int
    /// Samples per channel the queue can hold.
    let capacity: Int
    /// Samples per channel queued.
    private(set) var count = 0
    private let samples: UnsafeMutableBufferPointer<Int16>
    private let fadeHead: UnsafeMutableBufferPointer<Int16>
    private var pendingFade = 0

    init(channels: Int, capacity: Int) {
        self.channels = channels
        self.capacity = capacity
        samples = .allocate(capacity: capacity * channels)
        samples.initialize(repeating: 0)
        fadeHead = .allocate(capacity: Self.crossFadeLength * channels)
        fadeHead.initialize(repeating: 0)
    }

    deinit {
        samples.deallocate()
        fadeHead.deallocate()
    }

    /// Room after the queued samples, interleaved.
    var freeSpace: UnsafeMutableBufferPointer<Int16> {
        UnsafeMutableBufferPointer(rebasing: samples[(count * channels)...])
    }

    /// Samples per channel that fit in `freeSpace`.
    var freeCount: Int { capacity - count }

    /// Mean square of the `length` samples per channel just written into `freeSpace`.
    func meanSquareOfWritten(_ length: Int) -> Double {
        guard length > 0 else { return 0 }
        var sum: Int64 = 0
        let start = count * channels
        for index in start..<(start + length * channels) {
            let value = Int64(samples[index])
            sum += value * value
        }
        return Double(sum) / Double(length * channels)
    }

    /// Keeps the `length` samples per channel just written into `freeSpace`.
    func commit(_ length: Int) {
        precondition(length <= freeCount, "committed more than the queue holds")
        if pendingFade > 0 {
            let fade = min(pendingFade, length)
            let start = count * channels
            for instant in 0..<fade {
                // Linear fade from the discarded audio to the new chunk.
                let weight = Double(instant + 1) / Double(fade + 1)
                for channel in 0..<channels {
                    let old = Double(fadeHead[instant * channels + channel])
                    let index = start + instant * channels + channel
                    samples[index] = Int16((old * (1 - weight) + Double(samples[index]) * weight).rounded())
                }
            }
            pendingFade = 0
        }
        count += length
    }

    /// Drops the `length` samples per channel just written into `freeSpace`; the next
    /// commit fades in from their head.
    func discardWritten(_ length: Int) {
        let fade = min(length, Self.crossFadeLength)
        let start = count * channels
        for index in 0..<(fade * channels) { fadeHead[index] = samples[start + index] }
        pendingFade = fade
    }

    /// Queues `length` samples per channel of digital silence.
    func appendSilence(_ length: Int) {
        let start = count * channels
        for index in start..<(start + length * channels) { samples[index] = 0 }
        commit(length)
    }

    /// Moves the oldest `length` samples per channel into `output`.
    /// - Precondition: at least `length` are queued and `output` holds them.
    func pop(_ length: Int, into output: UnsafeMutableBufferPointer<Int16>) {
        precondition(length <= count && output.count >= length * channels, "pop past the queued samples")
        let values = length * channels
        for index in 0..<values { output[index] = samples[index] }
        let remaining = (count - length) * channels
        if remaining > 0, let base = samples.baseAddress {
            // Raw copyMemory is memmove: the ranges overlap.
            UnsafeMutableRawPointer(base).copyMemory(from: base + values, byteCount: remaining * MemoryLayout<Int16>.stride)
        }
        count -= length
    }
}
