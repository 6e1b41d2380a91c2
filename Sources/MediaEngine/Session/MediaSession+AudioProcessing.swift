import Synchronization

/// A session's capture-path processing: the settings the app chose, and the processor,
/// made the first time they are on (a session whose settings stay off never loads the
/// library). The sending thread processes each captured frame; the receiving thread hands
/// it what the speaker plays.
final class CaptureProcessing: Sendable {
    private struct State {
        var settings: AudioProcessor.Settings
        var processor: AudioProcessor?
        /// Why the processor could not be made; cleared when the settings change (the next
        /// frame tries again).
        var failure: AudioProcessingError?
        var failureReported = false
    }

    private let state: Mutex<State>
    private let captureLayout: ChannelLayout
    /// The library's rate: the engine's, except in tests of the library refusing to start.
    private let sampleRate: Int

    init(settings: AudioProcessor.Settings, captureLayout: ChannelLayout, sampleRate: Int) {
        state = Mutex(State(settings: settings))
        self.captureLayout = captureLayout
        self.sampleRate = sampleRate
    }

    var settings: AudioProcessor.Settings {
        get { state.withLock { $0.settings } }
        set {
            state.withLock { state in
                if state.settings != newValue { state.failure = nil }
                state.settings = newValue
                state.processor?.settings = newValue
            }
        }
    }

    var statistics: AudioProcessor.Statistics? { state.withLock { $0.processor }?.statistics }

    /// On the sending thread: the processor to run the next frame through (nil while the
    /// settings are off, or when it could not be made), and a failure not yet reported.
    func captureProcessor() -> (AudioProcessor?, newFailure: AudioProcessingError?) {
        state.withLock { state in
            guard state.settings.isEnabled else { return (nil, nil) }
            if state.processor == nil && state.failure == nil {
                do throws(AudioProcessingError) {
                    state.processor = try AudioProcessor(settings: state.settings, capture: captureLayout, render: .mono,
                                                         sampleRate: sampleRate)
                } catch {
                    state.failure = error
                    state.failureReported = false
                }
            }
            var unreported: AudioProcessingError?
            if let failure = state.failure, !state.failureReported {
                state.failureReported = true
                unreported = failure
            }
            return (state.processor, unreported)
        }
    }

    /// On the receiving thread: the processor to hand played audio to, while it cancels echo.
    func renderProcessor() -> AudioProcessor? {
        state.withLock { $0.settings.echoCancellation ? $0.processor : nil }
    }
}

extension MediaSession {
    /// What the capture path runs now: echo cancellation, noise suppression, gain control
    /// and the high-pass filter (the voice detector runs with any of them).
    public var audioProcessing: AudioProcessor.Settings { processing.settings }

    /// Changes the capture path's processing from the next captured frame on, during a
    /// call as before one. Turning it on for the first time starts the library then; the
    /// echo canceller learns the room from what is played from then on.
    public func setAudioProcessing(_ settings: AudioProcessor.Settings) {
        processing.settings = settings
    }

    /// What the capture path's processing measured so far (nil while it never ran):
    /// ERLE, the echo's delay, the fraction of frames with voice.
    public var audioProcessingStatistics: AudioProcessor.Statistics? { processing.statistics }

    /// The settings a session starts with when its configuration names none: everything
    /// on for a microphone next to a loudspeaker (a source and a sink that report device
    /// delays), everything off for files, tones and silent sinks, which have no room.
    static func automaticProcessing(_ configuration: Configuration) -> AudioProcessor.Settings {
        configuration.audio.captureDelay != nil && configuration.audioSink?.playbackDelay != nil ? .voice : .off
    }
}

extension MediaSession.Configuration {
    /// The processing a session with these devices starts with when `audioProcessing` is
    /// nil: everything on for a microphone next to a loudspeaker, off otherwise.
    public var defaultAudioProcessing: AudioProcessor.Settings { MediaSession.automaticProcessing(self) }
}
