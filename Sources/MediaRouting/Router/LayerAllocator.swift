import MediaEngine

/// Shares one subscriber's bandwidth among the videos it is sent (audio is always sent and
/// comes off the top): every video gets its base temporal layer, most important first,
/// until one no longer fits, and the rest are paused; only when none is paused does what
/// is left raise videos a layer at a time, in the same order. So the videos of the users who spoke least
/// recently pause first, and thinning comes before pausing for the others.
public enum LayerAllocator {
    public struct Video: Sendable, Hashable {
        /// The bitrate of layers 0...n together, for each n (b/s, non-decreasing).
        public var layerRates: [Int]
        /// The layer sent now (-1: paused), for hysteresis: going up needs `margin`.
        public var current: Int

        public init(layerRates: [Int], current: Int) {
            self.layerRates = layerRates
            self.current = current
        }
    }

    /// - Parameters:
    ///   - budget: What the videos may use together (b/s).
    ///   - videos: Most important first.
    ///   - margin: Raising a video above its current layer needs this share more room, so a
    ///     budget at the edge does not flap.
    /// - Returns: For each video, the highest layer to send, or -1 to pause it.
    /// The share more room raising a video needs by default.
    public static let margin = 1.15

    public static func allocate(budget: Int, videos: [Video], margin: Double = LayerAllocator.margin) -> [Int] {
        var remaining = Double(budget)
        var layers = [Int](repeating: -1, count: videos.count)
        func cost(_ video: Video, from: Int, to: Int) -> Double {
            let rates = video.layerRates
            let above = Double(rates.isEmpty ? 0 : rates[min(to, rates.count - 1)])
            let below = from < 0 || rates.isEmpty ? 0 : Double(rates[min(from, rates.count - 1)])
            let extra = max(0, above - below)
            return to > video.current ? extra * margin : extra
        }
        for (index, video) in videos.enumerated() {
            let need = cost(video, from: -1, to: 0)
            guard need <= remaining else { break }
            remaining -= need
            layers[index] = 0
        }
        // Layers above the base only once every video has its base: thin before pausing.
        let deepest = videos.map { $0.layerRates.count }.max() ?? 0
        if deepest > 1 && !layers.contains(-1) {
            for layer in 1..<deepest {
                for (index, video) in videos.enumerated() where layers[index] == layer - 1 && video.layerRates.count > layer {
                    let need = cost(video, from: layer - 1, to: layer)
                    guard need <= remaining else { continue }
                    remaining -= need
                    layers[index] = layer
                }
            }
        }
        return layers
    }
}
