// swift-tools-version: 6.1
import PackageDescription

// System libraries come from Debian packages; `tools/bootstrap` installs them.
func systemLibrary(_ name: String, pkgConfig: String?, apt: [String]) -> Target {
    .systemLibrary(name: name, pkgConfig: pkgConfig, providers: [.apt(apt)])
}

// Build configurations the tools choose through the environment; none of them is set in a
// plain `swift build` or `swift test`:
//
// - MEDIAENGINE_SANITIZE=thread or =address (`tools/sanitize`), =fuzzer (`tools/fuzz`):
//   this package's own modules are built instrumented (and testable, for optimized test
//   builds), while its dependencies keep the plain optimized build `tools/run` made in
//   .build. The sanitizer's runtime sees every lock, thread and allocation of the process
//   either way (it intercepts pthreads and malloc); what it does not check is memory
//   accesses inside swift-nio, Hummingbird and the other packages, which are theirs to
//   sanitize. =fuzzer adds libFuzzer's coverage to AddressSanitizer, and the
//   `mediaengine-fuzz` driver that exists only in that build.
// - MEDIAENGINE_TESTABLE=1 (`tools/test --release`, CI): this package's own modules are
//   built with -enable-testing, so an optimized build runs the test suite and is the same
//   build `tools/run` runs the demo from (one optimized build of the dependencies per CI run).
let sanitizer = Context.environment["MEDIAENGINE_SANITIZE"]
let (sanitizerFlags, sanitizerCFlags): ([String], [String]) =
    switch sanitizer {
    case "thread": (["-sanitize=thread"], ["-fsanitize=thread"])
    // UndefinedBehaviorSanitizer is for C (Swift itself traps on overflow and out-of-bounds
    // access); its handlers come with AddressSanitizer's runtime.
    case "address": (["-sanitize=address"], ["-fsanitize=address,undefined"])
    case "fuzzer": (["-sanitize=fuzzer,address"], ["-fsanitize=fuzzer-no-link,address"])
    default: ([], [])
    }
let testable = !sanitizerFlags.isEmpty || Context.environment["MEDIAENGINE_TESTABLE"] == "1"
let instrumented: [SwiftSetting] =
    sanitizerFlags.isEmpty && !testable ? [] : [.unsafeFlags(sanitizerFlags + ["-enable-testing"])]
let instrumentedC: [CSetting] = sanitizerCFlags.isEmpty ? [] : [.unsafeFlags(sanitizerCFlags)]
// Test code in an optimized build (tools/test, the sanitizers): unoptimized, file by file.
// The engine under test is optimized either way; optimizing 27,000 lines of tests and
// their expanded #expect macros took four of an optimized build's minutes and sped up
// nothing a test measures. Batch mode as in a debug build: without it each test file is a
// compiler process of its own that parses its whole module again (4 min 8 s of the test
// modules' build against 2 min 35 s with it, here).
let testCode: [SwiftSetting] =
    sanitizerFlags.isEmpty && !testable ? [] : instrumented + [.unsafeFlags(["-Onone", "-no-whole-module-optimization", "-enable-batch-mode"])]

// The media path's modules (MediaEngine, MediaRouting) in a release build that is not a
// test build: Swift's run-time exclusivity checks off. Every access to a class's stored
// property that the compiler cannot prove exclusive costs a runtime call
// (swift_beginAccess), and the per-packet path touches its streams' state dozens of times:
// with the checks, forwarding a video packet to three subscribers ran at 0.92 of the same
// libsrtp calls in C; without, 0.99 (SessionBenchmarks). The compile-time checks stay in
// every build, and the run-time ones stay in every build that runs tests: debug,
// MEDIAENGINE_TESTABLE (what `tools/test` and `tools/run` build, and CI tests) and the
// sanitizers. So a conflicting access still traps in the test suite; only a plain
// `swift build -c release` (what one ships, and the Benchmarks package builds) trusts
// what the tests showed.
let mediaPath: [SwiftSetting] =
    sanitizerFlags.isEmpty && !testable ? [.unsafeFlags(["-enforce-exclusivity=unchecked"], .when(configuration: .release))] : []

// Only the fuzz driver links libFuzzer (below); everything else links the sanitizer alone.
let instrumentedLink: [LinkerSetting] =
    sanitizerFlags.isEmpty ? [] : [.unsafeFlags(sanitizer == "fuzzer" ? ["-sanitize=address"] : sanitizerFlags)]

let package = Package(
    name: "MediaEngine",
    platforms: [.macOS(.v15)],
    products: [
        // What an app embeds to place calls and join meetings: the media engine, and the
        // client side of signaling.
        .library(name: "MediaEngine", targets: ["MediaEngine"]),
        .library(name: "Signaling", targets: ["Signaling"]),
        // The server side: the SFU, live rooms' composition and pushes, and the signaling
        // server that runs them.
        .library(name: "MediaRouting", targets: ["MediaRouting"]),
        .library(name: "LiveStreaming", targets: ["LiveStreaming"]),
        .library(name: "MediaServer", targets: ["MediaServer"]),
        // Virtual links, impairment, network simulations and benchmark models, for the CLI,
        // the tests and the Benchmarks package; apps never link it.
        .library(name: "MediaSimulation", targets: ["MediaSimulation"]),
        .executable(name: "mediaengine", targets: ["mediaengine"]),
        // For the libFuzzer driver (MEDIAENGINE_SANITIZE=fuzzer, tools/fuzz); not part of the engine's API.
        .library(name: "FuzzTargets", targets: ["FuzzTargets"]),
    ],
    dependencies: [
        .package(url: "https://github.com/apple/swift-argument-parser", from: "1.8.2"),
        // The signaling server: WebSocket over Hummingbird, state in SQLite through GRDB,
        // JWT logins; the client side uses swift-websocket's WSClient.
        .package(url: "https://github.com/hummingbird-project/hummingbird", from: "2.28.1"),
        .package(url: "https://github.com/hummingbird-project/hummingbird-websocket", from: "2.8.1"),
        .package(url: "https://github.com/hummingbird-project/swift-websocket", from: "1.6.2"),
        .package(url: "https://github.com/groue/GRDB.swift", from: "7.10.0"),
        // Several server nodes share one store in PostgreSQL (SQLite stays the default).
        .package(url: "https://github.com/vapor/postgres-nio", from: "1.33.2"),
        .package(url: "https://github.com/vapor/jwt-kit", from: "5.8.0"),
        .package(url: "https://github.com/swift-server/swift-service-lifecycle", from: "2.13.0"),
        .package(url: "https://github.com/apple/swift-log", from: "1.16.2"),
        .package(url: "https://github.com/apple/swift-nio", from: "2.101.2"),
        // The server's /metrics: swift-metrics' API, exported in Prometheus' text format.
        .package(url: "https://github.com/apple/swift-metrics", from: "2.13.0"),
        .package(url: "https://github.com/swift-server/swift-prometheus", from: "2.4.1"),
        // Tests only: an independent AES-CTR and HMAC-SHA1 to check SRTP against RFC 3711.
        .package(url: "https://github.com/apple/swift-crypto", from: "4.5.2"),
        // `swift package generate-documentation`: the DocC catalogs of MediaEngine, Signaling
        // and MediaServer. A command plugin: no build uses it unless it is run.
        .package(url: "https://github.com/swiftlang/swift-docc-plugin", from: "1.5.0"),
    ],
    targets: [
        systemLibrary("COpus", pkgConfig: "opus", apt: ["libopus-dev"]),
        systemLibrary("CVpx", pkgConfig: "vpx", apt: ["libvpx-dev"]),
        systemLibrary("CSRTP", pkgConfig: "libsrtp2", apt: ["libsrtp2-dev"]),
        systemLibrary("CALSA", pkgConfig: "alsa", apt: ["libasound2-dev"]),
        systemLibrary("CV4L2", pkgConfig: "libv4l2", apt: ["libv4l-dev"]),
        systemLibrary("CSndFile", pkgConfig: "sndfile", apt: ["libsndfile1-dev"]),
        // Debian's libyuv ships no .pc file; the module map links it by name.
        systemLibrary("CYUV", pkgConfig: nil, apt: ["libyuv-dev"]),
        systemLibrary("CTurboJPEG", pkgConfig: "libturbojpeg", apt: ["libturbojpeg0-dev"]),
        systemLibrary("CSoxr", pkgConfig: "soxr", apt: ["libsoxr-dev"]),
        systemLibrary("CPNG", pkgConfig: "libpng", apt: ["libpng-dev"]),
        systemLibrary("CAVFormat", pkgConfig: "libavformat", apt: ["libavformat-dev"]),
        // STUN integrity (HMAC-SHA1/SHA-256, MD5 keys) and FINGERPRINT (CRC-32).
        systemLibrary("CCrypto", pkgConfig: "libcrypto", apt: ["libssl-dev"]),
        systemLibrary("CZlib", pkgConfig: "zlib", apt: ["zlib1g-dev"]),
        // DTLS-SRTP (libssl: the handshake through memory BIOs, the keying material export).
        systemLibrary("CSSL", pkgConfig: "libssl", apt: ["libssl-dev"]),

        // recvmmsg/sendmmsg, which Swift's Glibc module does not declare.
        .target(name: "CBatchIO", cSettings: instrumentedC),
        // Echo cancellation, noise suppression, gain control and voice detection: a C face
        // over libwebrtc-audio-processing 0.3 (C++, libwebrtc-audio-processing-dev), so that
        // no Swift module needs C++ interop. Its pkg-config flags, spelled out: SwiftPM takes
        // pkg-config only for system-library targets, which cannot hold C++ sources.
        .target(
            name: "CAudioProcessing",
            cxxSettings: [.unsafeFlags(["-isystem", "/usr/include/webrtc_audio_processing", "-DWEBRTC_POSIX",
                                        "-DWEBRTC_AUDIO_PROCESSING_ONLY_BUILD"] + sanitizerCFlags)],
            linkerSettings: [.linkedLibrary("webrtc_audio_processing"), .linkedLibrary("stdc++")]
        ),
        .target(
            name: "MediaEngine",
            dependencies: ["COpus", "CVpx", "CSRTP", "CALSA", "CV4L2", "CSndFile", "CYUV", "CTurboJPEG", "CSoxr", "CPNG", "CAVFormat",
                           "CCrypto", "CSSL", "CZlib", "CBatchIO", "CAudioProcessing"],
            swiftSettings: [.swiftLanguageMode(.v6)] + instrumented + mediaPath,
            linkerSettings: instrumentedLink
        ),
        // The SFU: transports, producers and consumers, the router and its
        // forwarding thread, and the net-detect echo responder on the same port.
        .target(
            name: "MediaRouting",
            dependencies: ["MediaEngine"],
            swiftSettings: [.swiftLanguageMode(.v6)] + instrumented + mediaPath
        ),
        // Live rooms: the composer (mix and layout), H.264/AAC and VP8/Opus encoders and the
        // pushes (libavcodec, libavformat).
        .target(
            name: "LiveStreaming",
            dependencies: ["MediaEngine", "CAVFormat", "CYUV"],
            swiftSettings: [.swiftLanguageMode(.v6)] + instrumented
        ),
        .target(
            name: "MediaSimulation",
            // CAVFormat for libavutil's FFT (the simulated room's convolution).
            dependencies: ["MediaEngine", "CAVFormat"],
            swiftSettings: [.swiftLanguageMode(.v6)] + instrumented
        ),
        .target(
            name: "Signaling",
            dependencies: [
                "MediaEngine",
                .product(name: "WSClient", package: "swift-websocket"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOWebSocket", package: "swift-nio"),
            ],
            swiftSettings: [.swiftLanguageMode(.v6)] + instrumented
        ),
        .target(
            name: "MediaServer",
            dependencies: [
                "Signaling",
                "MediaRouting",
                "LiveStreaming",
                .product(name: "Hummingbird", package: "hummingbird"),
                .product(name: "HummingbirdWebSocket", package: "hummingbird-websocket"),
                .product(name: "GRDB", package: "GRDB.swift"),
                .product(name: "PostgresNIO", package: "postgres-nio"),
                .product(name: "JWTKit", package: "jwt-kit"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
                .product(name: "UnixSignals", package: "swift-service-lifecycle"),
                .product(name: "CoreMetrics", package: "swift-metrics"),
                .product(name: "Prometheus", package: "swift-prometheus"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "NIOCore", package: "swift-nio"),
            ],
            // The web client the server serves at GET /: plain HTML and JavaScript.
            resources: [.copy("Web")],
            swiftSettings: [.swiftLanguageMode(.v6)] + instrumented
        ),
        .executableTarget(
            name: "mediaengine",
            dependencies: [
                "MediaEngine",
                "Signaling",
                "MediaRouting",
                "LiveStreaming",
                "MediaSimulation",
                "MediaServer",
                // `bench audio-processing` measures AudioProcessor against the shim's own C calls.
                "CAudioProcessing",
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "UnixSignals", package: "swift-service-lifecycle"),
                // `bench rts`'s baseline clients speak plain WebSocket to the server's /echo.
                .product(name: "WSClient", package: "swift-websocket"),
            ],
            path: "tools/mediaengine",
            swiftSettings: [.swiftLanguageMode(.v6)] + instrumented
        ),

        .testTarget(
            name: "MediaEngineTests",
            dependencies: [
                "MediaEngine",
                // The simulations' virtual links drive the core in many tests; net-detect
                // is tested against the server's echo responder.
                "MediaSimulation",
                "MediaRouting",
                "CPNG",
                "TestSupport",
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "_CryptoExtras", package: "swift-crypto"),
            ],
            swiftSettings: testCode
        ),
        .testTarget(name: "MediaRoutingTests", dependencies: ["MediaRouting", "MediaEngine", "TestSupport"], swiftSettings: testCode),
        .testTarget(name: "LiveStreamingTests", dependencies: ["LiveStreaming", "MediaEngine", "TestSupport"], swiftSettings: testCode),
        .testTarget(name: "MediaSimulationTests", dependencies: ["MediaSimulation", "MediaEngine", "TestSupport"], swiftSettings: testCode),
        // NetDetectManager is tested against the server's echo responder.
        .testTarget(name: "SignalingTests", dependencies: ["Signaling", "MediaEngine", "MediaRouting", "TestSupport"],
                    swiftSettings: testCode),
        .testTarget(name: "MediaServerTests", dependencies: [
            "MediaServer", "Signaling", "MediaEngine", "MediaRouting", "LiveStreaming", "TestSupport", .product(name: "PostgresNIO", package: "postgres-nio"),
        ], swiftSettings: testCode),
        // Runs programs (the CLI, ffmpeg, GStreamer) for the CLI and interop tests, and
        // heavy tests off Swift's cooperative threads.
        .target(
            name: "TestSupport",
            // MediaEngine for the STUN probes of the NAT lab's real peers (coturn, the server)
            // and coturn's REST credentials (TURNCredentials; a lab test checks them against openssl);
            // MediaServer for coturn's configuration (CoturnConfiguration).
            dependencies: ["MediaEngine", "MediaRouting", "MediaServer"],
            path: "Tests/TestSupport",
            swiftSettings: [.swiftLanguageMode(.v6)] + instrumented
        ),
        .testTarget(name: "CLITests", dependencies: ["mediaengine", "MediaEngine", "MediaSimulation", "Signaling", "TestSupport"],
                    swiftSettings: testCode),
        .testTarget(name: "InteropTests", dependencies: ["mediaengine", "MediaEngine", "TestSupport"], swiftSettings: testCode),
        .testTarget(name: "CModulesTests", dependencies: ["COpus", "CVpx", "CSRTP", "CALSA", "CV4L2"], swiftSettings: testCode),
        // Fuzz targets: each feeds arbitrary bytes to a parser (or a per-packet path) and
        // checks its properties. The `Fuzz` package runs them under libFuzzer;
        // FuzzCorpusTests replays their corpora and every finding's input in `swift test`.
        .target(
            name: "FuzzTargets",
            dependencies: ["MediaEngine", "MediaRouting", "LiveStreaming", "Signaling"],
            path: "Tests/FuzzTargets",
            swiftSettings: [.swiftLanguageMode(.v6)] + instrumented
        ),
        .testTarget(name: "FuzzCorpusTests", dependencies: ["FuzzTargets", "MediaEngine", "Signaling"], swiftSettings: testCode),
    ]
)

// libwebrtc-audio-processing's headers are C++11 and build as C++17 (CAudioProcessing).
package.cxxLanguageStandard = .cxx17

// The libFuzzer driver, in the fuzzer build only (`tools/fuzz`): it links libFuzzer, which
// no other build has. Its sources live beside the corpora in Fuzz/.
if sanitizer == "fuzzer" {
    package.targets += [
        // libFuzzer's driver entry point, which the Swift toolchain's runtime provides.
        .target(name: "CLibFuzzer", path: "Fuzz/Sources/CLibFuzzer"),
        .executableTarget(
            name: "mediaengine-fuzz",
            dependencies: ["CLibFuzzer", "FuzzTargets"],
            path: "Fuzz/Sources/mediaengine-fuzz",
            swiftSettings: [.swiftLanguageMode(.v6)] + instrumented,
            // gold fails with an internal error on the sanitized objects; the toolchain's lld links them.
            linkerSettings: [.unsafeFlags(sanitizerFlags + ["-use-ld=lld"])]
        ),
    ]
    package.products += [.executable(name: "mediaengine-fuzz", targets: ["mediaengine-fuzz"])]
}

// `tools/sanitize thread --ci` builds only the test targets whose suites it runs
// (MEDIAENGINE_TESTS, comma-separated) and the targets they need: the instrumented build
// then compiles neither the other tests nor the CLI.
if let only = Context.environment["MEDIAENGINE_TESTS"] {
    let kept = Set(only.split(separator: ",").map(String.init))
    let byName = Dictionary(uniqueKeysWithValues: package.targets.map { ($0.name, $0) })
    var needed = Set<String>()
    var pending = package.targets.filter { $0.type == .test && kept.contains($0.name) }.map(\.name)
    while let name = pending.popLast() {
        guard needed.insert(name).inserted, let target = byName[name] else { continue }
        for dependency in target.dependencies {
            switch dependency {
            case .targetItem(let name, _), .byNameItem(let name, _): pending.append(name)
            default: break
            }
        }
    }
    package.targets.removeAll { !needed.contains($0.name) }
    package.products.removeAll { product in
        switch product {
        case let library as Product.Library: return !library.targets.allSatisfy(needed.contains)
        case let executable as Product.Executable: return !executable.targets.allSatisfy(needed.contains)
        default: return false
        }
    }
}
