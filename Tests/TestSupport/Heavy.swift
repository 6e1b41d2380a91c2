import Foundation
import Synchronization

/// Runs tests that block for real time (subprocesses, sockets, media threads) or burn CPU
/// for seconds (simulations) without starving anything else, on a machine of any size:
///
/// - Each runs on a thread of its own (a task executor preference), so blocking calls
///   never hold one of Swift's cooperative threads, of which there are only as many as
///   cores. Async tests (the server's, the call flows') keep those threads.
/// - At most `slots` of them run at once (as many as cores, at least two), waiting for a
///   slot without blocking, so real-time tests get the CPU their timing assumes.
///
/// The body runs in the test's own task, so `#expect` and `#require` report to the test as
/// usual. This is what lets plain `swift test` pass on two cores.
public enum Heavy {
    /// How many heavy tests run at once.
    public static let slots = max(2, ProcessInfo.processInfo.activeProcessorCount)

    private static let gate = Gate(permits: slots)

    /// Runs `body` in a slot, on a thread of its own.
    public static func run<T>(_ body: () async throws -> T) async throws -> T {
        await gate.acquire()
        defer { gate.release() }
        let executor = ThreadExecutor()
        defer { executor.shutdown() }
        return try await withTaskExecutorPreference(executor) { try await body() }
    }
}

/// A counting semaphore that waits by suspending, never by blocking a thread.
private final class Gate: Sendable {
    private struct State {
        var available: Int
        var waiting: [CheckedContinuation<Void, Never>] = []
    }

    private let state: Mutex<State>

    init(permits: Int) { state = Mutex(State(available: permits)) }

    func acquire() async {
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            let granted = state.withLock { state in
                guard state.available > 0 else {
                    state.waiting.append(continuation)
                    return false
                }
                state.available -= 1
                return true
            }
            if granted { continuation.resume() }
        }
    }

    func release() {
        let next = state.withLock { state -> CheckedContinuation<Void, Never>? in
            guard !state.waiting.isEmpty else {
                state.available += 1
                return nil
            }
            return state.waiting.removeFirst()
        }
        next?.resume()
    }
}

/// A task executor with one thread of its own: jobs run on it in order.
private final class ThreadExecutor: TaskExecutor, @unchecked Sendable {
    // @unchecked: `jobs` and `stopped` are only touched under `condition`.
    private let condition = NSCondition()
    private var jobs: [UnownedJob] = []
    private var stopped = false

    init() {
        let thread = Thread { [self] in work() }
        thread.name = "heavy test"
        thread.stackSize = 8 << 20
        thread.start()
    }

    func enqueue(_ job: consuming ExecutorJob) {
        let job = UnownedJob(job)
        condition.lock()
        jobs.append(job)
        condition.signal()
        condition.unlock()
    }

    private func work() {
        while true {
            condition.lock()
            while jobs.isEmpty && !stopped { condition.wait() }
            if jobs.isEmpty {
                condition.unlock()
                return
            }
            let job = jobs.removeFirst()
            condition.unlock()
            job.runSynchronously(on: asUnownedTaskExecutor())
        }
    }

    /// Lets the thread end once its queue is empty.
    func shutdown() {
        condition.lock()
        stopped = true
        condition.signal()
        condition.unlock()
    }
}
