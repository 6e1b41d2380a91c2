import Foundation
import Synchronization

/// Set when the user presses Ctrl-C or the process gets SIGTERM, so long-running
/// commands finish cleanly: recordings are closed, BYE is sent, stats are printed.
enum Interruption {
    private static let flag = Atomic<Bool>(false)

    static func install() {
        let handler: @convention(c) (Int32) -> Void = { _ in Interruption.flag.store(true, ordering: .relaxed) }
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

    static var requested: Bool { flag.load(ordering: .relaxed) }
}

/// Prints a line to standard error.
func printError(_ text: String) {
    FileHandle.standardError.write(Data((text + "\n").utf8))
}

/// Milliseconds with one decimal.
func milliseconds(_ seconds: Double) -> String {
    String(format: "%.1fms", seconds * 1_000)
}
