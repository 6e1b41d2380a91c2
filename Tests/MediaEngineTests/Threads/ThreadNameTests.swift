import Foundation
@testable import MediaEngine
import Testing
import TestSupport

/// Threads carry names the system shows (gdb, `top -H`, a crash report's thread list):
/// unnamed, each would show its creator's (a dispatch thread's "-qos.overcommit"), and a
/// crash report could not say which one crashed.
@Suite struct ThreadNames {
    /// The nice value a media thread gets here: raised if this process may (root, or an
    /// RLIMIT_NICE that allows it), the default otherwise.
    static func mediaNice() throws -> Int32 { try ProcessThreads.mediaNice() }

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

    /// A session's sending and receiving threads run above the default priority where the
    /// system allows it (CI runs as root: -10), and only they: the thread that started them
    /// keeps its own.
    @Test func aSessionsMediaThreadsRunAboveTheDefaultPriority() throws {
        let expected = try Self.mediaNice()
        if getuid() == 0 { #expect(expected == ThreadPriority.mediaNice, "root may raise a thread: \(expected)") }
        func session() throws -> MediaSession {
            var configuration = MediaSession.Configuration(audio: ToneSource(ToneGenerator(.silence), name: "silence"), video: nil)
            configuration.host = "127.0.0.1"
            return try MediaSession(configuration: configuration)
        }
        let (a, b) = (try session(), try session())
        let before = ThreadPriority.currentNice
        try a.start(remote: b.local) { _ in }
        defer { _ = a.stop() }
        let raised = eventuallyBlocking(timeout: .seconds(5)) {
            let media = ProcessThreads.list().filter { ["media receive", "media send"].contains($0.name) }
            return media.count >= 2 && media.allSatisfy { $0.nice == expected }
        }
        #expect(raised, "\(ProcessThreads.list().filter { $0.name.hasPrefix("media") })")
        #expect(ThreadPriority.currentNice == before)
    }
}
