import Foundation
import MediaEngine
import Synchronization

/// Net-detect tasks with the semantics of NIM's `NIMAVChatNetDetectManager`: start a task
/// against an echo responder (the signaling server's echo port, or `mediaengine netdetect
/// --echo` on another host), get its result in a completion, stop it early if needed.
/// Several tasks may run at once, each on its own thread. Every finished task appends one
/// JSON line (its whole result) to the log file at `logFilePath`.
public final class NetDetectManager: Sendable {
    /// Where results are appended, one JSON object per line.
    public let logFilePath: String
    private let tasks = Locked<[UInt64: StopFlag]>([:])
    private let nextTask = Locked<UInt64>(1)
    private let logLock = Locked<Void>(())

    /// - Parameter logFilePath: The log file (created if missing; its directory must exist).
    ///   Default: `mediaengine-netdetect.log` in the temporary directory.
    public init(logFilePath: String? = nil) {
        self.logFilePath = logFilePath ?? FileManager.default.temporaryDirectory.appendingPathComponent("mediaengine-netdetect.log").path
    }

    /// Starts a task; returns its ID at once. The completion runs on the task's thread,
    /// after the result is in the log.
    ///
    /// - Parameters:
    ///   - kind: Audio, or a video preset (probe size and rate).
    ///   - target: The echo responder, `HOST:PORT`.
    ///   - count: Probes to send (50 by default).
    ///   - interval: Time between probes; nil for the kind's.
    @discardableResult
    public func startDetectTask(kind: NetDetectKind, target: String, count: Int = 50, interval: Duration? = nil,
                                progress: (@Sendable (_ sent: Int, _ total: Int) -> Void)? = nil,
                                completion: @escaping @Sendable (NetDetectResult) -> Void) -> UInt64 {
        let id = nextTask.withLock { next in
            defer { next += 1 }
            return next
        }
        let stop = StopFlag(false)
        tasks.withLock { $0[id] = stop }
        Thread.detachNewThread { [self] in
            let result = NetDetectRunner.run(taskId: id, target: target, options: .init(kind: kind, count: count, interval: interval),
                                             stop: { stop.value.load(ordering: .relaxed) },
                                             progress: { sent, total in progress?(sent, total) })
            tasks.withLock { _ = $0.removeValue(forKey: id) }
            append(result)
            completion(result)
        }
        return id
    }

    /// Runs a task and returns its result.
    public func detect(kind: NetDetectKind, target: String, count: Int = 50, interval: Duration? = nil) async -> NetDetectResult {
        await withCheckedContinuation { continuation in
            startDetectTask(kind: kind, target: target, count: count, interval: interval) { continuation.resume(returning: $0) }
        }
    }

    /// Stops a running task: it completes with a `stopped` error.
    /// - Throws: `NetDetectError` `.invalidOptions` for an ID that is not running.
    public func stopDetectTask(_ taskId: UInt64) throws(NetDetectError) {
        guard let stop = tasks.withLock({ $0[taskId] }) else {
            throw NetDetectError(.invalidOptions, "no running net-detect task \(taskId)")
        }
        stop.value.store(true, ordering: .relaxed)
    }

    /// Tasks running now.
    public var runningTasks: [UInt64] { tasks.withLock { $0.keys.sorted() } }

    private func append(_ result: NetDetectResult) {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys]
        guard var line = try? encoder.encode(LogLine(result: result, finishedAt: Date())) else { return }
        line.append(0x0A)
        logLock.withLock { _ in
            if !FileManager.default.fileExists(atPath: logFilePath) {
                FileManager.default.createFile(atPath: logFilePath, contents: nil)
            }
            guard let handle = FileHandle(forWritingAtPath: logFilePath) else { return }
            defer { try? handle.close() }
            _ = try? handle.seekToEnd()
            try? handle.write(contentsOf: line)
        }
    }

    struct LogLine: Encodable {
        var result: NetDetectResult
        var finishedAt: Date
        var qualityIndex: Double { result.qualityIndex }

        enum CodingKeys: String, CodingKey { case result, finishedAt, qualityIndex, quality }

        func encode(to encoder: any Encoder) throws {
            var container = encoder.container(keyedBy: CodingKeys.self)
            try container.encode(result, forKey: .result)
            try container.encode(finishedAt.timeIntervalSince1970, forKey: .finishedAt)
            try container.encode(result.qualityIndex, forKey: .qualityIndex)
            try container.encode(result.quality.rawValue, forKey: .quality)
        }
    }
}

/// A task's stop request, shared between the caller and the task's thread.
final class StopFlag: Sendable {
    let value: Atomic<Bool>
    init(_ initial: Bool) { value = Atomic(initial) }
}
