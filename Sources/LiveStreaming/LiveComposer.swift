import Foundation
import MediaEngine
import Synchronization

/// Composes a live room for a `LiveStreamer`: on a thread of its own, at the stream's
/// frame rate, it draws each participant's latest picture where the layout puts it, and
/// hands the canvas and the room's mixed audio to the streamer (which encodes once and
/// pushes to every output).
///
/// Pictures and audio arrive from the room's receiving thread (`offer`), the picture list
/// and layout from the signaling side; all meet under one lock, held for a copy or for one
/// composition. A participant whose last picture is older than `staleAfter` (muted,
/// audio-only, or its video stalled) shows the still background, never a frozen picture.
///
/// Audio keeps the wall clock: what the room's mix delivered is passed on in order; when
/// it falls more than `audioSlack` behind (nobody in the room sends audio), silence fills
/// the gap, and a backlog past twice that is trimmed, so audio and video stay in step.
public final class LiveComposer: Sendable {
    /// What the composer reports.
    public enum Event: Sendable {
        /// The custom layout names someone the room's pictures cannot be placed for, or an
        /// area does not fit: the previous places stay (NIM's status 501).
        case layoutError(LiveLayoutError)
    }

    public let format: LiveStreamFormat
    /// How old a participant's picture may be and still be shown.
    public let staleAfter: Duration
    /// How far the audio may lag the wall clock before silence fills in.
    public let audioSlack: Duration

    private let streamer: LiveStreamer
    private let events: @Sendable (Event) -> Void
    private let state: Locked<State>
    private let running = Atomic<Bool>(false)
    private let finished = DispatchSemaphore(value: 0)
    private let clock = ContinuousClock()

    struct Slot {
        var frame: VideoFrame
        var arrived: ContinuousClock.Instant
    }

    struct State: ~Copyable {
        var participants: [String]
        var layout: LiveLayout
        var places: [LivePlace] = []
        var placesValid = false
        var slots: [String: Slot] = [:]
        /// Mixed audio not yet handed on (48 kHz mono).
        var audio: [Int16] = []
    }

    /// - Parameters:
    ///   - participants: Who is on the picture, in layout order (the host first).
    public init(format: LiveStreamFormat, layout: LiveLayout, participants: [String], streamer: LiveStreamer,
                staleAfter: Duration = .milliseconds(500), audioSlack: Duration = .milliseconds(100),
                events: @escaping @Sendable (Event) -> Void = { _ in }) {
        self.format = format
        self.streamer = streamer
        self.staleAfter = staleAfter
        self.audioSlack = audioSlack
        self.events = events
        var audio: [Int16] = []
        audio.reserveCapacity(format.sampleRate)
        state = Locked(State(participants: participants, layout: layout, audio: audio))
    }

    /// A participant's decoded picture (any size; it is scaled into its place).
    public func offer(_ picture: VideoFrame, participant: String) {
        let now = clock.now
        state.withLock { state in
            guard state.participants.contains(participant) else { return }
            if state.slots[participant] == nil {
                state.slots[participant] = Slot(frame: picture, arrived: now)
            }
            state.slots[participant]!.frame.copy(from: picture)
            state.slots[participant]!.arrived = now
        }
    }

    /// The room's mixed audio, as it plays (48 kHz mono).
    public func offer(audio: UnsafeBufferPointer<Int16>) {
        state.withLock { state in
            // A second's backlog means nobody composes: keep the newest.
            let room = format.sampleRate - state.audio.count
            if audio.count > room { state.audio.removeFirst(min(state.audio.count, audio.count - room)) }
            state.audio.append(contentsOf: audio.suffix(format.sampleRate))
        }
    }

    /// Who is on the picture now, host first; places of those gone close.
    public func setParticipants(_ participants: [String]) {
        state.withLock { state in
            state.participants = participants
            state.placesValid = false
            for account in state.slots.keys where !participants.contains(account) { state.slots[account] = nil }
        }
    }

    public func setLayout(_ layout: LiveLayout) {
        state.withLock { state in
            state.layout = layout
            state.placesValid = false
        }
    }

    /// Starts composing; returns at once.
    public func start() {
        guard !running.exchange(true, ordering: .relaxed) else { return }
        Thread.detachNewThread { [self] in
            ThreadName.set("live composer")
            compose()
            finished.signal()
        }
    }

    /// Stops composing and waits for the thread (the streamer is the caller's to stop).
    public func stop() {
        guard running.exchange(false, ordering: .relaxed) else { return }
        finished.wait()
    }

    private func compose() {
        let start = clock.now
        let period = Duration.seconds(1) / format.frameRate
        let rate = Int64(format.sampleRate)
        var frameIndex: Int64 = 0
        var samplesSent: Int64 = 0
        var chunk = [Int16](repeating: 0, count: format.sampleRate)
        let slack = Int64(audioSlack / .milliseconds(1)) * rate / 1_000
        // The composing thread's alone: drawn under the lock (the pictures live there),
        // encoded outside it (the receiving thread never waits for the encoder).
        let canvas = LiveCanvas(width: format.width, height: format.height)
        while running.load(ordering: .relaxed) {
            let due = start + period * Int(frameIndex)
            let now = clock.now
            if due > now { Thread.sleep(forTimeInterval: Double((due - now) / .microseconds(1)) / 1e6) }
            let elapsed = clock.now - start
            // Frames the encoder could not keep up with are skipped, not queued.
            frameIndex = max(frameIndex + 1, Int64(elapsed / period))
            let wanted = elapsed / .microseconds(1) * Double(rate) / 1e6
            let behind = Int64(wanted) - samplesSent
            var count = 0
            var silence = 0
            var error: LiveLayoutError?
            state.withLock { state in
                if !state.placesValid {
                    state.placesValid = true
                    do throws(LiveLayoutError) {
                        state.places = try Self.places(state.layout, state.participants, format)
                    } catch let failure {
                        error = failure
                    }
                }
                canvas.clear()
                let fresh = clock.now
                for place in state.places {
                    if let slot = state.slots[place.account], fresh - slot.arrived <= staleAfter {
                        slot.frame.withPlanesView { canvas.draw($0, in: place) }
                    } else {
                        canvas.draw(nil, in: place)
                    }
                }
                if Int64(state.audio.count) > behind + 2 * slack {
                    state.audio.removeFirst(state.audio.count - Int(behind + 2 * slack))
                }
                count = min(state.audio.count, Int(max(0, behind)), chunk.count)
                for index in 0..<count { chunk[index] = state.audio[index] }
                state.audio.removeFirst(count)
            }
            if let error { events(.layoutError(error)) }
            streamer.submitVideo(canvas.frame, at: elapsed)
            if count > 0 {
                chunk.withUnsafeBufferPointer { streamer.submitAudio(UnsafeBufferPointer(rebasing: $0[0..<count]), at: Self.time(samplesSent, rate)) }
                samplesSent += Int64(count)
            }
            if behind - Int64(count) > slack {
                silence = Int(min(behind - Int64(count), Int64(chunk.count)))
                for index in 0..<silence { chunk[index] = 0 }
                chunk.withUnsafeBufferPointer { streamer.submitAudio(UnsafeBufferPointer(rebasing: $0[0..<silence]), at: Self.time(samplesSent, rate)) }
                samplesSent += Int64(silence)
            }
        }
    }

    static func time(_ samples: Int64, _ rate: Int64) -> Duration {
        .microseconds(samples * 1_000_000 / rate)
    }

    /// The places of the participants present; a custom layout's areas for people not (or
    /// no longer) in the room are left out, and with none left the canvas stays background.
    static func places(_ layout: LiveLayout, _ participants: [String], _ format: LiveStreamFormat) throws(LiveLayoutError) -> [LivePlace] {
        guard !participants.isEmpty else { return [] }
        guard layout.mode == .custom else { return try layout.places(for: participants, width: format.width, height: format.height) }
        let present = layout.areas.filter { participants.contains($0.account) }
        guard !present.isEmpty else { return [] }
        return try LiveLayout.custom(present).places(for: participants, width: format.width, height: format.height)
    }
}
