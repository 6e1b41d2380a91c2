import Foundation
@testable import MediaEngine
import Testing
import TestSupport

/// Threads carry names the system shows (gdb, `top -H`, a crash report's thread list):
/// unnamed, each would show its creator's (a dispatch thread's "-qos.overcommit"), and a
/// crash report could not say which one crashed.
@Suite struct ThreadNames {
    /// The names of this process's threads now.
    static func names() -> [String] {
        let tasks = (try? FileManager.default.contentsOfDirectory(atPath: "/proc/self/task")) ?? []
        return tasks.compactMap { task in
            (try? String(contentsOfFile: "/proc/self/task/\(task)/comm", encoding: .utf8))?.trimmingCharacters(in: .newlines)
        }
    }

    @Test func aJoinableThreadIsNamedAndLongNamesAreCut() throws {
        let proceed = DispatchSemaphore(value: 0)
        let seen = Locked<[String]>([])
        let thread = try JoinableThread(name: "a name longer than fifteen bytes") {
            seen.withLock { $0 = Self.names() }
            proceed.signal()
        }
        proceed.wait()
        thread.join()
        #expect(seen.withLock { $0 }.contains("a name longer t"), "\(seen.withLock { $0 })")
    }

    /// A thread started at a real-time priority runs under SCHED_FIFO at it from its first
    /// instruction (sched_getscheduler on itself); a priority the kernel has no such level
    /// for is refused with EINVAL before any thread starts.
    @Test func aJoinableThreadRunsAtTheRealTimePriorityAskedFor() throws {
        let seen = Locked<(policy: Int32, priority: Int32)?>(nil)
        let thread = try JoinableThread(name: "realtime", realtimePriority: 3) {
            var parameters = sched_param()
            let policy = sched_getscheduler(0)
            sched_getparam(0, &parameters)
            seen.withLock { $0 = (policy, parameters.sched_priority) }
        }
        thread.join()
        let got = seen.withLock { $0 }
        #expect(got?.policy == SCHED_FIFO && got?.priority == 3, "\(String(describing: got))")
        #expect(throws: JoinableThread.StartError.self) { try JoinableThread(realtimePriority: 100) {} }
        do {
            _ = try JoinableThread(realtimePriority: 0) {}
            Issue.record("priority 0 started a SCHED_FIFO thread")
        } catch {
            #expect(error.status == EINVAL)
        }
    }

    @Test func aSessionsThreadsAreNamed() throws {
        func session() throws -> MediaSession {
            var configuration = MediaSession.Configuration(audio: ToneSource(ToneGenerator(.silence), name: "silence"), video: nil)
            configuration.host = "127.0.0.1"
            return try MediaSession(configuration: configuration)
        }
        let (a, b) = (try session(), try session())
        try a.start(remote: b.local) { _ in }
        defer { _ = a.stop() }
        let named = eventuallyBlocking(timeout: .seconds(5)) { Set(["media receive", "media send"]).isSubset(of: Set(Self.names())) }
        #expect(named, "\(Self.names())")
    }
}
