import CYUV

/// Objective picture quality through libyuv's reference implementations.
public enum VideoQuality {
    /// PSNR in dB over all three planes (libyuv weights luma and chroma by sample count),
    /// capped at 128 dB for identical pictures.
    /// - Precondition: both frames have the same size.
    public static func psnr(_ reference: VideoFrame, _ test: VideoFrame) -> Double {
        compare(reference, test, I420Psnr)
    }

    /// SSIM (0 to 1) averaged over the three planes as libyuv computes it.
    /// - Precondition: both frames have the same size.
    public static func ssim(_ reference: VideoFrame, _ test: VideoFrame) -> Double {
        compare(reference, test, I420Ssim)
    }

    private typealias Metric = (UnsafePointer<UInt8>?, Int32, UnsafePointer<UInt8>?, Int32, UnsafePointer<UInt8>?, Int32,
                                UnsafePointer<UInt8>?, Int32, UnsafePointer<UInt8>?, Int32, UnsafePointer<UInt8>?, Int32,
                                Int32, Int32) -> Double

    private static func compare(_ a: VideoFrame, _ b: VideoFrame, _ metric: Metric) -> Double {
        precondition(a.width == b.width && a.height == b.height, "frames to compare differ in size")
        return a.withPlanes { ay, au, av in
            b.withPlanes { by, bu, bv in
                metric(ay.baseAddress, Int32(a.strideY), au.baseAddress, Int32(a.strideUV), av.baseAddress, Int32(a.strideUV),
                       by.baseAddress, Int32(b.strideY), bu.baseAddress, Int32(b.strideUV), bv.baseAddress, Int32(b.strideUV),
                       Int32(a.width), Int32(a.height))
            }
        }
    }
}
