import Foundation

/// Records a call's audio, everyone in it, to WAV or Ogg Opus (by extension): what this
/// side sends (microphone after mute, with the file mix) mixed with what it plays from the
/// peer. The sending thread drives it, 20 ms at a time, taking whatever the receive thread
/// has delivered meanwhile (silence when the peer is quiet or gone; at most one second of
/// the peer's audio waits). Blocks are written as they come, so a WAV stays readable up to
/// the last block if the process dies. A write failure (a full disk) stops the recording
/// and keeps what was written; `stop` reports it.
public final class CallAudioRecorder: Sendable {
    public let path: String

    struct State {
        var writer: WAVWriter?
        var remote: [Int16] = []
        var failure: String?
        var mixed = [Int16](repeating: 0, count: 1_920)
    }

    private let state: Locked<State>

    /// Creates the file. Never creates directories.
    /// - Throws: `MixError` naming the path: a missing directory, an extension that is
    ///   neither .wav nor .ogg/.opus, or a file that cannot be created.
    public init(path: String) throws(MixError) {
        if let directory = OutputFile.missingDirectory(of: path) {
            throw MixError("recording \(path): the directory \(directory) does not exist")
        }
        guard let container = WAVWriter.Container(path: path) else {
            throw MixError("recording \(path): use a .wav, .ogg or .opus file")
        }
        do {
            state = Locked(State(writer: try WAVWriter(path: path, layout: .mono, container: container)))
        } catch {
            throw MixError("recording \(error)")
        }
        self.path = path
    }

    /// The peer's played audio (mono), from the receive thread.
    func remote(_ samples: UnsafeBufferPointer<Int16>) {
        state.withLock { state in
            state.remote.append(contentsOf: samples)
            if state.remote.count > 48_000 { state.remote.removeFirst(state.remote.count - 48_000) }
        }
    }

    /// This side's sent audio (mono or stereo frame), from the sending thread: mixed with
    /// the peer's waiting audio and written.
    func local(_ frame: AudioFrame) {
        state.withLock { state in
            guard let writer = state.writer, state.failure == nil else { return }
            let count = frame.samplesPerChannel
            if state.mixed.count < count { state.mixed = [Int16](repeating: 0, count: count) }
            frame.samples.withUnsafeBufferPointer { samples in
                state.mixed.withUnsafeMutableBufferPointer {
                    AudioMixer.remix(samples, channels: frame.layout.count, into: $0, channels: 1)
                }
            }
            let take = min(count, state.remote.count)
            _ = state.mixed.withUnsafeMutableBufferPointer { mixed in
                state.remote.withUnsafeBufferPointer { remote in
                    AudioMixer.add(UnsafeBufferPointer(rebasing: remote[0..<take]), gain: 1, into: UnsafeMutableBufferPointer(rebasing: mixed[0..<count]))
                }
            }
            state.remote.removeFirst(take)
            do {
                try state.mixed.withUnsafeBufferPointer { try writer.write(UnsafeBufferPointer(rebasing: $0[0..<count])) }
            } catch {
                state.failure = "\(error)"
                try? writer.close()
                state.writer = nil
            }
        }
    }

    /// Closes the file.
    /// - Throws: `MixError` when a write had failed (what was written before stays) or closing fails.
    public func stop() throws(MixError) {
        let (writer, failure) = state.withLock { state in
            defer { state.writer = nil }
            return (state.writer, state.failure)
        }
        do {
            try writer?.close()
        } catch {
            throw MixError("recording \(error)")
        }
        if let failure { throw MixError("recording \(path) stopped early: \(failure)") }
    }
}
