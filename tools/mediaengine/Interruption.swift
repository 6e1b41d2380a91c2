import ArgumentParser
import Foundation
import MediaEngine
import Synchronization

/// Ctrl-C (SIGINT) and SIGTERM for the long-running commands: the first one asks the
/// command to finish cleanly (hang up or leave, close recordings, print the summary)
/// within 2 s; a second one ends the process at once, for a user who cannot wait.
///
/// Every long-running command calls `install()` before its first wait (a login, a
/// connect, a bind), so a signal is never lost to the default action or ignored. Loops
/// that poll read `requested`; tasks that wait use `wait()`.
enum Interruption {
    private static let flag = Atomic<Bool>(false)
    private static let installed = Atomic<Bool>(false)
    private static let received = Atomic<Int32>(0)
    private static let waiters = Locked<[UInt64: CheckedContinuation<Void, Never>]>([:])
    private static let nextWaiter = Atomic<UInt64>(0)
    /// The pipe's write end, for the signal handler: set before the handler is installed
    /// and never changed, so the handler reads a plain integer (async-signal-safe).
    nonisolated(unsafe) private static var pipeWriteEnd: Int32 = -1

    /// Catches SIGINT and SIGTERM from now on. Idempotent.
    static func install() {
        guard installed.compareExchange(expected: false, desired: true, ordering: .acquiringAndReleasing).exchanged else { return }
        var ends: [Int32] = [0, 0]
        guard pipe(&ends) == 0 else {
            // Without a pipe there is no way to wake waiters; the flag still works.
            printError("warning: cannot watch for Ctrl-C (pipe: \(String(cString: strerror(errno))))")
            return
        }
        _ = fcntl(ends[0], F_SETFD, FD_CLOEXEC)
        _ = fcntl(ends[1], F_SETFD, FD_CLOEXEC)
        pipeWriteEnd = ends[1]
        let readEnd = ends[0]
        // A thread of its own, blocked in read: the handler itself may only write a byte.
        Thread.detachNewThread {
            var signals = 0
            var byte: UInt8 = 0
            while true {
                let count = read(readEnd, &byte, 1)
                if count < 0 && errno == EINTR { continue }
                guard count == 1 else { return }
                signals += 1
                if signals == 1 {
                    received.store(Int32(byte), ordering: .relaxed)
                    flag.store(true, ordering: .releasing)
                    let woken = waiters.withLock { waiting in
                        defer { waiting.removeAll() }
                        return Array(waiting.values)
                    }
                    for waiter in woken { waiter.resume() }
                } else {
                    printError("interrupted again: stopping now")
                    _exit(128 + Int32(byte))
                }
            }
        }
        let handler: @convention(c) (Int32) -> Void = { number in
            var byte = UInt8(truncatingIfNeeded: number)
            _ = write(Interruption.pipeWriteEnd, &byte, 1)
        }
        signal(SIGINT, handler)
        signal(SIGTERM, handler)
        unblockSignals()
    }

    /// A parent may have started us with SIGINT and SIGTERM blocked (threads of test
    /// runners and some supervisors block them); unblock them so they reach us.
    static func unblockSignals() {
        var signals = sigset_t()
        sigemptyset(&signals)
        sigaddset(&signals, SIGINT)
        sigaddset(&signals, SIGTERM)
        pthread_sigmask(SIG_UNBLOCK, &signals, nil)
    }

    /// Whether the user asked to stop.
    static var requested: Bool { flag.load(ordering: .acquiring) }

    /// The signal that asked, once one did.
    static var receivedSignal: Int32? { requested ? received.load(ordering: .relaxed) : nil }

    /// The exit status of a command that could not finish its job because it was stopped
    /// (a soak cut short): 128 plus the signal, as the shell reports a process it ended.
    static var exitCode: ExitCode { ExitCode(128 + (receivedSignal ?? SIGTERM)) }

    /// Returns once the user asks to stop (at once if they did), or when the calling task
    /// is cancelled.
    static func wait() async {
        let id = nextWaiter.add(1, ordering: .relaxed).newValue
        await withTaskCancellationHandler {
            await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
                let waiting = waiters.withLock { waiting -> Bool in
                    guard !requested, !Task.isCancelled else { return false }
                    waiting[id] = continuation
                    return true
                }
                if !waiting { continuation.resume() }
            }
        } onCancel: {
            waiters.withLock { $0.removeValue(forKey: id) }?.resume()
        }
    }

    /// Runs `operation` unless the user asks to stop first: nil when they did. The
    /// operation is cancelled then, and left to finish on its own (a connect or a login
    /// that does not heed cancellation cannot hold the command).
    static func unlessRequested<Value: Sendable>(_ operation: @escaping @Sendable () async throws -> Value) async throws -> Value? {
        if requested { return nil }
        let work = Task { try await operation() }
        return try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<Value?, Error>) in
            let once = Locked<CheckedContinuation<Value?, Error>?>(continuation)
            let watcher = Task {
                await wait()
                guard requested, let continuation = once.withLock({ $0.take() }) else { return }
                work.cancel()
                continuation.resume(returning: nil)
            }
            Task {
                let result = await work.result
                // Taken before the watcher is cancelled: a cancelled watcher finds it gone.
                let continuation = once.withLock { $0.take() }
                watcher.cancel()
                continuation?.resume(with: result.map { Optional($0) })
            }
        }
    }
}

/// Runs `operation`, but gives up on it after `limit`: for the last words of a command
/// being stopped (a hangup, a leave), which must not hold it past its 2 s when the
/// server does not answer.
func bounded(_ limit: Duration, _ operation: @escaping @Sendable () async -> Void) async {
    await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
        let once = Locked<CheckedContinuation<Void, Never>?>(continuation)
        Task {
            await operation()
            once.withLock { $0.take() }?.resume()
        }
        Task {
            try? await Task.sleep(for: limit)
            once.withLock { $0.take() }?.resume()
        }
    }
}

/// Prints a line to standard error.
func printError(_ text: String) {
    FileHandle.standardError.write(Data((text + "\n").utf8))
}

/// Milliseconds with one decimal.
func milliseconds(_ seconds: Double) -> String {
    String(format: "%.1fms", seconds * 1_000)
}
