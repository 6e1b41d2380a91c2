import CVpx

extension VP8 {
    /// VP8 simulcast: each picture encoded at up to three sizes by libvpx's multi-resolution
    /// encoder, one independent VP8 stream per size (a "layer", lowest first). One owner at
    /// a time: not thread-safe.
    ///
    /// libvpx lists its levels highest first and encodes them all in one call; this type
    /// keeps the caller's lowest-first order and does the translation. Each layer has its
    /// own bitrate, keyframes, temporal pattern (the same number of temporal layers for
    /// all) and rate control, which may drop that layer's frame alone.
    public final class SimulcastEncoder {
        /// One layer's size and bitrate.
        public struct Layer: Sendable, Hashable {
            /// Width in pixels: even, smaller than the next layer's.
            public var width: Int
            /// Height in pixels: even, smaller than the next layer's.
            public var height: Int
            /// Target bitrate in bits per second, within `VP8.bitrates`.
            public var bitrate: Int

            public init(width: Int, height: Int, bitrate: Int) {
                self.width = width
                self.height = height
                self.bitrate = bitrate
            }
        }

        /// A set of layers by index (0 is the lowest).
        public struct LayerSet: OptionSet, Sendable, Hashable {
            public let rawValue: UInt8
            public init(rawValue: UInt8) { self.rawValue = rawValue }

            /// The layer at `index` (0 to 2).
            public static func layer(_ index: Int) -> LayerSet {
                (0..<SimulcastEncoder.maximumLayers).contains(index) ? LayerSet(rawValue: 1 << UInt8(index)) : []
            }
            /// Every layer.
            public static let all = LayerSet(rawValue: 0b111)

            /// Whether the layer at `index` is in the set.
            public func contains(layer index: Int) -> Bool { !intersection(.layer(index)).isEmpty }
        }

        /// What one `encode` produced per layer, lowest first: nil for a layer that is
        /// paused or whose frame rate control dropped. A value, not an array: no allocation.
        public struct EncodedLayers: RandomAccessCollection, Sendable {
            public let startIndex = 0
            public let endIndex: Int
            private var slots: (EncodedFrameInfo?, EncodedFrameInfo?, EncodedFrameInfo?) = (nil, nil, nil)

            init(count: Int) { endIndex = count }

            /// The frame of layer `index`, or nil when it produced none.
            public internal(set) subscript(index: Int) -> EncodedFrameInfo? {
                get {
                    precondition(indices.contains(index), "layer \(index) is outside 0..<\(endIndex)")
                    return switch index {
                    case 0: slots.0
                    case 1: slots.1
                    default: slots.2
                    }
                }
                set {
                    precondition(indices.contains(index), "layer \(index) is outside 0..<\(endIndex)")
                    switch index {
                    case 0: slots.0 = newValue
                    case 1: slots.1 = newValue
                    default: slots.2 = newValue
                    }
                }
            }
        }

        /// The most layers an encoder takes.
        public static let maximumLayers = 3

        /// Whether this libvpx was built with `--enable-multi-res-encoding`. Without it the
        /// same calls still work, as independent encoders behind one call.
        public static let libraryHasMultiResolution: Bool =
            String(cString: vpx_codec_build_config()).contains("multi-res")

        /// One layer's state, lowest first.
        private struct Level {
            var configuration: Configuration
            var pattern: TemporalPattern
            var isActive = true
            /// Requested, or owed after a resume; cleared when a keyframe comes out.
            var keyframePending = false
            /// Frames out since the last keyframe (its own cadence: libvpx places automatic
            /// keyframes on the lowest level only).
            var framesSinceKeyframe = 0
            /// The temporal layer this frame was encoded as.
            var planned: (id: UInt8, flags: Int32, sync: Bool) = (0, 0, true)
        }

        private var levels: [Level]
        /// libvpx's arrays, highest level first: contexts (plus one spare, below), settings
        /// and images. They must stay put: libvpx walks them by pointer arithmetic.
        private let context: Context
        private let settings: UnsafeMutablePointer<vpx_codec_enc_cfg_t>
        private let images: UnsafeMutablePointer<vpx_image_t>
        /// The downscaled pictures of every level but the highest, back to back.
        private let pixels: UnsafeMutablePointer<UInt8>
        private let pixelCount: Int
        private let deadline: Deadline
        private let frameDurationTicks: UInt
        private var lastPTS: Int64 = -1

        /// Creates an encoder whose layers share the frame rate, temporal layers, cpu-used
        /// and deadline; the top layer gets `threads`, the others one thread each.
        /// - Parameters:
        ///   - layers: 1 to 3 layers, lowest first, each larger than the one before.
        ///   - frameRate: Nominal frames per second, 1 to 240.
        ///   - temporalLayers: Temporal layers per layer, 1 to 3 (see `Configuration`).
        /// - Throws: `CodecError.invalidConfiguration` naming the bad value.
        public convenience init(layers: [Layer], frameRate: Int = 30, temporalLayers: Int = 1,
                                keyframeInterval: Int = 3_000, cpuUsed: Int = -6, threads: Int = 1,
                                errorResilient: Bool = false, allowsFrameDrops: Bool = false,
                                deadline: Deadline = .realtime) throws(CodecError) {
            let configurations = layers.enumerated().map { index, layer in
                var configuration = Configuration(width: layer.width, height: layer.height, bitrate: layer.bitrate)
                configuration.frameRate = frameRate
                configuration.temporalLayers = temporalLayers
                configuration.keyframeInterval = keyframeInterval
                configuration.cpuUsed = cpuUsed
                configuration.threads = index == layers.count - 1 ? threads : 1
                configuration.errorResilient = errorResilient
                configuration.allowsFrameDrops = allowsFrameDrops
                configuration.deadline = deadline
                return configuration
            }
            try self.init(configurations: configurations)
        }

        /// Creates an encoder from one configuration per layer, lowest first. Frame rate,
        /// temporal layers and deadline must agree; the rest may differ per layer.
        /// - Throws: `CodecError.invalidConfiguration` naming the bad value and its layer.
        public init(configurations: [Configuration]) throws(CodecError) {
            try Self.validate(configurations)
            let count = configurations.count
            levels = configurations.map { Level(configuration: $0, pattern: TemporalPattern(layers: $0.temporalLayers)) }
            deadline = configurations[0].deadline
            frameDurationTicks = UInt(VP8.clockRate / configurations[0].frameRate)
            // vpx_codec_encode saves its status one context past the lowest level's when that
            // level fails: the spare keeps that store inside memory we own.
            context = Context(count: count, spare: 1)
            settings = .allocate(capacity: count)
            settings.initialize(repeating: vpx_codec_enc_cfg_t(), count: count)
            images = .allocate(capacity: count)
            images.initialize(repeating: vpx_image_t(), count: count)
            pixelCount = configurations.dropLast().reduce(0) { $0 + Self.planeBytes($1.width, $1.height) }
            pixels = .allocate(capacity: max(pixelCount, 1))
            pixels.initialize(repeating: 0, count: max(pixelCount, 1))
            try open()
        }

        deinit {
            context.destroy()
            settings.deinitialize(count: levels.count)
            settings.deallocate()
            images.deinitialize(count: levels.count)
            images.deallocate()
            pixels.deinitialize(count: max(pixelCount, 1))
            pixels.deallocate()
        }

        private func open() throws(CodecError) {
            let count = levels.count
            // libvpx reads each down-sampling factor (level i to i + 1, the last unused) at
            // init and keeps a copy, so these need not outlive the call.
            var factors = [vpx_rational_t](repeating: vpx_rational_t(num: 1, den: 1), count: count)
            for layer in 0..<count {
                var level = try Encoder.settings(for: levels[layer].configuration)
                level.kf_mode = VPX_KF_DISABLED
                settings[slot(layer)] = level
                if layer > 0 {
                    let (higher, lower) = (levels[layer].configuration.width, levels[layer - 1].configuration.width)
                    let divisor = Self.greatestCommonDivisor(higher, lower)
                    factors[slot(layer)] = vpx_rational_t(num: Int32(higher / divisor), den: Int32(lower / divisor))
                }
            }
            let status = factors.withUnsafeMutableBufferPointer { factors in
                CVpx_codec_enc_init_multi(context.pointer, vpx_codec_vp8_cx(), settings, Int32(count), 0,
                                          factors.baseAddress)
            }
            guard status == VPX_CODEC_OK else {
                throw VP8.error(status, failedContext(), while: "creating the \(count)-level simulcast encoder")
            }
            context.isInitialized = true
            var offset = 0
            for layer in 0..<count {
                let c = levels[layer].configuration
                try Encoder.applyControls(context.pointer + slot(layer), c)
                images[slot(layer)] = Encoder.imageHeader(width: c.width, height: c.height)
                guard layer < count - 1 else { continue }
                // Lower levels encode from pixels we own; the top level from the caller's frame.
                let (lumaBytes, chromaBytes) = (c.width * c.height, (c.width / 2) * (c.height / 2))
                images[slot(layer)].planes = (pixels + offset, pixels + offset + lumaBytes,
                                              pixels + offset + lumaBytes + chromaBytes, nil)
                images[slot(layer)].stride = (Int32(c.width), Int32(c.width / 2), Int32(c.width / 2), 0)
                offset += lumaBytes + 2 * chromaBytes
            }
        }

        /// Layers in use.
        public var layerCount: Int { levels.count }

        /// The settings of each layer, lowest first (bitrates follow `setBitrate`).
        public var configurations: [Configuration] { levels.map(\.configuration) }

        /// Whether the layer at `layer` is encoding (not paused).
        public func isActive(layer: Int) -> Bool { levels.indices.contains(layer) && levels[layer].isActive }

        /// Whether higher levels reuse the motion search of the level below (libvpx built
        /// with multi-resolution encoding and more than one layer): the CPU saving of
        /// simulcast over separate encoders.
        public var usesSharedMotionSearch: Bool { Self.libraryHasMultiResolution && levels.count > 1 }

        /// An output size no encoded frame of layer `layer` (0..<layerCount) exceeds: an
        /// uncompressed I420 frame plus headroom.
        public func maximumFrameSize(layer: Int) -> Int {
            let c = levels[layer].configuration
            return c.width * c.height * 3 / 2 + 4_096
        }

        /// Pauses or resumes a layer. A paused layer costs no encoding and yields nil; a
        /// resumed one starts with a keyframe (only that layer does).
        /// - Throws: `CodecError.invalidConfiguration` for a layer index out of range, or
        ///   what libvpx reports.
        public func setActive(_ active: Bool, layer: Int) throws(CodecError) {
            try checkIndex(layer)
            guard levels[layer].isActive != active else { return }
            // libvpx skips a level whose target bitrate is 0 (and keeps its last packets: see `collect`).
            try apply(bitrate: active ? levels[layer].configuration.bitrate : 0, layer: layer, "pausing or resuming a layer")
            levels[layer].isActive = active
            if active { levels[layer].keyframePending = true }
        }

        /// Changes one layer's target bitrate for the next frames (live). A paused layer
        /// takes it when it resumes.
        /// - Throws: `CodecError.invalidConfiguration` naming the bad value.
        public func setBitrate(_ bitsPerSecond: Int, layer: Int) throws(CodecError) {
            try checkIndex(layer)
            var next = levels[layer].configuration
            next.bitrate = bitsPerSecond
            do {
                try next.validate()
            } catch {
                throw Self.naming(layer, of: levels.count, error)
            }
            if levels[layer].isActive { try apply(bitrate: bitsPerSecond, layer: layer, "setting the bitrate") }
            levels[layer].configuration = next
        }

        private func apply(bitrate: Int, layer: Int, _ action: String) throws(CodecError) {
            let index = slot(layer)
            var level = settings[index]
            level.rc_target_bitrate = UInt32(bitrate / 1000)
            if bitrate > 0 {
                TemporalPattern.configure(&level, layers: levels[layer].configuration.temporalLayers, bitrate: bitrate)
            }
            let status = vpx_codec_enc_config_set(context.pointer + index, &level)
            guard status == VPX_CODEC_OK else { throw VP8.error(status, context.pointer + index, while: action) }
            settings[index] = level
        }

        /// Encodes `frame` at every active layer, each into its own buffer; allocates
        /// nothing in steady state.
        /// - Parameters:
        ///   - frame: A picture the size of the top layer.
        ///   - forceKeyframe: Layers whose next frame must be a keyframe; the others go on.
        ///   - outputs: One buffer per layer, lowest first, each at least
        ///     `maximumFrameSize(layer:)` bytes.
        /// - Returns: What each layer wrote, lowest first (nil: paused or dropped).
        /// - Throws: `CodecError.invalidInput` for a frame of another size or the wrong
        ///   number of buffers, `CodecError.bufferTooSmall` for a short buffer, or what
        ///   libvpx reports.
        public func encode(_ frame: VideoFrame, forceKeyframe: LayerSet = [],
                           into outputs: [UnsafeMutableRawBufferPointer]) throws(CodecError) -> EncodedLayers {
            let top = levels[levels.count - 1].configuration
            guard frame.width == top.width, frame.height == top.height else {
                throw CodecError(.invalidInput,
                                 "vp8 simulcast: frame is \(frame.width)x\(frame.height), the top layer is \(top.width)x\(top.height)")
            }
            guard outputs.count == levels.count else {
                throw CodecError(.invalidInput, "vp8 simulcast: \(outputs.count) output buffers for \(levels.count) layers")
            }
            for layer in levels.indices where outputs[layer].count < maximumFrameSize(layer: layer) {
                throw CodecError(.bufferTooSmall,
                                 "vp8 simulcast: layer \(layer)'s buffer holds \(outputs[layer].count) bytes, needs \(maximumFrameSize(layer: layer))")
            }
            let ticks = Int64(frame.timestamp / .seconds(1) * Double(VP8.clockRate))
            let pts = ticks > lastPTS ? ticks : lastPTS + Int64(frameDurationTicks)
            lastPTS = pts

            for layer in levels.indices {
                if forceKeyframe.contains(layer: layer) { levels[layer].keyframePending = true }
                guard levels[layer].isActive else { continue }
                if layer < levels.count - 1 { downscale(frame, layer: layer) }
                try plan(layer)
            }

            let status = frame.withPlanes { y, u, v in
                images[0].planes = (UnsafeMutablePointer(mutating: y.baseAddress), UnsafeMutablePointer(mutating: u.baseAddress),
                                    UnsafeMutablePointer(mutating: v.baseAddress), nil)
                images[0].stride = (Int32(frame.strideY), Int32(frame.strideUV), Int32(frame.strideUV), 0)
                // Flags 0: each level takes the ones its VP8E_SET_FRAME_FLAGS control set.
                return vpx_codec_encode(context.pointer, images, pts, frameDurationTicks, 0, deadline.cValue)
            }
            images[0].planes = (nil, nil, nil, nil)
            guard status == VPX_CODEC_OK else { throw VP8.error(status, failedContext(), while: "encoding") }

            var result = EncodedLayers(count: levels.count)
            for layer in levels.indices {
                result[layer] = try collect(layer, into: outputs[layer], timestamp: frame.timestamp)
            }
            return result
        }

        /// Encodes `frame` and returns each layer's frame, lowest first (nil: paused or dropped).
        public func encode(_ frame: VideoFrame, forceKeyframe: LayerSet = []) throws(CodecError) -> [EncodedFrame?] {
            let buffers = levels.indices.map { layer in
                UnsafeMutableRawBufferPointer.allocate(byteCount: maximumFrameSize(layer: layer), alignment: 16)
            }
            defer { for buffer in buffers { buffer.deallocate() } }
            let infos = try encode(frame, forceKeyframe: forceKeyframe, into: buffers)
            return infos.indices.map { layer in
                infos[layer].map { info in
                    EncodedFrame(data: Array(UnsafeRawBufferPointer(rebasing: buffers[layer][..<info.byteCount])),
                                 isKeyframe: info.isKeyframe, timestamp: info.timestamp)
                }
            }
        }

        /// Sets the frame flags and temporal layer of one level for the coming encode call.
        private func plan(_ layer: Int) throws(CodecError) {
            let c = levels[layer].configuration
            let forced = levels[layer].keyframePending || levels[layer].framesSinceKeyframe >= c.keyframeInterval
            if forced { levels[layer].pattern.restart() }
            let next = levels[layer].pattern.next
            levels[layer].planned = next
            let pointer = context.pointer + slot(layer)
            let flags = forced ? Int32(VPX_EFLAG_FORCE_KF) : next.flags
            // Literal actions: an interpolated one would allocate on every frame.
            try Encoder.control(pointer, VP8E_SET_FRAME_FLAGS, flags, "setting a layer's frame flags")
            if c.temporalLayers > 1 {
                try Encoder.control(pointer, VP8E_SET_TEMPORAL_LAYER_ID, Int32(next.id), "setting a layer's temporal layer")
            }
        }

        /// Reads one level's output. A paused level's packet list still holds its last
        /// frame (libvpx returns before clearing it), so that is read and dropped.
        private func collect(_ layer: Int, into output: UnsafeMutableRawBufferPointer,
                             timestamp: Duration) throws(CodecError) -> EncodedFrameInfo? {
            let pointer = context.pointer + slot(layer)
            var iterator: vpx_codec_iter_t?
            var byteCount = 0
            var isKeyframe = false
            var produced = false
            while let packet = vpx_codec_get_cx_data(pointer, &iterator) {
                guard levels[layer].isActive, packet.pointee.kind == VPX_CODEC_CX_FRAME_PKT else { continue }
                let encoded = packet.pointee.data.frame
                guard byteCount + encoded.sz <= output.count, let destination = output.baseAddress else {
                    throw CodecError(.bufferTooSmall,
                                     "vp8 simulcast: layer \(layer)'s frame of \(byteCount + encoded.sz) bytes does not fit \(output.count)")
                }
                (destination + byteCount).copyMemory(from: encoded.buf, byteCount: encoded.sz)
                byteCount += encoded.sz
                isKeyframe = isKeyframe || (encoded.flags & vpx_codec_frame_flags_t(VPX_FRAME_IS_KEY)) != 0
                produced = true
            }
            guard produced else { return nil }
            let planned = levels[layer].planned
            levels[layer].pattern.advance(afterKeyframe: isKeyframe)
            if isKeyframe {
                levels[layer].keyframePending = false
                levels[layer].framesSinceKeyframe = 1
            } else {
                levels[layer].framesSinceKeyframe += 1
            }
            return EncodedFrameInfo(byteCount: byteCount, isKeyframe: isKeyframe, timestamp: timestamp,
                                    temporalLayer: isKeyframe ? 0 : planned.id, layerSync: isKeyframe || planned.sync)
        }

        private func downscale(_ frame: VideoFrame, layer: Int) {
            let c = levels[layer].configuration
            let image = images[slot(layer)]
            frame.scale(intoY: image.planes.0, u: image.planes.1, v: image.planes.2, strideY: c.width,
                        strideUV: c.width / 2, width: c.width, height: c.height)
        }

        /// The context that recorded a failure, for libvpx's detail: the multi-level calls
        /// save their status in whichever level failed.
        private func failedContext() -> UnsafeMutablePointer<vpx_codec_ctx_t> {
            let failed = (0..<levels.count).first { context.pointer[$0].err != VPX_CODEC_OK } ?? 0
            return context.pointer + failed
        }

        /// libvpx's index of a layer: its level 0 is the highest.
        private func slot(_ layer: Int) -> Int { levels.count - 1 - layer }

        private func checkIndex(_ layer: Int) throws(CodecError) {
            guard levels.indices.contains(layer) else {
                throw CodecError(.invalidConfiguration, "vp8 simulcast: layer \(layer) is outside 0..<\(levels.count)")
            }
        }

        private static func planeBytes(_ width: Int, _ height: Int) -> Int {
            width * height + 2 * (width / 2) * (height / 2)
        }

        private static func greatestCommonDivisor(_ a: Int, _ b: Int) -> Int {
            b == 0 ? a : greatestCommonDivisor(b, a % b)
        }

        /// Rewrites a configuration error to say which layer it is about.
        private static func naming(_ layer: Int, of count: Int, _ error: CodecError) -> CodecError {
            let detail = error.message.hasPrefix("vp8: ") ? String(error.message.dropFirst(5)) : error.message
            return CodecError(error.code, "vp8 simulcast: layer \(layer) of \(count): \(detail)", status: error.status)
        }

        private static func validate(_ configurations: [Configuration]) throws(CodecError) {
            guard (1...maximumLayers).contains(configurations.count) else {
                throw CodecError(.invalidConfiguration,
                                 "vp8 simulcast: \(configurations.count) layers is outside 1...\(maximumLayers)")
            }
            let count = configurations.count
            for (layer, c) in configurations.enumerated() {
                do {
                    try c.validate()
                } catch {
                    throw naming(layer, of: count, error)
                }
            }
            let base = configurations[0]
            for (layer, c) in configurations.enumerated().dropFirst() {
                let lower = configurations[layer - 1]
                guard c.width > lower.width, c.height > lower.height else {
                    throw CodecError(.invalidConfiguration,
                                     "vp8 simulcast: layer \(layer) is \(c.width)x\(c.height), not larger than layer \(layer - 1)'s \(lower.width)x\(lower.height) (list layers lowest first)")
                }
                let divisor = greatestCommonDivisor(c.width, lower.width)
                guard c.width / divisor <= 4_096 else {
                    throw CodecError(.invalidConfiguration,
                                     "vp8 simulcast: widths \(lower.width) and \(c.width) of layers \(layer - 1) and \(layer) give a down-sampling factor of \(c.width / divisor)/\(lower.width / divisor), beyond libvpx's 4096")
                }
                guard c.frameRate == base.frameRate else {
                    throw CodecError(.invalidConfiguration,
                                     "vp8 simulcast: layer \(layer)'s frame rate \(c.frameRate) differs from layer 0's \(base.frameRate)")
                }
                guard c.temporalLayers == base.temporalLayers else {
                    throw CodecError(.invalidConfiguration,
                                     "vp8 simulcast: layer \(layer)'s temporal layers \(c.temporalLayers) differ from layer 0's \(base.temporalLayers)")
                }
                guard c.deadline == base.deadline else {
                    throw CodecError(.invalidConfiguration,
                                     "vp8 simulcast: layer \(layer)'s deadline \(c.deadline) differs from layer 0's \(base.deadline)")
                }
            }
        }
    }
}
