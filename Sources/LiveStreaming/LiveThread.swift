import MediaEngine

#if canImport(Glibc)
import Glibc
#endif
import Synchronization

/// A joinable thread for an output's writer, which can tell whether it has ended (so a
/// streamer can forget ended threads without blocking).
final class LiveThread: Sendable {
    private final class Start: Sendable {
        let body: @Sendable () -> Void
        let ended = Atomic<Bool>(false)
        init(_ body: @escaping @Sendable () -> Void) { self.body = body }
    }

    private let handle: Locked<pthread_t?>
    private let start: Start

    /// Starts `body` on a new thread; `name` (the output's) goes into the error.
    /// - Throws: `LiveStreamError` (internal) when no thread can be created.
    init(name: String, _ body: @escaping @Sendable () -> Void) throws(LiveStreamError) {
        let start = Start(body)
        self.start = start
        let context = Unmanaged.passRetained(start).toOpaque()
        var thread = pthread_t()
        let status = pthread_create(&thread, nil, { context in
            let start = Unmanaged<Start>.fromOpaque(context!).takeRetainedValue()
            start.body()
            start.ended.store(true, ordering: .releasing)
            return nil
        }, context)
        guard status == 0 else {
            Unmanaged<Start>.fromOpaque(context).release()
            throw LiveStreamError(.internalError, "live output \(name): cannot start its writer thread (errno \(status))")
        }
        handle = Locked(thread)
    }

    /// Whether the body has returned.
    var hasEnded: Bool { start.ended.load(ordering: .acquiring) }

    /// Waits for the body to return; later calls return at once.
    func join() {
        handle.withLock { handle in
            guard let thread = handle else { return }
            pthread_join(thread, nil)
            handle = nil
        }
    }

    deinit { join() }
}
