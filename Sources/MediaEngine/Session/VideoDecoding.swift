/// The receive side's video decoding over a media core: a VP8 decoder per stream for the
/// frames the core releases, corruption reported back (so the core asks for a keyframe),
/// and pictures held back for lip sync when audio plays later than video.
///
/// One owner (the receiving thread); the core is passed in under its lock.
final class VideoDecoding {
    private var decoders: [ReceiveStreamID: VP8.Decoder] = [:]
    private var picture = VideoFrame(width: 2, height: 2)
    /// Decoded pictures held back so video plays no earlier than its audio.
    private var held: [(stream: ReceiveStreamID, frame: VideoFrame, release: Duration)] = []

    /// When the next held picture is due.
    var nextRelease: Duration? { held.first?.release }

    /// Handles the core's events: decodes each released frame and hands it to `video`
    /// (now, or when its lip-sync hold ends); passes the encoded frame to `encodedMedia`
    /// (recordings); other events go to `other`. For a caller that holds the core's lock.
    func handleEvents(of core: MediaCore, now: Duration, video: (ReceiveStreamID, VideoFrame) throws -> Void,
                      encodedMedia: ((ReceiveStreamID, EncodedMedia) -> Void)? = nil,
                      other: (MediaCore.Event) throws -> Void = { _ in }) throws {
        try releaseDue(now: now, video)
        while let event = core.pollEvent() {
            guard case .videoFrame(let id, let frame) = event else {
                try other(event)
                continue
            }
            try decode(id, frame, now: now, withCore: { $0(core) }, video: video, encodedMedia: encodedMedia)
        }
    }

    /// Hands out the held pictures that are due.
    func releaseDue(now: Duration, _ video: (ReceiveStreamID, VideoFrame) throws -> Void) throws {
        while let first = held.first, first.release <= now {
            held.removeFirst()
            try video(first.stream, first.frame)
        }
    }

    /// Decodes one frame the core released. `withCore` runs the bookkeeping calls on the
    /// core (under its lock, for a caller that decodes outside it).
    func decode(_ id: ReceiveStreamID, _ frame: VideoReceiveStream.Frame, now: Duration,
                withCore: ((MediaCore) -> Void) -> Void, video: (ReceiveStreamID, VideoFrame) throws -> Void,
                encodedMedia: ((ReceiveStreamID, EncodedMedia) -> Void)?) throws {
        let decoder: VP8.Decoder
        if let existing = decoders[id] {
            decoder = existing
        } else {
            decoder = try VP8.Decoder()
            decoders[id] = decoder
        }
        do {
            let shown = try frame.data.withUnsafeBytes { try decoder.decode($0, timestamp: .zero, into: &picture) }
            if let encodedMedia {
                frame.data.withUnsafeBytes {
                    encodedMedia(id, EncodedMedia(kind: .video, data: $0, rtpTimestamp: frame.timestamp, isKeyframe: frame.isKeyframe,
                                                  width: picture.width, height: picture.height, time: .now))
                }
            }
            guard shown else { return }
            var hold = Duration.zero
            withCore { core in
                hold = core.videoHold(for: id)
                core.videoDecoded(id, timestamp: frame.timestamp, isKeyframe: frame.isKeyframe, shownAt: now + hold)
            }
            if hold > .zero {
                held.append((id, picture, now + hold))
            } else {
                try video(id, picture)
            }
        } catch is CodecError {
            withCore { $0.decoderReportedCorruption(id, now: now) }
        }
    }

    /// Hands out every held picture (the session is ending).
    func releaseAll(_ video: (ReceiveStreamID, VideoFrame) throws -> Void) throws {
        for entry in held { try video(entry.stream, entry.frame) }
        held.removeAll()
    }

    /// Forgets a stream's decoder (the stream was removed).
    func remove(_ id: ReceiveStreamID) {
        decoders[id] = nil
        held.removeAll { $0.stream == id }
    }
}
