import COpus

extension Opus {
    /// The most samples per channel one Opus packet can hold (120 ms at 48 kHz).
    public static let maxSamplesPerPacket = 5_760

    /// An Opus decoder with packet loss concealment and in-band FEC recovery.
    /// One owner at a time: not thread-safe.
    public final class Decoder {
        private let state: OpaquePointer
        /// Output sample rate.
        public let sampleRate: Int
        /// Output channel layout.
        public let layout: ChannelLayout

        /// Creates a decoder.
        /// - Throws: `CodecError.invalidConfiguration` for a rate libopus does not support.
        public init(sampleRate: Int = AudioFrame.sampleRate, layout: ChannelLayout = .mono) throws(CodecError) {
            guard Opus.supportedSampleRates.contains(sampleRate) else {
                throw CodecError(.invalidConfiguration,
                                 "opus: sample rate \(sampleRate) Hz is not supported (use 8000, 12000, 16000, 24000 or 48000)")
            }
            var status: Int32 = OPUS_OK
            guard let state = opus_decoder_create(Int32(sampleRate), Int32(layout.count), &status), status == OPUS_OK else {
                throw Opus.error(status, while: "creating the decoder")
            }
            self.state = state
            self.sampleRate = sampleRate
            self.layout = layout
        }

        deinit { opus_decoder_destroy(state) }

        /// Samples per channel in `packet`, checked without decoding.
        /// - Throws: `CodecError.corruptPacket` for an empty or malformed packet.
        public func samplesPerChannel(in packet: UnsafeRawBufferPointer) throws(CodecError) -> Int {
            guard let bytes = packet.baseAddress, !packet.isEmpty else {
                throw CodecError(.corruptPacket, "opus: packet is empty")
            }
            let count = opus_decoder_get_nb_samples(state, bytes.assumingMemoryBound(to: UInt8.self), Int32(packet.count))
            if count < 0 { throw Opus.error(count, while: "reading the packet header") }
            return Int(count)
        }

        /// Decodes `packet` into `pcm` (interleaved); allocates nothing.
        /// - Returns: samples per channel written.
        /// - Throws: `CodecError.corruptPacket` for a malformed packet (the decoder stays
        ///   usable), `CodecError.bufferTooSmall` when `pcm` cannot hold the packet.
        public func decode(_ packet: UnsafeRawBufferPointer, into pcm: UnsafeMutableBufferPointer<Int16>) throws(CodecError) -> Int {
            guard let bytes = packet.baseAddress, !packet.isEmpty else {
                throw CodecError(.corruptPacket, "opus: packet is empty (use decodeLost for a missing packet)")
            }
            return try run(bytes.assumingMemoryBound(to: UInt8.self), Int32(packet.count),
                           pcm, capacity: pcm.count / layout.count, fec: false, action: "decoding")
        }

        /// Conceals one missing frame of `samplesPerChannel` (a multiple of 2.5 ms) by
        /// extrapolating from what was decoded before.
        public func decodeLost(samplesPerChannel: Int, into pcm: UnsafeMutableBufferPointer<Int16>) throws(CodecError) -> Int {
            try checkConcealmentLength(samplesPerChannel, pcm)
            return try run(nil, 0, pcm, capacity: samplesPerChannel, fec: false, action: "concealing a lost frame")
        }

        /// Recovers the missing frame just before `nextPacket` from the low-bitrate copy
        /// (LBRR) the sender put in `nextPacket`. Without LBRR in it, libopus conceals as
        /// `decodeLost` does. Decode `nextPacket` itself afterwards as usual.
        public func decodeFEC(from nextPacket: UnsafeRawBufferPointer, samplesPerChannel: Int,
                              into pcm: UnsafeMutableBufferPointer<Int16>) throws(CodecError) -> Int {
            guard let bytes = nextPacket.baseAddress, !nextPacket.isEmpty else {
                throw CodecError(.corruptPacket, "opus: FEC source packet is empty")
            }
            try checkConcealmentLength(samplesPerChannel, pcm)
            return try run(bytes.assumingMemoryBound(to: UInt8.self), Int32(nextPacket.count), pcm,
                           capacity: samplesPerChannel, fec: true, action: "decoding FEC")
        }

        /// Forgets all history, as for a new stream.
        public func reset() throws(CodecError) {
            try Opus.check(COpus_decoder_reset_state(state), "resetting the decoder")
        }

        /// Decodes `packet` into a new frame.
        public func decode(_ packet: [UInt8], timestamp: Duration = .zero) throws(CodecError) -> AudioFrame {
            var frame = AudioFrame(layout: layout, samplesPerChannel: Opus.maxSamplesPerPacket, timestamp: timestamp)
            let count = try packet.withUnsafeBufferPointer { (bytes) throws(CodecError) in
                try frame.samples.withUnsafeMutableBufferPointer { (pcm) throws(CodecError) in
                    try decode(UnsafeRawBufferPointer(bytes), into: pcm)
                }
            }
            frame.samples.removeLast(frame.samples.count - count * layout.count)
            return frame
        }

        /// Conceals one missing frame into a new frame.
        public func decodeLost(samplesPerChannel: Int, timestamp: Duration = .zero) throws(CodecError) -> AudioFrame {
            var frame = AudioFrame(layout: layout, samplesPerChannel: samplesPerChannel, timestamp: timestamp)
            _ = try frame.samples.withUnsafeMutableBufferPointer { (pcm) throws(CodecError) in
                try decodeLost(samplesPerChannel: samplesPerChannel, into: pcm)
            }
            return frame
        }

        /// Recovers the missing frame before `nextPacket` into a new frame.
        public func decodeFEC(from nextPacket: [UInt8], samplesPerChannel: Int,
                              timestamp: Duration = .zero) throws(CodecError) -> AudioFrame {
            var frame = AudioFrame(layout: layout, samplesPerChannel: samplesPerChannel, timestamp: timestamp)
            _ = try nextPacket.withUnsafeBufferPointer { (bytes) throws(CodecError) in
                try frame.samples.withUnsafeMutableBufferPointer { (pcm) throws(CodecError) in
                    try decodeFEC(from: UnsafeRawBufferPointer(bytes), samplesPerChannel: samplesPerChannel, into: pcm)
                }
            }
            return frame
        }

        private func checkConcealmentLength(_ samplesPerChannel: Int, _ pcm: UnsafeMutableBufferPointer<Int16>) throws(CodecError) {
            let quantum = sampleRate / 400  // 2.5 ms
            guard samplesPerChannel > 0, samplesPerChannel % quantum == 0,
                  samplesPerChannel <= Opus.maxSamplesPerPacket * sampleRate / AudioFrame.sampleRate else {
                throw CodecError(.invalidInput,
                                 "opus: cannot conceal \(samplesPerChannel) samples: use a multiple of 2.5 ms up to 120 ms")
            }
            guard pcm.count >= samplesPerChannel * layout.count else {
                throw CodecError(.bufferTooSmall,
                                 "opus: output holds \(pcm.count) samples, concealment needs \(samplesPerChannel * layout.count)")
            }
        }

        private func run(_ data: UnsafePointer<UInt8>?, _ length: Int32, _ pcm: UnsafeMutableBufferPointer<Int16>,
                         capacity: Int, fec: Bool, action: String) throws(CodecError) -> Int {
            guard let out = pcm.baseAddress, capacity > 0 else {
                throw CodecError(.bufferTooSmall, "opus: output buffer is empty")
            }
            let count = opus_decode(state, data, length, out, Int32(capacity), fec ? 1 : 0)
            if count < 0 { throw Opus.error(count, while: action) }
            return Int(count)
        }
    }
}
