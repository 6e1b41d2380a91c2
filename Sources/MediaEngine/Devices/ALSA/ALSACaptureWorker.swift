import CALSA
#if canImport(Glibc)
import Glibc
#endif

/// The capture thread's side: blocking `snd_pcm_readi` of one period at a time,
/// conversion to 48 kHz frames, pacing, and recovery.
///
/// Owned by the capture thread alone once started; talks to the reader only through the
/// queue. Every buffer is allocated here, before the first read.
final class ALSACaptureWorker {
    private let pcm: ALSAPCM
    private let queue: ALSAFrameQueue
    private let bridge: ALSAFormatBridge
    private let format: ALSAStreamFormat
    private let frameDuration: Duration
    private let period: UnsafeMutableBufferPointer<Int16>
    /// 48 kHz samples waiting to fill a frame; at most one frame plus one converted period.
    private let pending: UnsafeMutableBufferPointer<Int16>
    private var pendingCount = 0
    /// Sources that never block in `readi` (the `file` plugin) are held to the wall clock;
    /// ones that block pace themselves and are left alone (see `noteReadDuration`).
    private var selfPaced: Bool
    private var blockingReads = 0
    private var instantReads = 0
    private var paceStart: Duration = .zero
    private var delivered = 0
    private var nextTimestamp: Duration = .zero

    init(pcm: ALSAPCM, queue: ALSAFrameQueue, bridge: ALSAFormatBridge, format: ALSAStreamFormat, frameDuration: Duration) {
        self.pcm = pcm
        self.queue = queue
        self.bridge = bridge
        self.format = format
        self.frameDuration = frameDuration
        period = .allocate(capacity: format.periodFrames * format.channels)
        period.initialize(repeating: 0)
        let convertedPeriod = format.periodFrames * AudioFrame.sampleRate / format.sampleRate + 1_024
        pending = .allocate(capacity: queue.frameSamples + convertedPeriod * bridge.outputChannels)
        pending.initialize(repeating: 0)
        // A PCM that ends on a sound card is clocked by it; only software PCMs need the
        // engine's clock from the start.
        selfPaced = pcm.card != nil
    }

    deinit {
        period.deallocate()
        pending.deallocate()
    }

    /// Captures until a stop is requested or the device fails; the outcome goes to the queue.
    func run() {
        paceStart = MonotonicClock.now()
        nextTimestamp = paceStart
        while !queue.isStopRequested {
            // The `file` plugin leaves the buffer untouched at the end of its file: clearing
            // it makes the end silence instead of the last period over and over.
            period.update(repeating: 0)
            let started = MonotonicClock.now()
            let result = period.withMemoryRebound(to: UInt8.self) {
                snd_pcm_readi(pcm.handle, $0.baseAddress, snd_pcm_uframes_t(format.periodFrames))
            }
            let frames: Int
            switch ALSACaptureWorker.classify(result, device: pcm.name) {
            case .frames(let count):
                frames = count
            case .retry:
                // EAGAIN only comes from a PCM that slipped into non-blocking mode: wait
                // for it rather than spin.
                if result == -snd_pcm_sframes_t(EAGAIN) { _ = snd_pcm_wait(pcm.handle, 100) }
                continue
            case .recover(let overrun):
                let status = snd_pcm_recover(pcm.handle, Int32(result), 1)
                guard status >= 0 else {
                    queue.finish(ALSAStatus.error(status, device: pcm.name, doing: "recovering from \(overrun ? "an overrun" : "a suspend")"))
                    return
                }
                queue.record { overrun ? ($0.overruns += 1) : ($0.suspends += 1) }
                // Audio was lost: the next frame's first samples are older than `now` by
                // what is pending, and later ones follow on from now.
                nextTimestamp = max(nextTimestamp, MonotonicClock.now() - AudioFrame.duration(samplesPerChannel: pendingCount / bridge.outputChannels))
                continue
            case .fatal(let error):
                queue.finish(error)
                return
            }
            if frames == 0 {
                // Blocking reads do not return 0; if a plugin does, do not spin.
                guard queue.wait(until: MonotonicClock.now() + .milliseconds(1)) else { break }
                continue
            }
            noteReadDuration(MonotonicClock.now() - started)
            let converted = bridge.convert(UnsafeBufferPointer(rebasing: period[0..<frames * format.channels]))
            guard deliver(converted) else { break }
        }
        queue.finish(nil)
    }

    /// Decides who clocks the source from how long `readi` took.
    ///
    /// A source that blocks for half a period or more, three reads running, is clocked by
    /// its hardware; pacing it too would let its clock and CLOCK_MONOTONIC drift apart
    /// until its buffer overruns (100 ppm fills a few periods in minutes). A source that
    /// answers at once more often in a row than its buffer could hold is not clocked by
    /// anything (a `file` PCM that looked slow while its disk was), and pacing resumes
    /// from now.
    private func noteReadDuration(_ elapsed: Duration) {
        let devicePeriod = Duration.nanoseconds(Int64(format.periodFrames) * 1_000_000_000 / Int64(format.sampleRate))
        if elapsed * 2 >= devicePeriod {
            blockingReads += 1
            instantReads = 0
        } else {
            instantReads += 1
            blockingReads = 0
        }
        if !selfPaced && blockingReads >= 3 {
            selfPaced = true
        } else if selfPaced && instantReads > format.bufferFrames / max(1, format.periodFrames) + 1 {
            selfPaced = false
            paceStart = MonotonicClock.now() - frameDuration * delivered
        }
    }

    /// Cuts converted audio into frames and queues them, each no earlier than its place
    /// on the wall clock unless the source paces itself.
    /// - Returns: false when a stop was requested during a pacing wait.
    private func deliver(_ converted: UnsafeBufferPointer<Int16>) -> Bool {
        var offset = 0
        let frameSamples = queue.frameSamples
        while offset < converted.count {
            let take = min(converted.count - offset, frameSamples - pendingCount)
            _ = UnsafeMutableBufferPointer(rebasing: pending[pendingCount..<pendingCount + take])
                .update(fromContentsOf: converted[offset..<offset + take])
            pendingCount += take
            offset += take
            guard pendingCount == frameSamples else { continue }
            if !selfPaced, !queue.wait(until: paceStart + frameDuration * delivered) { return false }
            queue.push(UnsafeBufferPointer(rebasing: pending[0..<frameSamples]), timestamp: nextTimestamp)
            delivered += 1
            nextTimestamp += frameDuration
            pendingCount = 0
        }
        return true
    }

    /// What to do with a `snd_pcm_readi` result.
    enum ReadOutcome: Equatable {
        /// That many frames arrived.
        case frames(Int)
        /// Interrupted or not ready: read again.
        case retry
        /// Overrun (true) or suspend (false): `snd_pcm_recover`, count, go on.
        case recover(overrun: Bool)
        /// The stream is over.
        case fatal(DeviceError)
    }

    /// Sorts a `snd_pcm_readi` result: EPIPE and ESTRPIPE recover, EINTR and EAGAIN
    /// retry, ENODEV means the device went away, anything else ends the stream as an
    /// I/O failure naming the device.
    static func classify(_ result: snd_pcm_sframes_t, device: String) -> ReadOutcome {
        guard result < 0 else { return .frames(Int(result)) }
        switch Int32(-result) {
        case EINTR, EAGAIN: return .retry
        case EPIPE: return .recover(overrun: true)
        case ESTRPIPE: return .recover(overrun: false)
        case ENODEV: return .fatal(DeviceError(.disconnected, device: device, "the device went away: \(ALSAStatus.text(Int32(result)))"))
        default: return .fatal(ALSAStatus.error(Int32(result), device: device, doing: "reading audio"))
        }
    }
}
