import Foundation

/// What an app does to captured media before it is encoded (NIM's capture callbacks):
/// voice changers, filters, overlays, bots.
///
/// - Audio: the hook gets each captured 20 ms block (interleaved Int16, the sample count,
///   the sample rate), processes it in place and returns how many samples it wrote, never
///   more than it got (fewer leaves silence at the end of the block).
/// - Video: the hook gets each captured picture and hands back a processed one of the same
///   size and timestamp through `sendVideoFrame`, from any thread, now or later.
///
/// Hooks run on threads of their own, never on the sending thread, so a slow hook cannot
/// stall capture. Audio is pipelined one block: what is sent is the latest block the hook
/// finished; when it has none ready the block is sent as silence and counted as dropped
/// (never the unprocessed microphone). Video sends only what comes back; a picture the
/// hook is too busy to take is replaced by the next one and counted as dropped. Handing
/// and taking blocks and pictures reuses buffers: nothing is allocated per frame.
public final class CaptureHooks: Sendable {
    public typealias AudioHook = @Sendable (_ samples: UnsafeMutablePointer<Int16>, _ count: Int, _ sampleRate: Int) -> Int
    public typealias VideoHook = @Sendable (VideoFrame) -> Void

    public struct Statistics: Sendable, Hashable {
        /// Blocks the audio hook processed.
        public var audioBlocksProcessed = 0
        /// Blocks sent as silence because the hook had none ready.
        public var audioBlocksDropped = 0
        /// Blocks whose hook returned a count out of range (sent as silence).
        public var audioBlocksRejected = 0
        /// Pictures handed to the video hook.
        public var videoFramesHooked = 0
        /// Pictures replaced before the hook or the encoder took them.
        public var videoFramesDropped = 0
        /// Pictures handed back through `sendVideoFrame` and sent.
        public var videoFramesReturned = 0
    }

    /// Why `sendVideoFrame` refused a picture.
    public struct FrameError: Error, Sendable, Hashable, CustomStringConvertible {
        public let message: String
        public var description: String { message }
    }

    private let audio = AudioStage()
    private let video = VideoStage()

    public init() {}

    /// Sets (or with nil removes) the audio hook; its thread starts and ends with it.
    public func setAudioHook(_ hook: AudioHook?) { audio.set(hook) }

    /// Sets (or with nil removes) the video hook; its thread starts and ends with it.
    public func setVideoHook(_ hook: VideoHook?) { video.set(hook) }

    public var statistics: Statistics {
        var result = Statistics()
        audio.count(into: &result)
        video.count(into: &result)
        return result
    }

    /// Hands back a processed picture: the same size and timestamp as one the video hook
    /// got (one of the last 16).
    public func sendVideoFrame(_ frame: VideoFrame) throws(FrameError) {
        try video.returned(frame)
    }

    /// On the sending thread: replaces `frame`'s samples with the latest processed block.
    func process(_ frame: inout AudioFrame) {
        audio.exchange(&frame)
    }

    /// On the sending thread: hands `frame` to the hook and puts the latest picture it sent
    /// back into `frame`. False when none is ready (nothing to encode this time).
    func process(_ frame: inout VideoFrame) -> Bool {
        video.exchange(&frame)
    }

    deinit {
        audio.set(nil)
        video.set(nil)
    }
}

/// The audio hook's thread and its two single-block slots.
private final class AudioStage: @unchecked Sendable {
    // @unchecked: every field is guarded by `condition`; `working` belongs to the hook thread
    // while `busy` is set.
    private let condition = NSCondition()
    private var hook: CaptureHooks.AudioHook?
    /// Changes with every hook change: a block processed by an earlier hook is not sent.
    private var generation = 0
    /// Changes when a thread starts: an older thread still winding down leaves.
    private var epoch = 0
    private var input: [Int16] = []
    private var inputReady = false
    private var output: [Int16] = []
    private var outputReady = false
    private var statistics = CaptureHooks.Statistics()

    func set(_ newHook: CaptureHooks.AudioHook?) {
        condition.lock()
        let starting = hook == nil && newHook != nil
        hook = newHook
        generation += 1
        if starting { epoch += 1 }
        inputReady = false
        outputReady = false
        let mine = epoch
        condition.broadcast()
        condition.unlock()
        if starting {
            Thread.detachNewThread { [self] in
                ThreadName.set("audio hook")
                run(epoch: mine)
            }
        }
    }

    func count(into result: inout CaptureHooks.Statistics) {
        condition.lock()
        defer { condition.unlock() }
        result.audioBlocksProcessed = statistics.audioBlocksProcessed
        result.audioBlocksDropped = statistics.audioBlocksDropped
        result.audioBlocksRejected = statistics.audioBlocksRejected
    }

    func exchange(_ frame: inout AudioFrame) {
        condition.lock()
        defer { condition.unlock() }
        guard hook != nil else { return }
        // Hand this block over (a block the hook has not started is replaced).
        input.removeAll(keepingCapacity: true)
        input.append(contentsOf: frame.samples)
        inputReady = true
        condition.signal()
        // Send the latest processed block, or silence.
        if outputReady && output.count == frame.samples.count {
            swap(&output, &frame.samples)
            outputReady = false
        } else {
            statistics.audioBlocksDropped += 1
            for index in frame.samples.indices { frame.samples[index] = 0 }
        }
    }

    private func run(epoch mine: Int) {
        var working: [Int16] = []
        while true {
            condition.lock()
            while !inputReady && hook != nil { condition.wait() }
            guard let hook, epoch == mine else {
                condition.unlock()
                return
            }
            if working.count != input.count { working = [Int16](repeating: 0, count: input.count) }
            swap(&working, &input)
            inputReady = false
            let currentGeneration = generation
            condition.unlock()

            let count = working.count
            let written = working.withUnsafeMutableBufferPointer { hook($0.baseAddress!, count, AudioFrame.sampleRate) }

            condition.lock()
            if !(0...count).contains(written) {
                statistics.audioBlocksRejected += 1
                for index in working.indices { working[index] = 0 }
            } else {
                for index in written..<count { working[index] = 0 }
                statistics.audioBlocksProcessed += 1
            }
            if generation == currentGeneration {
                swap(&working, &output)
                outputReady = true
            }
            condition.unlock()
        }
    }
}

/// The video hook's thread, the picture handed to it and the one handed back.
private final class VideoStage: @unchecked Sendable {
    // @unchecked: the mailboxes are thread-safe; the rest is guarded by `lock`.
    private let lock = NSLock()
    private var hook: CaptureHooks.VideoHook?
    private var toHook: FrameMailbox?
    private let fromHook = FrameMailbox()
    /// Sizes and timestamps of the last pictures handed to the hook.
    private var handed: [(width: Int, height: Int, timestamp: Duration)] = []
    private var handedNext = 0
    private var hooked = 0
    private var returnedCount = 0

    func set(_ newHook: CaptureHooks.VideoHook?) {
        lock.lock()
        let previous = toHook
        hook = newHook
        toHook = newHook == nil ? nil : FrameMailbox()
        let mailbox = toHook
        lock.unlock()
        previous?.close()
        if let mailbox, let newHook {
            Thread.detachNewThread {
                ThreadName.set("video hook")
                var picture = VideoFrame(width: 2, height: 2)
                while mailbox.take(into: &picture) { newHook(picture) }
            }
        }
    }

    func count(into result: inout CaptureHooks.Statistics) {
        lock.lock()
        defer { lock.unlock() }
        result.videoFramesHooked = hooked
        result.videoFramesReturned = returnedCount
        result.videoFramesDropped = (toHook?.dropped ?? 0) + fromHook.dropped
    }

    func exchange(_ frame: inout VideoFrame) -> Bool {
        lock.lock()
        guard let mailbox = toHook else {
            lock.unlock()
            return true
        }
        let entry = (frame.width, frame.height, frame.timestamp)
        if handed.count < 16 { handed.append(entry) } else { handed[handedNext] = entry }
        handedNext = (handedNext + 1) % 16
        hooked += 1
        lock.unlock()
        mailbox.offer(frame)
        return fromHook.take(into: &frame, timeout: .zero)
    }

    func returned(_ frame: VideoFrame) throws(CaptureHooks.FrameError) {
        lock.lock()
        let known = handed.contains { $0.width == frame.width && $0.height == frame.height && $0.timestamp == frame.timestamp }
        let active = hook != nil
        if known && active { returnedCount += 1 }
        lock.unlock()
        guard active else { throw CaptureHooks.FrameError(message: "sendVideoFrame: no video hook is set") }
        guard known else {
            throw CaptureHooks.FrameError(message: "sendVideoFrame: a \(frame.width)x\(frame.height) picture at \(frame.timestamp) "
                + "matches none handed to the hook (same size and timestamp required)")
        }
        fromHook.offer(frame)
    }
}
