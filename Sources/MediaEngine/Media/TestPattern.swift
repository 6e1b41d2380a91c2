/// A synthetic moving picture for tests and demos without a camera.
///
/// Every frame differs from the one before: a drifting smooth gradient (easy to code), a
/// band of scrolling colour bars, a fine checkerboard that moves one pixel per frame
/// (hard to code, so rate control has real work), and a bouncing box. Deterministic: the
/// same size and index give the same picture.
public struct TestPattern: Sendable {
    public let width: Int
    public let height: Int
    /// Frames per second, used for timestamps.
    public let frameRate: Int
    /// Index of the next frame `nextFrame` returns.
    public private(set) var frameIndex = 0

    /// Creates a pattern.
    /// - Precondition: positive size and frame rate.
    public init(width: Int, height: Int, frameRate: Int = 30) {
        precondition(width > 0 && height > 0 && frameRate > 0, "a test pattern needs a positive size and rate")
        self.width = width
        self.height = height
        self.frameRate = frameRate
    }

    /// Makes `index` the next frame (the pattern is a pure function of the index).
    public mutating func seek(to index: Int) {
        precondition(index >= 0, "frame indices start at 0")
        frameIndex = index
    }

    /// The index among the first `count` frames whose picture is closest to `picture`
    /// (highest PSNR): where a receiver that joined late came in. Renders into one frame.
    public func bestMatch(for picture: VideoFrame, within count: Int) -> Int {
        var pattern = TestPattern(width: width, height: height, frameRate: frameRate)
        var frame = VideoFrame(width: width, height: height)
        var best = (index: 0, psnr: -Double.infinity)
        for index in 0..<max(1, count) {
            pattern.render(into: &frame)
            let psnr = VideoQuality.psnr(frame, picture)
            if psnr > best.psnr { best = (index, psnr) }
        }
        return best.index
    }

    /// The next frame, timestamped `index / frameRate` seconds.
    public mutating func nextFrame() -> VideoFrame {
        var frame = VideoFrame(width: width, height: height)
        render(into: &frame)
        return frame
    }

    /// Draws the next frame into `frame` (which must be `width` x `height`); allocates
    /// nothing when `frame` is uniquely owned.
    public mutating func render(into frame: inout VideoFrame) {
        precondition(frame.width == width && frame.height == height, "frame size differs from the pattern")
        let t = frameIndex
        frame.timestamp = .nanoseconds(Int64(t) * 1_000_000_000 / Int64(frameRate))
        let (strideY, strideUV) = (frame.strideY, frame.strideUV)
        let (width, height) = (self.width, self.height)
        let (chromaWidth, chromaHeight) = (frame.chromaWidth, frame.chromaHeight)

        let barsEnd = height / 6
        let checkerTop = height * 2 / 3
        let checkerRight = width / 2
        let box = max(2, min(width, height) / 6)
        let boxX = Self.bounce(t * 5, span: width - box)
        let boxY = Self.bounce(t * 3, span: height - box)

        frame.withMutablePlanes { yPlane, uPlane, vPlane in
            for y in 0..<height {
                let row = y * strideY
                for x in 0..<width {
                    let value: Int
                    if y < barsEnd {
                        value = Self.barLuma[((x + t * 4) * 8 / max(width, 1)) & 7]
                    } else if y >= checkerTop && x < checkerRight {
                        value = (((x + t) >> 3) ^ (y >> 3)) & 1 == 0 ? 60 : 190
                    } else {
                        value = 40 + Self.triangle(x + 2 * t, period: 512) * 120 / 256
                            + Self.triangle(y + t, period: 384) * 60 / 256
                    }
                    yPlane[row + x] = UInt8(truncatingIfNeeded: value)
                }
            }
            for y in boxY..<(boxY + box) {
                let row = y * strideY
                for x in boxX..<(boxX + box) { yPlane[row + x] = 220 }
            }
            for cy in 0..<chromaHeight {
                let row = cy * strideUV
                let y = cy * 2
                for cx in 0..<chromaWidth {
                    let x = cx * 2
                    var u: Int
                    var v: Int
                    if y < barsEnd {
                        let bar = ((x + t * 4) * 8 / max(width, 1)) & 7
                        (u, v) = (Self.barU[bar], Self.barV[bar])
                    } else {
                        u = 128 + (Self.triangle(x + t, period: 640) - 128) / 4
                        v = 128 + (Self.triangle(y + 2 * t, period: 480) - 128) / 4
                    }
                    if x >= boxX && x < boxX + box && y >= boxY && y < boxY + box { (u, v) = (60, 200) }
                    uPlane[row + cx] = UInt8(truncatingIfNeeded: u)
                    vPlane[row + cx] = UInt8(truncatingIfNeeded: v)
                }
            }
        }
        frameIndex += 1
    }

    // BT.601 studio-range luma and chroma of the classic eight bars.
    private static let barLuma = [235, 210, 170, 145, 106, 81, 41, 16]
    private static let barU = [128, 16, 166, 54, 202, 90, 240, 128]
    private static let barV = [128, 146, 16, 34, 222, 240, 110, 128]

    /// 0...256...0 over `period`.
    @inline(__always)
    private static func triangle(_ position: Int, period: Int) -> Int {
        let phase = position % period
        let half = period / 2
        return (phase < half ? phase : period - phase) * 256 / half
    }

    /// A position that moves back and forth over 0...span.
    private static func bounce(_ travel: Int, span: Int) -> Int {
        guard span > 0 else { return 0 }
        let phase = travel % (2 * span)
        return phase <= span ? phase : 2 * span - phase
    }
}
