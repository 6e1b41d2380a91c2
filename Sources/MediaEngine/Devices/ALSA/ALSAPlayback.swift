import CALSA
#if canImport(Glibc)
import Glibc
#endif

/// Plays 48 kHz audio on an ALSA PCM.
///
/// Negotiates like `ALSACapture` (interleaved S16_LE, 48 kHz, the sink's layout; another
/// rate or channel count is converted at the edge with libsoxr and a remix). The device
/// buffer is small, about three periods, and `write` blocks in `snd_pcm_writei` while it
/// is full, so the device's clock paces the writer. Underruns are recovered and counted;
/// a device that goes away makes `write` throw, then and every time after.
///
/// The `null` PCM (stock in alsa.conf, or `pcm.NAME { type null }` as configuration
/// text) accepts writes without a sound card. PCM names are looked up as for
/// `ALSACapture`, `ALSA_CONFIG_PATH` included.
///
/// Not thread-safe: one writer at a time.
public final class ALSAPlayback: AudioSink {
    /// How to open the playback.
    public struct Options: Sendable, Hashable {
        /// Mono or stereo input (the device may differ; it is remixed).
        public var layout: ChannelLayout
        /// Period length: 10, 20, 40 or 60 ms.
        public var periodDuration: Duration
        /// Periods in the device buffer; playback starts once all but one are queued.
        public var periodsPerBuffer: Int
        /// The rate to ask the device for; nil asks for 48 kHz.
        public var deviceRate: Int?

        /// Mono, 20 ms periods, a 3-period buffer at 48 kHz.
        public init(layout: ChannelLayout = .mono, periodDuration: Duration = .milliseconds(20), periodsPerBuffer: Int = 3,
                    deviceRate: Int? = nil) {
            self.layout = layout
            self.periodDuration = periodDuration
            self.periodsPerBuffer = periodsPerBuffer
            self.deviceRate = deviceRate
        }
    }

    /// Counters since open.
    public struct Statistics: Sendable, Hashable, Codable {
        /// 48 kHz samples per channel accepted by `write`.
        public var samplesWritten = 0
        /// Device frames handed to `snd_pcm_writei`.
        public var deviceFramesWritten = 0
        /// Underruns (EPIPE) recovered.
        public var underruns = 0
        /// Suspends (ESTRPIPE) recovered.
        public var suspends = 0

        /// All zero.
        public init() {}
    }

    /// The layout `write` takes.
    public let layout: ChannelLayout
    /// The PCM as the caller named it.
    public let name: String
    /// The options the playback was opened with.
    public let options: Options
    /// What the device agreed to.
    public let deviceFormat: ALSAStreamFormat
    /// Counters so far.
    public private(set) var statistics = Statistics()
    private var pcm: ALSAPCM?
    private let bridge: ALSAFormatBridge
    /// 48 kHz frames converted per step: one period.
    private let chunkFrames: Int
    private var failure: DeviceError?
    /// The device holds audio for real ears (not the null PCM).
    private let audible: Bool
    /// Device frames queued after the last write (`snd_pcm_delay`), and when.
    private var queuedFrames = 0

    /// Opens `name` for playback.
    /// - Parameters:
    ///   - name: an ALSA PCM name (`default`, `null`, `hw:1,0`, `plughw:1,0`, a name from
    ///     asound.conf or from `configuration`).
    ///   - options: layout, period, buffering and the device rate.
    ///   - configuration: ALSA configuration text to look `name` up in instead of the
    ///     global configuration.
    /// - Throws: `DeviceError` as `ALSACapture.init` does.
    public init(name: String, options: Options = Options(), configuration: String? = nil) throws(DeviceError) {
        guard let milliseconds = ALSAFrameLength.milliseconds(options.periodDuration) else {
            throw DeviceError(.unsupportedFormat, device: name, "periods of \(options.periodDuration) are not one of 10, 20, 40 or 60 ms")
        }
        guard (2...32).contains(options.periodsPerBuffer) else {
            throw DeviceError(.unsupportedFormat, device: name, "\(options.periodsPerBuffer) periods per buffer is not 2 to 32")
        }
        if let rate = options.deviceRate, !(1_000...768_000).contains(rate) {
            throw DeviceError(.unsupportedFormat, device: name, "a device rate of \(rate) Hz is outside 1000 to 768000 Hz")
        }
        let pcm = try ALSAPCM(name: name, stream: SND_PCM_STREAM_PLAYBACK, configuration: configuration)
        let format = try pcm.negotiate(channels: options.layout.count, preferredRate: options.deviceRate ?? AudioFrame.sampleRate,
                                       periodDuration: options.periodDuration, periods: options.periodsPerBuffer,
                                       startThreshold: options.periodsPerBuffer - 1)
        chunkFrames = AudioFrame.sampleRate * milliseconds / 1_000
        do {
            bridge = try ALSAFormatBridge(inputRate: AudioFrame.sampleRate, inputChannels: options.layout.count,
                                          outputRate: format.sampleRate, outputChannels: format.channels,
                                          maximumInputFrames: chunkFrames)
        } catch {
            throw DeviceError(error.code, device: name, "the device's \(format.channels) channels at \(format.sampleRate) Hz: \(error.message)")
        }
        self.pcm = pcm
        audible = snd_pcm_type(pcm.handle) != SND_PCM_TYPE_NULL
        self.layout = options.layout
        self.name = name
        self.options = options
        self.deviceFormat = format
    }

    deinit {
        if let pcm { snd_pcm_drop(pcm.handle) }
    }

    /// What the device held after the last write, as time: audio written now plays after
    /// it. Nil for the null PCM, which plays nothing aloud.
    public var playbackDelay: Duration? {
        guard audible else { return nil }
        return AudioFrame.duration(samplesPerChannel: queuedFrames * AudioFrame.sampleRate / max(1, deviceFormat.sampleRate))
    }

    /// Plays interleaved 48 kHz samples in `layout`, blocking while the device buffer is
    /// full.
    /// - Throws: `DeviceError.unsupportedFormat` for a partial frame; the device's error
    ///   (`disconnected`, `ioFailed`) when it failed, now or on an earlier write; `ioFailed`
    ///   after `close`.
    public func write(_ samples: UnsafeBufferPointer<Int16>) throws(DeviceError) {
        if let failure { throw failure }
        guard let pcm else { throw DeviceError(.ioFailed, device: name, "write after close") }
        guard samples.count % layout.count == 0 else {
            throw DeviceError(.unsupportedFormat, device: name, "\(samples.count) samples do not fill whole \(layout) frames")
        }
        let chunkSamples = chunkFrames * layout.count
        var offset = 0
        while offset < samples.count {
            let end = min(samples.count, offset + chunkSamples)
            try play(bridge.convert(UnsafeBufferPointer(rebasing: samples[offset..<end])), on: pcm)
            offset = end
        }
        statistics.samplesWritten += samples.count / layout.count
    }

    /// Plays what the resampler still holds, lets the device play out its buffer, and
    /// closes the PCM. Later writes throw; closing again does nothing.
    public func close() throws(DeviceError) {
        guard let pcm else { return }
        defer { self.pcm = nil }
        if failure == nil {
            try play(bridge.flush(), on: pcm)
            _ = snd_pcm_drain(pcm.handle)
        }
    }

    /// Writes converted device frames, recovering underruns and suspends.
    private func play(_ converted: UnsafeBufferPointer<Int16>, on pcm: ALSAPCM) throws(DeviceError) {
        let channels = deviceFormat.channels
        var frames = converted.count / channels
        var position = converted.baseAddress
        while frames > 0, let current = position {
            let result = snd_pcm_writei(pcm.handle, current, snd_pcm_uframes_t(frames))
            if result >= 0 {
                frames -= Int(result)
                position = current + Int(result) * channels
                statistics.deviceFramesWritten += Int(result)
                var delay = snd_pcm_sframes_t(0)
                if audible, snd_pcm_delay(pcm.handle, &delay) == 0 { queuedFrames = max(0, Int(delay)) }
                continue
            }
            switch Int32(-result) {
            case EINTR:
                continue
            case EAGAIN:
                _ = snd_pcm_wait(pcm.handle, 100)
            case EPIPE, ESTRPIPE:
                let status = snd_pcm_recover(pcm.handle, Int32(result), 1)
                guard status >= 0 else {
                    return try fail(ALSAStatus.error(status, device: name, doing: "recovering from an underrun"))
                }
                if result == -snd_pcm_sframes_t(EPIPE) { statistics.underruns += 1 } else { statistics.suspends += 1 }
            case ENODEV:
                return try fail(DeviceError(.disconnected, device: name, "the device went away: \(ALSAStatus.text(Int32(result)))"))
            default:
                return try fail(ALSAStatus.error(Int32(result), device: name, doing: "writing audio"))
            }
        }
    }

    private func fail(_ error: DeviceError) throws(DeviceError) {
        failure = error
        throw error
    }
}
