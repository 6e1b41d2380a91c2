import Synchronization

/// Live switches for a running `MediaSender`, set from any thread (the app's) and read by
/// the sending thread once per frame.
public final class SenderControls: Sendable {
    public struct State: Sendable, Hashable {
        /// Send silence instead of the microphone.
        public var audioMuted = false
        /// Send no video (the camera stays open, frames are dropped before encoding).
        public var videoPaused = false
        /// Upper bound on the VP8 bitrate, below the configured one; nil for none.
        public var maximumVideoBitrate: Int?
        /// Ask for a keyframe at the next video frame.
        public var keyframeRequested = false

        public init() {}
    }

    private let state = Mutex(State())

    public init() {}

    /// The switches now.
    public var current: State { state.withLock { $0 } }

    /// Changes switches atomically.
    public func update(_ change: (inout State) -> Void) {
        state.withLock { change(&$0) }
    }

    /// Reads and clears the keyframe request.
    func takeKeyframeRequest() -> Bool {
        state.withLock { state in
            defer { state.keyframeRequested = false }
            return state.keyframeRequested
        }
    }
}
