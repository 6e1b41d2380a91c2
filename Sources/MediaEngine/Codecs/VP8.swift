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

    /// A heap-allocated codec context: libvpx keeps pointers into it, so it must not move.
    final class Context {
        let pointer: UnsafeMutablePointer<vpx_codec_ctx_t>
        var isInitialized = false

        init() {
            pointer = .allocate(capacity: 1)
            pointer.initialize(to: vpx_codec_ctx_t())
        }

        func destroy() {
            if isInitialized { vpx_codec_destroy(pointer) }
            isInitialized = false
        }

        deinit {
            destroy()
            pointer.deinitialize(count: 1)
            pointer.deallocate()
        }
    }
}
