import ArgumentParser
import Foundation
import MediaEngine
import MediaSimulation

struct NetsimCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "netsim",
        abstract: "Predict call quality over a grid of network conditions, by deterministic simulation.",
        discussion: """
        For each loss rate and jitter, runs the engine's real audio path (Opus with in-band FEC through the adaptive \
        jitter buffer) and video path (VP8 through NACK, retransmission and PLI recovery) over the impairment model, \
        in virtual time: the same options and seed give the same table on any machine. Reports audio concealment \
        and mean playout delay, video freezes (gaps over 200 ms between decoded frames) and the share of lost video \
        packets recovered by NACK in time.
        """
    )

    @Option(help: "Loss rates in % (comma-separated).")
    var loss: String = "0,5,10,20,30"

    @Option(help: "Jitter (standard deviation of the delay) in ms (comma-separated).")
    var jitter: String = "0,30,100"

    @Option(help: "One-way delay in ms, each direction.")
    var delay: Double = 50

    @Option(help: "Seconds simulated per cell.")
    var seconds: Double = 30

    @Option(help: "Video bitrate, b/s.")
    var videoBitrate: String = "500k"

    @Option(help: "Seed of the network's random choices.")
    var seed: UInt64 = 1

    @Flag(help: "Print JSON instead of a table.")
    var json = false

    struct Cell: Codable {
        var lossPercent: Double
        var jitterMilliseconds: Double
        var audioConcealmentPercent: Double
        var audioMeanPlayoutDelayMilliseconds: Double
        var audioNetworkLossPercent: Double
        var videoFreezes: Int
        var videoRecoveredPercent: Double
        var videoFramesDecoded: Int
        var videoFramesSent: Int
        var videoPacketsLost: Int
    }

    func validate() throws {
        _ = try grid()
        guard seconds > 0 && seconds <= 600 else { throw ValidationError("--seconds \(seconds) must be within 0...600") }
        guard delay >= 0 && delay <= 5_000 else { throw ValidationError("--delay \(delay) must be within 0...5000 ms") }
        guard SpecValue.bitrate(videoBitrate) != nil else { throw ValidationError("--video-bitrate '\(videoBitrate)' is not a bitrate") }
    }

    func grid() throws -> (losses: [Double], jitters: [Double]) {
        guard let losses = SpecValue.list(loss, { Double($0) }), losses.allSatisfy({ (0...100).contains($0) }) else {
            throw ValidationError("--loss '\(loss)' is not a list of percentages 0...100")
        }
        guard let jitters = SpecValue.list(jitter, { Double($0) }), jitters.allSatisfy({ (0...5_000).contains($0) }) else {
            throw ValidationError("--jitter '\(jitter)' is not a list of milliseconds 0...5000")
        }
        return (losses, jitters)
    }

    func run() throws {
        let (losses, jitters) = try grid()
        let progress = ProgressBar()
        var cells: [Cell] = []
        let total = losses.count * jitters.count
        for lossPercent in losses {
            for jitterMilliseconds in jitters {
                progress.update(done: cells.count, total: total, label: "loss \(lossPercent) % jitter \(jitterMilliseconds) ms")
                var link = ImpairmentSettings()
                link.lossPercent = lossPercent
                link.delay = .milliseconds(Int64(delay))
                link.jitter = .microseconds(Int64(jitterMilliseconds * 1_000))
                link.seed = seed
                var back = link
                back.seed = seed &+ 1
                let audio = try AudioNetworkSimulation.run(settings: link, seconds: seconds, fec: true)
                let video = try VideoNetworkSimulation.run(forward: link, backward: back, seconds: seconds,
                                                           bitrate: SpecValue.bitrate(videoBitrate)!)
                cells.append(Cell(lossPercent: lossPercent, jitterMilliseconds: jitterMilliseconds,
                                  audioConcealmentPercent: audio.concealmentPercent,
                                  audioMeanPlayoutDelayMilliseconds: audio.meanPlayoutDelay / .milliseconds(1),
                                  audioNetworkLossPercent: audio.networkLossPercent,
                                  videoFreezes: video.freezeCount, videoRecoveredPercent: video.recoveredRatio * 100,
                                  videoFramesDecoded: video.framesDecoded, videoFramesSent: video.framesSent,
                                  videoPacketsLost: video.packetsLost))
            }
        }
        progress.update(done: total, total: total, label: "done")
        if json {
            let encoder = JSONEncoder()
            encoder.outputFormatting = [.prettyPrinted, .sortedKeys]
            print(String(decoding: try encoder.encode(cells), as: UTF8.self))
            return
        }
        print("\(Int(seconds)) s per cell, \(Int(delay)) ms one-way delay, seed \(seed); audio Opus 32 kb/s with FEC, video VP8 \(videoBitrate)")
        let header = ["loss %", "jitter ms", "audio concealed %", "playout delay ms", "video freezes", "recovered %",
                      "frames decoded"]
        let rows = cells.map { cell in
            [String(format: "%.0f", cell.lossPercent), String(format: "%.0f", cell.jitterMilliseconds),
             String(format: "%.1f", cell.audioConcealmentPercent), String(format: "%.0f", cell.audioMeanPlayoutDelayMilliseconds),
             "\(cell.videoFreezes)", cell.videoPacketsLost == 0 ? "-" : String(format: "%.1f", cell.videoRecoveredPercent),
             "\(cell.videoFramesDecoded)/\(cell.videoFramesSent)"]
        }
        let widths = header.indices.map { column in ([header[column]] + rows.map { $0[column] }).map(\.count).max() ?? 0 }
        for line in [header] + rows {
            print(line.enumerated().map { String(repeating: " ", count: widths[$0.offset] - $0.element.count) + $0.element }
                .joined(separator: "  "))
        }
    }
}
