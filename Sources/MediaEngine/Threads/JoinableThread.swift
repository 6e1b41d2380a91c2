import Foundation
#if canImport(Glibc)
import Glibc
#endif

/// A thread of its own running one closure, that can be joined (Foundation's `Thread`
/// cannot) and asked whether it ended: the one way the package starts a long-lived
/// thread (capture, recording writers, live outputs, the impairment proxy).
///
/// The closure is `sending`: what it captures moves to the new thread and is never
/// touched by the caller again, so a worker that is not `Sendable` (a capture loop that
/// owns a device) can run there. `join` may be called from any thread, any number of
/// times; `deinit` joins.
package final class JoinableThread: Sendable {
    /// Why no thread could be started.
    package struct StartError: Error, Sendable, CustomStringConvertible {
        /// The `pthread_create` status (EAGAIN: the process is at its thread limit).
        package let status: Int32
        package var description: String { "cannot start a thread: \(String(cString: strerror(status)))" }
    }

    private final class Start: @unchecked Sendable {
        // @unchecked: `body` is set once and run once, on the new thread only; the caller
        // gave it up (`sending`) when the thread was created.
        let body: () -> Void
        init(_ body: @escaping () -> Void) { self.body = body }
    }

    private let handle: Locked<pthread_t?>
    private let finished: Locked<Bool>

    /// Starts `body` on a new thread, named `name` where the system shows threads (`top -H`,
    /// a debugger; the first 15 bytes).
    /// - Parameter realtimePriority: when set, the thread runs under `SCHED_FIFO` at this
    ///   priority (1...99, as `chrt -f` takes it) from its first instruction: it runs as
    ///   soon as it is runnable, ahead of every ordinary thread. The process needs
    ///   `CAP_SYS_NICE` or an `RLIMIT_RTPRIO` that allows it.
    /// - Throws: `StartError` when the system cannot start one (EPERM: not allowed that
    ///   priority; EINVAL: a priority outside 1...99).
    package init(name: String? = nil, realtimePriority: Int32? = nil, _ body: sending @escaping () -> Void) throws(StartError) {
        let finished = Locked(false)
        let start = Start {
            if let name { ThreadName.set(name) }
            body()
            finished.withLock { $0 = true }
        }
        let context = Unmanaged.passRetained(start).toOpaque()
        var thread = pthread_t()
        var attributes = pthread_attr_t()
        pthread_attr_init(&attributes)
        defer { pthread_attr_destroy(&attributes) }
        if let realtimePriority {
            var parameters = sched_param()
            parameters.sched_priority = realtimePriority
            for status in [pthread_attr_setinheritsched(&attributes, Int32(PTHREAD_EXPLICIT_SCHED)),
                           pthread_attr_setschedpolicy(&attributes, SCHED_FIFO),
                           pthread_attr_setschedparam(&attributes, &parameters)] where status != 0 {
                Unmanaged<Start>.fromOpaque(context).release()
                throw StartError(status: status)
            }
        }
        let status = pthread_create(&thread, &attributes, { context in
            let start = Unmanaged<Start>.fromOpaque(context!).takeRetainedValue()
            start.body()
            return nil
        }, context)
        guard status == 0 else {
            Unmanaged<Start>.fromOpaque(context).release()
            throw StartError(status: status)
        }
        handle = Locked(thread)
        self.finished = finished
    }

    /// Whether the closure has returned.
    package var hasEnded: Bool { finished.withLock { $0 } }

    /// Waits for the closure to return; later calls return at once.
    package func join() {
        handle.withLock { handle in
            guard let thread = handle else { return }
            pthread_join(thread, nil)
            handle = nil
        }
    }

    deinit { join() }
}
