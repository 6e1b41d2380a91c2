import ArgumentParser
import Foundation
import MediaEngine

/// Refuses an output file whose directory does not exist (files are created, directories never).
func requireDirectory(of path: String, option: String) throws {
    if let directory = OutputFile.missingDirectory(of: path) {
        throw ValidationError("\(option) \(path): the directory \(directory) does not exist")
    }
}

/// Recordings and snapshots of what this side sends (`call`, `answer`, `send`).
struct LocalOutputOptions: ParsableArguments {
    @Option(help: "Record what this side sends to a .webm file (Opus and VP8 as sent).")
    var recordLocal: String?

    @Option(help: "With --record-local: record the video re-encoded at this bitrate (b/s) instead of as sent.")
    var recordVideoBitrate: Int?

    @Option(help: "Record the audio (a call's: both sides and the mix) to a .wav or .ogg (Opus) file.")
    var recordAudio: String?

    @Option(help: "Save the first picture sent as a PNG file.")
    var snapshot: String?

    func check() throws {
        if let recordLocal {
            guard recordLocal.hasSuffix(".webm") else { throw ValidationError("--record-local \(recordLocal): use a .webm file") }
            try requireDirectory(of: recordLocal, option: "--record-local")
        }
        if let recordVideoBitrate {
            guard recordLocal != nil else { throw ValidationError("--record-video-bitrate needs --record-local") }
            guard VP8.bitrates.contains(recordVideoBitrate) else {
                throw ValidationError("--record-video-bitrate \(recordVideoBitrate) is outside \(VP8.bitrates) b/s")
            }
        }
        if let recordAudio {
            guard WAVWriter.Container(path: recordAudio) != nil else { throw ValidationError("--record-audio \(recordAudio): use a .wav, .ogg or .opus file") }
            try requireDirectory(of: recordAudio, option: "--record-audio")
        }
        if let snapshot {
            guard snapshot.hasSuffix(".png") else { throw ValidationError("--snapshot \(snapshot): use a .png file") }
            try requireDirectory(of: snapshot, option: "--snapshot")
        }
    }
}

/// An audio file mixed into what is sent (`call`, `answer`, `send`).
struct MixOptions: ParsableArguments {
    @Option(help: "Mix an audio file (WAV, FLAC, Ogg, MP3, any rate) into what is sent.")
    var mixFile: String?

    // Unconditional, so that `--mix-loops -1` reads as a value, not as an option.
    @Option(parsing: .unconditional, help: "Times the mix file repeats after its first play; negative (-1): forever.")
    var mixLoops = 0

    @Option(help: "Volume of the mix file in what is sent, 0...1.")
    var mixSendVolume = 1.0

    @Option(help: "Volume of the mix file in local playback, 0...1 (calls; `send` plays nothing).")
    var mixPlaybackVolume = 1.0

    /// The mix task these options ask for.
    func task() throws -> AudioFileMixTask? {
        guard let mixFile else { return nil }
        let task = try AudioFileMixTask(fileURL: URL(fileURLWithPath: mixFile))
        try task.setVolumes(send: mixSendVolume, playback: mixPlaybackVolume)
        task.numberOfLoops = mixLoops
        return task
    }

    /// Opens the file now, so a bad one is named before anything starts.
    func check() throws {
        do {
            _ = try task()
        } catch let error as MixError {
            throw ValidationError(error.message)
        }
    }
}
