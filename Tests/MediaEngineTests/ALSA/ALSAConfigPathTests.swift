import Foundation
import Testing
import TestSupport
@testable import MediaEngine

/// What the child process reports back.
private struct ChildReport: Codable {
    var samples: [Int16] = []
    var format: ALSAStreamFormat?
    var pcms: [ALSAPCMDescription] = []
    var error: String?
}

private let childOutput = ProcessInfo.processInfo.environment["MEDIAENGINE_ALSA_CHILD_OUTPUT"]

/// The route the CLI uses: `ALSA_CONFIG_PATH` names a file defining a `file` PCM, and
/// `ALSACapture(name:)`, with no configuration text, opens it in a fresh process.
///
/// ALSA reads `ALSA_CONFIG_PATH` when it first loads its global configuration, so setting
/// it inside this process would race the other tests; the test binary runs itself again
/// instead, with only `ALSAEnvironmentChild` selected.
@Suite struct ALSAConfigPath {
    @Test func aPCMFromALSAConfigPathOpensByNameInAnotherProcess() throws {
        let directory = try ALSAFixture.directory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let file = ALSAFixture.noise(count: 48_000, seed: 21)
        let raw = directory.appendingPathComponent("env.raw")
        try ALSAFixture.writeRaw(file, to: raw)
        let configuration = directory.appendingPathComponent("asound.conf")
        try ALSAFixture.filePCM("envtone", reading: raw.path, hint: "MediaEngine test tone").write(to: configuration, atomically: true, encoding: .utf8)
        let output = directory.appendingPathComponent("report.json")

        let child = Process()
        child.executableURL = URL(fileURLWithPath: "/proc/self/exe").resolvingSymlinksInPath()
        child.arguments = ["--testing-library", "swift-testing", "--filter", "ALSAEnvironmentChild"]
        var environment = ProcessInfo.processInfo.environment
        environment["ALSA_CONFIG_PATH"] = configuration.path
        environment["MEDIAENGINE_ALSA_CHILD_OUTPUT"] = output.path
        child.environment = environment
        child.standardOutput = FileHandle(forWritingAtPath: "/dev/null")
        child.standardError = FileHandle(forWritingAtPath: "/dev/null")
        try child.run()
        eventuallyBlocking(timeout: .seconds(60)) { !child.isRunning }
        if child.isRunning { child.terminate() }
        child.waitUntilExit()
        #expect(child.terminationStatus == 0)

        let report = try JSONDecoder().decode(ChildReport.self, from: Data(contentsOf: output))
        #expect(report.error == nil)
        #expect(report.format?.sampleRate == 48_000)
        #expect(ALSAFixture.firstDifference(report.samples, file.prefix(report.samples.count)) == nil)
        #expect(report.samples.count == 9_600)
        #expect(report.pcms.contains(ALSAPCMDescription(name: "envtone", description: "MediaEngine test tone", direction: .both)))
    }
}

/// The child side of `ALSAConfigPath`; runs only in the process that test starts.
@Suite struct ALSAEnvironmentChild {
    @Test(.enabled(if: childOutput != nil, "runs only in the process ALSAConfigPath starts"))
    func captureByNameFromTheEnvironmentsConfiguration() throws {
        var report = ChildReport()
        defer {
            if let childOutput, let data = try? JSONEncoder().encode(report) {
                _ = FileManager.default.createFile(atPath: childOutput, contents: data)
            }
        }
        do {
            let capture = try ALSACapture(name: "envtone", options: .init(readTimeout: .milliseconds(500)))
            defer { capture.stop() }
            report.format = capture.deviceFormat
            var frame = AudioFrame(layout: .mono, samplesPerChannel: 960)
            for _ in 0..<10 {
                guard try capture.read(into: &frame) else { break }
                report.samples += frame.samples
            }
            report.pcms = try ALSADevices.pcms()
        } catch {
            report.error = "\(error)"
            throw error
        }
    }
}
