import BenchmarkSupport
import DeviceBaseline
import MediaEngine

enum CameraFormat {
    case yuyv
    case mjpeg
}

struct ConversionFailed: Error, CustomStringConvertible {
    let description: String
}

let width = 1_280
let height = 720

/// One camera frame of the test pattern in `format`, built by the C helpers.
func cameraFrame(_ format: CameraFormat) throws -> (source: VideoFrame, bytes: [UInt8]) {
    var pattern = TestPattern(width: width, height: height)
    for _ in 0..<7 { _ = pattern.nextFrame() }
    let source = pattern.nextFrame()
    var bytes = [UInt8](repeating: 0, count: width * height * 2 + 65_536)
    let size: Int = source.withPlanes { y, u, v in
        bytes.withUnsafeMutableBufferPointer { out in
            switch format {
            case .yuyv:
                device_baseline_make_yuyv(y.baseAddress, u.baseAddress, v.baseAddress, Int32(width), Int32(height), out.baseAddress)
                return width * height * 2
            case .mjpeg:
                return device_baseline_make_mjpeg(y.baseAddress, u.baseAddress, v.baseAddress, Int32(width), Int32(height), 90,
                                                  out.baseAddress, out.count)
            }
        }
    }
    guard size > 0 else { throw ConversionFailed(description: "could not build the \(format) input") }
    return (source, Array(bytes[0..<size]))
}

/// The Swift path: V4L2FrameConverter into a reused frame.
final class SwiftConversion {
    private let converter: V4L2FrameConverter
    private let input: PacketSequence
    private var frame = VideoFrame(width: width, height: height)

    init(_ format: CameraFormat) throws {
        let (source, bytes) = try cameraFrame(format)
        let pixelFormat: V4L2PixelFormat = format == .yuyv ? .yuyv : .mjpeg
        converter = try V4L2FrameConverter(
            format: V4L2StreamFormat(pixelFormat: pixelFormat, width: width, height: height,
                                     bytesPerLine: format == .yuyv ? width * 2 : 0, imageSize: bytes.count,
                                     frameInterval: V4L2Fraction(1, 30)),
            device: "benchmark")
        input = PacketSequence([bytes])
        guard converter.convert(input[0], into: &frame) else {
            throw ConversionFailed(description: "the Swift converter refused the \(format) input")
        }
        let psnr = VideoQuality.psnr(source, frame)
        guard psnr > (format == .yuyv ? 99 : 35) else {
            throw ConversionFailed(description: "the Swift \(format) conversion is wrong: PSNR \(psnr) dB")
        }
    }

    func convert() -> Bool {
        converter.convert(input[0], into: &frame)
    }
}

/// The C path: the same library calls into the same kind of frame.
final class BaselineConversion {
    private let format: CameraFormat
    private let input: PacketSequence
    private let decoder: OpaquePointer?
    private var frame = VideoFrame(width: width, height: height)

    init(_ format: CameraFormat) throws {
        self.format = format
        let (source, bytes) = try cameraFrame(format)
        input = PacketSequence([bytes])
        decoder = format == .mjpeg ? device_baseline_jpeg_create(Int32(width), Int32(height)) : nil
        guard convert() else { throw ConversionFailed(description: "the C baseline refused the \(format) input") }
        // Both sides must give the same picture; the Swift check above sets the bar.
        let psnr = VideoQuality.psnr(source, frame)
        guard psnr > (format == .yuyv ? 99 : 35) else {
            throw ConversionFailed(description: "the C \(format) conversion is wrong: PSNR \(psnr) dB")
        }
    }

    deinit { device_baseline_jpeg_destroy(decoder) }

    func convert() -> Bool {
        let bytes = input[0]
        let source = bytes.baseAddress!.assumingMemoryBound(to: UInt8.self)
        return frame.withMutablePlanes { y, u, v in
            switch format {
            case .yuyv:
                device_baseline_yuyv_to_i420(source, Int32(width), Int32(height), y.baseAddress, u.baseAddress, v.baseAddress) == 0
            case .mjpeg:
                device_baseline_mjpeg_to_i420(decoder, source, bytes.count, y.baseAddress, u.baseAddress, v.baseAddress) == 0
            }
        }
    }
}
