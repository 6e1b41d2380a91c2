import Foundation
import MediaEngine
@testable import MediaServer
import NIOCore
import Signaling
import Testing
import TestSupport

/// Real-time sessions and conferences through a real server on loopback: `NetCallManager`s
/// for members, raw data connections for members that misbehave.
@Suite(.serialized) struct RTSFlows {
    /// A member: its manager and every RTS event it got, in order.
    final class Member: Sendable {
        let manager: NetCallManager
        let account: String
        let events = Locked<[RTSEvent]>([])
        private let reader: Task<Void, Never>

        convenience init(_ server: TestServer, _ account: String, device: String = "default") async throws {
            try await self.init(url: server.url, token: try await server.token(account), account, device: device)
        }

        init(url: String, token: String, _ account: String, device: String = "default") async throws {
            self.account = account
            var settings = NetCallManager.Configuration(server: url, token: token,
                                                        media: { _, _ in throw SignalingError(.operationFailed, "no media here") })
            settings.device = device
            manager = NetCallManager(configuration: settings)
            try await manager.login()
            let events = self.events
            let stream = manager.rtsEvents
            reader = Task { for await event in stream { events.withLock { $0.append(event) } } }
        }

        var data: [RTSData] {
            events.withLock { $0.compactMap { if case .data(let data) = $0 { data } else { nil } } }
        }

        /// Waits until `match` holds for the events so far.
        func wait(timeout: Double = 10, _ what: String = "", until match: @escaping ([RTSEvent]) -> Bool) async -> Bool {
            let deadline = Date().addingTimeInterval(timeout)
            while Date() < deadline {
                if match(events.withLock { $0 }) { return true }
                try? await Task.sleep(for: .milliseconds(20))
            }
            return match(events.withLock { $0 })
        }

        func finish() async {
            await manager.logout()
            await reader.value
        }
    }

    static func conference(_ event: RTSEvent) -> String? {
        switch event {
        case .userJoined(_, _, let account): "joined \(account)"
        case .userLeft(_, _, let account, let reason): "left \(account) \(reason.rawValue)"
        default: nil
        }
    }

    @Test func fourMembersBroadcastAndUnicastInOrderAndTheNameIsFreeOnlyOnceAllLeft() async throws {
        let directory = try temporaryDirectory("rts")
        defer { try? FileManager.default.removeItem(at: directory) }
        let server = try await TestServer.start { $0.rtsRecordingDirectory = directory.path }
        defer { Task { await server.server.shutdown() } }
        let members = [try await Member(server, "ann"), try await Member(server, "ben"), try await Member(server, "cat"),
                       try await Member(server, "dan")]
        try await members[0].manager.reserveConference(name: "board")
        await #expect(throws: SignalingError.self) { try await members[1].manager.reserveConference(name: "board") }
        var infos: [RTSConferenceInfo] = []
        for member in members { infos.append(try await member.manager.joinConference(name: "board")) }
        #expect(infos.map(\.members) == [[], ["ann"], ["ann", "ben"], ["ann", "ben", "cat"]])
        #expect(Set(infos.map(\.channelID)).count == 1)
        #expect(infos[0].recordFile == "\(infos[0].channelID)-ann.rts")
        // Everyone sees the later joins in order.
        for (index, member) in members.enumerated() {
            let expected = members[(index + 1)...].map { "joined \($0.account)" }
            #expect(await member.wait { $0.compactMap(Self.conference) == expected }, "\(member.account): \(member.events.withLock { $0 })")
        }
        let channel = infos[0].channelID
        for index in 0..<20 {
            try await members[0].manager.sendConferenceData(Data("all \(index)".utf8), channelID: channel)
        }
        try await members[1].manager.sendConferenceData(Data("for dan".utf8), channelID: channel, to: "dan")
        // Each sender's messages in the order it sent them (two senders' are not ordered between them).
        func texts(_ member: Member, from sender: String) -> [String] {
            member.data.filter { $0.from == sender }.map { String(decoding: $0.data, as: UTF8.self) }
        }
        for member in members[1...] {
            let fromBen = member.account == "dan" ? ["for dan"] : []
            #expect(await member.wait { _ in texts(member, from: "ann") == (0..<20).map { "all \($0)" } && texts(member, from: "ben") == fromBen },
                    "\(member.account): \(member.data.map { "\($0.from): \(String(decoding: $0.data, as: UTF8.self))" })")
            #expect(member.data.allSatisfy { $0.conference == "board" && $0.channelID == channel })
        }
        #expect(members[0].data.isEmpty, "a broadcast does not come back to its sender")
        // Leaves come in order; the name stays in use until the last one.
        try await members[3].manager.leaveConference(channelID: channel)
        try await members[1].manager.leaveConference(channelID: channel)
        #expect(await members[0].wait { $0.compactMap(Self.conference).suffix(2) == ["left dan left", "left ben left"] })
        await #expect(throws: SignalingError.self) { try await members[3].manager.reserveConference(name: "board") }
        try await members[2].manager.leaveConference(channelID: channel)
        try await members[0].manager.leaveConference(channelID: channel)
        try await members[3].manager.reserveConference(name: "board")
        // The record names every member with its file; ann's file holds her 20 messages.
        let records = try await server.server.hub.rtsRecords(of: "ann")
        #expect(records.first?.kind == .conference && records.first?.members.map(\.account) == ["dan", "ben", "cat", "ann"],
                "\(records)")
        let ann = try RTSRecording.read(directory.appendingPathComponent("\(channel)-ann.rts").path)
        #expect(ann.records.map { String(decoding: $0.data, as: UTF8.self) } == (0..<20).map { "all \($0)" })
        #expect(ann.truncatedTail == 0)
        for member in members { await member.finish() }
    }

    @Test func aSessionRefusesDataBeforeTheAnswerAndAnswersFromASecondDevice() async throws {
        let server = try await TestServer.start()
        defer { Task { await server.server.shutdown() } }
        let alice = try await Member(server, "alice")
        let bobPhone = try await Member(server, "bob", device: "phone")
        let bobDesk = try await Member(server, "bob", device: "desk")
        let session = try await alice.manager.requestRTS(callee: "bob", extendMessage: "draw?")
        #expect(session.recordFile == nil, "the server records nothing without a directory")
        for bob in [bobPhone, bobDesk] {
            #expect(await bob.wait { $0.contains(.request(sessionID: session.sessionID, channelID: session.channelID, from: "alice",
                                                          services: [.data], extendMessage: "draw?")) })
        }
        // Before the answer: the API refuses, and so does the server for a raw message.
        await #expect(throws: SignalingError.self) { try await alice.manager.sendRTSData(Data("early".utf8), sessionID: session.sessionID) }
        var frame = ByteBufferAllocator().buffer(capacity: 64)
        RTSFrame.writeHeader(into: &frame, channelID: session.channelID, peer: "bob")
        frame.writeString("early")
        let rawEvents = Locked<[ServerEvent]>([])
        let probe = try await RTSDataConnection.open(server: server.url, token: try await server.token("carol"), device: "x",
                                                     received: { inbound in if case .event(let event) = inbound { rawEvents.withLock { $0.append(event) } } },
                                                     ended: { _ in })
        try await probe.sendRaw(frame)
        try await probe.sync()
        let refused = try rawEvents.withLock { $0 }.first.map { try $0.body(Event.RTSDataRefused.self) }
        #expect(refused?.code == SignalingError.Code.rtsNotMember.rawValue, "carol is in no session: \(String(describing: refused))")
        // The callee must answer before it terminates.
        await #expect(throws: SignalingError.self) { try await bobPhone.manager.terminateRTS(sessionID: session.sessionID) }
        try await bobPhone.manager.responseRTS(sessionID: session.sessionID, accept: true)
        #expect(await bobDesk.wait { $0.contains(.responsedByOther(sessionID: session.sessionID, accepted: true)) })
        do {
            try await bobDesk.manager.responseRTS(sessionID: session.sessionID, accept: true)
            Issue.record("a second answer must be refused")
        } catch {
            #expect(error.code == .handledElsewhere, "\(error)")
        }
        #expect(await alice.wait { $0.contains(.response(sessionID: session.sessionID, from: "bob", accepted: true)) })
        try await alice.manager.sendRTSData(Data("hello".utf8), sessionID: session.sessionID)
        try await bobPhone.manager.sendRTSData(Data("hi".utf8), sessionID: session.sessionID)
        try await bobPhone.manager.sendRTSControl("undo", sessionID: session.sessionID)
        #expect(await bobPhone.wait { _ in bobPhone.data.map(\.data) == [Data("hello".utf8)] })
        #expect(await alice.wait { $0.contains(.control(sessionID: session.sessionID, from: "bob", "undo")) })
        #expect(alice.data.map(\.data) == [Data("hi".utf8)] && alice.data.first?.sessionID == session.sessionID)
        try await alice.manager.terminateRTS(sessionID: session.sessionID)
        #expect(await bobPhone.wait { $0.contains(.terminate(sessionID: session.sessionID, by: "alice", reason: .completed)) })
        // A refused session needs no terminate: it is over.
        let second = try await alice.manager.requestRTS(callee: "bob")
        try await bobDesk.manager.responseRTS(sessionID: second.sessionID, accept: false)
        #expect(await alice.wait { $0.contains(.response(sessionID: second.sessionID, from: "bob", accepted: false)) })
        await #expect(throws: SignalingError.self) { try await alice.manager.terminateRTS(sessionID: second.sessionID) }
        let records = try await server.server.hub.rtsRecords(of: "alice")
        #expect(records.map(\.endReason) == [.rejected, .completed], "\(records)")
        await probe.close()
        for member in [alice, bobPhone, bobDesk] { await member.finish() }
    }

    @Test func oversizedAndMalformedMessagesAreRefusedAndAFloodIsHeldToTheQuota() async throws {
        // On a thread of its own (Heavy), so that the bound below measures the server's answer.
        // In CI it once read 1.7 s in the first seconds of the run, when hundreds of tests start
        // on the shared pool's two threads: dozens of suites ended at the same instant 15 s in,
        // their tasks having waited for a thread. The server's event loops are not on that pool.
        try await Heavy.run {
            let server = try await TestServer.start { configuration in
                configuration.rts.quota.messagesPerSecond = 100
                configuration.rts.quota.bytesPerSecond = 1_048_576
            }
            defer { Task { await server.server.shutdown() } }
            let ann = try await Member(server, "ann")
            let ben = try await Member(server, "ben")
            try await ann.manager.reserveConference(name: "flood")
            let channel = try await ann.manager.joinConference(name: "flood").channelID
            _ = try await ben.manager.joinConference(name: "flood")
            // The API refuses a message over 50 KB before sending it.
            do throws(SignalingError) {
                try await ann.manager.sendConferenceData(Data(count: 50 * 1_024 + 1), channelID: channel)
                Issue.record("51201 bytes must be refused")
            } catch {
                #expect(error.code == .messageTooLarge)
            }
            // A client that ignores the quota: ann's own device connects a second data connection
            // (it replaces her first) and sends raw.
            let events = Locked<[ServerEvent]>([])
            let raw = try await RTSDataConnection.open(server: server.url, token: try await server.token("ann"), device: "default",
                                                       received: { inbound in if case .event(let event) = inbound { events.withLock { $0.append(event) } } },
                                                       ended: { _ in })
            func frame(_ payload: Data, to peer: String = "") -> ByteBuffer {
                var buffer = ByteBufferAllocator().buffer(capacity: payload.count + 32)
                RTSFrame.writeHeader(into: &buffer, channelID: channel, peer: peer)
                buffer.writeBytes(payload)
                return buffer
            }
            try await raw.sendRaw(frame(Data(count: 60_000)))                     // 1: too large
            try await raw.sendRaw(frame(Data("x".utf8), to: "mallory"))           // 2: not a member
            try await raw.sendRaw(ByteBuffer(bytes: [1, 2, 3]))                   // 3: shorter than a header
            try await raw.sendRaw(ByteBuffer(bytes: [9] + [UInt8](repeating: 0, count: 12)))  // 4: unknown kind
            var badName = ByteBufferAllocator().buffer(capacity: 16)
            badName.writeInteger(UInt8(1))
            badName.writeInteger(channel)
            badName.writeInteger(UInt8(2))
            badName.writeBytes([0xFF, 0xFE])
            try await raw.sendRaw(badName)                                        // 5: peer not UTF-8
            try await raw.sync()
            let codes = try events.withLock { $0 }.map { try $0.body(Event.RTSDataRefused.self) }.map { ($0.first, $0.code) }
            #expect(codes.map(\.0) == [1, 2, 3, 4, 5], "\(codes)")
            #expect(codes.map(\.1) == [413, 9_202, 400, 400, 400], "\(codes)")
            // A flood of 400 one-byte messages at once, four times the quota of 100 a second: none
            // is refused (the sender is held to the quota: its connection is read no faster, and
            // TCP pushes back on it), all arrive in order, over at least the 3 s the quota takes.
            events.withLock { $0.removeAll() }
            let floodStarted = ContinuousClock.now
            let flood = Task {
                for index in 0..<400 { try await raw.sendRaw(frame(Data([UInt8(index % 256)]))) }
                try await raw.sync(timeout: .seconds(30))
            }
            // The server answers signaling at once meanwhile.
            try await Task.sleep(for: .seconds(1))
            let started = ContinuousClock.now
            try await ben.manager.reserveConference(name: "other")
            let answered = ContinuousClock.now - started
            // A debug build under a whole `swift test` run answered in 784 ms once (its swift-nio
            // is unoptimized, and every suite shares the process's two threads): the bound of the
            // optimized build CI runs stays 500 ms.
            #if DEBUG
            let bound = Duration.seconds(3)
            #else
            let bound = Duration.milliseconds(500)
            #endif
            #expect(answered < bound, "signaling answered in \(answered) during the flood")
            try await flood.value
            let floodTook = ContinuousClock.now - floodStarted
            #expect(await ben.wait(timeout: 20) { _ in ben.data.count == 400 }, "\(ben.data.count) of 400 relayed")
            #expect(ben.data.map { $0.data.first ?? 0 } == (0..<400).map { UInt8($0 % 256) }, "in order")
            #expect(events.withLock { $0 }.isEmpty, "nothing refused: \(events.withLock { $0.map(\.type) })")
            // The bucket's second (100 messages, less the 4 charged above) and 3 s more at 100 a second,
            // however fast the sender went (how many messages found the bucket empty depends on it).
            #expect(floodTook > .milliseconds(2_900), "held to the quota: 400 messages in \(floodTook)")
            let statistics = await server.server.relay.statistics
            #expect(statistics.held > 0 && statistics.refused == 5 && statistics.malformed >= 3, "\(statistics)")
            await raw.close()
            for member in [ann, ben] { await member.finish() }
        }
    }

    @Test func aMemberThatReadsNothingIsDisconnectedAsTooSlowAndTheOthersGoOn() async throws {
        // Alone: ben must read 2 MiB/s without a pause of half a second (his queue here is 1 MiB),
        // which a debug build beside a browser and other real-time tests did not always manage.
        try await Heavy.runAlone {
            // 2 MiB/s: in a debug build, masking what a client sends (swift-nio, byte by byte) costs
            // an event loop about 5 MB/s, and every client of this process shares two loops.
            let server = try await TestServer.start { configuration in
                configuration.rtsRelay.queueLimit = (bytes: 1_048_576, messages: 1_000)
                configuration.rts.quota.bytesPerSecond = 2 * 1_048_576
            }
            defer { Task { await server.server.shutdown() } }
            let ann = try await Member(server, "ann")
            let ben = try await Member(server, "ben")
            // Carol's data connection stops reading at its first message: its reader never returns.
            let carolSignaling = try await server.client("carol", device: "default")
            let carol = try await RTSDataConnection.open(server: server.url, token: try await server.token("carol"), device: "default",
                                                         received: { _ in try? await Task.sleep(for: .seconds(3_600)) }, ended: { _ in })
            try await ann.manager.reserveConference(name: "stall")
            let channel = try await ann.manager.joinConference(name: "stall").channelID
            _ = try await ben.manager.joinConference(name: "stall")
            _ = try await carolSignaling.client.request(MessageType.joinConference, Request.JoinConference(name: "stall"),
                                                        as: Reply.JoinConference.self)
            // 12 MB to everyone: more than carol's socket buffers and her 1 MiB queue; ben reads it all.
            let chunk = Data(repeating: 7, count: 20_000)
            for _ in 0..<600 { try await ann.manager.sendConferenceData(chunk, channelID: channel) }
            #expect(await ann.wait { $0.contains(.userLeft(channelID: channel, conference: "stall", account: "carol", reason: .tooSlow)) })
            let left = await carolSignaling.next(MessageType.rtsLeftConference, timeout: .seconds(10))
            #expect(try left?.body(Event.RTSLeftConference.self).code == SignalingError.Code.rtsTooSlow.rawValue)
            #expect(await ben.wait(timeout: 30) { _ in ben.data.count == 600 },
                    "ben got \(ben.data.count) of 600: \(ben.events.withLock { $0 }.filter { if case .data = $0 { false } else { true } })")
            // The server dropped carol's connection (her client cannot tell: its reader is the one stuck).
            let dropped = await eventually(timeout: .seconds(10)) { await server.server.relay.statistics.connections == 2 }
            #expect(dropped, "the relay holds ann's and ben's connections only")
            let tooSlow = await server.server.relay.statistics.tooSlow
            #expect(tooSlow == 1, "\(tooSlow) connections dropped as too slow")
            await carol.close()
            for member in [ann, ben] { await member.finish() }
        }
    }

    /// What the issue asks of the data path: a file of 20 MB in 4 KB chunks through the server,
    /// beside a two-member audio meeting on the same server and a third client's signaling.
    /// The file arrives identical; the meeting's audio conceals nothing while it flows; every
    /// request of the third client is answered within 50 ms.
    @Test func twentyMegabytesIn4KBChunksLeaveAMeetingsAudioWholeAndSignalingPrompt() async throws {
        try await Heavy.runAlone {
            let server = try await TestServer.start()
            defer { Task { await server.server.shutdown() } }
            let alice = try await MeetingFlows.Member(server: server, account: "alice", audio: "sine:440")
            let bob = try await MeetingFlows.Member(server: server, account: "bob", audio: "sine:660")
            try await alice.manager.reserveMeeting(name: "beside")
            for member in [alice, bob] { _ = try await member.manager.joinMeeting(name: "beside") }
            for member in [alice, bob] { #expect(await member.wait(for: MeetingFlows.connected) != nil) }
            // Past the start-up (the first packets fill the jitter buffers): a second of each.
            #expect(await eventually(timeout: .seconds(15)) { alice.heardCount("bob") >= 96_000 && bob.heardCount("alice") >= 96_000 })
            func audio(_ member: MeetingFlows.Member) async throws -> (concealed: Int, total: Int) {
                let streams = try #require(await member.manager.currentMeetingSession).receiveStatistics.streams.filter { $0.kind == .audio }
                return (streams.map(\.concealedSamples).reduce(0, +), streams.map(\.totalSamplesReceived).reduce(0, +))
            }
            let before = (alice: try await audio(alice), bob: try await audio(bob))

            let ann = try await Member(server, "ann")
            let ben = try await Member(server, "ben")
            let carl = try await Member(server, "carl")
            try await ann.manager.reserveConference(name: "files")
            let channel = try await ann.manager.joinConference(name: "files").channelID
            _ = try await ben.manager.joinConference(name: "files")
            // Carl's requests while the file flows: reserve, join and leave a conference of his own.
            let transferring = Locked(true)
            let prober = Task { () -> (times: [(String, Duration)], failures: [String]) in
                var times: [(String, Duration)] = []
                var failures: [String] = []
                var round = 0
                /// Times one request; a failure is recorded with what it was.
                func timed<T>(_ what: String, _ request: () async throws(SignalingError) -> T) async -> T? {
                    let started = ContinuousClock.now
                    defer { times.append(("\(what) \(round)", ContinuousClock.now - started)) }
                    do {
                        return try await request()
                    } catch {
                        failures.append("\(what) \(round) after \(ContinuousClock.now - started): \(error.message) (\(error.code.rawValue))")
                        return nil
                    }
                }
                while transferring.withLock({ $0 }) {
                    round += 1
                    let name = "probe-\(round)"
                    guard await timed("reserve", { () async throws(SignalingError) in try await carl.manager.reserveConference(name: name) }) != nil,
                          let joined = await timed("join", { () async throws(SignalingError) in
                              try await carl.manager.joinConference(name: name, disableRecord: true)
                          }),
                          await timed("leave", { () async throws(SignalingError) in try await carl.manager.leaveConference(channelID: joined.channelID) }) != nil
                    else { break }
                    // Three requests a round, ten rounds a second: within the 50 messages a
                    // second (burst 100) the server lets a connection send.
                    try? await Task.sleep(for: .milliseconds(100))
                }
                return (times, failures)
            }
            // 20 MB of noise (a generator with a seed, so a failure is repeatable), 4 KB at a time.
            var state: UInt64 = 35
            let file = Data((0..<2_500_000).flatMap { _ -> [UInt8] in
                state ^= state << 13; state ^= state >> 7; state ^= state << 17  // xorshift64
                return withUnsafeBytes(of: state) { Array($0) }
            })
            let chunk = 4_096
            let sent = ContinuousClock.now
            for start in stride(from: 0, to: file.count, by: chunk) {
                try await ann.manager.sendConferenceData(file[start..<min(start + chunk, file.count)], channelID: channel, to: "ben")
            }
            let chunks = (file.count + chunk - 1) / chunk
            // (Counting events, not filtering them for data: a check that walks thousands of
            // events every 20 ms would be this test's own load on the machine.)
            #expect(await ben.wait(timeout: 60) { $0.count >= chunks }, "ben got \(ben.data.count) of \(chunks) chunks")
            #expect(ben.data.count == chunks)
            let took = ContinuousClock.now - sent
            transferring.withLock { $0 = false }
            let (probes, failures) = await prober.value
            #expect(failures.isEmpty, "carl's requests: \(failures)")
            var received = Data(capacity: file.count)
            for data in ben.data { received.append(data.data) }
            #expect(received.count == file.count && received == file,
                    "checksum sent \(Self.fnv1a(file)), received \(Self.fnv1a(received)) (\(received.count) bytes)")
            let after = (alice: try await audio(alice), bob: try await audio(bob))
            let heard = (alice: after.alice.total - before.alice.total, bob: after.bob.total - before.bob.total)
            let concealed = (alice: after.alice.concealed - before.alice.concealed, bob: after.bob.concealed - before.bob.concealed)
            #expect(heard.alice >= 3 * 48_000 && heard.bob >= 3 * 48_000, "both heard the other throughout: \(heard)")
            // None (the issue's 0 %); under a sanitizer, which slows everything, at most 1 %.
            let allowed = Sanitizer.frameBoundsHold ? (alice: 0, bob: 0) : (alice: heard.alice / 100, bob: heard.bob / 100)
            // (What a failure needs to be read: how many concealments, and how deep each
            // jitter buffer was by then.)
            func buffers(_ member: MeetingFlows.Member) async -> String {
                let streams = await member.manager.currentMeetingSession?.receiveStatistics.streams.filter { $0.kind == .audio } ?? []
                return streams.map { "\($0.concealmentEvents) events, target \(Int($0.jitterBufferTargetDelay * 1000)) ms, "
                    + "lost \($0.packetsLost), jitter \(Int($0.jitter * 1000)) ms" }.joined(separator: "; ")
            }
            let depths = (alice: await buffers(alice), bob: await buffers(bob))
            #expect(concealed.alice <= allowed.alice && concealed.bob <= allowed.bob,
                    "no audio concealed during the transfer: \(concealed) of \(heard) samples; alice \(depths.alice), bob \(depths.bob)")
            let sorted = probes.map(\.1).sorted()
            let slowest = probes.max { $0.1 < $1.1 } ?? ("none", .zero)
            #expect(probes.count >= 60 && slowest.1 < Self.promptAnswer, "\(probes.count) requests, the slowest \(slowest)")
            print("rts beside a meeting: 20 MB in 4 KB chunks in \(took), checksum \(Self.fnv1a(received)); "
                + "concealed alice \(concealed.alice) of \(heard.alice), bob \(concealed.bob) of \(heard.bob) samples; "
                + "\(probes.count) requests, p50 \(sorted[sorted.count / 2]), slowest \(probes.sorted { $0.1 > $1.1 }.prefix(6))")
            for member in [ann, ben, carl] { await member.finish() }
            for member in [alice, bob] { await member.manager.logout() }
        }
    }

    /// The voice channel: a P2P audio session (ICE, SRTP) beside the data. Each side hears the
    /// other's tone; while it is open neither side can be in a call (the server refuses a
    /// caller, the client its own user), and a call excludes a voice session the same way.
    @Test func aVoiceChannelCarriesBothTonesAndCallsAndVoiceSessionsExcludeEachOther() async throws {
        try await Heavy.run {
            let server = try await TestServer.start()
            defer { Task { await server.server.shutdown() } }
            let alice = try await CallFlows.Endpoint(server: server, account: "alice", audio: "sine:440", video: nil)
            let bob = try await CallFlows.Endpoint(server: server, account: "bob", audio: "sine:660", video: nil)
            let carol = try await CallFlows.Endpoint(server: server, account: "carol", audio: "sine:880", video: nil)
            func reader(_ endpoint: CallFlows.Endpoint) -> Locked<[RTSEvent]> {
                let events = Locked<[RTSEvent]>([])
                let stream = endpoint.manager.rtsEvents
                Task { for await event in stream { events.withLock { $0.append(event) } } }
                return events
            }
            let (aliceEvents, bobEvents) = (reader(alice), reader(bob))
            func level(_ endpoint: CallFlows.Endpoint, _ frequency: Double) -> Double {
                let audio = endpoint.box.seen.withLock { $0.audio.suffix(24_000).detached }
                return audio.withUnsafeBufferPointer { AudioQuality.toneLevel($0, frequency: frequency) }
            }

            let session = try await alice.manager.requestRTS(callee: "bob", services: [.data, .audio])
            #expect(await eventually(timeout: .seconds(10)) {
                bobEvents.withLock { $0.contains(.request(sessionID: session.sessionID, channelID: session.channelID, from: "alice",
                                                          services: [.data, .audio], extendMessage: nil)) }
            })
            try await bob.manager.responseRTS(sessionID: session.sessionID, accept: true)
            for events in [aliceEvents, bobEvents] {
                #expect(await eventually(timeout: .seconds(10)) {
                    events.withLock { $0.contains(.serviceStatus(sessionID: session.sessionID, .audio, .connected)) }
                }, "\(events.withLock { $0 })")
            }
            // Half a second of each tone, heard at the other side (and not its own).
            let (aliceBefore, bobBefore) = (alice.audioCount, bob.audioCount)
            #expect(await eventually(timeout: .seconds(10)) { alice.audioCount > aliceBefore + 48_000 && bob.audioCount > bobBefore + 48_000 })
            #expect(level(bob, 440) > 0.1 && level(bob, 660) < 0.02, "bob hears alice: \(level(bob, 440))")
            #expect(level(alice, 660) > 0.1 && level(alice, 440) < 0.02, "alice hears bob: \(level(alice, 660))")
            try await alice.manager.sendRTSData(Data("beside the voice".utf8), sessionID: session.sessionID)
            #expect(await eventually(timeout: .seconds(10)) {
                bobEvents.withLock { $0.contains { if case .data(let data) = $0 { data.data == Data("beside the voice".utf8) } else { false } } }
            })

            // While it is open: carol's call to alice meets a busy line (the server; NIM's way
            // with a busy callee), alice cannot call carol (her client), and bob cannot open a
            // second voice session.
            let refused = try await carol.manager.start(callee: "alice", type: .audio)
            #expect(await carol.wait { if case .control(refused, "alice", .busyLine) = $0 { true } else { false } } != nil)
            #expect(await carol.wait { if case .callRecord(let record) = $0 { record.callID == refused } else { false } } != nil)
            await #expect { _ = try await alice.manager.start(callee: "carol", type: .audio) } throws: { ($0 as? SignalingError)?.code == .busy }
            await #expect { _ = try await bob.manager.requestRTS(callee: "carol", services: [.audio]) } throws: {
                ($0 as? SignalingError)?.code == .busy
            }
            // Muted, alice sends silence.
            await alice.manager.setRTSMute(true)
            let mutedAt = bob.audioCount
            #expect(await eventually(timeout: .seconds(10)) { bob.audioCount > mutedAt + 48_000 && level(bob, 440) < 0.02 })
            await alice.manager.setRTSMute(false)

            try await alice.manager.terminateRTS(sessionID: session.sessionID)
            for events in [aliceEvents, bobEvents] {
                #expect(await eventually(timeout: .seconds(10)) {
                    events.withLock { $0.contains(.serviceStatus(sessionID: session.sessionID, .audio, .disconnected)) }
                })
            }
            let voices = (await alice.manager.currentRTSVoice, await bob.manager.currentRTSVoice)
            #expect(voices.0 == nil && voices.1 == nil)

            // The reverse: alice in a call with carol. A voice session to or from either is
            // refused (her client, and the server for bob's request to her); data alone is not.
            let call = try await alice.manager.start(callee: "carol", type: .audio)
            #expect(await carol.wait { CallFlows.invitation($0) == call } != nil)
            try await carol.manager.response(callID: call, accept: true)
            #expect(await alice.wait(for: CallFlows.isConnected) != nil)
            await #expect { _ = try await alice.manager.requestRTS(callee: "bob", services: [.audio]) } throws: {
                ($0 as? SignalingError)?.code == .busy
            }
            await #expect { _ = try await bob.manager.requestRTS(callee: "alice", services: [.data, .audio]) } throws: {
                ($0 as? SignalingError)?.code == .busy
            }
            let data = try await bob.manager.requestRTS(callee: "alice", services: [.data])
            try await bob.manager.terminateRTS(sessionID: data.sessionID)
            try await alice.manager.hangup()
            for endpoint in [alice, bob, carol] { await endpoint.manager.logout() }
        }
    }

    /// How soon signaling answers while data flows: 50 ms, as the issue asks, in the optimized
    /// build CI and users run. A debug build of swift-nio masks and unmasks WebSocket
    /// payloads byte by byte (about 5 MB/s an event loop), and this process holds the server
    /// and every client on two loops: the sender's first half second of quota (2 MiB at once)
    /// holds a loop for up to 2 s there.
    /// Under a sanitizer (an optimized build that checks every memory access), 500 ms.
    #if DEBUG
    static let promptAnswer = Duration.seconds(3)
    #else
    static let promptAnswer = Sanitizer.frameBoundsHold ? Duration.milliseconds(50) : .milliseconds(500)
    #endif

    /// FNV-1a, 64 bits: the checksum a failure prints.
    static func fnv1a(_ data: Data) -> String {
        var hash: UInt64 = 0xcbf2_9ce4_8422_2325
        for byte in data { hash = (hash ^ UInt64(byte)) &* 0x100_0000_01b3 }
        return String(hash, radix: 16)
    }
}
