import Foundation
import MediaEngine
import TestSupport
import Testing

/// A machine without a sound card: an ALSA configuration (selected with ALSA_CONFIG_PATH,
/// which replaces alsa.conf) whose PCM `enginetone` captures a raw file of a 440 Hz tone.
private func toneDevice(in directory: URL, seconds: Double = 3) throws -> [String: String] {
    var tone = ToneGenerator(.sine(440), amplitude: 0.5)
    let samples = tone.clip(seconds: seconds).samples
    let raw = directory.appendingPathComponent("tone.raw")
    try samples.withUnsafeBytes { try Data($0).write(to: raw) }
    let configuration = directory.appendingPathComponent("asound.conf")
    try """
    pcm.enginetone {
        type file
        slave { pcm { type null } }
        file "/dev/null"
        infile "\(raw.path)"
        format "raw"
        hint { show on description "MediaEngine test tone" }
    }
    pcm.enginespeaker {
        type null
        hint { show on description "MediaEngine test speaker" }
    }

    """.write(to: configuration, atomically: true, encoding: .utf8)
    return ["ALSA_CONFIG_PATH": configuration.path]
}

@Suite struct DeviceCommands {
    @Test func devicesListsThePCMsAndSaysWhenThereAreNoCameras() async throws {
        try await Heavy.run {
            let directory = try temporaryDirectory("devices")
            defer { try? FileManager.default.removeItem(at: directory) }
            let environment = try toneDevice(in: directory)
            let text = try CLI.run(["devices"], environment: environment)
            #expect(text.status == 0, "\(text.stderr)")
            #expect(text.stdout.contains("enginetone  [both]  MediaEngine test tone"), "\(text.stdout)")
            let json = try CLI.run(["devices", "--json"], environment: environment)
            let object = try JSONSerialization.jsonObject(with: Data(json.stdout.utf8)) as? [String: Any]
            let pcms = (object?["alsa"] as? [String: Any])?["pcms"] as? [[String: Any]]
            #expect(pcms?.contains { $0["name"] as? String == "enginespeaker" } == true)
            let cameras = try #require(object?["v4l2"] as? [Any])
            if cameras.isEmpty {
                #expect(text.stdout.contains("V4L2 cameras: none"))
            } else {
                // A machine with a camera lists it by path.
                #expect(text.stdout.contains("/dev/video"))
            }
        }
    }

    @Test func sendCapturesFromAnALSADeviceAndReceivePlaysToOne() async throws {
        try await Heavy.run {
            let directory = try temporaryDirectory("alsa-send")
            defer { try? FileManager.default.removeItem(at: directory) }
            let environment = try toneDevice(in: directory)
            let probe = try UDPSocket(bindTo: SocketAddress(host: "127.0.0.1", port: 0))
            let port = probe.localAddress.port
            probe.close()
            let sdp = directory.appendingPathComponent("alsa.sdp").path
            let wav = directory.appendingPathComponent("heard.wav").path
            let arguments = ["send", "--to", "127.0.0.1:\(port)", "--audio", "alsa:enginetone", "--no-srtp", "--sdp", sdp]
            #expect(try CLI.run(arguments + ["--sdp-only"], environment: environment).status == 0)
            let receiver = try CLI.start(["receive", "--sdp", sdp, "--record", wav, "--play", "alsa:enginespeaker", "--duration", "20"],
                                         environment: environment)
            #expect(receiver.waitForOutput(containing: "for audio", timeout: 10))
            let sent = try CLI.run(arguments + ["--duration", "2"], environment: environment)
            #expect(sent.status == 0, "\(sent.stderr)")
            let received = try receiver.wait(timeout: 20)
            #expect(received.status == 0, "\(received.stderr)")
            #expect(sent.stdout.contains("sent: audio packets=100"), "\(sent.stdout)")
            let heard = try AudioFile.read(path: wav)
            let frequency = heard.samples.dropFirst(9_600).withUnsafeBufferPointer { AudioQuality.toneFrequency($0) }
            #expect(abs((frequency ?? 0) - 440) < 2, "captured tone arrived at \(frequency ?? 0) Hz")
            #expect(!received.stderr.contains("ALSA lib"), "alsa-lib's own lines are muted: \(received.stderr)")
        }
    }

    @Test(arguments: [
        (["send", "--to", "127.0.0.1:5004", "--audio", "alsa:nosuchpcm", "--no-srtp"], "nosuchpcm: cannot open for capture"),
        (["send", "--to", "127.0.0.1:5004", "--audio", "alsa:", "--no-srtp"], "alsa needs a PCM name"),
        (["send", "--to", "127.0.0.1:5004", "--video", "v4l2:/dev/video63", "--no-srtp"], "/dev/video63"),
        (["receive", "--sdp", "/dev/null", "--play", "speaker"], "audio sink 'speaker' is not one of null, alsa:NAME"),
    ])
    func devicesThatCannotBeOpenedStopTheCommandWithTheirName(arguments: [String], message: String) async throws {
        try await Heavy.run {
            let run = try CLI.run(arguments)
            #expect(run.status != 0)
            #expect(run.stderr.contains(message), "\(run.stderr)")
            #expect(!run.stderr.contains("ALSA lib"))
        }
    }
}
