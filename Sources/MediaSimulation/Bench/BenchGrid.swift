import MediaEngine

/// The grid of settings a `bench` run covers, and the parsers for how users write them
/// (`32k`, `1.5M`, `640x480`, `2.5`).
public struct BenchGrid: Sendable, Hashable {
    public var opusBitrates: [Int]
    public var complexities: [Int]
    public var frameMilliseconds: [Double]
    public var application: String
    public var vp8Bitrates: [Int]
    public var cpuUsed: [Int]
    public var resolutions: [(width: Int, height: Int)]
    public var frameRate: Int
    public var threads: Int
    public var seconds: Double

    /// The small grid `--quick` runs (well under 30 s in a release build).
    public static let quick = BenchGrid(
        opusBitrates: [16_000, 32_000, 64_000], complexities: [9], frameMilliseconds: [20], application: "voip",
        vp8Bitrates: [300_000, 1_000_000], cpuUsed: [-6], resolutions: [(320, 240), (640, 480)],
        frameRate: 30, threads: 1, seconds: 3)

    /// The default full grid.
    public static let full = BenchGrid(
        opusBitrates: [12_000, 24_000, 32_000, 64_000, 128_000], complexities: [5, 10], frameMilliseconds: [10, 20],
        application: "voip", vp8Bitrates: [250_000, 500_000, 1_000_000, 2_000_000], cpuUsed: [-6],
        resolutions: [(320, 240), (640, 480), (1280, 720)], frameRate: 30, threads: 1, seconds: 10)

    public var opusCases: [OpusBenchCase] {
        complexities.flatMap { complexity in
            frameMilliseconds.flatMap { frame in
                opusBitrates.map { OpusBenchCase(bitrate: $0, complexity: complexity, frameMilliseconds: frame,
                                                 application: application) }
            }
        }
    }

    public var vp8Cases: [VP8BenchCase] {
        resolutions.flatMap { size in
            cpuUsed.flatMap { cpu in
                vp8Bitrates.map { VP8BenchCase(width: size.width, height: size.height, bitrate: $0, cpuUsed: cpu,
                                               frameRate: frameRate, threads: threads) }
            }
        }
    }

    public static func == (a: BenchGrid, b: BenchGrid) -> Bool {
        a.opusCases == b.opusCases && a.vp8Cases == b.vp8Cases && a.seconds == b.seconds
    }

    public func hash(into hasher: inout Hasher) {
        hasher.combine(opusCases)
        hasher.combine(vp8Cases)
        hasher.combine(seconds)
    }
}
