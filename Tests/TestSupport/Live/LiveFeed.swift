#if canImport(Glibc)
import Glibc
#endif
import Foundation
import MediaEngine

/// A live room's producer for tests: on a thread of its own, at real time, it calls
/// `audio` with 10 ms chunks of a 440 Hz + 660 Hz tone (amplitude 0.25 each, mono, 48 kHz)
/// and `video` at the frame rate, each with its time on the feed's clock (starting at 0).
/// Times are the ideal schedule, so a late tick keeps its time; `maximumLateness` says how
/// far behind the thread fell.
public final class LiveFeed: Sendable {
    /// The tone's frequencies and the amplitude of each (of full scale).
    public static let frequencies = [440.0, 660.0]
    public static let amplitude = 0.25

    private struct Progress: Sendable {
        var started = false
        var stopped = false
        var videoTicks = 0
        var audioChunks = 0
        var maximumLateness: Duration = .zero
        var videoTime: Duration = .zero
        var audioTime: Duration = .zero
        var longestVideoCall: Duration = .zero
    }

    private let progress = Locked(Progress())
    private let frameRate: Int
    private let video: @Sendable (Duration) -> Void
    private let audio: @Sendable (UnsafeBufferPointer<Int16>, Duration) -> Void
    private let done = DispatchSemaphore(value: 0)

    public init(frameRate: Int = 30, video: @escaping @Sendable (Duration) -> Void,
                audio: @escaping @Sendable (UnsafeBufferPointer<Int16>, Duration) -> Void) {
        self.frameRate = frameRate
        self.video = video
        self.audio = audio
    }

    /// Starts the thread.
    public func start() {
        let thread = Thread { [self] in
            run()
            done.signal()
        }
        thread.name = "live feed"
        progress.withLock { $0.started = true }
        thread.start()
    }

    /// Stops the thread and waits for it (once).
    public func stop() {
        let wasRunning = progress.withLock { progress in
            defer { progress.stopped = true }
            return progress.started && !progress.stopped
        }
        if wasRunning { done.wait() }
    }

    public var videoTicks: Int { progress.withLock { $0.videoTicks } }
    public var audioChunks: Int { progress.withLock { $0.audioChunks } }
    public var maximumLateness: Duration { progress.withLock { $0.maximumLateness } }
    /// Time spent in the callbacks: video in all, audio in all, the longest video call.
    public var callTimes: (video: Duration, audio: Duration, longestVideo: Duration) {
        progress.withLock { ($0.videoTime, $0.audioTime, $0.longestVideoCall) }
    }
    /// Time on the feed's clock so far (audio sent).
    public var elapsed: Duration { .milliseconds(10 * audioChunks) }

    private func run() {
        let clock = ContinuousClock()
        let start = clock.now
        var chunk = [Int16](repeating: 0, count: 480)
        var sample = 0
        var nextFrame = 0
        var chunkIndex = 0
        while !progress.withLock({ $0.stopped }) {
            let time = Duration.milliseconds(10 * chunkIndex)
            let deadline = start + time
            let now = clock.now
            if now < deadline {
                let wait = (deadline - now).components
                // Real time is what the feed keeps: each chunk waits for its due time.
                Thread.sleep(forTimeInterval: Double(wait.seconds) + Double(wait.attoseconds) / 1e18)
            } else {
                progress.withLock { $0.maximumLateness = max($0.maximumLateness, now - deadline) }
            }
            for index in 0..<chunk.count {
                let t = Double(sample + index) / 48_000
                let value = Self.frequencies.reduce(0.0) { $0 + Self.amplitude * sin(2 * Double.pi * $1 * t) }
                chunk[index] = Int16((value * 32_767).rounded())
            }
            sample += chunk.count
            let audioStart = clock.now
            chunk.withUnsafeBufferPointer { audio($0, time) }
            let audioTook = clock.now - audioStart
            progress.withLock { $0.audioTime += audioTook }
            while Duration.seconds(nextFrame) / frameRate <= time {
                let videoStart = clock.now
                video(Duration.seconds(nextFrame) / frameRate)
                let took = clock.now - videoStart
                nextFrame += 1
                progress.withLock { progress in
                    progress.videoTicks += 1
                    progress.videoTime += took
                    progress.longestVideoCall = max(progress.longestVideoCall, took)
                }
            }
            chunkIndex += 1
            progress.withLock { $0.audioChunks += 1 }
        }
    }
}

/// Fills I420 planes with the test canvas: the left half red, the right half blue, at
/// their BT.601 studio-range values (red Y 81 U 90 V 240, blue Y 41 U 240 V 110).
public func fillRedBlue(y: UnsafeMutableBufferPointer<UInt8>, u: UnsafeMutableBufferPointer<UInt8>,
                        v: UnsafeMutableBufferPointer<UInt8>, width: Int, height: Int, strideY: Int, strideUV: Int) {
    for row in 0..<height {
        for column in 0..<width { y[row * strideY + column] = column < width / 2 ? 81 : 41 }
    }
    let (chromaWidth, chromaHeight) = ((width + 1) / 2, (height + 1) / 2)
    for row in 0..<chromaHeight {
        for column in 0..<chromaWidth {
            let left = column < chromaWidth / 2
            u[row * strideUV + column] = left ? 90 : 240
            v[row * strideUV + column] = left ? 240 : 110
        }
    }
}

/// A thread-safe list that callbacks append to and tests wait on (with `eventually`).
public final class Recorded<Element: Sendable>: Sendable {
    private let items = Locked<[Element]>([])

    public init() {}

    public func append(_ item: Element) { items.withLock { $0.append(item) } }

    public var all: [Element] { items.withLock { $0 } }
}
