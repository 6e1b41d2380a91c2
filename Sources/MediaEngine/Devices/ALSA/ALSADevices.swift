import CALSA
#if canImport(Glibc)
import Glibc
#endif

/// A PCM ALSA's configuration advertises (its name hints).
public struct ALSAPCMDescription: Sendable, Hashable, Codable {
    /// Which streams a PCM offers.
    public enum Direction: String, Sendable, Hashable, Codable {
        /// Capture only (IOID "Input").
        case capture
        /// Playback only (IOID "Output").
        case playback
        /// Capture and playback (ALSA gives no IOID).
        case both
    }

    /// The name to open (`default`, `hw:CARD=PCH,DEV=0`, `null`, a name from asound.conf).
    public var name: String
    /// ALSA's human description, lines joined with " | "; nil when the hint has none.
    public var description: String?
    /// Capture, playback or both.
    public var direction: Direction

    /// Creates a description.
    public init(name: String, description: String?, direction: Direction) {
        self.name = name
        self.description = description
        self.direction = direction
    }
}

/// A sound card the kernel knows.
public struct ALSACardDescription: Sendable, Hashable, Codable {
    /// The card number (`hw:N`).
    public var index: Int
    /// The short name (`HDA Intel PCH`).
    public var name: String
    /// The long name (driver, bus address, IRQ).
    public var longName: String

    /// Creates a description.
    public init(index: Int, name: String, longName: String) {
        self.index = index
        self.name = name
        self.longName = longName
    }
}

/// What `ALSADevices.list()` found, for `mediaengine devices --json`.
public struct ALSADeviceList: Sendable, Hashable, Codable {
    /// Sound cards, by number.
    public var cards: [ALSACardDescription]
    /// PCMs, in the configuration's order.
    public var pcms: [ALSAPCMDescription]

    /// Creates a list.
    public init(cards: [ALSACardDescription], pcms: [ALSAPCMDescription]) {
        self.cards = cards
        self.pcms = pcms
    }
}

/// Lists ALSA cards and PCMs. On a machine without a sound card both lists are usually
/// empty apart from software PCMs such as `null`; that is not an error.
public enum ALSADevices {
    /// Cards and PCMs together.
    /// - Throws: `DeviceError.ioFailed` when ALSA cannot read its configuration or the
    ///   card list.
    public static func list() throws(DeviceError) -> ALSADeviceList {
        ALSADeviceList(cards: try cards(), pcms: try pcms())
    }

    /// PCMs from `snd_device_name_hint` over every card (NAME, DESC, IOID).
    /// - Throws: `DeviceError.ioFailed` when ALSA cannot build the hints.
    public static func pcms() throws(DeviceError) -> [ALSAPCMDescription] {
        var hints: UnsafeMutablePointer<UnsafeMutableRawPointer?>?
        ALSAPCM.quietLibrary()
        let status = snd_device_name_hint(-1, "pcm", &hints)
        guard status >= 0, let hints else { throw ALSAStatus.error(status, device: "pcm", doing: "listing PCMs") }
        defer { snd_device_name_free_hint(hints) }
        var found: [ALSAPCMDescription] = []
        var index = 0
        while let hint = hints[index] {
            index += 1
            guard let name = take(snd_device_name_get_hint(hint, "NAME")) else { continue }
            let description = take(snd_device_name_get_hint(hint, "DESC"))?
                .split(separator: "\n").joined(separator: " | ")
            let direction: ALSAPCMDescription.Direction
            switch take(snd_device_name_get_hint(hint, "IOID")) {
            case "Input": direction = .capture
            case "Output": direction = .playback
            default: direction = .both
            }
            found.append(ALSAPCMDescription(name: name, description: description, direction: direction))
        }
        return found
    }

    /// Cards from `snd_card_next`, with `snd_card_get_name` / `snd_card_get_longname`.
    /// - Throws: `DeviceError.ioFailed` when the card list cannot be read.
    public static func cards() throws(DeviceError) -> [ALSACardDescription] {
        var found: [ALSACardDescription] = []
        var card: Int32 = -1
        while true {
            let status = snd_card_next(&card)
            guard status >= 0 else { throw ALSAStatus.error(status, device: "cards", doing: "listing sound cards") }
            guard card >= 0 else { return found }
            var name: UnsafeMutablePointer<CChar>?
            var longName: UnsafeMutablePointer<CChar>?
            _ = snd_card_get_name(card, &name)
            _ = snd_card_get_longname(card, &longName)
            let short = take(name) ?? "card \(card)"
            found.append(ALSACardDescription(index: Int(card), name: short, longName: take(longName) ?? short))
        }
    }

    /// A malloc'd C string as a Swift string, freed.
    private static func take(_ string: UnsafeMutablePointer<CChar>?) -> String? {
        guard let string else { return nil }
        defer { free(string) }
        return String(cString: string)
    }
}
