#if canImport(Glibc)
import Glibc
#endif

/// A lock with a condition variable on the monotonic clock, guarding one value: what a
/// capture thread and its reader share (V4L2 frames, ALSA's frame queue), and a
/// session's state (whose synchronous `stop` waits for its threads).
/// `Locked` has no way to wait, and a reader must wait (with a timeout)
/// for the next frame, a capture thread (until a deadline) for a stop.
package final class Monitor<State: Sendable>: @unchecked Sendable {
    // @unchecked: `state` is only touched between pthread_mutex_lock and unlock below,
    // and State is Sendable, so handing it between threads under the lock is safe. The
    // mutex and condition live on the heap at fixed addresses, as pthread requires.
    private let mutex = UnsafeMutablePointer<pthread_mutex_t>.allocate(capacity: 1)
    private let condition = UnsafeMutablePointer<pthread_cond_t>.allocate(capacity: 1)
    private var state: State

    package init(_ state: State) {
        self.state = state
        pthread_mutex_init(mutex, nil)
        var attributes = pthread_condattr_t()
        pthread_condattr_init(&attributes)
        pthread_condattr_setclock(&attributes, CLOCK_MONOTONIC)
        pthread_cond_init(condition, &attributes)
        pthread_condattr_destroy(&attributes)
    }

    deinit {
        pthread_cond_destroy(condition)
        pthread_mutex_destroy(mutex)
        condition.deallocate()
        mutex.deallocate()
    }

    /// Runs `body` with the lock held.
    package func withLock<Result, Failure: Error>(_ body: (inout State) throws(Failure) -> Result) throws(Failure) -> Result {
        pthread_mutex_lock(mutex)
        defer { pthread_mutex_unlock(mutex) }
        return try body(&state)
    }

    /// Runs `body` with the lock held, then wakes every waiter.
    package func withLockWaking<Result>(_ body: (inout State) -> Result) -> Result {
        pthread_mutex_lock(mutex)
        defer {
            pthread_cond_broadcast(condition)
            pthread_mutex_unlock(mutex)
        }
        return body(&state)
    }

    /// Waits, however long it takes, until `ready` holds (a `withLockWaking` made it so),
    /// then runs `body` with the lock held. Blocks the calling thread: not for async code.
    package func withLock<Result, Failure: Error>(
        waitingFor ready: (State) -> Bool, _ body: (inout State) throws(Failure) -> Result
    ) throws(Failure) -> Result {
        pthread_mutex_lock(mutex)
        defer { pthread_mutex_unlock(mutex) }
        while !ready(state) { pthread_cond_wait(condition, mutex) }
        return try body(&state)
    }

    /// Waits until `ready` holds or `timeout` passes, then runs `body` with the lock
    /// held (whether or not `ready` came true; `body` can check).
    package func withLock<Result, Failure: Error>(
        waitingUpTo timeout: Duration, until ready: (State) -> Bool,
        _ body: (inout State) throws(Failure) -> Result
    ) throws(Failure) -> Result {
        try withLock(waitingUntil: MonotonicClock.now() + max(timeout, .zero), until: ready, body)
    }

    /// Waits until `ready` holds or the monotonic clock reaches `deadline` (as
    /// `MonotonicClock.now()` reads it), then runs `body` with the lock held.
    func withLock<Result, Failure: Error>(
        waitingUntil deadline: Duration, until ready: (State) -> Bool,
        _ body: (inout State) throws(Failure) -> Result
    ) throws(Failure) -> Result {
        let (seconds, attoseconds) = deadline.components
        var time = timespec(tv_sec: Int(seconds), tv_nsec: Int(attoseconds / 1_000_000_000))
        pthread_mutex_lock(mutex)
        defer { pthread_mutex_unlock(mutex) }
        while !ready(state) {
            if pthread_cond_timedwait(condition, mutex, &time) == ETIMEDOUT { break }
        }
        return try body(&state)
    }
}

/// CLOCK_MONOTONIC: the clock `Monitor` deadlines, capture timestamps and pacing use.
package enum MonotonicClock {
    /// Now, as time since an arbitrary point (boot, on Linux).
    package static func now() -> Duration {
        var time = timespec()
        clock_gettime(CLOCK_MONOTONIC, &time)
        return .seconds(time.tv_sec) + .nanoseconds(time.tv_nsec)
    }
}
