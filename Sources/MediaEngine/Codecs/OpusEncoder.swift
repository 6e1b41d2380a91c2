import COpus

extension Opus {
    /// Encoder settings. Validated when an encoder is created.
    public struct Configuration: Sendable, Hashable {
        /// Input sample rate; one of `Opus.supportedSampleRates` (the engine uses 48 kHz).
        public var sampleRate: Int = AudioFrame.sampleRate
        /// Mono or stereo.
        public var layout: ChannelLayout = .mono
        /// Speech, music or lowest delay.
        public var application: Application = .voip
        /// Target bitrate in bits per second, 6 000 to 510 000.
        public var bitrate: Int = 32_000
        /// 0 (fastest) to 10 (best).
        public var complexity: Int = 9
        /// Carry a low-bitrate copy of each frame in the next packet (LBRR), for FEC.
        public var inbandFEC: Bool = false
        /// Loss the encoder should expect, 0 to 100 %; drives how much FEC it spends.
        public var expectedPacketLossPercent: Int = 0
        /// Discontinuous transmission: send almost nothing during silence.
        public var discontinuousTransmission: Bool = false
        /// Variable bitrate (the default); false gives constant bitrate.
        public var variableBitrate: Bool = true
        /// Length of each encoded frame.
        public var frameDuration: FrameDuration = .ms20

        public init() {}

        /// Samples per channel in one frame.
        public var samplesPerFrame: Int { frameDuration.samplesPerChannel(sampleRate: sampleRate) }

        /// Throws when a value is out of range, naming it.
        public func validate() throws(CodecError) {
            guard Opus.supportedSampleRates.contains(sampleRate) else {
                throw CodecError(.invalidConfiguration,
                                 "opus: sample rate \(sampleRate) Hz is not supported (use 8000, 12000, 16000, 24000 or 48000)")
            }
            guard (6_000...510_000).contains(bitrate) else {
                throw CodecError(.invalidConfiguration, "opus: bitrate \(bitrate) b/s is outside 6000...510000")
            }
            guard (0...10).contains(complexity) else {
                throw CodecError(.invalidConfiguration, "opus: complexity \(complexity) is outside 0...10")
            }
            guard (0...100).contains(expectedPacketLossPercent) else {
                throw CodecError(.invalidConfiguration,
                                 "opus: expected packet loss \(expectedPacketLossPercent) % is outside 0...100")
            }
        }
    }

    /// An Opus encoder. One owner at a time: not thread-safe, but may move between
    /// threads between calls.
    public final class Encoder {
        private let state: OpaquePointer
        /// The settings in force (bitrate and loss follow live changes).
        public private(set) var configuration: Configuration

        /// Creates an encoder.
        /// - Throws: `CodecError.invalidConfiguration` naming the bad value.
        public init(configuration: Configuration) throws(CodecError) {
            try configuration.validate()
            var status: Int32 = OPUS_OK
            guard let state = opus_encoder_create(Int32(configuration.sampleRate), Int32(configuration.layout.count),
                                                  configuration.application.cValue, &status), status == OPUS_OK else {
                throw Opus.error(status, while: "creating the encoder")
            }
            self.state = state
            self.configuration = configuration
            do {
                try Opus.check(COpus_encoder_set_bitrate(state, Int32(configuration.bitrate)), "setting the bitrate")
                try Opus.check(COpus_encoder_set_complexity(state, Int32(configuration.complexity)),
                               "setting the complexity")
                try Opus.check(COpus_encoder_set_inband_fec(state, configuration.inbandFEC ? 1 : 0), "setting FEC")
                try Opus.check(COpus_encoder_set_packet_loss_perc(state, Int32(configuration.expectedPacketLossPercent)),
                               "setting the expected loss")
                try Opus.check(COpus_encoder_set_dtx(state, configuration.discontinuousTransmission ? 1 : 0),
                               "setting DTX")
                try Opus.check(COpus_encoder_set_vbr(state, configuration.variableBitrate ? 1 : 0), "setting VBR")
            } catch {
                opus_encoder_destroy(state)
                throw error
            }
        }

        deinit { opus_encoder_destroy(state) }

        /// Changes the target bitrate for the next frames (live, no reset).
        public func setBitrate(_ bitsPerSecond: Int) throws(CodecError) {
            var next = configuration
            next.bitrate = bitsPerSecond
            try next.validate()
            try Opus.check(COpus_encoder_set_bitrate(state, Int32(bitsPerSecond)), "setting the bitrate")
            configuration = next
        }

        /// Changes the loss the encoder plans FEC for (live).
        public func setExpectedPacketLoss(percent: Int) throws(CodecError) {
            var next = configuration
            next.expectedPacketLossPercent = percent
            try next.validate()
            try Opus.check(COpus_encoder_set_packet_loss_perc(state, Int32(percent)), "setting the expected loss")
            configuration = next
        }

        /// Turns in-band FEC on or off (live).
        public func setInbandFEC(_ enabled: Bool) throws(CodecError) {
            try Opus.check(COpus_encoder_set_inband_fec(state, enabled ? 1 : 0), "setting FEC")
            configuration.inbandFEC = enabled
        }

        /// Samples per channel the decoder's output lags the input by (the encoder's
        /// lookahead).
        public var lookahead: Int {
            var value: Int32 = 0
            _ = COpus_encoder_get_lookahead(state, &value)
            return Int(value)
        }

        /// Whether the last frame was encoded as DTX silence.
        public var isInDTX: Bool {
            var value: Int32 = 0
            _ = COpus_encoder_get_in_dtx(state, &value)
            return value != 0
        }

        /// Encodes exactly one frame of interleaved samples into `output`; allocates nothing.
        /// - Returns: the packet length in bytes (1 or 2 bytes mean DTX: nothing to send).
        /// - Throws: `CodecError.invalidInput` when `pcm` is not one frame long.
        public func encode(_ pcm: UnsafeBufferPointer<Int16>, into output: UnsafeMutableRawBufferPointer) throws(CodecError) -> Int {
            let expected = configuration.samplesPerFrame * configuration.layout.count
            guard pcm.count == expected, let input = pcm.baseAddress else {
                throw CodecError(.invalidInput,
                                 "opus: frame has \(pcm.count) samples, expected \(expected) (\(configuration.frameDuration) \(configuration.layout))")
            }
            guard let out = output.baseAddress else {
                throw CodecError(.bufferTooSmall, "opus: output buffer is empty")
            }
            let length = opus_encode(state, input, Int32(configuration.samplesPerFrame),
                                     out.assumingMemoryBound(to: UInt8.self), Int32(output.count))
            if length < 0 { throw Opus.error(length, while: "encoding") }
            return Int(length)
        }

        /// Encodes one frame and returns the packet.
        public func encode(_ frame: AudioFrame) throws(CodecError) -> [UInt8] {
            guard frame.layout == configuration.layout else {
                throw CodecError(.invalidInput, "opus: frame is \(frame.layout), encoder is \(configuration.layout)")
            }
            var packet = [UInt8](repeating: 0, count: Opus.maxPacketSize)
            let length = try frame.samples.withUnsafeBufferPointer { (pcm) throws(CodecError) in
                try packet.withUnsafeMutableBufferPointer { (out) throws(CodecError) in
                    try encode(pcm, into: UnsafeMutableRawBufferPointer(out))
                }
            }
            packet.removeLast(packet.count - length)
            return packet
        }

        /// Forgets all history, as for a new stream.
        public func reset() throws(CodecError) {
            try Opus.check(COpus_encoder_reset_state(state), "resetting the encoder")
        }
    }
}
