import CSoxr

/// Sample-rate conversion of interleaved Int16 audio through libsoxr (high quality,
/// streaming: state carries across calls). Used at device and file edges to bring audio
/// to the engine's 48 kHz. One owner at a time.
public final class Resampler {
    public let inputRate: Int
    public let outputRate: Int
    public let layout: ChannelLayout
    private let state: soxr_t

    /// - Throws: `DeviceError.unsupportedFormat` naming the rates
    ///   when libsoxr refuses them.
    public init(inputRate: Int, outputRate: Int = AudioFrame.sampleRate, layout: ChannelLayout) throws(DeviceError) {
        var error: soxr_error_t?
        var io = soxr_io_spec(SOXR_INT16_I, SOXR_INT16_I)
        var quality = soxr_quality_spec(UInt(SOXR_HQ), 0)
        guard inputRate > 0, outputRate > 0,
              let state = soxr_create(Double(inputRate), Double(outputRate), UInt32(layout.count), &error, &io, &quality, nil),
              error == nil else {
            throw DeviceError(.unsupportedFormat, device: "resampler",
                              "cannot convert \(inputRate) Hz to \(outputRate) Hz" + (error.map { ": \(String(cString: $0))" } ?? ""))
        }
        self.inputRate = inputRate
        self.outputRate = outputRate
        self.layout = layout
        self.state = state
    }

    deinit { soxr_delete(state) }

    /// Converts `input` (interleaved) and writes what is ready into `output`.
    /// - Returns: samples per channel written. The resampler's delay means early calls
    ///   write fewer samples than the rate ratio suggests; `flush` drains the rest.
    public func process(_ input: UnsafeBufferPointer<Int16>, into output: UnsafeMutableBufferPointer<Int16>) -> Int {
        var consumed = 0
        var produced = 0
        let channels = layout.count
        _ = soxr_process(state, input.baseAddress, input.count / channels, &consumed,
                         output.baseAddress, output.count / channels, &produced)
        return produced
    }

    /// Writes the samples still held inside the resampler.
    public func flush(into output: UnsafeMutableBufferPointer<Int16>) -> Int {
        var produced = 0
        _ = soxr_process(state, nil, 0, nil, output.baseAddress, output.count / layout.count, &produced)
        return produced
    }
}
