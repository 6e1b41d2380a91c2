import MediaEngine

/// A fixed-capacity FIFO of packets: the bounded queue between the encoding thread and an
/// output's writer. Its storage is allocated once.
struct LivePacketQueue: Sendable {
    private var slots: [LivePacket?]
    private var head = 0
    private(set) var count = 0
    private(set) var bytes = 0

    init(capacity: Int) { slots = Array(repeating: nil, count: max(1, capacity)) }

    var isEmpty: Bool { count == 0 }
    var isFull: Bool { count == slots.count }

    mutating func append(_ packet: LivePacket) {
        precondition(!isFull)
        slots[(head + count) % slots.count] = packet
        count += 1
        bytes += packet.size
    }

    mutating func popFirst() -> LivePacket? {
        guard let packet = slots[head] else { return nil }
        slots[head] = nil
        head = (head + 1) % slots.count
        count -= 1
        bytes -= packet.size
        return packet
    }

    mutating func removeAll() {
        while popFirst() != nil {}
    }
}

/// Hooks of an output that a `switchOutput` opened beside the one it replaces: once it
/// connects, `promote` makes it the output (false: the switch was called off), and
/// `finished` reports how the switch ended.
struct LiveTrial: Sendable {
    var promote: @Sendable (LiveOutput) -> Bool
    var finished: @Sendable (LiveOutput, Result<Void, LiveStreamError>) -> Void
}

/// One output of a streamer: a target, a bounded queue of encoded packets, and a writer
/// thread that connects, writes, reconnects with backoff, and closes cleanly.
///
/// Threads: `offer` is called by encoding threads, the control methods by the streamer,
/// `run` only on the writer thread; they share `state` under its lock, and the muxer (the
/// AVFormatContext) never leaves the writer thread.
final class LiveOutput: Sendable {
    /// Packets queued at most (about 3 s of 30 fps video and 48 kHz audio frames).
    static let queueCapacity = 320
    /// Bytes queued at most (about 4 s at 8 Mbit/s).
    static let queueBytes = 4 << 20

    struct State: Sendable {
        var enabled = true
        /// Close cleanly (draining the queue) and end the thread.
        var removed = false
        /// `stop()`: drain, write the trailer, end.
        var finishing = false
        /// A file that failed waits here until re-enabled (a full disk stays full).
        var parked = false
        /// Connected: `offer` may queue.
        var accepting = false
        var awaitingKeyframe = true
        /// The queue overflowed: drop until the next video key frame.
        var droppingUntilKeyframe = false
        /// The room-clock time (µs) of this connection's first key frame: its time zero.
        var base: Int64 = 0
        var queue = LivePacketQueue(capacity: LiveOutput.queueCapacity)
        var statistics = LiveOutputStatistics()
        var connectedSince: Duration?
        /// Whether events go out (a switch's candidate stays quiet until promoted).
        var reporting: Bool

        var ending: Bool { removed || finishing }
    }

    let id: String
    let target: LiveTarget
    let encoders: LiveEncoderSet
    let retry: LiveRetryPolicy
    let events: @Sendable (LiveOutputEvent) -> Void
    let trial: LiveTrial?
    let state: Monitor<State>
    let interrupt = LiveInterrupt()

    init(id: String, target: LiveTarget, encoders: LiveEncoderSet, retry: LiveRetryPolicy, trial: LiveTrial? = nil,
         events: @escaping @Sendable (LiveOutputEvent) -> Void) {
        self.id = id
        self.target = target
        self.encoders = encoders
        self.retry = retry
        self.trial = trial
        self.events = events
        state = Monitor(State(reporting: trial == nil))
    }

    var family: LiveCodecFamily { encoders.family }

    /// Queues a packet for the writer, if connected. The first packet of a connection is a
    /// video key frame (audio before it is dropped); on a full queue the packet and all
    /// after it are dropped, and counted, until the next video key frame that fits.
    func offer(_ packet: LivePacket) {
        state.withLockWaking { state in
            guard state.accepting else { return }
            if state.awaitingKeyframe {
                guard packet.isVideo && packet.isKeyframe else { return }
                state.awaitingKeyframe = false
                state.base = packet.microseconds
            }
            if !packet.isVideo && packet.microseconds < state.base { return }
            if state.droppingUntilKeyframe {
                guard packet.isVideo && packet.isKeyframe && !state.queue.isFull else {
                    state.statistics.droppedPackets += 1
                    return
                }
                state.droppingUntilKeyframe = false
            }
            guard !state.queue.isFull, state.queue.bytes + packet.size <= Self.queueBytes else {
                state.droppingUntilKeyframe = true
                state.statistics.droppedPackets += 1
                return
            }
            state.queue.append(packet)
        }
    }

    /// Turns the output on (connects, starting with a key frame) or off (closes cleanly,
    /// stops retrying).
    func setEnabled(_ enabled: Bool) {
        state.withLockWaking { state in
            state.enabled = enabled
            if enabled { state.parked = false }
        }
        if !enabled { interrupt.abort() }
    }

    /// Ends the output: what is queued is written, then the trailer; a connection attempt
    /// under way is called off.
    func remove() {
        state.withLockWaking { $0.removed = true }
        interrupt.abort()
    }

    /// Like `remove`, for `stop()`: the encoders' last packets are queued first.
    func finish() {
        state.withLockWaking { $0.finishing = true }
        interrupt.abort()
    }

    /// Its statistics, connected time included up to now.
    var statistics: LiveOutputStatistics {
        state.withLock { state in
            var statistics = state.statistics
            if let since = state.connectedSince { statistics.connectedDuration += MonotonicClock.now() - since }
            return statistics
        }
    }

    /// Records a new status and tells the listener (outside the lock).
    func report(_ status: LiveStreamStatus, _ error: LiveStreamError? = nil) {
        let reporting = state.withLock { state in
            state.statistics.status = status
            return state.reporting
        }
        if reporting { events(LiveOutputEvent(output: id, status: status, error: error)) }
    }
}
