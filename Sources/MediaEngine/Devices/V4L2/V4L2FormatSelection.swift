/// The format, size and frame interval capture asks a device for.
public struct V4L2FormatChoice: Hashable, Sendable {
    /// The pixel format.
    public var pixelFormat: V4L2PixelFormat
    /// Width in pixels.
    public var width: Int
    /// Height in pixels.
    public var height: Int
    /// Seconds per frame to ask for; nil when the driver lists no intervals.
    public var interval: V4L2Fraction?

    /// Creates a choice.
    public init(pixelFormat: V4L2PixelFormat, width: Int, height: Int, interval: V4L2Fraction?) {
        self.pixelFormat = pixelFormat
        self.width = width
        self.height = height
        self.interval = interval
    }

    /// Picks what to ask a device for, given what it offers and what the caller wants.
    ///
    /// The size is the offered one closest to `width` x `height`: one at least as large
    /// in both dimensions if any, then the smallest difference in area. At that size an
    /// uncompressed format (YU12, NV12, YUYV, UYVY, cheapest to convert first) wins when
    /// it reaches `frameRate`; otherwise MJPEG/JPEG when it does; otherwise whatever runs
    /// fastest there. The rate is the slowest offered one at or above `frameRate`, else
    /// the fastest. Formats libv4l2 emulates in software are used only when the device
    /// has no usable native one.
    /// - Parameter device: the device path, for the error message.
    /// - Throws: `DeviceError.unsupportedFormat` naming the offered formats when none of
    ///   them can be converted to I420.
    public static func select(from formats: [V4L2FormatInfo], width: Int, height: Int, frameRate: Int,
                              device: String) throws(DeviceError) -> V4L2FormatChoice {
        let usable = formats.filter { $0.pixelFormat.isConvertible }
        guard !usable.isEmpty else {
            let offered = formats.map { "\($0.pixelFormat) (\($0.description))" }.joined(separator: ", ")
            throw DeviceError(.unsupportedFormat, device: device,
                              "offers none of YUYV, UYVY, NV12, YU12, MJPEG or JPEG; it offers "
                                + (offered.isEmpty ? "no formats" : offered))
        }
        let native = usable.filter { !$0.isEmulated }
        let candidates = (native.isEmpty ? usable : native).map {
            Candidate($0, width: width, height: height, frameRate: frameRate)
        }
        let closest = candidates.min { $0.sizeKey < $1.sizeKey }!
        let atSize = candidates.filter { $0.width == closest.width && $0.height == closest.height }
        let fastEnough = atSize.filter { $0.rate >= Double(frameRate) * 0.99 }  // 29.97 counts as 30
        let chosen = fastEnough.filter { !$0.format.pixelFormat.isCompressed }.min { $0.preference < $1.preference }
            ?? fastEnough.min { $0.preference < $1.preference }
            ?? atSize.min { ($0.rate, -$0.preference) > ($1.rate, -$1.preference) }!
        return V4L2FormatChoice(pixelFormat: chosen.format.pixelFormat, width: chosen.width, height: chosen.height,
                                interval: chosen.interval)
    }

    /// One format's best size and rate for the request.
    private struct Candidate {
        let format: V4L2FormatInfo
        let width: Int
        let height: Int
        let interval: V4L2Fraction?
        /// Frames per second at `interval`; the request itself when the driver lists none.
        let rate: Double
        /// Smaller is closer: (0 when it covers the request, area difference).
        let sizeKey: Int
        let preference: Int

        init(_ format: V4L2FormatInfo, width: Int, height: Int, frameRate: Int) {
            self.format = format
            preference = V4L2PixelFormat.convertible.firstIndex(of: format.pixelFormat)!
            let sizes = format.frameSizes.map { size -> (Int, Int, [V4L2FrameInterval]) in
                guard let range = size.range else { return (size.width, size.height, size.intervals) }
                let nearest = range.nearest(width: width, height: height)
                return (nearest.width, nearest.height, size.intervals)
            }
            func key(_ w: Int, _ h: Int) -> Int {
                let covers = w >= width && h >= height
                return (covers ? 0 : 1 << 40) + abs(w * h - width * height)
            }
            guard let best = sizes.min(by: { key($0.0, $0.1) < key($1.0, $1.1) }) else {
                // No sizes listed: ask for the request and let S_FMT answer.
                (self.width, self.height, interval, rate) = (width, height, nil, Double(frameRate))
                sizeKey = key(width, height)
                return
            }
            (self.width, self.height) = (best.0, best.1)
            sizeKey = key(best.0, best.1)
            (interval, rate) = Self.interval(best.2, frameRate: frameRate)
        }

        /// The slowest offered interval reaching `frameRate`, else the fastest.
        static func interval(_ intervals: [V4L2FrameInterval], frameRate: Int) -> (V4L2Fraction?, Double) {
            let options = intervals.map { $0.closest(toFrameRate: frameRate) }.filter { $0.numerator > 0 && $0.denominator > 0 }
            guard !options.isEmpty else { return (nil, Double(frameRate)) }
            let target = Double(frameRate) * 0.99
            let chosen = options.filter { $0.framesPerSecond >= target }.min { $0.framesPerSecond < $1.framesPerSecond }
                ?? options.max { $0.framesPerSecond < $1.framesPerSecond }!
            return (chosen, chosen.framesPerSecond)
        }
    }
}

/// The format a device actually streams after negotiation, as the driver answered.
public struct V4L2StreamFormat: Hashable, Sendable {
    /// The pixel format.
    public var pixelFormat: V4L2PixelFormat
    /// Width in pixels.
    public var width: Int
    /// Height in pixels.
    public var height: Int
    /// Bytes per row of the first plane (0 for compressed formats).
    public var bytesPerLine: Int
    /// The largest buffer a frame needs.
    public var imageSize: Int
    /// Seconds per frame.
    public var frameInterval: V4L2Fraction

    /// Creates a stream format.
    public init(pixelFormat: V4L2PixelFormat, width: Int, height: Int, bytesPerLine: Int, imageSize: Int,
                frameInterval: V4L2Fraction) {
        self.pixelFormat = pixelFormat
        self.width = width
        self.height = height
        self.bytesPerLine = bytesPerLine
        self.imageSize = imageSize
        self.frameInterval = frameInterval
    }

    /// Whole frames per second (at least 1).
    public var frameRate: Int { max(1, Int(frameInterval.framesPerSecond.rounded())) }

    /// One frame period.
    public var framePeriod: Duration {
        frameInterval.numerator > 0 && frameInterval.denominator > 0
            ? .nanoseconds(Int64(frameInterval.numerator) * 1_000_000_000 / Int64(frameInterval.denominator))
            : .milliseconds(33)
    }
}

extension V4L2FrameInterval {
    /// The interval this entry allows that is closest to 1/`frameRate`.
    func closest(toFrameRate frameRate: Int) -> V4L2Fraction {
        if isDiscrete { return minimum }
        let wanted = 1 / Double(max(1, frameRate))
        if wanted <= minimum.seconds { return minimum }
        if wanted >= maximum.seconds { return maximum }
        guard let step, step.numerator > 0, step.denominator > 0 else { return V4L2Fraction(1, frameRate) }
        // minimum + k * step over a common denominator.
        let steps = Int(((wanted - minimum.seconds) / step.seconds).rounded())
        var numerator = minimum.numerator * step.denominator + steps * step.numerator * minimum.denominator
        var denominator = minimum.denominator * step.denominator
        var (a, b) = (numerator, denominator)
        while b != 0 { (a, b) = (b, a % b) }
        if a > 1 { (numerator, denominator) = (numerator / a, denominator / a) }
        return V4L2Fraction(numerator, denominator)
    }
}
