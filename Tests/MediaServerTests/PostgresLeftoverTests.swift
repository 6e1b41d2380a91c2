import Foundation
import Testing
import TestSupport

/// A test cluster whose test process is gone (it exited before an unstructured teardown
/// ran, or crashed) is swept as the next one starts; a live process's cluster is not.
@Suite struct PostgresLeftovers {
    static func fakeCluster(owner: pid_t) throws -> URL {
        let directory = try temporaryDirectory("postgres")
        try Data(String(owner).utf8).write(to: directory.appendingPathComponent("owner"))
        try FileManager.default.createDirectory(at: directory.appendingPathComponent("data"), withIntermediateDirectories: true)
        return directory
    }

    @Test func aGoneProcesssClusterIsSweptAndALiveOnesIsKept() throws {
        // A process that has ended (and been reaped): its pid names nobody now.
        let ended = try BackgroundProcess(executable: URL(fileURLWithPath: "/bin/true"), arguments: [])
        _ = try ended.wait(timeout: 10)
        let gone = try Self.fakeCluster(owner: ended.pid)
        let mine = try Self.fakeCluster(owner: getpid())
        defer { try? FileManager.default.removeItem(at: mine) }
        PostgresTestServer.removeLeftovers()
        #expect(!FileManager.default.fileExists(atPath: gone.path), "the ended process's cluster is swept")
        #expect(FileManager.default.fileExists(atPath: mine.path), "a live process's cluster is kept")
    }
}
