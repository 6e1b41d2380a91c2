import CAVFormat
import COpus
import Foundation

/// A WebM file written through libavformat's Matroska muxer: VP8 frames and Opus packets
/// go in exactly as encoded, timestamps in milliseconds.
///
/// Crash safety: the segment is opened with an unknown size and each cluster (at most one
/// second, or from a video keyframe) is flushed to the file as it closes, so a file cut
/// short by a dying process plays up to its last complete cluster. `finish` adds the cues
/// and the duration, which players use but never need. After a failed write (a full disk)
/// the file is cut back to the end of the last complete cluster, so a partly written one
/// never follows it.
public final class WebMMuxer {
    public struct Tracks {
        /// The picture size written in the header (later keyframes may differ).
        public var video: (width: Int, height: Int)?
        public var audioChannels: Int?

        public init(video: (width: Int, height: Int)?, audioChannels: Int?) {
            self.video = video
            self.audioChannels = audioChannels
        }
    }

    public enum Track: Sendable { case audio, video }

    public let path: String
    private var context: UnsafeMutablePointer<AVFormatContext>?
    private var packet: UnsafeMutablePointer<AVPacket>?
    private var videoIndex: Int32 = -1
    private var audioIndex: Int32 = -1
    public private(set) var headerWritten = false
    public private(set) var bytesWritten: Int64 = 0
    /// Where the file is cut when closed after a failed write.
    private var cutAt: Int64?

    /// Samples Opus decoders drop at the start (RFC 7845 pre-skip): libopus' lookahead at 48 kHz.
    static let opusPreSkip = 312

    /// Creates the file (never its directory).
    /// - Throws: `RecordingError` naming the path: a missing directory, a file that
    ///   cannot be created.
    public init(path: String) throws(RecordingError) {
        self.path = path
        if let directory = OutputFile.missingDirectory(of: path) {
            throw RecordingError(.missingDirectory, "recording \(path): the directory \(directory) does not exist")
        }
        var created: UnsafeMutablePointer<AVFormatContext>?
        let status = avformat_alloc_output_context2(&created, nil, "webm", path)
        guard status >= 0, let created else {
            throw RecordingError(.cannotCreate, "recording \(path): libavformat has no WebM muxer (\(Self.describe(status)))")
        }
        context = created
        let opened = avio_open(&created.pointee.pb, path, AVIO_FLAG_WRITE)
        guard opened >= 0 else {
            avformat_free_context(created)
            context = nil
            throw Self.error(opened, path: path, creating: true)
        }
        packet = av_packet_alloc()
        // Packets from both streams are interleaved by timestamp, but none waits longer than
        // half a second for the other stream (a paused camera must not hold audio back).
        created.pointee.max_interleave_delta = 500_000
        created.pointee.flush_packets = 1
    }

    deinit {
        close()
    }

    /// Writes the header with these tracks; packets may follow.
    public func writeHeader(_ tracks: Tracks) throws(RecordingError) {
        guard let context, !headerWritten else { return }
        if let video = tracks.video {
            guard let stream = avformat_new_stream(context, nil) else { throw RecordingError(.writeFailed, "recording \(path): out of memory") }
            let parameters = stream.pointee.codecpar!
            parameters.pointee.codec_type = AVMEDIA_TYPE_VIDEO
            parameters.pointee.codec_id = AV_CODEC_ID_VP8
            parameters.pointee.width = Int32(video.width)
            parameters.pointee.height = Int32(video.height)
            stream.pointee.time_base = AVRational(num: 1, den: 1_000)
            videoIndex = stream.pointee.index
        }
        if let channels = tracks.audioChannels {
            guard let stream = avformat_new_stream(context, nil) else { throw RecordingError(.writeFailed, "recording \(path): out of memory") }
            let parameters = stream.pointee.codecpar!
            parameters.pointee.codec_type = AVMEDIA_TYPE_AUDIO
            parameters.pointee.codec_id = AV_CODEC_ID_OPUS
            parameters.pointee.sample_rate = 48_000
            av_channel_layout_default(&parameters.pointee.ch_layout, Int32(channels))
            parameters.pointee.initial_padding = Int32(Self.opusPreSkip)
            // RFC 7845 identification header: WebM's CodecPrivate for Opus.
            var head = [UInt8]("OpusHead".utf8)
            head.append(1)
            head.append(UInt8(channels))
            head.append(contentsOf: [UInt8(Self.opusPreSkip & 0xFF), UInt8(Self.opusPreSkip >> 8)])
            head.append(contentsOf: [0x80, 0xBB, 0x00, 0x00])  // 48,000 Hz
            head.append(contentsOf: [0, 0, 0])  // output gain, mapping family 0
            guard let extradata = av_mallocz(head.count + Int(AV_INPUT_BUFFER_PADDING_SIZE))?.assumingMemoryBound(to: UInt8.self) else {
                throw RecordingError(.writeFailed, "recording \(path): out of memory")
            }
            extradata.update(from: head, count: head.count)
            parameters.pointee.extradata = extradata
            parameters.pointee.extradata_size = Int32(head.count)
            stream.pointee.time_base = AVRational(num: 1, den: 1_000)
            audioIndex = stream.pointee.index
        }
        var options: OpaquePointer?
        // A cluster closes after a second at most, so a crash loses a second at most.
        av_dict_set(&options, "cluster_time_limit", "1000", 0)
        av_dict_set(&options, "cluster_size_limit", "2097152", 0)
        let status = avformat_write_header(context, &options)
        av_dict_free(&options)
        try settle(status)
        headerWritten = true
    }

    /// Writes one Opus packet or VP8 frame.
    /// - Parameters:
    ///   - milliseconds: Presentation time from the start of the recording.
    ///   - duration: How long it plays, milliseconds (0 when unknown).
    public func write(_ track: Track, data: UnsafeRawBufferPointer, milliseconds: Int64, duration: Int64, keyframe: Bool) throws(RecordingError) {
        guard let context, let packet, headerWritten else { return }
        let index = track == .audio ? audioIndex : videoIndex
        guard index >= 0, let base = data.baseAddress, !data.isEmpty else { return }
        let timeBase = context.pointee.streams[Int(index)]!.pointee.time_base
        let scale = { (value: Int64) in value * Int64(timeBase.den) / (1_000 * Int64(timeBase.num)) }
        packet.pointee.data = UnsafeMutablePointer(mutating: base.assumingMemoryBound(to: UInt8.self))
        packet.pointee.size = Int32(data.count)
        packet.pointee.pts = scale(milliseconds)
        packet.pointee.dts = scale(milliseconds)
        packet.pointee.duration = scale(duration)
        packet.pointee.stream_index = index
        packet.pointee.flags = keyframe || track == .audio ? AV_PKT_FLAG_KEY : 0
        // Not reference counted: libavformat copies what it must keep for interleaving.
        try settle(av_interleaved_write_frame(context, packet))
    }

    /// Flushes what waits for interleaving, writes cues and duration, closes the file.
    public func finish() throws(RecordingError) {
        guard let context else { return }
        defer { close() }
        guard headerWritten else { return }
        try settle(av_write_trailer(context))
    }

    /// Pushes what the muxer wrote to the file and notes how far the file is good; on a
    /// failure, marks the good length to cut back to and throws.
    private func settle(_ status: Int32) throws(RecordingError) {
        guard let pb = context?.pointee.pb else { return }
        avio_flush(pb)
        let failure = status < 0 ? status : pb.pointee.error
        guard failure >= 0 else {
            cutAt = cutAt ?? bytesWritten
            throw Self.error(failure, path: path, creating: false)
        }
        bytesWritten = avio_tell(pb)
    }

    private func close() {
        guard let context else { return }
        if context.pointee.pb != nil { avio_closep(&context.pointee.pb) }
        avformat_free_context(context)
        self.context = nil
        av_packet_free(&packet)
        if let cutAt { _ = truncate(path, off_t(cutAt)) }
    }

    package static func describe(_ status: Int32) -> String {
        var buffer = [CChar](repeating: 0, count: 128)
        av_strerror(status, &buffer, buffer.count)
        return String(decoding: buffer.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }

    static func error(_ status: Int32, path: String, creating: Bool) -> RecordingError {
        switch status {
        case me_averror(ENOSPC), me_averror(EDQUOT), me_averror(EFBIG):
            return RecordingError(.diskFull, "recording \(path): the disk is full (\(describe(status)))")
        default:
            return RecordingError(creating ? .cannotCreate : .writeFailed, "recording \(path): \(describe(status))")
        }
    }

    /// Samples per channel in an Opus packet, at 48 kHz (0 if it does not parse).
    public static func opusSamples(_ packet: UnsafeRawBufferPointer) -> Int {
        guard let base = packet.baseAddress, !packet.isEmpty else { return 0 }
        let samples = opus_packet_get_nb_samples(base.assumingMemoryBound(to: UInt8.self), Int32(packet.count), 48_000)
        return max(0, Int(samples))
    }
}
