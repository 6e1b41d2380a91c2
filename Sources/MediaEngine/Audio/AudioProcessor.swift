import CAudioProcessing
import Synchronization

/// Echo cancellation, noise suppression, gain control, the high-pass filter and voice
/// detection on captured audio (NIM's "3A"), with libwebrtc-audio-processing.
///
/// The echo canceller learns the room from what was played: `render` takes exactly what
/// the speaker plays, and `process` takes each captured frame with the delay from that
/// audio's `render` call to the capture call of the frame holding its echo (what the
/// playback device still holds plus how long the captured frame waited). The library
/// works on 10 ms blocks: a 20 ms frame is two. With delay-agnostic mode on it also finds
/// the delay itself when the reported one is wrong.
///
/// One thread renders and one captures (they may differ: the library locks); `settings`
/// may change from any thread and apply from the next captured block. Per block nothing
/// is allocated.
public final class AudioProcessor: @unchecked Sendable {
    // @unchecked: `renderBlock`/`renderFill` belong to the one rendering thread; the
    // library locks between its render and capture sides; the rest is in `shared`.

    /// What runs on the captured audio. The voice detector runs whenever the processor does.
    public struct Settings: Sendable, Hashable, Codable, CustomStringConvertible {
        /// Noise suppression's strength.
        public enum NoiseSuppression: String, Sendable, Hashable, Codable, CaseIterable {
            case off, low, moderate, high
            case veryHigh = "very-high"
        }

        /// The acoustic echo canceller.
        public var echoCancellation: Bool
        public var noiseSuppression: NoiseSuppression
        /// Adaptive digital gain control (with a limiter), towards -3 dBFS peaks.
        public var gainControl: Bool
        /// Removes rumble below about 80 Hz.
        public var highPassFilter: Bool

        public init(echoCancellation: Bool = true, noiseSuppression: NoiseSuppression = .moderate, gainControl: Bool = true,
                    highPassFilter: Bool = true) {
            self.echoCancellation = echoCancellation
            self.noiseSuppression = noiseSuppression
            self.gainControl = gainControl
            self.highPassFilter = highPassFilter
        }

        /// Everything on: what a real microphone next to a real speaker gets.
        public static let voice = Settings()
        /// Everything off: files and synthetic sources, which have no room to clean.
        public static let off = Settings(echoCancellation: false, noiseSuppression: .off, gainControl: false, highPassFilter: false)

        /// Whether anything runs.
        public var isEnabled: Bool { echoCancellation || noiseSuppression != .off || gainControl || highPassFilter }

        public var description: String {
            "aec \(echoCancellation ? "on" : "off"), ns \(noiseSuppression.rawValue), agc \(gainControl ? "on" : "off"), "
                + "hpf \(highPassFilter ? "on" : "off")"
        }

        /// The shim's settings (also for `bench audio-processing`'s C side).
        package var c: me_apm_settings {
            let level: Int32 = switch noiseSuppression {
            case .off: -1
            case .low: 0
            case .moderate: 1
            case .high: 2
            case .veryHigh: 3
            }
            return me_apm_settings(echo_cancellation: echoCancellation ? 1 : 0, noise_suppression: level,
                                   gain_control: gainControl ? 1 : 0, high_pass_filter: highPassFilter ? 1 : 0)
        }
    }

    /// What the processor did and measured.
    public struct Statistics: Sendable, Hashable, Codable {
        /// 10 ms blocks of captured audio processed.
        public var captureBlocks = 0
        /// Of those, the blocks the voice detector called voice.
        public var voiceBlocks = 0
        /// 10 ms blocks of played audio the echo canceller learnt from.
        public var renderBlocks = 0
        /// Captured blocks the library refused (passed on unprocessed).
        public var failedBlocks = 0
        /// Captured blocks whose reported delay was outside 0...500 ms (clamped).
        public var clampedDelays = 0
        /// The echo's loss from the far end to the microphone (ERL), dB: the W3C
        /// `echoReturnLoss`. Nil before the canceller has a figure or with it off.
        public var echoReturnLoss: Double?
        /// How much the canceller removed of the echo (ERLE), dB: the W3C
        /// `echoReturnLossEnhancement`.
        public var echoReturnLossEnhancement: Double?
        /// The delay the caller reported with the last block.
        public var reportedDelay: Duration?
        /// The library's own estimate of the echo's delay (median), when it has one.
        public var estimatedDelay: Duration?

        /// The fraction of captured blocks that held voice, 0...1.
        public var voiceFraction: Double { captureBlocks == 0 ? 0 : Double(voiceBlocks) / Double(captureBlocks) }

        public init() {}
    }

    /// The layouts it was made for.
    public let captureLayout: ChannelLayout
    public let renderLayout: ChannelLayout
    /// Samples per channel in one of the library's blocks (10 ms at 48 kHz).
    public static let blockLength = AudioFrame.sampleRate / 100
    /// The longest delay the library takes.
    public static let maximumDelay = Duration.milliseconds(500)

    private let handle: OpaquePointer
    private struct Shared {
        var settings: Settings
        var applied: Settings
        var statistics = Statistics()
        var failure: AudioProcessingError?
        /// What the speaker held when the last played audio was written.
        var playbackDelay = Duration.zero
    }
    private let shared: Mutex<Shared>
    private var renderBlock: [Int16]
    private var renderFill = 0

    /// Makes a processor for 48 kHz audio.
    /// - Throws: `AudioProcessingError.initializationFailed` when the library refuses.
    public convenience init(settings: Settings = .voice, capture: ChannelLayout = .mono, render: ChannelLayout = .mono) throws(AudioProcessingError) {
        try self.init(settings: settings, capture: capture, render: render, sampleRate: AudioFrame.sampleRate)
    }

    /// At another rate: only for tests of the library refusing to start (the engine's audio is 48 kHz).
    init(settings: Settings, capture: ChannelLayout, render: ChannelLayout, sampleRate: Int) throws(AudioProcessingError) {
        var handle: OpaquePointer?
        var c = settings.c
        let status = me_apm_create(Int32(sampleRate), Int32(capture.count), Int32(render.count), &c, &handle)
        guard status == 0, let handle else {
            throw AudioProcessingError(.initializationFailed, status: status,
                                       "libwebrtc-audio-processing did not start (\(Self.describe(status))) with \(settings)")
        }
        self.handle = handle
        captureLayout = capture
        renderLayout = render
        shared = Mutex(Shared(settings: settings, applied: settings))
        renderBlock = [Int16](repeating: 0, count: Self.blockLength * render.count)
    }

    deinit { me_apm_destroy(handle) }

    /// What runs; a change applies from the next captured block.
    public var settings: Settings {
        get { shared.withLock { $0.settings } }
        set { shared.withLock { $0.settings = newValue } }
    }

    /// The counters, with the library's latest echo figures.
    public var statistics: Statistics {
        var metrics = me_apm_metrics()
        me_apm_read_metrics(handle, &metrics)
        return shared.withLock { shared in
            var result = shared.statistics
            if metrics.echo_valid != 0 {
                result.echoReturnLoss = Double(metrics.echo_return_loss)
                result.echoReturnLossEnhancement = Double(metrics.echo_return_loss_enhancement)
            }
            if metrics.delay_valid != 0 { result.estimatedDelay = .milliseconds(Int(metrics.delay_median_ms)) }
            return result
        }
    }

    /// The last settings change the library refused, if any (the settings before it stay).
    public var failure: AudioProcessingError? { shared.withLock { $0.failure } }

    /// Learns from played audio: interleaved 48 kHz samples in `renderLayout`, any length
    /// (kept until a 10 ms block is whole).
    public func render(_ samples: UnsafeBufferPointer<Int16>) {
        let channels = renderLayout.count
        let blockSamples = Self.blockLength * channels
        var offset = 0
        var blocks = 0
        renderBlock.withUnsafeMutableBufferPointer { block in
            while offset < samples.count {
                let taken = min(blockSamples - renderFill, samples.count - offset)
                for index in 0..<taken { block[renderFill + index] = samples[offset + index] }
                renderFill += taken
                offset += taken
                if renderFill == blockSamples {
                    me_apm_process_render(handle, block.baseAddress)
                    renderFill = 0
                    blocks += 1
                }
            }
        }
        if blocks > 0 { shared.withLock { $0.statistics.renderBlocks += blocks } }
    }

    /// Learns from audio written now to a speaker that still holds `playbackDelay` of
    /// earlier audio (see `render(_:)`).
    public func render(_ samples: UnsafeBufferPointer<Int16>, playbackDelay: Duration) {
        shared.withLock { $0.playbackDelay = playbackDelay }
        render(samples)
    }

    /// Processes a frame whose first sample was captured `captureDelay` ago: the echo's
    /// delay is that plus what the speaker held at the last `render(_:playbackDelay:)`.
    @discardableResult
    public func process(_ frame: inout AudioFrame, captureDelay: Duration) -> Bool {
        process(&frame, delay: captureDelay + shared.withLock { $0.playbackDelay })
    }

    /// Processes a captured frame in place (a whole number of 10 ms blocks in
    /// `captureLayout`), reporting `delay` for each block. Returns whether the voice
    /// detector heard voice in any of its blocks. A block the library refuses is passed on
    /// as captured and counted.
    @discardableResult
    public func process(_ frame: inout AudioFrame, delay: Duration) -> Bool {
        precondition(frame.layout == captureLayout, "a \(frame.layout) frame for a \(captureLayout) processor")
        precondition(frame.samplesPerChannel % Self.blockLength == 0, "frames are whole 10 ms blocks")
        applyPendingSettings()
        let milliseconds = Int(delay.seconds * 1_000)
        let blockSamples = Self.blockLength * captureLayout.count
        let blocks = frame.samplesPerChannel / Self.blockLength
        var voiced = 0
        var failed = 0
        frame.samples.withUnsafeMutableBufferPointer { samples in
            for block in 0..<blocks {
                var voice: Int32 = 0
                let status = me_apm_process_capture(handle, samples.baseAddress! + block * blockSamples,
                                                    Int32(clamping: milliseconds), &voice)
                if status != 0 && status != me_apm_delay_warning() { failed += 1 }
                voiced += Int(voice)
            }
        }
        let clamped = !(0...500).contains(milliseconds)
        shared.withLock { shared in
            shared.statistics.captureBlocks += blocks
            shared.statistics.voiceBlocks += voiced
            shared.statistics.failedBlocks += failed
            if clamped { shared.statistics.clampedDelays += blocks }
            shared.statistics.reportedDelay = delay
        }
        return voiced > 0
    }

    private func applyPendingSettings() {
        shared.withLock { shared in
            guard shared.settings != shared.applied else { return }
            var c = shared.settings.c
            let status = me_apm_apply(handle, &c)
            if status == 0 {
                shared.applied = shared.settings
                shared.failure = nil
            } else {
                shared.failure = AudioProcessingError(.settingsRefused, status: status,
                                                      "libwebrtc-audio-processing refused \(shared.settings) (\(Self.describe(status)))")
                shared.settings = shared.applied
            }
        }
    }

    static func describe(_ status: Int32) -> String {
        switch status {
        case Int32(ME_APM_BAD_FORMAT): "a rate or channel count it does not take"
        case Int32(ME_APM_NO_MEMORY): "out of memory"
        case -1: "unspecified error"
        case -2: "creation failed"
        case -3: "unsupported component"
        case -4: "unsupported function"
        case -5: "null pointer"
        case -6: "bad parameter"
        case -7: "bad sample rate"
        case -8: "bad data length"
        case -9: "bad channel count"
        case -10: "file error"
        case -11: "stream parameter not set"
        case -12: "not enabled"
        default: "status \(status)"
        }
    }
}

/// Why audio processing could not start or change.
public struct AudioProcessingError: CodedError {
    public let code: ErrorCode<AudioProcessingError>
    public let message: String
    /// The library's status, when it gave one.
    public let status: Int32?

    public init(_ code: ErrorCode<AudioProcessingError>, status: Int32? = nil, _ message: String) {
        self.code = code
        self.status = status
        self.message = message
    }
}

extension ErrorCode<AudioProcessingError> {
    /// The library did not start (an unsupported format, no memory).
    public static let initializationFailed = ErrorCode("initialization failed")
    /// The library refused a change of settings.
    public static let settingsRefused = ErrorCode("settings refused")
    /// Input it cannot process: a rate, layout or delay out of range, files that do not match.
    public static let badInput = ErrorCode("bad input")
}
