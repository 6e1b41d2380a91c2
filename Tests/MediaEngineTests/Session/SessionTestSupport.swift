import Foundation
import MediaEngine

/// Stops a session on a thread of its own: stopping blocks until the session's threads
/// end, which must not hold one of Swift's few cooperative threads.
@discardableResult
func stopped(_ session: MediaSession) async -> MediaSession.Summary {
    await withCheckedContinuation { continuation in Thread.detachNewThread { continuation.resume(returning: session.stop()) } }
}
