import Foundation
@testable import MediaEngine

/// Raw S16_LE files and the ALSA configurations that read them through the `file`
/// plugin over a `null` slave: capture through real alsa-lib with no sound card.
enum ALSAFixture {
    /// Deterministic white noise: every 20 ms window is unique, so an offset or a
    /// repeated period cannot pass for the right samples.
    static func noise(count: Int, seed: UInt64) -> [Int16] {
        var state = seed | 1
        return (0..<count).map { _ in
            state ^= state << 13
            state ^= state >> 7
            state ^= state << 17
            return Int16(truncatingIfNeeded: state >> 48) / 2
        }
    }

    /// A sine of `frequency` Hz at `rate`, interleaved into `channels` identical channels.
    static func tone(_ frequency: Double, rate: Int, seconds: Double, channels: Int = 1, amplitude: Double = 12_000) -> [Int16] {
        let frames = Int(Double(rate) * seconds)
        var samples: [Int16] = []
        samples.reserveCapacity(frames * channels)
        for index in 0..<frames {
            let value = Int16((sin(2 * Double.pi * frequency * Double(index) / Double(rate)) * amplitude).rounded())
            for _ in 0..<channels { samples.append(value) }
        }
        return samples
    }

    /// Writes samples as a headerless S16_LE file.
    static func writeRaw(_ samples: [Int16], to url: URL) throws {
        try samples.map(\.littleEndian).withUnsafeBytes { try Data($0).write(to: url) }
    }

    /// `pcm.NAME` reading `path` through the `file` plugin. The slave is defined inline
    /// because this text replaces alsa.conf. `channels` forces the device's channel count
    /// with a `multi` slave (the `null` plugin alone accepts any count).
    static func filePCM(_ name: String, reading path: String, channels: Int? = nil, hint: String? = nil) -> String {
        var slave = "{ type null }"
        if let channels {
            let bindings = (0..<channels).map { "bindings.\($0) { slave a channel \($0) }" }.joined(separator: " ")
            slave = "{ type multi slaves.a { pcm { type null } channels \(channels) } \(bindings) }"
        }
        let hintText = hint.map { " hint { show on description \"\($0)\" }" } ?? ""
        return """
        pcm.\(name) {
            type file
            slave { pcm \(slave) }
            file "/dev/null"
            infile "\(path)"
            format "raw"\(hintText)
        }

        """
    }

    /// Where `actual` first differs from `expected`, or nil when they are equal. Large
    /// arrays are compared with this rather than `#expect(a == b)`, whose failure report
    /// diffs them and takes minutes for a second of audio.
    static func firstDifference(_ actual: some Collection<Int16>, _ expected: some Collection<Int16>) -> String? {
        for (index, (a, b)) in zip(actual, expected).enumerated() where a != b {
            return "sample \(index): \(a) instead of \(b)"
        }
        return actual.count == expected.count ? nil : "\(actual.count) samples instead of \(expected.count)"
    }

    /// A fresh directory for one test's files.
    static func directory() throws -> URL {
        let url = FileManager.default.temporaryDirectory.appendingPathComponent("alsa-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: url, withIntermediateDirectories: true)
        return url
    }
}
