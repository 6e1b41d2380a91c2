import CAVFormat
import MediaEngine
import Synchronization

/// One encoded packet, shared by every output of its codec family.
///
/// The AVPacket is reference counted: each writer takes its own reference
/// (`av_packet_ref`), so the payload is encoded once and never copied.
final class LivePacket: @unchecked Sendable {
    // @unchecked: the AVPacket is filled in init and never changed; writers on other
    // threads only read it through av_packet_ref, whose buffer counting is atomic.
    let packet: UnsafeMutablePointer<AVPacket>
    let isVideo: Bool
    let isKeyframe: Bool
    /// The presentation time on the room's clock, microseconds.
    let microseconds: Int64
    /// The encoder's time base, which the packet's timestamps count in.
    let timeBase: AVRational
    var size: Int { Int(packet.pointee.size) }

    /// Takes the contents of `source` (leaving it blank), or nil when out of memory.
    init?(moving source: UnsafeMutablePointer<AVPacket>, isVideo: Bool, timeBase: AVRational) {
        guard let packet = av_packet_alloc() else { return nil }
        av_packet_move_ref(packet, source)
        self.packet = packet
        self.isVideo = isVideo
        self.isKeyframe = packet.pointee.flags & AV_PKT_FLAG_KEY != 0
        self.timeBase = timeBase
        microseconds = av_rescale_q(packet.pointee.pts, timeBase, AVRational(num: 1, den: 1_000_000))
    }

    deinit {
        var packet: UnsafeMutablePointer<AVPacket>? = packet
        av_packet_free(&packet)
    }
}

/// What muxers need to describe the streams of one family: copies of the opened
/// encoders' parameters (extradata included) and their time bases.
final class LiveCodecParameters: @unchecked Sendable {
    // @unchecked: filled once in init from the opened encoders and never changed; writer
    // threads only read them (avcodec_parameters_copy).
    let video: UnsafeMutablePointer<AVCodecParameters>
    let audio: UnsafeMutablePointer<AVCodecParameters>
    let videoTimeBase: AVRational
    let audioTimeBase: AVRational

    init(video: UnsafeMutablePointer<AVCodecContext>, audio: UnsafeMutablePointer<AVCodecContext>) throws(LiveStreamError) {
        guard let videoParameters = avcodec_parameters_alloc() else { throw LiveAV.outOfMemory }
        guard let audioParameters = avcodec_parameters_alloc() else {
            var unused: UnsafeMutablePointer<AVCodecParameters>? = videoParameters
            avcodec_parameters_free(&unused)
            throw LiveAV.outOfMemory
        }
        self.video = videoParameters
        self.audio = audioParameters
        videoTimeBase = video.pointee.time_base
        audioTimeBase = audio.pointee.time_base
        let copied = (avcodec_parameters_from_context(videoParameters, video), avcodec_parameters_from_context(audioParameters, audio))
        guard copied.0 >= 0, copied.1 >= 0 else { throw LiveAV.outOfMemory }
    }

    deinit {
        var video: UnsafeMutablePointer<AVCodecParameters>? = video
        var audio: UnsafeMutablePointer<AVCodecParameters>? = audio
        avcodec_parameters_free(&video)
        avcodec_parameters_free(&audio)
    }
}

/// The encoders one codec family's outputs share: video and audio, each behind its own
/// lock so the composing thread and the audio thread do not wait on each other.
final class LiveEncoderSet: Sendable {
    let family: LiveCodecFamily
    let parameters: LiveCodecParameters
    private let video: Locked<LiveVideoEncoder>
    private let audio: Locked<LiveAudioEncoder>
    /// Set when an output (re)connects: the next picture is encoded as a key frame.
    private let keyframeWanted = Atomic<Bool>(false)

    /// Opens both encoders.
    /// - Throws: `LiveStreamError` (internal) naming an encoder that is missing or fails.
    init(family: LiveCodecFamily, format: LiveStreamFormat) throws(LiveStreamError) {
        self.family = family
        let videoEncoder = try LiveVideoEncoder(family: family, format: format)
        let audioEncoder = try LiveAudioEncoder(family: family, format: format)
        parameters = try LiveCodecParameters(video: videoEncoder.context, audio: audioEncoder.context)
        video = Locked(videoEncoder)
        audio = Locked(audioEncoder)
    }

    /// Makes the next picture a key frame.
    func requestKeyframe() { keyframeWanted.store(true, ordering: .releasing) }

    /// Encodes one picture and hands each packet that comes out to `deliver`.
    func encodeVideo(_ frame: VideoFrame, at time: Duration, deliver: (LivePacket) -> Void) {
        video.withLock { encoder in
            let keyframe = keyframeWanted.exchange(false, ordering: .acquiringAndReleasing)
            if !encoder.encode(frame, at: time, keyframe: keyframe, deliver: deliver), keyframe {
                keyframeWanted.store(true, ordering: .releasing)  // not encoded: ask again next time
            }
        }
    }

    /// Buffers PCM and encodes every whole encoder frame, handing packets to `deliver`.
    func encodeAudio(_ samples: UnsafeBufferPointer<Int16>, at time: Duration, deliver: (LivePacket) -> Void) {
        audio.withLock { encoder in encoder.encode(samples, at: time, deliver: deliver) }
    }

    /// Encodes what is buffered and drains both encoders; later calls encode nothing.
    func flush(deliver: (LivePacket) -> Void) {
        video.withLock { encoder in encoder.flush(deliver: deliver) }
        audio.withLock { encoder in encoder.flush(deliver: deliver) }
    }
}

/// Shared libav helpers.
enum LiveAV {
    static let outOfMemory = LiveStreamError(.internalError, "live stream: out of memory")
    static let microseconds = AVRational(num: 1, den: 1_000_000)

    /// libav's text for a status code.
    static func describe(_ status: Int32) -> String { WebMMuxer.describe(status) }

    /// Sets a private codec or muxer option, failing with the option's name.
    static func set(_ object: UnsafeMutableRawPointer?, _ name: String, _ value: String, codec: String) throws(LiveStreamError) {
        let status = av_opt_set(object, name, value, 0)
        guard status >= 0 else {
            throw LiveStreamError(.internalError, "live stream: \(codec) rejects \(name)=\(value) (\(describe(status)))")
        }
    }

    /// Time on the room's clock in units of `timeBase`, rounded to the nearest.
    static func ticks(_ time: Duration, _ timeBase: AVRational) -> Int64 {
        let (seconds, attoseconds) = time.components
        let exact = (Double(seconds) + Double(attoseconds) / 1e18) * Double(timeBase.den) / Double(timeBase.num)
        return Int64(exact.rounded())
    }

    /// Opens `context` with `codec`, or frees it and throws.
    static func open(_ context: UnsafeMutablePointer<AVCodecContext>, _ codec: UnsafePointer<AVCodec>, name: String) throws(LiveStreamError) {
        let status = avcodec_open2(context, codec, nil)
        guard status >= 0 else {
            var unused: UnsafeMutablePointer<AVCodecContext>? = context
            avcodec_free_context(&unused)
            throw LiveStreamError(.internalError, "live stream: the \(name) encoder does not open (\(describe(status)))")
        }
    }

    /// Finds encoder `name` and allocates its context.
    static func encoder(_ name: String) throws(LiveStreamError) -> (UnsafePointer<AVCodec>, UnsafeMutablePointer<AVCodecContext>) {
        guard let codec = avcodec_find_encoder_by_name(name) else {
            throw LiveStreamError(.internalError, "live stream: libavcodec has no \(name) encoder")
        }
        guard let context = avcodec_alloc_context3(codec) else { throw outOfMemory }
        return (codec, context)
    }

    /// Whether the containers of `family` want codec headers out of band (FLV and MP4 do;
    /// so does Matroska). The encoder set is shared, so any container wanting them decides.
    static func wantsGlobalHeader(_ family: LiveCodecFamily) -> Bool {
        let containers: [LiveContainer] = family == .h264AAC ? [.flv, .mp4] : [.webm]
        return containers.contains { container in
            guard let format = av_guess_format(container.muxerName, nil, nil) else { return true }
            return format.pointee.flags & AVFMT_GLOBALHEADER != 0
        }
    }

    /// Takes every packet `context` has ready and hands it on; returns false when the
    /// encoder failed.
    @discardableResult
    static func drain(_ context: UnsafeMutablePointer<AVCodecContext>, _ packet: UnsafeMutablePointer<AVPacket>, isVideo: Bool,
                      deliver: (LivePacket) -> Void) -> Bool {
        while true {
            let status = avcodec_receive_packet(context, packet)
            if status == me_averror(EAGAIN) || status == me_averror_eof() { return true }
            guard status >= 0 else { return false }
            if let shared = LivePacket(moving: packet, isVideo: isVideo, timeBase: context.pointee.time_base) {
                deliver(shared)
            } else {
                av_packet_unref(packet)
            }
        }
    }
}
