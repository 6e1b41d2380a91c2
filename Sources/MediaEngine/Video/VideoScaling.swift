import CYUV

extension VideoFrame {
    /// Scales this frame into `destination` (whose size is the target size) with libyuv's
    /// box filter, keeping the timestamp. Allocates nothing.
    public func scale(into destination: inout VideoFrame) {
        let (targetWidth, targetHeight) = (destination.width, destination.height)
        let (targetStrideY, targetStrideUV) = (destination.strideY, destination.strideUV)
        destination.timestamp = timestamp
        destination.withMutablePlanes { y, u, v in
            scale(intoY: y.baseAddress, u: u.baseAddress, v: v.baseAddress, strideY: targetStrideY,
                  strideUV: targetStrideUV, width: targetWidth, height: targetHeight)
        }
    }

    /// Scales this frame into planes someone else owns (`width` x `height`, I420), with
    /// the same filter as `scale(into:)`, so both give the same pixels.
    func scale(intoY y: UnsafeMutablePointer<UInt8>?, u: UnsafeMutablePointer<UInt8>?, v: UnsafeMutablePointer<UInt8>?,
               strideY targetStrideY: Int, strideUV targetStrideUV: Int, width targetWidth: Int, height targetHeight: Int) {
        let (width, height, strideY, strideUV) = (Int32(width), Int32(height), Int32(strideY), Int32(strideUV))
        withPlanes { sy, su, sv in
            _ = I420Scale(sy.baseAddress, strideY, su.baseAddress, strideUV, sv.baseAddress, strideUV, width, height,
                          y, Int32(targetStrideY), u, Int32(targetStrideUV), v, Int32(targetStrideUV),
                          Int32(targetWidth), Int32(targetHeight), kFilterBox)
        }
    }
}
