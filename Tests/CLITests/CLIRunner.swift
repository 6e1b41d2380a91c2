import Foundation

/// What one run of the `mediaengine` executable printed and returned.
struct CLIRun {
    var status: Int32
    var stdout: String
    var stderr: String
}

enum CLI {
    /// The executable sits next to the test bundle in the build products directory.
    static var executable: URL {
        var directory = Bundle.main.bundleURL
        if directory.pathExtension == "xctest" { directory.deleteLastPathComponent() }
        return directory.appendingPathComponent("mediaengine")
    }

    /// Runs `mediaengine arguments...` to completion. Output goes through files, so a
    /// chatty child can never block on a full pipe.
    static func run(_ arguments: [String]) throws -> CLIRun {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("cli-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let outURL = directory.appendingPathComponent("stdout")
        let errURL = directory.appendingPathComponent("stderr")
        try Data().write(to: outURL)
        try Data().write(to: errURL)
        let out = try FileHandle(forWritingTo: outURL)
        let err = try FileHandle(forWritingTo: errURL)
        let process = Process()
        process.executableURL = executable
        process.arguments = arguments
        process.standardOutput = out
        process.standardError = err
        try process.run()
        process.waitUntilExit()
        try out.close()
        try err.close()
        return CLIRun(status: process.terminationStatus,
                      stdout: try String(contentsOf: outURL, encoding: .utf8),
                      stderr: try String(contentsOf: errURL, encoding: .utf8))
    }
}
