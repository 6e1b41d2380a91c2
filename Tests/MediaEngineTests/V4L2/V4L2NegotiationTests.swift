import CV4L2
import Glibc
import Testing
@testable import MediaEngine

/// Device profiles: what real cameras of each kind offer.
enum V4L2Profiles {
    /// A USB 2 webcam: YUYV is bandwidth-bound (720p only at 10 fps), MJPEG runs 30 fps everywhere.
    static let webcam: [V4L2FormatInfo] = [
        .discrete(.yuyv, "YUYV 4:2:2", [(640, 480, [30, 15]), (320, 240, [30]), (1280, 720, [10, 5])]),
        .discrete(.mjpeg, "Motion-JPEG", [(640, 480, [30]), (320, 240, [30]), (1280, 720, [30, 15])]),
    ]
    /// A board camera with NV12 and MJPEG at the same sizes and rates.
    static let nv12Camera: [V4L2FormatInfo] = [
        .discrete(.mjpeg, "Motion-JPEG", [(640, 480, [30]), (1920, 1080, [30])]),
        .discrete(.nv12, "Y/UV 4:2:0", [(640, 480, [60, 30]), (1920, 1080, [15])]),
    ]
    /// Only YUYV, whose 720p is slow.
    static let yuyvOnly: [V4L2FormatInfo] = [
        .discrete(.yuyv, "YUYV 4:2:2", [(640, 480, [30]), (1280, 720, [10])]),
    ]
    /// A scaler with continuous sizes and a stepwise interval range (1/60 s to 1 s in 1/60 s steps).
    static let scaler: [V4L2FormatInfo] = [
        V4L2FormatInfo(pixelFormat: .yuv420, description: "Planar YUV 4:2:0", isCompressed: false, frameSizes: [
            V4L2FrameSize(width: 1920, height: 1080,
                          range: V4L2SizeRange(minimumWidth: 32, maximumWidth: 1920, widthStep: 16,
                                               minimumHeight: 32, maximumHeight: 1080, heightStep: 8),
                          intervals: [V4L2FrameInterval(minimum: V4L2Fraction(1, 60), maximum: V4L2Fraction(1, 1),
                                                        step: V4L2Fraction(1, 60))]),
        ]),
    ]
    /// Native MJPEG plus the YU12 libv4l2 would decode from it in software.
    static let emulated: [V4L2FormatInfo] = [
        .discrete(.mjpeg, "Motion-JPEG", [(640, 480, [30])]),
        .discrete(.yuv420, "Planar YUV 4:2:0 (Emulated)", emulated: true, [(640, 480, [30])]),
    ]
    /// An encoding camera: H.264 only.
    static let h264Only: [V4L2FormatInfo] = [
        .discrete(V4L2PixelFormat("H264")!, "H.264", [(1280, 720, [30])]),
    ]
}

@Suite struct V4L2Negotiation {
    struct Case: CustomTestStringConvertible, Sendable {
        let profile: String
        let formats: [V4L2FormatInfo]
        let request: (width: Int, height: Int, rate: Int)
        let expected: (format: V4L2PixelFormat, width: Int, height: Int, rate: Double)
        var testDescription: String {
            "\(profile) asked \(request.width)x\(request.height)@\(request.rate)"
        }
    }

    static let cases: [Case] = [
        Case(profile: "webcam", formats: V4L2Profiles.webcam, request: (1280, 720, 30), expected: (.mjpeg, 1280, 720, 30)),
        Case(profile: "webcam", formats: V4L2Profiles.webcam, request: (640, 480, 30), expected: (.yuyv, 640, 480, 30)),
        Case(profile: "webcam", formats: V4L2Profiles.webcam, request: (640, 480, 20), expected: (.yuyv, 640, 480, 30)),
        Case(profile: "webcam", formats: V4L2Profiles.webcam, request: (640, 480, 12), expected: (.yuyv, 640, 480, 15)),
        // Nothing is 800x600: the nearest size not smaller is 720p, where only MJPEG does 30.
        Case(profile: "webcam", formats: V4L2Profiles.webcam, request: (800, 600, 30), expected: (.mjpeg, 1280, 720, 30)),
        // Nothing covers 1080p: the nearest area is 720p.
        Case(profile: "webcam", formats: V4L2Profiles.webcam, request: (1920, 1080, 30), expected: (.mjpeg, 1280, 720, 30)),
        Case(profile: "webcam", formats: V4L2Profiles.webcam, request: (1280, 720, 10), expected: (.yuyv, 1280, 720, 10)),
        Case(profile: "nv12", formats: V4L2Profiles.nv12Camera, request: (640, 480, 30), expected: (.nv12, 640, 480, 30)),
        Case(profile: "nv12", formats: V4L2Profiles.nv12Camera, request: (1920, 1080, 30), expected: (.mjpeg, 1920, 1080, 30)),
        // No faster way to 720p: YUYV at the best rate it has.
        Case(profile: "yuyv-only", formats: V4L2Profiles.yuyvOnly, request: (1280, 720, 30), expected: (.yuyv, 1280, 720, 10)),
        Case(profile: "scaler", formats: V4L2Profiles.scaler, request: (1000, 700, 25), expected: (.yuv420, 1008, 704, 60.0 / 2)),
        Case(profile: "scaler", formats: V4L2Profiles.scaler, request: (4000, 3000, 120), expected: (.yuv420, 1920, 1080, 60)),
        Case(profile: "emulated", formats: V4L2Profiles.emulated, request: (640, 480, 30), expected: (.mjpeg, 640, 480, 30)),
    ]

    @Test(arguments: cases)
    func selectionPicksFormatSizeAndRate(_ test: Case) throws {
        let choice = try V4L2FormatChoice.select(from: test.formats, width: test.request.width, height: test.request.height,
                                                 frameRate: test.request.rate, device: "/dev/video0")
        #expect(choice.pixelFormat == test.expected.format)
        #expect(choice.width == test.expected.width && choice.height == test.expected.height, "\(choice.width)x\(choice.height)")
        let rate = try #require(choice.interval).framesPerSecond
        #expect(abs(rate - test.expected.rate) < 0.01, "\(rate) fps")
    }

    @Test(arguments: cases)
    func openingSetsTheChosenFormatOnTheDevice(_ test: Case) throws {
        let device = FakeV4L2Device(formats: test.formats)
        let capture = try V4L2Capture(width: test.request.width, height: test.request.height,
                                      frameRate: test.request.rate, io: device)
        defer { capture.stop() }
        #expect(capture.format.pixelFormat == test.expected.format)
        #expect(capture.width == test.expected.width && capture.height == test.expected.height)
        #expect(abs(capture.format.frameInterval.framesPerSecond - test.expected.rate) < 0.01)
        #expect(device.log.contains("VIDIOC_S_FMT \(test.expected.format) \(test.expected.width)x\(test.expected.height)"),
                "\(device.log)")
    }

    @Test func aDeviceWithoutUsableFormatsIsUnsupportedAndNamesWhatItOffers() {
        let error = #expect(throws: DeviceError.self) {
            try V4L2Capture(io: FakeV4L2Device(formats: V4L2Profiles.h264Only))
        }
        #expect(error?.code == .unsupportedFormat)
        #expect(error?.message.hasPrefix("/dev/video0: ") == true)
        #expect(error?.message.contains("H264 (H.264)") == true, "\(error?.message ?? "")")
    }

    @Test func theSizeTheDriverSetsWins() throws {
        // Asked for 640x480, the driver answers 352x288: frames come at the driver's size.
        var script = FakeV4L2Device.Script()
        script.forcedSize = (352, 288)
        script.frames = [V4L2TestImages.packed(V4L2TestImages.pattern(width: 352, height: 288))]
        let device = FakeV4L2Device(formats: V4L2Profiles.yuyvOnly, script: script)
        let capture = try V4L2Capture(io: device)
        defer { capture.stop() }
        #expect((capture.width, capture.height) == (352, 288))
        var frame = VideoFrame(width: 640, height: 480)
        #expect(try capture.read(into: &frame, timeout: .seconds(10)) == .newFrame)
        #expect((frame.width, frame.height) == (352, 288))
        #expect(VideoQuality.psnr(V4L2TestImages.pattern(width: 352, height: 288), frame) >= 60)
    }

    @Test func unusableRequestsAreTypedErrors() {
        let error = #expect(throws: DeviceError.self) {
            try V4L2Capture(width: 0, height: 480, io: FakeV4L2Device(formats: V4L2Profiles.webcam))
        }
        #expect(error?.code == .unsupportedFormat)
    }
}
