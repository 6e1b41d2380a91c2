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
