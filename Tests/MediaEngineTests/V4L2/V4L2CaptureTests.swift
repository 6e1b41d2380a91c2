import CTurboJPEG
import CV4L2
import Glibc
import Testing
@testable import MediaEngine

@Suite struct V4L2CaptureFrames {
    struct Layout: CustomTestStringConvertible, Sendable {
        let format: V4L2PixelFormat
        let padding: Int
        var testDescription: String { "\(format)" + (padding > 0 ? " rows padded by \(padding)" : "") }
    }

    /// Serves `payloads` (then nothing) from a one-format camera and returns the newest frame.
    static func capture(_ format: V4L2PixelFormat, _ payloads: [[UInt8]], width: Int = 640, height: Int = 480,
                        script: FakeV4L2Device.Script = .init()) throws -> (VideoFrame, V4L2Capture.Statistics) {
        var script = script
        script.frames = payloads
        script.frameLimit = payloads.count
        let device = FakeV4L2Device(formats: [.discrete(format, "\(format)", [(width, height, [30])])], script: script)
        let capture = try V4L2Capture(width: width, height: height, io: device)
        defer { capture.stop() }
        #expect(device.waitUntilRequeued(payloads.count))
        var frame = VideoFrame(width: 16, height: 16)
        #expect(try capture.read(into: &frame, timeout: .seconds(10)) == .newFrame)
        return (frame, capture.statistics)
    }

    @Test(arguments: [
        Layout(format: .yuyv, padding: 0), Layout(format: .yuyv, padding: 64), Layout(format: .uyvy, padding: 0),
        Layout(format: .nv12, padding: 0), Layout(format: .nv12, padding: 32), Layout(format: .yuv420, padding: 0),
        Layout(format: .yuv420, padding: 32),
    ])
    func uncompressedFramesArriveAsTheSameI420(_ layout: Layout) throws {
        let reference = V4L2TestImages.pattern()
        let payload: [UInt8]
        switch layout.format {
        case .nv12: payload = V4L2TestImages.nv12(reference, padding: layout.padding)
        case .yuv420: payload = V4L2TestImages.yu12(reference, padding: layout.padding)
        default: payload = V4L2TestImages.packed(reference, format: layout.format, padding: layout.padding)
        }
        var script = FakeV4L2Device.Script()
        script.rowPadding = layout.padding
        let (frame, statistics) = try Self.capture(layout.format, [payload], script: script)
        let psnr = VideoQuality.psnr(reference, frame)
        // 4:2:2 -> 4:2:0 averages two equal chroma rows, so every layout is lossless.
        #expect(psnr >= 60, "\(psnr) dB")
        let identical = frame == withTimestamp(reference, frame.timestamp)  // compared apart: a failure would print megabytes
        #expect(identical, "not bit-exact: \(psnr) dB")
        #expect(statistics.framesCaptured == 1 && statistics.corruptFrames == 0)
    }

    @Test(arguments: [TJSAMP_422, TJSAMP_420, TJSAMP_444, TJSAMP_GRAY])
    func mjpegFramesDecodeToI420(_ subsampling: TJSAMP) throws {
        var reference = V4L2TestImages.pattern()
        let jpeg = V4L2TestImages.jpeg(reference, subsampling: subsampling, quality: 95)
        let (frame, statistics) = try Self.capture(.mjpeg, [jpeg])
        if subsampling == TJSAMP_GRAY {
            reference.withMutablePlanes { _, u, v in
                u.update(repeating: 128)
                v.update(repeating: 128)
            }
        }
        let psnr = VideoQuality.psnr(reference, frame)
        #expect(psnr >= 35, "\(psnr) dB for \(jpeg.count) bytes")
        #expect(statistics.framesCaptured == 1 && statistics.corruptFrames == 0)
    }

    @Test func corruptMJPEGIsCountedAndCaptureContinues() throws {
        let first = V4L2TestImages.pattern(index: 3)
        let last = V4L2TestImages.pattern(index: 9)
        let good = V4L2TestImages.jpeg(first, subsampling: TJSAMP_422)
        let truncated = Array(good.prefix(good.count / 2))
        // Markers at both ends, noise between: no frame header to decode.
        var noise = SystemRandomNumberGenerator()
        let garbage = [0xFF, 0xD8] + (0..<4_000).map { _ in UInt8.random(in: 0...255, using: &noise) } + [0xFF, 0xD9]
        var script = FakeV4L2Device.Script()
        script.flaggedFrames = [4]  // the driver says the bus lost part of it
        let (frame, statistics) = try Self.capture(
            .mjpeg, [good, truncated, garbage, Array("not a jpeg".utf8), good, V4L2TestImages.jpeg(last, subsampling: TJSAMP_422)],
            script: script)
        #expect(statistics.corruptFrames == 4, "\(statistics)")
        #expect(statistics.framesCaptured == 2, "\(statistics)")
        let psnr = VideoQuality.psnr(last, frame)
        #expect(psnr >= 35, "\(psnr) dB")
    }

    @Test func framesCarryTheDriverTimestamp() throws {
        var script = FakeV4L2Device.Script()
        script.firstTimestamp = .seconds(4_242) + .microseconds(125)
        script.timestampStep = .milliseconds(40)
        let payload = V4L2TestImages.packed(V4L2TestImages.pattern())
        let (frame, _) = try Self.capture(.yuyv, [payload, payload, payload], script: script)
        #expect(frame.timestamp == .seconds(4_242) + .microseconds(125) + .milliseconds(80))
    }

    @Test func theNewestFrameWinsAndOverwrittenOnesCountAsDropped() throws {
        let pictures = (0..<5).map { V4L2TestImages.pattern(index: $0 * 4) }
        let (frame, statistics) = try Self.capture(.yuyv, pictures.map { V4L2TestImages.packed($0) })
        #expect(VideoQuality.psnr(pictures[4], frame) >= 60)
        #expect(statistics.framesCaptured == 5)
        #expect(statistics.framesDropped == 4)
    }

    @Test func readHandsBackTheLastFrameWhenNoneArrives() throws {
        let picture = V4L2TestImages.pattern()
        var script = FakeV4L2Device.Script()
        script.frames = [V4L2TestImages.packed(picture)]
        script.frameLimit = 1
        let device = FakeV4L2Device(formats: V4L2Profiles.yuyvOnly, script: script)
        let capture = try V4L2Capture(io: device)
        defer { capture.stop() }
        var frame = VideoFrame(width: 640, height: 480)
        #expect(try capture.read(into: &frame))  // the first frame
        let clock = ContinuousClock()
        var again = VideoFrame(width: 640, height: 480)
        let start = clock.now
        #expect(try capture.read(into: &again))
        let waited = clock.now - start
        // It waited about two frame periods (2 x 33 ms) for a new frame before repeating.
        #expect(waited >= .milliseconds(60), "\(waited)")
        let same = again == frame
        #expect(same, "a different picture came back")
        #expect(try capture.read(into: &again, timeout: .milliseconds(10)) == .repeatedFrame)
        #expect(capture.statistics.framesRepeated == 2)
        #expect(capture.statistics.framesCaptured == 1)
    }

    @Test func noFirstFrameIsAnError() throws {
        var script = FakeV4L2Device.Script()
        script.frameLimit = 0
        let capture = try V4L2Capture(firstFrameTimeout: .milliseconds(50), io: FakeV4L2Device(formats: V4L2Profiles.yuyvOnly, script: script))
        defer { capture.stop() }
        var frame = VideoFrame(width: 640, height: 480)
        let error = #expect(throws: DeviceError.self) { try capture.read(into: &frame) }
        #expect(error?.code == .ioFailed)
        #expect(error?.message.hasPrefix("/dev/video0: no frame within") == true, "\(error?.message ?? "")")
    }

    @Test func streamingFollowsTheSpecAndStopReleasesEverything() throws {
        var script = FakeV4L2Device.Script()
        script.frames = [V4L2TestImages.packed(V4L2TestImages.pattern())]
        script.frameLimit = 3
        let device = FakeV4L2Device(formats: V4L2Profiles.yuyvOnly, script: script)
        let capture = try V4L2Capture(io: device)
        #expect(device.waitUntilRequeued(3))
        capture.stop()
        #expect(device.openDescriptorCount == 0)
        let log = device.log
        let expectedStart = ["open /dev/video0", "VIDIOC_S_FMT YUYV 640x480", "VIDIOC_S_PARM 1/30", "VIDIOC_REQBUFS 4"]
            + (0..<4).flatMap { ["VIDIOC_QUERYBUF \($0)", "mmap \($0)"] } + (0..<4).map { "VIDIOC_QBUF \($0)" }
            + ["VIDIOC_STREAMON"]
        #expect(Array(log.prefix(expectedStart.count)) == expectedStart, "\(log)")
        let expectedEnd = ["VIDIOC_STREAMOFF", "munmap", "munmap", "munmap", "munmap", "VIDIOC_REQBUFS 0", "close"]
        #expect(Array(log.suffix(expectedEnd.count)) == expectedEnd, "\(log)")
        var frame = VideoFrame(width: 640, height: 480)
        #expect(try capture.read(into: &frame) == false)
        capture.stop()  // twice is fine
    }

    @Test func theDriverMayGrantFewerBuffers() throws {
        var script = FakeV4L2Device.Script()
        script.maximumBuffers = 2
        script.frames = [V4L2TestImages.packed(V4L2TestImages.pattern())]
        script.frameLimit = 6
        let device = FakeV4L2Device(formats: V4L2Profiles.yuyvOnly, script: script)
        let capture = try V4L2Capture(io: device)
        defer { capture.stop() }
        #expect(device.waitUntilRequeued(6))
        #expect(capture.statistics.framesCaptured == 6)
        #expect(device.log.contains("VIDIOC_REQBUFS 2"))
    }

    @Test func shortBuffersAreNotFrames() throws {
        let format = V4L2StreamFormat(pixelFormat: .yuyv, width: 64, height: 48, bytesPerLine: 128, imageSize: 128 * 48,
                                      frameInterval: V4L2Fraction(1, 30))
        let converter = try V4L2FrameConverter(format: format, device: "test")
        var frame = VideoFrame(width: 64, height: 48)
        let bytes = [UInt8](repeating: 90, count: 128 * 48)
        #expect(bytes.withUnsafeBytes { converter.convert($0, into: &frame) })
        #expect(bytes.dropLast().withUnsafeBytes { converter.convert($0, into: &frame) } == false)
    }

    // Regression: TurboJPEG 2.1 refused every JPEG after one fatal error on the same handle.
    @Test func aFatalJPEGErrorDoesNotPoisonTheDecoder() throws {
        let format = V4L2StreamFormat(pixelFormat: .mjpeg, width: 640, height: 480, bytesPerLine: 0, imageSize: 640 * 480 * 2,
                                      frameInterval: V4L2Fraction(1, 30))
        let converter = try V4L2FrameConverter(format: format, device: "test")
        let picture = V4L2TestImages.pattern()
        let good = V4L2TestImages.jpeg(picture, subsampling: TJSAMP_420)
        let headerless = [0xFF, 0xD8] + [UInt8](repeating: 0x5A, count: 1_000) + [0xFF, 0xD9]
        var frame = VideoFrame(width: 640, height: 480)
        #expect(headerless.withUnsafeBytes { converter.convert($0, into: &frame) } == false)
        #expect(good.withUnsafeBytes { converter.convert($0, into: &frame) })
        #expect(VideoQuality.psnr(picture, frame) >= 35)
        // The wrong size is not a frame either.
        let small = V4L2TestImages.jpeg(V4L2TestImages.pattern(width: 320, height: 240), subsampling: TJSAMP_420)
        #expect(small.withUnsafeBytes { converter.convert($0, into: &frame) } == false)
    }

    private func withTimestamp(_ frame: VideoFrame, _ timestamp: Duration) -> VideoFrame {
        var frame = frame
        frame.timestamp = timestamp
        return frame
    }
}
