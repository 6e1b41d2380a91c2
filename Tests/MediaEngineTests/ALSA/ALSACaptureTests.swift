import Foundation
import Testing
import TestSupport
@testable import MediaEngine

/// Capture through real alsa-lib: a `file` PCM over a `null` slave reads a raw file the
/// test wrote, loaded from configuration text at open.
@Suite struct ALSAFileCapture {
    /// 2 s of noise in, 1.8 s captured: every sample equals the file's from its first
    /// sample on, frames are 20 ms with timestamps 20 ms apart on CLOCK_MONOTONIC, and
    /// 1 s of audio takes 1 s of wall time although the plugin could deliver it at once.
    @Test(arguments: [ChannelLayout.mono, .stereo])
    func samplesEqualTheFileAndArriveAtTheWallClockPace(layout: ChannelLayout) throws {
        let directory = try ALSAFixture.directory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let channels = layout.count
        let file = ALSAFixture.noise(count: 2 * 48_000 * channels, seed: UInt64(17 + channels))
        let path = directory.appendingPathComponent("noise.raw")
        try ALSAFixture.writeRaw(file, to: path)

        // A generous read timeout: this test is about every sample arriving, and a busy CI
        // machine must not turn a late frame into inserted silence.
        let capture = try ALSACapture(name: "noise", options: .init(layout: layout, readTimeout: .milliseconds(500)),
                                      configuration: ALSAFixture.filePCM("noise", reading: path.path))
        defer { capture.stop() }
        #expect(capture.deviceFormat == ALSAStreamFormat(sampleRate: 48_000, channels: channels, periodFrames: 960, bufferFrames: 3_840))
        #expect(capture.samplesPerFrame == 960)

        var frame = AudioFrame(layout: layout, samplesPerChannel: 960)
        var captured: [Int16] = []
        var timestamps: [Duration] = []
        func next() throws {
            #expect(try capture.read(into: &frame))
            #expect(frame.samplesPerChannel == 960)
            captured += frame.samples
            timestamps.append(frame.timestamp)
        }
        try next()
        let firstReadAt = MonotonicClock.now()
        let clock = ContinuousClock()
        let start = clock.now
        for _ in 1...50 { try next() }
        let elapsed = clock.now - start
        for _ in 51..<90 { try next() }
        // Stopped here so the counters cover the reads only, not the frames that pile up
        // while the samples are compared.
        capture.stop()
        let statistics = capture.statistics
        print("ALSA \(layout) capture pacing: 50 frames (1.000 s of audio) took \(elapsed)")

        // Where the capture starts in the file: the file plugin reads from sample 0, but
        // look for it rather than assume it.
        let firstFrame = Array(captured[0..<960 * channels])
        let offset = (0..<4_800).first { Array(file[$0 * channels..<($0 + 960) * channels]) == firstFrame }
        #expect(offset == 0)
        let start0 = (offset ?? 0) * channels
        #expect(ALSAFixture.firstDifference(captured, file[start0..<start0 + captured.count]) == nil)

        let steps = zip(timestamps.dropFirst(), timestamps).map { $0 - $1 }
        #expect(steps.allSatisfy { $0 == .milliseconds(20) }, "timestamp steps \(Set(steps))")
        #expect(timestamps[0] <= firstReadAt && firstReadAt - timestamps[0] < .milliseconds(100), "timestamps are CLOCK_MONOTONIC")
        #expect(elapsed >= .milliseconds(950) && elapsed <= .milliseconds(1_050), "1 s of audio took \(elapsed)")

        #expect(statistics.framesDropped == 0)
        #expect(statistics.silentFrames == 0)
        #expect(statistics.overruns == 0)
    }

    /// The `file` plugin over `null` accepts any rate, and ALSA's configuration cannot
    /// narrow it (`null` and `file` take no rate field), so the device rate is forced with
    /// `Options.deviceRate`: ALSA then reads the file at 44.1 kHz and the engine's libsoxr
    /// edge brings it to 48 kHz.
    @Test func a44100HzDeviceIsResampledKeepingTheTonesPitchAndLevel() throws {
        let directory = try ALSAFixture.directory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let path = directory.appendingPathComponent("tone-44100.raw")
        try ALSAFixture.writeRaw(ALSAFixture.tone(1_000, rate: 44_100, seconds: 2), to: path)

        let capture = try ALSACapture(name: "tone", options: .init(layout: .mono, readTimeout: .milliseconds(500), deviceRate: 44_100),
                                      configuration: ALSAFixture.filePCM("tone", reading: path.path))
        defer { capture.stop() }
        #expect(capture.deviceFormat.sampleRate == 44_100)
        #expect(capture.deviceFormat.periodFrames == 882)

        var frame = AudioFrame(layout: .mono, samplesPerChannel: 960)
        var captured: [Int16] = []
        for _ in 0..<75 {
            #expect(try capture.read(into: &frame))
            captured += frame.samples
        }
        // Skip the resampler's start-up; 1.4 s of steady tone remains.
        let steady = Array(captured.dropFirst(4_800))
        let frequency = steady.withUnsafeBufferPointer { AudioQuality.toneFrequency($0) } ?? 0
        #expect(abs(frequency - 1_000) < 1, "\(frequency) Hz after resampling")
        let rms = (steady.reduce(0.0) { $0 + Double($1) * Double($1) } / Double(steady.count)).squareRoot()
        #expect(abs(rms - 12_000 / 2.0.squareRoot()) < 12_000 * 0.02, "RMS \(rms)")
        #expect(capture.statistics.silentFrames == 0)
    }

    /// A device that only offers one channel (a `multi` PCM with one binding) feeds
    /// stereo frames with the same samples on both sides.
    @Test func aMonoDeviceIsCopiedToBothStereoChannels() throws {
        let directory = try ALSAFixture.directory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let file = ALSAFixture.noise(count: 48_000, seed: 5)
        let path = directory.appendingPathComponent("mono.raw")
        try ALSAFixture.writeRaw(file, to: path)

        let capture = try ALSACapture(name: "mono", options: .init(layout: .stereo, readTimeout: .milliseconds(500)),
                                      configuration: ALSAFixture.filePCM("mono", reading: path.path, channels: 1))
        defer { capture.stop() }
        #expect(capture.deviceFormat.channels == 1)
        var frame = AudioFrame(layout: .stereo, samplesPerChannel: 960)
        var captured: [Int16] = []
        for _ in 0..<25 {
            #expect(try capture.read(into: &frame))
            captured += frame.samples
        }
        let left = stride(from: 0, to: captured.count, by: 2).map { captured[$0] }
        let right = stride(from: 1, to: captured.count, by: 2).map { captured[$0] }
        #expect(ALSAFixture.firstDifference(left, file[0..<left.count]) == nil)
        #expect(ALSAFixture.firstDifference(right, left) == nil)
    }

    /// A device that only offers two channels feeds mono frames with their average.
    @Test func aStereoDeviceIsAveragedToMono() throws {
        let directory = try ALSAFixture.directory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let file = ALSAFixture.noise(count: 2 * 48_000, seed: 9)
        let path = directory.appendingPathComponent("stereo.raw")
        try ALSAFixture.writeRaw(file, to: path)

        let capture = try ALSACapture(name: "stereo", options: .init(layout: .mono, readTimeout: .milliseconds(500)),
                                      configuration: ALSAFixture.filePCM("stereo", reading: path.path, channels: 2))
        defer { capture.stop() }
        #expect(capture.deviceFormat.channels == 2)
        var frame = AudioFrame(layout: .mono, samplesPerChannel: 960)
        var captured: [Int16] = []
        for _ in 0..<25 {
            #expect(try capture.read(into: &frame))
            captured += frame.samples
        }
        let expected: [Int16] = (0..<captured.count).map { (index: Int) -> Int16 in
            let sum: Int = Int(file[2 * index]) + Int(file[2 * index + 1])
            return Int16(sum / 2)
        }
        #expect(ALSAFixture.firstDifference(captured, expected) == nil)
    }

    /// At the end of its file the plugin returns full periods without writing them; the
    /// capture hands out silence there, not the last period over and over.
    @Test func theEndOfAFileIsSilenceNotARepeat() throws {
        let directory = try ALSAFixture.directory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let file = ALSAFixture.noise(count: 9_600, seed: 3)  // 200 ms: 10 frames
        let path = directory.appendingPathComponent("short.raw")
        try ALSAFixture.writeRaw(file, to: path)

        let capture = try ALSACapture(name: "short", options: .init(frameDuration: .milliseconds(10), readTimeout: .milliseconds(500)),
                                      configuration: ALSAFixture.filePCM("short", reading: path.path))
        defer { capture.stop() }
        #expect(capture.samplesPerFrame == 480)
        var frame = AudioFrame(layout: .mono, samplesPerChannel: 480)
        var captured: [Int16] = []
        for _ in 0..<30 {
            #expect(try capture.read(into: &frame))
            captured += frame.samples
        }
        #expect(ALSAFixture.firstDifference(captured[0..<9_600], file) == nil)
        #expect(captured[9_600...].allSatisfy { $0 == 0 })
    }

    /// A reader that stalls loses the oldest frames, counted, and then gets the newest
    /// ones in order.
    @Test func aSlowReaderLosesTheOldestFramesAndTheyAreCounted() throws {
        let directory = try ALSAFixture.directory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let file = ALSAFixture.noise(count: 96_000, seed: 11)
        let path = directory.appendingPathComponent("slow.raw")
        try ALSAFixture.writeRaw(file, to: path)

        let capture = try ALSACapture(name: "slow", options: .init(queueCapacity: 3, readTimeout: .milliseconds(500)),
                                      configuration: ALSAFixture.filePCM("slow", reading: path.path))
        #expect(eventuallyBlocking { capture.statistics.framesCaptured >= 15 })  // room for 3
        capture.stop()  // freezes the queue and the counters
        let statistics = capture.statistics
        let dropped = statistics.framesDropped
        // Paced, the check every 20 ms (a frame) stops it at 15 or 16 frames: about 12
        // dropped. Unpaced, the whole file would be there at the first check.
        try #require((8...18).contains(dropped), "\(dropped) frames dropped")
        #expect(statistics.framesCaptured == dropped + 3)
        // What is left are the newest three frames, oldest first, right after the dropped ones.
        var frame = AudioFrame(layout: .mono, samplesPerChannel: 960)
        for index in dropped..<dropped + 3 {
            #expect(try capture.read(into: &frame))
            #expect(ALSAFixture.firstDifference(frame.samples, file[index * 960..<(index + 1) * 960]) == nil)
        }
        #expect(try capture.read(into: &frame) == false)
    }

    /// `read` takes frames of exactly the configured size and layout; anything else is a
    /// typed error naming the device, and the capture goes on.
    @Test func aFrameOfTheWrongSizeIsATypedError() throws {
        let directory = try ALSAFixture.directory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let path = directory.appendingPathComponent("size.raw")
        try ALSAFixture.writeRaw(ALSAFixture.noise(count: 48_000, seed: 2), to: path)
        let capture = try ALSACapture(name: "size", configuration: ALSAFixture.filePCM("size", reading: path.path))
        defer { capture.stop() }

        var short = AudioFrame(layout: .mono, samplesPerChannel: 480)
        let error = #expect(throws: DeviceError.self) { try capture.read(into: &short) }
        #expect(error?.code == .unsupportedFormat)
        #expect(error?.message.hasPrefix("size: ") == true)
        #expect(error?.message.contains("480") == true && error?.message.contains("960") == true)
        var stereo = AudioFrame(layout: .stereo, samplesPerChannel: 480)  // 960 samples, wrong layout
        #expect(throws: DeviceError.self) { try capture.read(into: &stereo) }
        var good = AudioFrame(layout: .mono, samplesPerChannel: 960)
        #expect(try capture.read(into: &good))
    }

    /// After `stop` the frames already queued are still read, then `read` returns false;
    /// stopping again is harmless.
    @Test func stopEndsTheSourceAfterTheQueuedFrames() throws {
        let directory = try ALSAFixture.directory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let path = directory.appendingPathComponent("stop.raw")
        try ALSAFixture.writeRaw(ALSAFixture.noise(count: 48_000, seed: 4), to: path)
        let capture = try ALSACapture(name: "stop", options: .init(readTimeout: .milliseconds(500)),
                                      configuration: ALSAFixture.filePCM("stop", reading: path.path))
        var frame = AudioFrame(layout: .mono, samplesPerChannel: 960)
        #expect(try capture.read(into: &frame))
        capture.stop()
        var remaining = 0
        while try capture.read(into: &frame) { remaining += 1 }
        #expect(remaining <= 5)
        #expect(try capture.read(into: &frame) == false)
        capture.stop()
    }
}
