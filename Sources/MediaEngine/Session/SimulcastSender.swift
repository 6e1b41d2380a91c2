/// A `MediaSender`'s simulcast video: one `VP8.SimulcastEncoder` for every layer, a stream
/// per layer (lowest first), output buffers allocated once, and the share of the bandwidth
/// each layer gets.
///
/// Bandwidth goes bottom-up, as libwebrtc's simulcast allocator does: each layer gets its
/// target while what is left covers it, a layer whose minimum (half its target) is not
/// covered pauses (and the ones above it), and the top one takes the rest up to its target.
/// The forwarding server's wishes (`SenderControls.State.videoLayersActive`) pause layers
/// nobody shows that large. Every layer resumes with a keyframe of its own.
final class SimulcastSender {
    let encoder: VP8.SimulcastEncoder
    let streams: [SendStreamID]
    /// Each layer's bitrate with the whole ceiling to share.
    private(set) var targets: [Int]
    private var buffers: [UnsafeMutableRawBufferPointer]
    /// Layers on for bandwidth, and as the server asked (nil: all).
    private var bandwidthActive: [Bool]
    private var serverActive: [Bool]?

    /// Each layer's share of a simulcast video's bitrate, lowest first: libwebrtc's targets
    /// for 180p, 360p and 720p (150, 500 and 2,500 kb/s) in proportion.
    static func shares(layers: Int) -> [Double] {
        let weights = [150.0, 500, 2_500].suffix(layers)
        let total = weights.reduce(0, +)
        return weights.map { $0 / total }
    }

    /// - Parameters:
    ///   - sizes: Each layer's picture size, lowest first; the last is the source's.
    ///   - bitrate: What all layers together may take.
    init(sizes: [(width: Int, height: Int)], streams: [SendStreamID], bitrate: Int, frameRate: Int, temporalLayers: Int,
         keyframeInterval: Int) throws(CodecError) {
        precondition(sizes.count == streams.count && sizes.count > 1)
        targets = Self.targets(layers: sizes.count, total: bitrate)
        encoder = try VP8.SimulcastEncoder(layers: zip(sizes, targets).map { VP8.SimulcastEncoder.Layer(width: $0.width, height: $0.height, bitrate: $1) },
                                           frameRate: frameRate, temporalLayers: temporalLayers, keyframeInterval: keyframeInterval)
        self.streams = streams
        buffers = sizes.indices.map { [encoder] layer in
            UnsafeMutableRawBufferPointer.allocate(byteCount: encoder.maximumFrameSize(layer: layer), alignment: 16)
        }
        bandwidthActive = [Bool](repeating: true, count: sizes.count)
    }

    deinit { for buffer in buffers { buffer.deallocate() } }

    var layerCount: Int { streams.count }

    /// The source's size (the top layer's).
    var width: Int { encoder.configurations[layerCount - 1].width }
    var height: Int { encoder.configurations[layerCount - 1].height }

    /// Sets each layer's target to its share of `total` b/s (the video's bitrate, before any
    /// estimate).
    func setTargets(total: Int) { targets = Self.targets(layers: layerCount, total: total) }

    private static func targets(layers: Int, total: Int) -> [Int] {
        shares(layers: layers).map { max(VP8.bitrates.lowerBound, Int(Double(total) * $0)) }
    }

    /// `frame` at the top layer's size: itself, or scaled into `scratch` (a source replaced
    /// by one of another size after the sizes were announced).
    func fitting(_ frame: VideoFrame, scratch: inout VideoFrame) -> VideoFrame {
        guard frame.width != width || frame.height != height else { return frame }
        if scratch.width != width || scratch.height != height { scratch = VideoFrame(width: width, height: height) }
        frame.scale(into: &scratch)
        scratch.timestamp = frame.timestamp
        return scratch
    }

    /// Shares `total` b/s out bottom-up and applies it, with the server's wishes.
    /// - Returns: the bitrate all active layers take together.
    @discardableResult
    func setBitrate(_ total: Int) throws(CodecError) -> Int {
        var remaining = total
        var used = 0
        for layer in 0..<layerCount {
            let target = targets[layer]
            // The lowest layer always goes; another needs half its target, and the one below it.
            let fits = layer == 0 || (bandwidthActive[layer - 1] && remaining >= target / 2)
            bandwidthActive[layer] = fits
            guard fits else { continue }
            let rate = max(VP8.bitrates.lowerBound, min(target, remaining))
            if rate != encoder.configurations[layer].bitrate { try encoder.setBitrate(rate, layer: layer) }
            remaining -= rate
            used += rate
        }
        try applyActive()
        return used
    }

    /// The layers the forwarding server wants (nil: all).
    func setServerActive(_ active: [Bool]?) throws(CodecError) {
        guard active != serverActive else { return }
        serverActive = active
        try applyActive()
    }

    private func applyActive() throws(CodecError) {
        for layer in 0..<layerCount {
            let wanted = bandwidthActive[layer] && (layer == 0 || serverActive.map { layer < $0.count ? $0[layer] : true } ?? true)
            if wanted != encoder.isActive(layer: layer) { try encoder.setActive(wanted, layer: layer) }
        }
    }

    /// Encodes one picture into every active layer; `body` gets each layer's encoded frame
    /// (lowest first) with its stream.
    func encode(_ frame: VideoFrame, forceKeyframe: VP8.SimulcastEncoder.LayerSet,
                _ body: (_ layer: Int, _ stream: SendStreamID, _ info: VP8.EncodedFrameInfo, _ bytes: UnsafeRawBufferPointer) throws -> Void) throws {
        let encoded = try encoder.encode(frame, forceKeyframe: forceKeyframe, into: buffers)
        for layer in 0..<layerCount {
            guard let info = encoded[layer] else { continue }
            try body(layer, streams[layer], info, UnsafeRawBufferPointer(rebasing: buffers[layer][0..<info.byteCount]))
        }
    }
}
