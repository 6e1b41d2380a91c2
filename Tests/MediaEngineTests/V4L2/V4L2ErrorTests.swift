import CV4L2
import Glibc
import Testing
@testable import MediaEngine

@Suite struct V4L2Errors {
    struct OpenFailure: CustomTestStringConvertible, Sendable {
        let errno: Int32
        let code: DeviceError.Code
        let words: String
        var testDescription: String { "errno \(errno) -> \(code)" }
    }

    @Test(arguments: [
        OpenFailure(errno: EBUSY, code: .busy, words: "busy"),
        OpenFailure(errno: ENOENT, code: .notFound, words: "no such device"),
        OpenFailure(errno: EACCES, code: .permissionDenied, words: "permission denied"),
        OpenFailure(errno: EPERM, code: .permissionDenied, words: "permission denied"),
        OpenFailure(errno: ENODEV, code: .disconnected, words: "unplugged"),
        OpenFailure(errno: EIO, code: .ioFailed, words: "open failed"),
    ])
    func openFailuresBecomeDeviceErrorsNamingThePath(_ failure: OpenFailure) {
        var node = FakeV4L2Device.Node(formats: V4L2Profiles.webcam)
        node.path = "/dev/video3"
        node.openError = failure.errno
        let error = #expect(throws: DeviceError.self) { try V4L2Capture(path: "/dev/video3", io: FakeV4L2Device(nodes: [node])) }
        #expect(error?.code == failure.code)
        #expect(error?.device == "/dev/video3")
        #expect(error?.message.hasPrefix("/dev/video3: ") == true)
        #expect(error?.message.contains(failure.words) == true, "\(error?.message ?? "")")
    }

    @Test func unplugMidStreamEndsCaptureWithDisconnected() throws {
        var script = FakeV4L2Device.Script()
        script.frames = [V4L2TestImages.packed(V4L2TestImages.pattern())]
        script.dequeueError = (after: 3, errno: ENODEV)
        let device = FakeV4L2Device(formats: V4L2Profiles.yuyvOnly, script: script)
        let capture = try V4L2Capture(io: device)
        defer { capture.stop() }
        var frame = VideoFrame(width: 640, height: 480)
        var failure: DeviceError?
        for _ in 0..<10 where failure == nil {
            do throws(DeviceError) { _ = try capture.read(into: &frame, timeout: .seconds(10)) } catch { failure = error }
        }
        #expect(failure?.code == .disconnected)
        #expect(failure?.message.hasPrefix("/dev/video0: device was unplugged") == true, "\(failure?.message ?? "")")
        #expect(capture.statistics.framesCaptured == 3)
        // It stays failed, and the capture thread has let go of the device.
        #expect(throws: DeviceError.self) { try capture.read(into: &frame) }
        #expect(device.waitUntilClosed())
    }

    @Test func aMetadataNodeIsNotACamera() {
        var node = FakeV4L2Device.Node(formats: V4L2Profiles.webcam)
        node.deviceCapabilities = UInt32(V4L2_CAP_META_CAPTURE | V4L2_CAP_STREAMING)
        let error = #expect(throws: DeviceError.self) { try V4L2Capture(io: FakeV4L2Device(nodes: [node])) }
        #expect(error?.code == .unsupportedFormat)
        #expect(error?.message.contains("not a streaming video capture node") == true, "\(error?.message ?? "")")
    }

    @Test func aMissingNodeOnThisMachineIsNotFound() throws {
        let path = "/dev/video-mediaengine-missing"
        let error = #expect(throws: DeviceError.self) { try V4L2Capture(path: path) }
        #expect(error?.code == .notFound)
        #expect(error?.message.hasPrefix(path + ": no such device") == true, "\(error?.message ?? "")")
    }
}
