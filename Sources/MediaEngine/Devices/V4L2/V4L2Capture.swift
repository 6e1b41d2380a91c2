import CV4L2
import CYUV
#if canImport(Glibc)
import Glibc
#endif

/// Webcam capture through V4L2 as a `VideoSource`.
///
/// Opening negotiates a format (`V4L2FormatChoice.select`), maps the driver's buffers
/// and starts streaming. A dedicated thread then waits for each filled buffer, converts
/// it to I420 into a preallocated frame, gives the buffer back to the driver and
/// publishes the frame as the newest one, replacing any the reader had not taken yet.
/// Nothing is allocated per frame, apart from the per-image memory pools libjpeg-turbo
/// mallocs and frees inside each MJPEG decode.
///
/// Threading: `read`, `stop` and the properties are for the owning thread (the type is
/// not `Sendable`); the capture thread touches only its own state and the shared slot.
public final class V4L2Capture: VideoSource {
    /// Counts since the capture started.
    public struct Statistics: Hashable, Sendable {
        /// Frames converted and published.
        public var framesCaptured = 0
        /// Published frames replaced by a newer one before a read took them.
        public var framesDropped = 0
        /// Buffers the driver flagged as bad, and compressed frames that did not decode.
        public var corruptFrames = 0
        /// Reads that handed back the previous frame because no new one came in time.
        public var framesRepeated = 0
    }

    /// What a timed read handed back.
    public enum Delivery: Hashable, Sendable {
        /// A frame no read had returned before.
        case newFrame
        /// The last frame again: none came in time.
        case repeatedFrame
        /// Capture was stopped; `frame` is unchanged.
        case stopped
    }

    /// The device path.
    public let name: String
    /// The device's name as the driver gives it (`HD Webcam C920`).
    public let card: String
    /// What the device streams, as negotiated.
    public let format: V4L2StreamFormat
    /// Frame width in pixels.
    public var width: Int { format.width }
    /// Frame height in pixels.
    public var height: Int { format.height }
    /// The negotiated rate, in whole frames per second.
    public var frameRate: Int { format.frameRate }

    private let shared: Monitor<Shared>
    private let firstFrameTimeout: Duration
    private var thread: JoinableThread?

    /// Opens a camera, negotiates the format closest to the request and starts capturing.
    /// - Parameters:
    ///   - path: the device node.
    ///   - width: wanted width in pixels.
    ///   - height: wanted height in pixels.
    ///   - frameRate: wanted frames per second.
    ///   - bufferCount: driver buffers to ask for (the driver may grant another count).
    ///   - firstFrameTimeout: how long `read` waits for the first frame; cameras take a
    ///     moment to start.
    ///   - io: the system calls; `SystemV4L2IO` for real devices.
    /// - Throws: `DeviceError` naming `path`: `notFound` (ENOENT, not a V4L2 node),
    ///   `busy` (EBUSY), `permissionDenied` (EACCES, EPERM), `disconnected` (ENODEV),
    ///   `unsupportedFormat` (no YUYV, UYVY, NV12, YU12, MJPEG or JPEG; not a capture
    ///   node), `ioFailed` (anything else).
    public init(path: String = "/dev/video0", width: Int = 640, height: Int = 480, frameRate: Int = 30,
                bufferCount: Int = 4, firstFrameTimeout: Duration = .seconds(3),
                io: any V4L2DeviceIO = SystemV4L2IO()) throws(DeviceError) {
        guard width > 0, height > 0, width <= 16_384, height <= 16_384, (1...1_000).contains(frameRate),
              (1...32).contains(bufferCount) else {
            throw DeviceError(.unsupportedFormat, device: path,
                              "cannot ask for \(width)x\(height)@\(frameRate) with \(bufferCount) buffers")
        }
        let handle = try V4L2DeviceHandle(path: path, io: io)
        let capabilities = try handle.captureCapabilities()
        let choice = try V4L2FormatChoice.select(from: try handle.formats(), width: width, height: height,
                                                 frameRate: frameRate, device: path)
        format = try handle.apply(choice, requestedRate: frameRate)
        let converter = try V4L2FrameConverter(format: format, device: path)
        try handle.startStreaming(bufferCount: bufferCount)

        name = path
        card = capabilities.card
        self.firstFrameTimeout = firstFrameTimeout
        shared = Monitor(Shared(frame: VideoFrame(width: format.width, height: format.height)))
        let loop = CaptureLoop(handle: handle, converter: converter, shared: shared,
                               work: VideoFrame(width: format.width, height: format.height))
        do throws(JoinableThread.StartError) {
            thread = try JoinableThread { loop.run() }
        } catch {
            throw DeviceError(.ioFailed, device: path, "cannot start the capture thread (errno \(error.status))")
        }
    }

    deinit { stop() }

    /// Copies the newest frame not yet read into `frame`, waiting up to two frame periods
    /// for one; when none comes, copies the last frame again so a sender keeps its
    /// cadence. The first call waits up to `firstFrameTimeout`. `frame` is reshaped to
    /// the capture size if needed; its timestamp is the capture time on the monotonic
    /// clock (the driver's buffer timestamp when it gives one).
    /// - Returns: false once `stop()` has been called.
    /// - Throws: the `DeviceError` that ended capture (`disconnected` when unplugged),
    ///   once the last frame captured before it has been read; or `ioFailed` when no
    ///   frame at all came within `firstFrameTimeout`.
    public func read(into frame: inout VideoFrame) throws(DeviceError) -> Bool {
        let started = shared.withLock { $0.hasFrame }
        let timeout = started ? format.framePeriod * 2 : firstFrameTimeout
        return try read(into: &frame, timeout: timeout) != .stopped
    }

    /// `read(into:)` with an explicit wait.
    /// - Returns: whether the frame is new, repeated, or capture was stopped.
    /// - Throws: as `read(into:)`; `ioFailed` when no frame has come yet.
    public func read(into frame: inout VideoFrame, timeout: Duration) throws(DeviceError) -> Delivery {
        try shared.withLock(waitingUpTo: timeout, until: { $0.isFresh || $0.failure != nil || $0.isStopping }) {
            (state) throws(DeviceError) -> Delivery in
            // A frame captured before the device failed is still handed out; the failure
            // comes with the next read.
            if state.failure != nil && state.isFresh && !state.isStopping {
                Self.copy(state.frame, into: &frame)
                state.isFresh = false
                return .newFrame
            }
            if let failure = state.failure { throw failure }
            if state.isStopping { return .stopped }
            guard state.hasFrame else {
                throw DeviceError(.ioFailed, device: name, "no frame within \(timeout) of starting the stream")
            }
            Self.copy(state.frame, into: &frame)
            defer { state.isFresh = false }
            if state.isFresh { return .newFrame }
            state.statistics.framesRepeated += 1
            return .repeatedFrame
        }
    }

    /// Counts so far.
    public var statistics: Statistics { shared.withLock { $0.statistics } }

    /// Stops streaming, joins the capture thread and releases the device (STREAMOFF,
    /// unmap, REQBUFS 0, close). Later reads return false. Safe to call more than once.
    public func stop() {
        shared.withLockWaking { $0.isStopping = true }
        thread?.join()
        thread = nil
    }

    private static func copy(_ source: VideoFrame, into frame: inout VideoFrame) {
        if frame.width != source.width || frame.height != source.height {
            frame.reshape(width: source.width, height: source.height)
        }
        frame.timestamp = source.timestamp
        let (strideY, strideUV) = (Int32(frame.strideY), Int32(frame.strideUV))
        frame.withMutablePlanes { y, u, v in
            source.withPlanes { sourceY, sourceU, sourceV in
                _ = I420Copy(sourceY.baseAddress, Int32(source.strideY), sourceU.baseAddress, Int32(source.strideUV),
                             sourceV.baseAddress, Int32(source.strideUV), y.baseAddress, strideY,
                             u.baseAddress, strideUV, v.baseAddress, strideUV, Int32(source.width), Int32(source.height))
            }
        }
    }
}

/// What the capture thread and the reader share, under `Monitor`'s lock.
private struct Shared: Sendable {
    /// The newest published frame (black until the first one).
    var frame: VideoFrame
    /// `frame` has not been read yet.
    var isFresh = false
    /// At least one frame was published.
    var hasFrame = false
    var failure: DeviceError?
    var isStopping = false
    var statistics = V4L2Capture.Statistics()
}

/// The capture thread's side: device, converter and the frame being filled.
private final class CaptureLoop: @unchecked Sendable {
    // @unchecked: created on the opening thread, then used only by the capture thread
    // (the opener keeps no reference); `shared` is the one thing both sides touch, and
    // it is a lock-protected monitor.
    private let handle: V4L2DeviceHandle
    private let converter: V4L2FrameConverter
    private let shared: Monitor<Shared>
    private var work: VideoFrame
    // How long one wait may block: bounds how long `stop()` takes.
    private static let waitSlice = Duration.milliseconds(100)

    init(handle: V4L2DeviceHandle, converter: V4L2FrameConverter, shared: Monitor<Shared>, work: VideoFrame) {
        self.handle = handle
        self.converter = converter
        self.shared = shared
        self.work = work
    }

    func run() {
        var buffer = v4l2_buffer()
        while !shared.withLock({ $0.isStopping }) {
            do throws(DeviceError) {
                guard try handle.waitReadable(timeout: Self.waitSlice), try handle.dequeue(into: &buffer) else { continue }
                publish(buffer)
                try handle.requeue(&buffer)
            } catch {
                shared.withLockWaking { $0.failure = $0.failure ?? error }
                break
            }
        }
        handle.close()
    }

    private func publish(_ buffer: v4l2_buffer) {
        let flagged = buffer.flags & UInt32(V4L2_BUF_FLAG_ERROR) != 0
        guard !flagged, buffer.bytesused > 0, converter.convert(handle.bytes(of: buffer), into: &work) else {
            shared.withLock { $0.statistics.corruptFrames += 1 }
            return
        }
        work.timestamp = Self.timestamp(of: buffer)
        shared.withLockWaking { state in
            if state.isFresh { state.statistics.framesDropped += 1 }
            swap(&state.frame, &work)
            state.isFresh = true
            state.hasFrame = true
            state.statistics.framesCaptured += 1
        }
    }

    /// The driver's timestamp when it is on the monotonic clock, else now.
    private static func timestamp(of buffer: v4l2_buffer) -> Duration {
        let clock = buffer.flags & UInt32(V4L2_BUF_FLAG_TIMESTAMP_MASK)
        if clock == UInt32(V4L2_BUF_FLAG_TIMESTAMP_MONOTONIC) && (buffer.timestamp.tv_sec != 0 || buffer.timestamp.tv_usec != 0) {
            return .seconds(Int64(buffer.timestamp.tv_sec)) + .microseconds(Int64(buffer.timestamp.tv_usec))
        }
        var now = timespec()
        clock_gettime(CLOCK_MONOTONIC, &now)
        return .seconds(Int64(now.tv_sec)) + .nanoseconds(Int64(now.tv_nsec))
    }
}
