import CYUV

extension VideoFrame {
    /// Scales this frame into `destination` (whose size is the target size) with libyuv's
    /// box filter, keeping the timestamp. Allocates nothing.
    public func scale(into destination: inout VideoFrame) {
        let (width, height, strideY, strideUV) = (Int32(width), Int32(height), Int32(strideY), Int32(strideUV))
        let (targetWidth, targetHeight) = (Int32(destination.width), Int32(destination.height))
        let (targetStrideY, targetStrideUV) = (Int32(destination.strideY), Int32(destination.strideUV))
        destination.timestamp = timestamp
        withPlanes { y, u, v in
            destination.withMutablePlanes { ty, tu, tv in
                _ = I420Scale(y.baseAddress, strideY, u.baseAddress, strideUV, v.baseAddress, strideUV, width, height,
                              ty.baseAddress, targetStrideY, tu.baseAddress, targetStrideUV, tv.baseAddress, targetStrideUV,
                              targetWidth, targetHeight, kFilterBox)
            }
        }
    }
}
