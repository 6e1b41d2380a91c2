import Foundation
import MediaEngine
@testable import MediaServer
@testable import MediaSimulation
import Signaling
import Testing
import TestSupport

/// Whole calls: two `NetCallManager`s through a real server on loopback, with media.
@Suite(.serialized) struct CallFlows {
    /// One endpoint: a manager, what it heard and saw, and its events.
    final class Endpoint: Sendable {
        struct Seen {
            var audio: [Int16] = []
            var frames: [VideoFrame] = []
            var events: [NetCallEvent] = []
            var updates: [NetCallMediaUpdate] = []
        }

        final class Box: Sendable {
            let seen = Locked(Seen())
        }

        let manager: NetCallManager
        let box = Box()

        convenience init(server: TestServer, account: String, audio: String, video: String?, device: String = "d",
                         mediaTimeout: Duration = .seconds(10), videoInAudioCalls: Bool = false,
                         stunServer: SocketAddress? = nil) async throws {
            try await self.init(url: server.url, token: try await server.token(account), audio: audio, video: video, device: device,
                                mediaTimeout: mediaTimeout, videoInAudioCalls: videoInAudioCalls, stunServer: stunServer)
        }

        /// An endpoint logged in at `url` (any node of a cluster) with `token`; its calls
        /// gather server-reflexive candidates from `stunServer` if one is given.
        init(url: String, token: String, audio: String, video: String?, device: String = "d",
             mediaTimeout: Duration = .seconds(10), videoInAudioCalls: Bool = false,
             stunServer: SocketAddress? = nil) async throws {
            let box = self.box
            let media: MediaSessionFactory = { type, _ in
                let sendsVideo = type == .video || videoInAudioCalls
                var configuration = MediaSession.Configuration(audio: try MediaSources.audio(audio),
                                                               video: sendsVideo ? try video.map { try MediaSources.video($0) } : nil)
                configuration.host = "127.0.0.1"
                configuration.mediaTimeout = mediaTimeout
                configuration.stunServers = stunServer.map { [$0] } ?? []
                configuration.remoteAudio = { pcm in box.seen.withLock { $0.audio.append(contentsOf: pcm) } }
                // Every picture, on the receiving thread (the YUV callback).
                configuration.remoteVideo = { _, frame in box.seen.withLock { if $0.frames.count < 300 { $0.frames.append(frame) } } }
                return configuration
            }
            var settings = NetCallManager.Configuration(server: url, token: token, device: device, media: media)
            settings.videoSource = { quality in
                let preset = quality.encoding
                return try MediaSources.video("testsrc:\(preset.width)x\(preset.height)@15")
            }
            manager = NetCallManager(configuration: settings)
            try await manager.login()
            // The streams, not the manager: an endpoint a test lets go of frees its manager.
            let events = manager.events, mediaUpdates = manager.mediaUpdates
            Task { [box] in
                for await event in events { box.seen.withLock { $0.events.append(event) } }
            }
            Task { [box] in
                for await update in mediaUpdates {
                    if case .remoteVideoFrame = update { continue }
                    box.seen.withLock { if $0.updates.count < 1_000 { $0.updates.append(update) } }
                }
            }
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

        /// Samples played so far.
        var audioCount: Int { box.seen.withLock { $0.audio.count } }

        /// Pictures kept so far (at most 300).
        var frameCount: Int { box.seen.withLock { $0.frames.count } }

        /// A copy sharing no storage with what the session threads go on filling.
        var snapshot: Seen {
            box.seen.withLock { seen in
                Seen(audio: seen.audio.detached, frames: seen.frames.detached, events: seen.events.detached, updates: seen.updates.detached)
            }
        }
    }

    static func isConnected(_ event: NetCallEvent) -> Bool {
        if case .callStatus(_, .connected) = event { return true }
        return false
    }

    static func record(_ event: NetCallEvent) -> CallRecord? {
        if case .callRecord(let record) = event { return record }
        return nil
    }

    static func invitation(_ event: NetCallEvent) -> UInt64? {
        if case .receive(let id, _, _, _) = event { return id }
        return nil
    }

    /// Alice calls bob, bob accepts, the call lasts until bob has heard `seconds` of alice,
    /// alice hangs up; `span` is from connected to the hangup.
    func call(type: CallType, seconds: Double) async throws
        -> (alice: Endpoint, bob: Endpoint, record: CallRecord, setup: Double, span: Double) {
        let server = try await TestServer.start()
        defer { Task { await server.server.shutdown() } }
        let alice = try await Endpoint(server: server, account: "alice", audio: "tones:440,1000",
                                       video: type == .video ? "testsrc:320x240@15" : nil)
        let bob = try await Endpoint(server: server, account: "bob", audio: "sine:660", video: type == .video ? "testsrc:320x240@15" : nil)
        let started = Date()
        let id = try await alice.manager.start(callee: "bob", type: type)
        let invited = try #require(await bob.wait { Self.invitation($0) == id })
        _ = invited
        try await bob.manager.response(callID: id, accept: true)
        #expect(await alice.wait(for: Self.isConnected) != nil)
        #expect(await bob.wait(for: Self.isConnected) != nil)
        let connected = Date()
        let setup = connected.timeIntervalSince(started)
        #expect(await eventually(timeout: .seconds(seconds + 20)) { bob.audioCount >= Int(seconds * 48_000) }, "\(bob.audioCount) samples")
        try await alice.manager.hangup(callID: id)
        // The span the server saw starts a little before `connected` and ends a little
        // before now; compare with the span measured.
        let span = Date().timeIntervalSince(connected)
        let record = try #require(await bob.wait { Self.record($0) != nil }.flatMap(Self.record))
        #expect(await alice.wait { Self.record($0) != nil } != nil)
        #expect(record.callID == id && record.endReason == .completed && record.endedBy == "alice")
        // The server counts from both sides' media reports, which reach it a little after
        // the clients saw the connection (later on a loaded machine): what it recorded is
        // what this side measured, within half a second, not necessarily `seconds`.
        #expect(abs(Double(record.connectedDuration) / 1_000 - span) < 0.5, "\(record.connectedDuration) ms connected, \(span) s measured")
        let aliceCall = await alice.manager.currentCallID
        let bobCall = await bob.manager.currentCallID
        #expect(aliceCall == nil && bobCall == nil, "both sides left the call")
        await alice.manager.logout()
        await bob.manager.logout()
        return (alice, bob, record, setup, span)
    }

    static func correlation(_ received: [Int16]) -> Double {
        var tones = ToneGenerator(.multiTone([440, 1_000]))
        var reference: [Int16] = []
        while reference.count < received.count + 48_000 { reference += tones.nextFrame().samples }
        return reference.withUnsafeBufferPointer { ref in
            received.withUnsafeBufferPointer { test in
                AudioQuality.trackedCorrelation(reference: ref, test: test, testStart: 24_000, lagRange: -2_400...2_400).correlation
            }
        }
    }

    @Test func audioCallOfFiveSecondsArrivesIntact() async throws {
        try await Heavy.run {
            let (_, bob, _, setup, span) = try await call(type: .audio, seconds: 5)
            let heard = bob.snapshot.audio
            // Four fifths of the connected time or more: no long stall on the way.
            #expect(heard.count > 48_000 * 4 && Double(heard.count) > 0.8 * span * 48_000, "\(heard.count) samples in \(span) s")
            let correlation = Self.correlation(heard)
            #expect(correlation >= 0.9, "audio correlation \(correlation)")
            #expect(bob.snapshot.frames.isEmpty, "an audio call has no video")
            print("audio call: setup \(setup) s, correlation \(correlation)")
        }
    }

    @Test func videoCallDeliversFramesAtHighPSNRAndTheEventsAUserNeeds() async throws {
        try await Heavy.run {
            let (alice, bob, _, _, _) = try await call(type: .video, seconds: 3)
            var pattern = TestPattern(width: 320, height: 240, frameRate: 15)
            let sources = (0..<80).map { _ in pattern.nextFrame() }
            let frames = bob.snapshot.frames
            #expect(frames.count >= 30, "\(frames.count) frames")
            let psnrs = frames.prefix(40).map { frame in sources.map { VideoQuality.psnr($0, frame) }.max() ?? 0 }
            let mean = psnrs.reduce(0, +) / Double(max(1, psnrs.count))
            #expect(mean >= 30, "mean PSNR \(mean) dB")
            let updates = alice.snapshot.updates
            #expect(updates.contains { if case .localPreviewFrame = $0 { true } else { false } })
            #expect(updates.contains { if case .myVolume(let level) = $0 { level > 0.1 } else { false } })
            #expect(updates.contains { if case .speakingUsers(let users) = $0 { users["bob"] != nil } else { false } })
            #expect(alice.snapshot.events.contains { if case .netStatus("bob", .veryGood, _, _, _) = $0 { true } else { false } })
            print("video call: \(frames.count) frames, PSNR \(mean) dB")
        }
    }

    /// An app busy elsewhere reads nothing during a video call: afterwards every control
    /// event is there in order, and the per-frame updates kept are only the newest few.
    @Test func anAppThatReadsNothingDuringAVideoCallStillGetsEveryControlEvent() async throws {
        try await Heavy.run {
            let server = try await TestServer.start()
            defer { Task { await server.server.shutdown() } }
            let factory: MediaSessionFactory = { _, _ in
                var configuration = MediaSession.Configuration(audio: try MediaSources.audio("sine:440"),
                                                               video: try MediaSources.video("testsrc:320x240@30"))
                configuration.host = "127.0.0.1"
                return configuration
            }
            let alice = NetCallManager(configuration: NetCallManager.Configuration(server: server.url, token: try await server.token("alice"),
                                                                                   media: factory))
            let bob = NetCallManager(configuration: NetCallManager.Configuration(server: server.url, token: try await server.token("bob"),
                                                                                 media: factory))
            try await alice.login()
            try await bob.login()
            // Bob's events are read (he is not the app under test), alice's are not.
            let bobEvents = Recorded<NetCallEvent>()
            let bobStream = bob.events
            Task { for await event in bobStream { bobEvents.append(event) } }
            let id = try await alice.start(callee: "bob", type: .video)
            #expect(await eventually { bobEvents.all.contains { if case .receive(id, _, _, _) = $0 { true } else { false } } }, "bob is invited")
            try await bob.response(callID: id, accept: true)
            // 90 of bob's pictures (3 s at 30 fps) reach alice: far more updates than are kept.
            #expect(await eventually {
                let video = await alice.currentSession?.receiveStatistics.streams.first { $0.kind == .video }
                return (video?.framesDecoded ?? 0) >= 90
            }, "alice sees bob")
            try await alice.hangup(callID: id)
            // The server sends both parties the record together: once bob has his, alice's was
            // sent before anything she asks next is answered.
            #expect(await eventually { bobEvents.all.contains { if case .callRecord = $0 { true } else { false } } }, "bob got the record")
            await alice.logout()
            await bob.logout()

            var seen: [String] = []
            for await event in alice.events {
                switch event {
                case .response(_, _, let accepted): seen.append("response \(accepted)")
                case .callStatus(_, .connected): seen.append("connected")
                case .callRecord(let record): seen.append("record \(record.endReason.rawValue)")
                case .netStatus: if seen.last != "netStatus" { seen.append("netStatus") }
                default: break
                }
            }
            #expect(seen.first == "response true" && seen.contains("connected") && seen.last == "record completed", "\(seen)")
            var updates = 0
            var pictures = 0
            for await update in alice.mediaUpdates {
                updates += 1
                if case .remoteVideoFrame = update { pictures += 1 }
            }
            // 3 s at 30 fps each way, levels every 100 ms: some 200 updates came, the newest 8 stayed.
            #expect(updates <= NetCallManager.mediaUpdateBuffer && pictures > 0, "\(updates) updates kept, \(pictures) pictures")
        }
    }

    @Test func aDroppedSignalingConnectionReconnectsWithoutDroppingTheMedia() async throws {
        try await Heavy.run {
            let server = try await TestServer.start()
            defer { Task { await server.server.shutdown() } }
            let alice = try await Endpoint(server: server, account: "alice", audio: "tones:440,1000", video: nil)
            let bob = try await Endpoint(server: server, account: "bob", audio: "sine:660", video: nil)
            let id = try await alice.manager.start(callee: "bob", type: .audio)
            _ = try #require(await bob.wait { Self.invitation($0) == id })
            try await bob.manager.response(callID: id, accept: true)
            #expect(await alice.wait(for: Self.isConnected) != nil)
            #expect(await eventually { bob.audioCount >= 48_000 }, "bob hears alice")

            await server.server.hub.dropConnections(of: "alice", reason: "test: network blip")
            #expect(await alice.wait { if case .connectionLost = $0 { true } else { false } } != nil)
            let heardAtDrop = bob.audioCount
            let dropped = ContinuousClock.now
            #expect(await alice.wait { if case .reconnected = $0 { true } else { false } } != nil)
            #expect(await eventually { bob.audioCount - heardAtDrop >= 48_000 })
            let heardSince = bob.audioCount - heardAtDrop
            let since = (ContinuousClock.now - dropped) / .seconds(1)
            // At the rate it plays (48,000 a second), give or take a jitter buffer's start.
            #expect(heardSince > 40_000 && Double(heardSince) > 0.8 * since * 48_000,
                    "bob kept hearing alice: \(heardSince) samples in the \(since) s since the drop")
            #expect(await alice.manager.currentCallID == id)

            try await alice.manager.hangup(callID: id)
            let record = try #require(await bob.wait { Self.record($0) != nil }.flatMap(Self.record))
            #expect(record.endReason == .completed, "the call survived the drop: \(record.endReason)")
            #expect(record.connectedDuration >= 1_400, "\(record.connectedDuration) ms")
            await alice.manager.logout()
            await bob.manager.logout()
        }
    }

    /// An app that lets go of its manager mid-call, without `logout()`: the manager is
    /// freed, its media stops, and the server ends the call after the reconnect grace, as
    /// for a device that vanished. (Its signaling pump and reconnect used to hold it, and
    /// everything it owned, until the process exited.)
    @Test func aManagerLetGoOfMidCallIsFreedAndTheCallEnds() async throws {
        try await Heavy.run {
            let server = try await TestServer.start { $0.calls.reconnectGrace = .seconds(1) }
            defer { Task { await server.server.shutdown() } }
            var alice: Endpoint? = try await Endpoint(server: server, account: "alice", audio: "sine:440", video: nil)
            let bob = try await Endpoint(server: server, account: "bob", audio: "sine:660", video: nil)
            let id = try await alice!.manager.start(callee: "bob", type: .audio)
            _ = try #require(await bob.wait { Self.invitation($0) == id })
            try await bob.manager.response(callID: id, accept: true)
            #expect(await bob.wait(for: Self.isConnected) != nil)
            #expect(await eventually { bob.audioCount >= 24_000 }, "bob hears alice")

            weak let manager = alice!.manager
            weak let session = await alice!.manager.currentSession
            weak let bobsSession = await bob.manager.currentSession
            #expect(session != nil)
            alice = nil
            await eventually { manager == nil && session == nil }
            #expect(manager == nil, "the manager was freed")
            #expect(session == nil, "the call's media session was freed")
            // What was on its way has played once bob's last 100 ms are quiet, or his session
            // is gone. (Not once his call ended: the manager lets go of the call first, and
            // the session plays out what it holds as it stops.)
            _ = await eventually {
                bobsSession == nil || bob.box.seen.withLock { seen in
                    seen.audio.count >= 4_800 && seen.audio.suffix(4_800).allSatisfy { $0.magnitude < 300 }
                }
            }
            let heard = bob.audioCount
            // Alice must not be heard any more: only a stretch of time shows an absence.
            try await Task.sleep(for: .milliseconds(700))
            // What bob played since (silence, or nothing at all once the stream is gone).
            let since = bob.snapshot.audio.dropFirst(heard)
            let rms = since.isEmpty ? 0 : (since.reduce(0.0) { $0 + Double($1) * Double($1) } / Double(since.count)).squareRoot()
            #expect(rms < 300, "alice's media stopped: bob played RMS \(rms) over \(since.count) samples")
            let record = try #require(await bob.wait { Self.record($0) != nil }.flatMap(Self.record))
            #expect(record.callID == id && record.endReason == .failed, "\(record.endReason)")
            #expect(try await server.store.records(of: "alice", limit: 5).first?.callID == id)
            await bob.manager.logout()
        }
    }

    /// The callee gathers its server-reflexive candidate while its answer is on the way to
    /// the server, which refuses a ringing device's candidates: the candidate waits for the
    /// answer to be accepted and then reaches the caller. (It was sent at once and refused,
    /// so the caller never checked the callee's NAT mapping: the two-NAT call of
    /// NATCallTests failed once with "1 pairs checked" on the caller.)
    @Test func aCandidateTheCalleeGathersWhileAnsweringReachesTheCaller() async throws {
        try await Heavy.run {
            let server = try await TestServer.start()
            defer { Task { await server.server.shutdown() } }
            // A STUN server that answers at once that the asker is at 192.0.2.7 (a NAT's
            // address, as far as the callee knows): a srflx candidate within a millisecond.
            let stun = try UDPResponder { bytes, source in
                guard let request = try? STUNMessage(parsing: bytes), request.type == .bindingRequest,
                      let mapped = try? SocketAddress(host: "192.0.2.7", port: source.port)
                else { return nil }
                return STUNBinding.answer(to: request, from: mapped).serialized()
            }
            defer { stun.stop() }
            let alice = try await TestClient(url: server.url)
            _ = try await alice.request(MessageType.login, Request.Login(token: try await server.token("alice"), device: "d"), as: Reply.Login.self)
            let bob = try await Endpoint(server: server, account: "bob", audio: "sine:660", video: nil, stunServer: stun.localAddress)
            var configuration = MediaSession.Configuration(audio: try MediaSources.audio("sine:440"), video: nil)
            configuration.host = "127.0.0.1"
            let media = try MediaSession(configuration: configuration)
            defer { Task { await media.stop() } }
            let started = try await alice.request(MessageType.start, Request.Start(callee: "bob", type: .audio, media: MediaEndpoint(media.local)),
                                                  as: Reply.Start.self)
            #expect(await bob.wait { Self.invitation($0) == started.callID } != nil)
            try await bob.manager.response(callID: started.callID, accept: true)
            var trickled: [MediaCandidate] = []
            while let event = await alice.next(MessageType.candidates) {
                trickled += try event.body(Event.Candidates.self).candidates
                if trickled.contains(where: { $0.type == "srflx" }) { break }
            }
            #expect(trickled.contains { $0.type == "srflx" && $0.host == "192.0.2.7" }, "the callee's srflx reached the caller: \(trickled)")
            _ = try await alice.request(MessageType.hangup, Request.Hangup(callID: started.callID), as: Reply.Empty.self)
            await bob.manager.logout()
            await alice.close()
        }
    }

    @Test func aPeerThatVanishesMidCallEndsItAsFailedWithARecord() async throws {
        try await Heavy.run {
            let server = try await TestServer.start()
            defer { Task { await server.server.shutdown() } }
            let alice = try await Endpoint(server: server, account: "alice", audio: "sine:440", video: nil, mediaTimeout: .seconds(1))
            // Bob is a bare client whose media reaches alice through a proxy: stopping the proxy
            // and closing his connection is a host that lost power.
            let bob = try await TestClient(url: server.url)
            _ = try await bob.request(MessageType.login, Request.Login(token: try await server.token("bob"), device: "d"), as: Reply.Login.self)
            let id = try await alice.manager.start(callee: "bob", type: .audio)
            _ = await bob.next(MessageType.receive)
            var configuration = MediaSession.Configuration(audio: try MediaSources.audio("sine:660"), video: nil)
            configuration.host = "127.0.0.1"
            let media = try MediaSession(configuration: configuration)
            // Alice sees bob only through a proxy too, so ICE finds no direct pair around them.
            let toBob = try UDPImpairmentProxy(listen: SocketAddress(host: "127.0.0.1", port: 0), forward: media.local.candidates[0].address,
                                               settings: ImpairmentSettings())
            try toBob.start()
            var announced = media.local
            announced.candidates = [ICECandidate.local(.host, address: toBob.localAddress, localPreference: 65_535)]
            let answer = try await bob.request(MessageType.response, Request.Response(callID: id, accept: true, media: MediaEndpoint(announced)),
                                               as: Reply.Response.self)
            var aliceEndpoint = try #require(answer.media).sessionEndpoint()
            let proxy = try UDPImpairmentProxy(listen: SocketAddress(host: "127.0.0.1", port: 0), forward: aliceEndpoint.candidates[0].address,
                                               settings: ImpairmentSettings())
            try proxy.start()
            aliceEndpoint.candidates = [ICECandidate.local(.host, address: proxy.localAddress, localPreference: 65_535)]
            try media.start(remote: aliceEndpoint) { _ in }
            #expect(await alice.wait(for: Self.isConnected) != nil)
            #expect(await eventually { alice.audioCount >= 24_000 }, "alice hears bob")

            proxy.stop()
            toBob.stop()
            await bob.close()
            let lost = await alice.wait { if case .callStatus(_, .disconnected) = $0 { true } else { false } }
            #expect(lost != nil, "alice notices the media stopped")
            let record = try #require(await alice.wait { Self.record($0) != nil }.flatMap(Self.record))
            #expect(record.callID == id && record.endReason == .failed && record.connectedDuration > 0)
            #expect(try await server.store.records(of: "alice", limit: 5).first?.endReason == .failed)
            await media.stop()
            await alice.manager.logout()
        }
    }

    @Test func clientsReconnectToARestartedServerAndCallAgain() async throws {
        try await Heavy.run {
            let path = FileManager.default.temporaryDirectory.appendingPathComponent("restart-\(UInt32.random(in: 0 ... .max)).sqlite").path
            defer { try? FileManager.default.removeItem(atPath: path) }
            let first = try await TestServer.startOnStablePort(path: path)
            let port = first.port
            let alice = try await Endpoint(server: first, account: "alice", audio: "sine:440", video: nil)
            let bob = try await Endpoint(server: first, account: "bob", audio: "sine:660", video: nil)
            let earlier = try await alice.manager.start(callee: "bob", type: .audio)
            _ = try #require(await bob.wait { Self.invitation($0) == earlier })
            try await alice.manager.hangup(callID: earlier)
            _ = await alice.wait { Self.record($0) != nil }
            await first.server.shutdown()
            #expect(await alice.wait { if case .connectionLost = $0 { true } else { false } } != nil)

            let second = try await TestServer.start(path: path) { $0.port = port }
            defer { Task { await second.server.shutdown() } }
            #expect(await alice.wait(timeout: 15) { if case .reconnected = $0 { true } else { false } } != nil)
            #expect(await bob.wait(timeout: 15) { if case .reconnected = $0 { true } else { false } } != nil)
            #expect(try await second.store.records(of: "alice", limit: 5).map(\.callID) == [earlier], "the record survived")
            let again = try await alice.manager.start(callee: "bob", type: .audio)
            #expect(again > earlier)
            _ = try #require(await bob.wait { Self.invitation($0) == again })
            try await alice.manager.hangup(callID: again)
            await alice.manager.logout()
            await bob.manager.logout()
        }
    }

    @Test func anAudioCallSwitchesToVideoChangesQualityAndOutputAndMutes() async throws {
        try await Heavy.run {
            let server = try await TestServer.start()
            defer { Task { await server.server.shutdown() } }
            let alice = try await Endpoint(server: server, account: "alice", audio: "sine:440", video: "testsrc:352x288@15", videoInAudioCalls: true)
            let bob = try await Endpoint(server: server, account: "bob", audio: "sine:660", video: "testsrc:352x288@15", videoInAudioCalls: true)
            let id = try await alice.manager.start(callee: "bob", type: .audio)
            _ = try #require(await bob.wait { Self.invitation($0) == id })
            try await bob.manager.response(callID: id, accept: true)
            #expect(await alice.wait(for: Self.isConnected) != nil)
            // Pictures would come along with the first 0.8 s of audio.
            #expect(await eventually { bob.audioCount >= 38_400 }, "bob hears alice")
            #expect(bob.frameCount == 0, "an audio call sends no pictures")

            // NIM's dance: ask, agree, both switch.
            try await alice.manager.control(callID: id, .toVideo)
            #expect(await bob.wait { if case .control(_, "alice", .toVideo) = $0 { true } else { false } } != nil)
            try await bob.manager.control(callID: id, .agreeToVideo)
            #expect(await alice.wait { if case .control(_, "bob", .agreeToVideo) = $0 { true } else { false } } != nil)
            try await alice.manager.switchType(.video)
            try await bob.manager.switchType(.video)
            func lastSize() -> (Int, Int)? { bob.box.seen.withLock { $0.frames.last.map { ($0.width, $0.height) } } }
            #expect(await eventually { bob.frameCount >= 5 && lastSize() ?? (0, 0) == (352, 288) }, "pictures after the switch")
            let pictures = bob.snapshot.frames
            #expect(pictures.count >= 5, "\(pictures.count) pictures after the switch")
            #expect(pictures.last.map { ($0.width, $0.height) } ?? (0, 0) == (352, 288))

            try await alice.manager.switchVideoQuality(.low)
            #expect(await eventually { lastSize() ?? (0, 0) == (176, 144) })
            let resized = bob.snapshot.frames.last
            #expect(resized.map { ($0.width, $0.height) } ?? (0, 0) == (176, 144), "the low preset's size arrives")

            do throws(SignalingError) {
                try await alice.manager.switchCamera()
                Issue.record("no camera exists here, yet switchCamera succeeded")
            } catch {
                #expect(error.code == .operationFailed && error.code.isLocal && error.message.contains("no other camera"), "\(error.message)")
            }
            try await bob.manager.setAudioOutput(NullAudioSink(layout: .mono))
            await alice.manager.setMute(true)
            #expect(await eventually { bob.box.seen.withLock { $0.audio.suffix(4_800).allSatisfy { $0.magnitude < 300 } } })
            let heard = bob.snapshot.audio.suffix(4_800)
            let loudest = heard.map { Int($0.magnitude) }.max() ?? 0
            #expect(loudest < 300, "muted: the loudest of bob's last 100 ms is \(loudest)")
            try await alice.manager.hangup(callID: id)
            _ = await bob.wait { Self.record($0) != nil }
            await alice.manager.logout()
            await bob.manager.logout()
        }
    }
}
