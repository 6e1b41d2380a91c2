/// One planar I420 (YUV 4:2:0) picture and the time it was captured.
///
/// The three planes live in one buffer: Y (`strideY * height` bytes), then U, then V
/// (`strideUV * chromaHeight` bytes each). Rows may be padded (stride > width).
/// Value type with copy-on-write storage.
public struct VideoFrame: Sendable, Equatable {
    /// Luma width in pixels.
    public private(set) var width: Int
    /// Luma height in pixels.
    public private(set) var height: Int
    /// Bytes per luma row.
    public private(set) var strideY: Int
    /// Bytes per chroma row (same for U and V).
    public private(set) var strideUV: Int
    /// Capture time, on the capturing clock. Synthetic sources start at zero.
    public var timestamp: Duration
    /// Y, U and V planes back to back.
    public private(set) var data: [UInt8]

    /// Creates a black frame.
    /// - Precondition: `width` and `height` are positive; strides are at least the plane widths.
    public init(width: Int, height: Int, timestamp: Duration = .zero, strideY: Int? = nil, strideUV: Int? = nil) {
        precondition(width > 0 && height > 0, "a video frame needs a positive size")
        let chromaWidth = (width + 1) / 2
        let strideY = strideY ?? width
        let strideUV = strideUV ?? chromaWidth
        precondition(strideY >= width && strideUV >= chromaWidth, "stride is narrower than the plane")
        self.width = width
        self.height = height
        self.strideY = strideY
        self.strideUV = strideUV
        self.timestamp = timestamp
        let lumaCount = strideY * height
        let chromaCount = strideUV * ((height + 1) / 2)
        var data = [UInt8](repeating: 16, count: lumaCount + 2 * chromaCount)
        data.withUnsafeMutableBufferPointer { buffer in
            buffer[lumaCount...].update(repeating: 128)
        }
        self.data = data
    }

    /// Width of the U and V planes.
    public var chromaWidth: Int { (width + 1) / 2 }
    /// Height of the U and V planes.
    public var chromaHeight: Int { (height + 1) / 2 }
    /// Offset of the U plane in `data`.
    public var offsetU: Int { strideY * height }
    /// Offset of the V plane in `data`.
    public var offsetV: Int { offsetU + strideUV * chromaHeight }

    /// Calls `body` with the three planes.
    public func withPlanes<R, E: Error>(
        _ body: (UnsafeBufferPointer<UInt8>, UnsafeBufferPointer<UInt8>, UnsafeBufferPointer<UInt8>) throws(E) -> R
    ) throws(E) -> R {
        let (u, v, end) = (offsetU, offsetV, data.count)
        return try data.withUnsafeBufferPointer { (all) throws(E) in
            try body(UnsafeBufferPointer(rebasing: all[0..<u]),
                     UnsafeBufferPointer(rebasing: all[u..<v]),
                     UnsafeBufferPointer(rebasing: all[v..<end]))
        }
    }

    /// Calls `body` with the three planes, writable.
    public mutating func withMutablePlanes<R, E: Error>(
        _ body: (UnsafeMutableBufferPointer<UInt8>, UnsafeMutableBufferPointer<UInt8>,
                 UnsafeMutableBufferPointer<UInt8>) throws(E) -> R
    ) throws(E) -> R {
        let (u, v, end) = (offsetU, offsetV, data.count)
        return try data.withUnsafeMutableBufferPointer { (all) throws(E) in
            try body(UnsafeMutableBufferPointer(rebasing: all[0..<u]),
                     UnsafeMutableBufferPointer(rebasing: all[u..<v]),
                     UnsafeMutableBufferPointer(rebasing: all[v..<end]))
        }
    }

    /// Makes this frame a copy of `other` (size, strides, pixels, timestamp), reusing the
    /// buffer when it is large enough, so handing pictures between threads allocates
    /// nothing in steady state (plain assignment would share the buffer, and the next
    /// write to either copy would allocate).
    public mutating func copy(from other: VideoFrame) {
        width = other.width
        height = other.height
        strideY = other.strideY
        strideUV = other.strideUV
        timestamp = other.timestamp
        if data.count > other.data.count {
            data.removeLast(data.count - other.data.count)
        } else if data.count < other.data.count {
            data.append(contentsOf: repeatElement(0, count: other.data.count - data.count))
        }
        data.withUnsafeMutableBufferPointer { target in
            other.data.withUnsafeBufferPointer { source in _ = target.update(fromContentsOf: source) }
        }
    }

    /// Makes the frame `width` x `height` with tight strides, reusing the buffer when it
    /// is large enough (no allocation in steady state). Pixel contents are unspecified
    /// afterwards.
    public mutating func reshape(width: Int, height: Int) {
        precondition(width > 0 && height > 0, "a video frame needs a positive size")
        let chromaWidth = (width + 1) / 2
        let needed = width * height + 2 * chromaWidth * ((height + 1) / 2)
        self.width = width
        self.height = height
        strideY = width
        strideUV = chromaWidth
        if data.count != needed {
            if data.count > needed {
                data.removeLast(data.count - needed)
            } else {
                data.append(contentsOf: repeatElement(0, count: needed - data.count))
            }
        }
    }
}
