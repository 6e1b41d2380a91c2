import Foundation
@testable import LiveStreaming
@testable import MediaEngine
import Testing
import TestSupport

/// The streamer pushing to a real nginx-rtmp, pulled back with ffmpeg.
struct LiveRTMPTests {
    @Test func pushCarriesTheCanvasAndBothTones() async throws {
        try await Heavy.run {
            let directory = try temporaryDirectory("live-push-rtmp")
            defer { try? FileManager.default.removeItem(at: directory) }
            let (audio, video) = (directory.appendingPathComponent("a.s16").path, directory.appendingPathComponent("v.rgb").path)
            let nginx = try NginxRTMP()
            try nginx.start()
            let rig = try LiveRig()
            defer { rig.stop() }
            rig.streamer.addOutput(id: "push", target: try LiveTarget(nginx.url(key: "room")))
            rig.start()
            try #require(nginx.waitForPublisher(key: "room", timeout: 10), "\(nginx.log)")
            try Pull.run(url: nginx.url(key: "room"), seconds: 6, audioTo: audio, videoTo: video, videoSize: LiveRigSize.pulled)
            try expectCanvasAndTones(audio: audio, video: video, seconds: 6, "rtmp push")
            let statistics = try #require(rig.streamer.statistics(output: "push"))
            print("rtmp push: \(statistics), feed late by at most \(rig.feed.maximumLateness)")
            #expect(statistics.status == .pushing && statistics.droppedPackets == 0 && statistics.reconnects == 0)
            #expect(statistics.videoKeyframes >= 3, "a key frame every 2 s")
            #expect(rig.statuses("push") == [502, 503, 505])
        }
    }

    /// Switching to a second key moves the stream there and ends the first key's publisher
    /// cleanly; switching to a closed port fails with a typed error and leaves the push alone.
    @Test func switchMovesThePushAndAFailedSwitchKeepsIt() async throws {
        try await Heavy.run {
            let directory = try temporaryDirectory("live-push-switch")
            defer { try? FileManager.default.removeItem(at: directory) }
            let (audio, video) = (directory.appendingPathComponent("a.s16").path, directory.appendingPathComponent("v.rgb").path)
            let nginx = try NginxRTMP()
            try nginx.start()
            let rig = try LiveRig()
            defer { rig.stop() }
            rig.streamer.addOutput(id: "push", target: try LiveTarget(nginx.url(key: "first")))
            rig.start()
            try #require(nginx.waitForPublisher(key: "first", timeout: 10), "\(nginx.log)")

            let switched = Recorded<Result<Void, LiveStreamError>>()
            let asked = rig.now
            rig.streamer.switchOutput(id: "push", to: try LiveTarget(nginx.url(key: "second"))) { switched.append($0) }
            #expect(await eventually(timeout: .seconds(3)) { !switched.all.isEmpty })
            let took = rig.now - asked
            #expect(nginx.waitForPublisher(key: "second", timeout: 3), "\(nginx.log)")
            print("switch: completed \(took) after asking; \(nginx.publishers(key: "first"))")
            if case .failure(let error) = switched.all.first { Issue.record("the switch failed: \(error)") }
            #expect(nginx.waitForPublishers(key: "first", timeout: 3) { $0.endedCleanly == 1 && $0.active == 0 },
                    "\(nginx.publishers(key: "first"))")

            let port = try closedPort()
            let failed = Recorded<Result<Void, LiveStreamError>>()
            rig.streamer.switchOutput(id: "push", to: try LiveTarget("rtmp://127.0.0.1:\(port)/live/secretThird")) { failed.append($0) }
            #expect(await eventually(timeout: .seconds(7)) { !failed.all.isEmpty })
            guard case .failure(let error) = failed.all.first else {
                Issue.record("switching to a closed port succeeded")
                return
            }
            print("failed switch: \(error)")
            #expect(error.kind == .connectFailed && error.code == 20203 && !error.description.contains("secretThird"))
            let malformed = #expect(throws: LiveStreamError.self) { try LiveTarget("rtmp://127.0.0.1:99999/live/secretThird") }
            #expect(malformed?.code == 20202 && malformed?.description.contains("secretThird") == false)

            // The push to the second key goes on.
            try Pull.run(url: nginx.url(key: "second"), seconds: 3, audioTo: audio, videoTo: video, videoSize: LiveRigSize.pulled)
            try expectCanvasAndTones(audio: audio, video: video, seconds: 3, "after the switches")
            #expect(nginx.publishers(key: "second").active == 1)
            #expect(rig.streamer.statistics(output: "push")?.status == .pushing)
        }
    }

    /// Disabling ends the publisher (cleanly); enabling publishes again.
    @Test func disablingEndsThePublisherAndEnablingResumesIt() async throws {
        try await Heavy.run {
            let directory = try temporaryDirectory("live-push-enable")
            defer { try? FileManager.default.removeItem(at: directory) }
            let (audio, video) = (directory.appendingPathComponent("a.s16").path, directory.appendingPathComponent("v.rgb").path)
            let nginx = try NginxRTMP()
            try nginx.start()
            let rig = try LiveRig()
            defer { rig.stop() }
            rig.streamer.addOutput(id: "push", target: try LiveTarget(nginx.url(key: "room")))
            rig.start()
            try #require(nginx.waitForPublisher(key: "room", timeout: 10), "\(nginx.log)")
            try #require(await eventually(timeout: .seconds(5)) { rig.events.all.contains { $0.event.status == .pushing } })

            rig.streamer.setEnabled(false, output: "push")
            #expect(nginx.waitForPublishers(key: "room", timeout: 4) { $0.endedCleanly == 1 && $0.active == 0 }, "\(nginx.publishers(key: "room"))")
            #expect(await eventually(timeout: .seconds(2)) { rig.events.all.last?.event.status == .initial })
            // A reconnect would come after a retry delay: only a stretch of time shows there is none.
            try await Task.sleep(for: .seconds(1))
            #expect(nginx.publishers(key: "room").published == 1, "no reconnecting while disabled")

            rig.streamer.setEnabled(true, output: "push")
            #expect(nginx.waitForPublishers(key: "room", timeout: 5) { $0.published == 2 && $0.active == 1 }, "\(nginx.publishers(key: "room"))")
            try Pull.run(url: nginx.url(key: "room"), seconds: 3, audioTo: audio, videoTo: video, videoSize: LiveRigSize.pulled)
            try expectCanvasAndTones(audio: audio, video: video, seconds: 3, "re-enabled")
            #expect(rig.statuses("push") == [502, 503, 505, 500, 502, 503, 505])
            #expect(rig.streamer.statistics(output: "push")?.reconnects == 1)
        }
    }

    /// A target nobody listens on: connecting, failed, retried with growing delays, while
    /// the producer keeps its rate and stop returns.
    @Test func unreachableTargetIsRetriedWithoutHoldingTheProducer() async throws {
        try await Heavy.run {
            let port = try closedPort()
            let rig = try LiveRig()
            rig.streamer.addOutput(id: "push", target: try LiveTarget("rtmp://127.0.0.1:\(port)/live/secretKey"))
            rig.start()
            // Four attempts, the last 1.75 s in: the retries are what this waits for.
            #expect(await eventually {
                rig.statuses("push").filter { $0 == 504 }.count >= 3 && (rig.streamer.statistics(output: "push")?.reconnects ?? 0) >= 3
            }, "\(rig.statuses("push"))")
            let ticks = rig.feed.videoTicks
            let fed = rig.now
            let stopping = rig.now
            rig.stop()
            let stopTook = rig.now - stopping
            let statuses = rig.statuses("push")
            let statistics = try #require(rig.streamer.statistics(output: "push"))
            print("unreachable: statuses \(statuses), \(statistics), \(ticks) frames in \(fed), feed late by at most "
                  + "\(rig.feed.maximumLateness), stop took \(stopTook)")
            #expect(Array(statuses.prefix(4)) == [502, 504, 502, 504])
            // Attempts at 0, 0.25, 0.75, 1.75 s (delays 0.25, 0.5, 1, 2 s).
            #expect(statuses.filter { $0 == 504 }.count >= 3 && statistics.reconnects >= 3, "\(statuses)")
            #expect(!statuses.contains(503) && statistics.packetsWritten == 0)
            let failure = try #require(rig.events("push").first { $0.event.status == .connectFailed }?.event.error)
            #expect(failure.code == 20203 && failure.message.contains("Connection refused") && !failure.description.contains("secretKey"),
                    "\(failure)")
            // 30 fps from the start, 5 frames' slack (85 of 90 in 3 s).
            let due = Int(fed / .seconds(1) * 30)
            #expect(ticks >= due - 5, "the producer kept 30 fps: \(ticks) frames in \(fed)")
        }
    }

    /// nginx gone for 5 s under a push and back on the same port: the push fails (506),
    /// retries, and resumes within 5 s of nginx's return.
    @Test func pushResumesAfterTheServerRestarts() async throws {
        try await Heavy.run {
            let directory = try temporaryDirectory("live-push-restart")
            defer { try? FileManager.default.removeItem(at: directory) }
            let (audio, video) = (directory.appendingPathComponent("a.s16").path, directory.appendingPathComponent("v.rgb").path)
            let nginx = try NginxRTMP()
            try nginx.start()
            let rig = try LiveRig()
            defer { rig.stop() }
            rig.streamer.addOutput(id: "push", target: try LiveTarget(nginx.url(key: "room")))
            rig.start()
            try #require(nginx.waitForPublisher(key: "room", timeout: 10), "\(nginx.log)")
            // Pushing, with media through nginx, before it goes.
            try #require(await eventually { rig.events.all.contains { $0.event.status == .pushing } }, "\(rig.statuses("push"))")
            nginx.stop()
            let down = rig.now
            #expect(await eventually(timeout: .seconds(5)) { rig.events.all.contains { $0.event.status == .pushFailed } }, "\(rig.statuses("push"))")
            // Long enough for the retries to back off as they would in a real outage.
            // The outage's length is the scenario: nginx stays away for 5 s.
            try await Task.sleep(for: .seconds(max(0, 5 - (rig.now - down) / .seconds(1))))
            try nginx.restart()
            let back = rig.now
            let resumed = await eventually(timeout: .seconds(5)) { rig.events.all.contains { $0.at > back && $0.event.status == .pushing } }
            let resumedAt = rig.events("push").first { $0.at > back && $0.event.status == .pushing }?.at
            print("restart: statuses \(rig.statuses("push")), nginx back at \(back), pushing again at \(resumedAt.map { "\($0)" } ?? "never")")
            #expect(resumed, "\(rig.statuses("push"))")
            let statuses = rig.statuses("push")
            #expect(Array(statuses.prefix(4)) == [502, 503, 505, 506] && statuses.suffix(2) == [503, 505])
            #expect((rig.streamer.statistics(output: "push")?.reconnects ?? 0) >= 2)
            try #require(nginx.waitForPublisher(key: "room", timeout: 3), "\(nginx.log)")
            try Pull.run(url: nginx.url(key: "room"), seconds: 3, audioTo: audio, videoTo: video, videoSize: LiveRigSize.pulled)
            try expectCanvasAndTones(audio: audio, video: video, seconds: 3, "after the restart")
        }
    }
}
