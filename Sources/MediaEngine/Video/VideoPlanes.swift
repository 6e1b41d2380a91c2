/// A borrowed I420 picture: three plane pointers with strides and the luma size.
///
/// Valid only inside the closure that gives it (a decoder's image is overwritten by the
/// next decode, a frame's buffer may move after the closure returns). Lets a decoder hand
/// its picture to a composer without copying it into a `VideoFrame` first.
public struct VideoPlanes {
    /// Luma width in pixels.
    public let width: Int
    /// Luma height in pixels.
    public let height: Int
    /// The Y plane's first byte.
    public let y: UnsafePointer<UInt8>
    /// The U plane's first byte.
    public let u: UnsafePointer<UInt8>
    /// The V plane's first byte.
    public let v: UnsafePointer<UInt8>
    /// Bytes per Y row.
    public let strideY: Int
    /// Bytes per U row.
    public let strideU: Int
    /// Bytes per V row.
    public let strideV: Int

    /// Wraps planes owned by someone else; the memory must outlive every use of the value.
    /// - Precondition: the size is positive and each stride covers its plane's width
    ///   (chroma planes are `(width + 1) / 2` wide and `(height + 1) / 2` high).
    public init(width: Int, height: Int, y: UnsafePointer<UInt8>, u: UnsafePointer<UInt8>, v: UnsafePointer<UInt8>,
                strideY: Int, strideU: Int, strideV: Int) {
        precondition(width > 0 && height > 0, "a picture needs a positive size, not \(width)x\(height)")
        let chromaWidth = (width + 1) / 2
        precondition(strideY >= width && strideU >= chromaWidth && strideV >= chromaWidth,
                     "a stride is narrower than its plane")
        self.width = width
        self.height = height
        self.y = y
        self.u = u
        self.v = v
        self.strideY = strideY
        self.strideU = strideU
        self.strideV = strideV
    }
}

extension VideoFrame {
    /// Calls `body` with this frame's planes, borrowed (no copy).
    /// - Returns: what `body` returns.
    /// - Throws: what `body` throws.
    public func withPlanesView<R>(_ body: (VideoPlanes) throws -> R) rethrows -> R {
        let (width, height, strideY, strideUV) = (width, height, strideY, strideUV)
        let (u, v) = (offsetU, offsetV)
        return try data.withUnsafeBufferPointer { all in
            // A VideoFrame's buffer always holds all three planes (init and reshape size it so).
            let base = all.baseAddress!
            return try body(VideoPlanes(width: width, height: height, y: base, u: base + u, v: base + v,
                                        strideY: strideY, strideU: strideUV, strideV: strideUV))
        }
    }
}
