import Foundation
import MediaEngine
@testable import MediaRouting
@testable import Signaling
import Testing
import TestSupport

@Suite struct NetDetectManagers {
    @Test func tasksRunAtOnceAStoppedOneSaysSoAndTheLogHoldsEveryTask() async throws {
        let echo = try EchoResponder(bindTo: SocketAddress(host: "127.0.0.1", port: 0))
        try echo.start()
        defer { echo.stop() }
        let log = FileManager.default.temporaryDirectory.appendingPathComponent("netdetect-\(UInt32.random(in: 0 ... .max)).log").path
        defer { try? FileManager.default.removeItem(atPath: log) }
        let manager = NetDetectManager(logFilePath: log)
        #expect(manager.logFilePath == log)
        let target = echo.localAddress.description

        async let quick = manager.detect(kind: .audio, target: target, count: 20, interval: .milliseconds(5))
        async let video = manager.detect(kind: .video720p, target: target, count: 40)
        let (stopped, long) = await withCheckedContinuation { continuation in
            let id = manager.startDetectTask(kind: .audio, target: target, count: 10_000, interval: .milliseconds(5)) { result in
                continuation.resume(returning: (result, 0))
            }
            // Stopped from a thread of its own: a Task could wait for a busy cooperative pool
            // until all 10,000 probes (50 s) had gone. Stopped under way: once the responder
            // has had more probes than the two short tasks send (20 + 40).
            Thread.detachNewThread {
                eventuallyBlocking { echo.counters.answered + echo.counters.rateLimited >= 100 }
                try? manager.stopDetectTask(id)
            }
        }
        _ = long
        let first = await quick
        let second = await video
        #expect(first.error == nil && first.lossRate == 0 && first.expandInfo.received == 20)
        #expect(second.error == nil && second.expandInfo.probeSize == 1_000 && second.expandInfo.received == 40)
        #expect(stopped.error?.code == .stopped, "\(stopped.error?.message ?? "no error")")
        #expect(stopped.expandInfo.sent < 10_000)
        #expect(Set([first.taskId, second.taskId, stopped.taskId]).count == 3, "each task has its own ID")

        let lines = try String(contentsOfFile: log, encoding: .utf8).split(separator: "\n")
        #expect(lines.count == 3, "one line per task")
        let ids = try lines.map { line -> UInt64 in
            let object = try JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any]
            let result = object?["result"] as? [String: Any]
            return (result?["taskId"] as? NSNumber)?.uint64Value ?? 0
        }
        #expect(Set(ids) == Set([first.taskId, second.taskId, stopped.taskId]))
        #expect(lines.contains { $0.contains("\"stopped\"") }, "the stopped task's error is logged")
        #expect(manager.runningTasks.isEmpty)
    }

    @Test func stoppingAnUnknownTaskIsAnError() {
        let manager = NetDetectManager()
        #expect(throws: NetDetectError.self) { try manager.stopDetectTask(12_345) }
    }
}

/// NIM's net status per participant, from each second's receive statistics.
@Suite struct NetStatusPerParticipant {
    @Test func eachParticipantGetsItsOwnLevelFromItsOwnLoss() {
        func stream(_ participant: String, received: Int, lost: Int) -> InboundRTPStreamStatistics {
            var statistics = InboundRTPStreamStatistics(kind: .audio)
            statistics.participant = participant
            statistics.packetsReceived = received
            statistics.packetsLost = lost
            return statistics
        }
        let meter = NetStatusMeter()
        _ = meter.update(MediaReceiver.Statistics(streams: [stream("", received: 0, lost: 0), stream("bob", received: 0, lost: 0)],
                                                  roundTripTime: 0.04))
        let second = meter.update(MediaReceiver.Statistics(streams: [stream("", received: 50, lost: 0), stream("bob", received: 35, lost: 15)],
                                                           roundTripTime: 0.04))
        #expect(second.map(\.0) == ["", "bob"])
        #expect(second[0].1 == .veryGood && second[0].2 == 0)
        #expect(second[1].2 == 30 && second[1].1 != .veryGood, "30 % loss for bob: \(second[1].1)")
    }
}
