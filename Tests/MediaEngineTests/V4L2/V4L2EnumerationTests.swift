import CV4L2
import Foundation
import Testing
@testable import MediaEngine

@Suite struct V4L2Enumeration {
    static func nodes() -> [FakeV4L2Device.Node] {
        var webcam = FakeV4L2Device.Node(formats: V4L2Profiles.webcam)
        webcam.card = "HD Webcam C920"
        webcam.driver = "uvcvideo"
        webcam.busInfo = "usb-0000:00:14.0-1"
        // A UVC camera's second node carries metadata only.
        var metadata = webcam
        metadata.path = "/dev/video1"
        metadata.deviceCapabilities = UInt32(V4L2_CAP_META_CAPTURE | V4L2_CAP_STREAMING)
        var scaler = FakeV4L2Device.Node(formats: V4L2Profiles.scaler)
        scaler.path = "/dev/video2"
        scaler.card = "Scaler"
        // An old driver without device_caps: the whole-device caps apply.
        scaler.capabilities = UInt32(V4L2_CAP_VIDEO_CAPTURE | V4L2_CAP_STREAMING)
        scaler.deviceCapabilities = 0
        var locked = FakeV4L2Device.Node(formats: V4L2Profiles.webcam)
        locked.path = "/dev/video3"
        locked.openError = EACCES
        return [webcam, metadata, scaler, locked]
    }

    @Test func capturingNodesAreListedWithFormatsSizesAndRates() throws {
        let devices = V4L2DeviceInfo.list(using: FakeV4L2Device(nodes: Self.nodes()))
        #expect(devices.map(\.path) == ["/dev/video0", "/dev/video2"])
        let webcam = try #require(devices.first)
        #expect((webcam.driver, webcam.card, webcam.busInfo) == ("uvcvideo", "HD Webcam C920", "usb-0000:00:14.0-1"))
        #expect(webcam.capabilities == UInt32(V4L2_CAP_VIDEO_CAPTURE | V4L2_CAP_STREAMING))
        #expect(webcam.formats.map(\.pixelFormat) == [.yuyv, .mjpeg])
        #expect(webcam.formats.map(\.description) == ["YUYV 4:2:2", "Motion-JPEG"])
        #expect(webcam.formats.map(\.isCompressed) == [false, true])
        // The listing is exactly what the driver described, sizes and rates included.
        #expect(webcam.formats == V4L2Profiles.webcam)
        let yuyv720 = try #require(webcam.formats[0].frameSizes.first { $0.width == 1280 })
        #expect(yuyv720.intervals.map(\.minimum.framesPerSecond) == [10, 5])

        let scaler = devices[1]
        let range = try #require(scaler.formats.first?.frameSizes.first?.range)
        #expect((range.minimumWidth, range.maximumWidth, range.widthStep) == (32, 1920, 16))
        #expect((range.minimumHeight, range.maximumHeight, range.heightStep) == (32, 1080, 8))
        let interval = try #require(scaler.formats.first?.frameSizes.first?.intervals.first)
        #expect((interval.minimum, interval.maximum, interval.step) == (V4L2Fraction(1, 60), V4L2Fraction(1, 1), V4L2Fraction(1, 60)))
        #expect(scaler.formats == V4L2Profiles.scaler)
    }

    @Test func theListingIsJSONWithFourCharacterCodes() throws {
        let devices = V4L2DeviceInfo.list(using: FakeV4L2Device(nodes: Self.nodes()))
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys]
        let json = try encoder.encode(devices)
        let text = String(decoding: json, as: UTF8.self)
        #expect(text.contains(#""pixelFormat":"YUYV""#))
        #expect(text.contains(#""pixelFormat":"MJPG""#))
        #expect(text.contains(#""path":"\/dev\/video0""#) || text.contains(#""path":"/dev/video0""#))
        #expect(try JSONDecoder().decode([V4L2DeviceInfo].self, from: json) == devices)
        #expect(throws: DecodingError.self) { try JSONDecoder().decode([V4L2PixelFormat].self, from: Data(#"["TOOLONG"]"#.utf8)) }
    }

    @Test func noDevicesIsAnEmptyList() {
        #expect(V4L2DeviceInfo.list(using: FakeV4L2Device(nodes: [])).isEmpty)
    }

    @Test func theSystemListingWorksWithOrWithoutACamera() {
        let paths = SystemV4L2IO().devicePaths()
        let devices = V4L2DeviceInfo.list()
        #expect(devices.allSatisfy { paths.contains($0.path) })
        if paths.isEmpty { #expect(devices.isEmpty) }
        // Numeric order: video2 before video10.
        let numbers = paths.compactMap { Int($0.dropFirst("/dev/video".count)) }
        #expect(numbers == numbers.sorted())
    }

    static let realCamera: String? = V4L2DeviceInfo.list().first?.path

    @Test(.enabled(if: realCamera != nil, "no V4L2 capture device on this machine; the hardware part is skipped"))
    func aRealCameraCaptures() throws {
        let capture = try V4L2Capture(path: try #require(Self.realCamera))
        defer { capture.stop() }
        var frame = VideoFrame(width: capture.width, height: capture.height)
        var timestamps: [Duration] = []
        for _ in 0..<10 {
            #expect(try capture.read(into: &frame))
            timestamps.append(frame.timestamp)
        }
        #expect((frame.width, frame.height) == (capture.width, capture.height))
        #expect(timestamps == timestamps.sorted())
        #expect(capture.statistics.framesCaptured >= 1)
    }
}
