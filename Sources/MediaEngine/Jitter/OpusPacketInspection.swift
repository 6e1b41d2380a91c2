import COpus

extension Opus {
    /// Reads facts a jitter buffer needs from an Opus packet without decoding it.
    public enum PacketInspection {
        /// Whether `packet` carries a low-bitrate copy of the previous frame (LBRR, in-band
        /// FEC) that `Opus.Decoder.decodeFEC(from:samplesPerChannel:into:)` can recover.
        ///
        /// Only SILK and hybrid packets carry LBRR. Its flag is the bit after the voice
        /// activity flags at the start of the first SILK frame (RFC 6716 section 4.2.3),
        /// read as libopus 1.5's `opus_packet_has_lbrr` reads it. Allocates nothing.
        public static func hasLBRR(_ packet: UnsafeRawBufferPointer) -> Bool {
            guard let base = packet.baseAddress, packet.count > 1 else { return false }
            let bytes = base.assumingMemoryBound(to: UInt8.self)
            let toc = bytes[0]
            // Configurations 16...31 are CELT only, which has no LBRR.
            guard toc >> 3 < 16 else { return false }
            let samplesPerFrame = Int(opus_packet_get_samples_per_frame(bytes, 48_000))
            // A 40 or 60 ms SILK frame is two or three 20 ms frames, each with a VAD flag first.
            let silkFrames = max(1, samplesPerFrame / 960)
            let stereo = opus_packet_get_nb_channels(bytes) == 2
            return withUnsafeTemporaryAllocation(of: UnsafePointer<UInt8>?.self, capacity: 48) { frames in
                withUnsafeTemporaryAllocation(of: Int16.self, capacity: 48) { sizes in
                    guard let framesBase = frames.baseAddress, let sizesBase = sizes.baseAddress else { return false }
                    let count = opus_packet_parse(bytes, Int32(packet.count), nil, framesBase, sizesBase, nil)
                    guard count > 0, sizesBase[0] > 0, let first = framesBase[0] else { return false }
                    let header = first[0]
                    if (header >> (7 - silkFrames)) & 1 == 1 { return true }
                    return stereo && (header >> (6 - 2 * silkFrames)) & 1 == 1
                }
            }
        }

        /// Whether `packet` is a DTX packet: 1 or 2 bytes, which an encoder in
        /// discontinuous transmission sends (or skips) during silence.
        public static func isDTX(_ packet: UnsafeRawBufferPointer) -> Bool {
            (1...2).contains(packet.count)
        }
    }
}
