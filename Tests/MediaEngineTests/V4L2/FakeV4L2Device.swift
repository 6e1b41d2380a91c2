import CV4L2
import Glibc
@testable import MediaEngine

/// A scripted V4L2 driver behind `V4L2DeviceIO`: answers the enumeration, format and
/// streaming ioctls from a description of its nodes, serves mmap from its own memory,
/// fills dequeued buffers with scripted frames and injects errors. It keeps a log of
/// the calls so tests can check the streaming protocol.
///
/// Frames are served as fast as the capture thread takes them, up to `frameLimit`;
/// tests wait on `waitUntilRequeued` (the capture thread re-queues a buffer only after
/// publishing its frame), never on sleeps.
final class FakeV4L2Device: V4L2DeviceIO {
    struct Node: Sendable {
        var path = "/dev/video0"
        var driver = "fakecam"
        var card = "Fake Camera"
        var busInfo = "usb-fake-1"
        /// The whole device's caps; V4L2_CAP_DEVICE_CAPS says `deviceCapabilities` is set.
        var capabilities = UInt32(V4L2_CAP_VIDEO_CAPTURE | V4L2_CAP_STREAMING | V4L2_CAP_META_CAPTURE)
            | UInt32(truncatingIfNeeded: V4L2_CAP_DEVICE_CAPS)
        var deviceCapabilities = UInt32(V4L2_CAP_VIDEO_CAPTURE | V4L2_CAP_STREAMING)
        var formats: [V4L2FormatInfo] = []
        /// errno that `open` fails with.
        var openError: Int32?
    }

    struct Script: Sendable {
        /// Payloads served in order, the last one repeating.
        var frames: [[UInt8]] = []
        /// Frames served in all; none after that (a stalled camera).
        var frameLimit = Int.max
        /// DQBUF fails with `errno` once `after` frames were served.
        var dequeueError: (after: Int, errno: Int32)?
        /// Frame numbers whose buffer carries V4L2_BUF_FLAG_ERROR.
        var flaggedFrames: Set<Int> = []
        /// Timestamp of frame 0, then one `timestampStep` per frame.
        var firstTimestamp = Duration.seconds(1_000)
        var timestampStep = Duration.microseconds(33_333)
        /// Extra bytes per row the driver pads uncompressed formats with.
        var rowPadding = 0
        /// The size S_FMT answers whatever is asked (a driver adjusting the request).
        var forcedSize: (width: Int, height: Int)?
        /// Buffers REQBUFS grants at most.
        var maximumBuffers = 8
    }

    struct Buffer: Sendable {
        var address: UInt
        var length: Int
        var isQueued = false
        var wasDequeued = false
    }

    struct State: Sendable {
        var nodes: [Node]
        var script: Script
        var descriptors: [Int32: String] = [:]
        var nextDescriptor: Int32 = 40
        var log: [String] = []
        var pixelFormat = V4L2PixelFormat.yuyv
        var width = 0
        var height = 0
        var bytesPerLine = 0
        var imageSize = 0
        var interval = V4L2Fraction(1, 30)
        var buffers: [Buffer] = []
        var queue: [Int] = []
        var isStreaming = false
        var served = 0
        var requeued = 0

        var errorIsDue: Bool { script.dequeueError.map { served >= $0.after } ?? false }
        var frameIsReady: Bool {
            isStreaming && !queue.isEmpty && !script.frames.isEmpty && served < script.frameLimit
        }
    }

    let state: Monitor<State>

    init(nodes: [Node], script: Script = Script()) {
        state = Monitor(State(nodes: nodes, script: script))
    }

    /// One camera at /dev/video0 offering `formats`.
    convenience init(formats: [V4L2FormatInfo], script: Script = Script()) {
        self.init(nodes: [Node(formats: formats)], script: script)
    }

    deinit {
        state.withLock { state in
            for buffer in state.buffers { UnsafeMutableRawPointer(bitPattern: buffer.address)?.deallocate() }
        }
    }

    var log: [String] { state.withLock { $0.log } }
    var openDescriptorCount: Int { state.withLock { $0.descriptors.count } }

    /// Waits until the capture thread has handed back `count` filled buffers, i.e. has
    /// published `count` frames (or counted them corrupt).
    func waitUntilRequeued(_ count: Int, timeout: Duration = .seconds(10)) -> Bool {
        state.withLock(waitingUpTo: timeout, until: { $0.requeued >= count }) { $0.requeued >= count }
    }

    /// Waits until the device is closed again.
    func waitUntilClosed(timeout: Duration = .seconds(10)) -> Bool {
        state.withLock(waitingUpTo: timeout, until: { $0.descriptors.isEmpty }) { $0.descriptors.isEmpty }
    }

    // MARK: V4L2DeviceIO

    func devicePaths() -> [String] { state.withLock { $0.nodes.map(\.path) } }

    func open(_ path: String, flags: Int32) throws(V4L2Errno) -> Int32 {
        try state.withLockWaking { (state) -> Result<Int32, V4L2Errno> in
            guard let node = state.nodes.first(where: { $0.path == path }) else { return .failure(V4L2Errno(ENOENT)) }
            if let error = node.openError { return .failure(V4L2Errno(error)) }
            let descriptor = state.nextDescriptor
            state.nextDescriptor += 1
            state.descriptors[descriptor] = path
            state.log.append("open \(path)")
            return .success(descriptor)
        }.get()
    }

    func close(_ descriptor: Int32) {
        state.withLockWaking { state in
            state.log.append("close")
            state.descriptors[descriptor] = nil
        }
    }

    func map(_ descriptor: Int32, length: Int, offset: Int) throws(V4L2Errno) -> UnsafeMutableRawPointer {
        try state.withLock { (state) -> Result<UnsafeMutableRawPointer, V4L2Errno> in
            let index = offset / 0x1000
            guard state.descriptors[descriptor] != nil, index < state.buffers.count, offset % 0x1000 == 0,
                  state.buffers[index].length == length else { return .failure(V4L2Errno(EINVAL)) }
            state.log.append("mmap \(index)")
            return .success(UnsafeMutableRawPointer(bitPattern: state.buffers[index].address)!)
        }.get()
    }

    func unmap(_ address: UnsafeMutableRawPointer, length: Int) {
        state.withLock { $0.log.append("munmap") }
    }

    func waitReadable(_ descriptor: Int32, timeout: Duration) throws(V4L2Errno) -> Bool {
        state.withLock(waitingUpTo: timeout, until: { $0.frameIsReady || ($0.isStreaming && $0.errorIsDue) }) {
            $0.frameIsReady || ($0.isStreaming && $0.errorIsDue)
        }
    }

    func ioctl(_ descriptor: Int32, _ request: UInt, _ argument: UnsafeMutableRawPointer) throws(V4L2Errno) {
        let status = state.withLockWaking { state -> Int32 in
            guard let path = state.descriptors[descriptor], let node = state.nodes.first(where: { $0.path == path }) else {
                return EBADF
            }
            return Self.handle(request, argument, node: node, state: &state)
        }
        if status != 0 { throw V4L2Errno(status) }
    }

    // MARK: The driver

    private static func handle(_ request: UInt, _ argument: UnsafeMutableRawPointer, node: Node, state: inout State) -> Int32 {
        switch request {
        case CV4L2_VIDIOC_QUERYCAP:
            let capability = argument.assumingMemoryBound(to: v4l2_capability.self)
            capability.pointee = v4l2_capability()
            write(node.driver, to: &capability.pointee.driver)
            write(node.card, to: &capability.pointee.card)
            write(node.busInfo, to: &capability.pointee.bus_info)
            capability.pointee.capabilities = node.capabilities
            capability.pointee.device_caps = node.deviceCapabilities
            return 0

        case CV4L2_VIDIOC_ENUM_FMT:
            let description = argument.assumingMemoryBound(to: v4l2_fmtdesc.self)
            let index = Int(description.pointee.index)
            guard description.pointee.type == V4L2_BUF_TYPE_VIDEO_CAPTURE.rawValue, index < node.formats.count else { return EINVAL }
            let format = node.formats[index]
            description.pointee.pixelformat = format.pixelFormat.rawValue
            description.pointee.flags = (format.isCompressed ? UInt32(V4L2_FMT_FLAG_COMPRESSED) : 0)
                | (format.isEmulated ? UInt32(V4L2_FMT_FLAG_EMULATED) : 0)
            write(format.description, to: &description.pointee.description)
            return 0

        case CV4L2_VIDIOC_ENUM_FRAMESIZES:
            let size = argument.assumingMemoryBound(to: v4l2_frmsizeenum.self)
            guard let format = node.formats.first(where: { $0.pixelFormat.rawValue == size.pointee.pixel_format }),
                  Int(size.pointee.index) < format.frameSizes.count else { return EINVAL }
            let entry = format.frameSizes[Int(size.pointee.index)]
            if let range = entry.range {
                guard size.pointee.index == 0 else { return EINVAL }
                let continuous = range.widthStep == 1 && range.heightStep == 1
                size.pointee.type = (continuous ? V4L2_FRMSIZE_TYPE_CONTINUOUS : V4L2_FRMSIZE_TYPE_STEPWISE).rawValue
                size.pointee.stepwise = v4l2_frmsize_stepwise(
                    min_width: UInt32(range.minimumWidth), max_width: UInt32(range.maximumWidth), step_width: UInt32(range.widthStep),
                    min_height: UInt32(range.minimumHeight), max_height: UInt32(range.maximumHeight),
                    step_height: UInt32(range.heightStep))
            } else {
                size.pointee.type = V4L2_FRMSIZE_TYPE_DISCRETE.rawValue
                size.pointee.discrete = v4l2_frmsize_discrete(width: UInt32(entry.width), height: UInt32(entry.height))
            }
            return 0

        case CV4L2_VIDIOC_ENUM_FRAMEINTERVALS:
            let interval = argument.assumingMemoryBound(to: v4l2_frmivalenum.self)
            let (width, height) = (Int(interval.pointee.width), Int(interval.pointee.height))
            guard let format = node.formats.first(where: { $0.pixelFormat.rawValue == interval.pointee.pixel_format }),
                  let entry = format.frameSizes.first(where: { size in
                      guard let range = size.range else { return size.width == width && size.height == height }
                      return (range.minimumWidth...range.maximumWidth).contains(width)
                          && (range.minimumHeight...range.maximumHeight).contains(height)
                  }),
                  Int(interval.pointee.index) < entry.intervals.count else { return EINVAL }
            let value = entry.intervals[Int(interval.pointee.index)]
            if value.isDiscrete {
                interval.pointee.type = V4L2_FRMIVAL_TYPE_DISCRETE.rawValue
                interval.pointee.discrete = fraction(value.minimum)
            } else {
                interval.pointee.type = (value.step == nil ? V4L2_FRMIVAL_TYPE_CONTINUOUS : V4L2_FRMIVAL_TYPE_STEPWISE).rawValue
                interval.pointee.stepwise = v4l2_frmival_stepwise(min: fraction(value.minimum), max: fraction(value.maximum),
                                                                  step: fraction(value.step ?? V4L2Fraction(1, 1)))
            }
            return 0

        case CV4L2_VIDIOC_S_FMT:
            let format = argument.assumingMemoryBound(to: v4l2_format.self)
            guard format.pointee.type == V4L2_BUF_TYPE_VIDEO_CAPTURE.rawValue else { return EINVAL }
            guard state.buffers.isEmpty else { return EBUSY }
            // Like real drivers: an unknown format becomes the first one, the size the nearest offered.
            let offered = node.formats.first { $0.pixelFormat.rawValue == format.pointee.fmt.pix.pixelformat } ?? node.formats[0]
            var (width, height) = nearestSize(in: offered, Int(format.pointee.fmt.pix.width), Int(format.pointee.fmt.pix.height))
            if let forced = state.script.forcedSize { (width, height) = forced }
            state.pixelFormat = offered.pixelFormat
            state.width = width
            state.height = height
            let padding = state.script.rowPadding
            switch offered.pixelFormat {
            case .yuyv, .uyvy:
                state.bytesPerLine = width * 2 + padding
                state.imageSize = state.bytesPerLine * height
            case .nv12:
                state.bytesPerLine = width + padding
                state.imageSize = state.bytesPerLine * height * 3 / 2
            case .yuv420:
                state.bytesPerLine = width + padding
                state.imageSize = state.bytesPerLine * height + 2 * (state.bytesPerLine / 2) * (height / 2)
            default:
                state.bytesPerLine = 0
                state.imageSize = width * height * 2
            }
            state.log.append("VIDIOC_S_FMT \(offered.pixelFormat) \(width)x\(height)")
            fill(format, from: state)
            return 0

        case CV4L2_VIDIOC_G_FMT:
            let format = argument.assumingMemoryBound(to: v4l2_format.self)
            fill(format, from: state)
            return 0

        case CV4L2_VIDIOC_S_PARM:
            let parameters = argument.assumingMemoryBound(to: v4l2_streamparm.self)
            let asked = V4L2Query.fraction(parameters.pointee.parm.capture.timeperframe)
            let offered = node.formats.first { $0.pixelFormat == state.pixelFormat }?.frameSizes
                .first { $0.range != nil || ($0.width == state.width && $0.height == state.height) }?.intervals ?? []
            // The nearest offered interval, as drivers do.
            let choices = offered.map { $0.closest(toFrameRate: Int(asked.framesPerSecond.rounded())) }
            state.interval = choices.min { abs($0.seconds - asked.seconds) < abs($1.seconds - asked.seconds) } ?? asked
            parameters.pointee.parm.capture.capability = UInt32(V4L2_CAP_TIMEPERFRAME)
            parameters.pointee.parm.capture.timeperframe = fraction(state.interval)
            state.log.append("VIDIOC_S_PARM \(state.interval)")
            return 0

        case CV4L2_VIDIOC_REQBUFS:
            let request = argument.assumingMemoryBound(to: v4l2_requestbuffers.self)
            guard request.pointee.memory == V4L2_MEMORY_MMAP.rawValue else { return EINVAL }
            guard !state.isStreaming else { return EBUSY }
            for buffer in state.buffers { UnsafeMutableRawPointer(bitPattern: buffer.address)?.deallocate() }
            let count = min(Int(request.pointee.count), state.script.maximumBuffers)
            state.buffers = (0..<count).map { _ in
                let memory = UnsafeMutableRawPointer.allocate(byteCount: state.imageSize, alignment: 64)
                return Buffer(address: UInt(bitPattern: memory), length: state.imageSize)
            }
            state.queue = []
            request.pointee.count = UInt32(count)
            state.log.append("VIDIOC_REQBUFS \(count)")
            return 0

        case CV4L2_VIDIOC_QUERYBUF:
            let buffer = argument.assumingMemoryBound(to: v4l2_buffer.self)
            guard Int(buffer.pointee.index) < state.buffers.count else { return EINVAL }
            buffer.pointee.length = UInt32(state.buffers[Int(buffer.pointee.index)].length)
            buffer.pointee.m.offset = buffer.pointee.index * 0x1000
            state.log.append("VIDIOC_QUERYBUF \(buffer.pointee.index)")
            return 0

        case CV4L2_VIDIOC_QBUF:
            let buffer = argument.assumingMemoryBound(to: v4l2_buffer.self)
            let index = Int(buffer.pointee.index)
            guard index < state.buffers.count, !state.buffers[index].isQueued,
                  buffer.pointee.memory == V4L2_MEMORY_MMAP.rawValue else { return EINVAL }
            state.buffers[index].isQueued = true
            state.queue.append(index)
            if state.buffers[index].wasDequeued {
                state.buffers[index].wasDequeued = false
                state.requeued += 1
            } else {
                state.log.append("VIDIOC_QBUF \(index)")
            }
            return 0

        case CV4L2_VIDIOC_DQBUF:
            let buffer = argument.assumingMemoryBound(to: v4l2_buffer.self)
            guard state.isStreaming else { return EINVAL }
            if let error = state.script.dequeueError, state.served >= error.after { return error.errno }
            guard state.frameIsReady else { return EAGAIN }
            let index = state.queue.removeFirst()
            state.buffers[index].isQueued = false
            state.buffers[index].wasDequeued = true
            let number = state.served
            let payload = state.script.frames[min(number, state.script.frames.count - 1)]
            let memory = UnsafeMutableRawBufferPointer(start: UnsafeMutableRawPointer(bitPattern: state.buffers[index].address),
                                                       count: state.buffers[index].length)
            let used = min(payload.count, memory.count)
            memory.copyBytes(from: payload[0..<used])
            let timestamp = state.script.firstTimestamp + state.script.timestampStep * number
            let (seconds, attoseconds) = timestamp.components
            buffer.pointee.index = UInt32(index)
            buffer.pointee.bytesused = UInt32(used)
            buffer.pointee.flags = UInt32(V4L2_BUF_FLAG_TIMESTAMP_MONOTONIC)
                | (state.script.flaggedFrames.contains(number) ? UInt32(V4L2_BUF_FLAG_ERROR) : 0)
            buffer.pointee.timestamp = timeval(tv_sec: Int(seconds), tv_usec: Int(attoseconds / 1_000_000_000_000))
            buffer.pointee.sequence = UInt32(number)
            buffer.pointee.length = UInt32(state.buffers[index].length)
            state.served += 1
            return 0

        case CV4L2_VIDIOC_STREAMON:
            guard !state.buffers.isEmpty else { return EINVAL }
            state.isStreaming = true
            state.log.append("VIDIOC_STREAMON")
            return 0

        case CV4L2_VIDIOC_STREAMOFF:
            state.isStreaming = false
            state.queue = []
            for index in state.buffers.indices { state.buffers[index].isQueued = false }
            state.log.append("VIDIOC_STREAMOFF")
            return 0

        default:
            return ENOTTY
        }
    }

    private static func nearestSize(in format: V4L2FormatInfo, _ width: Int, _ height: Int) -> (Int, Int) {
        let sizes = format.frameSizes.map { size in size.range.map { $0.nearest(width: width, height: height) } ?? (size.width, size.height) }
        return sizes.min { abs($0.0 * $0.1 - width * height) < abs($1.0 * $1.1 - width * height) } ?? (width, height)
    }

    private static func fill(_ format: UnsafeMutablePointer<v4l2_format>, from state: State) {
        format.pointee.fmt.pix.pixelformat = state.pixelFormat.rawValue
        format.pointee.fmt.pix.width = UInt32(state.width)
        format.pointee.fmt.pix.height = UInt32(state.height)
        format.pointee.fmt.pix.bytesperline = UInt32(state.bytesPerLine)
        format.pointee.fmt.pix.sizeimage = UInt32(state.imageSize)
        format.pointee.fmt.pix.field = V4L2_FIELD_NONE.rawValue
    }

    private static func fraction(_ value: V4L2Fraction) -> v4l2_fract {
        v4l2_fract(numerator: UInt32(value.numerator), denominator: UInt32(value.denominator))
    }

    private static func write<Field>(_ text: String, to field: inout Field) {
        withUnsafeMutableBytes(of: &field) { bytes in
            bytes.initializeMemory(as: UInt8.self, repeating: 0)
            let utf8 = Array(text.utf8.prefix(bytes.count - 1))
            bytes.copyBytes(from: utf8)
        }
    }
}
