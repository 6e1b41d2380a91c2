import CTurboJPEG
import CYUV
@testable import MediaEngine

/// Known pictures in the layouts cameras send, made from the project's test pattern
/// with libyuv and TurboJPEG (independent of the conversion code under test).
enum V4L2TestImages {
    /// Frame `index` of the moving test pattern.
    static func pattern(width: Int = 640, height: Int = 480, index: Int = 7) -> VideoFrame {
        var pattern = TestPattern(width: width, height: height)
        var frame = pattern.nextFrame()
        for _ in 0..<index { frame = pattern.nextFrame() }
        return frame
    }

    /// Packed 4:2:2 (`YUYV` or `UYVY`), rows `padding` bytes longer than needed.
    static func packed(_ frame: VideoFrame, format: V4L2PixelFormat = .yuyv, padding: Int = 0) -> [UInt8] {
        let stride = frame.width * 2 + padding
        var bytes = [UInt8](repeating: 0xAA, count: stride * frame.height)
        let pack = format == .yuyv ? I420ToYUY2 : I420ToUYVY
        frame.withPlanes { y, u, v in
            bytes.withUnsafeMutableBufferPointer { out in
                _ = pack(y.baseAddress, Int32(frame.strideY), u.baseAddress, Int32(frame.strideUV), v.baseAddress,
                         Int32(frame.strideUV), out.baseAddress, Int32(stride), Int32(frame.width), Int32(frame.height))
            }
        }
        return bytes
    }

    /// NV12 with `padding` extra bytes per row in both planes.
    static func nv12(_ frame: VideoFrame, padding: Int = 0) -> [UInt8] {
        let stride = frame.width + padding
        var bytes = [UInt8](repeating: 0xAA, count: stride * frame.height + stride * frame.chromaHeight)
        frame.withPlanes { y, u, v in
            bytes.withUnsafeMutableBufferPointer { out in
                let base = out.baseAddress!
                _ = I420ToNV12(y.baseAddress, Int32(frame.strideY), u.baseAddress, Int32(frame.strideUV), v.baseAddress,
                               Int32(frame.strideUV), base, Int32(stride), base + stride * frame.height, Int32(stride),
                               Int32(frame.width), Int32(frame.height))
            }
        }
        return bytes
    }

    /// YU12 laid out as V4L2 describes it: chroma rows half the luma bytesperline.
    static func yu12(_ frame: VideoFrame, padding: Int = 0) -> [UInt8] {
        let stride = frame.width + padding
        let chromaStride = stride / 2
        let offsetU = stride * frame.height
        let offsetV = offsetU + chromaStride * frame.chromaHeight
        var bytes = [UInt8](repeating: 0xAA, count: offsetV + chromaStride * frame.chromaHeight)
        frame.withPlanes { y, u, v in
            bytes.withUnsafeMutableBufferPointer { out in
                let base = out.baseAddress!
                _ = I420Copy(y.baseAddress, Int32(frame.strideY), u.baseAddress, Int32(frame.strideUV), v.baseAddress,
                             Int32(frame.strideUV), base, Int32(stride), base + offsetU, Int32(chromaStride),
                             base + offsetV, Int32(chromaStride), Int32(frame.width), Int32(frame.height))
            }
        }
        return bytes
    }

    /// A JPEG of `frame` with the given chroma subsampling, compressed from YUV planes.
    static func jpeg(_ frame: VideoFrame, subsampling: TJSAMP, quality: Int32 = 95) -> [UInt8] {
        let (width, height) = (Int32(frame.width), Int32(frame.height))
        // Greyscale has no chroma planes (TurboJPEG answers -1); keep one dummy byte.
        let chromaWidth = max(1, Int(tjPlaneWidth(1, width, Int32(subsampling.rawValue))))
        let chromaHeight = max(1, Int(tjPlaneHeight(1, height, Int32(subsampling.rawValue))))
        var u = [UInt8](repeating: 128, count: chromaWidth * chromaHeight)
        var v = u
        // Bring the 4:2:0 chroma to the JPEG's layout.
        if subsampling != TJSAMP_GRAY { frame.withPlanes { _, sourceU, sourceV in
            for (source, destination) in [(sourceU, 0), (sourceV, 1)] {
                var plane = destination == 0 ? u : v
                plane.withUnsafeMutableBufferPointer { out in
                    ScalePlane(source.baseAddress, Int32(frame.strideUV), Int32(frame.chromaWidth), Int32(frame.chromaHeight),
                               out.baseAddress, Int32(chromaWidth), Int32(chromaWidth), Int32(chromaHeight), kFilterNone)
                }
                if destination == 0 { u = plane } else { v = plane }
            }
        } }
        let handle = tjInitCompress()!
        defer { tjDestroy(handle) }
        var jpegBuffer: UnsafeMutablePointer<UInt8>?
        var jpegSize: UInt = 0
        let status = frame.withPlanes { y, _, _ in
            u.withUnsafeBufferPointer { uPlane in
                v.withUnsafeBufferPointer { vPlane in
                    var planes: (UnsafePointer<UInt8>?, UnsafePointer<UInt8>?, UnsafePointer<UInt8>?) =
                        (y.baseAddress, uPlane.baseAddress, vPlane.baseAddress)
                    var strides = (Int32(frame.strideY), Int32(chromaWidth), Int32(chromaWidth))
                    return withUnsafeMutableBytes(of: &planes) { planeBytes in
                        withUnsafeMutableBytes(of: &strides) { strideBytes in
                            tjCompressFromYUVPlanes(handle, planeBytes.baseAddress!.assumingMemoryBound(to: UnsafePointer<UInt8>?.self),
                                                    width, strideBytes.baseAddress!.assumingMemoryBound(to: Int32.self), height,
                                                    Int32(subsampling.rawValue), &jpegBuffer, &jpegSize, quality, 0)
                        }
                    }
                }
            }
        }
        precondition(status == 0, String(cString: tjGetErrorStr2(handle)))
        defer { tjFree(jpegBuffer) }
        return Array(UnsafeBufferPointer(start: jpegBuffer, count: Int(jpegSize)))
    }
}

extension V4L2FormatInfo {
    /// A format with discrete sizes, each at the given rates (frames per second).
    static func discrete(_ format: V4L2PixelFormat, _ description: String, emulated: Bool = false,
                         _ sizes: [(Int, Int, [Int])]) -> V4L2FormatInfo {
        V4L2FormatInfo(pixelFormat: format, description: description, isCompressed: format.isCompressed, isEmulated: emulated,
                       frameSizes: sizes.map { width, height, rates in
                           V4L2FrameSize(width: width, height: height, intervals: rates.map { V4L2FrameInterval(V4L2Fraction(1, $0)) })
                       })
    }
}
