import Foundation

/// Hands pictures from one thread to another, newest first: the producer never waits. A
/// picture offered while the previous one is still untaken replaces it, and the older one
/// counts as dropped. Pictures are copied into buffers the mailbox keeps and swapped out
/// to the taker, so steady state allocates nothing.
final class FrameMailbox: @unchecked Sendable {
    // @unchecked: every field is guarded by `condition`.
    private let condition = NSCondition()
    private var slot = VideoFrame(width: 2, height: 2)
    private var full = false
    private var closed = false
    private var droppedCount = 0

    /// Pictures replaced before they were taken.
    var dropped: Int {
        condition.lock()
        defer { condition.unlock() }
        return droppedCount
    }

    /// Copies `frame` in; an untaken picture it replaces counts as dropped.
    func offer(_ frame: VideoFrame) {
        condition.lock()
        defer { condition.unlock() }
        guard !closed else { return }
        if full { droppedCount += 1 }
        slot.copy(from: frame)
        full = true
        condition.signal()
    }

    /// Takes the waiting picture into `frame` (whose old buffer the mailbox keeps),
    /// waiting up to `timeout` for one. False on timeout or once closed and empty.
    func take(into frame: inout VideoFrame, timeout: Duration? = nil) -> Bool {
        condition.lock()
        defer { condition.unlock() }
        let deadline = timeout.map { Date().addingTimeInterval($0 / .seconds(1)) }
        while !full && !closed {
            if let deadline {
                guard condition.wait(until: deadline) else { return false }
            } else {
                condition.wait()
            }
        }
        guard full else { return false }
        swap(&slot, &frame)
        full = false
        return true
    }

    /// Wakes the taker; later offers are ignored.
    func close() {
        condition.lock()
        closed = true
        condition.broadcast()
        condition.unlock()
    }
}
