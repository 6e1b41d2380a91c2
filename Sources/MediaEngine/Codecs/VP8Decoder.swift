import CVpx
import CYUV

extension VP8 {
    /// A VP8 decoder. One owner at a time: not thread-safe.
    ///
    /// Corrupt or truncated input throws `CodecError.corruptPacket`; the caller should ask
    /// the sender for a keyframe (PLI) and keep feeding packets.
    public final class Decoder {
        private let context = Context()

        /// Creates a decoder using `threads` threads (1 to 16).
        public init(threads: Int = 1) throws(CodecError) {
            guard (1...16).contains(threads) else {
                throw CodecError(.invalidConfiguration, "vp8: decoder threads \(threads) is outside 1...16")
            }
            var settings = vpx_codec_dec_cfg_t(threads: UInt32(threads), w: 0, h: 0)
            let status = CVpx_codec_dec_init(context.pointer, vpx_codec_vp8_dx(), &settings, 0)
            guard status == VPX_CODEC_OK else { throw VP8.error(status, context.pointer, while: "creating the decoder") }
            context.isInitialized = true
        }

        /// Decodes one frame and hands its planes, borrowed from the decoder, to `body`: no
        /// copy. The planes are valid only inside `body` (the next decode overwrites them).
        /// - Returns: what `body` returns, or nil when the data held no displayable frame
        ///   (`body` is not called then).
        /// - Throws: `CodecError.corruptPacket` for corrupt, truncated or non-VP8 data, and
        ///   whatever `body` throws.
        public func decode<R>(_ data: UnsafeRawBufferPointer, body: (VideoPlanes) throws -> R) throws -> R? {
            guard let planes = try nextPicture(data) else { return nil }
            return try body(planes)
        }

        /// Decodes one frame into `frame`, resizing it when the stream's size changed;
        /// allocates nothing when the size is unchanged and `frame` is uniquely owned.
        /// - Returns: false when the data held no displayable frame.
        /// - Throws: `CodecError.corruptPacket` for corrupt, truncated or non-VP8 data.
        public func decode(_ data: UnsafeRawBufferPointer, timestamp: Duration = .zero,
                           into frame: inout VideoFrame) throws(CodecError) -> Bool {
            guard let image = try nextPicture(data) else { return false }
            if frame.width != image.width || frame.height != image.height {
                frame.reshape(width: image.width, height: image.height)
            }
            frame.timestamp = timestamp
            let (strideY, strideUV) = (Int32(frame.strideY), Int32(frame.strideUV))
            frame.withMutablePlanes { y, u, v in
                _ = I420Copy(image.y, Int32(image.strideY), image.u, Int32(image.strideU), image.v, Int32(image.strideV),
                             y.baseAddress, strideY, u.baseAddress, strideUV, v.baseAddress, strideUV,
                             Int32(image.width), Int32(image.height))
            }
            return true
        }

        /// Feeds `data` to libvpx and borrows the picture it produced, or nil when none.
        private func nextPicture(_ data: UnsafeRawBufferPointer) throws(CodecError) -> VideoPlanes? {
            guard let bytes = data.baseAddress, !data.isEmpty else {
                throw CodecError(.corruptPacket, "vp8: frame is empty")
            }
            let status = vpx_codec_decode(context.pointer, bytes.assumingMemoryBound(to: UInt8.self),
                                          UInt32(data.count), nil, 0)
            guard status == VPX_CODEC_OK else { throw VP8.error(status, context.pointer, while: "decoding") }
            var corrupted: Int32 = 0
            let corruptStatus = CVpx_codec_control_int_pointer(context.pointer, Int32(VP8D_GET_FRAME_CORRUPTED.rawValue),
                                                               &corrupted)
            var iterator: vpx_codec_iter_t?
            guard let image = vpx_codec_get_frame(context.pointer, &iterator) else { return nil }
            if corruptStatus == VPX_CODEC_OK, corrupted != 0 {
                throw CodecError(.corruptPacket, "vp8: decoded frame is corrupt (missing or damaged data)")
            }
            let width = Int(image.pointee.d_w)
            let height = Int(image.pointee.d_h)
            guard image.pointee.fmt == VPX_IMG_FMT_I420, width > 0, height > 0 else {
                throw CodecError(.unsupported, "vp8: decoder produced an image format other than I420")
            }
            let (planes, strides) = (image.pointee.planes, image.pointee.stride)
            guard let y = planes.0, let u = planes.1, let v = planes.2,
                  Int(strides.0) >= width, Int(strides.1) >= (width + 1) / 2, Int(strides.2) >= (width + 1) / 2 else {
                throw CodecError(.internalFailure, "vp8: decoder produced an image without planes")
            }
            return VideoPlanes(width: width, height: height, y: UnsafePointer(y), u: UnsafePointer(u), v: UnsafePointer(v),
                               strideY: Int(strides.0), strideU: Int(strides.1), strideV: Int(strides.2))
        }

        /// Decodes one frame into a new `VideoFrame`, or nil when there was none to show.
        public func decode(_ data: [UInt8], timestamp: Duration = .zero) throws(CodecError) -> VideoFrame? {
            var frame = VideoFrame(width: 2, height: 2)
            let produced = try data.withUnsafeBufferPointer { (bytes) throws(CodecError) in
                try decode(UnsafeRawBufferPointer(bytes), timestamp: timestamp, into: &frame)
            }
            return produced ? frame : nil
        }
    }
}
