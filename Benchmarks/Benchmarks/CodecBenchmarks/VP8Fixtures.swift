import BenchmarkSupport
import CodecBaseline
import MediaEngine

/// `VP8.Encoder` over the pre-rendered test pattern.
final class SwiftVP8Encoding {
    private let frames: [VideoFrame]
    private let encoder: VP8.Encoder
    let output: UnsafeMutableRawBufferPointer
    private(set) var isKeyframe = false
    private var next = 0

    init(_ frames: [VideoFrame]) throws {
        self.frames = frames
        encoder = try VP8.Encoder(configuration: Settings.vp8())
        output = .allocate(byteCount: encoder.maximumFrameSize, alignment: 16)
    }

    deinit { output.deallocate() }

    /// Encodes the next frame into `output`; returns its length (0 when dropped).
    func encodeNext() throws -> Int {
        let info = try encoder.encode(frames[next], into: output)
        next = next + 1 == frames.count ? 0 : next + 1
        isKeyframe = info?.isKeyframe ?? false
        return info?.byteCount ?? 0
    }
}

/// The C baseline over the same frames: it reads the very same memory as the wrapper,
/// so that buffer placement cannot favour either side.
final class BaselineVP8Encoding {
    private let frames: [VideoFrame]
    private let encoder: OpaquePointer
    let output: UnsafeMutableRawBufferPointer
    private(set) var isKeyframe = false
    private var next = 0

    init(_ frames: [VideoFrame]) throws {
        self.frames = frames
        let settings = Settings.vp8()
        guard let encoder = baseline_vp8_encoder_create(
            Int32(settings.width), Int32(settings.height), Int32(settings.bitrate), Int32(settings.frameRate),
            Int32(settings.cpuUsed), Int32(settings.threads), Int32(settings.keyframeInterval),
            settings.errorResilient ? 1 : 0, settings.allowsFrameDrops ? 1 : 0)
        else { throw BenchmarkFailure("baseline: libvpx refused the encoder settings") }
        self.encoder = encoder
        // The wrapper's bound (VP8.Encoder.maximumFrameSize).
        output = .allocate(byteCount: settings.width * settings.height * 3 / 2 + 4_096, alignment: 16)
    }

    deinit {
        baseline_vp8_encoder_destroy(encoder)
        output.deallocate()
    }

    func encodeNext() throws -> Int {
        let frame = frames[next]
        var byteCount = 0
        var isKey: Int32 = 0
        let status = frame.withPlanes { y, u, v in
            baseline_vp8_encode(encoder, Int32(frame.width), Int32(frame.height),
                                y.baseAddress, Int32(frame.strideY), u.baseAddress, v.baseAddress,
                                Int32(frame.strideUV), 0,
                                output.baseAddress?.assumingMemoryBound(to: UInt8.self), output.count,
                                &byteCount, &isKey)
        }
        if status != 0 { throw BenchmarkFailure("baseline: VP8 encode failed (\(status))") }
        next = next + 1 == frames.count ? 0 : next + 1
        isKeyframe = isKey != 0
        return byteCount
    }
}

/// The test pattern as a VP8 stream whose only keyframe is frame 0, so that decoding can
/// wrap around from the last frame to the first.
func encodeVP8Sequence(_ frames: [VideoFrame]) throws -> PacketSequence {
    let encoder = try VP8.Encoder(configuration: Settings.vp8(keyframeInterval: frames.count))
    var packets: [[UInt8]] = []
    for (index, frame) in frames.enumerated() {
        guard let encoded = try encoder.encode(frame) else {
            throw BenchmarkFailure("VP8: rate control dropped frame \(index) of the decode sequence")
        }
        guard encoded.isKeyframe == (index == 0) else {
            throw BenchmarkFailure("VP8: frame \(index) is \(encoded.isKeyframe ? "a" : "not a") keyframe")
        }
        packets.append(encoded.data)
    }
    return PacketSequence(packets)
}

/// `VP8.Decoder` over the encoded sequence, into one reused frame.
final class SwiftVP8Decoding {
    private let packets: PacketSequence
    private let decoder: VP8.Decoder
    private(set) var frame = VideoFrame(width: Settings.vp8().width, height: Settings.vp8().height)
    private var next = 0

    init(_ packets: PacketSequence) throws {
        self.packets = packets
        decoder = try VP8.Decoder(threads: 1)
    }

    func decodeNext() throws -> Bool {
        let shown = try decoder.decode(packets[next], into: &frame)
        next = next + 1 == packets.count ? 0 : next + 1
        return shown
    }
}

/// The C baseline over the same packets, into one reused frame.
final class BaselineVP8Decoding {
    private let packets: PacketSequence
    private let decoder: OpaquePointer
    private(set) var frame = VideoFrame(width: Settings.vp8().width, height: Settings.vp8().height)
    private var next = 0

    init(_ packets: PacketSequence) throws {
        self.packets = packets
        guard let decoder = baseline_vp8_decoder_create(1) else {
            throw BenchmarkFailure("baseline: libvpx refused the decoder settings")
        }
        self.decoder = decoder
    }

    deinit { baseline_vp8_decoder_destroy(decoder) }

    func decodeNext() throws -> Bool {
        let packet = packets[next]
        let (width, height, strideY, strideUV) = (frame.width, frame.height, frame.strideY, frame.strideUV)
        let status = frame.withMutablePlanes { y, u, v in
            baseline_vp8_decode(decoder, packet.baseAddress?.assumingMemoryBound(to: UInt8.self), packet.count,
                                Int32(width), Int32(height), y.baseAddress, Int32(strideY),
                                u.baseAddress, v.baseAddress, Int32(strideUV))
        }
        if status < 0 || status > 1 { throw BenchmarkFailure("baseline: VP8 decode failed (\(status))") }
        next = next + 1 == packets.count ? 0 : next + 1
        return status == 1
    }
}

/// Throws unless the wrapper and the baseline produce the same bitstream and the same
/// pictures, which shows the baseline is configured as the wrapper is.
func checkVP8Agreement(_ frames: [VideoFrame], _ packets: PacketSequence) throws {
    let swiftEncoding = try SwiftVP8Encoding(frames)
    let baselineEncoding = try BaselineVP8Encoding(frames)
    for frame in 0..<2 * frames.count {
        let swiftLength = try swiftEncoding.encodeNext()
        let baselineLength = try baselineEncoding.encodeNext()
        guard swiftLength == baselineLength, swiftEncoding.isKeyframe == baselineEncoding.isKeyframe,
              swiftEncoding.output[..<swiftLength].elementsEqual(baselineEncoding.output[..<baselineLength])
        else {
            throw BenchmarkFailure("VP8: wrapper and baseline bitstreams differ at frame \(frame) "
                                   + "(\(swiftLength) vs \(baselineLength) bytes); the baseline's settings drifted")
        }
    }
    let swiftDecoding = try SwiftVP8Decoding(packets)
    let baselineDecoding = try BaselineVP8Decoding(packets)
    for packet in 0..<packets.count + 1 {
        let swiftShown = try swiftDecoding.decodeNext()
        let baselineShown = try baselineDecoding.decodeNext()
        guard swiftShown, baselineShown, swiftDecoding.frame.data == baselineDecoding.frame.data else {
            throw BenchmarkFailure("VP8: wrapper and baseline decode packet \(packet % packets.count) differently")
        }
    }
}
