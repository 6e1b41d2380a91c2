import Foundation
import CSndFile

/// Reads and writes audio files through libsndfile.
///
/// Reading accepts any container and sample format libsndfile knows (WAV, FLAC, Ogg, ...)
/// with one or two channels at 48 kHz; samples are converted to Int16 by libsndfile.
/// Other rates are refused with `unsupportedSampleRate` until resampling lands.
public enum AudioFile {
    /// Reads a whole file into one frame, timestamped zero.
    /// - Throws: `MediaFileError` naming the file: `cannotOpen`, `corrupt`,
    ///   `unsupportedFormat` (channel count) or `unsupportedSampleRate`.
    public static func read(path: String) throws(MediaFileError) -> AudioFrame {
        try read(path: path, resampling: false)
    }

    /// Reads a whole file; with `resampling`, any sample rate is converted to 48 kHz with
    /// libsoxr (very high quality) instead of refused.
    public static func read(path: String, resampling: Bool) throws(MediaFileError) -> AudioFrame {
        let file = try SoundFile(path: path, mode: Int32(SFM_READ))
        let info = file.info
        guard info.samplerate == Int32(AudioFrame.sampleRate) || (resampling && info.samplerate > 0 && info.samplerate <= 384_000) else {
            throw MediaFileError(.unsupportedSampleRate, path: path,
                                 "sample rate is \(info.samplerate) Hz; the engine takes 48000 Hz")
        }
        guard let layout = ChannelLayout(rawValue: Int(info.channels)) else {
            throw MediaFileError(.unsupportedFormat, path: path,
                                 "has \(info.channels) channels; the engine takes mono or stereo")
        }
        // A hostile header can claim billions of frames; read in blocks instead of trusting it.
        var samples: [Int16] = []
        if info.frames > 0 && info.frames < 48_000 * 3_600 { samples.reserveCapacity(Int(info.frames) * layout.count) }
        let blockFrames = 4_096
        var block = [Int16](repeating: 0, count: blockFrames * layout.count)
        while true {
            let count = block.withUnsafeMutableBufferPointer { buffer in
                sf_readf_short(file.handle, buffer.baseAddress, sf_count_t(blockFrames))
            }
            if count < 0 || sf_error(file.handle) != Int32(SF_ERR_NO_ERROR) {
                throw MediaFileError(.corrupt, path: path, "read failed: \(file.lastError)")
            }
            if count == 0 { break }
            samples.append(contentsOf: block[0..<(Int(count) * layout.count)])
        }
        guard info.samplerate != Int32(AudioFrame.sampleRate) else { return AudioFrame(layout: layout, samples: samples) }
        do {
            let resampler = try Resampler(inputRate: Int(info.samplerate), layout: layout)
            let capacity = samples.count * AudioFrame.sampleRate / Int(info.samplerate) + 4_096 * layout.count
            var output = [Int16](repeating: 0, count: capacity)
            let produced = samples.withUnsafeBufferPointer { input in
                output.withUnsafeMutableBufferPointer { out in
                    // The resampler counts samples per channel.
                    let first = resampler.process(input, into: out) * layout.count
                    return first + resampler.flush(into: UnsafeMutableBufferPointer(rebasing: out[first...])) * layout.count
                }
            }
            return AudioFrame(layout: layout, samples: Array(output[0..<produced]))
        } catch {
            throw MediaFileError(.unsupportedSampleRate, path: path, "cannot resample \(info.samplerate) Hz: \(error)")
        }
    }

    /// Writes `frame` as 16-bit PCM WAV at 48 kHz, replacing any file at `path`.
    /// - Throws: `MediaFileError` with `cannotOpen` or `writeFailed`.
    public static func writeWAV(_ frame: AudioFrame, path: String) throws(MediaFileError) {
        var info = SF_INFO()
        info.samplerate = Int32(AudioFrame.sampleRate)
        info.channels = Int32(frame.layout.count)
        info.format = Int32(SF_FORMAT_WAV | SF_FORMAT_PCM_16)
        let file = try SoundFile(path: path, mode: Int32(SFM_WRITE), info: info)
        let written = frame.samples.withUnsafeBufferPointer { buffer in
            sf_writef_short(file.handle, buffer.baseAddress, sf_count_t(frame.samplesPerChannel))
        }
        guard written == sf_count_t(frame.samplesPerChannel) else {
            throw MediaFileError(.writeFailed, path: path, "wrote \(written) of \(frame.samplesPerChannel) frames: \(file.lastError)")
        }
        guard sf_close(file.release()) == 0 else {
            throw MediaFileError(.writeFailed, path: path, "closing failed")
        }
    }
}

/// Writes 16-bit PCM WAV incrementally, so a recording survives up to the last block
/// written even if the process dies before `close()` (the header's sizes are fixed up at
/// close; readers such as libsndfile and ffmpeg cope with the sizes being stale).
public final class WAVWriter {
    public let path: String
    public let layout: ChannelLayout
    private var file: SoundFile?
    /// Samples per channel written so far.
    public private(set) var samplesWritten = 0

    /// The file types written: 16-bit PCM WAV, or Opus in Ogg (libsndfile's libopus encoder).
    public enum Container: Sendable, Hashable {
        case wav
        case oggOpus

        /// The container a path's extension names: `.wav`, or `.ogg`/`.opus`; nil otherwise.
        public init?(path: String) {
            switch (path as NSString).pathExtension.lowercased() {
            case "wav": self = .wav
            case "ogg", "opus": self = .oggOpus
            default: return nil
            }
        }
    }

    /// Creates (or replaces) `path`.
    public init(path: String, layout: ChannelLayout, container: Container = .wav) throws(MediaFileError) {
        var info = SF_INFO()
        info.samplerate = Int32(AudioFrame.sampleRate)
        info.channels = Int32(layout.count)
        info.format = container == .wav ? Int32(SF_FORMAT_WAV | SF_FORMAT_PCM_16) : Int32(SF_FORMAT_OGG | SF_FORMAT_OPUS)
        self.path = path
        self.layout = layout
        file = try SoundFile(path: path, mode: Int32(SFM_WRITE), info: info)
    }

    /// Appends interleaved samples.
    public func write(_ samples: UnsafeBufferPointer<Int16>) throws(MediaFileError) {
        guard let file, let handle = file.handle else { throw MediaFileError(.writeFailed, path: path, "file is closed") }
        let frames = samples.count / layout.count
        let written = sf_writef_short(handle, samples.baseAddress, sf_count_t(frames))
        guard written == sf_count_t(frames) else {
            throw MediaFileError(.writeFailed, path: path, "wrote \(written) of \(frames) frames: \(file.lastError)")
        }
        samplesWritten += frames
    }

    /// Fixes up the header and closes the file.
    public func close() throws(MediaFileError) {
        guard let file else { return }
        self.file = nil
        guard sf_close(file.release()) == 0 else { throw MediaFileError(.writeFailed, path: path, "closing failed") }
    }
}

/// Owns one SNDFILE handle.
private final class SoundFile {
    private(set) var handle: OpaquePointer?
    let info: SF_INFO

    init(path: String, mode: Int32, info: SF_INFO = SF_INFO()) throws(MediaFileError) {
        var info = info
        guard let handle = sf_open(path, mode, &info) else {
            let reason = String(cString: sf_strerror(nil))
            let code: MediaFileError.Code
            switch Int(sf_error(nil)) {
            case SF_ERR_UNRECOGNISED_FORMAT, SF_ERR_MALFORMED_FILE, SF_ERR_UNSUPPORTED_ENCODING: code = .corrupt
            default: code = .cannotOpen
            }
            throw MediaFileError(code, path: path, reason)
        }
        self.handle = handle
        self.info = info
    }

    var lastError: String { String(cString: sf_strerror(handle)) }

    /// Hands the handle to the caller, who closes it.
    func release() -> OpaquePointer? {
        defer { handle = nil }
        return handle
    }

    deinit { if let handle { sf_close(handle) } }
}
