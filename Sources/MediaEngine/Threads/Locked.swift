#if canImport(Glibc)
import Glibc
#endif

/// A value behind a pthread mutex: the lock every module of the package uses for state
/// shared between threads (sessions, recorders, hooks, the server).
///
/// It replaces `Synchronization.Mutex`, whose Linux implementation is a futex word that
/// ThreadSanitizer cannot see: under `--sanitize=thread` every pair of accesses made
/// under one `Mutex` was reported as a race (a two-thread counter under
/// `Mutex.withLock` reproduces it), which buried any real race among false ones.
/// `pthread_mutex_lock` is intercepted by the sanitizers, so what this lock orders,
/// ThreadSanitizer knows is ordered. Uncontended, both cost one atomic operation.
///
/// The API is `Mutex`'s `withLock`, the value passed `inout`.
package final class Locked<Value: ~Copyable>: @unchecked Sendable {
    // @unchecked: `value` is only read or written between pthread_mutex_lock and unlock
    // below. Like `Mutex`, the value comes in as `sending` and leaves only through
    // `withLock`'s `sending` result, so a non-Sendable value is never shared. The mutex
    // lives on the heap at a fixed address, as pthread requires.
    private let mutex = UnsafeMutablePointer<pthread_mutex_t>.allocate(capacity: 1)
    private let storage = UnsafeMutablePointer<Value>.allocate(capacity: 1)

    package init(_ initialValue: consuming sending Value) {
        pthread_mutex_init(mutex, nil)
        storage.initialize(to: initialValue)
    }

    deinit {
        storage.deinitialize(count: 1)
        storage.deallocate()
        pthread_mutex_destroy(mutex)
        mutex.deallocate()
    }

    /// Runs `body` with the lock held; `body` must not take the same lock again.
    package func withLock<Result: ~Copyable, Failure: Error>(
        _ body: (inout sending Value) throws(Failure) -> sending Result
    ) throws(Failure) -> sending Result {
        lock()
        defer { unlock() }
        return try body(&storage.pointee)
    }

    private func lock() {
        let status = pthread_mutex_lock(mutex)
        precondition(status == 0, "pthread_mutex_lock failed (\(status))")
    }

    private func unlock() {
        pthread_mutex_unlock(mutex)
    }
}
