import CVpx

/// VP8 (RFC 6386) through libvpx.
public enum VP8 {
    /// Bitrates the encoder takes, bits per second.
    public static let bitrates = 10_000...100_000_000

    /// The RTP clock rate VP8 uses (RFC 7741); encoder timestamps are in these ticks.
    public static let clockRate = 90_000

    /// Turns a libvpx status into a typed error, with libvpx's detail when it gives one.
    static func error(_ status: vpx_codec_err_t, _ context: UnsafeMutablePointer<vpx_codec_ctx_t>?,
                      while action: String) -> CodecError {
        var words = String(cString: vpx_codec_err_to_string(status))
        if let context, let detail = vpx_codec_error_detail(context) {
            words += ": " + String(cString: detail)
        }
        let code: CodecError.Code = switch status {
        case VPX_CODEC_MEM_ERROR: .outOfMemory
        case VPX_CODEC_INVALID_PARAM: .invalidConfiguration
        case VPX_CODEC_CORRUPT_FRAME, VPX_CODEC_UNSUP_BITSTREAM: .corruptPacket
        case VPX_CODEC_INCAPABLE, VPX_CODEC_UNSUP_FEATURE: .unsupported
        default: .internalFailure
        }
        return CodecError(code, "vp8: \(action) failed: \(words)", status: Int32(bitPattern: status.rawValue))
    }

    /// Heap-allocated codec contexts: libvpx keeps pointers into them, so they must not
    /// move. One for a plain encoder or decoder; a multi-resolution encoder wants its
    /// contexts as one contiguous array.
    final class Context {
        /// The first context.
        let pointer: UnsafeMutablePointer<vpx_codec_ctx_t>
        /// Contexts in use (initialized together, destroyed together).
        let count: Int
        /// Zeroed contexts after the used ones, never initialized (see `SimulcastEncoder`).
        private let spare: Int
        var isInitialized = false

        init(count: Int = 1, spare: Int = 0) {
            self.count = count
            self.spare = spare
            pointer = .allocate(capacity: count + spare)
            pointer.initialize(repeating: vpx_codec_ctx_t(), count: count + spare)
        }

        func destroy() {
            if isInitialized {
                for index in 0..<count { vpx_codec_destroy(pointer + index) }
            }
            isInitialized = false
        }

        deinit {
            destroy()
            pointer.deinitialize(count: count + spare)
            pointer.deallocate()
        }
    }

    //  Frame tag (RFC 6386 section 9.1), 3 bytes, read as one little-endian 24-bit value:
    //    bit 0        frame type: 0 keyframe, 1 interframe
    //    bits 1-3     version
    //    bit 4        show_frame
    //    bits 5-23    size of the first data partition
    //  A keyframe goes on:
    //    bytes 3-5    start code 9d 01 2a
    //    bytes 6-7    little-endian: width (low 14 bits), horizontal scale (top 2 bits)
    //    bytes 8-9    little-endian: height (low 14 bits), vertical scale (top 2 bits)
    private static let interframeBit: UInt8 = 0x01
    private static let startCode: (UInt8, UInt8, UInt8) = (0x9D, 0x01, 0x2A)
    private static let dimensionMask: UInt16 = 0x3FFF
    private static let keyframeHeaderLength = 10

    /// The picture size a VP8 keyframe declares, read from the start of a VP8 payload (the
    /// encoded frame, after any RTP payload descriptor). Reads at most 10 bytes.
    /// - Parameter payload: The frame's first bytes.
    /// - Returns: Width and height in pixels (the upscaling bits are not applied), or nil
    ///   for an interframe, a payload shorter than a keyframe header, a wrong start code
    ///   or a zero size.
    public static func keyframeSize(_ payload: UnsafeRawBufferPointer) -> (width: Int, height: Int)? {
        guard payload.count >= keyframeHeaderLength, payload[0] & interframeBit == 0,
              payload[3] == startCode.0, payload[4] == startCode.1, payload[5] == startCode.2 else { return nil }
        let width = (UInt16(payload[6]) | UInt16(payload[7]) << 8) & dimensionMask
        let height = (UInt16(payload[8]) | UInt16(payload[9]) << 8) & dimensionMask
        guard width > 0, height > 0 else { return nil }
        return (Int(width), Int(height))
    }
}
