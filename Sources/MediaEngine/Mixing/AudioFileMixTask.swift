import Foundation

/// A mix failure: a bad file or a value out of range, named.
public struct MixError: Error, Sendable, Hashable, CustomStringConvertible {
    public let message: String
    public init(_ message: String) { self.message = message }
    public var description: String { message }
}

/// Music or a prompt mixed into a call (NIM's audio-file mix task): the file is decoded
/// once (libsndfile: WAV, FLAC, Ogg Vorbis/Opus, MP3 where the library has it) and
/// resampled to 48 kHz with libsoxr, then served 20 ms at a time to the sender, which
/// mixes it into what is sent at `sendVolume` (and local playback at `playbackVolume`).
///
/// `numberOfLoops`: negative repeats forever, n >= 0 plays n + 1 times; setting it restarts
/// the count. Volumes are 0...1 and change live. `pause` keeps the position, `resume`
/// goes on from it. Thread-safe: the app changes it while the sending thread reads it.
public final class AudioFileMixTask: Sendable {
    public let fileURL: URL
    /// The decoded audio, mono, 48 kHz.
    let audio: [Int16]
    /// The longest file taken: 30 minutes at 48 kHz.
    public static let maximumSamples = 48_000 * 60 * 30

    struct State {
        var position = 0
        var playsDone = 0
        var numberOfLoops = 0
        var sendVolume = 1.0
        var playbackVolume = 1.0
        var paused = false
        var finished = false
    }

    private let state = Locked(State())

    /// Decodes the file.
    /// - Throws: `MixError` naming the file: missing, unreadable, corrupt, unsupported,
    ///   empty, or longer than 30 minutes.
    public init(fileURL: URL) throws(MixError) {
        self.fileURL = fileURL
        let path = fileURL.path
        let decoded: AudioFrame
        do {
            decoded = try AudioFile.read(path: path, resampling: true)
        } catch {
            throw MixError("mix file \(error)")
        }
        guard !decoded.samples.isEmpty else { throw MixError("mix file \(path): has no audio") }
        var mono = decoded.samples
        if decoded.layout != .mono {
            mono = [Int16](repeating: 0, count: decoded.samplesPerChannel)
            decoded.samples.withUnsafeBufferPointer { samples in
                mono.withUnsafeMutableBufferPointer { AudioMixer.remix(samples, channels: decoded.layout.count, into: $0, channels: 1) }
            }
        }
        guard mono.count <= Self.maximumSamples else { throw MixError("mix file \(path): longer than 30 minutes") }
        audio = mono
    }

    /// The file's length.
    public var duration: Duration { .microseconds(Int64(audio.count) * 1_000_000 / 48_000) }

    public var numberOfLoops: Int {
        get { state.withLock { $0.numberOfLoops } }
        set {
            state.withLock { state in
                state.numberOfLoops = newValue
                state.playsDone = 0
            }
        }
    }

    public var sendVolume: Double { state.withLock { $0.sendVolume } }
    public var playbackVolume: Double { state.withLock { $0.playbackVolume } }

    /// Changes the volumes live (nil leaves one as it is).
    /// - Throws: `MixError` for a volume outside 0...1.
    public func setVolumes(send: Double? = nil, playback: Double? = nil) throws(MixError) {
        for (name, value) in [("sendVolume", send), ("playbackVolume", playback)] {
            if let value, !(0...1).contains(value) { throw MixError("\(name) \(value) is outside 0...1") }
        }
        state.withLock { state in
            if let send { state.sendVolume = send }
            if let playback { state.playbackVolume = playback }
        }
    }

    public func pause() { state.withLock { $0.paused = true } }
    public func resume() { state.withLock { $0.paused = false } }
    public var isPaused: Bool { state.withLock { $0.paused } }
    public var isFinished: Bool { state.withLock { $0.finished } }
    /// Samples played so far in the current pass.
    public var position: Int { state.withLock { $0.position } }

    /// Ends the task now (as `stopAudioMix` does).
    public func stop() { state.withLock { $0.finished = true } }

    /// The next `output.count` samples (mono) at unit gain, silence when paused or done.
    /// - Returns: The volumes to apply, and true exactly once: when the last pass ended here.
    func pull(into output: UnsafeMutableBufferPointer<Int16>) -> (send: Double, playback: Double, completed: Bool) {
        state.withLock { state in
            var written = 0
            var completed = false
            if !state.paused && !state.finished {
                while written < output.count {
                    let take = min(output.count - written, audio.count - state.position)
                    for index in 0..<take { output[written + index] = audio[state.position + index] }
                    written += take
                    state.position += take
                    guard state.position >= audio.count else { continue }
                    state.position = 0
                    state.playsDone += 1
                    if state.numberOfLoops >= 0 && state.playsDone > state.numberOfLoops {
                        state.finished = true
                        completed = true
                        break
                    }
                }
            }
            for index in written..<output.count { output[index] = 0 }
            return (state.sendVolume, state.playbackVolume, completed)
        }
    }
}
