import CYUV
import MediaEngine

/// Composes participants' pictures into one I420 canvas with libyuv, for a live room's
/// pushed stream.
///
/// Per frame: `clear()` (or not, when every place is drawn anyway), then `draw(_:in:)` for
/// each place in the order `LiveLayout.places(for:width:height:)` gives, then read `frame`.
/// The canvas reuses its buffer, so composing allocates no Swift memory in steady state
/// (libyuv's filtered scalers take a row buffer of their own per call, except for
/// same-size copies). Not thread-safe: one composing thread.
public final class LiveCanvas {
    /// Canvas width in pixels.
    public let width: Int
    /// Canvas height in pixels.
    public let height: Int
    /// The background colour in BT.601 limited range, as libyuv converts it.
    public let backgroundYUV: (y: UInt8, u: UInt8, v: UInt8)
    private var picture: VideoFrame

    /// Creates a canvas filled with `background`.
    /// - Precondition: `width` and `height` are even and at least 2 (I420 chroma is 2x2).
    public init(width: Int, height: Int, background: (red: UInt8, green: UInt8, blue: UInt8) = (24, 24, 24)) {
        precondition(width >= 2 && height >= 2 && width % 2 == 0 && height % 2 == 0,
                     "a live canvas needs an even size of at least 2x2, not \(width)x\(height)")
        self.width = width
        self.height = height
        backgroundYUV = Self.yuv(background)
        picture = VideoFrame(width: width, height: height)
        clear()
    }

    /// The composed picture. The value shares the canvas' buffer: read or encode it before
    /// the next `clear()` or `draw(_:in:)`. Keeping it longer is safe (it is a value) but
    /// makes that next call copy the whole buffer once.
    public var frame: VideoFrame { picture }

    /// Starts a new picture: fills the whole canvas with the background.
    public func clear() {
        paintBackground(x: 0, y: 0, width: width, height: height)
    }

    /// Draws `picture` into `place`.
    ///
    /// - fill: the centred crop of the source with the place's aspect ratio is scaled to the
    ///   whole place (libyuv reads the crop through offset plane pointers, no copy).
    /// - fit: the whole source is scaled into the largest centred even-sized rectangle with
    ///   the source's aspect ratio; the bars around it show the background.
    /// - nil (a participant whose video is missing or stale): the place shows the background,
    ///   never an old picture.
    /// - Parameters:
    ///   - picture: the participant's current picture, or nil.
    ///   - place: where to draw.
    /// - Precondition: `place` lies inside the canvas with even origin and size, at least
    ///   2x2, as `LiveLayout.places(for:width:height:)` makes them.
    public func draw(_ picture: VideoPlanes?, in place: LivePlace) {
        precondition(place.x >= 0 && place.y >= 0 && place.width >= 2 && place.height >= 2
                     && place.x + place.width <= width && place.y + place.height <= height
                     && (place.x | place.y | place.width | place.height) & 1 == 0,
                     "place \(place.x),\(place.y) \(place.width)x\(place.height) is not an even rectangle inside the \(width)x\(height) canvas")
        guard let source = picture else {
            paintBackground(x: place.x, y: place.y, width: place.width, height: place.height)
            return
        }
        if place.fill {
            drawCropped(source, x: place.x, y: place.y, width: place.width, height: place.height)
        } else {
            drawFitted(source, in: place)
        }
    }

    private func drawCropped(_ source: VideoPlanes, x: Int, y: Int, width: Int, height: Int) {
        // Compare aspect ratios by cross-multiplying; 64-bit Int cannot overflow at these sizes.
        var cropWidth = source.width
        var cropHeight = source.height
        if source.width * height > width * source.height {
            cropWidth = min(source.width, max(1, (source.height * width + height / 2) / height))
        } else {
            cropHeight = min(source.height, max(1, (source.width * height + width / 2) / width))
        }
        // Even offsets keep each crop's chroma sample aligned with its luma.
        let cropX = ((source.width - cropWidth) / 2) & ~1
        let cropY = ((source.height - cropHeight) / 2) & ~1
        let y0 = source.y + cropY * source.strideY + cropX
        let u0 = source.u + cropY / 2 * source.strideU + cropX / 2
        let v0 = source.v + cropY / 2 * source.strideV + cropX / 2
        scale(VideoPlanes(width: cropWidth, height: cropHeight, y: y0, u: u0, v: v0,
                          strideY: source.strideY, strideU: source.strideU, strideV: source.strideV),
              x: x, y: y, width: width, height: height)
    }

    private func drawFitted(_ source: VideoPlanes, in place: LivePlace) {
        var fitWidth = place.width
        var fitHeight = place.height
        if source.width * place.height > place.width * source.height {
            fitHeight = Self.evenRounded(Double(place.width * source.height) / Double(source.width), within: place.height)
        } else {
            fitWidth = Self.evenRounded(Double(place.height * source.width) / Double(source.height), within: place.width)
        }
        let fitX = place.x + (((place.width - fitWidth) / 2) & ~1)
        let fitY = place.y + (((place.height - fitHeight) / 2) & ~1)
        // The bars: above and below, or left and right (zero-sized ones are skipped).
        paintBackground(x: place.x, y: place.y, width: place.width, height: fitY - place.y)
        paintBackground(x: place.x, y: fitY + fitHeight, width: place.width, height: place.y + place.height - fitY - fitHeight)
        paintBackground(x: place.x, y: fitY, width: fitX - place.x, height: fitHeight)
        paintBackground(x: fitX + fitWidth, y: fitY, width: place.x + place.width - fitX - fitWidth, height: fitHeight)
        scale(source, x: fitX, y: fitY, width: fitWidth, height: fitHeight)
    }

    private static func evenRounded(_ value: Double, within limit: Int) -> Int {
        min(limit, max(2, Int((value / 2).rounded()) * 2))
    }

    private func scale(_ source: VideoPlanes, x: Int, y: Int, width: Int, height: Int) {
        let (strideY, strideUV) = (picture.strideY, picture.strideUV)
        picture.withMutablePlanes { planeY, planeU, planeV in
            // The planes are never empty: the canvas is at least 2x2.
            let targetY = planeY.baseAddress! + y * strideY + x
            let targetU = planeU.baseAddress! + y / 2 * strideUV + x / 2
            let targetV = planeV.baseAddress! + y / 2 * strideUV + x / 2
            _ = I420Scale(source.y, Int32(source.strideY), source.u, Int32(source.strideU), source.v, Int32(source.strideV),
                          Int32(source.width), Int32(source.height),
                          targetY, Int32(strideY), targetU, Int32(strideUV), targetV, Int32(strideUV),
                          Int32(width), Int32(height), kFilterBox)
        }
    }

    private func paintBackground(x: Int, y: Int, width: Int, height: Int) {
        guard width > 0, height > 0 else { return }
        let (strideY, strideUV) = (Int32(picture.strideY), Int32(picture.strideUV))
        let color = backgroundYUV
        picture.withMutablePlanes { planeY, planeU, planeV in
            _ = I420Rect(planeY.baseAddress, strideY, planeU.baseAddress, strideUV, planeV.baseAddress, strideUV,
                         Int32(x), Int32(y), Int32(width), Int32(height), Int32(color.y), Int32(color.u), Int32(color.v))
        }
    }

    /// One RGB colour to BT.601 limited-range YUV through libyuv (a 2x2 RAW picture: R, G, B in memory).
    private static func yuv(_ rgb: (red: UInt8, green: UInt8, blue: UInt8)) -> (y: UInt8, u: UInt8, v: UInt8) {
        let pixel = [rgb.red, rgb.green, rgb.blue]
        let raw = (0..<12).map { pixel[$0 % 3] }
        var luma = [UInt8](repeating: 0, count: 4)
        var u: UInt8 = 128
        var v: UInt8 = 128
        raw.withUnsafeBufferPointer { source in
            luma.withUnsafeMutableBufferPointer { target in
                _ = RAWToI420(source.baseAddress, 6, target.baseAddress, 2, &u, 1, &v, 1, 2, 2)
            }
        }
        return (luma[0], u, v)
    }
}
