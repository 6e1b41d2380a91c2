import Foundation
@testable import LiveStreaming
@testable import MediaEngine
import Testing
import TestSupport

/// The streamer pushing live WebM (VP8/Opus) to a real icecast2, pulled back with ffmpeg.
struct LiveIcecastTests {
    @Test func pushCarriesTheCanvasAndBothTones() async throws {
        try await Heavy.run {
            let directory = try temporaryDirectory("live-push-icecast")
            defer { try? FileManager.default.removeItem(at: directory) }
            let (audio, video) = (directory.appendingPathComponent("a.s16").path, directory.appendingPathComponent("v.rgb").path)
            let icecast = try Icecast()
            try icecast.start()
            let rig = try LiveRig()
            defer { rig.stop() }
            let target = try LiveTarget(icecast.sourceURL(mount: "room.webm"))
            #expect(!target.description.contains(icecast.password))
            rig.streamer.addOutput(id: "push", target: target)
            rig.start()
            try #require(icecast.waitForMount("room.webm", timeout: 10), "\(icecast.log)\n\(rig.statuses("push"))")
            try Pull.run(url: icecast.listenURL(mount: "room.webm"), seconds: 6, audioTo: audio, videoTo: video,
                         videoSize: LiveRigSize.pulled)
            try expectCanvasAndTones(audio: audio, video: video, seconds: 6, "icecast push")
            let statistics = try #require(rig.streamer.statistics(output: "push"))
            print("icecast push: \(statistics), feed late by at most \(rig.feed.maximumLateness)")
            #expect(statistics.status == .pushing && statistics.droppedPackets == 0 && statistics.reconnects == 0)
            #expect(rig.statuses("push") == [502, 503, 505])
            let errors = rig.events("push").compactMap(\.event.error)
            #expect(errors.isEmpty && !rig.events("push").contains { "\($0.event)".contains(icecast.password) })
        }
    }

    /// A wrong password is refused at connect: 504 with a typed error that does not show it.
    @Test func wrongPasswordFailsToConnect() async throws {
        try await Heavy.run {
            let icecast = try Icecast()
            try icecast.start()
            let rig = try LiveRig()
            defer { rig.stop() }
            rig.streamer.addOutput(id: "push", target: try LiveTarget("icecast://source:notThePassword@127.0.0.1:\(icecast.port)/room.webm"))
            rig.start()
            #expect(await eventually(timeout: .seconds(5)) { rig.events.all.contains { $0.event.status == .connectFailed } })
            let failure = try #require(rig.events("push").first { $0.event.status == .connectFailed }?.event.error)
            print("wrong password: \(failure)")
            #expect(failure.code == 20203 && !failure.description.contains("notThePassword"))
        }
    }
}
