import CVpx

extension VP8 {
    /// How long the encoder may spend per frame.
    public enum Deadline: Sendable, Hashable, CustomStringConvertible {
        /// As fast as real time needs (calls, live streams).
        case realtime
        /// Better quality, slower.
        case good
        /// Best quality, slowest.
        case best

        var cValue: UInt {
            switch self {
            case .realtime: CVpx_DL_REALTIME
            case .good: CVpx_DL_GOOD_QUALITY
            case .best: CVpx_DL_BEST_QUALITY
            }
        }

        public var description: String {
            switch self {
            case .realtime: "realtime"
            case .good: "good"
            case .best: "best"
            }
        }
    }

    /// Encoder settings. Validated when an encoder is created.
    public struct Configuration: Sendable, Hashable {
        /// Frame width in pixels: even, 2 to 16384.
        public var width: Int
        /// Frame height in pixels: even, 2 to 16384.
        public var height: Int
        /// Target bitrate in bits per second (at least 10 000).
        public var bitrate: Int
        /// Nominal frames per second, 1 to 240.
        public var frameRate: Int = 30
        /// Speed/quality trade-off, -16 to 16; larger magnitude is faster. Realtime use
        /// wants -4 to -16.
        public var cpuUsed: Int = -6
        /// Encoder threads, 1 to 16. Fixed for the encoder's life.
        public var threads: Int = 1
        /// Longest distance between keyframes, in frames.
        public var keyframeInterval: Int = 3_000
        /// Make every frame decodable after a loss of earlier non-reference frames.
        public var errorResilient: Bool = false
        /// Let rate control skip frames when the buffer runs dry. With temporal layers this
        /// also makes the stream error resilient (see `Encoder.settings(for:)`).
        public var allowsFrameDrops: Bool = false
        /// Time budget per frame.
        public var deadline: Deadline = .realtime
        /// Temporal layers, 1 to 3 (libvpx temporal scalability): with 2 the frames go
        /// 0,1,0,1 (30 fps becomes 15 + 15), with 3 they go 0,2,1,2 (7.5 + 7.5 + 15). A
        /// forwarding server drops the upper layers for a subscriber that cannot take them;
        /// what is left still decodes. Upper layers get 40 % (2 layers) or 40 % and 20 %
        /// (3 layers) of the bitrate.
        public var temporalLayers: Int = 1

        public init(width: Int, height: Int, bitrate: Int) {
            self.width = width
            self.height = height
            self.bitrate = bitrate
        }

        /// Throws when a value is out of range, naming it.
        public func validate() throws(CodecError) {
            for (name, value) in [("width", width), ("height", height)] {
                guard (2...16_384).contains(value) else {
                    throw CodecError(.invalidConfiguration, "vp8: \(name) \(value) is outside 2...16384")
                }
                guard value % 2 == 0 else {
                    throw CodecError(.invalidConfiguration, "vp8: \(name) \(value) is odd; I420 needs even dimensions")
                }
            }
            guard VP8.bitrates.contains(bitrate) else {
                throw CodecError(.invalidConfiguration, "vp8: bitrate \(bitrate) b/s is outside \(VP8.bitrates)")
            }
            guard (1...240).contains(frameRate) else {
                throw CodecError(.invalidConfiguration, "vp8: frame rate \(frameRate) is outside 1...240")
            }
            guard (-16...16).contains(cpuUsed) else {
                throw CodecError(.invalidConfiguration, "vp8: cpu-used \(cpuUsed) is outside -16...16")
            }
            guard (1...16).contains(threads) else {
                throw CodecError(.invalidConfiguration, "vp8: threads \(threads) is outside 1...16")
            }
            guard keyframeInterval >= 1 else {
                throw CodecError(.invalidConfiguration, "vp8: keyframe interval \(keyframeInterval) must be at least 1")
            }
            guard (1...3).contains(temporalLayers) else {
                throw CodecError(.invalidConfiguration, "vp8: temporal layers \(temporalLayers) is outside 1...3")
            }
        }
    }

    /// What `encode` produced for one input frame.
    public struct EncodedFrameInfo: Sendable, Hashable {
        /// Bytes written to the output buffer.
        public var byteCount: Int
        /// A keyframe decodes without any earlier frame.
        public var isKeyframe: Bool
        /// Capture timestamp of the input frame.
        public var timestamp: Duration
        /// Its temporal layer (0 with a single layer; keyframes are always 0).
        public var temporalLayer: UInt8 = 0
        /// It references only the base layer: a forwarding server may start sending its
        /// layer here (RFC 7741's Y bit).
        public var layerSync = true
    }

    /// One encoded VP8 frame.
    public struct EncodedFrame: Sendable, Hashable {
        public var data: [UInt8]
        public var isKeyframe: Bool
        public var timestamp: Duration
    }

    /// A VP8 encoder. One owner at a time: not thread-safe.
    ///
    /// Size and thread count are fixed for a libvpx context: `setResolution` builds a new
    /// context instead of reconfiguring the live one (the path behind CVE-2023-5217).
    public final class Encoder {
        /// The settings in force (bitrate follows live changes).
        public private(set) var configuration: Configuration
        private let context = Context()
        private var settings = vpx_codec_enc_cfg_t()
        private var image = vpx_image_t()
        private var lastPTS: Int64 = -1
        private var frameDurationTicks: UInt
        private var pattern: TemporalPattern

        /// Creates an encoder.
        /// - Throws: `CodecError.invalidConfiguration` naming the bad value.
        public init(configuration: Configuration) throws(CodecError) {
            try configuration.validate()
            self.configuration = configuration
            frameDurationTicks = UInt(VP8.clockRate / configuration.frameRate)
            pattern = TemporalPattern(layers: configuration.temporalLayers)
            try open()
        }

        private func open() throws(CodecError) {
            var settings = try Self.settings(for: configuration)
            let status = CVpx_codec_enc_init(context.pointer, vpx_codec_vp8_cx(), &settings, 0)
            guard status == VPX_CODEC_OK else { throw VP8.error(status, context.pointer, while: "creating the encoder") }
            context.isInitialized = true
            self.settings = settings
            try Self.applyControls(context.pointer, configuration)
            image = Self.imageHeader(width: configuration.width, height: configuration.height)
            lastPTS = -1
            pattern = TemporalPattern(layers: configuration.temporalLayers)
        }

        /// libvpx settings for a validated configuration: one-pass CBR, no lag.
        static func settings(for c: Configuration) throws(CodecError) -> vpx_codec_enc_cfg_t {
            var settings = vpx_codec_enc_cfg_t()
            let status = vpx_codec_enc_config_default(vpx_codec_vp8_cx(), &settings, 0)
            guard status == VPX_CODEC_OK else { throw VP8.error(status, nil, while: "reading default settings") }
            settings.g_w = UInt32(c.width)
            settings.g_h = UInt32(c.height)
            settings.g_threads = UInt32(c.threads)
            settings.g_timebase = vpx_rational(num: 1, den: Int32(VP8.clockRate))
            settings.g_lag_in_frames = 0
            // libvpx 1.12 drops a frame without saving the entropy context, yet restores the saved
            // (stale) one when the frame was not to update it, as upper temporal layer frames are:
            // the encoder's probabilities then differ from every decoder's, and the stream is
            // corrupt from the next frame on. Error resilience never keeps a frame's updates, so the
            // saved context is always current. (libwebrtc turns it on with temporal layers too.)
            let dropsUpperLayers = c.allowsFrameDrops && c.temporalLayers > 1
            settings.g_error_resilient = c.errorResilient || dropsUpperLayers
                ? vpx_codec_er_flags_t(VPX_ERROR_RESILIENT_DEFAULT) : 0
            settings.g_pass = VPX_RC_ONE_PASS
            settings.rc_end_usage = VPX_CBR
            settings.rc_target_bitrate = UInt32(c.bitrate / 1000)
            settings.rc_min_quantizer = 2
            settings.rc_max_quantizer = 56
            settings.rc_undershoot_pct = 100
            settings.rc_overshoot_pct = 15
            settings.rc_buf_initial_sz = 500
            settings.rc_buf_optimal_sz = 600
            settings.rc_buf_sz = 1000
            settings.rc_dropframe_thresh = c.allowsFrameDrops ? 30 : 0
            settings.kf_mode = VPX_KF_AUTO
            settings.kf_min_dist = 0
            settings.kf_max_dist = UInt32(c.keyframeInterval)
            TemporalPattern.configure(&settings, layers: c.temporalLayers, bitrate: c.bitrate)
            return settings
        }

        /// The controls every encoder context gets once it is initialized.
        static func applyControls(_ context: UnsafeMutablePointer<vpx_codec_ctx_t>, _ c: Configuration) throws(CodecError) {
            try control(context, VP8E_SET_CPUUSED, Int32(c.cpuUsed), "setting cpu-used")
            try control(context, VP8E_SET_STATIC_THRESHOLD, 1, "setting the static threshold")
            try control(context, VP8E_SET_NOISE_SENSITIVITY, 0, "setting noise sensitivity")
            // Cap keyframes at 3x an average frame so they do not flood the network.
            try control(context, VP8E_SET_MAX_INTRA_BITRATE_PCT, 300, "setting the keyframe size cap")
        }

        /// An image header only: its planes point into a frame during encode.
        static func imageHeader(width: Int, height: Int) -> vpx_image_t {
            var image = vpx_image_t()
            image.fmt = VPX_IMG_FMT_I420
            image.w = UInt32(width)
            image.h = UInt32(height)
            image.d_w = image.w
            image.d_h = image.h
            image.x_chroma_shift = 1
            image.y_chroma_shift = 1
            image.bps = 12
            image.bit_depth = 8
            return image
        }

        /// Sets an int-valued control, turning a refusal into a typed error.
        static func control(_ context: UnsafeMutablePointer<vpx_codec_ctx_t>, _ id: vp8e_enc_control_id, _ value: Int32,
                            _ action: String) throws(CodecError) {
            let status = CVpx_codec_control_int(context, Int32(id.rawValue), value)
            guard status == VPX_CODEC_OK else { throw VP8.error(status, context, while: action) }
        }

        /// Changes the target bitrate for the next frames (live).
        public func setBitrate(_ bitsPerSecond: Int) throws(CodecError) {
            var next = configuration
            next.bitrate = bitsPerSecond
            try next.validate()
            settings.rc_target_bitrate = UInt32(bitsPerSecond / 1000)
            TemporalPattern.configure(&settings, layers: configuration.temporalLayers, bitrate: bitsPerSecond)
            let status = vpx_codec_enc_config_set(context.pointer, &settings)
            guard status == VPX_CODEC_OK else { throw VP8.error(status, context.pointer, while: "setting the bitrate") }
            configuration = next
        }

        /// Changes the frame size by building a new encoder context; the next frame is a
        /// keyframe.
        public func setResolution(width: Int, height: Int) throws(CodecError) {
            var next = configuration
            next.width = width
            next.height = height
            try next.validate()
            let previous = configuration
            context.destroy()
            configuration = next
            do {
                try open()
            } catch {
                configuration = previous
                try open()
                throw error
            }
        }

        /// Encodes `frame` into `output`; allocates nothing in steady state.
        /// - Returns: what was written, or nil when rate control dropped the frame.
        /// - Throws: `CodecError.invalidInput` when the frame size differs from the
        ///   configuration, `CodecError.bufferTooSmall` when `output` is too short.
        public func encode(_ frame: VideoFrame, forceKeyframe: Bool = false,
                           into output: UnsafeMutableRawBufferPointer) throws(CodecError) -> EncodedFrameInfo? {
            guard frame.width == configuration.width, frame.height == configuration.height else {
                throw CodecError(.invalidInput,
                                 "vp8: frame is \(frame.width)x\(frame.height), encoder is \(configuration.width)x\(configuration.height) (call setResolution first)")
            }
            let ticks = Int64(frame.timestamp / .seconds(1) * Double(VP8.clockRate))
            let pts = ticks > lastPTS ? ticks : lastPTS + Int64(frameDurationTicks)
            lastPTS = pts
            if forceKeyframe { pattern.restart() }
            let layer = pattern.next
            if configuration.temporalLayers > 1 {
                try Self.control(context.pointer, VP8E_SET_TEMPORAL_LAYER_ID, Int32(layer.id), "setting the temporal layer")
            }
            let flags = vpx_enc_frame_flags_t(forceKeyframe ? Int(VPX_EFLAG_FORCE_KF) : Int(layer.flags))
            let status = frame.withPlanes { y, u, v in
                image.planes.0 = UnsafeMutablePointer(mutating: y.baseAddress)
                image.planes.1 = UnsafeMutablePointer(mutating: u.baseAddress)
                image.planes.2 = UnsafeMutablePointer(mutating: v.baseAddress)
                image.stride.0 = Int32(frame.strideY)
                image.stride.1 = Int32(frame.strideUV)
                image.stride.2 = Int32(frame.strideUV)
                return vpx_codec_encode(context.pointer, &image, pts, frameDurationTicks, flags, configuration.deadline.cValue)
            }
            image.planes = (nil, nil, nil, nil)
            guard status == VPX_CODEC_OK else { throw VP8.error(status, context.pointer, while: "encoding") }

            var result: EncodedFrameInfo?
            var iterator: vpx_codec_iter_t?
            while let packet = vpx_codec_get_cx_data(context.pointer, &iterator) {
                guard packet.pointee.kind == VPX_CODEC_CX_FRAME_PKT else { continue }
                let encoded = packet.pointee.data.frame
                let offset = result?.byteCount ?? 0
                guard offset + encoded.sz <= output.count, let destination = output.baseAddress else {
                    throw CodecError(.bufferTooSmall, "vp8: frame of \(offset + encoded.sz) bytes does not fit \(output.count)")
                }
                (destination + offset).copyMemory(from: encoded.buf, byteCount: encoded.sz)
                let isKey = (encoded.flags & vpx_codec_frame_flags_t(VPX_FRAME_IS_KEY)) != 0
                result = EncodedFrameInfo(byteCount: offset + encoded.sz, isKeyframe: isKey || (result?.isKeyframe ?? false),
                                          timestamp: frame.timestamp)
            }
            guard var result else { return nil }
            pattern.advance(afterKeyframe: result.isKeyframe)
            result.temporalLayer = result.isKeyframe ? 0 : layer.id
            result.layerSync = result.isKeyframe || layer.sync
            return result
        }

        /// Encodes `frame` and returns the encoded frame, or nil when rate control dropped it.
        public func encode(_ frame: VideoFrame, forceKeyframe: Bool = false) throws(CodecError) -> EncodedFrame? {
            var buffer = [UInt8](repeating: 0, count: maximumFrameSize)
            let info = try buffer.withUnsafeMutableBufferPointer { (output) throws(CodecError) in
                try encode(frame, forceKeyframe: forceKeyframe, into: UnsafeMutableRawBufferPointer(output))
            }
            guard let info else { return nil }
            buffer.removeLast(buffer.count - info.byteCount)
            return EncodedFrame(data: buffer, isKeyframe: info.isKeyframe, timestamp: info.timestamp)
        }

        /// An output size no encoded frame of this configuration exceeds: an uncompressed
        /// I420 frame plus headroom.
        public var maximumFrameSize: Int {
            configuration.width * configuration.height * 3 / 2 + 4_096
        }
    }
}
