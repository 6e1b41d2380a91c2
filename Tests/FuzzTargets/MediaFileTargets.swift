#if canImport(Glibc)
import Glibc
#endif
import MediaEngine

/// Media files the engine reads (`file:` sources, mix files): Y4M through its own parser,
/// audio through libsndfile. Both read from a path, so each input goes through a file.
enum MediaFileTargets {
    static let y4m = FuzzTarget(
        name: "y4m",
        summary: "Y4M.Reader on the input as a file: header, then up to three frames"
    ) { bytes in
        guard let path = write(bytes, suffix: "y4m"), let reader = try? Y4M.Reader(path: path) else { return false }
        FuzzCheck.require((1...Y4M.maximumDimension).contains(reader.width) && (1...Y4M.maximumDimension).contains(reader.height),
                          "Y4M of \(reader.width)x\(reader.height) accepted")
        FuzzCheck.require(reader.frameRate.numerator > 0 && reader.frameRate.denominator > 0, "Y4M rate \(reader.frameRate)")
        _ = reader.frameDuration
        // Frames far larger than the input cannot be whole; reading them would only
        // allocate (up to 400 MB at 16384x16384, which the header check allows).
        guard reader.width * reader.height <= max(bytes.count, 4_096) else { return true }
        var frame = VideoFrame(width: 2, height: 2)
        for _ in 0..<3 {
            guard (try? reader.read(into: &frame)) == true else { break }
            FuzzCheck.require(frame.width == reader.width && frame.height == reader.height, "Y4M frame of another size")
        }
        return true
    }

    static let wav = FuzzTarget(
        name: "wav",
        summary: "AudioFile.read (libsndfile, resampling to 48 kHz) on the input as a file"
    ) { bytes in
        guard let path = write(bytes, suffix: "wav"), let frame = try? AudioFile.read(path: path, resampling: true) else { return false }
        FuzzCheck.require(frame.samples.count % frame.layout.count == 0, "\(frame.samples.count) samples in \(frame.layout) audio")
        return true
    }

    /// Writes `bytes` to this process's scratch file for `suffix` (in /dev/shm when there is
    /// one, so no disk is involved); nil when it cannot.
    private static func write(_ bytes: UnsafeRawBufferPointer, suffix: String) -> String? {
        let directory = access("/dev/shm", W_OK) == 0 ? "/dev/shm" : "/tmp"
        let path = "\(directory)/mediaengine-fuzz-\(getpid()).\(suffix)"
        guard let file = fopen(path, "wb") else { return nil }
        let written = bytes.isEmpty ? 0 : fwrite(bytes.baseAddress, 1, bytes.count, file)
        guard fclose(file) == 0, written == bytes.count else { return nil }
        return path
    }
}
