import CTurboJPEG
import CYUV

/// Turns buffers of one V4L2 stream format into I420 frames: YUYV and UYVY through
/// libyuv, NV12 and YU12 by plane copies, MJPEG/JPEG through TurboJPEG decoding
/// straight to YUV planes (then libyuv to 4:2:0 by the JPEG's subsampling).
///
/// All working memory is allocated in `init`; converting allocates nothing itself
/// (TurboJPEG mallocs and frees libjpeg's per-image pools, 6 blocks per JPEG, inside each
/// decode). One thread at a time: it owns a TurboJPEG handle.
public final class V4L2FrameConverter {
    /// The format of the buffers this converter takes.
    public let format: V4L2StreamFormat
    private var decoder: tjhandle?
    /// Chroma planes of a JPEG that is not 4:2:0, before subsampling.
    private let chroma: UnsafeMutableRawBufferPointer

    /// Prepares conversion from `format`.
    /// - Parameter device: the device path, for errors.
    /// - Throws: `DeviceError.unsupportedFormat` for formats other than YUYV, UYVY,
    ///   NV12, YU12, MJPEG and JPEG; `ioFailed` when TurboJPEG cannot start.
    public init(format: V4L2StreamFormat, device: String) throws(DeviceError) {
        guard format.pixelFormat.isConvertible, format.width > 0, format.height > 0 else {
            throw DeviceError(.unsupportedFormat, device: device, "cannot convert \(format.pixelFormat) to I420")
        }
        self.format = format
        if format.pixelFormat.isCompressed {
            guard let decoder = tjInitDecompress() else {
                throw DeviceError(.ioFailed, device: device, "cannot start the JPEG decoder")
            }
            self.decoder = decoder
            // 4:4:4 has the largest chroma planes.
            let plane = Int(tjPlaneWidth(1, Int32(format.width), Int32(TJSAMP_444.rawValue)))
                * Int(tjPlaneHeight(1, Int32(format.height), Int32(TJSAMP_444.rawValue)))
            chroma = .allocate(byteCount: 2 * plane, alignment: 64)
        } else {
            decoder = nil
            chroma = .allocate(byteCount: 0, alignment: 1)
        }
    }

    deinit {
        if let decoder { tjDestroy(decoder) }
        chroma.deallocate()
    }

    /// Converts one filled buffer into `frame`, reshaping it to the stream size if needed.
    /// The timestamp is left alone.
    /// - Returns: false when the buffer is shorter than a frame, or is not a complete,
    ///   decodable JPEG of the stream's size (the frame's pixels are then unspecified).
    public func convert(_ bytes: UnsafeRawBufferPointer, into frame: inout VideoFrame) -> Bool {
        let (width, height) = (format.width, format.height)
        if frame.width != width || frame.height != height { frame.reshape(width: width, height: height) }
        guard let source = bytes.baseAddress?.assumingMemoryBound(to: UInt8.self) else { return false }
        let (strideY, strideUV) = (Int32(frame.strideY), Int32(frame.strideUV))
        let (chromaWidth, chromaHeight) = (frame.chromaWidth, frame.chromaHeight)
        let (w, h) = (Int32(width), Int32(height))

        switch format.pixelFormat {
        case .yuyv, .uyvy:
            let stride = max(format.bytesPerLine, 4 * chromaWidth)
            guard bytes.count >= stride * (height - 1) + 4 * chromaWidth else { return false }
            let unpack = format.pixelFormat == .yuyv ? YUY2ToI420 : UYVYToI420
            return frame.withMutablePlanes { y, u, v in
                unpack(source, Int32(stride), y.baseAddress, strideY, u.baseAddress, strideUV, v.baseAddress, strideUV, w, h) == 0
            }
        case .nv12:
            // Both planes share bytesperline; UV follows the Y plane.
            let stride = max(format.bytesPerLine, width)
            let offsetUV = stride * height
            guard bytes.count >= offsetUV + stride * (chromaHeight - 1) + 2 * chromaWidth else { return false }
            return frame.withMutablePlanes { y, u, v in
                NV12ToI420(source, Int32(stride), source + offsetUV, Int32(stride),
                           y.baseAddress, strideY, u.baseAddress, strideUV, v.baseAddress, strideUV, w, h) == 0
            }
        case .yuv420:
            // The spec gives the chroma planes half the luma bytesperline.
            let stride = max(format.bytesPerLine, width)
            let chromaStride = max((stride + 1) / 2, chromaWidth)
            let offsetU = stride * height
            let offsetV = offsetU + chromaStride * chromaHeight
            guard bytes.count >= offsetV + chromaStride * (chromaHeight - 1) + chromaWidth else { return false }
            return frame.withMutablePlanes { y, u, v in
                I420Copy(source, Int32(stride), source + offsetU, Int32(chromaStride), source + offsetV, Int32(chromaStride),
                         y.baseAddress, strideY, u.baseAddress, strideUV, v.baseAddress, strideUV, w, h) == 0
            }
        default:
            return decodeJPEG(UnsafeBufferPointer(start: source, count: bytes.count), into: &frame)
        }
    }

    private func decodeJPEG(_ jpeg: UnsafeBufferPointer<UInt8>, into frame: inout VideoFrame) -> Bool {
        guard let decoder, Self.isComplete(jpeg) else { return false }
        var (width, height, subsampling, colorspace) = (Int32(0), Int32(0), Int32(0), Int32(0))
        guard tjDecompressHeader3(decoder, jpeg.baseAddress, UInt(jpeg.count), &width, &height, &subsampling, &colorspace) == 0 else {
            resetDecoder()
            return false
        }
        guard Int(width) == format.width, Int(height) == format.height else { return false }
        let kind = TJSAMP(rawValue: UInt32(bitPattern: subsampling))
        let (strideY, strideUV) = (Int32(frame.strideY), Int32(frame.strideUV))
        let (chromaWidth, chromaHeight) = (Int32(frame.chromaWidth), Int32(frame.chromaHeight))
        // Luma always goes straight into the frame; so does chroma when it is 4:2:0.
        let direct = kind == TJSAMP_420 || kind == TJSAMP_GRAY
        let sourceWidth = tjPlaneWidth(1, width, subsampling)
        let sourceHeight = tjPlaneHeight(1, height, subsampling)
        let scratchU = chroma.baseAddress!.assumingMemoryBound(to: UInt8.self)
        let scratchV = scratchU + Int(max(0, sourceWidth)) * Int(max(0, sourceHeight))

        let decoded = frame.withMutablePlanes { y, u, v in
            var planes: (UnsafeMutablePointer<UInt8>?, UnsafeMutablePointer<UInt8>?, UnsafeMutablePointer<UInt8>?) =
                direct ? (y.baseAddress, u.baseAddress, v.baseAddress) : (y.baseAddress, scratchU, scratchV)
            var strides = direct ? (strideY, strideUV, strideUV) : (strideY, sourceWidth, sourceWidth)
            return withUnsafeMutableBytes(of: &planes) { planeBytes in
                withUnsafeMutableBytes(of: &strides) { strideBytes in
                    tjDecompressToYUVPlanes(decoder, jpeg.baseAddress, UInt(jpeg.count),
                                            planeBytes.baseAddress!.assumingMemoryBound(to: UnsafeMutablePointer<UInt8>?.self),
                                            width, strideBytes.baseAddress!.assumingMemoryBound(to: Int32.self), height, 0)
                }
            }
        }
        // A warning (extraneous bytes, as some cameras send on every frame) still decodes.
        guard decoded == 0 || tjGetErrorCode(decoder) == TJERR_WARNING.rawValue else {
            resetDecoder()
            return false
        }

        return frame.withMutablePlanes { _, u, v in
            switch kind {
            case TJSAMP_420:
                return true
            case TJSAMP_GRAY:
                u.update(repeating: 128)
                v.update(repeating: 128)
                return true
            case TJSAMP_422:
                return I422ToI420(nil, 0, scratchU, sourceWidth, scratchV, sourceWidth,
                                  nil, 0, u.baseAddress, strideUV, v.baseAddress, strideUV, width, height) == 0
            case TJSAMP_444:
                return I444ToI420(nil, 0, scratchU, sourceWidth, scratchV, sourceWidth,
                                  nil, 0, u.baseAddress, strideUV, v.baseAddress, strideUV, width, height) == 0
            default:
                // 4:4:0 and 4:1:1 have no libyuv shortcut; scale chroma as those do.
                ScalePlane(scratchU, sourceWidth, sourceWidth, sourceHeight, u.baseAddress, strideUV,
                           chromaWidth, chromaHeight, kFilterBox)
                ScalePlane(scratchV, sourceWidth, sourceWidth, sourceHeight, v.baseAddress, strideUV,
                           chromaWidth, chromaHeight, kFilterBox)
                return true
            }
        }
    }

    /// TurboJPEG 2.1 leaves a handle unusable after a fatal error mid-stream ("Improper
    /// call to JPEG library"), so a corrupt frame costs a fresh one; good frames never do.
    private func resetDecoder() {
        if let decoder { tjDestroy(decoder) }
        decoder = tjInitDecompress()
    }

    /// Starts with SOI and ends with EOI (after any zero or 0xFF padding). A frame cut
    /// short on the bus lacks the EOI, and libjpeg would only warn and paint it grey.
    static func isComplete(_ jpeg: UnsafeBufferPointer<UInt8>) -> Bool {
        guard jpeg.count >= 4, jpeg[0] == 0xFF, jpeg[1] == 0xD8 else { return false }
        var end = jpeg.count - 1
        while end > 2 && (jpeg[end] == 0x00 || jpeg[end] == 0xFF) { end -= 1 }
        return jpeg[end] == 0xD9 && jpeg[end - 1] == 0xFF
    }
}
