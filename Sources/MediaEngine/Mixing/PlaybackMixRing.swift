
/// Carries the file-mix audio from the sending thread (which paces the file) to the
/// receive thread (which plays), already at the playback volume: at most one second is
/// held; older samples are dropped when the player does not keep up.
final class PlaybackMixRing: Sendable {
    static let capacity = 48_000

    private struct Ring {
        var samples = [Int16](repeating: 0, count: PlaybackMixRing.capacity)
        var start = 0
        var count = 0
    }

    private let ring = Locked(Ring())

    /// Appends `samples × gain`.
    func push(_ samples: UnsafeBufferPointer<Int16>, gain: Double) {
        guard gain > 0 else { return }
        let factor = AudioMixer.fixedGain(gain)
        ring.withLock { ring in
            for sample in samples {
                let value = Int16(clamping: (Int64(sample) * factor) >> 16)
                if ring.count == Self.capacity {
                    ring.start = (ring.start + 1) % Self.capacity
                    ring.count -= 1
                }
                ring.samples[(ring.start + ring.count) % Self.capacity] = value
                ring.count += 1
            }
        }
    }

    /// Whether anything waits to be played.
    var isEmpty: Bool { ring.withLock { $0.count == 0 } }

    /// Adds what waits (mono) into `output` (mono or interleaved stereo), saturating.
    func mix(into output: UnsafeMutableBufferPointer<Int16>, channels: Int) {
        ring.withLock { ring in
            let frames = min(ring.count, output.count / channels)
            for frame in 0..<frames {
                let value = Int32(ring.samples[(ring.start + frame) % Self.capacity])
                for channel in 0..<channels {
                    let index = frame * channels + channel
                    output[index] = Int16(clamping: Int32(output[index]) + value)
                }
            }
            ring.start = (ring.start + frames) % Self.capacity
            ring.count -= frames
        }
    }
}
