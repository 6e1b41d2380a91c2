import Foundation

extension MediaSession {
    /// Records `target`'s media to WebM as the call carries it (Opus and VP8, not
    /// re-encoded), from the next keyframe on; a keyframe is asked for at once. Events:
    /// `recordStarted` now, `recordVideoSizeChanged` and `recordError` as they happen,
    /// `recordStopped` at `stopRecording` or when the session stops.
    /// - Parameters:
    ///   - path: A .webm file; nil picks one in the temporary directory. Its directory
    ///     must exist.
    ///   - videoBitrate: For this side's video only: record it re-encoded at this rate
    ///     (from the captured pictures) instead of as sent. Nil, or the rate being sent,
    ///     records what is sent.
    /// - Returns: The path recorded to.
    /// - Throws: `RecordingError`: already recording that user, a participant not (yet)
    ///   in the session, a missing directory, a file that cannot be created.
    @discardableResult
    public func startRecording(_ target: RecordingTarget, path: String? = nil, videoBitrate: Int? = nil) throws(RecordingError) -> String {
        let chosen = path ?? OutputFile.temporary(target.participant.map { $0.isEmpty ? "remote" : $0 } ?? "local", extension: "webm")
        if let videoBitrate, !VP8.bitrates.contains(videoBitrate) {
            throw RecordingError(.invalidOptions, "recording \(chosen): video bitrate \(videoBitrate) b/s is outside \(VP8.bitrates)")
        }
        let (entry, running) = state.withLock { state in (target.participant.flatMap { state.participants[$0] }, state.recordings[target]) }
        let (audioChannels, video): (Int?, Bool)
        if let participant = target.participant {
            if videoBitrate != nil {
                throw RecordingError(.invalidOptions, "recording \(chosen): the peer's video is recorded as received; a video bitrate applies to this side only")
            }
            guard let entry else {
                throw RecordingError(.nothingToRecord, participant.isEmpty
                    ? "recording \(chosen): the call has not started; the peer's media is not known yet"
                    : "recording \(chosen): participant '\(participant)' is not in the session")
            }
            (audioChannels, video) = (entry.audio == nil ? nil : 1, entry.video != nil)
        } else {
            (audioChannels, video) = (localAudioChannels, sendsVideo)
        }
        if let running {
            throw RecordingError(.alreadyRecording, "a recording of the \(target) user is already running (\(running.path))")
        }
        let sendingRate = controls.current.videoBitrate ?? parts.configuration.videoBitrate
        let reencode = target == .local && video && videoBitrate != nil && videoBitrate != sendingRate ? videoBitrate : nil
        let recorder = try MediaRecorder(path: chosen, audioChannels: audioChannels, video: video, reencodeVideoAt: reencode) { [self] notice in
            switch notice {
            case .keyframeNeeded:
                if let participant = target.participant {
                    state.withLock { $0.participants[participant]?.keyframeWanted = true }
                } else {
                    controls.update { $0.keyframeRequested = true }
                }
            case .videoSizeChanged(let width, let height):
                emit(.recordVideoSizeChanged(target, width: width, height: height))
            case .failed(let error):
                emit(.recordError(target, error))
            }
        }
        let raced = state.withLock { state in
            guard state.recordings[target] == nil else { return true }
            state.recordings[target] = recorder
            return false
        }
        if raced {
            recorder.stop()
            try? FileManager.default.removeItem(atPath: chosen)
            throw RecordingError(.alreadyRecording, "a recording of the \(target) user is already running")
        }
        emit(.recordStarted(target, path: chosen))
        return chosen
    }

    /// Stops `target`'s recording: what is queued is written, then the cues and duration.
    /// - Returns: What was recorded (with `failure` set if it had ended early).
    /// - Throws: `RecordingError` `.notRecording` when none runs.
    @discardableResult
    public func stopRecording(_ target: RecordingTarget) throws(RecordingError) -> MediaRecorder.Summary {
        guard let recorder = state.withLock({ $0.recordings.removeValue(forKey: target) }) else {
            throw RecordingError(.notRecording, "no recording of the \(target) user is running")
        }
        let summary = recorder.stop()
        emit(.recordStopped(target, summary))
        return summary
    }

    /// The file `target`'s recording writes to, while one runs.
    public func currentRecordingPath(_ target: RecordingTarget) -> String? { state.withLock { $0.recordings[target]?.path } }

    /// The recorder of a participant's media, if one runs.
    func recording(of participant: String) -> MediaRecorder? { state.withLock { $0.recording(of: participant) } }

    /// The next picture to be sent (captured, before encoding), or nil when none comes
    /// within `timeout` (no video source, or the session is not sending).
    public func snapshotLocalVideo(timeout: Duration = .seconds(2)) async -> VideoFrame? {
        guard sendsVideo else { return nil }
        return await withCheckedContinuation { (continuation: CheckedContinuation<VideoFrame?, Never>) in
            let id = state.withLock { state in
                defer { state.nextSnapshot += 1 }
                state.snapshots[state.nextSnapshot] = continuation
                return state.nextSnapshot
            }
            Thread.detachNewThread { [self] in
                ThreadName.set("snapshot wait")
                Thread.sleep(forTimeInterval: timeout / .seconds(1))
                // Still waiting after the timeout: nothing came.
                state.withLock { $0.snapshots.removeValue(forKey: id) }?.resume(returning: nil)
            }
        }
    }

    /// Records the call's audio (this side's sent audio with the file mix, and the played
    /// remote audio) to `path`, WAV or Ogg Opus by extension; nil picks a WAV in the
    /// temporary directory.
    /// - Returns: The path recorded to.
    /// - Throws: `MixError` for a missing directory, an unsupported extension, a file that
    ///   cannot be created, or a recording already running.
    @discardableResult
    public func startAudioRecording(path: String? = nil) throws(MixError) -> String {
        guard state.withLock({ $0.audioRecorder }) == nil else { throw MixError("a call audio recording is already running") }
        let chosen = path ?? OutputFile.temporary("call", extension: "wav")
        let started = try CallAudioRecorder(path: chosen)
        state.withLock { $0.audioRecorder = started }
        return chosen
    }

    /// Stops the call audio recording.
    /// - Throws: `MixError` when none runs, or writing failed (what was written stays).
    public func stopAudioRecording() throws(MixError) {
        guard let running = state.withLock({ state in defer { state.audioRecorder = nil }; return state.audioRecorder }) else {
            throw MixError("no call audio recording is running")
        }
        try running.stop()
    }

    /// The file the call audio recording writes to, while one runs.
    public var currentAudioRecordingFilePath: String? { state.withLock { $0.audioRecorder?.path } }

    /// Mixes `task`'s file into what is sent from the next frame on; a running task ends
    /// (it is stopped, without a completion event).
    public func startAudioMix(_ task: AudioFileMixTask) {
        let previous = state.withLock { state in
            defer { state.mixTask = task }
            return state.mixTask
        }
        previous?.stop()
    }

    /// The task mixing now, if any.
    public var currentAudioMixTask: AudioFileMixTask? { state.withLock { $0.mixTask } }

    /// Ends the running task, if any.
    public func stopAudioMix() {
        let running = state.withLock { state in
            defer { state.mixTask = nil }
            return state.mixTask
        }
        running?.stop()
    }
}
