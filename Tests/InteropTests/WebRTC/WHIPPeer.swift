import Foundation
import MediaEngine
import Testing
import TestSupport

/// The WHIP/WHEP peer scripts' (`Tests/Peers/aiortc/whip.py`, `Tests/Peers/gstreamer/whip.py`)
/// reports, and what a `meeting join` participant printed of them.
enum WHIPPeer {
    /// What `whip.py` printed last: one line of JSON.
    struct Report: Decodable {
        var ice_state: String?
        var error: String?
        var status: Int?
        var location: String?
        var links: [String]?
        var established: Bool?
        var delete_status: Int?
        var frames_sent: Int?
        var tone_samples_sent: Int?
        var audio_samples: Int?
        var video_frames: Int?
        var width: Int?
        var height: Int?
        var first_pts: Int?
        var last_pts: Int?
        var first_frame_after: Double?
        /// Seconds from the POST to the connection (ICE and DTLS); media runs from then on.
        var connected_after: Double?
        var reason: String?
    }

    static func run(_ process: BackgroundProcess, timeout: Double = 40) throws -> (Report, CLIRun) {
        let run = try process.wait(timeout: timeout)
        guard let line = run.stdout.split(separator: "\n").last(where: { $0.hasPrefix("{") }),
              let report = try? JSONDecoder().decode(Report.self, from: Data(line.utf8)) else {
            throw ToolFailure("whip.py printed no report: \(run.stdout) \(run.stderr)")
        }
        return (report, run)
    }

    /// The participant's summary line for `user`: video frames decoded.
    static func framesDecoded(of user: String, in output: String) -> Int? {
        guard let line = output.split(separator: "\n").first(where: { $0.hasPrefix("media \(user): ") }),
              let range = line.range(of: "frames=") else { return nil }
        return Int(line[range.upperBound...].prefix { $0.isNumber })
    }

    /// The loudest level of `frequency` over one-second windows (half a second apart) of
    /// `samples`: how loud a speaker was while present, however long that was.
    static func peakLevel(_ samples: [Int16], frequency: Double) -> Double {
        stride(from: 0, to: max(1, samples.count - 48_000 + 1), by: 24_000).map { start in
            samples[start..<min(samples.count, start + 48_000)].withUnsafeBufferPointer { AudioQuality.toneLevel($0, frequency: frequency) }
        }.max() ?? 0
    }
}
