@testable import MediaEngine
@testable import MediaRouting
@testable import MediaSimulation
import Testing
import TestSupport

/// Legs spread over two forwarding workers' routers (in virtual time, handing each other
/// packets and messages in order): a meeting forwards exactly as on one, with each
/// participant's datagrams read by a worker that does not own its leg.
@Suite struct ForwardingWorkers {
    struct Figures: Equatable {
        var frames: [String: Int] = [:]
        var lost = 0
        var decodeErrors = 0
        var levels: [String: Double] = [:]
    }

    /// Three video actors and an audience member for four seconds on `workers` workers.
    static func meeting(workers: Int) throws -> (Figures, MeetingCoreHarness) {
        let meeting = MeetingCoreHarness(workers: workers)
        let tones = ["alice": 440.0, "bob": 550.0, "carol": 660.0]
        var people = try ["alice", "bob", "carol"].map { name in
            try meeting.join(name, frequency: tones[name]!, video: true, temporalLayers: 3)
        }
        people.append(try meeting.join("dave", frequency: 770, publishing: false))
        try meeting.run(until: .seconds(4))
        var figures = Figures()
        for viewer in people {
            for sender in people where sender !== viewer && sender.name != "dave" {
                figures.frames["\(sender.name)→\(viewer.name)"] = viewer.framesDecoded[sender.name] ?? 0
                figures.levels["\(sender.name)→\(viewer.name)"] = viewer.level(of: tones[sender.name]!, from: sender.name)
                for (id, name) in viewer.videoFrom where name == sender.name {
                    figures.lost += viewer.core.statistics(of: id)?.packetsLost ?? 0
                    figures.decodeErrors += viewer.core.statistics(of: id)?.decodeErrors ?? 0
                }
                for (id, name) in viewer.audioFrom where name == sender.name {
                    figures.lost += viewer.core.statistics(of: id)?.packetsLost ?? 0
                }
            }
        }
        return (figures, meeting)
    }

    @Test func twoWorkersForwardAMeetingAsOneDoes() async throws {
        try await Heavy.runAlone {
            let (one, _) = try Self.meeting(workers: 1)
            let (two, meeting) = try Self.meeting(workers: 2)
            for (pair, frames) in two.frames {
                #expect(frames >= 100, "\(pair): \(frames) frames decoded on two workers")
                #expect(abs(frames - (one.frames[pair] ?? 0)) <= 3, "\(pair): \(frames) frames on two workers, \(one.frames[pair] ?? 0) on one")
            }
            for (pair, level) in two.levels {
                #expect(level > 0.25, "\(pair) heard at \(level)")
            }
            #expect(two.lost == 0 && two.decodeErrors == 0 && one.lost == 0, "lost \(two.lost), decode errors \(two.decodeErrors)")
            // Work really crossed: datagrams read by the worker that does not own their leg,
            // and publishers' packets handed once to the other worker's subscribers.
            let counters = meeting.routers.map(\.counters)
            print("two workers: frames \(two.frames.sorted { $0.key < $1.key }), handed off \(counters.map { ($0.datagramsHandedOff, $0.packetsHandedOff) })")
            #expect(counters.allSatisfy { $0.datagramsHandedOff > 100 && $0.packetsHandedOff > 100 }, "\(counters)")
            #expect(counters.allSatisfy { $0.strangerDatagrams == 0 })
            // Each leg exists on its owner only; each worker forwarded its own subscribers' packets.
            #expect(meeting.routers.map(\.legCount) == [2, 2])
            #expect(counters.allSatisfy { $0.packetsForwarded > 500 })
        }
    }

    @Test func aPublisherOnTheOtherWorkerThatLeavesEndsItsStreamsAndNothingStaysBehind() async throws {
        try await Heavy.run {
            let meeting = MeetingCoreHarness(workers: 2)
            let alice = try meeting.join("alice", frequency: 440, video: true)
            let bob = try meeting.join("bob", frequency: 550, video: true)
            try meeting.run(until: .seconds(2))
            #expect((bob.framesDecoded["alice"] ?? 0) > 30 && (alice.framesDecoded["bob"] ?? 0) > 30)
            meeting.leave(alice)
            try meeting.run(until: .seconds(3))
            meeting.leave(bob)
            for router in meeting.routers {
                #expect(router.tableSizes == (0, 0, 0), "\(router.worker): \(router.tableSizes)")
                #expect(router.remoteLegs.isEmpty && router.ufragWorker.isEmpty)
            }
        }
    }
}
