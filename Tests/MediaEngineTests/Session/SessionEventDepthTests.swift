import Testing
import TestSupport
@testable import MediaEngine

/// A session's event handler is called at the same stack depth however many events went
/// before. Kept as a bare closure in a `Mutex`, each read re-thunked it (generic
/// reabstraction written back), so every event ran two thunks deeper: 48-64 bytes of
/// stack per event: a video call's receive thread was 6.9 MB into its 8 MB stack after
/// 3 minutes (`mediaengine bench soak` found it as resident memory growing 600-870 MB/h).
@Suite struct SessionEventDepth {
    /// The address of a local: how deep the stack is where it is called.
    @inline(never) static func stackAddress() -> Int {
        var marker = 0
        return withUnsafeMutablePointer(to: &marker) { Int(bitPattern: $0) }
    }

    @Test(.enabled(if: Sanitizer.stackAddressesAreMeaningful, "ASan's fake stack frames make a local's address say nothing of depth"))
    func theEventHandlerRunsAtTheSameDepthAfterTenThousandEvents() throws {
        var configuration = MediaSession.Configuration(audio: try MediaSources.audio("sine:440"), video: nil)
        configuration.host = "127.0.0.1"
        let session = try MediaSession(configuration: configuration)
        final class Depths: @unchecked Sendable { var base = 0; var deepest = 0 }
        let depths = Depths()
        session.state.withLock {
            $0.eventHandler = .init(call: { _ in depths.deepest = max(depths.deepest, depths.base - Self.stackAddress()) })
        }
        depths.base = Self.stackAddress()
        session.emit(.gatheringComplete)
        let first = depths.deepest
        for _ in 0..<10_000 { session.emit(.gatheringComplete) }
        #expect(first > 0)
        #expect(depths.deepest - first < 1_024, "the handler ran \(depths.deepest - first) bytes deeper after 10,000 events")
        _ = session.stop()
    }
}
