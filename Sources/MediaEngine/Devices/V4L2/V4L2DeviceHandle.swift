import CV4L2
#if canImport(Glibc)
import Glibc
#endif

/// One open V4L2 node and its memory-mapped buffers, per the V4L2 streaming I/O
/// spec: REQBUFS (MMAP), QUERYBUF + mmap each, QBUF all, STREAMON; then DQBUF/QBUF;
/// closing does STREAMOFF, munmap, REQBUFS 0 and close. Every failure becomes a
/// `DeviceError` naming the path.
///
/// One thread at a time: the capture thread owns it once streaming starts.
final class V4L2DeviceHandle {
    // Non-blocking so DQBUF never hangs once poll has said yes; the wait is in poll.
    static let openFlags = O_RDWR | O_NONBLOCK | O_CLOEXEC

    let io: any V4L2DeviceIO
    let path: String
    private var descriptor: Int32
    private var buffers: [UnsafeMutableRawBufferPointer] = []
    private var isStreaming = false

    /// Opens `path`; errno becomes notFound, busy, permissionDenied, disconnected or ioFailed.
    init(path: String, io: any V4L2DeviceIO) throws(DeviceError) {
        do throws(V4L2Errno) {
            descriptor = try io.open(path, flags: Self.openFlags)
        } catch {
            throw DeviceError(v4l2: error, device: path, action: "open")
        }
        self.io = io
        self.path = path
    }

    deinit { close() }

    /// Issues `request` (named `name` in errors).
    func call<Argument>(_ request: UInt, _ name: String, _ argument: inout Argument) throws(DeviceError) {
        do throws(V4L2Errno) {
            try io.ioctl(descriptor, request, &argument)
        } catch {
            throw DeviceError(v4l2: error, device: path, action: name)
        }
    }

    /// QUERYCAP, insisting on a node that streams video capture.
    func captureCapabilities() throws(DeviceError) -> V4L2Query.Capabilities {
        let capabilities: V4L2Query.Capabilities
        do throws(V4L2Errno) {
            capabilities = try V4L2Query.capabilities(io, descriptor)
        } catch where error.code == ENOTTY || error.code == EINVAL {
            throw DeviceError(.notFound, device: path, "is not a V4L2 device (VIDIOC_QUERYCAP: \(error))")
        } catch {
            throw DeviceError(v4l2: error, device: path, action: "VIDIOC_QUERYCAP")
        }
        guard capabilities.canStreamCapture else {
            throw DeviceError(.unsupportedFormat, device: path,
                              "\(capabilities.card) is not a streaming video capture node (capabilities 0x"
                                + String(capabilities.bits, radix: 16) + "; UVC cameras also have a metadata node)")
        }
        return capabilities
    }

    func formats() throws(DeviceError) -> [V4L2FormatInfo] {
        do throws(V4L2Errno) {
            return try V4L2Query.formats(io, descriptor)
        } catch {
            throw DeviceError(v4l2: error, device: path, action: "VIDIOC_ENUM_FMT")
        }
    }

    /// S_FMT then S_PARM, keeping whatever the driver answers.
    func apply(_ choice: V4L2FormatChoice, requestedRate: Int) throws(DeviceError) -> V4L2StreamFormat {
        var format = v4l2_format()
        format.type = V4L2_BUF_TYPE_VIDEO_CAPTURE.rawValue
        format.fmt.pix.width = UInt32(choice.width)
        format.fmt.pix.height = UInt32(choice.height)
        format.fmt.pix.pixelformat = choice.pixelFormat.rawValue
        format.fmt.pix.field = V4L2_FIELD_NONE.rawValue
        try call(CV4L2_VIDIOC_S_FMT, "VIDIOC_S_FMT", &format)
        let pixelFormat = V4L2PixelFormat(rawValue: format.fmt.pix.pixelformat)
        let (width, height) = (Int(format.fmt.pix.width), Int(format.fmt.pix.height))
        guard pixelFormat.isConvertible, width > 0, height > 0 else {
            throw DeviceError(.unsupportedFormat, device: path,
                              "asked for \(choice.pixelFormat) \(choice.width)x\(choice.height), the driver set \(pixelFormat) \(width)x\(height)")
        }

        var interval = choice.interval ?? V4L2Fraction(1, max(1, requestedRate))
        var parameters = v4l2_streamparm()
        parameters.type = V4L2_BUF_TYPE_VIDEO_CAPTURE.rawValue
        parameters.parm.capture.timeperframe = v4l2_fract(numerator: UInt32(interval.numerator),
                                                          denominator: UInt32(interval.denominator))
        do throws(V4L2Errno) {
            try io.ioctl(descriptor, CV4L2_VIDIOC_S_PARM, &parameters)
            let answered = V4L2Query.fraction(parameters.parm.capture.timeperframe)
            if answered.numerator > 0 && answered.denominator > 0 { interval = answered }
        } catch where error.code == ENOTTY || error.code == EINVAL {
            // The driver has no rate control; it runs at its own rate.
        } catch {
            throw DeviceError(v4l2: error, device: path, action: "VIDIOC_S_PARM")
        }
        return V4L2StreamFormat(pixelFormat: pixelFormat, width: width, height: height,
                                bytesPerLine: Int(format.fmt.pix.bytesperline), imageSize: Int(format.fmt.pix.sizeimage),
                                frameInterval: interval)
    }

    /// REQBUFS, QUERYBUF and mmap each, QBUF all, STREAMON.
    func startStreaming(bufferCount: Int) throws(DeviceError) {
        var request = v4l2_requestbuffers()
        request.count = UInt32(bufferCount)
        request.type = V4L2_BUF_TYPE_VIDEO_CAPTURE.rawValue
        request.memory = V4L2_MEMORY_MMAP.rawValue
        try call(CV4L2_VIDIOC_REQBUFS, "VIDIOC_REQBUFS", &request)
        guard request.count > 0 else {
            throw DeviceError(.ioFailed, device: path, "the driver granted no capture buffers (VIDIOC_REQBUFS)")
        }
        buffers.reserveCapacity(Int(request.count))
        for index in 0..<request.count {
            var buffer = Self.emptyBuffer(index: index)
            try call(CV4L2_VIDIOC_QUERYBUF, "VIDIOC_QUERYBUF", &buffer)
            let length = Int(buffer.length)
            do throws(V4L2Errno) {
                let address = try io.map(descriptor, length: length, offset: Int(buffer.m.offset))
                buffers.append(UnsafeMutableRawBufferPointer(start: address, count: length))
            } catch {
                throw DeviceError(v4l2: error, device: path, action: "mmap")
            }
        }
        for index in 0..<request.count {
            var buffer = Self.emptyBuffer(index: index)
            try call(CV4L2_VIDIOC_QBUF, "VIDIOC_QBUF", &buffer)
        }
        var type = Int32(V4L2_BUF_TYPE_VIDEO_CAPTURE.rawValue)
        try call(CV4L2_VIDIOC_STREAMON, "VIDIOC_STREAMON", &type)
        isStreaming = true
    }

    /// Waits for a filled buffer.
    func waitReadable(timeout: Duration) throws(DeviceError) -> Bool {
        do throws(V4L2Errno) {
            return try io.waitReadable(descriptor, timeout: timeout)
        } catch {
            throw DeviceError(v4l2: error, device: path, action: "poll")
        }
    }

    /// DQBUF into `buffer`.
    /// - Returns: false when no buffer is ready yet (EAGAIN).
    func dequeue(into buffer: inout v4l2_buffer) throws(DeviceError) -> Bool {
        buffer = Self.emptyBuffer(index: 0)
        do throws(V4L2Errno) {
            try io.ioctl(descriptor, CV4L2_VIDIOC_DQBUF, &buffer)
        } catch where error.code == EAGAIN {
            return false
        } catch {
            throw DeviceError(v4l2: error, device: path, action: "VIDIOC_DQBUF")
        }
        guard Int(buffer.index) < buffers.count else {
            throw DeviceError(.ioFailed, device: path, "VIDIOC_DQBUF returned buffer \(buffer.index) of \(buffers.count)")
        }
        return true
    }

    /// The filled part of a dequeued buffer.
    func bytes(of buffer: v4l2_buffer) -> UnsafeRawBufferPointer {
        let memory = buffers[Int(buffer.index)]
        return UnsafeRawBufferPointer(rebasing: memory[0..<min(Int(buffer.bytesused), memory.count)])
    }

    /// QBUF a buffer that `dequeue` returned.
    func requeue(_ buffer: inout v4l2_buffer) throws(DeviceError) {
        try call(CV4L2_VIDIOC_QBUF, "VIDIOC_QBUF", &buffer)
    }

    /// STREAMOFF, munmap, REQBUFS 0, close. Errors are ignored: the device may be gone.
    func close() {
        guard descriptor >= 0 else { return }
        if isStreaming {
            var type = Int32(V4L2_BUF_TYPE_VIDEO_CAPTURE.rawValue)
            try? io.ioctl(descriptor, CV4L2_VIDIOC_STREAMOFF, &type)
            isStreaming = false
        }
        for buffer in buffers { io.unmap(buffer.baseAddress!, length: buffer.count) }
        if !buffers.isEmpty {
            buffers.removeAll()
            var request = v4l2_requestbuffers()
            request.count = 0
            request.type = V4L2_BUF_TYPE_VIDEO_CAPTURE.rawValue
            request.memory = V4L2_MEMORY_MMAP.rawValue
            try? io.ioctl(descriptor, CV4L2_VIDIOC_REQBUFS, &request)
        }
        io.close(descriptor)
        descriptor = -1
    }

    private static func emptyBuffer(index: UInt32) -> v4l2_buffer {
        var buffer = v4l2_buffer()
        buffer.index = index
        buffer.type = V4L2_BUF_TYPE_VIDEO_CAPTURE.rawValue
        buffer.memory = V4L2_MEMORY_MMAP.rawValue
        return buffer
    }
}
