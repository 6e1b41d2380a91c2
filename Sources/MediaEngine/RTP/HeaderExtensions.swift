import Foundation

/// The header extensions the engine sends, by URI, and the local IDs a session maps
/// them to (announced in SDP `a=extmap`).
public struct RTPExtensionMap: Sendable, Hashable {
    /// RFC 6464 client-to-mixer audio level.
    public static let audioLevelURI = "urn:ietf:params:rtp-hdrext:ssrc-audio-level"
    /// Transport-wide sequence number (draft-holmer-rmcat-transport-wide-cc-extensions-01).
    public static let transportSequenceNumberURI = "http://www.ietf.org/id/draft-holmer-rmcat-transport-wide-cc-extensions-01"

    /// RFC 8843 MID: which media section (stream) a packet belongs to.
    public static let midURI = "urn:ietf:params:rtp-hdrext:sdes:mid"
    /// RFC 8852 RTP stream ID: which simulcast layer (`a=rid`) of its section a packet is.
    public static let ridURI = "urn:ietf:params:rtp-hdrext:sdes:rtp-stream-id"

    /// ID for each URI.
    public private(set) var ids: [String: UInt8]

    /// The engine's default map: audio level 1, transport-wide sequence number 3, MID 4
    /// (stamped only by streams that have a MID).
    public static let standard = RTPExtensionMap(ids: [audioLevelURI: 1, transportSequenceNumberURI: 3, midURI: 4])

    public init(ids: [String: UInt8] = [:]) { self.ids = ids }

    /// The ID mapped to `uri`, or nil.
    public func id(for uri: String) -> UInt8? { ids[uri] }

    /// Maps `uri` to `id`.
    public mutating func set(_ uri: String, id: UInt8) { ids[uri] = id }
}

/// RFC 6464 audio level: the level in -dBov (0 loudest, 127 silent) and a voice
/// activity flag, carried in one byte.
public struct AudioLevel: Sendable, Hashable {
    /// 0...127, in -dBov.
    public var level: UInt8
    public var voiceActivity: Bool

    public init(level: UInt8, voiceActivity: Bool) {
        self.level = min(level, 127)
        self.voiceActivity = voiceActivity
    }

    /// The level of `samples` (RMS relative to a full-scale square wave), with voice
    /// activity set above -50 dBov.
    public init(samples: UnsafeBufferPointer<Int16>) {
        var energy = 0.0
        for sample in samples { energy += Double(sample) * Double(sample) }
        self.init(rms: samples.isEmpty ? 0 : (energy / Double(samples.count)).squareRoot() / 32_768)
    }

    /// The level of a signal whose RMS is `rms` of full scale (0...1), with voice activity
    /// set above -50 dBov.
    public init(rms: Double) {
        let dBov = rms > 0 ? 20 * log10(rms) : -127
        let level = UInt8(max(0, min(127, (-dBov).rounded())))
        self.init(level: level, voiceActivity: level < 50)
    }

    /// The level as an RMS amplitude, 0...1 of full scale (0 for 127, silence).
    public var amplitude: Double { level >= 127 ? 0 : pow(10, -Double(level) / 20) }

    /// The byte on the wire: V in the top bit, the level below.
    public var byte: UInt8 { (voiceActivity ? 0x80 : 0) | level }

    public init(byte: UInt8) { self.init(level: byte & 0x7F, voiceActivity: byte & 0x80 != 0) }
}
