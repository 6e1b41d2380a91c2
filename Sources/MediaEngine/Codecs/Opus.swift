import COpus

/// Opus (RFC 6716) through libopus.
public enum Opus {
    /// The largest packet libopus produces for one frame (RFC 6716 section 3.4 limit).
    public static let maxPacketSize = 1275 * 3 + 7

    /// Sample rates libopus accepts.
    public static let supportedSampleRates = [8_000, 12_000, 16_000, 24_000, 48_000]

    /// What the encoder optimises for.
    public enum Application: Sendable, Hashable, CaseIterable, CustomStringConvertible {
        /// Speech; best for calls (SILK and hybrid modes available).
        case voip
        /// Music and mixed content, closest to the input waveform.
        case audio
        /// CELT only, lowest algorithmic delay (no lookahead for SILK).
        case restrictedLowDelay

        var cValue: Int32 {
            switch self {
            case .voip: OPUS_APPLICATION_VOIP
            case .audio: OPUS_APPLICATION_AUDIO
            case .restrictedLowDelay: OPUS_APPLICATION_RESTRICTED_LOWDELAY
            }
        }

        public var description: String {
            switch self {
            case .voip: "voip"
            case .audio: "audio"
            case .restrictedLowDelay: "restricted-low-delay"
            }
        }
    }

    /// The frame durations Opus can encode.
    public enum FrameDuration: Int, Sendable, Hashable, CaseIterable, CustomStringConvertible {
        // Raw values are tenths of a millisecond so 2.5 ms fits an Int.
        case ms2_5 = 25
        case ms5 = 50
        case ms10 = 100
        case ms20 = 200
        case ms40 = 400
        case ms60 = 600

        /// The duration for a number of milliseconds, or nil when Opus cannot encode it.
        public init?(milliseconds: Double) {
            guard let match = FrameDuration.allCases.first(where: { Double($0.rawValue) / 10 == milliseconds }) else {
                return nil
            }
            self = match
        }

        /// Length in milliseconds.
        public var milliseconds: Double { Double(rawValue) / 10 }

        /// Samples per channel at `sampleRate`.
        public func samplesPerChannel(sampleRate: Int = AudioFrame.sampleRate) -> Int {
            sampleRate * rawValue / 10_000
        }

        public var description: String {
            rawValue % 10 == 0 ? "\(rawValue / 10) ms" : "\(milliseconds) ms"
        }
    }

    /// Turns a libopus status into a typed error.
    static func error(_ status: Int32, while action: String) -> CodecError {
        let words = String(cString: opus_strerror(status))
        let code: CodecError.Code = switch status {
        case OPUS_BAD_ARG: .invalidConfiguration
        case OPUS_BUFFER_TOO_SMALL: .bufferTooSmall
        case OPUS_INVALID_PACKET: .corruptPacket
        case OPUS_UNIMPLEMENTED: .unsupported
        case OPUS_ALLOC_FAIL: .outOfMemory
        default: .internalFailure
        }
        return CodecError(code, "opus: \(action) failed: \(words) (\(status))", status: status)
    }

    @inline(__always)
    static func check(_ status: Int32, _ action: @autoclosure () -> String) throws(CodecError) {
        if status != OPUS_OK { throw error(status, while: action()) }
    }
}
