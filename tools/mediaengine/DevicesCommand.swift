import ArgumentParser
import Foundation
import MediaEngine

struct DevicesCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "devices",
        abstract: "List microphones and speakers (ALSA) and cameras (V4L2) that sources and sinks can name.",
        discussion: """
        ALSA PCMs are named as alsa:NAME in --audio and --play; cameras as v4l2:/dev/videoN[:WxH[@FPS]] in --video.
        """
    )

    @Flag(help: "Print the listing as JSON.")
    var json = false

    /// Everything found, with the reason when a kind of device could not be listed.
    struct Listing: Codable {
        var alsa: ALSADeviceList?
        var alsaError: String?
        var v4l2: [V4L2DeviceInfo]
    }

    func run() throws {
        var listing = Listing(alsa: nil, alsaError: nil, v4l2: V4L2DeviceInfo.list())
        do {
            listing.alsa = try ALSADevices.list()
        } catch {
            listing.alsaError = error.message
        }
        if json {
            let encoder = JSONEncoder()
            encoder.outputFormatting = [.prettyPrinted, .sortedKeys]
            print(String(decoding: try encoder.encode(listing), as: UTF8.self))
        } else {
            print(Self.text(listing), terminator: "")
        }
    }

    static func text(_ listing: Listing) -> String {
        var lines: [String] = []
        if let error = listing.alsaError {
            lines.append("ALSA: cannot list devices: \(error)")
        } else if let alsa = listing.alsa {
            lines.append(alsa.cards.isEmpty ? "ALSA sound cards: none" : "ALSA sound cards:")
            for card in alsa.cards { lines.append("  card \(card.index): \(card.name) (\(card.longName))") }
            lines.append(alsa.pcms.isEmpty ? "ALSA PCMs: none" : "ALSA PCMs (use as alsa:NAME):")
            for pcm in alsa.pcms {
                let description = (pcm.description ?? "").split(separator: "\n").joined(separator: " / ")
                lines.append("  \(pcm.name)  [\(pcm.direction.rawValue)]" + (description.isEmpty ? "" : "  \(description)"))
            }
        }
        if listing.v4l2.isEmpty {
            lines.append("V4L2 cameras: none (no capture device in /dev/video*)")
        } else {
            lines.append("V4L2 cameras (use as v4l2:PATH[:WxH[@FPS]]):")
            for device in listing.v4l2 {
                lines.append("  \(device.path)  \(device.card) (\(device.driver), \(device.busInfo))")
                for format in device.formats {
                    let sizes = format.frameSizes.map { size -> String in
                        let rates = size.intervals.map { interval -> String in
                            let fps = interval.minimum.framesPerSecond
                            return fps == fps.rounded() ? "\(Int(fps))" : String(format: "%.2f", fps)
                        }
                        return "\(size.width)x\(size.height)" + (rates.isEmpty ? "" : "@" + rates.joined(separator: ","))
                    }
                    lines.append("    \(format.pixelFormat) (\(format.description))\(format.isEmulated ? " emulated" : ""): "
                        + sizes.joined(separator: " "))
                }
            }
        }
        return lines.joined(separator: "\n") + "\n"
    }
}
