import CALSA
import Foundation
import Testing
@testable import MediaEngine

/// Opening what is not there, configuration that does not parse, options that cannot
/// work, and the stream errors a device can return: each is a typed `DeviceError` whose
/// message starts with the PCM's name.
@Suite struct ALSAErrors {
    @Test func anUnknownPCMNameIsNotFound() {
        let error = #expect(throws: DeviceError.self) {
            try ALSACapture(name: "no-such-pcm", configuration: "pcm.other { type null }\n")
        }
        #expect(error?.code == .notFound)
        #expect(error?.device == "no-such-pcm")
        #expect(error?.message == "no-such-pcm: cannot open for capture: No such file or directory (-2)")
    }

    /// Through the global configuration too (alsa.conf here, or ALSA_CONFIG_PATH).
    @Test func anUnknownPCMNameInTheGlobalConfigurationIsNotFound() {
        let error = #expect(throws: DeviceError.self) { try ALSAPlayback(name: "no-such-pcm-either") }
        #expect(error?.code == .notFound)
        #expect(error?.message.hasPrefix("no-such-pcm-either: cannot open for playback") == true)
    }

    /// With no sound card, `hw:` names fail the way a missing card does.
    @Test(.enabled(if: !FileManager.default.fileExists(atPath: "/dev/snd"), "this machine has a sound card"))
    func aMissingCardIsNotFound() {
        let error = #expect(throws: DeviceError.self) { try ALSACapture(name: "hw:7,0") }
        #expect(error?.code == .notFound)
        #expect(error?.device == "hw:7,0")
    }

    @Test(arguments: ["pcm.broken { type null ", "}}} ;;; not a configuration", "pcm.x { type file infile }"])
    func configurationTextThatDoesNotParseIsATypedError(text: String) {
        let error = #expect(throws: DeviceError.self) { try ALSACapture(name: "broken", configuration: text) }
        #expect(error?.code == .ioFailed || error?.code == .notFound)
        #expect(error?.message.hasPrefix("broken: ") == true)
    }

    @Test func garbageConfigurationSaysItDoesNotParse() {
        let error = #expect(throws: DeviceError.self) { try ALSACapture(name: "broken", configuration: "pcm.broken { type null ") }
        #expect(error?.code == .ioFailed)
        #expect(error?.message.contains("does not parse") == true)
    }

    /// A PCM whose plugin does not exist, or whose file is missing, is not found.
    @Test(arguments: ["pcm.ghost { type no_such_plugin }\n",
                      ALSAFixture.filePCM("ghost", reading: "/nonexistent/audio.raw")])
    func aPCMThatCannotBeBuiltIsNotFound(text: String) {
        let error = #expect(throws: DeviceError.self) { try ALSACapture(name: "ghost", configuration: text) }
        #expect(error?.code == .notFound)
        #expect(error?.message.hasPrefix("ghost: cannot open for capture") == true)
    }

    /// A `mulaw` PCM over a linear slave only takes MU_LAW samples: no S16 at all, so it
    /// is refused with advice to go through a plug PCM.
    @Test func aPCMWithoutS16IsUnsupportedFormatSuggestingPlughw() {
        let text = "pcm.ulaw { type mulaw slave { pcm { type null } format S16_LE } }\n"
        let error = #expect(throws: DeviceError.self) { try ALSACapture(name: "ulaw", configuration: text) }
        #expect(error?.code == .unsupportedFormat)
        #expect(error?.message.hasPrefix("ulaw: cannot do signed 16-bit little-endian samples") == true)
        #expect(error?.message.contains("plughw:") == true)
        #expect(throws: DeviceError.self) { try ALSAPlayback(name: "ulaw", configuration: text) }
    }

    @Test func impossibleOptionsAreRefusedBeforeOpening() {
        let pcm = "pcm.n { type null }\n"
        let frame = #expect(throws: DeviceError.self) {
            try ALSACapture(name: "n", options: .init(frameDuration: .milliseconds(15)), configuration: pcm)
        }
        #expect(frame?.code == .unsupportedFormat)
        #expect(frame?.message.contains("10, 20, 40 or 60 ms") == true)
        #expect(throws: DeviceError.self) { try ALSACapture(name: "n", options: .init(queueCapacity: 0), configuration: pcm) }
        #expect(throws: DeviceError.self) { try ALSACapture(name: "n", options: .init(deviceRate: 10), configuration: pcm) }
        #expect(throws: DeviceError.self) {
            try ALSAPlayback(name: "n", options: .init(periodDuration: .milliseconds(25)), configuration: pcm)
        }
    }

    /// Open errors by errno: ALSA's answer decides the code.
    @Test(arguments: [
        (ENOENT, DeviceError.Code.notFound), (ENODEV, .notFound), (ENXIO, .notFound),
        (EBUSY, .busy), (EACCES, .permissionDenied), (EPERM, .permissionDenied),
        (EIO, .ioFailed), (EINVAL, .ioFailed),
    ])
    func openErrorsMapToCodes(errno: Int32, code: DeviceError.Code) {
        let error = ALSAStatus.openError(-errno, device: "hw:1,0", direction: "capture")
        #expect(error.code == code)
        #expect(error.message.hasPrefix("hw:1,0: cannot open for capture: \(String(cString: snd_strerror(-errno)))"))
    }

    /// Read results: overruns and suspends recover, interruptions retry, a vanished device
    /// and a broken stream end it with errors naming the device.
    @Test func readResultsAreSorted() {
        typealias Outcome = ALSACaptureWorker.ReadOutcome
        #expect(ALSACaptureWorker.classify(960, device: "mic") == .frames(960))
        #expect(ALSACaptureWorker.classify(-snd_pcm_sframes_t(EPIPE), device: "mic") == .recover(overrun: true))
        #expect(ALSACaptureWorker.classify(-snd_pcm_sframes_t(ESTRPIPE), device: "mic") == .recover(overrun: false))
        #expect(ALSACaptureWorker.classify(-snd_pcm_sframes_t(EINTR), device: "mic") == .retry)
        guard case .fatal(let gone) = ALSACaptureWorker.classify(-snd_pcm_sframes_t(ENODEV), device: "mic") else {
            Issue.record("ENODEV must end the stream")
            return
        }
        #expect(gone.code == .disconnected)
        #expect(gone.message.hasPrefix("mic: the device went away"))
        guard case .fatal(let bad) = ALSACaptureWorker.classify(-snd_pcm_sframes_t(EBADFD), device: "mic") else {
            Issue.record("EBADFD must end the stream")
            return
        }
        #expect(bad.code == .ioFailed)
        #expect(bad.message.hasPrefix("mic: reading audio failed: "))
    }
}
