#if canImport(Glibc)
import Glibc
#endif

/// Scheduling priority for the threads that carry media in real time: a session's sending
/// and receiving threads, the SFU's workers, audio capture. A packet that waits for its
/// thread longer than the receiver's jitter buffer holds is a concealed frame, and on a busy
/// machine (or in a process that also moves bulk data: an RTS transfer beside a meeting)
/// ordinary threads can wait tens of milliseconds for a core. libwebrtc raises its audio
/// threads for the same reason.
///
/// Linux: a nice value of -10 for the calling thread alone (`setpriority` on its thread
/// ID), about nine times the CPU share of a default thread when both want a core. Lowering
/// a nice value needs CAP_SYS_NICE or an RLIMIT_NICE that allows it; without either the
/// thread keeps the default and nothing else changes. Not a real-time policy: a media thread
/// that spins cannot lock up the machine.
package enum ThreadPriority {
    /// The nice value media threads ask for.
    package static let mediaNice: Int32 = -10

    private typealias GetTID = @convention(c) () -> Int32
    /// glibc's gettid (2.30 and later): Swift's Glibc module leaves it out (_GNU_SOURCE).
    private static let threadID: GetTID? = dlsym(nil, "gettid").map { unsafeBitCast($0, to: GetTID.self) }

    /// Raises the calling thread to `mediaNice` where allowed.
    /// - Returns: whether it was raised (false without the privilege; the thread runs as before).
    @discardableResult
    package static func raiseForMedia() -> Bool {
        guard let threadID else { return false }
        return setpriority(__priority_which_t(PRIO_PROCESS.rawValue), id_t(threadID()), mediaNice) == 0
    }

    /// The calling thread's nice value.
    package static var currentNice: Int32? {
        guard let threadID else { return nil }
        errno = 0
        let value = getpriority(__priority_which_t(PRIO_PROCESS.rawValue), id_t(threadID()))
        return errno == 0 ? value : nil
    }
}
