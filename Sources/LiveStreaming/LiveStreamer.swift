import CAVFormat
import MediaEngine
import Synchronization

/// Encodes a live room's canvas and mixed audio once and pushes them to any number of
/// outputs (RTMP ingests, icecast mounts, files).
///
/// One encoder set shared by outputs of the same codec family; outputs come and go while
/// it runs. Encoders are opened when the first output of their family is added (H.264 and
/// AAC for FLV and MP4, VP8 and Opus for WebM) and encode only while that family has
/// outputs. Each output has a writer thread and a bounded packet queue: submitting never
/// waits on the network, and a slow or dead output drops packets (counted) until the next
/// key frame rather than holding up the others. Each connection starts at a key frame
/// (asked for when it connects) with its timestamps rebased to zero.
///
/// Thread-safe: `submitVideo` and `submitAudio` may come from different threads (video
/// and audio encoders have separate locks); the control methods from any thread. Events
/// arrive on the outputs' writer threads. It is `Sendable` because all its mutable state
/// is behind a `Locked`, and the outputs and encoder sets it holds are themselves
/// `Sendable` (locks inside).
public final class LiveStreamer: Sendable {
    private struct Family: Sendable {
        var encoders: LiveEncoderSet
        /// The outputs fed from these encoders: current ones and switch candidates.
        var outputs: [LiveOutput] = []
    }

    private struct State: Sendable {
        var outputs: [String: LiveOutput] = [:]
        var candidates: [String: LiveOutput] = [:]
        var families: [LiveCodecFamily: Family] = [:]
        /// Every output's writer thread, current or not (removed and replaced outputs may
        /// still be closing); ended ones are forgotten when the next one starts.
        var workers: [(output: LiveOutput, thread: JoinableThread)] = []
        var stopped = false

        mutating func rebuild() {
            for family in families.keys {
                families[family]!.outputs = outputs.values.filter { $0.family == family } + candidates.values.filter { $0.family == family }
            }
        }
    }

    /// The stream's picture and sound.
    public let format: LiveStreamFormat
    private let retry: LiveRetryPolicy
    private let events: @Sendable (LiveOutputEvent) -> Void
    private let state = Locked(State())
    private let rejected = Atomic<Int>(0)

    /// Creates a streamer with no outputs; encoders open with the first output that needs them.
    /// - Parameters:
    ///   - format: The canvas size, rates and key frame interval.
    ///   - retry: How failed URL outputs are retried.
    ///   - events: Told of every output's status changes, on that output's writer thread.
    /// - Throws: `LiveStreamError` (internal, 20205) for a format that cannot be encoded.
    public init(format: LiveStreamFormat, retry: LiveRetryPolicy = .default,
                events: @escaping @Sendable (LiveOutputEvent) -> Void) throws(LiveStreamError) {
        if let problem = format.problem { throw LiveStreamError(.internalError, "live stream format: \(problem)") }
        _ = Self.quietLibav
        self.format = format
        self.retry = retry
        self.events = events
    }

    deinit { stop() }

    /// libav's own log goes to stderr: x264's banner per encoder, and protocol messages
    /// that may quote what a server answered about a stream (whose name is its key). Its
    /// failures reach callers as typed errors and events instead, so only fatal lines stay.
    private static let quietLibav: Void = av_log_set_level(AV_LOG_FATAL)

    /// Adds an output (an id of the caller's choosing, e.g. "push" or "recording"). It
    /// connects on its own writer thread; connection failure is reported as events
    /// (connecting 502, connectFailed 504, then a retry after the policy's delay) and never
    /// blocks the caller. An output already named `id` is removed first. When the encoders
    /// cannot be opened, an `internalError` (507) event says why.
    /// - Parameters:
    ///   - id: The output's name in events and the other calls.
    ///   - target: Where it goes.
    public func addOutput(id: String, target: LiveTarget) {
        let encoders: LiveEncoderSet
        do {
            encoders = try encoderSet(for: target.family)
        } catch {
            events(LiveOutputEvent(output: id, status: .internalError, error: error))
            return
        }
        let output = LiveOutput(id: id, target: target, encoders: encoders, retry: retry, events: events)
        let added = state.withLock { state -> Bool in
            guard !state.stopped else { return false }
            if let old = state.outputs[id] { retire(old, &state) }
            state.outputs[id] = output
            state.rebuild()
            return true
        }
        guard added else {
            events(LiveOutputEvent(output: id, status: .internalError, error: Self.stoppedError))
            return
        }
        start(output)
    }

    /// Switches output `id` to `target`: opens the new one first (on a background thread);
    /// on success the new one starts at a key frame (forced) and the old output is closed
    /// (its stream ends cleanly: trailer written); on failure the old output keeps going and
    /// `completion` gets the typed error. A later switch of the same output calls off an
    /// earlier one still connecting. The new output's statistics start from zero.
    /// - Parameters:
    ///   - id: An output added before.
    ///   - target: The new target, connected once (no retry) before it takes over.
    ///   - completion: Called once, on a writer thread (or at once for an unknown `id`).
    public func switchOutput(id: String, to target: LiveTarget, completion: @escaping @Sendable (Result<Void, LiveStreamError>) -> Void) {
        let encoders: LiveEncoderSet
        do {
            encoders = try encoderSet(for: target.family)
        } catch {
            return completion(.failure(error))
        }
        let trial = LiveTrial(
            promote: { [weak self] candidate in self?.promote(candidate) ?? false },
            finished: { [weak self] candidate, result in
                if case .failure = result { self?.dropCandidate(candidate) }
                completion(result)
            })
        let candidate = LiveOutput(id: id, target: target, encoders: encoders, retry: retry, trial: trial, events: events)
        let failure = state.withLock { state -> LiveStreamError? in
            guard !state.stopped else { return Self.stoppedError }
            guard state.outputs[id] != nil else { return LiveStreamError(.invalidTarget, "switching '\(id)': there is no such output") }
            if let earlier = state.candidates[id] { retire(earlier, &state) }
            state.candidates[id] = candidate
            state.rebuild()
            return nil
        }
        if let failure { return completion(.failure(failure)) }
        start(candidate)
    }

    /// Turns output `id` off (its connection closes cleanly, trailer written, and it stops
    /// retrying; status `initial`) or on again (it reconnects and starts with a key frame).
    public func setEnabled(_ enabled: Bool, output id: String) {
        state.withLock { $0.outputs[id] }?.setEnabled(enabled)
    }

    /// Removes output `id`: what it has queued is written, then its trailer, on its own
    /// thread. A switch of it still connecting is called off.
    public func removeOutput(id: String) {
        state.withLock { state in
            if let output = state.outputs.removeValue(forKey: id) { retire(output, &state) }
            if let candidate = state.candidates.removeValue(forKey: id) { retire(candidate, &state) }
            state.rebuild()
        }
    }

    /// Encodes one canvas picture for every codec family with outputs. Called by the
    /// composing thread at the frame rate with the picture (the format's size; other sizes
    /// are counted in `rejectedVideoFrames` and dropped) and its presentation time on the
    /// room's clock. Encodes on the calling thread; never blocks on network I/O.
    public func submitVideo(_ frame: VideoFrame, at time: Duration) {
        guard frame.width == format.width, frame.height == format.height else {
            rejected.add(1, ordering: .relaxed)
            return
        }
        guard let families = state.withLock({ $0.stopped ? nil : $0.families }) else { return }
        for family in families.values where !family.outputs.isEmpty {
            family.encoders.encodeVideo(frame, at: time) { packet in
                for output in family.outputs { output.offer(packet) }
            }
        }
    }

    /// Encodes mixed PCM (interleaved `format.channels`, Int16, at `format.sampleRate`)
    /// taken at `time` on the same clock as the pictures; any chunk size.
    public func submitAudio(_ samples: UnsafeBufferPointer<Int16>, at time: Duration) {
        guard let families = state.withLock({ $0.stopped ? nil : $0.families }) else { return }
        for family in families.values where !family.outputs.isEmpty {
            family.encoders.encodeAudio(samples, at: time) { packet in
                for output in family.outputs { output.offer(packet) }
            }
        }
    }

    /// Pictures dropped for not having the format's size.
    public var rejectedVideoFrames: Int { rejected.load(ordering: .relaxed) }

    /// Flushes the encoders into the outputs, writes every output's trailer and joins the
    /// writer threads. Later calls do nothing; later submits are ignored.
    public func stop() {
        guard let families = state.withLock({ state -> [LiveCodecFamily: Family]? in
            guard !state.stopped else { return nil }
            state.stopped = true
            return state.families
        }) else { return }
        for family in families.values {
            family.encoders.flush { packet in
                for output in family.outputs { output.offer(packet) }
            }
        }
        let workers = state.withLock { state in
            for worker in state.workers { worker.output.finish() }
            return state.workers
        }
        for worker in workers { worker.thread.join() }
        state.withLock { $0.workers.removeAll() }
    }

    /// What output `id` has done, or nil when there is no such output.
    public func statistics(output id: String) -> LiveOutputStatistics? {
        state.withLock { $0.outputs[id] }?.statistics
    }

    private static let stoppedError = LiveStreamError(.internalError, "live stream: the streamer is stopped")

    /// The family's encoders, opened now if no output needed them yet (outside the lock:
    /// opening takes a while, and submits must not wait for it).
    private func encoderSet(for family: LiveCodecFamily) throws(LiveStreamError) -> LiveEncoderSet {
        if let existing = state.withLock({ $0.families[family]?.encoders }) { return existing }
        let created = try LiveEncoderSet(family: family, format: format)
        return state.withLock { state in
            if let existing = state.families[family]?.encoders { return existing }
            state.families[family] = Family(encoders: created)
            return created
        }
    }

    private func start(_ output: LiveOutput) {
        do throws(LiveStreamError) {
            let thread: JoinableThread
            do throws(JoinableThread.StartError) {
                thread = try JoinableThread { output.run() }
            } catch {
                throw LiveStreamError(.internalError, "live output live-\(output.id): cannot start its writer thread (errno \(error.status))")
            }
            let late = state.withLock { state -> Bool in
                state.workers.removeAll { $0.thread.hasEnded }
                state.workers.append((output, thread))
                return state.stopped
            }
            if late {
                // stop() came while it started: end it the same way.
                output.finish()
                thread.join()
            }
        } catch {
            output.report(.internalError, error)
        }
    }

    /// Makes a connected switch candidate the output; the one it replaces closes cleanly.
    private func promote(_ candidate: LiveOutput) -> Bool {
        state.withLock { state in
            guard state.candidates[candidate.id] === candidate, let old = state.outputs[candidate.id] else { return false }
            state.candidates[candidate.id] = nil
            state.outputs[candidate.id] = candidate
            retire(old, &state)
            state.rebuild()
            return true
        }
    }

    private func dropCandidate(_ candidate: LiveOutput) {
        state.withLock { state in
            if state.candidates[candidate.id] === candidate {
                state.candidates[candidate.id] = nil
                state.rebuild()
            }
        }
    }

    private func retire(_ output: LiveOutput, _ state: inout State) {
        output.remove()
    }
}
