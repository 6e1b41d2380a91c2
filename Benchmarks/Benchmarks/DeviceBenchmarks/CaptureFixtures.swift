import Foundation
import MediaEngine

/// ALSA capture from a PCM that reads a raw file (ALSA's `file` plugin over `null`), the
/// way tests run without a sound card. The engine paces it to the wall clock, so each
/// iteration takes one 20 ms frame period; the point is the malloc count of the whole
/// capture path (capture thread and reader), which must be zero per frame once warm.
final class ALSACaptureFixture {
    private let capture: ALSACapture
    private var frame = AudioFrame(layout: .mono, samplesPerChannel: 960)
    private let directory: URL

    init() throws {
        directory = FileManager.default.temporaryDirectory.appendingPathComponent("alsa-bench-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        var tone = ToneGenerator(.sine(440))
        let raw = directory.appendingPathComponent("tone.raw")
        try tone.clip(seconds: 30).samples.withUnsafeBytes { try Data($0).write(to: raw) }
        let configuration = """
        pcm.benchtone {
            type file
            slave { pcm { type null } }
            file "/dev/null"
            infile "\(raw.path)"
            format "raw"
        }
        """
        capture = try ALSACapture(name: "benchtone", configuration: configuration)
    }

    deinit {
        capture.stop()
        try? FileManager.default.removeItem(at: directory)
    }

    func read() throws -> Bool {
        try capture.read(into: &frame)
    }
}
