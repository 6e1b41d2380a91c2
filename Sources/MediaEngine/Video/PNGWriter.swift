import CPNG
import CYUV

extension VideoFrame {
    /// Writes the picture as an 8-bit RGB PNG (libyuv converts I420 to RGB with BT.601
    /// limited-range coefficients; libpng's simplified API encodes).
    /// - Throws: `MediaFileError` naming the path when it cannot be written.
    public func writePNG(path: String) throws(MediaFileError) {
        var rgb = [UInt8](repeating: 0, count: width * height * 3)
        let converted = withPlanes { y, u, v in
            rgb.withUnsafeMutableBufferPointer { out in
                I420ToRAW(y.baseAddress, Int32(strideY), u.baseAddress, Int32(strideUV), v.baseAddress, Int32(strideUV),
                          out.baseAddress, Int32(width * 3), Int32(width), Int32(height))
            }
        }
        guard converted == 0 else { throw MediaFileError(.writeFailed, path: path, "I420 to RGB conversion failed (\(converted))") }
        var image = png_image()
        image.version = UInt32(PNG_IMAGE_VERSION)
        image.width = UInt32(width)
        image.height = UInt32(height)
        image.format = UInt32(PNG_FORMAT_RGB)
        let written = rgb.withUnsafeBufferPointer { pixels in
            png_image_write_to_file(&image, path, 0, pixels.baseAddress, Int32(width * 3), nil)
        }
        guard written != 0 else {
            let reason = withUnsafeBytes(of: image.message) { String(decoding: $0.prefix { $0 != 0 }, as: UTF8.self) }
            png_image_free(&image)
            throw MediaFileError(.cannotOpen, path: path, "cannot write the PNG: \(reason)")
        }
    }
}
