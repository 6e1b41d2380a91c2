import CV4L2
#if canImport(Glibc)
import Glibc
#endif

/// The enumeration ioctls (QUERYCAP, ENUM_FMT, ENUM_FRAMESIZES, ENUM_FRAMEINTERVALS)
/// on an open descriptor.
enum V4L2Query {
    /// What QUERYCAP says about one node.
    struct Capabilities {
        var driver: String
        var card: String
        var busInfo: String
        /// `device_caps` when the driver sets V4L2_CAP_DEVICE_CAPS, else `capabilities`
        /// (which describes the whole physical device, not this node).
        var bits: UInt32

        var canStreamCapture: Bool {
            bits & UInt32(V4L2_CAP_VIDEO_CAPTURE) != 0 && bits & UInt32(V4L2_CAP_STREAMING) != 0
        }
    }

    // Drivers end each list with EINVAL; a bound keeps a broken one from looping forever.
    private static let maximumEntries: UInt32 = 256

    static func capabilities(_ io: any V4L2DeviceIO, _ descriptor: Int32) throws(V4L2Errno) -> Capabilities {
        var capability = v4l2_capability()
        try io.ioctl(descriptor, CV4L2_VIDIOC_QUERYCAP, &capability)
        let hasDeviceCaps = capability.capabilities & UInt32(truncatingIfNeeded: V4L2_CAP_DEVICE_CAPS) != 0
        return Capabilities(driver: string(capability.driver), card: string(capability.card),
                            busInfo: string(capability.bus_info),
                            bits: hasDeviceCaps ? capability.device_caps : capability.capabilities)
    }

    static func formats(_ io: any V4L2DeviceIO, _ descriptor: Int32) throws(V4L2Errno) -> [V4L2FormatInfo] {
        var formats: [V4L2FormatInfo] = []
        for index in 0..<maximumEntries {
            var description = v4l2_fmtdesc()
            description.index = index
            description.type = V4L2_BUF_TYPE_VIDEO_CAPTURE.rawValue
            do throws(V4L2Errno) {
                try io.ioctl(descriptor, CV4L2_VIDIOC_ENUM_FMT, &description)
            } catch where error.code == EINVAL {
                break
            }
            let format = V4L2PixelFormat(rawValue: description.pixelformat)
            formats.append(V4L2FormatInfo(
                pixelFormat: format, description: string(description.description),
                isCompressed: description.flags & UInt32(V4L2_FMT_FLAG_COMPRESSED) != 0,
                isEmulated: description.flags & UInt32(V4L2_FMT_FLAG_EMULATED) != 0,
                frameSizes: try frameSizes(io, descriptor, format)))
        }
        return formats
    }

    /// Sizes of one format; stepwise and continuous ranges come as one entry whose
    /// intervals are those at the largest size.
    static func frameSizes(_ io: any V4L2DeviceIO, _ descriptor: Int32,
                           _ format: V4L2PixelFormat) throws(V4L2Errno) -> [V4L2FrameSize] {
        var sizes: [V4L2FrameSize] = []
        for index in 0..<maximumEntries {
            var size = v4l2_frmsizeenum()
            size.index = index
            size.pixel_format = format.rawValue
            do throws(V4L2Errno) {
                try io.ioctl(descriptor, CV4L2_VIDIOC_ENUM_FRAMESIZES, &size)
            } catch where error.code == EINVAL || error.code == ENOTTY {
                // ENOTTY: the driver does not enumerate sizes; S_FMT will still answer.
                break
            }
            if size.type == V4L2_FRMSIZE_TYPE_DISCRETE.rawValue {
                let (width, height) = (Int(size.discrete.width), Int(size.discrete.height))
                sizes.append(V4L2FrameSize(width: width, height: height,
                                           intervals: try intervals(io, descriptor, format, width, height)))
                continue
            }
            let step = size.stepwise
            let continuous = size.type == V4L2_FRMSIZE_TYPE_CONTINUOUS.rawValue
            let range = V4L2SizeRange(minimumWidth: Int(step.min_width), maximumWidth: Int(step.max_width),
                                      widthStep: continuous ? 1 : Int(step.step_width),
                                      minimumHeight: Int(step.min_height), maximumHeight: Int(step.max_height),
                                      heightStep: continuous ? 1 : Int(step.step_height))
            sizes.append(V4L2FrameSize(
                width: range.maximumWidth, height: range.maximumHeight, range: range,
                intervals: try intervals(io, descriptor, format, range.maximumWidth, range.maximumHeight)))
            break  // A range is the only entry (index 0).
        }
        return sizes
    }

    static func intervals(_ io: any V4L2DeviceIO, _ descriptor: Int32, _ format: V4L2PixelFormat,
                          _ width: Int, _ height: Int) throws(V4L2Errno) -> [V4L2FrameInterval] {
        var intervals: [V4L2FrameInterval] = []
        for index in 0..<maximumEntries {
            var interval = v4l2_frmivalenum()
            interval.index = index
            interval.pixel_format = format.rawValue
            interval.width = UInt32(width)
            interval.height = UInt32(height)
            do throws(V4L2Errno) {
                try io.ioctl(descriptor, CV4L2_VIDIOC_ENUM_FRAMEINTERVALS, &interval)
            } catch where error.code == EINVAL || error.code == ENOTTY {
                break
            }
            if interval.type == V4L2_FRMIVAL_TYPE_DISCRETE.rawValue {
                intervals.append(V4L2FrameInterval(fraction(interval.discrete)))
                continue
            }
            let step = interval.stepwise
            intervals.append(V4L2FrameInterval(
                minimum: fraction(step.min), maximum: fraction(step.max),
                step: interval.type == V4L2_FRMIVAL_TYPE_CONTINUOUS.rawValue ? nil : fraction(step.step)))
            break
        }
        return intervals
    }

    static func fraction(_ value: v4l2_fract) -> V4L2Fraction {
        V4L2Fraction(Int(value.numerator), Int(value.denominator))
    }

    /// A NUL-terminated fixed-size C string field.
    static func string<Field>(_ field: Field) -> String {
        withUnsafeBytes(of: field) { String(decoding: $0.prefix(while: { $0 != 0 }), as: UTF8.self) }
    }
}
