import Foundation
import MediaEngine

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
        try await run(permits: 1, body)
    }

    /// Runs `body` with every slot taken, on a thread of its own: for simulations that
    /// burn a core for many seconds in virtual time, so no real-time test shares the
    /// machine with them (a real-time test next to one missed its 20 ms deadlines).
    public static func runAlone<T>(_ body: () async throws -> T) async throws -> T {
        try await run(permits: slots, body)
    }

    private static func run<T>(permits: Int, _ body: () async throws -> T) async throws -> T {
        await gate.acquire(permits)
        defer { gate.release(permits) }
        let executor = ThreadExecutor()
        defer { executor.shutdown() }
        return try await withTaskExecutorPreference(executor) { try await body() }
    }
}

/// A counting semaphore that waits by suspending, never by blocking a thread. Waiters are
/// served strictly in order, so one that needs every permit is not starved by later ones.
private final class Gate: Sendable {
    private struct State {
        var available: Int
        var waiting: [(permits: Int, continuation: CheckedContinuation<Void, Never>)] = []
    }

    private let state: Locked<State>

    init(permits: Int) { state = Locked(State(available: permits)) }

    func acquire(_ permits: Int) async {
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            let granted = state.withLock { state in
                guard state.waiting.isEmpty, state.available >= permits else {
                    state.waiting.append((permits, continuation))
                    return false
                }
                state.available -= permits
                return true
            }
            if granted { continuation.resume() }
        }
    }

    func release(_ permits: Int) {
        let ready = state.withLock { state -> [CheckedContinuation<Void, Never>] in
            state.available += permits
            var ready: [CheckedContinuation<Void, Never>] = []
            while let first = state.waiting.first, state.available >= first.permits {
                state.available -= first.permits
                ready.append(state.waiting.removeFirst().continuation)
            }
            return ready
        }
        for continuation in ready { continuation.resume() }
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
