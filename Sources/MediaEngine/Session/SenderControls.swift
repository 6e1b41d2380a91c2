
/// Live switches for a running `MediaSender`, set from any thread (the app's) and read by
/// the sending thread once per frame.
public final class SenderControls: Sendable {
    public struct State: Sendable, Hashable {
        /// Send silence instead of the microphone.
        public var audioMuted = false
        /// Send no video (the camera stays open, frames are dropped before encoding).
        public var videoPaused = false
        /// Send no audio at all, not even silence (a meeting's audience); the source is
        /// still read, so the media clock keeps time for when sending resumes.
        public var audioPaused = false
        /// Upper bound on the VP8 bitrate, below the configured one; nil for none.
        public var maximumVideoBitrate: Int?
        /// The VP8 bitrate to aim at instead of the configured one (never above it); the
        /// bandwidth estimate and `maximumVideoBitrate` still bound it. Nil: the configured one.
        public var videoBitrate: Int?
        /// Ask for a keyframe at the next video frame.
        public var keyframeRequested = false
        /// Simulcast: the layers (lowest first) to send, as the forwarding server asked (it
        /// pauses those nobody shows that large); nil: all. A layer turned back on starts
        /// with a keyframe.
        public var videoLayersActive: [Bool]?

        public init() {}
    }

    private let state = Locked(State())
    private let handoff = Locked<VideoSourceHandoff?>(nil)

    /// A source handed from the app's thread to the sending thread, which alone uses it
    /// from then on: that single ownership is what makes the unchecked Sendable safe.
    final class VideoSourceHandoff: @unchecked Sendable {
        let source: any VideoSource
        init(_ source: any VideoSource) { self.source = source }
    }

    public init() {}

    /// The switches now.
    public var current: State { state.withLock { $0 } }

    /// Changes switches atomically.
    public func update(_ change: (inout State) -> Void) {
        state.withLock { change(&$0) }
    }

    /// Makes the sender read pictures from `source` from its next frame on (another
    /// camera, another size). The sender reconfigures the encoder for its size and starts
    /// with a keyframe; the old source is closed by being released.
    public func replaceVideoSource(_ source: sending any VideoSource) {
        let box = VideoSourceHandoff(source)
        handoff.withLock { $0 = box }
    }

    /// Takes a pending replacement source.
    func takeVideoSource() -> (any VideoSource)? {
        handoff.withLock { pending in
            defer { pending = nil }
            return pending?.source
        }
    }

    /// Reads and clears the keyframe request.
    func takeKeyframeRequest() -> Bool {
        state.withLock { state in
            defer { state.keyframeRequested = false }
            return state.keyframeRequested
        }
    }
}
