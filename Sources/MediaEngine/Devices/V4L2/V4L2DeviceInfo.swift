import CV4L2

/// A V4L2 pixel format, a four-character code such as `YUYV` or `MJPG`.
/// Encodes as its four characters.
public struct V4L2PixelFormat: RawRepresentable, Hashable, Sendable, Codable, CustomStringConvertible {
    /// The code as the kernel stores it (first character in the low byte).
    public let rawValue: UInt32

    /// Wraps a kernel pixel-format code.
    public init(rawValue: UInt32) { self.rawValue = rawValue }

    /// The format named by four ASCII characters, as in `V4L2PixelFormat("H264")`.
    /// - Returns: nil unless `fourcc` is exactly four ASCII characters.
    public init?(_ fourcc: String) {
        let bytes = Array(fourcc.utf8)
        guard bytes.count == 4, bytes.allSatisfy({ $0 < 0x80 }) else { return nil }
        rawValue = bytes.enumerated().reduce(0) { $0 | UInt32($1.element) << (8 * UInt32($1.offset)) }
    }

    /// Packed YUV 4:2:2, Y0 U Y1 V.
    public static let yuyv = V4L2PixelFormat(rawValue: CV4L2_PIX_FMT_YUYV)
    /// Packed YUV 4:2:2, U Y0 V Y1.
    public static let uyvy = V4L2PixelFormat(rawValue: CV4L2_PIX_FMT_UYVY)
    /// Y plane then interleaved UV at half size (4:2:0).
    public static let nv12 = V4L2PixelFormat(rawValue: CV4L2_PIX_FMT_NV12)
    /// Planar YUV 4:2:0 (`YU12`), the engine's own layout.
    public static let yuv420 = V4L2PixelFormat(rawValue: CV4L2_PIX_FMT_YUV420)
    /// Motion JPEG: one JPEG per frame.
    public static let mjpeg = V4L2PixelFormat(rawValue: CV4L2_PIX_FMT_MJPEG)
    /// JPEG stills used as video by some drivers.
    public static let jpeg = V4L2PixelFormat(rawValue: CV4L2_PIX_FMT_JPEG)

    /// Whether the engine can turn this format into I420.
    public var isConvertible: Bool { Self.convertible.contains(self) }

    /// Whether frames of this format are compressed (need decoding).
    public var isCompressed: Bool { self == .mjpeg || self == .jpeg }

    static let convertible: [V4L2PixelFormat] = [.yuv420, .nv12, .yuyv, .uyvy, .mjpeg, .jpeg]

    /// The four characters (`YUYV`), or hex when they are not printable.
    public var description: String {
        let bytes = (0..<4).map { UInt8(truncatingIfNeeded: rawValue >> (8 * $0)) }
        guard bytes.allSatisfy({ (0x20..<0x7f).contains($0) }) else { return "0x" + String(rawValue, radix: 16) }
        return String(decoding: bytes, as: UTF8.self)
    }

    /// Decodes four characters.
    public init(from decoder: any Decoder) throws {
        let container = try decoder.singleValueContainer()
        let text = try container.decode(String.self)
        guard let format = V4L2PixelFormat(text) else {
            throw DecodingError.dataCorruptedError(in: container, debugDescription: "'\(text)' is not a four-character code")
        }
        self = format
    }

    /// Encodes four characters.
    public func encode(to encoder: any Encoder) throws {
        var container = encoder.singleValueContainer()
        try container.encode(description)
    }
}

/// A V4L2 fraction; as a frame interval, seconds per frame (1/30 is 30 fps).
public struct V4L2Fraction: Hashable, Sendable, Codable, CustomStringConvertible {
    /// Numerator.
    public var numerator: Int
    /// Denominator.
    public var denominator: Int

    /// Creates `numerator / denominator`.
    public init(_ numerator: Int, _ denominator: Int) {
        self.numerator = numerator
        self.denominator = denominator
    }

    /// Frames per second when this is a frame interval (0 for a zero denominator).
    public var framesPerSecond: Double {
        numerator > 0 ? Double(denominator) / Double(numerator) : 0
    }

    /// The interval in seconds.
    public var seconds: Double { denominator > 0 ? Double(numerator) / Double(denominator) : 0 }

    /// `1/30`.
    public var description: String { "\(numerator)/\(denominator)" }
}

/// Frame intervals a device offers at one format and size: one discrete interval, or
/// a range.
public struct V4L2FrameInterval: Hashable, Sendable, Codable {
    /// The shortest interval (fastest rate); the interval itself when discrete.
    public var minimum: V4L2Fraction
    /// The longest interval (slowest rate); equal to `minimum` when discrete.
    public var maximum: V4L2Fraction
    /// Granularity of a stepwise range; nil when discrete or continuous.
    public var step: V4L2Fraction?

    /// One discrete interval.
    public init(_ interval: V4L2Fraction) {
        minimum = interval
        maximum = interval
        step = nil
    }

    /// A stepwise range (continuous when `step` is nil).
    public init(minimum: V4L2Fraction, maximum: V4L2Fraction, step: V4L2Fraction?) {
        self.minimum = minimum
        self.maximum = maximum
        self.step = step
    }

    /// Whether this is a single interval.
    public var isDiscrete: Bool { minimum == maximum && step == nil }
}

/// The step grid of a stepwise or continuous frame size.
public struct V4L2SizeRange: Hashable, Sendable, Codable {
    /// Smallest width.
    public var minimumWidth: Int
    /// Largest width.
    public var maximumWidth: Int
    /// Width granularity (1 when continuous).
    public var widthStep: Int
    /// Smallest height.
    public var minimumHeight: Int
    /// Largest height.
    public var maximumHeight: Int
    /// Height granularity (1 when continuous).
    public var heightStep: Int

    /// Creates a range.
    public init(minimumWidth: Int, maximumWidth: Int, widthStep: Int,
                minimumHeight: Int, maximumHeight: Int, heightStep: Int) {
        self.minimumWidth = minimumWidth
        self.maximumWidth = maximumWidth
        self.widthStep = max(1, widthStep)
        self.minimumHeight = minimumHeight
        self.maximumHeight = maximumHeight
        self.heightStep = max(1, heightStep)
    }

    /// The size in the range nearest to `width` x `height`: clamped to the range, then
    /// rounded up to the step grid (not smaller than asked when the range allows).
    public func nearest(width: Int, height: Int) -> (width: Int, height: Int) {
        func snap(_ value: Int, _ low: Int, _ high: Int, _ step: Int) -> Int {
            let clamped = min(max(value, low), high)
            let steps = (clamped - low + step - 1) / step
            let snapped = low + steps * step
            return snapped <= high ? snapped : snapped - step
        }
        return (snap(width, minimumWidth, maximumWidth, widthStep), snap(height, minimumHeight, maximumHeight, heightStep))
    }
}

/// One frame size of a format and the frame intervals it runs at.
public struct V4L2FrameSize: Hashable, Sendable, Codable {
    /// The size; for a range, the largest size.
    public var width: Int
    /// The size; for a range, the largest size.
    public var height: Int
    /// The sizes a stepwise or continuous entry allows; nil for a discrete size.
    public var range: V4L2SizeRange?
    /// Frame intervals at `width` x `height`; empty when the driver does not say.
    public var intervals: [V4L2FrameInterval]

    /// Creates a discrete size, or a range when `range` is given.
    public init(width: Int, height: Int, range: V4L2SizeRange? = nil, intervals: [V4L2FrameInterval]) {
        self.width = width
        self.height = height
        self.range = range
        self.intervals = intervals
    }
}

/// One pixel format a device offers, with its sizes and rates.
public struct V4L2FormatInfo: Hashable, Sendable, Codable {
    /// The four-character code.
    public var pixelFormat: V4L2PixelFormat
    /// The driver's name for it ("YUYV 4:2:2", "Motion-JPEG").
    public var description: String
    /// The driver flags the format as compressed.
    public var isCompressed: Bool
    /// libv4l2 converts to this format in software from another one.
    public var isEmulated: Bool
    /// Frame sizes, each with its intervals.
    public var frameSizes: [V4L2FrameSize]

    /// Creates a format entry.
    public init(pixelFormat: V4L2PixelFormat, description: String, isCompressed: Bool, isEmulated: Bool = false,
                frameSizes: [V4L2FrameSize]) {
        self.pixelFormat = pixelFormat
        self.description = description
        self.isCompressed = isCompressed
        self.isEmulated = isEmulated
        self.frameSizes = frameSizes
    }
}

/// A V4L2 video capture device and everything it can deliver, for listings such as
/// `mediaengine devices --json`.
public struct V4L2DeviceInfo: Hashable, Sendable, Codable {
    /// The device node, `/dev/videoN`.
    public var path: String
    /// Kernel driver (`uvcvideo`).
    public var driver: String
    /// Device name (`HD Webcam C920`).
    public var card: String
    /// Where it is attached (`usb-0000:00:14.0-1`); stable across reboots, unlike the path.
    public var busInfo: String
    /// The node's V4L2 capability bits (`device_caps` when the driver reports them).
    public var capabilities: UInt32
    /// Pixel formats in the driver's order.
    public var formats: [V4L2FormatInfo]

    /// Creates a device entry.
    public init(path: String, driver: String, card: String, busInfo: String, capabilities: UInt32, formats: [V4L2FormatInfo]) {
        self.path = path
        self.driver = driver
        self.card = card
        self.busInfo = busInfo
        self.capabilities = capabilities
        self.formats = formats
    }

    /// The capture devices present: every `/dev/video*` node that opens and can
    /// stream video capture (metadata and output nodes are left out, as are nodes
    /// that cannot be opened).
    /// - Parameter io: the system calls to use.
    /// - Returns: the devices in node order; empty when there are none.
    public static func list(using io: any V4L2DeviceIO = SystemV4L2IO()) -> [V4L2DeviceInfo] {
        io.devicePaths().compactMap { path in
            guard let descriptor = try? io.open(path, flags: V4L2DeviceHandle.openFlags) else { return nil }
            defer { io.close(descriptor) }
            guard let capabilities = try? V4L2Query.capabilities(io, descriptor), capabilities.canStreamCapture,
                  let formats = try? V4L2Query.formats(io, descriptor) else { return nil }
            return V4L2DeviceInfo(path: path, driver: capabilities.driver, card: capabilities.card,
                                  busInfo: capabilities.busInfo, capabilities: capabilities.bits, formats: formats)
        }
    }
}
