import Foundation
import MediaEngine
@testable import MediaRouting
@testable import MediaServer
@testable import MediaSimulation
import Signaling
import Synchronization
import Testing
import TestSupport

/// Whole meetings: `NetCallManager`s through a real server (signaling and its forwarding
/// server) on loopback, with media. Each runs alone: three or four real-time sessions and
/// a server take the machine, and real-time tests beside them would miss their deadlines.
@Suite(.serialized) struct MeetingFlows {
    /// One participant: a manager, what it heard of each participant, and its events.
    final class Member: Sendable {
        struct Seen {
            var heard: [String: [Int16]] = [:]
            var mix: [Int16] = []
            var pictures: [String: Int] = [:]
            /// The first pictures of each user (up to 40).
            var firstPictures: [String: [VideoFrame]] = [:]
            var events: [NetCallEvent] = []
            /// Each user's last picture's size, when it came, and the longest wait between two
            /// of its pictures since `resetGaps`.
            var lastSize: [String: (width: Int, height: Int)] = [:]
            var lastPictureAt: [String: ContinuousClock.Instant] = [:]
            var longestGap: [String: Duration] = [:]
        }

        final class Box: Sendable {
            let seen = Locked(Seen())
        }

        let manager: NetCallManager
        let account: String
        let box = Box()

        convenience init(server: TestServer, account: String, audio: String, video: String? = nil, videoBitrate: Int = 300_000,
                         simulcastLayers: Int = 3, route: (@Sendable ([MediaCandidate]) -> [MediaCandidate])? = nil) async throws {
            try await self.init(url: server.url, token: try await server.token(account), account: account, audio: audio, video: video,
                                videoBitrate: videoBitrate, simulcastLayers: simulcastLayers, route: route)
        }

        /// A participant logged in at `url` (a server, or a node of a cluster).
        init(url: String, token: String, account: String, audio: String, video: String? = nil, videoBitrate: Int = 300_000,
             simulcastLayers: Int = 3, route: (@Sendable ([MediaCandidate]) -> [MediaCandidate])? = nil) async throws {
            self.account = account
            let box = self.box
            let media: MediaSessionFactory = { _, _ in
                var configuration = MediaSession.Configuration(audio: try MediaSources.audio(audio),
                                                               video: try video.map { try MediaSources.video($0) })
                configuration.host = "127.0.0.1"
                configuration.videoBitrate = videoBitrate
                configuration.participantAudio = { user, pcm in box.seen.withLock { $0.heard[user, default: []].append(contentsOf: pcm) } }
                configuration.remoteAudio = { pcm in box.seen.withLock { $0.mix.append(contentsOf: pcm) } }
                configuration.remoteVideo = { user, frame in
                    box.seen.withLock {
                        $0.pictures[user, default: 0] += 1
                        if $0.firstPictures[user, default: []].count < 40 { $0.firstPictures[user, default: []].append(frame) }
                        let now = ContinuousClock.now
                        if let last = $0.lastPictureAt[user] { $0.longestGap[user] = max($0.longestGap[user] ?? .zero, now - last) }
                        $0.lastPictureAt[user] = now
                        $0.lastSize[user] = (frame.width, frame.height)
                    }
                }
                return configuration
            }
            var settings = NetCallManager.Configuration(server: url, token: token, media: media)
            settings.meetingMediaRoute = route
            settings.meetingSimulcastLayers = simulcastLayers
            manager = NetCallManager(configuration: settings)
            try await manager.login()
            // The streams, not the manager: an endpoint a test lets go of frees its manager.
            let events = manager.events, mediaUpdates = manager.mediaUpdates
            Task { [box] in
                for await event in events { box.seen.withLock { $0.events.append(event) } }
            }
            Task { for await _ in mediaUpdates {} }
        }

        /// The first event that matches, once one came; nil after `timeout` seconds.
        func wait(timeout: Double = 10, for match: (NetCallEvent) -> Bool) async -> NetCallEvent? {
            var found: NetCallEvent?
            await eventually(timeout: .seconds(timeout)) {
                found = box.seen.withLock { $0.events.first(where: match) }
                return found != nil
            }
            return found
        }

        /// A copy sharing no storage with what the session threads go on filling.
        var snapshot: Seen {
            box.seen.withLock { seen in
                Seen(heard: seen.heard.deeplyDetached(), mix: seen.mix.detached, pictures: seen.pictures.detached,
                     firstPictures: seen.firstPictures.deeplyDetached(), events: seen.events.detached)
            }
        }

        /// Samples heard of `user` so far.
        func heardCount(_ user: String) -> Int { box.seen.withLock { $0.heard[user]?.count ?? 0 } }

        /// Samples played (the mix of everyone heard) so far.
        var mixCount: Int { box.seen.withLock { $0.mix.count } }

        /// The size of `user`'s last picture.
        func lastSize(_ user: String) -> (width: Int, height: Int)? { box.seen.withLock { $0.lastSize[user] } }

        /// The longest wait between two pictures of `user` since the last call (and the time
        /// since the last one), and starts counting again.
        func takeLongestGap(_ user: String) -> Duration {
            box.seen.withLock { seen in
                let since = seen.lastPictureAt[user].map { ContinuousClock.now - $0 } ?? .seconds(1_000)
                defer { seen.longestGap[user] = .zero }
                return max(seen.longestGap[user] ?? .zero, since)
            }
        }

        /// Pictures seen of `user` so far.
        func pictureCount(_ user: String) -> Int { box.seen.withLock { $0.pictures[user] ?? 0 } }

        /// The level of `frequency` in what was heard of `user` after sample `start` (from
        /// 100 ms later, at most the last second: the steady state, not the start-up).
        func level(of frequency: Double, from user: String, after start: Int = 0) -> Double {
            let samples = box.seen.withLock { ($0.heard[user] ?? []).detached }
            guard samples.count > start + 9_600 else { return 0 }
            let from = max(start + 4_800, samples.count - 48_000)
            return samples[from...].withUnsafeBufferPointer { AudioQuality.toneLevel($0, frequency: frequency) }
        }
    }

    static func connected(_ event: NetCallEvent) -> Bool {
        if case .meetingStatus(_, .connected) = event { return true }
        return false
    }

    @Test func threeActorsAndAnAudienceHearWhomTheyShouldAndPerUserMuteStopsForwarding() async throws {
        try await Heavy.runAlone {
            let server = try await TestServer.start()
            defer { Task { await server.server.shutdown() } }
            let tones = ["alice": 440.0, "bob": 550.0, "carol": 660.0]
            let alice = try await Member(server: server, account: "alice", audio: "sine:440")
            let bob = try await Member(server: server, account: "bob", audio: "sine:550")
            let carol = try await Member(server: server, account: "carol", audio: "sine:660")
            let dave = try await Member(server: server, account: "dave", audio: "sine:770")

            try await alice.manager.reserveMeeting(name: "standup")
            await #expect(throws: SignalingError.self) { try await bob.manager.reserveMeeting(name: "standup") }
            let (id, before) = try await alice.manager.joinMeeting(name: "standup")
            #expect(before.isEmpty)
            _ = try await bob.manager.joinMeeting(name: "standup")
            _ = try await carol.manager.joinMeeting(name: "standup")
            let (_, seen) = try await dave.manager.joinMeeting(name: "standup", role: .audience)
            #expect(seen.map(\.account) == ["alice", "bob", "carol"])
            for member in [alice, bob, carol, dave] { #expect(await member.wait(for: Self.connected) != nil, "\(member.account) connected") }
            // Two seconds of each speaker heard and played: the levels below look at the last.
            #expect(await eventually {
                [alice, bob, carol, dave].allSatisfy { member in
                    member.mixCount >= 96_000 && tones.keys.allSatisfy { $0 == member.account || member.heardCount($0) >= 96_000 }
                }
            }, "everyone hears the actors")

            // Each actor hears the other two and not itself; the audience hears all three.
            for member in [alice, bob, carol, dave] {
                let speakers = tones.keys.filter { $0 != member.account }.sorted()
                let heard = member.snapshot.heard.filter { !$0.value.isEmpty }.keys.sorted()
                #expect(heard == speakers, "\(member.account) hears \(heard)")
                for speaker in speakers {
                    #expect(member.level(of: tones[speaker]!, from: speaker) > 0.2, "\(member.account) hears \(speaker)")
                }
                if let own = tones[member.account] {
                    let mix = member.snapshot.mix
                    let level = mix.suffix(48_000).withUnsafeBufferPointer { AudioQuality.toneLevel($0, frequency: own) }
                    #expect(level < 0.01, "\(member.account)'s own tone is not in its playback: \(level)")
                }
            }
            let forwarding = try #require(server.server.forwardingServer)
            #expect(forwarding.statistics.router.audienceMediaDropped == 0, "the server received no media from the audience")

            // alice mutes bob's audio: gone for her only, and the server stops forwarding it.
            // Bob's packets, 50 a second, are the clock: once the server has skipped 25 of
            // them for alice, what was on its way to her has arrived; while it skips 100 more
            // (2 s of bob), she must hear almost nothing of him.
            let skippedBefore = forwarding.statistics.router.mutedPacketsSkipped
            func skipped() -> Int { forwarding.statistics.router.mutedPacketsSkipped - skippedBefore }
            try await alice.manager.setAudioMute(true, forUser: "bob")
            #expect(await eventually { skipped() >= 25 }, "the server skips bob's packets for alice")
            let aliceHeardBob = alice.heardCount("bob")
            let carolHeardBob = carol.heardCount("bob")
            #expect(await eventually { skipped() >= 125 }, "the server skipped bob's packets for alice")
            #expect(alice.heardCount("bob") - aliceHeardBob < 4_800, "bob's stream to alice went quiet")
            #expect(carol.level(of: 550, from: "bob", after: carolHeardBob) > 0.2, "carol still hears bob")
            #expect(skipped() >= 80, "the server skipped bob's packets for alice")
            await #expect(throws: SignalingError.self) { try await alice.manager.setAudioMute(true, forUser: "nobody") }

            // dave becomes an actor: the others hear him.
            let daveStart = bob.heardCount("dave")
            try await dave.manager.setMeetingRole(.actor)
            #expect(await eventually { bob.heardCount("dave") >= daveStart + 96_000 }, "bob hears dave")
            #expect(bob.level(of: 770, from: "dave", after: daveStart) > 0.2, "dave is heard once an actor")

            // Joins and leaves arrive in order; the name is free after the last one leaves.
            let joined = alice.snapshot.events.compactMap { event -> String? in
                if case .userJoined(_, let participant) = event { participant.account } else { nil }
            }
            #expect(joined == ["bob", "carol", "dave"])
            try await bob.manager.leaveMeeting()
            try await carol.manager.leaveMeeting()
            let left = await alice.wait { event in
                if case .userLeft(_, "carol", .left) = event { true } else { false }
            }
            #expect(left != nil)
            let order = alice.snapshot.events.compactMap { event -> String? in
                if case .userLeft(_, let user, _) = event { user } else { nil }
            }
            #expect(order == ["bob", "carol"])
            await #expect(throws: SignalingError.self) { try await carol.manager.reserveMeeting(name: "standup") }
            try await dave.manager.leaveMeeting()
            try await alice.manager.leaveMeeting()
            let record = await alice.wait { if case .meetingRecord = $0 { true } else { false } }
            guard case .meetingRecord(let stored)? = record else {
                Issue.record("no meeting record")
                return
            }
            #expect(stored.callID == id && Set(stored.attendance.map(\.account)) == ["alice", "bob", "carol", "dave"])
            #expect(try await server.store.meetingRecords(of: "dave", limit: 5).first?.attendance.map(\.role).contains(.audience) == true)
            try await carol.manager.reserveMeeting(name: "standup")
            for member in [alice, bob, carol, dave] { await member.manager.logout() }
        }
    }

    /// Four video actors and four audience members on one forwarding thread, and on two
    /// (legs spread over both: what one's socket reads for the other's legs, and
    /// publishers' packets for the other's subscribers, cross): every pair's pictures at
    /// the same quality, nothing lost.
    @Test(arguments: [1, 2]) func everyParticipantSeesEveryOtherActorAtHighPSNR(threads: Int) async throws {
        try await Heavy.runAlone {
            let server = try await TestServer.start { $0.mediaThreads = threads }
            defer { Task { await server.server.shutdown() } }
            let actors = ["alice", "bob", "carol", "dave"]
            let audience = ["erin", "frank", "grace", "heidi"]
            var members: [Member] = []
            for (index, name) in actors.enumerated() {
                members.append(try await Member(server: server, account: name, audio: "sine:\(440 + 110 * index)", video: "testsrc:320x240@15"))
            }
            // The audience sends nothing (its video paused, its media dropped unread if sent).
            for name in audience { members.append(try await Member(server: server, account: name, audio: "silence", video: "testsrc:320x240@15")) }
            try await members[0].manager.reserveMeeting(name: "video")
            for member in members {
                _ = try await member.manager.joinMeeting(name: "video", role: audience.contains(member.account) ? .audience : .actor,
                                                         type: .video)
            }
            for member in members { #expect(await member.wait(for: Self.connected) != nil) }
            // The first 40 pictures of each sender are kept: wait for them all.
            #expect(await eventually(timeout: .seconds(30)) {
                members.allSatisfy { viewer in actors.allSatisfy { $0 == viewer.account || viewer.pictureCount($0) >= 40 } }
            }, "everyone sees the actors")
            var pattern = TestPattern(width: 320, height: 240, frameRate: 15)
            let sources = (0..<100).map { _ in pattern.nextFrame() }
            var lowest = Double.infinity
            for viewer in members {
                for sender in actors where sender != viewer.account {
                    let pictures = viewer.snapshot.firstPictures[sender] ?? []
                    #expect(pictures.count >= 30, "\(viewer.account) got \(pictures.count) pictures of \(sender)")
                    // A simulcast layer's pictures are compared with the source at their size.
                    let psnrs = pictures.map { picture in sources.map { VideoQuality.psnr($0.scaled(toMatch: picture), picture) }.max() ?? 0 }
                    let mean = psnrs.reduce(0, +) / Double(max(1, psnrs.count))
                    #expect(mean >= 30, "\(viewer.account) sees \(sender) at \(mean) dB")
                    lowest = min(lowest, mean)
                }
                // Every participant's streams are set up; the actors' carry media.
                let streams = try #require(await viewer.manager.currentMeetingSession).receiveStatistics.streams
                    .filter { actors.contains($0.participant) }
                #expect(streams.count == (actors.contains(viewer.account) ? 6 : 8), "\(viewer.account) receives \(streams.count) actors' streams")
                for stream in streams {
                    #expect(stream.packetsLost == 0 && stream.packetsReceived > 50,
                            "\(viewer.account) lost \(stream.packetsLost) of \(stream.packetsReceived) from \(stream.participant)")
                }
            }
            print("meeting video, \(threads) threads: 4 actors, 4 audience, lowest mean PSNR of a pair \(lowest) dB")
            let statistics = try #require(server.server.forwardingStatistics)
            #expect(statistics.workerLegs.sorted() == (threads == 1 ? [8] : [4, 4]), "legs per thread: \(statistics.workerLegs)")
            if threads > 1 {
                #expect(statistics.router.packetsHandedOff > 100 && statistics.handoffsDropped == 0,
                        "\(statistics.router.packetsHandedOff) packets handed between threads, \(statistics.handoffsDropped) dropped")
                // Each participant was given its leg's worker's port: no datagram needed handing on.
                #expect(statistics.router.datagramsHandedOff == 0, "\(statistics.router.datagramsHandedOff) datagrams read by the wrong thread")
            }
            // /metrics shows each worker's legs and CPU time.
            let samples = MetricSample.parse(try await server.scrapeMetrics().1)
            for worker in 0..<threads {
                #expect(samples.value("mediaengine_media_worker_legs", ["worker": String(worker)]) == Double(8 / threads))
                #expect((samples.value("mediaengine_media_worker_cpu_seconds_total", ["worker": String(worker)]) ?? 0) > 0)
            }
            for member in members { await member.manager.logout() }
        }
    }

    /// A forwarding thread held still (as a system call that never returns would hold it):
    /// the other thread's participants go on hearing each other, nothing reaches the held
    /// thread's participants meanwhile, and once it goes on they hear everyone again.
    @Test func aStalledForwardingThreadHoldsUpOnlyItsOwnLegs() async throws {
        try await Heavy.runAlone {
            let server = try await TestServer.start { $0.mediaThreads = 2 }
            defer { Task { await server.server.shutdown() } }
            let names = ["alice", "bob", "carol", "dave"]
            var members: [Member] = []
            for (index, name) in names.enumerated() {
                members.append(try await Member(server: server, account: name, audio: "sine:\(440 + 110 * index)"))
            }
            try await members[0].manager.reserveMeeting(name: "stall")
            for member in members { _ = try await member.manager.joinMeeting(name: "stall") }
            for member in members { #expect(await member.wait(for: Self.connected) != nil) }
            let forwarding = try #require(server.server.forwardingServer)
            // Which thread owns whose leg.
            var owner: [String: Int] = [:]
            #expect(await eventually {
                for leg in forwarding.statistics.legStatistics { owner[leg.account] = ForwardingServer.worker(forLeg: leg.id, of: 2) }
                return owner.count == 4
            }, "the legs: \(forwarding.statistics.legStatistics.map(\.account))")
            #expect(owner.values.sorted() == [0, 0, 1, 1], "\(owner)")
            /// Audio packets `member` received of each other participant.
            func received(_ member: Member) async -> [String: (received: Int, lost: Int)] {
                let streams = await member.manager.currentMeetingSession?.receiveStatistics.streams ?? []
                return Dictionary(streams.filter { $0.kind == .audio }.map { ($0.participant, ($0.packetsReceived, $0.packetsLost)) }) { a, _ in a }
            }
            func all() async -> [String: [String: (received: Int, lost: Int)]] {
                var result: [String: [String: (received: Int, lost: Int)]] = [:]
                for member in members { result[member.account] = await received(member) }
                return result
            }
            #expect(await eventually { await all().values.allSatisfy { $0.count == 3 && $0.values.allSatisfy { $0.received >= 50 } } },
                    "everyone hears everyone")

            let held = owner["alice"] ?? 0
            let hold = forwarding.hold(worker: held)
            #expect(await eventually { hold.held.load(ordering: .acquiring) })
            // What was under way when it stopped has arrived 200 ms later; then two seconds.
            try await Task.sleep(for: .milliseconds(200))
            let before = await all()
            try await Task.sleep(for: .seconds(2))
            let during = await all()
            hold.release()
            for member in members {
                for other in names where other != member.account {
                    let got = (during[member.account]?[other]?.received ?? 0) - (before[member.account]?[other]?.received ?? 0)
                    if owner[member.account] == held {
                        #expect(got == 0, "\(member.account), on the held thread, received \(got) packets of \(other)")
                    } else if owner[other] != held {
                        // 100 sent in the two seconds.
                        #expect(got >= 90 && during[member.account]?[other]?.lost == 0,
                                "\(member.account) received \(got) packets of \(other) while the other thread was held, lost \(during[member.account]?[other]?.lost ?? -1)")
                    }
                }
            }
            // Once it goes on, its participants hear everyone again, and everyone hears them.
            let after = await all()
            #expect(await eventually {
                let now = await all()
                return members.allSatisfy { member in
                    names.allSatisfy { other in
                        other == member.account || (now[member.account]?[other]?.received ?? 0) - (after[member.account]?[other]?.received ?? 0) >= 50
                    }
                }
            }, "everyone hears everyone again")
            print("stalled forwarding thread: \(forwarding.statistics.handoffsDropped) handoffs dropped, legs per thread \(forwarding.statistics.workerLegs)")
            for member in members { await member.manager.logout() }
        }
    }

    @Test func aParticipantBehindALossyDownlinkConcealsItsLossAndTheOthersSeeNone() async throws {
        try await Heavy.runAlone {
            let server = try await TestServer.start()
            defer { Task { await server.server.shutdown() } }
            let media = try #require(server.server.echoAddress)
            var lossy = ImpairmentSettings()
            lossy.lossPercent = 10
            lossy.seed = 5
            let proxy = try UDPImpairmentProxy(listen: SocketAddress(host: "127.0.0.1", port: 0), forward: media,
                                               upstream: ImpairmentSettings(), downstream: lossy)
            try proxy.start()
            defer { proxy.stop() }
            let through = MediaCandidate(host: "127.0.0.1", port: proxy.localAddress.port)
            let alice = try await Member(server: server, account: "alice", audio: "sine:440")
            let bob = try await Member(server: server, account: "bob", audio: "sine:550")
            let carol = try await Member(server: server, account: "carol", audio: "sine:660", route: { _ in [through] })
            try await alice.manager.reserveMeeting(name: "lossy")
            for member in [alice, bob, carol] { _ = try await member.manager.joinMeeting(name: "lossy") }
            for member in [alice, bob, carol] { #expect(await member.wait(for: Self.connected) != nil) }
            // Eight seconds of each other's audio, 50 packets a second, the lost ones counted.
            #expect(await eventually(timeout: .seconds(30)) {
                for member in [alice, bob, carol] {
                    guard let session = await member.manager.currentMeetingSession else { return false }
                    let streams = session.receiveStatistics.streams.filter { $0.kind == .audio }
                    guard streams.count == 2, streams.allSatisfy({ $0.packetsReceived + $0.packetsLost >= 400 }) else { return false }
                }
                return true
            }, "8 s of audio at each participant")

            let loss = proxy.statistics.downstream.lossPercent
            #expect(loss > 5, "the proxy lost \(loss) % downstream")
            let carolStreams = try #require(await carol.manager.currentMeetingSession).receiveStatistics.streams.filter { $0.kind == .audio }
            #expect(carolStreams.count == 2)
            for stream in carolStreams {
                // Against the stream's own loss: at 10 % over ~800 packets a stream's share
                // varies by about a point either side of the proxy's over all datagrams.
                let concealed = Double(stream.concealedSamples) * 100 / Double(max(1, stream.totalSamplesReceived))
                let lost = Double(stream.packetsLost) * 100 / Double(max(1, stream.packetsLost + stream.packetsReceived))
                #expect(stream.packetsLost > 0)
                #expect(concealed <= lost + 2, "carol concealed \(concealed) % of \(stream.participant) at \(lost) % loss")
                print("meeting loss: carol <- \(stream.participant): concealed \(String(format: "%.1f", concealed)) % at "
                    + "\(String(format: "%.1f", lost)) % loss (the proxy's: \(String(format: "%.1f", loss)) %)")
            }
            for member in [alice, bob] {
                let streams = try #require(await member.manager.currentMeetingSession).receiveStatistics.streams
                for stream in streams {
                    #expect(stream.packetsLost == 0, "\(member.account) lost \(stream.packetsLost) of \(stream.participant)")
                    #expect(stream.packetsReceived > 300)
                }
            }

            // The server's /metrics shows the meeting, and carol's downlink loss as her
            // reports gave it; nobody else's.
            let (status, body) = try await server.scrapeMetrics()
            #expect(status == 200)
            let samples = MetricSample.parse(body)
            #expect(samples.value("mediaengine_meetings") == 1)
            #expect(samples.value("mediaengine_meeting_participants") == 3)
            #expect(samples.value("mediaengine_media_legs") == 3)
            #expect(samples.value("mediaengine_signaling_connections") == 3)
            #expect((samples.value("mediaengine_media_packets_forwarded_total") ?? 0) > 1_000)
            #expect((samples.value("mediaengine_media_bytes_forwarded_total") ?? 0) > 50_000)
            #expect(samples.value("mediaengine_srtp_failures_total") == 0)
            let carolLost = try #require(samples.value("mediaengine_leg_packets_lost", ["user": "carol", "direction": "downlink"]))
            #expect(carolLost > 20, "carol's reports counted \(carolLost) packets lost")
            for member in ["alice", "bob"] {
                #expect(samples.value("mediaengine_leg_packets_lost", ["user": member, "direction": "downlink"]) == 0)
                #expect(samples.value("mediaengine_leg_loss_ratio", ["user": member, "direction": "uplink"]) == 0)
            }
            print("meeting metrics: carol's downlink lost \(Int(carolLost)) packets by her reports")
            for member in [alice, bob, carol] { await member.manager.logout() }
        }
    }

    /// Our clients ask for their videos' retransmissions on RTX; carol's downlink loses 5 %.
    @Test func aVideoParticipantBehindALossyDownlinkGetsItsLostVideoBackOnRTX() async throws {
        try await Heavy.run {
            let server = try await TestServer.start()
            defer { Task { await server.server.shutdown() } }
            let media = try #require(server.server.echoAddress)
            var lossy = ImpairmentSettings()
            lossy.lossPercent = 5
            lossy.seed = 11
            let proxy = try UDPImpairmentProxy(listen: SocketAddress(host: "127.0.0.1", port: 0), forward: media,
                                               upstream: ImpairmentSettings(), downstream: lossy)
            try proxy.start()
            defer { proxy.stop() }
            let through = MediaCandidate(host: "127.0.0.1", port: proxy.localAddress.port)
            // One stream each: this is about RTX; a simulcast switch's keyframe makes carol give up
            // losses still pending (as a pause's does), which the virtual-time tests cover.
            let alice = try await Member(server: server, account: "alice", audio: "sine:440", video: "testsrc:320x240@30", simulcastLayers: 1)
            let carol = try await Member(server: server, account: "carol", audio: "sine:660", video: "testsrc:320x240@30", simulcastLayers: 1,
                                         route: { _ in [through] })
            try await alice.manager.reserveMeeting(name: "rtx")
            for member in [alice, carol] { _ = try await member.manager.joinMeeting(name: "rtx", type: .video) }
            for member in [alice, carol] { #expect(await member.wait(for: Self.connected) != nil) }
            func aliceAtCarol() async -> InboundRTPStreamStatistics? {
                await carol.manager.currentMeetingSession?.receiveStatistics.streams.first { $0.kind == .video && $0.participant == "alice" }
            }
            // Measured between two moments, so that what is in flight at either (lost, its NACK
            // or answer on the way) evens out: from the 5th packet recovered to 30 more. (A packet
            // lost just before the server's allocation pauses the video is given up by carol,
            // rightly: the video resumes from a keyframe. Hence 90 %, not all.)
            let warm = await eventually(timeout: .seconds(20)) { (await aliceAtCarol()?.packetsRecovered ?? 0) >= 5 }
            let start = try #require(await aliceAtCarol())
            let enough = await eventually(timeout: .seconds(40)) { (await aliceAtCarol()?.packetsRecovered ?? 0) >= start.packetsRecovered + 30 }
            let end = try #require(await aliceAtCarol())
            #expect(warm && enough, "carol recovered \(start.packetsRecovered), then \(end.packetsRecovered) packets")
            let recoveredCount = end.packetsRecovered - start.packetsRecovered
            let onRTX = end.retransmittedPacketsReceived - start.retransmittedPacketsReceived
            let missing = end.packetsLost - start.packetsLost
            let recovered = Double(recoveredCount) / Double(max(1, recoveredCount + max(0, missing)))
            print("meeting RTX: carol recovered \(recoveredCount) of alice's lost video packets (\(Int(recovered * 1000) / 10) %), "
                + "\(onRTX) came on RTX, \(missing) more missing than before; \(end.framesDecoded) frames decoded")
            #expect(onRTX >= recoveredCount, "they came on RTX: \(end)")
            #expect(recovered >= 0.9, "\(start) -> \(end)")
            let (_, body) = try await server.scrapeMetrics()
            let samples = MetricSample.parse(body)
            #expect((samples.value("mediaengine_rtx_packets_sent_total") ?? 0) >= 30)
            #expect((samples.value("mediaengine_rtx_packets_retransmitted_total") ?? 0) >= 30)
            #expect(samples.value("mediaengine_rtx_requests_total", ["result": "out_of_history"]) == 0)
            for member in [alice, carol] { await member.manager.logout() }
        }
    }

    /// The issue's figure, with real clients and a real server: alice publishes 640x360 in
    /// three simulcast layers (about 60, 200 and 1,000 kb/s); bob, carol and dave watch
    /// through proxies capped at 150 kb/s, 500 kb/s and not at all. Each settles on the
    /// layer its link carries, its pictures are that layer's size, /metrics says so, and no
    /// picture waits more than a second once settled.
    @Test func eachViewerOfASimulcastPublisherGetsTheLayerItsLinkCarries() async throws {
        try await Heavy.runAlone {
            let server = try await TestServer.start()
            defer { Task { await server.server.shutdown() } }
            let media = try #require(server.server.echoAddress)
            var proxies: [UDPImpairmentProxy] = []
            defer { for proxy in proxies { proxy.stop() } }
            func route(_ kbps: Int?) throws -> @Sendable ([MediaCandidate]) -> [MediaCandidate] {
                var capped = ImpairmentSettings()
                capped.rateKbps = kbps
                let proxy = try UDPImpairmentProxy(listen: SocketAddress(host: "127.0.0.1", port: 0), forward: media,
                                                   upstream: ImpairmentSettings(), downstream: capped)
                try proxy.start()
                proxies.append(proxy)
                let through = MediaCandidate(host: "127.0.0.1", port: proxy.localAddress.port)
                return { _ in [through] }
            }
            let alice = try await Member(server: server, account: "alice", audio: "sine:440", video: "testsrc:640x360@30", videoBitrate: 1_300_000)
            let viewers = [
                try await Member(server: server, account: "bob", audio: "silence", video: "testsrc:160x90@15", route: try route(150)),
                try await Member(server: server, account: "carol", audio: "silence", video: "testsrc:160x90@15", route: try route(500)),
                try await Member(server: server, account: "dave", audio: "silence", video: "testsrc:160x90@15", route: try route(nil)),
            ]
            let sizes = [(160, 90), (320, 180), (640, 360)]
            try await alice.manager.reserveMeeting(name: "simulcast")
            _ = try await alice.manager.joinMeeting(name: "simulcast", type: .video)
            for viewer in viewers { _ = try await viewer.manager.joinMeeting(name: "simulcast", role: .audience, type: .video) }
            for member in [alice] + viewers { #expect(await member.wait(for: Self.connected) != nil) }
            let forwarding = try #require(server.server.forwardingServer)
            func layers() -> [Int] {
                let legs = forwarding.statistics.legStatistics
                return viewers.map { viewer in legs.first { $0.account == viewer.account }?.videos.first?.spatialLayer ?? -1 }
            }
            func settled() -> Bool {
                layers() == [0, 1, 2] && zip(viewers, sizes).allSatisfy { viewer, size in
                    viewer.lastSize("alice").map { $0.width == size.0 && $0.height == size.1 } == true
                }
            }
            // Settled means held for 2 s: on the way down from the start's estimate (2 Mb/s,
            // far above carol's link) she passes layer 1 for a moment, and a probe brings her
            // back up to it some seconds later.
            var settledSince: ContinuousClock.Instant?
            let reached = await eventually(timeout: .seconds(40)) {
                guard settled() else {
                    settledSince = nil
                    return false
                }
                let since = settledSince ?? .now
                settledSince = since
                return ContinuousClock.now - since >= .seconds(2)
            }
            let estimates = viewers.map { viewer in forwarding.statistics.legStatistics.first { $0.account == viewer.account }?.estimatedBitrate ?? 0 }
            #expect(reached, "layers \(layers()), sizes \(viewers.map { $0.lastSize("alice").map { "\($0.width)x\($0.height)" } ?? "none" }), estimates \(estimates)")
            // Settled: 6 s more, sampled each half second.
            for viewer in viewers { _ = viewer.takeLongestGap("alice") }
            var samples: [[Int]] = []
            for _ in 0..<12 {
                try await Task.sleep(for: .milliseconds(500))
                samples.append(layers())
            }
            let gaps = viewers.map { $0.takeLongestGap("alice") }
            let (_, body) = try await server.scrapeMetrics()
            let metrics = MetricSample.parse(body)
            let gauges = viewers.map { metrics.value("mediaengine_forwarded_video_spatial_layer", ["user": $0.account, "publisher": "alice"]) }
            let widths = viewers.map { metrics.value("mediaengine_forwarded_video_width", ["user": $0.account, "publisher": "alice"]) }
            let probes = ["started", "succeeded", "failed"].map { metrics.value("mediaengine_bandwidth_probes_total", ["result": $0]) ?? 0 }
            print("meeting simulcast: layers \(samples.last ?? []) (sampled \(samples)), estimates \(estimates), longest waits \(gaps), /metrics layers \(gauges) widths \(widths); "
                + "probes started/succeeded/failed \(probes), padding \(metrics.value("mediaengine_probe_padding_bytes_sent_total") ?? 0) bytes")
            #expect(samples.filter { $0 == [0, 1, 2] }.count >= 10, "\(samples)")
            #expect(gaps.allSatisfy { $0 <= .seconds(1) }, "longest waits between pictures: \(gaps)")
            #expect(gauges == [0, 1, 2], "\(gauges)")
            #expect(widths == [160, 320, 640], "\(widths)")

            // Everyone shows alice small: 5 s on, the server tells her client to pause the two
            // larger layers (what reaches the server from her falls to audio and the small
            // layer); dave's view grows again: they resume, and he sees 640x360 within 2.5 s.
            func aliceRate(over window: Duration) async throws -> Double {
                func received() -> Int { forwarding.statistics.legStatistics.first { $0.account == "alice" }?.packetsReceived ?? 0 }
                let before = received()
                try await Task.sleep(for: window)
                return Double(received() - before) / (window / .seconds(1))
            }
            let sending = try await aliceRate(over: .seconds(2))
            for viewer in viewers { try await viewer.manager.setVideoSize((160, 90), forUser: "alice") }
            try await Task.sleep(for: .seconds(6))
            let paused = try await aliceRate(over: .seconds(2))
            try await viewers[2].manager.setVideoSize((640, 360), forUser: "alice")
            let asked = ContinuousClock.now
            let back = await eventually(timeout: .seconds(5)) { viewers[2].lastSize("alice").map { $0.width == 640 } == true }
            print("meeting simulcast: alice's packets/s at the server \(Int(sending)) with all layers, \(Int(paused)) with the large ones paused; dave's 640x360 back after \(ContinuousClock.now - asked)")
            // Paused, only audio (50 packets/s) and the 160x90 layer (a packet a frame, at most
            // 30 frames/s) are left: at most 80 packets/s, 90 with slack. Not a ratio to what all
            // layers sent: under CI load her encoder made fewer large frames (158 packets/s,
            // against 220 alone), and the large layers' share with them.
            #expect(paused <= 90 && sending - paused >= 30, "alice sends \(paused) packets/s with two layers paused, \(sending) with all")
            #expect(back && ContinuousClock.now - asked <= .milliseconds(2_500))
            for member in [alice] + viewers { await member.manager.logout() }
        }
    }

    /// Four video actors; dave's downlink goes through the proxy capped at 300 kb/s. The
    /// three audio streams take about 170 kb/s of it with their headers, so the server's
    /// estimate for dave must come below the cap and his videos thin or pause, while his
    /// audio arrives whole and the others keep everything.
    @Test func aSubscriberCappedAt300KbpsGetsLessVideoWhileItsAudioStaysWholeAndOthersAreUnaffected() async throws {
        try await Heavy.runAlone {
            let server = try await TestServer.start()
            defer { Task { await server.server.shutdown() } }
            let media = try #require(server.server.echoAddress)
            var capped = ImpairmentSettings()
            capped.rateKbps = 300
            let proxy = try UDPImpairmentProxy(listen: SocketAddress(host: "127.0.0.1", port: 0), forward: media,
                                               upstream: ImpairmentSettings(), downstream: capped)
            try proxy.start()
            defer { proxy.stop() }
            let through = MediaCandidate(host: "127.0.0.1", port: proxy.localAddress.port)
            var members: [Member] = []
            let viaProxy: @Sendable ([MediaCandidate]) -> [MediaCandidate] = { _ in [through] }
            for (index, name) in ["alice", "bob", "carol", "dave"].enumerated() {
                members.append(try await Member(server: server, account: name, audio: "sine:\(440 + 110 * index)",
                                                video: "testsrc:320x240@15", route: name == "dave" ? viaProxy : nil))
            }
            let (alice, dave) = (members[0], members[3])
            try await alice.manager.reserveMeeting(name: "capped")
            for member in members { _ = try await member.manager.joinMeeting(name: "capped", type: .video) }
            for member in members { #expect(await member.wait(for: Self.connected) != nil) }
            // Settled: the server's estimate for dave is below his link's rate, and the link's
            // queue has drained (what the start, before the estimate came down, piled up).
            let forwarding = try #require(server.server.forwardingServer)
            func daveEstimate() -> Int? { forwarding.statistics.legStatistics.first { $0.account == "dave" }?.estimatedBitrate }
            #expect(await eventually(timeout: .seconds(30)) {
                (daveEstimate() ?? .max) < 300_000 && proxy.statistics.downstream.pending <= 5
            }, "dave's estimate settles: \(daveEstimate() ?? 0), \(proxy.statistics.downstream.pending) pending")

            // From here on, 8 s of the settled state, by bob's audio at alice (whose links are clean).
            func audio(_ member: Member) async throws -> (concealed: Int, total: Int, lost: Int) {
                let streams = try #require(await member.manager.currentMeetingSession).receiveStatistics.streams.filter { $0.kind == .audio }
                return (streams.map(\.concealedSamples).reduce(0, +), streams.map(\.totalSamplesReceived).reduce(0, +),
                        streams.map(\.packetsLost).reduce(0, +))
            }
            let daveAudio = try await audio(dave)
            let aliceAudio = try await audio(alice)
            let davePictures = dave.snapshot.pictures
            let alicePictures = alice.snapshot.pictures
            func bobAtAlice() async -> Int {
                let streams = await alice.manager.currentMeetingSession?.receiveStatistics.streams ?? []
                return streams.first { $0.kind == .audio && $0.participant == "bob" }?.packetsReceived ?? 0
            }
            let bobBefore = await bobAtAlice()
            #expect(await eventually(timeout: .seconds(30)) { await bobAtAlice() >= bobBefore + 400 }, "8 s of bob's audio at alice")

            let estimate = try #require(daveEstimate())
            #expect(estimate < 300_000, "the server's estimate for dave settles below his 300 kb/s link: \(estimate)")
            let daveAudioNow = try await audio(dave)
            let concealed = Double(daveAudioNow.concealed - daveAudio.concealed) / Double(max(1, daveAudioNow.total - daveAudio.total))
            let daveHeard = daveAudioNow.total - daveAudio.total
            #expect(daveHeard >= 3 * 7 * 48_000, "dave heard all three for the 8 s: \(daveHeard) samples")
            #expect(concealed <= 0.02, "dave's audio stays whole: \(concealed * 100) % concealed")
            let others = ["alice", "bob", "carol"]
            let daveGot = others.map { (dave.snapshot.pictures[$0] ?? 0) - (davePictures[$0] ?? 0) }
            let daveTotal = daveGot.reduce(0, +)
            #expect(daveTotal < 180, "dave gets fewer layers or videos: \(daveGot) pictures in 8 s")
            let aliceGot = others.dropFirst().map { (alice.snapshot.pictures[$0] ?? 0) - (alicePictures[$0] ?? 0) }
            let fullRate = aliceGot.allSatisfy { $0 >= 108 }
            #expect(fullRate, "alice sees bob and carol at full rate: \(aliceGot) pictures in 8 s")
            let aliceAudioNow = try await audio(alice)
            #expect(aliceAudioNow.lost == aliceAudio.lost, "alice lost nothing")
            print("meeting cap: dave's estimate \(estimate) b/s, pictures of alice/bob/carol in 8 s \(daveGot), "
                + "audio concealed \(String(format: "%.2f", concealed * 100)) %; alice's pictures of bob/carol \(aliceGot)")
            for member in members { await member.manager.logout() }
        }
    }

    @Test func aVanishedParticipantTimesOutAndStrangersOnTheMediaPortGetNothing() async throws {
        try await Heavy.runAlone {
            let server = try await TestServer.start { $0.forwarding.legTimeout = .seconds(2) }
            defer { Task { await server.server.shutdown() } }
            let alice = try await Member(server: server, account: "alice", audio: "sine:440")
            let bob = try await Member(server: server, account: "bob", audio: "sine:550")
            try await alice.manager.reserveMeeting(name: "m")
            for member in [alice, bob] { _ = try await member.manager.joinMeeting(name: "m") }
            for member in [alice, bob] { #expect(await member.wait(for: Self.connected) != nil) }

            // A stranger throws checks with a wrong token, forged RTP and RTCP, and random
            // bytes at the media port: nothing comes back.
            let media = try #require(server.server.echoAddress)
            let stranger = try UDPSocket(bindTo: SocketAddress(host: "127.0.0.1", port: 0))
            var check = [UInt8](repeating: 0, count: 100)
            let request = STUNMessage(type: .bindingRequest, transactionID: .random(), attributes: [.username("guess")])
            let size = try check.withUnsafeMutableBytes { try request.serialize(into: $0) }
            let forged: [[UInt8]] = [Array(check[0..<size]), [0x80, 111] + [UInt8](repeating: 7, count: 170),
                                     [0x81, 200, 0, 6] + [UInt8](repeating: 1, count: 24), (0..<64).map { UInt8($0) }]
            for _ in 0..<25 { for bytes in forged { try bytes.withUnsafeBytes { try stranger.send($0, to: media) } } }
            var buffer = [UInt8](repeating: 0, count: 2_048)
            let answer = try buffer.withUnsafeMutableBytes { try stranger.receive(into: $0, timeout: .milliseconds(500)) }
            #expect(answer == nil, "the media port answered a stranger")
            let forwarding = try #require(server.server.forwardingServer)
            #expect(await eventually { forwarding.statistics.router.strangerDatagrams >= 75 },
                    "\(forwarding.statistics.router.strangerDatagrams) stranger datagrams counted")

            // bob's media stops without a word (a crashed app): alice hears that he left.
            await (try #require(await bob.manager.currentMeetingSession)).stop()
            let left = await alice.wait(timeout: 8) { event in
                if case .userLeft(_, "bob", .timedOut) = event { true } else { false }
            }
            #expect(left != nil, "bob timed out")
            for member in [alice, bob] { await member.manager.logout() }
        }
    }

    /// Two threads flood a one-thread media port with forged RTP for 2 s, more than it
    /// reads: its batches come full one after another. The worker still leaves its port
    /// every few milliseconds, so its figures (published each 500 ms, as its timers and
    /// handoffs run) keep coming during the flood, not only after it.
    @Test func aFloodedMediaPortStillRunsItsTimersAndFigures() async throws {
        try await Heavy.runAlone {
            let server = try await TestServer.start { $0.mediaThreads = 1 }
            defer { Task { await server.server.shutdown() } }
            let media = try #require(server.server.echoAddress)
            let forwarding = try #require(server.server.forwardingServer)
            let until = ContinuousClock.now + .seconds(2)
            let floods = try (0..<2).map { _ in try UDPSocket(bindTo: SocketAddress(host: "127.0.0.1", port: 0)) }
            let threads = floods.map { socket in
                Thread {
                    let batch = DatagramBatch()
                    let forged: [UInt8] = [0x80, 111] + [UInt8](repeating: 7, count: 98)
                    forged.withUnsafeBytes { bytes in
                        while ContinuousClock.now < until {
                            for _ in 0..<DatagramBatch.maximumCount { batch.append(bytes, to: media, on: socket) }
                            batch.send(on: socket)
                        }
                    }
                }
            }
            for thread in threads { thread.start() }
            var readings: [Int] = []
            while ContinuousClock.now < until - .milliseconds(100) {
                readings.append(forwarding.statistics.router.strangerDatagrams)
                try await Task.sleep(for: .milliseconds(50))
            }
            try await Task.sleep(until: until + .milliseconds(200))
            let updates = zip(readings, readings.dropFirst()).filter { $0 < $1 }.count
            print("flooded media port: \(forwarding.statistics.router.strangerDatagrams) forged datagrams counted, the figures moved \(updates) times during the 2 s")
            // 1.9 s of readings hold at least three of the 500 ms publications. (A worker
            // that read its port while batches came full published two in a debug build.)
            #expect(updates >= 3, "the figures during the flood: \(readings)")
            #expect(forwarding.statistics.router.strangerDatagrams > 10_000)
        }
    }

    /// The kernel's scheduling of this process's threads whose name starts with `prefix`:
    /// policy (1: SCHED_FIFO) and real-time priority, from /proc/self/task/*/stat.
    static func scheduling(ofThreadsNamed prefix: String) -> [(name: String, policy: Int, priority: Int)] {
        let tasks = (try? FileManager.default.contentsOfDirectory(atPath: "/proc/self/task")) ?? []
        return tasks.compactMap { task in
            guard let name = try? String(contentsOfFile: "/proc/self/task/\(task)/comm", encoding: .utf8)
                      .trimmingCharacters(in: .whitespacesAndNewlines),
                  name.hasPrefix(prefix),
                  let stat = try? String(contentsOfFile: "/proc/self/task/\(task)/stat", encoding: .utf8),
                  let close = stat.lastIndex(of: ")") else { return nil }
            // After the name: field 3 (state) onward; rt_priority is field 40, policy 41.
            let fields = stat[stat.index(after: close)...].split(separator: " ")
            guard fields.count > 38, let priority = Int(fields[37]), let policy = Int(fields[38]) else { return nil }
            return (name, policy, priority)
        }.sorted { $0.name < $1.name }
    }

    /// `--media-realtime-priority`: the forwarding threads run under SCHED_FIFO, so with
    /// every core kept busy by ordinary threads a meeting's packets still leave the server
    /// within milliseconds of arriving.
    @Test func forwardingThreadsAtRealTimePriorityKeepTheirLatencyWhileEveryCoreIsBusy() async throws {
        try await Heavy.runAlone {
            let server = try await TestServer.start {
                $0.mediaThreads = 2
                $0.mediaRealtimePriority = 5
            }
            defer { Task { await server.server.shutdown() } }
            let forwarding = try #require(server.server.forwardingServer)
            // Each thread names itself as it starts.
            var threads = Self.scheduling(ofThreadsNamed: "sfu worker")
            #expect(await eventually {
                threads = Self.scheduling(ofThreadsNamed: "sfu worker")
                return threads.count == 2
            })
            #expect(threads.count == 2 && threads.allSatisfy { $0.policy == 1 && $0.priority == 5 }, "\(threads)")
            // An ordinary thread spinning on each core for the rest of the test.
            let spinning = Atomic<Bool>(true)
            defer { spinning.store(false, ordering: .relaxed) }
            for _ in 0..<ProcessInfo.processInfo.activeProcessorCount {
                Thread { while spinning.load(ordering: .relaxed) {} }.start()
            }
            let alice = try await Member(server: server, account: "alice", audio: "sine:440")
            let bob = try await Member(server: server, account: "bob", audio: "sine:550")
            try await alice.manager.reserveMeeting(name: "busy")
            for member in [alice, bob] { _ = try await member.manager.joinMeeting(name: "busy") }
            for member in [alice, bob] { #expect(await member.wait(for: Self.connected) != nil) }
            // Two seconds of each one's audio (50 packets a second) through the busy machine.
            #expect(await eventually(timeout: .seconds(30)) { forwarding.statistics.latencyCount >= 200 },
                    "forwarded \(forwarding.statistics.latencyCount) packets")
            let statistics = forwarding.statistics
            print("real-time forwarding threads \(threads) beside \(ProcessInfo.processInfo.activeProcessorCount) spinning threads: "
                + "latency p50 \(statistics.latencyP50), p99 \(statistics.latencyP99), p99.9 \(statistics.latencyP999) of \(statistics.latencyCount)")
            #expect(statistics.latencyP99 <= .milliseconds(5), "p99 \(statistics.latencyP99)")
            spinning.store(false, ordering: .relaxed)
            for member in [alice, bob] { await member.manager.logout() }
        }
    }

    @Test func aServerStoppingTellsEveryParticipantAndARestartedOneTakesThemBack() async throws {
        try await Heavy.runAlone {
            let path = FileManager.default.temporaryDirectory.appendingPathComponent("meetings-\(UInt32.random(in: 0 ... .max)).sqlite").path
            defer { try? FileManager.default.removeItem(atPath: path) }
            let server = try await TestServer.start(path: path)
            let alice = try await Member(server: server, account: "alice", audio: "sine:440")
            let bob = try await Member(server: server, account: "bob", audio: "sine:550")
            try await alice.manager.reserveMeeting(name: "m")
            var ids: [UInt64] = []
            for member in [alice, bob] { ids.append(try await member.manager.joinMeeting(name: "m").callID) }
            for member in [alice, bob] { #expect(await member.wait(for: Self.connected) != nil) }
            await server.server.shutdown()
            for member in [alice, bob] {
                let error = await member.wait { if case .meetingError = $0 { true } else { false } }
                guard case .meetingError(let id, let reason)? = error else {
                    Issue.record("\(member.account) got no meetingError")
                    continue
                }
                #expect(id == ids[0] && reason.code == .serverUnavailable)
                #expect(await member.manager.currentMeetingID == nil)
            }
            // The record survived; a new server on the same file takes them back.
            let restarted = try await TestServer.start(path: path)
            defer { Task { await restarted.server.shutdown() } }
            let record = try #require(try await restarted.store.meetingRecords(of: "alice", limit: 5).first)
            #expect(record.callID == ids[0] && record.attendance.count == 2 && record.attendance.allSatisfy { $0.reason == .kicked })
            let alice2 = try await Member(server: restarted, account: "alice", audio: "sine:440")
            let bob2 = try await Member(server: restarted, account: "bob", audio: "sine:550")
            try await alice2.manager.reserveMeeting(name: "m")
            for member in [alice2, bob2] { _ = try await member.manager.joinMeeting(name: "m") }
            for member in [alice2, bob2] { #expect(await member.wait(for: Self.connected) != nil, "\(member.account) rejoined") }
            #expect(await eventually { alice2.heardCount("bob") >= 48_000 }, "alice hears bob again")
            #expect(alice2.level(of: 550, from: "bob") > 0.2)
            for member in [alice, bob, alice2, bob2] { await member.manager.logout() }
        }
    }

    @Test func aTokenWithoutTheGrantIsRefused() async throws {
        let server = try await TestServer.start()
        defer { Task { await server.server.shutdown() } }
        let token = try await server.authority.mint(account: "eve", lifetime: .seconds(60), grants: Grants(meetings: ["open"], publish: false))
        let eve = NetCallManager(configuration: NetCallManager.Configuration(server: server.url, token: token, media: { _, _ in
            var configuration = MediaSession.Configuration(audio: try MediaSources.audio("sine:440"), video: nil)
            configuration.host = "127.0.0.1"
            return configuration
        }))
        try await eve.login()
        await #expect(throws: SignalingError(.forbidden, "reserveMeeting: your token does not grant meeting 'secret'")) {
            try await eve.reserveMeeting(name: "secret")
        }
        try await eve.reserveMeeting(name: "open")
        do {
            _ = try await eve.joinMeeting(name: "open", role: .actor)
            Issue.record("joined as actor without the grant")
        } catch {
            #expect(error.code == .forbidden)
        }
        _ = try await eve.joinMeeting(name: "open", role: .audience)
        await #expect(throws: SignalingError.self) { try await eve.setMeetingRole(.actor) }
        await eve.logout()
    }
}
