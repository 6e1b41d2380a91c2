import CAVFormat
import MediaEngine

/// The video encoder of one family: libx264 (H.264, constant bit rate, no B-frames) or
/// libvpx (VP8, real time). Not thread-safe: `LiveEncoderSet` locks it.
///
/// Its time base is one frame (1/frameRate): each picture's time on the room's clock is
/// rounded to a frame number, and a picture landing on the number of the last one is
/// dropped rather than shifting everything after it.
final class LiveVideoEncoder: @unchecked Sendable {
    // @unchecked: its codec context, frame and packet are only touched while the owning
    // `LiveEncoderSet` holds the lock around it.
    let context: UnsafeMutablePointer<AVCodecContext>
    private let frame: UnsafeMutablePointer<AVFrame>
    private let packet: UnsafeMutablePointer<AVPacket>
    private let width: Int
    private let height: Int
    private var lastPTS = Int64.min
    private var finished = false

    init(family: LiveCodecFamily, format: LiveStreamFormat) throws(LiveStreamError) {
        let name = family == .h264AAC ? "libx264" : "libvpx"
        let (codec, context) = try LiveAV.encoder(name)
        let keyframeFrames = Int32(format.keyframeFrames)
        context.pointee.width = Int32(format.width)
        context.pointee.height = Int32(format.height)
        context.pointee.pix_fmt = AV_PIX_FMT_YUV420P
        context.pointee.time_base = AVRational(num: 1, den: Int32(format.frameRate))
        context.pointee.framerate = AVRational(num: Int32(format.frameRate), den: 1)
        context.pointee.gop_size = keyframeFrames
        context.pointee.max_b_frames = 0
        // Constant bit rate with a one-second buffer: what ingest services ask for.
        context.pointee.bit_rate = Int64(format.videoBitrate)
        context.pointee.rc_max_rate = Int64(format.videoBitrate)
        context.pointee.rc_buffer_size = Int32(format.videoBitrate)
        if LiveAV.wantsGlobalHeader(family) { context.pointee.flags |= AV_CODEC_FLAG_GLOBAL_HEADER }
        do throws(LiveStreamError) {
            let options = context.pointee.priv_data
            if family == .h264AAC {
                context.pointee.keyint_min = keyframeFrames
                try LiveAV.set(options, "preset", "veryfast", codec: name)
                try LiveAV.set(options, "tune", "zerolatency", codec: name)
                try LiveAV.set(options, "profile", "main", codec: name)
                try LiveAV.set(options, "nal-hrd", "cbr", codec: name)
                try LiveAV.set(options, "forced-idr", "1", codec: name)
                // Key frames only on the fixed interval (or when an output asks).
                try LiveAV.set(options, "x264-params", "scenecut=0", codec: name)
            } else {
                context.pointee.rc_min_rate = Int64(format.videoBitrate)  // libvpx: min == max is CBR
                // One thread: libvpx's VP8 row threads spin-wait for each other, and on a
                // busy machine that took 20 to 150 ms a frame (7 ms alone).
                context.pointee.thread_count = 1
                try LiveAV.set(options, "deadline", "realtime", codec: name)
                // The fastest speed: VP8 at 720p30 must keep up on one core.
                try LiveAV.set(options, "cpu-used", "16", codec: name)
                try LiveAV.set(options, "lag-in-frames", "0", codec: name)
            }
        } catch {
            var unused: UnsafeMutablePointer<AVCodecContext>? = context
            avcodec_free_context(&unused)
            throw error
        }
        try LiveAV.open(context, codec, name: name)
        self.context = context
        width = format.width
        height = format.height
        guard let frame = av_frame_alloc(), let packet = av_packet_alloc() else {
            var unused: UnsafeMutablePointer<AVCodecContext>? = context
            avcodec_free_context(&unused)
            throw LiveAV.outOfMemory
        }
        self.frame = frame
        self.packet = packet
        frame.pointee.format = AV_PIX_FMT_YUV420P.rawValue
        frame.pointee.width = Int32(format.width)
        frame.pointee.height = Int32(format.height)
        guard av_frame_get_buffer(frame, 0) >= 0 else { throw LiveAV.outOfMemory }
    }

    deinit {
        var context: UnsafeMutablePointer<AVCodecContext>? = context
        var frame: UnsafeMutablePointer<AVFrame>? = frame
        var packet: UnsafeMutablePointer<AVPacket>? = packet
        avcodec_free_context(&context)
        av_frame_free(&frame)
        av_packet_free(&packet)
    }

    /// Encodes `source` (the canvas size) as the picture at `time`; a key frame when asked.
    /// - Returns: whether the picture went into the encoder (false: wrong size, a repeated
    ///   frame time, after `flush`, or an encoder failure).
    func encode(_ source: VideoFrame, at time: Duration, keyframe: Bool, deliver: (LivePacket) -> Void) -> Bool {
        guard !finished, source.width == width, source.height == height else { return false }
        let pts = LiveAV.ticks(time, context.pointee.time_base)
        guard pts > lastPTS else { return false }
        // The encoder may still hold the last picture's buffer; then this one gets a new one.
        guard av_frame_make_writable(frame) >= 0 else { return false }
        copyPlanes(source)
        frame.pointee.pts = pts
        frame.pointee.pict_type = keyframe ? AV_PICTURE_TYPE_I : AV_PICTURE_TYPE_NONE
        guard avcodec_send_frame(context, frame) >= 0 else { return false }
        lastPTS = pts
        LiveAV.drain(context, packet, isVideo: true, deliver: deliver)
        return true
    }

    private func copyPlanes(_ source: VideoFrame) {
        source.withPlanes { y, u, v in
            withUnsafeMutablePointer(to: &frame.pointee.data) { data in
                data.withMemoryRebound(to: UnsafeMutablePointer<UInt8>?.self, capacity: 3) { data in
                    withUnsafeMutablePointer(to: &frame.pointee.linesize) { lines in
                        lines.withMemoryRebound(to: Int32.self, capacity: 3) { lines in
                            av_image_copy_plane(data[0], lines[0], y.baseAddress, Int32(source.strideY), Int32(width), Int32(height))
                            av_image_copy_plane(data[1], lines[1], u.baseAddress, Int32(source.strideUV),
                                                Int32(source.chromaWidth), Int32(source.chromaHeight))
                            av_image_copy_plane(data[2], lines[2], v.baseAddress, Int32(source.strideUV),
                                                Int32(source.chromaWidth), Int32(source.chromaHeight))
                        }
                    }
                }
            }
        }
    }

    /// Drains what the encoder holds; it takes no pictures afterwards.
    func flush(deliver: (LivePacket) -> Void) {
        guard !finished else { return }
        finished = true
        if avcodec_send_frame(context, nil) >= 0 { LiveAV.drain(context, packet, isVideo: true, deliver: deliver) }
    }
}

/// The audio encoder of one family: AAC (libavcodec's own) or Opus (libopus), fed through
/// an AVAudioFifo so PCM may come in any chunk size. Not thread-safe: `LiveEncoderSet`
/// locks it.
///
/// Timestamps count samples from the room's clock: the first chunk's time sets them, and
/// later chunks continue them unless their time is more than 100 ms off (a gap or a jump),
/// when the buffer starts over at the new time.
final class LiveAudioEncoder: @unchecked Sendable {
    // @unchecked: its codec context, frame, FIFO and buffers are only touched while the
    // owning `LiveEncoderSet` holds the lock around it.
    let context: UnsafeMutablePointer<AVCodecContext>
    private let frame: UnsafeMutablePointer<AVFrame>
    private let packet: UnsafeMutablePointer<AVPacket>
    private let fifo: OpaquePointer
    private let channels: Int
    private let frameSize: Int32
    private let planar: Bool
    private let float: Bool
    /// Float samples converted from the input, per channel when planar; grows, never shrinks.
    private var scratch: UnsafeMutablePointer<Float>
    private var scratchCapacity = 0
    private let planes: UnsafeMutablePointer<UnsafeMutableRawPointer?>
    /// The time, in samples, of the first sample in the FIFO.
    private var nextPTS: Int64?
    private var finished = false

    init(family: LiveCodecFamily, format: LiveStreamFormat) throws(LiveStreamError) {
        let name = family == .h264AAC ? "aac" : "libopus"
        let (codec, context) = try LiveAV.encoder(name)
        // aac takes only planar float; libopus takes 16-bit, which needs no conversion.
        let sampleFormat = family == .h264AAC ? AV_SAMPLE_FMT_FLTP : AV_SAMPLE_FMT_S16
        context.pointee.sample_fmt = sampleFormat
        context.pointee.sample_rate = Int32(format.sampleRate)
        av_channel_layout_default(&context.pointee.ch_layout, Int32(format.channels))
        context.pointee.bit_rate = Int64(format.audioBitrate)
        context.pointee.time_base = AVRational(num: 1, den: Int32(format.sampleRate))
        if LiveAV.wantsGlobalHeader(family) { context.pointee.flags |= AV_CODEC_FLAG_GLOBAL_HEADER }
        try LiveAV.open(context, codec, name: name)
        self.context = context
        channels = format.channels
        frameSize = max(context.pointee.frame_size, 1)
        planar = av_sample_fmt_is_planar(sampleFormat) != 0
        float = sampleFormat != AV_SAMPLE_FMT_S16
        guard let fifo = av_audio_fifo_alloc(sampleFormat, Int32(format.channels), frameSize * 4),
              let frame = av_frame_alloc(), let packet = av_packet_alloc() else {
            var unused: UnsafeMutablePointer<AVCodecContext>? = context
            avcodec_free_context(&unused)
            throw LiveAV.outOfMemory
        }
        self.fifo = fifo
        self.frame = frame
        self.packet = packet
        frame.pointee.format = sampleFormat.rawValue
        frame.pointee.sample_rate = Int32(format.sampleRate)
        frame.pointee.nb_samples = frameSize
        av_channel_layout_copy(&frame.pointee.ch_layout, &context.pointee.ch_layout)
        scratch = .allocate(capacity: 1)
        planes = .allocate(capacity: format.channels)
        // Everything is set, so deinit frees it all if this fails.
        guard av_frame_get_buffer(frame, 0) >= 0 else { throw LiveAV.outOfMemory }
    }

    deinit {
        var context: UnsafeMutablePointer<AVCodecContext>? = context
        var frame: UnsafeMutablePointer<AVFrame>? = frame
        var packet: UnsafeMutablePointer<AVPacket>? = packet
        avcodec_free_context(&context)
        av_frame_free(&frame)
        av_packet_free(&packet)
        av_audio_fifo_free(fifo)
        scratch.deallocate()
        planes.deallocate()
    }

    /// Buffers interleaved Int16 `samples` (whole frames of `channels`) taken at `time`
    /// and encodes every whole encoder frame.
    func encode(_ samples: UnsafeBufferPointer<Int16>, at time: Duration, deliver: (LivePacket) -> Void) {
        let count = samples.count / channels
        guard !finished, count > 0, let base = samples.baseAddress else { return }
        let start = LiveAV.ticks(time, context.pointee.time_base)
        let buffered = Int64(av_audio_fifo_size(fifo))
        if let next = nextPTS, abs(next + buffered - start) <= Int64(context.pointee.sample_rate / 10) {
            // Continuous: keep counting samples, so clock jitter does not bend the audio.
        } else {
            av_audio_fifo_reset(fifo)
            nextPTS = start
        }
        if float {
            if scratchCapacity < count * channels {
                scratch.deallocate()
                scratch = .allocate(capacity: count * channels)
                scratchCapacity = count * channels
            }
            for index in 0..<count * channels {
                let sample = Float(base[index]) / 32_768
                // Planar: channel c's samples from c * count; else interleaved as given.
                let target = planar ? (index % channels) * count + index / channels : index
                scratch[target] = sample
            }
            for channel in 0..<channels {
                planes[channel] = UnsafeMutableRawPointer(scratch + (planar ? channel * count : 0))
            }
        } else {
            planes[0] = UnsafeMutableRawPointer(mutating: base)
        }
        guard av_audio_fifo_write(fifo, planes, Int32(count)) == Int32(count) else { return }
        while av_audio_fifo_size(fifo) >= frameSize {
            guard encodeBuffered(frameSize, deliver: deliver) else { return }
        }
    }

    /// Encodes `count` samples from the front of the FIFO.
    private func encodeBuffered(_ count: Int32, deliver: (LivePacket) -> Void) -> Bool {
        frame.pointee.nb_samples = count
        guard av_frame_make_writable(frame) >= 0, let next = nextPTS else { return false }
        let data = UnsafeMutableRawPointer(frame.pointee.extended_data).assumingMemoryBound(to: UnsafeMutableRawPointer?.self)
        guard av_audio_fifo_read(fifo, data, count) == count else { return false }
        frame.pointee.pts = next
        nextPTS = next + Int64(count)
        guard avcodec_send_frame(context, frame) >= 0 else { return false }
        return LiveAV.drain(context, packet, isVideo: false, deliver: deliver)
    }

    /// Encodes what is buffered (a short last frame) and drains the encoder; it takes no
    /// samples afterwards.
    func flush(deliver: (LivePacket) -> Void) {
        guard !finished else { return }
        finished = true
        let left = av_audio_fifo_size(fifo)
        if left > 0 { _ = encodeBuffered(left, deliver: deliver) }
        if avcodec_send_frame(context, nil) >= 0 { LiveAV.drain(context, packet, isVideo: false, deliver: deliver) }
    }
}
