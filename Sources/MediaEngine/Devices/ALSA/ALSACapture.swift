import CALSA
import Synchronization
#if canImport(Glibc)
import Glibc
#endif

/// Captures 48 kHz frames from an ALSA PCM on a dedicated thread.
///
/// The PCM is asked for interleaved S16_LE at 48 kHz in the requested layout; a device
/// that offers another rate or channel count is captured as it is and converted at the
/// edge (libsoxr for the rate, averaging or copying for the channels). A device that
/// cannot do S16 at all is refused with `DeviceError.unsupportedFormat`: open it through
/// `plughw:` and ALSA converts the format.
///
/// The capture thread reads one period (one frame's worth) at a time with a blocking
/// `snd_pcm_readi` into buffers allocated at open, and queues finished frames, stamped
/// with CLOCK_MONOTONIC, in a small ring; when the reader falls behind the oldest frame
/// is dropped and counted. Software PCMs that do not block (ALSA's `file` plugin reads its
/// file as fast as it is asked) are held to the wall clock: frame n is not queued before
/// start + n × frame duration. Overruns and suspends are recovered and counted; a device
/// that goes away ends the stream, and `read` throws once the queued frames are read.
///
/// ## Naming PCMs from your own configuration
/// `name` is looked up in ALSA's global configuration (alsa.conf and the files it
/// includes: `/etc/asound.conf`, `~/.asoundrc`). To use a PCM defined in another file,
/// start the process with `ALSA_CONFIG_PATH` naming that file, for example
/// `ALSA_CONFIG_PATH=$PWD/tone.conf mediaengine ...`. The file *replaces* alsa.conf, so
/// it must define everything it uses, the `file` plugin's slave included:
///
///     pcm.tone {
///         type file
///         slave { pcm { type null } }
///         file "/dev/null"
///         infile "/path/to/tone-48k-s16le-mono.raw"
///         format "raw"
///     }
///
/// To keep the system's PCMs as well, list both files, separated by a colon:
/// `ALSA_CONFIG_PATH=/usr/share/alsa/alsa.conf:$PWD/tone.conf`. A program can instead
/// pass the text itself as `configuration`.
///
/// Thread-safe: `read` is meant for one reader; `stop`, `statistics` may be called from
/// any thread.
public final class ALSACapture: AudioSource, Sendable {
    /// How to open and run the capture.
    public struct Options: Sendable, Hashable {
        /// Mono or stereo frames (the device may differ; it is remixed).
        public var layout: ChannelLayout
        /// Frame and period length: 10, 20, 40 or 60 ms.
        public var frameDuration: Duration
        /// Periods in the device buffer.
        public var periodsPerBuffer: Int
        /// Frames waiting for the reader before the oldest is dropped.
        public var queueCapacity: Int
        /// How long `read` waits for a frame before it returns silence (counted in
        /// `Statistics.silentFrames`). Nil: two frame durations. The first frame may take
        /// up to half a second while the device starts.
        public var readTimeout: Duration?
        /// The rate to ask the device for; nil asks for 48 kHz. Anything else is
        /// resampled to 48 kHz with libsoxr. Useful for `plughw:` devices whose native
        /// rate is not 48 kHz, and for software PCMs that would accept any rate.
        public var deviceRate: Int?

        /// Mono 20 ms frames from a 4-period buffer, 5 frames of queue, 48 kHz device rate.
        public init(layout: ChannelLayout = .mono, frameDuration: Duration = .milliseconds(20), periodsPerBuffer: Int = 4,
                    queueCapacity: Int = 5, readTimeout: Duration? = nil, deviceRate: Int? = nil) {
            self.layout = layout
            self.frameDuration = frameDuration
            self.periodsPerBuffer = periodsPerBuffer
            self.queueCapacity = queueCapacity
            self.readTimeout = readTimeout
            self.deviceRate = deviceRate
        }
    }

    /// Counters since open.
    public struct Statistics: Sendable, Hashable, Codable {
        /// Frames the capture thread queued.
        public var framesCaptured = 0
        /// Frames dropped because the reader was `queueCapacity` frames behind.
        public var framesDropped = 0
        /// Device overruns (EPIPE) recovered.
        public var overruns = 0
        /// Suspends (ESTRPIPE) recovered.
        public var suspends = 0
        /// Frames `read` filled with silence because none arrived in time.
        public var silentFrames = 0

        /// All zero.
        public init() {}
    }

    /// The layout of every frame `read` delivers.
    public let layout: ChannelLayout
    /// The PCM as the caller named it.
    public let name: String
    /// The options the capture was opened with.
    public let options: Options
    /// What the device agreed to (rate, channels, period, buffer).
    public let deviceFormat: ALSAStreamFormat
    /// Samples per channel in each frame (960 for 20 ms).
    public let samplesPerFrame: Int
    private let queue: ALSAFrameQueue
    private let thread: JoinableThread

    /// Opens `name` and starts capturing.
    /// - Parameters:
    ///   - name: an ALSA PCM name (`default`, `hw:1,0`, `plughw:1,0`, a name from
    ///     asound.conf or from `configuration`).
    ///   - options: layout, frame length, buffering and the device rate.
    ///   - configuration: ALSA configuration text to look `name` up in instead of the
    ///     global configuration (as in asound.conf; it replaces alsa.conf, so define
    ///     every PCM it uses inline).
    /// - Throws: `DeviceError`: `notFound` for an unknown PCM or device, `busy`,
    ///   `permissionDenied`, `unsupportedFormat` (no S16, impossible options),
    ///   `ioFailed` for the rest, including configuration text that does not parse.
    public init(name: String, options: Options = Options(), configuration: String? = nil) throws(DeviceError) {
        guard let milliseconds = ALSAFrameLength.milliseconds(options.frameDuration) else {
            throw DeviceError(.unsupportedFormat, device: name, "frames of \(options.frameDuration) are not one of 10, 20, 40 or 60 ms")
        }
        guard (2...32).contains(options.periodsPerBuffer), (1...1_000).contains(options.queueCapacity) else {
            throw DeviceError(.unsupportedFormat, device: name,
                              "\(options.periodsPerBuffer) periods per buffer (2 to 32) and a queue of \(options.queueCapacity) frames (1 to 1000) are not both possible")
        }
        if let rate = options.deviceRate, !(1_000...768_000).contains(rate) {
            throw DeviceError(.unsupportedFormat, device: name, "a device rate of \(rate) Hz is outside 1000 to 768000 Hz")
        }
        let pcm = try ALSAPCM(name: name, stream: SND_PCM_STREAM_CAPTURE, configuration: configuration)
        let format = try pcm.negotiate(channels: options.layout.count, preferredRate: options.deviceRate ?? AudioFrame.sampleRate,
                                       periodDuration: options.frameDuration, periods: options.periodsPerBuffer)
        let bridge: ALSAFormatBridge
        do {
            bridge = try ALSAFormatBridge(inputRate: format.sampleRate, inputChannels: format.channels,
                                          outputRate: AudioFrame.sampleRate, outputChannels: options.layout.count,
                                          maximumInputFrames: format.periodFrames)
        } catch {
            throw DeviceError(error.code, device: name, "the device's \(format.channels) channels at \(format.sampleRate) Hz: \(error.message)")
        }
        let samplesPerFrame = AudioFrame.sampleRate * milliseconds / 1_000
        let queue = ALSAFrameQueue(frameSamples: samplesPerFrame * options.layout.count, capacity: options.queueCapacity,
                                   frameDuration: options.frameDuration)
        let worker = ALSACaptureWorker(pcm: pcm, queue: queue, bridge: bridge, format: format, frameDuration: options.frameDuration)
        // The worker moves to the thread, which alone touches it from now on; it releases the
        // PCM as it ends.
        do throws(JoinableThread.StartError) {
            self.thread = try JoinableThread(name: "alsa capture") { worker.run() }
        } catch {
            throw DeviceError(.ioFailed, device: name, "cannot start the alsa-capture thread: \(error)")
        }
        self.layout = options.layout
        self.name = name
        self.options = options
        self.deviceFormat = format
        self.samplesPerFrame = samplesPerFrame
        self.queue = queue
    }

    deinit { stop() }

    /// The capture time of the frame read last, ns on CLOCK_MONOTONIC (-1 before the first).
    private let lastRead = Atomic<Int64>(-1)

    /// Fills `frame` with the next captured frame and its capture time (CLOCK_MONOTONIC).
    ///
    /// Waits up to `Options.readTimeout` for it; when none comes the frame is silence,
    /// stamped one frame after the last, and counted in `Statistics.silentFrames`.
    /// - Returns: false once the capture was stopped and every queued frame was read.
    /// - Throws: `DeviceError.unsupportedFormat` when `frame` is not `samplesPerFrame`
    ///   samples per channel in `layout`; the device's `disconnected` or `ioFailed` error
    ///   once the stream has failed and the frames captured before were read.
    public func read(into frame: inout AudioFrame) throws(DeviceError) -> Bool {
        guard frame.layout == layout, frame.samples.count == samplesPerFrame * layout.count else {
            throw DeviceError(.unsupportedFormat, device: name,
                              "read asks for \(frame.samplesPerChannel) samples per channel in \(frame.layout); this capture delivers \(samplesPerFrame) (\(options.frameDuration)) in \(layout)")
        }
        let timeout = options.readTimeout ?? options.frameDuration * 2
        let outcome = frame.samples.withUnsafeMutableBufferPointer {
            queue.pop(into: $0, timeout: timeout, firstTimeout: .milliseconds(500))
        }
        switch outcome {
        case .frame(let timestamp), .silence(let timestamp):
            frame.timestamp = timestamp
            let (seconds, attoseconds) = timestamp.components
            lastRead.store(seconds * 1_000_000_000 + attoseconds / 1_000_000_000, ordering: .relaxed)
            return true
        case .stopped:
            return false
        case .failed(let error):
            throw error
        }
    }

    /// Stops the capture thread and closes the PCM. Frames already queued can still be
    /// read; then `read` returns false. Safe to call more than once and from any thread.
    public func stop() {
        queue.requestStop()
        thread.join()
    }

    /// Counters so far.
    public var statistics: Statistics { queue.statistics }

    /// How long ago the frame just read began: its capture time (CLOCK_MONOTONIC, stamped
    /// as the device handed it over) to now.
    public var captureDelay: Duration? {
        let last = lastRead.load(ordering: .relaxed)
        guard last >= 0 else { return .zero }
        return max(.zero, MonotonicClock.now() - .nanoseconds(last))
    }
}
