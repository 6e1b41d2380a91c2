/// Converts interleaved Int16 audio between a device's rate and channel count and the
/// engine's (48 kHz, mono or stereo): remixes channels and resamples with libsoxr.
///
/// Channels are reduced before resampling and added after it, so the resampler always
/// works on the smaller count. All buffers are allocated once, for blocks of at most
/// `maximumInputFrames`; converting allocates nothing. One owner at a time.
final class ALSAFormatBridge {
    let inputRate: Int
    let inputChannels: Int
    let outputRate: Int
    let outputChannels: Int
    let maximumInputFrames: Int
    private let resampler: Resampler?
    private let remixed: UnsafeMutableBufferPointer<Int16>
    private let resampled: UnsafeMutableBufferPointer<Int16>
    private let expanded: UnsafeMutableBufferPointer<Int16>

    /// - Throws: `DeviceError.unsupportedFormat` when libsoxr refuses the rates or a side
    ///   has no channels.
    init(inputRate: Int, inputChannels: Int, outputRate: Int, outputChannels: Int, maximumInputFrames: Int) throws(DeviceError) {
        guard inputChannels >= 1, outputChannels >= 1, min(inputChannels, outputChannels) <= 2, maximumInputFrames >= 1 else {
            throw DeviceError(.unsupportedFormat, device: "converter",
                              "cannot convert \(inputChannels) to \(outputChannels) channels")
        }
        self.inputRate = inputRate
        self.inputChannels = inputChannels
        self.outputRate = outputRate
        self.outputChannels = outputChannels
        self.maximumInputFrames = maximumInputFrames
        let resampleChannels = min(inputChannels, outputChannels)
        resampler = inputRate == outputRate ? nil
            : try Resampler(inputRate: inputRate, outputRate: outputRate, layout: resampleChannels == 1 ? .mono : .stereo)
        // libsoxr emits about ratio * input per call; the margin covers its start-up and
        // rounding so it never holds back input for lack of room.
        let maximumOutputFrames = maximumInputFrames * outputRate / inputRate + 1_024
        remixed = .allocate(capacity: maximumInputFrames * resampleChannels)
        resampled = .allocate(capacity: maximumOutputFrames * resampleChannels)
        expanded = .allocate(capacity: maximumOutputFrames * outputChannels)
    }

    deinit {
        remixed.deallocate()
        resampled.deallocate()
        expanded.deallocate()
    }

    /// Whether the rates differ (libsoxr runs).
    var resamples: Bool { resampler != nil }

    /// Converts one block of at most `maximumInputFrames` frames.
    /// - Returns: interleaved output, valid until the next call; may be shorter or longer
    ///   than the rate ratio suggests while the resampler fills and drains.
    func convert(_ input: UnsafeBufferPointer<Int16>) -> UnsafeBufferPointer<Int16> {
        let frames = min(input.count / inputChannels, maximumInputFrames)
        var current = UnsafeBufferPointer(rebasing: input[0..<frames * inputChannels])
        var channels = inputChannels
        if outputChannels < inputChannels {
            AudioMixer.remix(current, channels: inputChannels, into: remixed, channels: outputChannels)
            current = UnsafeBufferPointer(rebasing: remixed[0..<frames * outputChannels])
            channels = outputChannels
        }
        if let resampler {
            let produced = resampler.process(current, into: resampled)
            current = UnsafeBufferPointer(rebasing: resampled[0..<produced * channels])
        }
        return expand(current, channels: channels)
    }

    /// Drains what the resampler still holds (the end of a playback stream).
    func flush() -> UnsafeBufferPointer<Int16> {
        guard let resampler else { return UnsafeBufferPointer(start: nil, count: 0) }
        let channels = min(inputChannels, outputChannels)
        let produced = resampler.flush(into: resampled)
        return expand(UnsafeBufferPointer(rebasing: resampled[0..<produced * channels]), channels: channels)
    }

    private func expand(_ current: UnsafeBufferPointer<Int16>, channels: Int) -> UnsafeBufferPointer<Int16> {
        guard channels != outputChannels else { return current }
        let frames = current.count / channels
        AudioMixer.remix(current, channels: channels, into: expanded, channels: outputChannels)
        return UnsafeBufferPointer(rebasing: expanded[0..<frames * outputChannels])
    }
}
