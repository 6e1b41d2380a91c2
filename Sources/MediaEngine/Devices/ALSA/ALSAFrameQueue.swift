/// The hand-off between a capture thread and the reader: a ring of preallocated 48 kHz
/// frames (drop the oldest when full, counted), the stream's end or failure, the capture
/// counters, and the stop request the capture thread's pacing waits on.
///
/// Thread-safe: one producer thread and any reader threads, through one `Monitor`.
final class ALSAFrameQueue: @unchecked Sendable {
    // @unchecked: the sample storage is one fixed allocation freed in deinit and only read
    // or written inside the monitor's lock, which also guards every other field.

    /// How a wait for a frame ended.
    enum Pop: Equatable {
        /// A frame was copied out; its capture time.
        case frame(Duration)
        /// Nothing arrived in time: the output was silenced and counted; the timestamp is
        /// one frame after the last one handed out.
        case silence(Duration)
        /// The stream was stopped and every queued frame has been read.
        case stopped
        /// The stream failed and every queued frame has been read.
        case failed(DeviceError)
    }

    /// The ring's bookkeeping and the stream's state, under the monitor's lock.
    private struct State: Sendable {
        var head = 0
        var count = 0
        var stopRequested = false
        var failure: DeviceError?
        var finished = false
        var counters = ALSACapture.Statistics()
        /// The timestamp of the last frame handed to the reader, real or silent.
        var lastTimestamp: Duration?
    }

    let frameSamples: Int
    let capacity: Int
    let frameDuration: Duration
    private let monitor = Monitor(State())
    private let storage: UnsafeMutableBufferPointer<Int16>
    private let timestamps: UnsafeMutableBufferPointer<Duration>

    /// - Parameters:
    ///   - frameSamples: interleaved samples per frame.
    ///   - capacity: frames held before the oldest is dropped.
    init(frameSamples: Int, capacity: Int, frameDuration: Duration) {
        self.frameSamples = frameSamples
        self.frameDuration = frameDuration
        self.capacity = max(1, capacity)
        storage = .allocate(capacity: frameSamples * self.capacity)
        storage.initialize(repeating: 0)
        timestamps = .allocate(capacity: self.capacity)
        timestamps.initialize(repeating: .zero)
    }

    deinit {
        storage.deallocate()
        timestamps.deallocate()
    }

    private func slot(_ index: Int) -> UnsafeMutableBufferPointer<Int16> {
        UnsafeMutableBufferPointer(rebasing: storage[index * frameSamples..<(index + 1) * frameSamples])
    }

    // MARK: Producer

    /// Queues a copy of `samples` (exactly `frameSamples`), dropping the oldest frame
    /// when the reader has fallen `capacity` frames behind.
    func push(_ samples: UnsafeBufferPointer<Int16>, timestamp: Duration) {
        monitor.withLockWaking { state in
            if state.count == capacity {
                state.head = (state.head + 1) % capacity
                state.count -= 1
                state.counters.framesDropped += 1
            }
            let index = (state.head + state.count) % capacity
            _ = slot(index).update(fromContentsOf: samples)
            timestamps[index] = timestamp
            state.count += 1
            state.counters.framesCaptured += 1
        }
    }

    /// Sleeps until `deadline` on CLOCK_MONOTONIC (`MonotonicClock.now()`).
    /// - Returns: false when a stop was requested (at once or during the wait).
    func wait(until deadline: Duration) -> Bool {
        monitor.withLock(waitingUntil: deadline, until: { $0.stopRequested }) { !$0.stopRequested }
    }

    /// Whether the reader asked the producer to end.
    var isStopRequested: Bool { monitor.withLock { $0.stopRequested } }

    /// Ends the stream with `error` (nil: stopped). Queued frames stay readable.
    func finish(_ error: DeviceError?) {
        monitor.withLockWaking { state in
            if state.failure == nil { state.failure = error }
            state.finished = true
        }
    }

    /// Updates the capture counters.
    func record(_ update: (inout ALSACapture.Statistics) -> Void) {
        monitor.withLock { update(&$0.counters) }
    }

    // MARK: Reader

    /// Asks the producer to end and wakes it from a pacing wait.
    func requestStop() {
        monitor.withLockWaking { $0.stopRequested = true }
    }

    /// Copies the oldest frame into `output` (exactly `frameSamples`), waiting up to
    /// `timeout` for one, or `firstTimeout` before the first frame (devices take a moment
    /// to start). On timeout `output` is silenced and counted.
    func pop(into output: UnsafeMutableBufferPointer<Int16>, timeout: Duration, firstTimeout: Duration) -> Pop {
        let started = monitor.withLock { $0.lastTimestamp == nil }
        let deadline = MonotonicClock.now() + (started ? max(timeout, firstTimeout) : timeout)
        return monitor.withLock(waitingUntil: deadline, until: { $0.count > 0 || $0.failure != nil || $0.finished || $0.stopRequested }) { state in
            guard state.count > 0 else {
                if let failure = state.failure { return .failed(failure) }
                if state.finished || state.stopRequested { return .stopped }
                output.update(repeating: 0)
                let timestamp = state.lastTimestamp.map { $0 + frameDuration } ?? MonotonicClock.now()
                state.lastTimestamp = timestamp
                state.counters.silentFrames += 1
                return .silence(timestamp)
            }
            let index = state.head
            _ = output.update(fromContentsOf: UnsafeBufferPointer(slot(index)))
            state.head = (state.head + 1) % capacity
            state.count -= 1
            state.lastTimestamp = timestamps[index]
            return .frame(timestamps[index])
        }
    }

    /// The counters so far.
    var statistics: ALSACapture.Statistics { monitor.withLock { $0.counters } }
}
