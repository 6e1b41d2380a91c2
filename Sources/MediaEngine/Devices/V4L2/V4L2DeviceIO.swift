import CV4L2
#if canImport(Glibc)
import Glibc
#endif

/// An errno from one V4L2 system call.
public struct V4L2Errno: Error, Hashable, Sendable, CustomStringConvertible {
    /// The errno value (`ENODEV`, `EBUSY`, ...).
    public let code: Int32

    /// Wraps an errno value.
    public init(_ code: Int32) { self.code = code }

    /// The C library's text for the errno.
    public var description: String { String(cString: strerror(code)) }
}

/// The system calls V4L2 capture makes. Production code uses `SystemV4L2IO`; tests
/// script a device behind the same calls, since these machines have no camera.
///
/// Implementations are called from the capture thread and the owning thread at once
/// (one may wait while the other stops the stream), so they must be thread-safe.
public protocol V4L2DeviceIO: Sendable {
    /// The video nodes present (`/dev/video*`), in numeric order.
    func devicePaths() -> [String]

    /// Opens a device node.
    /// - Returns: the file descriptor.
    /// - Throws: the errno of a failed open.
    func open(_ path: String, flags: Int32) throws(V4L2Errno) -> Int32

    /// Closes a descriptor that `open` returned.
    func close(_ descriptor: Int32)

    /// Issues one ioctl, retrying `EINTR`.
    /// - Parameters:
    ///   - request: a `CV4L2_VIDIOC_*` request code.
    ///   - argument: the request's structure, read and written in place.
    /// - Throws: the errno of a failed request.
    func ioctl(_ descriptor: Int32, _ request: UInt, _ argument: UnsafeMutableRawPointer) throws(V4L2Errno)

    /// Maps one driver buffer (readable and writable, shared).
    /// - Parameters:
    ///   - length: `v4l2_buffer.length` from `VIDIOC_QUERYBUF`.
    ///   - offset: `v4l2_buffer.m.offset` from `VIDIOC_QUERYBUF`.
    /// - Returns: the start of the mapping.
    func map(_ descriptor: Int32, length: Int, offset: Int) throws(V4L2Errno) -> UnsafeMutableRawPointer

    /// Unmaps a buffer that `map` returned.
    func unmap(_ address: UnsafeMutableRawPointer, length: Int)

    /// Waits until a filled buffer can be dequeued, or the device reports an error.
    /// - Returns: false when `timeout` passed first.
    func waitReadable(_ descriptor: Int32, timeout: Duration) throws(V4L2Errno) -> Bool
}

extension V4L2DeviceIO {
    /// Issues one ioctl on a typed structure.
    func ioctl<Argument>(_ descriptor: Int32, _ request: UInt, _ argument: inout Argument) throws(V4L2Errno) {
        try withUnsafeMutableBytes(of: &argument) { (bytes) throws(V4L2Errno) in
            try ioctl(descriptor, request, bytes.baseAddress!)
        }
    }
}

/// The real device calls, through libv4l2 (which also wraps mmap so its format
/// emulation keeps working) and `poll`.
public struct SystemV4L2IO: V4L2DeviceIO {
    /// Creates the system layer; it has no state.
    public init() {}

    /// The `/dev/video*` nodes, in numeric order (video2 before video10).
    public func devicePaths() -> [String] {
        guard let directory = opendir("/dev") else { return [] }
        defer { closedir(directory) }
        var numbered: [(Int, String)] = []
        while let entry = readdir(directory) {
            let name = withUnsafeBytes(of: entry.pointee.d_name) { String(decoding: $0.prefix(while: { $0 != 0 }), as: UTF8.self) }
            guard name.hasPrefix("video"), let number = Int(name.dropFirst(5)) else { continue }
            numbered.append((number, "/dev/" + name))
        }
        return numbered.sorted { $0.0 < $1.0 }.map(\.1)
    }

    /// Opens through `v4l2_open`, retrying EINTR.
    public func open(_ path: String, flags: Int32) throws(V4L2Errno) -> Int32 {
        while true {
            let descriptor = CV4L2_open(path, flags)
            if descriptor >= 0 { return descriptor }
            if errno != EINTR { throw V4L2Errno(errno) }
        }
    }

    /// Closes through `v4l2_close`.
    public func close(_ descriptor: Int32) {
        _ = v4l2_close(descriptor)
    }

    /// Issues the request through `v4l2_ioctl`, retrying EINTR.
    public func ioctl(_ descriptor: Int32, _ request: UInt, _ argument: UnsafeMutableRawPointer) throws(V4L2Errno) {
        while CV4L2_ioctl(descriptor, request, argument) == -1 {
            if errno != EINTR { throw V4L2Errno(errno) }
        }
    }

    /// Maps through `v4l2_mmap` (PROT_READ | PROT_WRITE, MAP_SHARED).
    public func map(_ descriptor: Int32, length: Int, offset: Int) throws(V4L2Errno) -> UnsafeMutableRawPointer {
        let address = v4l2_mmap(nil, length, PROT_READ | PROT_WRITE, MAP_SHARED, descriptor, Int64(offset))
        // MAP_FAILED is a cast macro that does not import.
        guard let address, address != UnsafeMutableRawPointer(bitPattern: -1) else { throw V4L2Errno(errno) }
        return address
    }

    /// Unmaps through `v4l2_munmap`.
    public func unmap(_ address: UnsafeMutableRawPointer, length: Int) {
        _ = v4l2_munmap(address, length)
    }

    /// Polls for POLLIN (millisecond resolution), retrying EINTR.
    public func waitReadable(_ descriptor: Int32, timeout: Duration) throws(V4L2Errno) -> Bool {
        var entry = pollfd(fd: descriptor, events: Int16(POLLIN), revents: 0)
        let (seconds, attoseconds) = timeout.components
        let milliseconds = Int32(clamping: max(0, seconds * 1_000 + attoseconds / 1_000_000_000_000_000))
        while true {
            let ready = poll(&entry, 1, milliseconds)
            if ready > 0 {
                if entry.revents & Int16(POLLNVAL) != 0 { throw V4L2Errno(EBADF) }
                // POLLERR too: the dequeue that follows reports the device's errno.
                return true
            }
            if ready == 0 { return false }
            if errno != EINTR { throw V4L2Errno(errno) }
        }
    }
}

extension DeviceError {
    /// The typed error for a failed V4L2 call on `device`.
    /// - Parameter action: what was being done, for the message (`open`, `VIDIOC_DQBUF`).
    init(v4l2 error: V4L2Errno, device: String, action: String) {
        let detail = "(\(action): \(error))"
        switch error.code {
        case ENOENT, ENXIO:
            self.init(.notFound, device: device, "no such device \(detail)")
        case EBUSY:
            self.init(.busy, device: device, "device is busy; another program is using it \(detail)")
        case EACCES, EPERM:
            self.init(.permissionDenied, device: device,
                      "permission denied; the user needs access to the device, e.g. through the 'video' group \(detail)")
        case ENODEV:
            self.init(.disconnected, device: device, "device was unplugged \(detail)")
        case ENOSPC where action == "VIDIOC_STREAMON":
            // uvcvideo's answer when the USB bus cannot carry the chosen format.
            self.init(.ioFailed, device: device, "not enough USB bandwidth for this format; try a smaller size or MJPEG \(detail)")
        default:
            self.init(.ioFailed, device: device, "\(action) failed: \(error) (errno \(error.code))")
        }
    }
}
