// swift-tools-version: 6.1
import PackageDescription

// Benchmarks live in their own package so the main package never depends on the
// benchmark tooling. Run with `swift package benchmark` from this directory.
let package = Package(
    name: "MediaEngineBenchmarks",
    platforms: [.macOS(.v13)],
    dependencies: [
        // Its default traits want a package that is not available here.
        .package(url: "https://github.com/ordo-one/benchmark", from: "1.38.1", traits: ["MallocInterposer"]),
        // Named explicitly: a path dependency's identity is its directory name, which
        // differs between clones (the `main` work tree, CI's checkout, ...).
        .package(name: "MediaEngine", path: ".."),
    ],
    targets: [
        // Metrics, the measured loop and packet storage shared by the executables below.
        .target(
            name: "BenchmarkSupport",
            dependencies: [.product(name: "Benchmark", package: "benchmark")],
            swiftSettings: [.swiftLanguageMode(.v6)]
        ),
        // The same libopus/libvpx/libyuv calls the Swift wrappers make, written in C,
        // as the baseline the wrappers are measured against.
        .target(
            name: "CodecBaseline",
            linkerSettings: [.linkedLibrary("opus"), .linkedLibrary("vpx"), .linkedLibrary("yuv")]
        ),
        .executableTarget(
            name: "CodecBenchmarks",
            dependencies: [
                .product(name: "Benchmark", package: "benchmark"),
                .product(name: "MediaEngine", package: "MediaEngine"),
                "BenchmarkSupport",
                "CodecBaseline",
            ],
            path: "Benchmarks/CodecBenchmarks",
            swiftSettings: [.swiftLanguageMode(.v6)],
            plugins: [.plugin(name: "BenchmarkPlugin", package: "benchmark")]
        ),
        // The same libsrtp2 calls SRTPContext makes, written in C, as its baseline.
        .target(
            name: "SRTPBaseline",
            linkerSettings: [.linkedLibrary("srtp2")]
        ),
        // SRTP round trips through SRTPContext and through SRTPBaseline, on identical packets.
        .target(
            name: "SRTPFixtures",
            dependencies: [.product(name: "MediaEngine", package: "MediaEngine"), "BenchmarkSupport", "SRTPBaseline"],
            swiftSettings: [.swiftLanguageMode(.v6)]
        ),
        // The OpenSSL calls DTLSEndpoint makes for one DTLS-SRTP handshake, written in C.
        .target(
            name: "DTLSBaseline",
            linkerSettings: [.linkedLibrary("ssl"), .linkedLibrary("crypto")]
        ),
        // RTP parse/serialize (Swift only), SRTP protect/unprotect against SRTPBaseline, and
        // DTLS-SRTP handshakes against DTLSBaseline.
        .executableTarget(
            name: "WireBenchmarks",
            dependencies: [
                .product(name: "Benchmark", package: "benchmark"),
                .product(name: "MediaEngine", package: "MediaEngine"),
                "BenchmarkSupport",
                "SRTPFixtures",
                "DTLSBaseline",
            ],
            path: "Benchmarks/WireBenchmarks",
            swiftSettings: [.swiftLanguageMode(.v6)],
            plugins: [.plugin(name: "BenchmarkPlugin", package: "benchmark")]
        ),
        // The libyuv and TurboJPEG calls V4L2FrameConverter makes, written in C.
        .target(
            name: "DeviceBaseline",
            linkerSettings: [.linkedLibrary("yuv"), .linkedLibrary("turbojpeg")]
        ),
        // Camera frame conversion (YUYV, MJPEG to I420) against DeviceBaseline.
        .executableTarget(
            name: "DeviceBenchmarks",
            dependencies: [
                .product(name: "Benchmark", package: "benchmark"),
                .product(name: "MediaEngine", package: "MediaEngine"),
                "BenchmarkSupport",
                "DeviceBaseline",
            ],
            path: "Benchmarks/DeviceBenchmarks",
            swiftSettings: [.swiftLanguageMode(.v6)],
            plugins: [.plugin(name: "BenchmarkPlugin", package: "benchmark")]
        ),
        // The libavformat calls WebMMuxer makes, written in C.
        .target(
            name: "RecordingBaseline",
            linkerSettings: [.linkedLibrary("avformat"), .linkedLibrary("avcodec"), .linkedLibrary("avutil")]
        ),
        // Writing a call's Opus and VP8 to WebM: WebMMuxer against RecordingBaseline.
        .executableTarget(
            name: "RecordingBenchmarks",
            dependencies: [
                .product(name: "Benchmark", package: "benchmark"),
                .product(name: "MediaEngine", package: "MediaEngine"),
                "BenchmarkSupport",
                "RecordingBaseline",
            ],
            path: "Benchmarks/RecordingBenchmarks",
            swiftSettings: [.swiftLanguageMode(.v6)],
            plugins: [.plugin(name: "BenchmarkPlugin", package: "benchmark")]
        ),
        // The media core's per-packet paths (send and receive through SRTP, demux, jitter
        // buffer or frame assembly, feedback), against libsrtp2 alone on the same packets.
        .executableTarget(
            name: "SessionBenchmarks",
            dependencies: [
                .product(name: "Benchmark", package: "benchmark"),
                .product(name: "MediaEngine", package: "MediaEngine"),
                .product(name: "MediaRouting", package: "MediaEngine"),
                "BenchmarkSupport",
                "SRTPFixtures",
            ],
            path: "Benchmarks/SessionBenchmarks",
            swiftSettings: [.swiftLanguageMode(.v6)],
            plugins: [.plugin(name: "BenchmarkPlugin", package: "benchmark")]
        ),
    ]
)
