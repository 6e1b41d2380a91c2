#if canImport(Glibc)
import Glibc
#endif

/// Names the calling thread where the system shows threads (`top -H`, gdb, a crash
/// report's thread list; the first 15 bytes). A thread nobody names inherits its
/// creator's name, so a session's threads started from a dispatch queue all read
/// "-qos.overcommit" and a crash report cannot tell them apart.
package enum ThreadName {
    private typealias SetName = @convention(c) (pthread_t, UnsafePointer<CChar>) -> Int32
    /// glibc's pthread_setname_np: Swift's Glibc module leaves it out (it is behind
    /// _GNU_SOURCE), and Foundation's `Thread.name` sets it only for some threads.
    private static let setName: SetName? = dlsym(nil, "pthread_setname_np").map { unsafeBitCast($0, to: SetName.self) }

    /// Names the calling thread `name` (cut to 15 bytes at a character boundary).
    package static func set(_ name: String) {
        var cut = ""
        for character in name where cut.utf8.count + character.utf8.count <= 15 { cut.append(character) }
        _ = setName?(pthread_self(), cut)
    }
}
