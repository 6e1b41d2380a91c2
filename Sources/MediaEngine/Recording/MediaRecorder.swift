import Foundation
import Synchronization

/// Records one user's media to WebM (NIM's per-user recording): Opus packets and VP8
/// frames are written exactly as they were encoded, never re-encoded.
///
/// Taps on the I/O threads `offer` each encoded frame; it is copied into one of a fixed
/// set of reusable slots (no allocation once warm) and a writer thread of the recorder's
/// own muxes it, so a slow disk never stalls the call. When the writer falls behind and
/// the slots run out, frames are dropped and counted; video then waits for the next
/// keyframe (and asks for one) so that nothing undecodable is written.
///
/// Timestamps: each stream's first frame is placed at its arrival (or send) time since
/// the recording's first frame, later ones by their RTP timestamps, so the streams line up
/// as they played. Video before the first keyframe is dropped; audio waits for it at most
/// three seconds, after which the file is written without video. A keyframe of another
/// size goes on in the same track (VP8 keyframes carry their size; decoders follow) and is
/// reported as `videoSizeChanged`. Audio lost on the way leaves no hole in the file: each
/// missing packet's place gets a one-byte Opus packet (a TOC with an empty frame), which
/// decoders conceal, so the audio track keeps its length and its sync with video. A
/// write error (a full disk) ends the recording with
/// `failed`; what was written before stays playable.
///
/// With `reencodeVideoAt`, video comes from `offerPicture` instead (captured pictures),
/// encoded with VP8 at that bitrate on a thread of the recorder's own; pictures arriving
/// while it is busy replace the waiting one and count as dropped.
public final class MediaRecorder: @unchecked Sendable {
    public struct Summary: Sendable {
        public var path: String
        public var audioPackets = 0
        public var videoFrames = 0
        public var keyframes = 0
        /// From the first frame written to the end of the last, seconds.
        public var duration = 0.0
        public var bytes: Int64 = 0
        /// Frames dropped because the writer fell behind.
        public var droppedWhileBehind = 0
        /// Video frames that came before the first keyframe (or after a drop) and could
        /// not be decoded.
        public var droppedAwaitingKeyframe = 0
        /// Frames older than what was already written.
        public var droppedOutOfOrder = 0
        /// Keyframes whose size differed from the one before.
        public var resolutionChanges = 0
        /// Audio packets missing from the stream (lost on the way), written as empty
        /// frames for decoders to conceal.
        public var audioPacketsConcealed = 0
        /// Captured pictures the re-encoder skipped because it was busy.
        public var picturesDroppedWhileEncoding = 0
        /// Why the recording ended early.
        public var failure: RecordingError?
    }

    public enum Notice: Sendable {
        case videoSizeChanged(width: Int, height: Int)
        case failed(RecordingError)
        /// Video needs a keyframe (at the start, or after a dropped frame).
        case keyframeNeeded
    }

    public let path: String
    private let audioChannels: Int?
    private let expectsVideo: Bool
    private let notices: @Sendable (Notice) -> Void

    private final class Slot {
        var kind = EncodedMedia.Kind.audio
        var bytes: [UInt8] = []
        var rtpTimestamp: UInt32 = 0
        var isKeyframe = false
        var width = 0
        var height = 0
        var time = ContinuousClock.now
    }

    /// Slots move between `free` and `ready` under `condition`; whoever holds an index
    /// owns that slot, which is what makes the unchecked Sendable safe.
    private let slots: [Slot]
    private let condition = NSCondition()
    private var free: [Int]
    private var ready: [Int]
    private var readyHead = 0
    private var readyCount = 0
    private var stopping = false
    private var failed = false
    private var failure: RecordingError?
    private var videoNeedsKeyframe = true
    private var droppedWhileBehind = 0
    private var droppedAwaitingKeyframe = 0
    private let finished = DispatchSemaphore(value: 0)
    private var summary: Summary
    private let reencoder: Reencoder?

    /// Encodes captured pictures for a recording at its own bitrate.
    private final class Reencoder: @unchecked Sendable {
        // @unchecked: `mailbox` is thread-safe; the rest is used by the encoding thread alone.
        let bitrate: Int
        let mailbox = FrameMailbox()
        let finished = DispatchSemaphore(value: 0)
        let keyframeWanted = Atomic<Bool>(true)
        init(bitrate: Int) { self.bitrate = bitrate }
    }

    /// Creates the file and starts the writer.
    /// - Parameters:
    ///   - audioChannels: The Opus stream's channels, nil when the user sends no audio.
    ///   - video: Whether the user sends video.
    ///   - slots: Frames that may wait for the writer.
    ///   - notices: Size changes, failures and keyframe requests, from the recorder's threads.
    /// - Throws: `RecordingError`: a missing directory, a file that cannot be created, a
    ///   path that does not end in .webm, nothing to record.
    public init(path: String, audioChannels: Int?, video: Bool, reencodeVideoAt bitrate: Int? = nil, slots count: Int = 512,
                notices: @escaping @Sendable (Notice) -> Void = { _ in }) throws(RecordingError) {
        if let bitrate, !VP8.bitrates.contains(bitrate) {
            throw RecordingError(.invalidOptions, "recording \(path): video bitrate \(bitrate) b/s is outside \(VP8.bitrates)")
        }
        guard path.lowercased().hasSuffix(".webm") else {
            throw RecordingError(.invalidOptions, "recording \(path): recordings are WebM; use a .webm file")
        }
        guard audioChannels != nil || video else {
            throw RecordingError(.nothingToRecord, "recording \(path): the user sends neither audio nor video")
        }
        if let audioChannels, !(1...2).contains(audioChannels) {
            throw RecordingError(.invalidOptions, "recording \(path): \(audioChannels) audio channels (1 or 2)")
        }
        let muxer = try WebMMuxer(path: path)
        self.path = path
        self.audioChannels = audioChannels
        expectsVideo = video
        self.notices = notices
        slots = (0..<count).map { _ in Slot() }
        free = Array((0..<count).reversed())
        ready = [Int](repeating: 0, count: count)
        summary = Summary(path: path)
        reencoder = video ? bitrate.map(Reencoder.init) : nil
        let writer = Writer(muxer: muxer)
        Thread.detachNewThread { [self] in
            ThreadName.set("recorder")
            run(writer)
            finished.signal()
        }
        if let reencoder {
            Thread.detachNewThread { [self] in
                ThreadName.set("recorder encode")
                encode(reencoder)
                reencoder.finished.signal()
            }
        } else if video {
            notices(.keyframeNeeded)
        }
    }

    /// A captured picture, for a recording that re-encodes its video (ignored otherwise).
    public func offerPicture(_ frame: VideoFrame) {
        reencoder?.mailbox.offer(frame)
    }

    private func encode(_ reencoder: Reencoder) {
        var picture = VideoFrame(width: 2, height: 2)
        var encoder: VP8.Encoder?
        var output = [UInt8]()
        while reencoder.mailbox.take(into: &picture) {
            do {
                if encoder?.configuration.width != picture.width || encoder?.configuration.height != picture.height {
                    var configuration = VP8.Configuration(width: picture.width, height: picture.height, bitrate: reencoder.bitrate)
                    configuration.threads = 1
                    encoder = try VP8.Encoder(configuration: configuration)
                    output = [UInt8](repeating: 0, count: encoder!.maximumFrameSize)
                    reencoder.keyframeWanted.store(true, ordering: .relaxed)
                }
                guard let encoder else { continue }
                let keyframe = reencoder.keyframeWanted.exchange(false, ordering: .relaxed)
                let info = try output.withUnsafeMutableBytes { (bytes) throws(CodecError) in
                    try encoder.encode(picture, forceKeyframe: keyframe, into: bytes)
                }
                guard let info else { continue }
                let timestamp = UInt32(truncatingIfNeeded: Int64(picture.timestamp / .seconds(1) * Double(VP8.clockRate)))
                output.withUnsafeBytes { bytes in
                    accept(EncodedMedia(kind: .video, data: UnsafeRawBufferPointer(rebasing: bytes[0..<info.byteCount]),
                                        rtpTimestamp: timestamp, isKeyframe: info.isKeyframe,
                                        width: picture.width, height: picture.height, time: .now))
                }
            } catch {
                fail(RecordingError(.writeFailed, "recording \(path): re-encoding video failed: \(error)"))
                return
            }
        }
    }

    /// Takes a copy of one encoded frame; never blocks on the disk. A recording that
    /// re-encodes its video takes only audio here.
    public func offer(_ media: EncodedMedia) {
        guard media.kind == .audio || reencoder == nil else { return }
        accept(media)
    }

    /// Asks for a keyframe: the re-encoder's own, or the stream's sender's.
    private func askForKeyframe() {
        if let reencoder {
            reencoder.keyframeWanted.store(true, ordering: .relaxed)
        } else {
            notices(.keyframeNeeded)
        }
    }

    private func accept(_ media: EncodedMedia) {
        var needsKeyframe = false
        condition.lock()
        defer {
            condition.unlock()
            if needsKeyframe { askForKeyframe() }
        }
        guard !stopping, !failed, media.data.count > 0 else { return }
        if media.kind == .video {
            if media.isKeyframe {
                videoNeedsKeyframe = false
            } else if videoNeedsKeyframe {
                droppedAwaitingKeyframe += 1
                return
            }
        }
        guard let index = free.popLast() else {
            droppedWhileBehind += 1
            if media.kind == .video {
                videoNeedsKeyframe = true
                needsKeyframe = true
            }
            return
        }
        let slot = slots[index]
        slot.kind = media.kind
        slot.bytes.removeAll(keepingCapacity: true)
        slot.bytes.append(contentsOf: media.data)
        slot.rtpTimestamp = media.rtpTimestamp
        slot.isKeyframe = media.isKeyframe
        slot.width = media.width
        slot.height = media.height
        slot.time = media.time
        ready[(readyHead + readyCount) % ready.count] = index
        readyCount += 1
        condition.signal()
    }

    /// Writes what is queued, then the cues and duration, and closes the file. Safe to
    /// call more than once.
    @discardableResult
    public func stop() -> Summary {
        if let reencoder {
            reencoder.mailbox.close()
            reencoder.finished.wait()
            reencoder.finished.signal()
        }
        condition.lock()
        stopping = true
        condition.signal()
        condition.unlock()
        finished.wait()
        finished.signal()
        condition.lock()
        defer { condition.unlock() }
        var result = summary
        result.droppedWhileBehind = droppedWhileBehind
        result.failure = failure
        result.droppedAwaitingKeyframe += droppedAwaitingKeyframe
        result.picturesDroppedWhileEncoding = reencoder?.mailbox.dropped ?? 0
        return result
    }

    /// Whether the recording ended on an error.
    public var hasFailed: Bool {
        condition.lock()
        defer { condition.unlock() }
        return failed
    }

    // MARK: The writer thread

    /// What the writer thread alone touches, handed to it at start (hence unchecked).
    private final class Writer: @unchecked Sendable {
        let muxer: WebMMuxer
        var origin: ContinuousClock.Instant?
        var held: [Int] = []
        var videoAbandoned = false
        /// A video frame was dropped here: later ones wait for a keyframe.
        var videoAwaitsKeyframe = false
        var size: (width: Int, height: Int)?
        var tracks = [TrackClock(clockRate: 48_000), TrackClock(clockRate: 90_000)]
        var start: Int64 = .max
        var end: Int64 = .min
        /// The last audio packet's length and its TOC byte with a single-frame code, for
        /// filling holes.
        var audioFrame: Int64 = 0
        var filler: [UInt8] = [0]
        init(muxer: WebMMuxer) { self.muxer = muxer }
    }

    /// One stream's RTP timestamps as milliseconds of the recording.
    struct TrackClock {
        let clockRate: Int64
        var first: (extended: Int64, milliseconds: Int64)?
        var lastRaw: UInt32 = 0
        var lastExtended: Int64 = 0
        var lastMilliseconds: Int64 = .min

        init(clockRate: Int64) { self.clockRate = clockRate }

        /// The presentation time of `rtp`, given the stream's first frame came `offset` ms in.
        mutating func milliseconds(rtp: UInt32, offset: Int64) -> Int64 {
            let extended = first == nil ? Int64(rtp) : lastExtended + Int64(Int32(bitPattern: rtp &- lastRaw))
            lastRaw = rtp
            lastExtended = extended
            if first == nil { first = (extended, offset) }
            let (firstExtended, firstMilliseconds) = first!
            // To the nearest millisecond (a 90 kHz frame of 1/15 s is 66.67 ms: 67, 133, 200).
            let ticks = (extended - firstExtended) * 1_000
            let rounded = ticks >= 0 ? (ticks + clockRate / 2) / clockRate : -((-ticks + clockRate / 2) / clockRate)
            return firstMilliseconds + rounded
        }
    }

    private func run(_ writer: Writer) {
        while true {
            condition.lock()
            while readyCount == 0 && !stopping { condition.wait() }
            if readyCount == 0 {
                condition.unlock()
                break
            }
            let index = ready[readyHead]
            readyHead = (readyHead + 1) % ready.count
            readyCount -= 1
            condition.unlock()
            let keep = handle(slots[index], index: index, writer)
            if !keep {
                condition.lock()
                free.append(index)
                condition.unlock()
            }
        }
        finish(writer)
    }

    /// Writes or holds one frame; true when the slot is held (audio waiting for video).
    private func handle(_ slot: Slot, index: Int, _ writer: Writer) -> Bool {
        guard !hasFailed else { return false }
        if !writer.muxer.headerWritten {
            switch slot.kind {
            case .video:
                guard expectsVideo, !writer.videoAbandoned, slot.isKeyframe, slot.width > 0, slot.height > 0 else {
                    summary.droppedAwaitingKeyframe += 1
                    return false
                }
                if writer.origin == nil { writer.origin = slot.time }
                writer.size = (slot.width, slot.height)
                guard begin(writer, video: writer.size) else { return false }
            case .audio:
                if writer.origin == nil { writer.origin = slot.time }
                if expectsVideo, !writer.videoAbandoned {
                    writer.held.append(index)
                    if let first = writer.held.first, slot.time - slots[first].time < .seconds(3) { return true }
                    // No keyframe in three seconds: the recording goes on without video.
                    writer.videoAbandoned = true
                    _ = begin(writer, video: nil)
                    return false
                }
                guard begin(writer, video: nil) else { return false }
            }
        }
        write(slot, writer)
        return false
    }

    /// Writes the header, then the audio held while waiting for video.
    private func begin(_ writer: Writer, video: (width: Int, height: Int)?) -> Bool {
        do throws(RecordingError) {
            try writer.muxer.writeHeader(WebMMuxer.Tracks(video: video, audioChannels: audioChannels))
        } catch {
            fail(error)
            return false
        }
        let held = writer.held
        writer.held.removeAll()
        for index in held { write(slots[index], writer) }
        condition.lock()
        free.append(contentsOf: held)
        condition.unlock()
        return true
    }

    private func write(_ slot: Slot, _ writer: Writer) {
        guard !hasFailed, let origin = writer.origin else { return }
        let track: WebMMuxer.Track = slot.kind == .audio ? .audio : .video
        if track == .video && (writer.videoAbandoned || !expectsVideo) { return }
        let clock = track == .audio ? 0 : 1
        let offset = max(0, Int64((slot.time - origin) / .milliseconds(1)))
        let milliseconds = writer.tracks[clock].milliseconds(rtp: slot.rtpTimestamp, offset: offset)
        guard milliseconds > writer.tracks[clock].lastMilliseconds || (track == .video && milliseconds == writer.tracks[clock].lastMilliseconds) else {
            summary.droppedOutOfOrder += 1
            if track == .video {
                // The frames after it may refer to it: none is written until a keyframe.
                writer.videoAwaitsKeyframe = true
                askForKeyframe()
            }
            return
        }
        if track == .video && writer.videoAwaitsKeyframe {
            guard slot.isKeyframe else {
                summary.droppedAwaitingKeyframe += 1
                return
            }
            writer.videoAwaitsKeyframe = false
        }
        var duration: Int64 = 0
        if track == .audio {
            duration = slot.bytes.withUnsafeBytes { Int64(WebMMuxer.opusSamples($0)) } * 1_000 / 48_000
            fillAudioHole(before: milliseconds, writer)
            guard !hasFailed else { return }
        } else if slot.isKeyframe, let size = writer.size, size.width != slot.width || size.height != slot.height {
            writer.size = (slot.width, slot.height)
            summary.resolutionChanges += 1
            notices(.videoSizeChanged(width: slot.width, height: slot.height))
        }
        do throws(RecordingError) {
            try slot.bytes.withUnsafeBufferPointer { (buffer) throws(RecordingError) in
                try writer.muxer.write(track, data: UnsafeRawBufferPointer(buffer), milliseconds: milliseconds,
                                       duration: duration, keyframe: slot.isKeyframe)
            }
        } catch {
            fail(error)
            return
        }
        writer.tracks[clock].lastMilliseconds = milliseconds
        writer.start = min(writer.start, milliseconds)
        writer.end = max(writer.end, milliseconds + duration)
        if track == .audio {
            writer.audioFrame = duration
            writer.filler[0] = slot.bytes[0] & 0xFC
            summary.audioPackets += 1
        } else {
            summary.videoFrames += 1
            if slot.isKeyframe { summary.keyframes += 1 }
        }
    }

    /// Writes an empty Opus frame (RFC 6716 3.2.1: decoders conceal it) for each packet
    /// missing between the audio written so far and a packet at `milliseconds`. Holes
    /// longer than 5 s (a paused sender) stay holes.
    private func fillAudioHole(before milliseconds: Int64, _ writer: Writer) {
        // Where the audio written so far ends.
        guard writer.audioFrame > 0 else { return }
        let end = writer.tracks[0].lastMilliseconds + writer.audioFrame
        let missing = (milliseconds - end) / writer.audioFrame
        guard missing >= 1, milliseconds - end <= 5_000 else { return }
        for index in 0..<missing {
            do throws(RecordingError) {
                try writer.filler.withUnsafeBufferPointer { (buffer) throws(RecordingError) in
                    try writer.muxer.write(.audio, data: UnsafeRawBufferPointer(buffer), milliseconds: end + index * writer.audioFrame,
                                           duration: writer.audioFrame, keyframe: true)
                }
            } catch {
                fail(error)
                return
            }
            summary.audioPacketsConcealed += 1
        }
        writer.tracks[0].lastMilliseconds = end + (missing - 1) * writer.audioFrame
    }

    /// Records the first failure (from the writer or the re-encoder) and stops taking frames.
    private func fail(_ error: RecordingError) {
        condition.lock()
        let first = !failed
        failed = true
        if first { failure = error }
        condition.unlock()
        if first { notices(.failed(error)) }
    }

    private func finish(_ writer: Writer) {
        if !writer.muxer.headerWritten && !hasFailed && !writer.held.isEmpty {
            // Audio still waiting for a keyframe that never came: it is written without video.
            writer.videoAbandoned = true
            _ = begin(writer, video: nil)
        }
        let empty = !writer.muxer.headerWritten
        do throws(RecordingError) {
            try writer.muxer.finish()
        } catch {
            fail(error)
        }
        if empty && !hasFailed {
            // No media came at all: a WebM without a frame is no recording; none is left behind.
            try? FileManager.default.removeItem(atPath: path)
            fail(RecordingError(.nothingToRecord, "recording \(path): no media arrived, so no file was kept"))
        }
        summary.bytes = writer.muxer.bytesWritten
        if writer.end > writer.start { summary.duration = Double(writer.end - writer.start) / 1_000 }
    }
}
