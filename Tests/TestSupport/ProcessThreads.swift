import Foundation
import MediaEngine

/// This process's threads as the system lists them (`/proc/self/task`).
package enum ProcessThreads {
    /// Each thread now: its name and nice value (field 19 of its stat).
    package static func list() -> [(name: String, nice: Int32)] {
        let tasks = (try? FileManager.default.contentsOfDirectory(atPath: "/proc/self/task")) ?? []
        return tasks.compactMap { task in
            guard let name = try? String(contentsOfFile: "/proc/self/task/\(task)/comm", encoding: .utf8),
                  let stat = try? String(contentsOfFile: "/proc/self/task/\(task)/stat", encoding: .utf8),
                  let close = stat.lastIndex(of: ")") else { return nil }
            // After "pid (comm)": the state is field 3 and the nice value field 19.
            let fields = stat[stat.index(after: close)...].split(separator: " ")
            guard fields.count > 16, let nice = Int32(fields[16]) else { return nil }
            return (name.trimmingCharacters(in: .newlines), nice)
        }
    }

    /// The nice value a media thread gets in this process: `ThreadPriority.mediaNice` if the
    /// process may raise a thread (root, or an RLIMIT_NICE that allows it), 0 otherwise.
    package static func mediaNice() throws -> Int32 {
        let result = Locked<Int32?>(nil)
        let thread = try JoinableThread { result.withLock { $0 = ThreadPriority.raiseForMedia() ? ThreadPriority.currentNice : 0 } }
        thread.join()
        return result.withLock { $0 } ?? Int32.max
    }
}
