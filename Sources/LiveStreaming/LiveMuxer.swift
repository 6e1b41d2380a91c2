import MediaEngine

#if canImport(Glibc)
import Glibc
#endif
import CAVFormat
import Synchronization

/// What libavformat's interrupt callback asks: whether the blocking call under way has
/// run past its deadline, or (for a connection attempt) was called off. Every network
/// operation of a live output is armed with a deadline first, so none can hang.
final class LiveInterrupt: Sendable {
    /// Monotonic nanoseconds; `Int64.max` when nothing is armed.
    private let deadline = Atomic<Int64>(.max)
    private let abortable = Atomic<Bool>(false)
    private let aborted = Atomic<Bool>(false)

    /// Arms a deadline `limit` from now; `abortable` operations also end on `abort()`.
    func arm(_ limit: Duration, abortable: Bool) {
        let now = MonotonicClock.now()
        deadline.store(Self.nanoseconds(now + limit), ordering: .releasing)
        self.abortable.store(abortable, ordering: .releasing)
    }

    func disarm() {
        deadline.store(.max, ordering: .releasing)
        abortable.store(false, ordering: .releasing)
    }

    /// Calls off the abortable operation under way or to come (a connection attempt of an
    /// output being disabled, removed or stopped).
    func abort() { aborted.store(true, ordering: .releasing) }

    /// Clears `abort()`, before the next attempt.
    func reset() { aborted.store(false, ordering: .releasing) }

    var shouldStop: Bool {
        if abortable.load(ordering: .acquiring) && aborted.load(ordering: .acquiring) { return true }
        return Self.nanoseconds(MonotonicClock.now()) > deadline.load(ordering: .acquiring)
    }

    private static func nanoseconds(_ time: Duration) -> Int64 {
        let (seconds, attoseconds) = time.components
        return seconds * 1_000_000_000 + attoseconds / 1_000_000_000
    }

    /// The C callback; `opaque` is an unretained `LiveInterrupt` the muxer keeps alive.
    static let callback: @convention(c) (UnsafeMutableRawPointer?) -> Int32 = { opaque in
        guard let opaque else { return 0 }
        return Unmanaged<LiveInterrupt>.fromOpaque(opaque).takeUnretainedValue().shouldStop ? 1 : 0
    }
}

/// One open connection (or file) of a live output: an AVFormatContext with a video and
/// an audio stream, written from the output's writer thread only.
///
/// Files are flushed packet by packet and their length checked against what libavformat
/// thinks it wrote: a short write (the disk filled mid-buffer) counts as a failure, and on
/// a failure the file is cut back to the end of the last whole packet, so what stays is a
/// decodable prefix.
final class LiveMuxer {
    /// How long opening (TCP connect, RTMP handshake and publish, HTTP PUT) may take.
    static let connectTimeout = Duration.seconds(5)
    /// How long one write (or the trailer) may block: a peer that stops reading.
    static let writeTimeout = Duration.seconds(3)

    let target: LiveTarget
    private var context: UnsafeMutablePointer<AVFormatContext>?
    private let packet: UnsafeMutablePointer<AVPacket>
    private let interrupt: LiveInterrupt
    private var videoIndex: Int32 = 0
    private var audioIndex: Int32 = 1
    private var lastDTS = (video: Int64.min, audio: Int64.min)
    /// File outputs: the length known to be on disk at a packet boundary.
    private var goodLength: Int64 = 0
    private var failed = false

    /// Opens the target and writes the container header.
    /// - Throws: `LiveStreamError` (connect failed) naming the target (redacted).
    init(target: LiveTarget, parameters: LiveCodecParameters, interrupt: LiveInterrupt) throws(LiveStreamError) {
        self.target = target
        self.interrupt = interrupt
        guard let packet = av_packet_alloc() else { throw LiveAV.outOfMemory }
        self.packet = packet
        var created: UnsafeMutablePointer<AVFormatContext>?
        let container = target.container
        let status = avformat_alloc_output_context2(&created, nil, container.muxerName, target.muxerURL)
        guard status >= 0, let created else {
            throw LiveStreamError(.internalError, "\(target): libavformat has no \(container.muxerName) muxer (\(LiveAV.describe(status)))")
        }
        context = created
        created.pointee.interrupt_callback = AVIOInterruptCB(callback: LiveInterrupt.callback,
                                                             opaque: Unmanaged.passUnretained(interrupt).toOpaque())
        for (parameters, timeBase) in [(parameters.video, parameters.videoTimeBase), (parameters.audio, parameters.audioTimeBase)] {
            guard let stream = avformat_new_stream(created, nil), avcodec_parameters_copy(stream.pointee.codecpar, parameters) >= 0 else {
                throw LiveAV.outOfMemory
            }
            stream.pointee.time_base = timeBase
        }
        var options: OpaquePointer?
        defer { av_dict_free(&options) }
        av_dict_set(&options, "rw_timeout", String(Self.writeTimeout.components.seconds * 1_000_000), 0)
        for (name, value) in target.protocolOptions { av_dict_set(&options, name, value, 0) }
        interrupt.arm(Self.connectTimeout, abortable: true)
        let opened = avio_open2(&created.pointee.pb, target.muxerURL, AVIO_FLAG_WRITE, &created.pointee.interrupt_callback, &options)
        interrupt.disarm()
        guard opened >= 0 else { throw error(opened, connecting: true) }

        var muxerOptions: OpaquePointer?
        defer { av_dict_free(&muxerOptions) }
        switch container {
        case .mp4:
            // Fragments from each key frame and a moov up front: a file cut off still plays.
            av_dict_set(&muxerOptions, "movflags", "frag_keyframe+empty_moov+default_base_moof", 0)
        case .webm:
            if target.isFile {
                // Clusters of a second at most, flushed as they close.
                av_dict_set(&muxerOptions, "cluster_time_limit", "1000", 0)
            } else {
                av_dict_set(&muxerOptions, "live", "1", 0)
            }
        case .flv:
            // A stream cannot seek back to fill in the duration and size.
            if !target.isFile { av_dict_set(&muxerOptions, "flvflags", "no_duration_filesize", 0) }
        }
        if target.isFile {
            created.pointee.flags |= AVFMT_FLAG_FLUSH_PACKETS
            created.pointee.flush_packets = 1
        }
        // Interleave by time, but let neither stream wait more than half a second for the other.
        created.pointee.max_interleave_delta = 500_000
        interrupt.arm(Self.writeTimeout, abortable: true)
        let header = avformat_write_header(created, &muxerOptions)
        interrupt.disarm()
        try settle(header, connecting: true)
    }

    deinit {
        abandon()
        var packet: UnsafeMutablePointer<AVPacket>? = packet
        av_packet_free(&packet)
    }

    /// Writes `source` with its time shifted back by `base` microseconds (the output's
    /// first key frame), so each connection starts at zero. Packets that would not move
    /// their stream's time forward are skipped.
    func write(_ source: LivePacket, base: Int64) throws(LiveStreamError) {
        guard let context, !failed else { return }
        let index = source.isVideo ? videoIndex : audioIndex
        guard av_packet_ref(packet, source.packet) >= 0 else { throw LiveAV.outOfMemory }
        let offset = av_rescale_q(base, LiveAV.microseconds, source.timeBase)
        packet.pointee.pts -= offset
        packet.pointee.dts -= offset
        let timeBase = context.pointee.streams[Int(index)]!.pointee.time_base
        av_packet_rescale_ts(packet, source.timeBase, timeBase)
        packet.pointee.stream_index = index
        let last = source.isVideo ? lastDTS.video : lastDTS.audio
        guard packet.pointee.dts > last, packet.pointee.dts >= 0 else {
            av_packet_unref(packet)
            return
        }
        if source.isVideo { lastDTS.video = packet.pointee.dts } else { lastDTS.audio = packet.pointee.dts }
        interrupt.arm(Self.writeTimeout, abortable: false)
        let status = av_interleaved_write_frame(context, packet)  // takes the reference
        interrupt.disarm()
        try settle(status, connecting: false)
    }

    /// Writes what waits for interleaving and the trailer, and closes the connection.
    func finish() throws(LiveStreamError) {
        guard let context else { return }
        guard !failed else { return abandon() }
        interrupt.arm(Self.writeTimeout, abortable: false)
        let status = av_write_trailer(context)
        interrupt.disarm()
        do {
            try settle(status, connecting: false)
        } catch {
            abandon()
            throw error
        }
        close()
    }

    /// Closes without a trailer (after a failure); a file is cut back to its last whole packet.
    func abandon() {
        guard context != nil else { return }
        close()
        if case .file(let path) = target, failed { _ = truncate(path, off_t(goodLength)) }
    }

    private func close() {
        guard let context else { return }
        if context.pointee.pb != nil {
            interrupt.arm(Self.writeTimeout, abortable: false)
            avio_closep(&context.pointee.pb)
            interrupt.disarm()
        }
        avformat_free_context(context)
        self.context = nil
    }

    /// Checks a write's status and the I/O context's error; for files, flushes and checks
    /// that the file is as long as written.
    private func settle(_ status: Int32, connecting: Bool) throws(LiveStreamError) {
        guard let pb = context?.pointee.pb else { return }
        if target.isFile { avio_flush(pb) }
        var failure = status < 0 ? status : pb.pointee.error
        if failure >= 0, case .file(let path) = target {
            let written = avio_tell(pb)
            var info = stat()
            if stat(path, &info) == 0, Int64(info.st_size) < written {
                failure = me_averror(ENOSPC)  // a short write: the disk filled mid-buffer
            } else {
                goodLength = written
            }
        }
        guard failure >= 0 else {
            failed = true
            throw error(failure, connecting: connecting)
        }
    }

    private func error(_ status: Int32, connecting: Bool) -> LiveStreamError {
        let kind: LiveStreamError.Kind = connecting ? .connectFailed : .pushFailed
        let reason: String
        switch status {
        case me_averror(ENOSPC), me_averror(EDQUOT), me_averror(EFBIG): reason = "the disk is full (\(LiveAV.describe(status)))"
        case me_averror_exit(): reason = "timed out or called off"
        default: reason = LiveAV.describe(status)
        }
        return LiveStreamError(kind, "\(target): \(connecting ? "cannot open" : "write failed"): \(reason)")
    }
}
