import BenchmarkSupport
import CodecBaseline
import MediaEngine

// Each fixture is built once, before warm-up, and keeps its codec across samples so
// that the measured loop sees the steady state. `next` walks the inputs in a cycle.

/// `Opus.Encoder` over the one-second clip.
final class SwiftOpusEncoding {
    private let clip = PCMClip(frameCount: Settings.opusFrameCount, samplesPerFrame: Settings.opus.samplesPerFrame)
    private let encoder: Opus.Encoder
    let packet = UnsafeMutableRawBufferPointer.allocate(byteCount: Opus.maxPacketSize, alignment: 16)
    private var next = 0

    init() throws {
        encoder = try Opus.Encoder(configuration: Settings.opus)
    }

    deinit { packet.deallocate() }

    /// Encodes the next frame into `packet`; returns its length.
    func encodeNext() throws -> Int {
        let length = try encoder.encode(clip.frame(next), into: packet)
        next = next + 1 == clip.frameCount ? 0 : next + 1
        return length
    }
}

/// The C baseline over the same clip.
final class BaselineOpusEncoding {
    private let clip = PCMClip(frameCount: Settings.opusFrameCount, samplesPerFrame: Settings.opus.samplesPerFrame)
    private let encoder: OpaquePointer
    let packet = UnsafeMutableRawBufferPointer.allocate(byteCount: Opus.maxPacketSize, alignment: 16)
    private var next = 0

    init() throws {
        let settings = Settings.opus
        let application: BaselineOpusApplication = switch settings.application {
        case .voip: BaselineOpusApplicationVoIP
        case .audio: BaselineOpusApplicationAudio
        case .restrictedLowDelay: BaselineOpusApplicationRestrictedLowDelay
        }
        guard let encoder = baseline_opus_encoder_create(
            Int32(settings.sampleRate), Int32(settings.layout.count), application, Int32(settings.bitrate),
            Int32(settings.complexity), settings.inbandFEC ? 1 : 0, Int32(settings.expectedPacketLossPercent),
            settings.discontinuousTransmission ? 1 : 0, settings.variableBitrate ? 1 : 0,
            Int32(settings.samplesPerFrame))
        else { throw BenchmarkFailure("baseline: libopus refused the encoder settings") }
        self.encoder = encoder
    }

    deinit {
        baseline_opus_encoder_destroy(encoder)
        packet.deallocate()
    }

    func encodeNext() throws -> Int {
        let pcm = clip.frame(next)
        let length = baseline_opus_encode(encoder, pcm.baseAddress, pcm.count,
                                          packet.baseAddress?.assumingMemoryBound(to: UInt8.self), packet.count)
        if length < 0 { throw BenchmarkFailure("baseline: opus_encode failed (\(length))") }
        next = next + 1 == clip.frameCount ? 0 : next + 1
        return Int(length)
    }
}

/// The clip as Opus packets, encoded once by `Opus.Encoder`.
func encodeOpusClip() throws -> PacketSequence {
    let encoding = try SwiftOpusEncoding()
    var packets: [[UInt8]] = []
    for _ in 0..<Settings.opusFrameCount {
        let length = try encoding.encodeNext()
        packets.append(Array(UnsafeRawBufferPointer(rebasing: encoding.packet[..<length])))
    }
    return PacketSequence(packets)
}

/// `Opus.Decoder` over the encoded clip.
final class SwiftOpusDecoding {
    private let packets: PacketSequence
    private let decoder: Opus.Decoder
    let pcm = UnsafeMutableBufferPointer<Int16>.allocate(capacity: Opus.maxSamplesPerPacket)
    private var next = 0

    init(_ packets: PacketSequence) throws {
        self.packets = packets
        decoder = try Opus.Decoder(sampleRate: Settings.opus.sampleRate, layout: Settings.opus.layout)
        pcm.initialize(repeating: 0)
    }

    deinit { pcm.deallocate() }

    /// Decodes the next packet into `pcm`; returns samples per channel.
    func decodeNext() throws -> Int {
        let count = try decoder.decode(packets[next], into: pcm)
        next = next + 1 == packets.count ? 0 : next + 1
        return count
    }
}

/// The C baseline over the same packets.
final class BaselineOpusDecoding {
    private let packets: PacketSequence
    private let decoder: OpaquePointer
    let pcm = UnsafeMutableBufferPointer<Int16>.allocate(capacity: Opus.maxSamplesPerPacket)
    private var next = 0

    init(_ packets: PacketSequence) throws {
        self.packets = packets
        guard let decoder = baseline_opus_decoder_create(Int32(Settings.opus.sampleRate),
                                                         Int32(Settings.opus.layout.count))
        else { throw BenchmarkFailure("baseline: libopus refused the decoder settings") }
        self.decoder = decoder
        pcm.initialize(repeating: 0)
    }

    deinit {
        baseline_opus_decoder_destroy(decoder)
        pcm.deallocate()
    }

    func decodeNext() throws -> Int {
        let packet = packets[next]
        let count = baseline_opus_decode(decoder, packet.baseAddress?.assumingMemoryBound(to: UInt8.self),
                                         packet.count, pcm.baseAddress, pcm.count)
        if count < 0 { throw BenchmarkFailure("baseline: opus_decode failed (\(count))") }
        next = next + 1 == packets.count ? 0 : next + 1
        return Int(count)
    }
}

/// Throws unless the wrapper and the baseline turn the same input into the same bytes,
/// which shows the baseline is configured as the wrapper is.
func checkOpusAgreement(_ packets: PacketSequence) throws {
    let swiftEncoding = try SwiftOpusEncoding()
    let baselineEncoding = try BaselineOpusEncoding()
    for frame in 0..<2 * Settings.opusFrameCount {
        let swiftLength = try swiftEncoding.encodeNext()
        let baselineLength = try baselineEncoding.encodeNext()
        guard swiftLength == baselineLength,
              swiftEncoding.packet[..<swiftLength].elementsEqual(baselineEncoding.packet[..<baselineLength])
        else {
            throw BenchmarkFailure("Opus: wrapper and baseline packets differ at frame \(frame) "
                                   + "(\(swiftLength) vs \(baselineLength) bytes); the baseline's settings drifted")
        }
    }
    let swiftDecoding = try SwiftOpusDecoding(packets)
    let baselineDecoding = try BaselineOpusDecoding(packets)
    for packet in 0..<packets.count {
        let swiftCount = try swiftDecoding.decodeNext()
        let baselineCount = try baselineDecoding.decodeNext()
        guard swiftCount == baselineCount,
              swiftDecoding.pcm[..<swiftCount].elementsEqual(baselineDecoding.pcm[..<baselineCount])
        else { throw BenchmarkFailure("Opus: wrapper and baseline decode packet \(packet) differently") }
    }
}
