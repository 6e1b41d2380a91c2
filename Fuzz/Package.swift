// swift-tools-version: 6.1
import PackageDescription

// The libFuzzer driver lives in its own package so the main package never builds with
// sanitizers. `tools/fuzz` builds it with `-sanitize=fuzzer,address`, which instruments
// every Swift module (the engine included) for coverage and AddressSanitizer. The targets
// themselves are the main package's `FuzzTargets` library, which the corpus tests also run.
let package = Package(
    name: "MediaEngineFuzz",
    dependencies: [
        // Named explicitly: a path dependency's identity is its directory name, which
        // differs between clones (the `main` work tree, CI's checkout, ...).
        .package(name: "MediaEngine", path: ".."),
    ],
    targets: [
        // libFuzzer's driver entry point, which the Swift toolchain's runtime provides.
        .target(name: "CLibFuzzer"),
        .executableTarget(
            name: "mediaengine-fuzz",
            dependencies: ["CLibFuzzer", .product(name: "FuzzTargets", package: "MediaEngine")],
            swiftSettings: [.swiftLanguageMode(.v6)],
            // gold fails with an internal error on the sanitized objects; the toolchain's lld links them.
            linkerSettings: [.unsafeFlags(["-use-ld=lld"])]
        ),
    ]
)
