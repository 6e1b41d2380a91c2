import Foundation
@testable import LiveStreaming
@testable import MediaEngine
import Testing
import TestSupport

/// A live room for tests: a streamer in the default format (1280x720 at 30 fps, mono
/// 48 kHz) fed at real time by a `LiveFeed` (a red | blue canvas, 440 + 660 Hz), with
/// every event recorded with its time since the rig was made.
final class LiveRig: Sendable {
    struct Event: Sendable {
        var event: LiveOutputEvent
        var at: Duration
    }

    let events = Recorded<Event>()
    let streamer: LiveStreamer
    let feed: LiveFeed
    let clock = ContinuousClock()
    let started: ContinuousClock.Instant

    init() throws {
        let events = self.events
        let clock = clock
        let started = clock.now
        self.started = started
        let streamer = try LiveStreamer(format: LiveStreamFormat()) { events.append(Event(event: $0, at: clock.now - started)) }
        var canvas = VideoFrame(width: 1280, height: 720)
        let (strideY, strideUV) = (canvas.strideY, canvas.strideUV)
        canvas.withMutablePlanes { y, u, v in
            fillRedBlue(y: y, u: u, v: v, width: 1280, height: 720, strideY: strideY, strideUV: strideUV)
        }
        let frame = canvas
        self.streamer = streamer
        feed = LiveFeed(video: { streamer.submitVideo(frame, at: $0) }, audio: { streamer.submitAudio($0, at: $1) })
    }

    /// Time since the rig was made.
    var now: Duration { clock.now - started }

    func start() { feed.start() }

    /// Stops the feed, then the streamer (trailers written, threads joined).
    func stop() {
        feed.stop()
        streamer.stop()
    }

    /// The statuses output `id` reported, in order.
    func statuses(_ id: String) -> [Int] { events.all.filter { $0.event.output == id }.map(\.event.status.rawValue) }

    /// The events of output `id`.
    func events(_ id: String) -> [Event] { events.all.filter { $0.event.output == id } }
}

/// The pulled audio holds both tones at about the fed level (0.25) and nothing at 1 kHz;
/// the pulled picture is red on the left and blue on the right.
func expectCanvasAndTones(audio: String, video: String, seconds: Double, _ label: String) throws {
    let samples = try readS16(audio)
    #expect(Double(samples.count) >= 48_000 * (seconds - 1), "\(label): \(samples.count) samples")
    let body = samples.dropFirst(4_800)  // past the decoders' first frames
    let levels = [440.0, 660.0, 1_000.0].map { toneLevel(body, frequency: $0, sampleRate: 48_000) }
    print("\(label): 440 Hz \(levels[0]), 660 Hz \(levels[1]), 1000 Hz \(levels[2]), \(samples.count) samples")
    #expect(levels[0] > 0.18 && levels[0] < 0.32, "\(label): 440 Hz level \(levels[0]) (fed 0.25)")
    #expect(levels[1] > 0.18 && levels[1] < 0.32, "\(label): 660 Hz level \(levels[1]) (fed 0.25)")
    #expect(levels[2] < 0.01, "\(label): 1000 Hz level \(levels[2]) (not fed)")

    let (width, height) = LiveRigSize.pulled
    let frames = try readRGBFrames(video, width: width, height: height)
    #expect(Double(frames.count) >= 5 * (seconds - 1.5), "\(label): \(frames.count) frames at 5 fps")
    let frame = try #require(frames.last, "\(label): no video frames")
    let left = regionAverage(frame, width: width, height: height, x0: 0.05, y0: 0.1, x1: 0.4, y1: 0.9)
    let right = regionAverage(frame, width: width, height: height, x0: 0.6, y0: 0.1, x1: 0.95, y1: 0.9)
    print("\(label): left \(left), right \(right), \(frames.count) frames")
    #expect(left.r > 200 && left.g < 60 && left.b < 60, "\(label): left half \(left) is not red")
    #expect(right.r < 60 && right.g < 60 && right.b > 200, "\(label): right half \(right) is not blue")
}

enum LiveRigSize {
    /// What pulls scale the 1280x720 canvas to.
    static let pulled = (160, 90)
}

/// A loopback port nothing listens on.
func closedPort() throws -> Int {
    try #require((0..<200).lazy.map { _ in Int.random(in: LivePort.stableRange) }.first { LivePort.isFree($0) })
}
