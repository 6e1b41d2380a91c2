/// Mixes an audio-file mix task into captured frames on the sending thread: the file's
/// next block (mono) is spread over the frame's channels and added at the send volume.
/// Buffers are kept between frames, so mixing allocates nothing in steady state.
public struct FrameFileMixer {
    private var block = [Int16](repeating: 0, count: 4_800)
    private var spread = [Int16](repeating: 0, count: 9_600)

    public init() {}

    /// Mixes `task` into `frame`.
    /// - Parameter playback: Gets the file's block (mono) and the playback volume, for a
    ///   local player.
    /// - Returns: Whether the task finished its last pass with this block.
    public mutating func mix(_ task: AudioFileMixTask, into frame: inout AudioFrame,
                             playback: (UnsafeBufferPointer<Int16>, Double) -> Void = { _, _ in }) -> Bool {
        let count = frame.samplesPerChannel
        let channels = frame.layout.count
        if block.count < count { block = [Int16](repeating: 0, count: count) }
        if spread.count < count * channels { spread = [Int16](repeating: 0, count: count * channels) }
        let (send, playbackVolume, completed) = block.withUnsafeMutableBufferPointer {
            task.pull(into: UnsafeMutableBufferPointer(rebasing: $0[0..<count]))
        }
        block.withUnsafeBufferPointer { playback(UnsafeBufferPointer(rebasing: $0[0..<count]), playbackVolume) }
        if channels > 1 {
            block.withUnsafeBufferPointer { file in
                spread.withUnsafeMutableBufferPointer {
                    AudioMixer.remix(UnsafeBufferPointer(rebasing: file[0..<count]), channels: 1, into: $0, channels: channels)
                }
            }
        }
        _ = frame.samples.withUnsafeMutableBufferPointer { samples in
            (channels > 1 ? spread : block).withUnsafeBufferPointer { file in
                AudioMixer.add(UnsafeBufferPointer(rebasing: file[0..<(count * channels)]), gain: send, into: samples)
            }
        }
        return completed
    }
}
