import ArgumentParser
import Foundation
import MediaEngine
import MediaSimulation

struct BenchCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "codecs",
        abstract: "Measure Opus and VP8: encode/decode speed, quality (SNR, PSNR, SSIM) and bitrate accuracy.",
        discussion: """
        Runs every combination of the listed settings. Lists are comma-separated; bitrates take k and M \
        suffixes (32k, 1.5M). Negative cpu-used values need '=': --cpu-used=-6,-12.
        """
    )

    enum Codec: String, ExpressibleByArgument, CaseIterable { case opus, vp8, all }
    enum Application: String, ExpressibleByArgument, CaseIterable {
        case voip, audio
        case restrictedLowDelay = "restricted-low-delay"
    }

    @Flag(help: "Run a small grid (under 30 s): 3 Opus and 4 VP8 cases of 3 s each.")
    var quick = false

    @Option(help: "Which codecs to measure.")
    var codec: Codec = .all

    @Option(help: "Opus bitrates, b/s (default 12k,24k,32k,64k,128k).")
    var opusBitrates: String?

    @Option(help: "Opus complexities 0-10 (default 5,10).")
    var complexities: String?

    @Option(help: "Opus frame sizes in ms: 2.5, 5, 10, 20, 40, 60 (default 10,20).")
    var frameSizes: String?

    @Option(help: "Opus application.")
    var application: Application = .voip

    @Option(name: .customLong("vp8-bitrates"), help: "VP8 bitrates, b/s (default 250k,500k,1M,2M).")
    var vp8Bitrates: String?

    @Option(help: "VP8 cpu-used values, -16 to 16 (default -6).")
    var cpuUsed: String?

    @Option(help: "VP8 frame sizes WxH, 320x240 to 1280x720 and beyond (default 320x240,640x480,1280x720).")
    var resolutions: String?

    @Option(help: "VP8 frames per second.")
    var fps: Int?

    @Option(help: "VP8 encoder and decoder threads.")
    var threads: Int?

    @Option(help: "Seconds of media per case (default 10, quick 3).")
    var duration: Double?

    @Option(help: "Benchmark Opus on this 48 kHz mono or stereo WAV (or FLAC, Ogg) instead of synthetic tones.")
    var audio: String?

    @Option(help: "Benchmark VP8 on this 4:2:0 Y4M file instead of the test pattern (scaled to each size).")
    var video: String?

    @Flag(help: "Print the results as JSON.")
    var json = false

    @Flag(help: "Print the results as CSV.")
    var csv = false

    @Option(help: "Also draw quality against bitrate into this SVG file.")
    var plot: String?

    /// The grid the options describe, or a ValidationError naming the bad value.
    func grid() throws -> BenchGrid {
        var grid = quick ? BenchGrid.quick : BenchGrid.full
        if let text = opusBitrates {
            grid.opusBitrates = try parse(text, "--opus-bitrates", "a bitrate like 32000, 32k or 1.5M", SpecValue.bitrate)
        }
        if let text = complexities {
            grid.complexities = try parse(text, "--complexities", "a whole number 0-10") { Int($0) }
        }
        if let text = frameSizes {
            grid.frameMilliseconds = try parse(text, "--frame-sizes", "2.5, 5, 10, 20, 40 or 60") {
                Double($0).flatMap { Opus.FrameDuration(milliseconds: $0)?.milliseconds }
            }
        }
        grid.application = application.rawValue
        if let text = vp8Bitrates {
            grid.vp8Bitrates = try parse(text, "--vp8-bitrates", "a bitrate like 500k or 1M", SpecValue.bitrate)
        }
        if let text = cpuUsed {
            grid.cpuUsed = try parse(text, "--cpu-used", "a whole number -16 to 16") { Int($0) }
        }
        if let text = resolutions {
            grid.resolutions = try parse(text, "--resolutions", "WxH like 640x480", SpecValue.resolution)
        } else if video != nil && !quick {
            grid.resolutions = []  // filled with the file's own size below
        }
        if let fps { grid.frameRate = fps }
        if let threads { grid.threads = threads }
        if let duration {
            guard duration.isFinite, duration > 0, duration <= 3_600 else {
                throw ValidationError("--duration \(duration) must be more than 0 and at most 3600 seconds")
            }
            grid.seconds = duration
        }
        switch codec {
        case .opus: grid.vp8Bitrates = []
        case .vp8: grid.opusBitrates = []
        case .all: break
        }
        return grid
    }

    func validate() throws {
        if json && csv { throw ValidationError("--json and --csv cannot be combined; pick one output format") }
        _ = try grid()
    }

    func run() throws {
        var grid = try grid()
        var bench = CodecBench()
        bench.seconds = grid.seconds
        if let audio { bench.audioInput = .file(audio) }
        if let video {
            bench.videoInput = .file(video)
            if grid.resolutions.isEmpty {
                let reader = try Y4M.Reader(path: video)
                grid.resolutions = [(reader.width, reader.height)]
            }
        }
        let progress = ProgressBar()
        let report = try bench.run(opus: grid.opusCases, vp8: grid.vp8Cases) { done, total, label in
            progress.update(done: done, total: total, label: label)
        }
        if json {
            print(try report.json(), terminator: "")
        } else if csv {
            print(report.csv(), terminator: "")
        } else {
            print(report.table(), terminator: "")
        }
        if let plot {
            do {
                try report.svgPlot().write(toFile: plot, atomically: true, encoding: .utf8)
            } catch {
                throw ValidationError("cannot write the plot to \(plot): \(error.localizedDescription)")
            }
        }
    }

    private func parse<T>(_ text: String, _ option: String, _ expected: String, _ item: (String) -> T?) throws -> [T] {
        for element in text.split(separator: ",", omittingEmptySubsequences: false) where item(String(element)) == nil {
            throw ValidationError("\(option): '\(element)' is not \(expected)")
        }
        guard let values = SpecValue.list(text, item) else {
            throw ValidationError("\(option) needs at least one value")
        }
        return values
    }
}
