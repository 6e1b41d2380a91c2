import BenchmarkSupport
import Foundation
import MediaEngine
import RecordingBaseline

/// One second of a call, encoded once: the packets and the order they are written in.
final class CallSecond: @unchecked Sendable {
    // @unchecked: built once in setup, then only read.
    struct Item {
        var track: WebMMuxer.Track
        var packet: Int
        var milliseconds: Int64
        var duration: Int64
        var keyframe: Bool
    }

    static let shared = try? CallSecond()
    static let width = 640
    static let height = 480

    let packets: PacketSequence
    let schedule: [Item]
    let bytes: Int

    init() throws {
        var encoded: [[UInt8]] = []
        var items: [Item] = []
        let opus = try Opus.Encoder(configuration: Opus.Configuration())
        var tone = ToneGenerator(.sine(440))
        for index in 0..<50 {
            encoded.append(try opus.encode(tone.nextFrame()))
            items.append(Item(track: .audio, packet: encoded.count - 1, milliseconds: Int64(index * 20), duration: 20, keyframe: true))
        }
        var settings = VP8.Configuration(width: Self.width, height: Self.height, bitrate: 1_000_000)
        settings.keyframeInterval = 30
        let vp8 = try VP8.Encoder(configuration: settings)
        var pattern = TestPattern(width: Self.width, height: Self.height, frameRate: 30)
        for index in 0..<30 {
            guard let frame = try vp8.encode(pattern.nextFrame(), forceKeyframe: index == 0) else {
                throw BenchmarkFailure("the VP8 encoder dropped frame \(index)")
            }
            encoded.append(frame.data)
            items.append(Item(track: .video, packet: encoded.count - 1, milliseconds: Int64(index * 1_000 / 30), duration: 0,
                              keyframe: frame.isKeyframe))
        }
        packets = PacketSequence(encoded)
        schedule = items.sorted { $0.milliseconds < $1.milliseconds }
        bytes = encoded.reduce(0) { $0 + $1.count }
    }

    static func temporaryPath(_ name: String) -> String {
        FileManager.default.temporaryDirectory.appendingPathComponent("\(name)-\(UUID().uuidString).webm").path
    }
}

/// WebMMuxer writing second after second to one file.
final class SwiftRecording {
    let media: CallSecond
    let muxer: WebMMuxer
    var second: Int64 = 0

    init() throws {
        guard let media = CallSecond.shared else { throw BenchmarkFailure("encoding the call's second failed") }
        self.media = media
        muxer = try WebMMuxer(path: CallSecond.temporaryPath("swift"))
        try muxer.writeHeader(WebMMuxer.Tracks(video: (CallSecond.width, CallSecond.height), audioChannels: 1))
    }

    func writeSecond() throws {
        for item in media.schedule {
            try muxer.write(item.track, data: media.packets[item.packet], milliseconds: second * 1_000 + item.milliseconds,
                            duration: item.duration, keyframe: item.keyframe)
        }
        second += 1
    }

    deinit {
        try? muxer.finish()
        try? FileManager.default.removeItem(atPath: muxer.path)
    }
}

/// The same packets through the C baseline.
final class BaselineRecording {
    let media: CallSecond
    let path: String
    let baseline: OpaquePointer
    var second: Int64 = 0
    private var closed = false

    init() throws {
        guard let media = CallSecond.shared else { throw BenchmarkFailure("encoding the call's second failed") }
        self.media = media
        path = CallSecond.temporaryPath("c")
        guard let baseline = recording_baseline_open(path, Int32(CallSecond.width), Int32(CallSecond.height), 1) else {
            throw BenchmarkFailure("the C baseline could not open \(path)")
        }
        self.baseline = baseline
    }

    func writeSecond() throws {
        for item in media.schedule {
            let data = media.packets[item.packet]
            let status = recording_baseline_write(baseline, item.track == .video ? 0 : 1, data.baseAddress?.assumingMemoryBound(to: UInt8.self),
                                                  data.count, second * 1_000 + item.milliseconds, item.duration, item.keyframe ? 1 : 0)
            guard status >= 0 else { throw BenchmarkFailure("the C baseline failed to write: \(status)") }
        }
        second += 1
    }

    func close() {
        guard !closed else { return }
        closed = true
        _ = recording_baseline_close(baseline)
    }

    deinit {
        close()
        try? FileManager.default.removeItem(atPath: path)
    }
}

/// Both sides do the same work: 3 s written by each give files of the same size (only the
/// random segment UID differs).
func checkRecordingAgreement() throws {
    var sizes: [Int] = []
    for side in 0..<2 {
        let path: String
        if side == 0 {
            let swift = try SwiftRecording()
            for _ in 0..<3 { try swift.writeSecond() }
            try swift.muxer.finish()
            path = swift.muxer.path
            sizes.append(try FileManager.default.attributesOfItem(atPath: path)[.size] as? Int ?? 0)
        } else {
            let c = try BaselineRecording()
            for _ in 0..<3 { try c.writeSecond() }
            c.close()
            path = c.path
            sizes.append(try FileManager.default.attributesOfItem(atPath: path)[.size] as? Int ?? 0)
        }
    }
    guard sizes[0] == sizes[1], sizes[0] > 3 * (CallSecond.shared?.bytes ?? 0) else {
        throw BenchmarkFailure("Swift and C recordings differ: \(sizes[0]) and \(sizes[1]) bytes")
    }
}
