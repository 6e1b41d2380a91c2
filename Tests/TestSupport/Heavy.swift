import Foundation
import MediaEngine
import Testing

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
        let started = ContinuousClock.now
        defer {
            gate.release(permits)
            Timings.record(permits: permits, seconds: (ContinuousClock.now - started) / .seconds(1))
        }
        let executor = ThreadExecutor()
        defer { executor.shutdown() }
        return try await withTaskExecutorPreference(executor) { try await body() }
    }

    /// With MEDIAENGINE_HEAVY_TIMES=FILE, each heavy test appends a line to FILE: the
    /// seconds it held its slots, the slots, and its name. `sort -rn FILE` shows what a
    /// full run's time goes to (the suite's wall time is about the sum of seconds times
    /// slots, over the machine's slots).
    private enum Timings {
        static let path = ProcessInfo.processInfo.environment["MEDIAENGINE_HEAVY_TIMES"]
        static let lock = Locked(())

        static func record(permits: Int, seconds: Double) {
            guard let path else { return }
            let name = Test.current.map { "\($0.id)" } ?? "?"
            let line = String(format: "%8.2f %d %@\n", seconds, permits, name)
            lock.withLock { _ in
                guard let handle = FileHandle(forWritingAtPath: path) ?? {
                    FileManager.default.createFile(atPath: path, contents: nil)
                    return FileHandle(forWritingAtPath: path)
                }() else { return }
                handle.seekToEndOfFile()
                handle.write(Data(line.utf8))
                try? handle.close()
            }
        }
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
        // Named from inside: Foundation's `name` set before `start` never reaches the system,
        // and an unnamed thread shows its creator's name (a cooperative thread's).
        let thread = Thread { [self] in
            ThreadName.set("heavy test")
            work()
        }
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
