import CTurboJPEG
import Foundation
import Testing
@testable import MediaEngine

/// The camera as the rest of the engine sees it: a `v4l2:` source spec, and a sender
/// that keeps audio going when the camera dies.
@Suite(.serialized) struct V4L2AsSource {
    @Test func specOpensTheCameraAtTheRequestedSize() throws {
        let picture = V4L2TestImages.pattern(width: 1_280, height: 720)
        var script = FakeV4L2Device.Script()
        script.frames = [V4L2TestImages.jpeg(picture, subsampling: TJSAMP_422)]
        let device = FakeV4L2Device(formats: V4L2Profiles.webcam, script: script)
        let source = try MediaSources.video("v4l2:/dev/video0:1280x720@30", io: device)
        let capture = try #require(source as? V4L2Capture)
        defer { capture.stop() }
        #expect(capture.format.pixelFormat == .mjpeg)
        #expect(source.width == 1_280 && source.height == 720 && source.frameRate == 30)
        var frame = VideoFrame(width: 2, height: 2)
        #expect(try source.read(into: &frame))
        #expect(VideoQuality.psnr(picture, frame) > 35)
    }

    @Test(arguments: [
        ("v4l2:", "v4l2 needs a device path"),
        ("v4l2:video0", "v4l2 needs a device path"),
        ("v4l2:/dev/video0:1280x721", "even sizes"),
        ("v4l2:/dev/video0:640x480@0", "1 to 120 fps"),
    ])
    func badSpecsAreNamed(spec: String, message: String) {
        let error = #expect(throws: SourceError.self) {
            try MediaSources.video(spec, io: FakeV4L2Device(formats: V4L2Profiles.webcam))
        }
        #expect(error?.message.contains(message) == true, "\(String(describing: error))")
    }

    @Test func aMissingCameraIsATypedErrorNamingIt() {
        let error = #expect(throws: DeviceError.self) { try MediaSources.video("v4l2:/dev/video57") }
        #expect(error?.code == .notFound)
        #expect(error?.message.hasPrefix("/dev/video57") == true)
    }

    @Test func audioKeepsGoingWhenTheCameraIsUnplugged() throws {
        let picture = V4L2TestImages.pattern(width: 640, height: 480)
        var script = FakeV4L2Device.Script()
        script.frames = [V4L2TestImages.packed(picture)]
        script.dequeueError = (after: 8, errno: ENODEV)
        let device = FakeV4L2Device(formats: V4L2Profiles.yuyvOnly, script: script)
        let camera = try MediaSources.video("v4l2:/dev/video0:640x480@30", io: device)
        let peer = try UDPSocket(bindTo: SocketAddress(host: "127.0.0.1", port: 0))
        var configuration = MediaSender.Configuration(audio: try MediaSources.audio("sine:440"), video: camera,
                                                      audioDestination: peer.localAddress, videoDestination: peer.localAddress)
        configuration.rtcpMux = true
        let statistics = try MediaSender(configuration: configuration).run(duration: .seconds(1))
        // The fake serves its frames at once, so the sender sees the newest one before the failure.
        #expect(statistics.videoFrames >= 1 && statistics.videoFrames <= 30)
        #expect(statistics.videoFailure?.contains("/dev/video0") == true, "\(statistics.videoFailure ?? "no failure")")
        #expect(statistics.videoFailure?.contains("unplugged") == true)
        #expect(statistics.audioFrames >= 48)
    }
}
