import CALSA
#if canImport(Glibc)
import Glibc
#endif

/// What a PCM agreed to after negotiation: the device side of the edge converter.
public struct ALSAStreamFormat: Sendable, Hashable, Codable {
    /// Frames per second at the device (48 000 unless the device cannot).
    public var sampleRate: Int
    /// Interleaved channels at the device.
    public var channels: Int
    /// Frames per period (one engine frame's worth at `sampleRate`, or ALSA's nearest).
    public var periodFrames: Int
    /// Frames the device buffer holds.
    public var bufferFrames: Int

    /// Creates a format; negotiation fills these from the PCM's hardware parameters.
    public init(sampleRate: Int, channels: Int, periodFrames: Int, bufferFrames: Int) {
        self.sampleRate = sampleRate
        self.channels = channels
        self.periodFrames = periodFrames
        self.bufferFrames = bufferFrames
    }
}

/// Owns one open `snd_pcm_t`. Opening maps ALSA's negative errno results to
/// `DeviceError`s naming the PCM; `deinit` closes the handle.
///
/// Not thread-safe: one thread drives the PCM at a time.
final class ALSAPCM {
    /// alsa-lib prints its own error lines to stderr ("ALSA lib ... Unknown PCM"); the
    /// engine reports every failure as a typed error instead, so those lines are muted
    /// once per process before the first use.
    private static let quiet: Void = CALSA_silence_library_errors()

    static func quietLibrary() { _ = quiet }

    let handle: OpaquePointer
    /// The PCM as the user named it.
    let name: String
    let stream: snd_pcm_stream_t

    /// Opens `name` from the global configuration (alsa.conf, asound.conf, `~/.asoundrc`,
    /// or the files `ALSA_CONFIG_PATH` names), or from `configuration` text alone.
    ///
    /// Opened non-blocking so a device another program holds answers EBUSY instead of
    /// waiting, then switched to blocking I/O.
    init(name: String, stream: snd_pcm_stream_t, configuration: String?) throws(DeviceError) {
        ALSAPCM.quietLibrary()
        var pcm: OpaquePointer?
        var status: Int32
        if let configuration {
            let top = try ALSAPCM.load(configuration, device: name)
            defer { snd_config_delete(top) }
            status = snd_pcm_open_lconf(&pcm, name, stream, SND_PCM_NONBLOCK, top)
        } else {
            status = snd_pcm_open(&pcm, name, stream, SND_PCM_NONBLOCK)
        }
        let direction = stream == SND_PCM_STREAM_CAPTURE ? "capture" : "playback"
        guard status >= 0, let pcm else {
            throw ALSAStatus.openError(status, device: name, direction: direction)
        }
        status = snd_pcm_nonblock(pcm, 0)
        guard status >= 0 else {
            snd_pcm_close(pcm)
            throw ALSAStatus.error(status, device: name, doing: "switching to blocking I/O")
        }
        self.handle = pcm
        self.name = name
        self.stream = stream
    }

    deinit { snd_pcm_close(handle) }

    /// Parses configuration text the way alsa.conf is parsed.
    private static func load(_ text: String, device: String) throws(DeviceError) -> OpaquePointer {
        var top: OpaquePointer?
        var status = snd_config_top(&top)
        guard status >= 0, let top else { throw ALSAStatus.error(status, device: device, doing: "creating a configuration") }
        var input: OpaquePointer?
        status = text.withCString { snd_input_buffer_open(&input, $0, strlen($0)) }
        guard status >= 0, let input else {
            snd_config_delete(top)
            throw ALSAStatus.error(status, device: device, doing: "reading the ALSA configuration text")
        }
        status = snd_config_load(top, input)
        snd_input_close(input)
        guard status >= 0 else {
            snd_config_delete(top)
            throw DeviceError(.ioFailed, device: device,
                              "the ALSA configuration text does not parse: \(ALSAStatus.text(status)) (ALSA printed the line to stderr)")
        }
        return top
    }

    /// Negotiates interleaved S16_LE at 48 kHz (or `preferredRate`) with `channels`,
    /// taking what the device offers when it cannot: the caller converts at the edge.
    ///
    /// ALSA's own rate conversion is switched off (`rate_resample = 0`), so a `plughw:`
    /// device reports its real rate and libsoxr does the conversion instead of ALSA's
    /// linear interpolator.
    /// - Parameters:
    ///   - startThreshold: playback starts once this many periods are queued (ignored for
    ///     capture, which starts on the first read).
    func negotiate(channels: Int, preferredRate: Int, periodDuration: Duration, periods: Int,
                   startThreshold: Int = 1) throws(DeviceError) -> ALSAStreamFormat {
        var hw: OpaquePointer?
        guard snd_pcm_hw_params_malloc(&hw) >= 0, let hw else {
            throw DeviceError(.ioFailed, device: name, "out of memory for hardware parameters")
        }
        defer { snd_pcm_hw_params_free(hw) }
        var status = snd_pcm_hw_params_any(handle, hw)
        guard status >= 0 else { throw ALSAStatus.error(status, device: name, doing: "reading the hardware parameters") }
        _ = snd_pcm_hw_params_set_rate_resample(handle, hw, 0)

        status = snd_pcm_hw_params_set_access(handle, hw, SND_PCM_ACCESS_RW_INTERLEAVED)
        guard status >= 0 else {
            throw DeviceError(.unsupportedFormat, device: name,
                              "no interleaved read/write access (\(ALSAStatus.text(status))); \(plugAdvice)")
        }
        status = snd_pcm_hw_params_set_format(handle, hw, SND_PCM_FORMAT_S16_LE)
        guard status >= 0 else {
            throw DeviceError(.unsupportedFormat, device: name,
                              "cannot do signed 16-bit little-endian samples (\(ALSAStatus.text(status))); \(plugAdvice)")
        }
        var channelCount = UInt32(channels)
        status = snd_pcm_hw_params_set_channels_near(handle, hw, &channelCount)
        guard status >= 0, channelCount >= 1 else {
            throw DeviceError(.unsupportedFormat, device: name, "offers no channel count near \(channels) (\(ALSAStatus.text(status)))")
        }
        var rate = UInt32(preferredRate)
        status = snd_pcm_hw_params_set_rate_near(handle, hw, &rate, nil)
        guard status >= 0, rate >= 1_000 else {
            throw DeviceError(.unsupportedFormat, device: name, "offers no sample rate near \(preferredRate) Hz (\(ALSAStatus.text(status)))")
        }
        let nanoseconds = periodDuration.components.seconds * 1_000_000_000 + periodDuration.components.attoseconds / 1_000_000_000
        var period = snd_pcm_uframes_t(max(1, Int64(rate) * nanoseconds / 1_000_000_000))
        var direction: Int32 = 0
        status = snd_pcm_hw_params_set_period_size_near(handle, hw, &period, &direction)
        guard status >= 0 else { throw ALSAStatus.error(status, device: name, doing: "setting a period of \(period) frames") }
        var buffer = period * snd_pcm_uframes_t(max(2, periods))
        status = snd_pcm_hw_params_set_buffer_size_near(handle, hw, &buffer)
        guard status >= 0 else { throw ALSAStatus.error(status, device: name, doing: "setting a buffer of \(buffer) frames") }
        status = snd_pcm_hw_params(handle, hw)
        guard status >= 0 else { throw ALSAStatus.error(status, device: name, doing: "applying the hardware parameters") }
        _ = snd_pcm_hw_params_get_period_size(hw, &period, &direction)
        _ = snd_pcm_hw_params_get_buffer_size(hw, &buffer)

        try applySoftwareParameters(period: period, buffer: buffer, startThreshold: startThreshold)
        return ALSAStreamFormat(sampleRate: Int(rate), channels: Int(channelCount), periodFrames: Int(period), bufferFrames: Int(buffer))
    }

    private func applySoftwareParameters(period: snd_pcm_uframes_t, buffer: snd_pcm_uframes_t, startThreshold: Int) throws(DeviceError) {
        var sw: OpaquePointer?
        guard snd_pcm_sw_params_malloc(&sw) >= 0, let sw else {
            throw DeviceError(.ioFailed, device: name, "out of memory for software parameters")
        }
        defer { snd_pcm_sw_params_free(sw) }
        var status = snd_pcm_sw_params_current(handle, sw)
        guard status >= 0 else { throw ALSAStatus.error(status, device: name, doing: "reading the software parameters") }
        _ = snd_pcm_sw_params_set_avail_min(handle, sw, period)
        if stream == SND_PCM_STREAM_PLAYBACK {
            // Starting on the first write would leave one period between the device and an
            // underrun; waiting for a fuller buffer gives the writer slack.
            _ = snd_pcm_sw_params_set_start_threshold(handle, sw, min(buffer, period * snd_pcm_uframes_t(max(1, startThreshold))))
        }
        status = snd_pcm_sw_params(handle, sw)
        guard status >= 0 else { throw ALSAStatus.error(status, device: name, doing: "applying the software parameters") }
    }

    /// The card this PCM ends on, or nil for software-only PCMs (`null`, `file` over `null`).
    var card: Int? {
        var info: OpaquePointer?
        guard snd_pcm_info_malloc(&info) >= 0, let info else { return nil }
        defer { snd_pcm_info_free(info) }
        guard snd_pcm_info(handle, info) >= 0 else { return nil }
        let card = snd_pcm_info_get_card(info)
        return card >= 0 ? Int(card) : nil
    }

    private var plugAdvice: String {
        name.hasPrefix("hw:") ? "open it as plug\(name) so ALSA converts the format"
            : "open it through plughw: (or a `type plug` PCM) so ALSA converts the format"
    }
}

/// The frame and period lengths the engine runs (DESIGN: 10, 20, 40 or 60 ms).
enum ALSAFrameLength {
    /// `duration` in whole milliseconds when it is one of the lengths, else nil.
    static func milliseconds(_ duration: Duration) -> Int? {
        let (seconds, attoseconds) = duration.components
        let milliseconds = Int(seconds * 1_000 + attoseconds / 1_000_000_000_000_000)
        guard [10, 20, 40, 60].contains(milliseconds), duration == .milliseconds(milliseconds) else { return nil }
        return milliseconds
    }
}

/// ALSA's negative errno results as `DeviceError`s.
enum ALSAStatus {
    /// snd_strerror's text and the number, as in "No such file or directory (-2)".
    static func text(_ status: Int32) -> String {
        "\(String(cString: snd_strerror(status))) (\(status))"
    }

    /// An error from opening a PCM: missing names and devices are `notFound`.
    static func openError(_ status: Int32, device: String, direction: String) -> DeviceError {
        let code: DeviceError.Code
        switch -status {
        case ENOENT, ENODEV, ENXIO: code = .notFound
        case EBUSY: code = .busy
        case EACCES, EPERM: code = .permissionDenied
        default: code = .ioFailed
        }
        return DeviceError(code, device: device, "cannot open for \(direction): \(text(status))")
    }

    /// An error from a call on an open PCM. A device that went away (ENODEV) is
    /// `disconnected`; the rest are `ioFailed`.
    static func error(_ status: Int32, device: String, doing action: String) -> DeviceError {
        let code: DeviceError.Code
        switch -status {
        case ENODEV: code = .disconnected
        case EBUSY: code = .busy
        case EACCES, EPERM: code = .permissionDenied
        default: code = .ioFailed
        }
        return DeviceError(code, device: device, "\(action) failed: \(text(status))")
    }
}
