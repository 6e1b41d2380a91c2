#if canImport(Glibc)
import Glibc
#endif

/// CLOCK_MONOTONIC, the clock capture timestamps and pacing deadlines use.
enum ALSAClock {
    /// Now, as time since an arbitrary point (boot, on Linux).
    static func now() -> Duration {
        var time = timespec()
        clock_gettime(CLOCK_MONOTONIC, &time)
        return .seconds(time.tv_sec) + .nanoseconds(time.tv_nsec)
    }

    /// `instant` as the `timespec` pthread_cond_timedwait takes.
    static func absolute(_ instant: Duration) -> timespec {
        let (seconds, attoseconds) = instant.components
        return timespec(tv_sec: Int(seconds), tv_nsec: Int(attoseconds / 1_000_000_000))
    }
}

/// The hand-off between a capture thread and the reader: a ring of preallocated 48 kHz
/// frames (drop the oldest when full, counted), the stream's end or failure, the capture
/// counters, and the stop request the capture thread's pacing waits on.
///
/// Thread-safe: one producer thread and any reader threads.
final class ALSAFrameQueue: @unchecked Sendable {
    // @unchecked: every mutable field is read and written only with `mutex` held, the
    // sample storage is one fixed allocation freed in deinit, and the pthread objects live
    // at stable heap addresses for the queue's whole life.

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

    let frameSamples: Int
    let capacity: Int
    let frameDuration: Duration
    private let mutex = UnsafeMutablePointer<pthread_mutex_t>.allocate(capacity: 1)
    private let frameReady = UnsafeMutablePointer<pthread_cond_t>.allocate(capacity: 1)
    private let stopSignal = UnsafeMutablePointer<pthread_cond_t>.allocate(capacity: 1)
    private let storage: UnsafeMutableBufferPointer<Int16>
    private let timestamps: UnsafeMutableBufferPointer<Duration>
    private var head = 0
    private var count = 0
    private var stopRequested = false
    private var failure: DeviceError?
    private var finished = false
    private var counters = ALSACapture.Statistics()
    /// The timestamp of the last frame handed to the reader, real or silent.
    private var lastTimestamp: Duration?

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
        pthread_mutex_init(mutex, nil)
        var attributes = pthread_condattr_t()
        pthread_condattr_init(&attributes)
        pthread_condattr_setclock(&attributes, CLOCK_MONOTONIC)
        pthread_cond_init(frameReady, &attributes)
        pthread_cond_init(stopSignal, &attributes)
        pthread_condattr_destroy(&attributes)
    }

    deinit {
        pthread_cond_destroy(frameReady)
        pthread_cond_destroy(stopSignal)
        pthread_mutex_destroy(mutex)
        frameReady.deallocate()
        stopSignal.deallocate()
        mutex.deallocate()
        storage.deallocate()
        timestamps.deallocate()
    }

    private func locked<T>(_ body: () -> T) -> T {
        pthread_mutex_lock(mutex)
        defer { pthread_mutex_unlock(mutex) }
        return body()
    }

    // MARK: Producer

    /// Queues a copy of `samples` (exactly `frameSamples`), dropping the oldest frame
    /// when the reader has fallen `capacity` frames behind.
    func push(_ samples: UnsafeBufferPointer<Int16>, timestamp: Duration) {
        locked {
            if count == capacity {
                head = (head + 1) % capacity
                count -= 1
                counters.framesDropped += 1
            }
            let slot = (head + count) % capacity
            let target = UnsafeMutableBufferPointer(rebasing: storage[slot * frameSamples..<(slot + 1) * frameSamples])
            _ = target.update(fromContentsOf: samples)
            timestamps[slot] = timestamp
            count += 1
            counters.framesCaptured += 1
            pthread_cond_signal(frameReady)
        }
    }

    /// Sleeps until `deadline` on CLOCK_MONOTONIC.
    /// - Returns: false when a stop was requested (at once or during the wait).
    func wait(until deadline: Duration) -> Bool {
        var time = ALSAClock.absolute(deadline)
        return locked {
            while !stopRequested {
                if pthread_cond_timedwait(stopSignal, mutex, &time) == ETIMEDOUT { break }
            }
            return !stopRequested
        }
    }

    /// Whether the reader asked the producer to end.
    var isStopRequested: Bool { locked { stopRequested } }

    /// Ends the stream with `error` (nil: stopped). Queued frames stay readable.
    func finish(_ error: DeviceError?) {
        locked {
            if failure == nil { failure = error }
            finished = true
            pthread_cond_broadcast(frameReady)
        }
    }

    /// Updates the capture counters.
    func record(_ update: (inout ALSACapture.Statistics) -> Void) {
        locked { update(&counters) }
    }

    // MARK: Reader

    /// Asks the producer to end and wakes it from a pacing wait.
    func requestStop() {
        locked {
            stopRequested = true
            pthread_cond_broadcast(stopSignal)
            pthread_cond_broadcast(frameReady)
        }
    }

    /// Copies the oldest frame into `output` (exactly `frameSamples`), waiting up to
    /// `timeout` for one, or `firstTimeout` before the first frame (devices take a moment
    /// to start). On timeout `output` is silenced and counted.
    func pop(into output: UnsafeMutableBufferPointer<Int16>, timeout: Duration, firstTimeout: Duration) -> Pop {
        pthread_mutex_lock(mutex)
        defer { pthread_mutex_unlock(mutex) }
        var deadline = ALSAClock.absolute(ALSAClock.now() + (lastTimestamp == nil ? max(timeout, firstTimeout) : timeout))
        var timedOut = false
        while count == 0 {
            if let failure { return .failed(failure) }
            if finished || stopRequested { return .stopped }
            if timedOut {
                output.update(repeating: 0)
                let timestamp = lastTimestamp.map { $0 + frameDuration } ?? ALSAClock.now()
                lastTimestamp = timestamp
                counters.silentFrames += 1
                return .silence(timestamp)
            }
            timedOut = pthread_cond_timedwait(frameReady, mutex, &deadline) == ETIMEDOUT
        }
        let slot = head
        let source = UnsafeBufferPointer(rebasing: storage[slot * frameSamples..<(slot + 1) * frameSamples])
        _ = output.update(fromContentsOf: source)
        head = (head + 1) % capacity
        count -= 1
        lastTimestamp = timestamps[slot]
        return .frame(timestamps[slot])
    }

    /// The counters so far.
    var statistics: ALSACapture.Statistics { locked { counters } }
}
