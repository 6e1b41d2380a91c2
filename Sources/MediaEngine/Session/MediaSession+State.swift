extension MediaSession {
    /// Everything the app's calls and the session's two threads share, behind the one lock
    /// (`MediaSession.state`). Its methods are what one operation does under that lock;
    /// none calls out (the event handler, a recorder, a sink, a continuation). They hand
    /// back what to call, and the session calls it once the lock is released.
    struct State: Sendable {
        // Lifecycle.
        var started = false
        var gathering = false
        /// ICE selected a pair: the sending thread may send, and silence counts as a
        /// disconnection from now on.
        var connected = false
        /// Media may flow: SDES keys were given up front, or DTLS agreed them. The sending
        /// thread waits for this as well as `connected` (ICE connects before the handshake
        /// on the path ends; a frame sent in between finds no keyed path and fails).
        var keyed = true
        /// A meeting leg (`join`): silence and BYEs are participants, not the leg, ending.
        var meetingLeg = false
        /// The session's threads still running.
        var threads = 0
        /// `stop() async` callers waiting for the threads to end.
        var ended: [CheckedContinuation<Void, Never>] = []
        var summary = Summary()
        /// The first few of the peer's candidates that were not checked, and why: what a
        /// "no path" failure names.
        var ignored: [(candidate: ICECandidate, reason: ICECandidate.Unusable)] = []
        var eventHandler: EventHandler?
        /// The JSEP offer this side made (`webRTCOffer()`) and the certificate it names.
        var offer: (certificate: DTLSCertificate, sdp: SessionDescription)?

        // Whom the session receives.
        var participants: [String: ParticipantState] = [:]
        /// Whose each receive stream is.
        var streamOwners: [ReceiveStreamID: String] = [:]

        // What the app started.
        var recordings: [RecordingTarget: MediaRecorder] = [:]
        var audioRecorder: CallAudioRecorder?
        var mixTask: AudioFileMixTask?
        /// A sink the app handed over, for the receiving thread to take at its next block.
        var sinkHandoff: SinkHandoff?
        /// `snapshotLocalVideo` callers waiting for the next captured picture, by ticket.
        var snapshots: [Int: CheckedContinuation<VideoFrame?, Never>] = [:]
        var nextSnapshot = 0

        /// Whether `stop` and `wait` must wait for threads.
        var isRunning: Bool { (started || gathering) && threads > 0 }

        /// Marks gathering begun (with `events` as the handler) and counts the receiving
        /// thread about to start; false when it had begun already.
        mutating func beginGathering(_ events: EventHandler) -> Bool {
            guard !gathering else { return false }
            gathering = true
            eventHandler = events
            threads += 1
            return true
        }

        /// Marks the session started, `events` its handler from now on (it replaces the
        /// gathering handler, if the app gathered first); false when it had started already.
        mutating func begin(_ events: EventHandler) -> Bool {
            guard !started else { return false }
            started = true
            eventHandler = events
            return true
        }

        /// Keeps the first 8 candidates left out, for the failure to name.
        mutating func ignore(_ candidates: [(candidate: ICECandidate, reason: ICECandidate.Unusable)]) {
            ignored += candidates.prefix(max(0, 8 - ignored.count))
        }

        mutating func add(_ participant: String, _ entry: ParticipantState) {
            participants[participant] = entry
            for stream in [entry.audio, entry.video].compactMap({ $0 }) { streamOwners[stream] = participant }
        }

        mutating func remove(_ participant: String) -> ParticipantState? {
            guard let entry = participants.removeValue(forKey: participant) else { return nil }
            for stream in [entry.audio, entry.video].compactMap({ $0 }) { streamOwners[stream] = nil }
            return entry
        }

        /// One thread ended; when it was the last, the async stops to resume.
        mutating func threadEnded() -> [CheckedContinuation<Void, Never>] {
            threads -= 1
            guard threads == 0 else { return [] }
            defer { ended.removeAll() }
            return ended
        }

        /// The recorder of a participant's media, if one runs.
        func recording(of participant: String) -> MediaRecorder? {
            recordings[participant.isEmpty ? .remote : .participant(participant)]
        }

        /// The recorder of whoever sends on a receive stream, if one runs.
        func recording(ofStream stream: ReceiveStreamID) -> MediaRecorder? {
            streamOwners[stream].flatMap { recording(of: $0) }
        }

        /// What one pass of the receiving loop reads: the video streams a recording wants
        /// a keyframe of (each asked for once), and the tables as they are now.
        mutating func receivePass() -> ReceivePass {
            var keyframes: [ReceiveStreamID] = []
            for (id, entry) in participants where entry.keyframeWanted {
                participants[id]?.keyframeWanted = false
                if let video = entry.video { keyframes.append(video) }
            }
            return ReceivePass(keyframes: keyframes, participants: participants, owners: streamOwners,
                               meetingLeg: meetingLeg, connected: connected)
        }

        /// What the playback of one block uses: the call recording, and a sink the app
        /// handed over since the last block (taken).
        mutating func playback() -> (recorder: CallAudioRecorder?, replacement: SinkHandoff?) {
            defer { sinkHandoff = nil }
            return (audioRecorder, sinkHandoff)
        }

        /// Where a captured picture goes: the handler, this side's recording, and every
        /// snapshot waiting (taken).
        mutating func capturedPicture() -> (handler: EventHandler?, recording: MediaRecorder?, snapshots: [CheckedContinuation<VideoFrame?, Never>]) {
            defer { snapshots.removeAll() }
            return (eventHandler, recordings[.local], Array(snapshots.values))
        }

        /// The recordings still running, taken (the session is ending: they are stopped).
        mutating func takeRecordings() -> [(RecordingTarget, MediaRecorder)] {
            defer { recordings.removeAll() }
            return recordings.map { ($0.key, $0.value) }
        }

        /// Drops the handler, and with it whatever it holds: no event comes after this. A
        /// handler that captures the session (to trickle its candidates) no longer keeps
        /// the session, its buffers and its codecs alive after the call.
        mutating func end() -> Summary {
            eventHandler = nil
            return summary
        }
    }

    /// The tables one pass of the receiving loop works with, copied out of the lock (the
    /// dictionaries are shared, not copied, until the app changes one).
    struct ReceivePass {
        var keyframes: [ReceiveStreamID]
        var participants: [String: ParticipantState]
        var owners: [ReceiveStreamID: String]
        var meetingLeg: Bool
        var connected: Bool

        /// Whose stream it is ("" when no one's: the call's peer).
        func owner(of stream: ReceiveStreamID) -> String { owners[stream] ?? "" }

        /// A participant's playback gain.
        func volume(of participant: String) -> Double { participants[participant]?.volume ?? 1 }
    }

    /// The app's event handler, in a struct: a bare closure read through `Mutex.withLock`
    /// is written back re-thunked (generic reabstraction), so every event would nest it two
    /// thunks deeper until the thread's stack overflowed (minutes into a video call).
    struct EventHandler: Sendable {
        let call: @Sendable (Event) -> Void
    }
}
