import CVpx

extension VP8 {
    /// Where one VP8 stream is in its temporal layer pattern, and what each frame of the
    /// pattern may reference and update. `VP8.Encoder` keeps one, `VP8.SimulcastEncoder`
    /// one per resolution.
    ///
    /// With 2 layers the frames go 0,1,0,1; with 3 they go 0,2,1,2. Every layer references
    /// the base frame before it; layer 2 (of 3) also the last layer-1 frame. No upper layer
    /// frame updates the entropy or what a lower layer uses, so dropping upper layers
    /// leaves the rest decodable.
    struct TemporalPattern {
        /// Temporal layers, 1 to 3.
        let layers: Int
        /// Frames since the pattern (re)started.
        private(set) var position = 0

        init(layers: Int) {
            self.layers = layers
        }

        /// The next frame's layer, its reference flags (`VP8_EFLAG_*`), and whether it is a
        /// sync frame (references only the base layer).
        var next: (id: UInt8, flags: Int32, sync: Bool) {
            let noRefOthers = Int32(VP8_EFLAG_NO_REF_GF | VP8_EFLAG_NO_REF_ARF)
            let upper = Int32(VP8_EFLAG_NO_UPD_LAST | VP8_EFLAG_NO_UPD_ARF | VP8_EFLAG_NO_UPD_ENTROPY)
            switch (layers, position % (layers == 3 ? 4 : 2)) {
            case (1, _):
                return (0, 0, true)
            case (_, 0):
                return (0, noRefOthers | Int32(VP8_EFLAG_NO_UPD_GF | VP8_EFLAG_NO_UPD_ARF), true)
            case (2, _):
                return (1, noRefOthers | upper | Int32(VP8_EFLAG_NO_UPD_GF), true)
            case (_, 2):
                return (1, noRefOthers | upper, true)
            default:
                return (2, Int32(VP8_EFLAG_NO_REF_ARF) | upper | Int32(VP8_EFLAG_NO_UPD_GF), false)
            }
        }

        /// A forced keyframe comes next: it is the pattern's base frame.
        mutating func restart() {
            position = 0
        }

        /// A frame came out. A keyframe resets every reference, so the pattern starts again
        /// after it. (A frame rate control dropped does not move the pattern.)
        mutating func advance(afterKeyframe: Bool) {
            position = afterKeyframe ? 1 : position + 1
        }

        /// The layer pattern in libvpx's `ts_*` fields: ids per frame, the cumulative bitrate
        /// of each layer (upper layers get 40 % with 2 layers, 40 % and 20 % with 3) and its
        /// frame-rate divider.
        static func configure(_ settings: inout vpx_codec_enc_cfg_t, layers: Int, bitrate: Int) {
            let kbps = UInt32(bitrate / 1000)
            settings.ts_number_layers = UInt32(layers)
            let (ids, shares, decimators): ([UInt32], [UInt32], [UInt32]) = switch layers {
            case 2: ([0, 1], [60, 100], [2, 1])
            case 3: ([0, 2, 1, 2], [40, 60, 100], [4, 2, 1])
            default: ([0], [100], [1])
            }
            settings.ts_periodicity = UInt32(ids.count)
            withUnsafeMutableBytes(of: &settings.ts_layer_id) { raw in
                let slots = raw.bindMemory(to: UInt32.self)
                for index in slots.indices { slots[index] = index < ids.count ? ids[index] : 0 }
            }
            withUnsafeMutableBytes(of: &settings.ts_target_bitrate) { raw in
                let slots = raw.bindMemory(to: UInt32.self)
                for index in slots.indices { slots[index] = index < shares.count ? kbps * shares[index] / 100 : 0 }
            }
            withUnsafeMutableBytes(of: &settings.ts_rate_decimator) { raw in
                let slots = raw.bindMemory(to: UInt32.self)
                for index in slots.indices { slots[index] = index < decimators.count ? decimators[index] : 0 }
            }
        }
    }
}
