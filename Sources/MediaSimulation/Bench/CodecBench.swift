import MediaEngine

/// Measures encode/decode speed, quality and bitrate accuracy of the Opus and VP8
/// wrappers over a grid of settings, on synthetic input or the user's own files.
///
/// Timings cover only the codec calls: input generation, scaling and quality
/// measurement happen outside the timed spans. All buffers are allocated before a case
/// starts, so the timed loop does no allocation.
public struct CodecBench: Sendable {
    /// Where audio comes from.
    public enum AudioInput: Sendable, Hashable {
        /// A sum of tones (220, 554, 1320 and 3100 Hz).
        case synthetic
        /// A 48 kHz mono or stereo file that libsndfile reads (WAV, FLAC, ...).
        case file(String)
    }

    /// Where video comes from.
    public enum VideoInput: Sendable, Hashable {
        /// `TestPattern`.
        case synthetic
        /// A 4:2:0 Y4M file, scaled to each case's size when it differs.
        case file(String)
    }

    public var audioInput: AudioInput = .synthetic
    public var videoInput: VideoInput = .synthetic
    /// Seconds of media per case (a file may hold less).
    public var seconds: Double = 10

    public init() {}

    /// Runs every case, Opus first, calling `progress(done, total, label)` before each
    /// case and once at the end.
    public func run(opus: [OpusBenchCase], vp8: [VP8BenchCase],
                    progress: (Int, Int, String) -> Void = { _, _, _ in }) throws -> BenchReport {
        var report = BenchReport(audioInput: audioInput.label, videoInput: videoInput.label)
        let total = opus.count + vp8.count
        if !opus.isEmpty {
            let audio = try loadAudio()
            for setup in opus {
                progress(report.opus.count, total, "opus \(setup.bitrate / 1000) kb/s c\(setup.complexity) \(setup.frameMilliseconds) ms")
                report.opus.append(try measure(setup, audio: audio))
            }
        }
        for setup in vp8 {
            progress(report.opus.count + report.vp8.count, total,
                     "vp8 \(setup.width)x\(setup.height) \(setup.bitrate / 1000) kb/s cpu \(setup.cpuUsed)")
            report.vp8.append(try measure(setup))
        }
        progress(total, total, "done")
        return report
    }

    // MARK: Opus

    private func loadAudio() throws -> AudioFrame {
        switch audioInput {
        case .synthetic:
            var tones = ToneGenerator(.multiTone([220, 554, 1_320, 3_100]), amplitude: 0.6)
            return tones.clip(seconds: seconds)
        case .file(let path):
            var frame = try AudioFile.read(path: path)
            let limit = Int(seconds * Double(AudioFrame.sampleRate)) * frame.layout.count
            if frame.samples.count > limit { frame.samples.removeLast(frame.samples.count - limit) }
            guard frame.samplesPerChannel >= AudioFrame.sampleRate / 10 else {
                throw MediaFileError(.corrupt, path: path, "holds \(frame.samplesPerChannel) samples; the benchmark needs at least 0.1 s")
            }
            return frame
        }
    }

    private func measure(_ setup: OpusBenchCase, audio: AudioFrame) throws -> OpusBenchResult {
        guard let duration = Opus.FrameDuration(milliseconds: setup.frameMilliseconds) else {
            throw CodecError(.invalidConfiguration,
                             "opus: frame size \(setup.frameMilliseconds) ms is not one of 2.5, 5, 10, 20, 40, 60")
        }
        guard let application = Opus.Application.allCases.first(where: { $0.description == setup.application }) else {
            throw CodecError(.invalidConfiguration,
                             "opus: application '\(setup.application)' is not voip, audio or restricted-low-delay")
        }
        var configuration = Opus.Configuration()
        configuration.layout = audio.layout
        configuration.bitrate = setup.bitrate
        configuration.complexity = setup.complexity
        configuration.frameDuration = duration
        configuration.application = application
        let encoder = try Opus.Encoder(configuration: configuration)
        let decoder = try Opus.Decoder(layout: audio.layout)

        let channels = audio.layout.count
        let frameSamples = configuration.samplesPerFrame * channels
        let frameCount = audio.samples.count / frameSamples
        guard frameCount > 0 else {
            throw CodecError(.invalidInput, "opus: input is shorter than one \(duration) frame")
        }
        var packets = [UInt8](repeating: 0, count: frameCount * Opus.maxPacketSize)
        var lengths = [Int](repeating: 0, count: frameCount)
        var decoded = [Int16](repeating: 0, count: frameCount * frameSamples)
        let clock = ContinuousClock()

        var encodeTime = Duration.zero
        try audio.samples.withUnsafeBufferPointer { pcm in
            try packets.withUnsafeMutableBytes { out in
                for index in 0..<frameCount {
                    let input = UnsafeBufferPointer(rebasing: pcm[(index * frameSamples)..<((index + 1) * frameSamples)])
                    let output = UnsafeMutableRawBufferPointer(
                        rebasing: out[(index * Opus.maxPacketSize)..<((index + 1) * Opus.maxPacketSize)])
                    let start = clock.now
                    lengths[index] = try encoder.encode(input, into: output)
                    encodeTime += clock.now - start
                }
            }
        }
        var decodeTime = Duration.zero
        try packets.withUnsafeBytes { bytes in
            try decoded.withUnsafeMutableBufferPointer { pcm in
                for index in 0..<frameCount {
                    let packet = UnsafeRawBufferPointer(
                        rebasing: bytes[(index * Opus.maxPacketSize)..<(index * Opus.maxPacketSize + lengths[index])])
                    let output = UnsafeMutableBufferPointer(rebasing: pcm[(index * frameSamples)..<((index + 1) * frameSamples)])
                    let start = clock.now
                    _ = try decoder.decode(packet, into: output)
                    decodeTime += clock.now - start
                }
            }
        }

        let seconds = Double(frameCount * configuration.samplesPerFrame) / Double(AudioFrame.sampleRate)
        let delay = encoder.lookahead
        let reference = stride(from: 0, to: frameCount * frameSamples, by: channels).map { audio.samples[$0] }
        let output = stride(from: 0, to: decoded.count, by: channels).map { decoded[$0] }
        // Skip the first 20 ms: the encoder starts from silence.
        let skip = AudioFrame.sampleRate / 50
        let (snr, correlation) = reference.withUnsafeBufferPointer { r in
            output.withUnsafeBufferPointer { t in
                (AudioQuality.snr(reference: r, test: t, lag: delay, start: skip),
                 AudioQuality.correlation(reference: r, test: t, lag: delay, start: skip))
            }
        }
        return OpusBenchResult(setup: setup, channels: channels, seconds: seconds,
                               encodeSpeed: seconds / max(encodeTime.seconds, 1e-9),
                               decodeSpeed: seconds / max(decodeTime.seconds, 1e-9),
                               snr: snr, correlation: correlation, delaySamples: delay,
                               achievedBitrate: Double(lengths.reduce(0, +) * 8) / seconds)
    }

    // MARK: VP8

    private func measure(_ setup: VP8BenchCase) throws -> VP8BenchResult {
        var configuration = VP8.Configuration(width: setup.width, height: setup.height, bitrate: setup.bitrate)
        configuration.cpuUsed = setup.cpuUsed
        configuration.frameRate = setup.frameRate
        configuration.threads = setup.threads
        let encoder = try VP8.Encoder(configuration: configuration)
        let decoder = try VP8.Decoder(threads: setup.threads)
        var frames = try VideoFrames(input: videoInput, width: setup.width, height: setup.height, frameRate: setup.frameRate)
        let limit = max(1, Int(seconds * Double(setup.frameRate)))

        var source = VideoFrame(width: setup.width, height: setup.height)
        var decoded = VideoFrame(width: setup.width, height: setup.height)
        var output = [UInt8](repeating: 0, count: encoder.maximumFrameSize)
        let clock = ContinuousClock()
        var (encodeTime, decodeTime) = (Duration.zero, Duration.zero)
        var (count, dropped, keyframes, bytes) = (0, 0, 0, 0)
        var (psnrSum, ssimSum, compared) = (0.0, 0.0, 0)

        while count < limit, try frames.next(into: &source) {
            // The source's own timestamps pace rate control; number frames at the case's rate.
            source.timestamp = .nanoseconds(Int64(count) * 1_000_000_000 / Int64(setup.frameRate))
            count += 1
            let start = clock.now
            let info = try output.withUnsafeMutableBytes { try encoder.encode(source, into: $0) }
            encodeTime += clock.now - start
            guard let info else {
                dropped += 1
                continue
            }
            bytes += info.byteCount
            if info.isKeyframe { keyframes += 1 }
            let decodeStart = clock.now
            let shown = try output.withUnsafeBytes {
                try decoder.decode(UnsafeRawBufferPointer(rebasing: $0[0..<info.byteCount]), into: &decoded)
            }
            decodeTime += clock.now - decodeStart
            if shown {
                psnrSum += VideoQuality.psnr(source, decoded)
                ssimSum += VideoQuality.ssim(source, decoded)
                compared += 1
            }
        }
        guard count > 0 else {
            throw CodecError(.invalidInput, "vp8: the video input holds no frames")
        }
        let seconds = Double(count) / Double(setup.frameRate)
        let encoded = count - dropped
        return VP8BenchResult(setup: setup, frames: count, droppedFrames: dropped, keyframes: keyframes,
                              encodeSpeed: Double(count) / max(encodeTime.seconds, 1e-9),
                              decodeSpeed: Double(encoded) / max(decodeTime.seconds, 1e-9),
                              psnr: compared > 0 ? psnrSum / Double(compared) : 0,
                              ssim: compared > 0 ? ssimSum / Double(compared) : 0,
                              achievedBitrate: Double(bytes * 8) / seconds)
    }
}

/// Frames for one VP8 case: the test pattern at the case's size, or a Y4M file scaled to it.
private struct VideoFrames {
    private var pattern: TestPattern?
    private var reader: Y4M.Reader?
    private var native: VideoFrame?

    init(input: CodecBench.VideoInput, width: Int, height: Int, frameRate: Int) throws {
        switch input {
        case .synthetic:
            pattern = TestPattern(width: width, height: height, frameRate: frameRate)
        case .file(let path):
            let reader = try Y4M.Reader(path: path)
            self.reader = reader
            if reader.width != width || reader.height != height {
                native = VideoFrame(width: reader.width, height: reader.height)
            }
        }
    }

    /// Fills `frame` with the next picture; false at the end of a file.
    mutating func next(into frame: inout VideoFrame) throws -> Bool {
        if pattern != nil {
            pattern!.render(into: &frame)
            return true
        }
        guard let reader else { return false }
        if native == nil { return try reader.read(into: &frame) }
        guard try reader.read(into: &native!) else { return false }
        native!.scale(into: &frame)
        return true
    }
}

extension CodecBench.AudioInput {
    var label: String {
        switch self {
        case .synthetic: "synthetic multi-tone"
        case .file(let path): path
        }
    }
}

extension CodecBench.VideoInput {
    var label: String {
        switch self {
        case .synthetic: "synthetic test pattern"
        case .file(let path): path
        }
    }
}
