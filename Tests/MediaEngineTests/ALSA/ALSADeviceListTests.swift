import Foundation
import Testing
@testable import MediaEngine

private let hasSoundCard = FileManager.default.fileExists(atPath: "/dev/snd")

/// Listing cards and PCMs on whatever machine runs the tests, and capturing from a real
/// card when there is one.
@Suite struct ALSADeviceListing {
    /// With no sound card the card list is empty and the PCM list holds only software
    /// PCMs from the configuration (`null` from the stock alsa.conf); either way the
    /// listing works and survives a JSON round trip, as `mediaengine devices --json`
    /// will print it.
    @Test func listingWorksAndRoundTripsThroughJSON() throws {
        let list = try ALSADevices.list()
        print("ALSA cards: \(list.cards.map(\.name)), PCMs: \(list.pcms.map(\.name))")
        #expect(list.pcms.allSatisfy { !$0.name.isEmpty })
        #expect(list.cards.allSatisfy { $0.index >= 0 && !$0.name.isEmpty })
        if !hasSoundCard { #expect(list.cards.isEmpty) }
        if ProcessInfo.processInfo.environment["ALSA_CONFIG_PATH"] == nil,
           FileManager.default.fileExists(atPath: "/usr/share/alsa/alsa.conf") {
            #expect(list.pcms.contains { $0.name == "null" && $0.direction == .both })
        }
        let json = try JSONEncoder().encode(list)
        #expect(try JSONDecoder().decode(ALSADeviceList.self, from: json) == list)
    }

    @Test func theJSONShapeIsStable() throws {
        let list = ALSADeviceList(cards: [ALSACardDescription(index: 1, name: "USB Audio", longName: "Generic USB Audio at usb-1")],
                                  pcms: [ALSAPCMDescription(name: "hw:CARD=Audio,DEV=0", description: "USB Audio | Direct hardware", direction: .capture)])
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys]
        let text = String(decoding: try encoder.encode(list), as: UTF8.self)
        #expect(text == #"{"cards":[{"index":1,"longName":"Generic USB Audio at usb-1","name":"USB Audio"}],"pcms":[{"description":"USB Audio | Direct hardware","direction":"capture","name":"hw:CARD=Audio,DEV=0"}]}"#)
    }

    /// Runs only where a sound card exists: half a second from `default` arrives as 20 ms
    /// frames with rising timestamps and no device errors. Skipped here: no /dev/snd.
    @Test(.enabled(if: hasSoundCard, "no sound card on this machine (/dev/snd is missing): hardware capture skipped"))
    func aRealCardCapturesFromDefault() throws {
        let capture = try ALSACapture(name: "default")
        defer { capture.stop() }
        var frame = AudioFrame(layout: .mono, samplesPerChannel: 960)
        var last: Duration?
        for _ in 0..<25 {
            #expect(try capture.read(into: &frame))
            if let last { #expect(frame.timestamp > last) }
            last = frame.timestamp
        }
        #expect(capture.statistics.framesCaptured >= 25)
    }
}
