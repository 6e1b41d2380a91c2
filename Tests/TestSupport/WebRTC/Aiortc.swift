import Foundation

/// aiortc, the Python WebRTC stack, as a test peer: the pinned version `tools/bootstrap`
/// installs in a virtual environment of its own, and the scripts in `Tests/Peers/aiortc`.
public enum Aiortc {
    public static let version = "1.16.0"

    /// The venv's interpreter (MEDIAENGINE_PEERS, else ~/.cache/mediaengine-peers, as
    /// `tools/bootstrap` makes it).
    public static var python: URL {
        let environment = ProcessInfo.processInfo.environment
        let peers = environment["MEDIAENGINE_PEERS"].map { URL(fileURLWithPath: $0) }
            ?? URL(fileURLWithPath: environment["HOME"] ?? "/root").appendingPathComponent(".cache/mediaengine-peers")
        return peers.appendingPathComponent("aiortc-\(version)/bin/python")
    }

    /// A script of `Tests/Peers/aiortc`.
    public static func script(_ name: String) -> URL {
        URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
            .appendingPathComponent("Peers/aiortc/\(name)")
    }

    /// Runs `script` with `arguments` (standard input fed by `write`).
    /// - Throws: `ToolFailure` when the venv is missing (run `tools/bootstrap`).
    public static func start(_ script: String, _ arguments: [String] = []) throws -> BackgroundProcess {
        guard FileManager.default.isExecutableFile(atPath: python.path) else {
            throw ToolFailure("aiortc \(version) is not installed at \(python.path): run tools/bootstrap")
        }
        return try BackgroundProcess(executable: python, arguments: [Self.script(script).path] + arguments, input: true)
    }

    /// The text between the lines `-----BEGIN NAME-----` and `-----END NAME-----` that a
    /// peer script printed, or nil.
    public static func block(_ name: String, in output: String) -> String? {
        guard let begin = output.range(of: "-----BEGIN \(name)-----\n"),
              let end = output.range(of: "-----END \(name)-----", range: begin.upperBound..<output.endIndex) else { return nil }
        return String(output[begin.upperBound..<end.lowerBound])
    }
}
