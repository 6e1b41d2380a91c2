import Foundation
import MediaEngine
import MediaRouting
import Signaling
import Testing
@testable import MediaServer

/// Drives a `MeetingRegistry` on a manual clock and collects what it sends and commands.
struct MeetingHarness {
    var registry: MeetingRegistry
    var time = ServerTime(monotonic: .seconds(1_000), epochMilliseconds: 1_790_000_000_000)
    var inbox: [ConnectionID: [RegistryHarness.Message]] = [:]
    var records: [MeetingRecord] = []
    var commands: [MediaPlaneCommand] = []
    var liveCommands: [LiveCommand] = []
    var identities: [UInt64: MeetingRegistry.Identity] = [:]
    var nextRequestID: UInt64 = 1

    init(configuration: MeetingRegistry.Configuration = MeetingRegistry.Configuration()) {
        registry = MeetingRegistry(configuration: configuration)
        registry.mediaCandidates = [MediaCandidate(host: "127.0.0.1", port: 9_000)]
        registry.liveRoomsAvailable = true
    }

    mutating func collect(_ outputs: [MeetingRegistry.Output]) {
        for output in outputs {
            switch output {
            case .send(let connection, let message):
                let data = message.encoded()
                guard let envelope = try? Envelope.decode(data, maximumSize: 1 << 20) else { fatalError("undecodable: \(String(decoding: data, as: UTF8.self))") }
                inbox[connection, default: []].append(RegistryHarness.Message(envelope: envelope, data: data))
            case .record(let record, _):
                records.append(record)
            case .mediaPlane(let command):
                commands.append(command)
            case .live(let command):
                liveCommands.append(command)
            }
        }
    }

    mutating func login(_ connection: UInt64, _ account: String, device: String = "d", grants: Grants = .all) {
        let identity = MeetingRegistry.Identity(account: account, device: device, grants: grants)
        identities[connection] = identity
        _ = registry.connected(ConnectionID(connection), identity)
    }

    mutating func request<Body: Encodable & Sendable>(_ connection: UInt64, _ type: String, _ body: Body) -> RegistryHarness.Message {
        let id = nextRequestID
        nextRequestID += 1
        let data = TypedEnvelope(id: id, type: type, body: body).encoded()
        let credentials = LegCredentials(keying: Self.key(1, id), ice: ICECredentials(ufrag: "ufrag\(id)", password: "password\(id)"),
                                         composer: ComposerCredentials(composerKeying: Self.key(2, id), serverKeying: Self.key(3, id),
                                                                       ice: ICECredentials(ufrag: "composerUfrag\(id)", password: "composerPassword\(id)")),
                                         webRTC: WebRTCLegCredentials(certificate: Self.certificate, spareAudioSSRC: 90_000 + UInt32(id),
                                                                      spareVideoSSRC: 95_000 + UInt32(id)))
        // As the server's edge decodes it from the wire.
        let decoded = try! ClientMessage.decode(data, maximumSize: 1 << 20).request
        switch decoded.map(RoutedRequest.init) {
        case .success(.meeting(let request)):
            collect(registry.handle(request, from: ConnectionID(connection), identities[connection]!, requestID: id, credentials: credentials,
                                    at: time))
        case .success:
            collect([.send(ConnectionID(connection), .error(id: id, SignalingError(.invalidRequest, "\(type): not a meeting request")))])
        case .failure(let error):
            collect([.send(ConnectionID(connection), .error(id: id, error))])
        }
        let messages = inbox[ConnectionID(connection), default: []]
        let index = messages.firstIndex { $0.envelope.id == id }!
        inbox[ConnectionID(connection)]!.remove(at: index)
        return messages[index]
    }

    func code(_ reply: RegistryHarness.Message) -> Int? {
        reply.type == MessageType.error ? (try? reply.body(ErrorBody.self))?.code : nil
    }

    /// Events delivered to a connection since the last call (removed).
    mutating func events(_ connection: UInt64) -> [RegistryHarness.Message] {
        defer { inbox[ConnectionID(connection)] = [] }
        return inbox[ConnectionID(connection), default: []]
    }

    mutating func takeCommands() -> [MediaPlaneCommand] {
        defer { commands = [] }
        return commands
    }

    /// A GCM key told apart by what it is for (`kind`: 0 a participant's, 1 the server's,
    /// 2 and 3 the composer's two) and a number (an SSRC, a request's ID).
    /// The DTLS certificate WebRTC joins' legs get.
    static let certificate = try! DTLSCertificate()

    static func key(_ kind: UInt8, _ number: UInt64) -> SRTPKeyingMaterial {
        let bytes = [kind] + withUnsafeBytes(of: number.bigEndian, Array.init) + [UInt8](repeating: 0x5A, count: 19)
        return try! SRTPKeyingMaterial(profile: .aeadAES128GCM, bytes: bytes)
    }

    static func media(_ ssrc: UInt32, video: Bool = false) -> MediaEndpoint {
        MediaEndpoint(candidates: [], srtpProfile: "AEAD_AES_128_GCM", srtpKey: key(0, UInt64(ssrc)).base64, audioSSRC: ssrc,
                      videoSSRC: video ? ssrc + 1 : nil, iceUfrag: "ufrag\(ssrc)", icePassword: "password-of-twenty-two-chars")
    }

    mutating func reserve(_ connection: UInt64, _ name: String) -> RegistryHarness.Message {
        request(connection, MessageType.reserveMeeting, Request.ReserveMeeting(name: name))
    }

    mutating func join(_ connection: UInt64, _ name: String, role: MeetingRole = .actor, ssrc: UInt32) -> RegistryHarness.Message {
        request(connection, MessageType.joinMeeting, Request.JoinMeeting(name: name, role: role, type: .audio, media: Self.media(ssrc)))
    }

    mutating func advance(_ duration: Duration) {
        time.monotonic += duration
        time.epochMilliseconds += Int64(duration / .milliseconds(1))
    }
}

/// The meeting rules on the state machine: alice (1), bob (2), carol (3), dave (4).
@Suite struct MeetingRegistryRules {
    func harness(_ configuration: MeetingRegistry.Configuration = .init()) -> MeetingHarness {
        var harness = MeetingHarness(configuration: configuration)
        for (connection, account) in [(1, "alice"), (2, "bob"), (3, "carol"), (4, "dave")] { harness.login(UInt64(connection), account) }
        return harness
    }

    @Test func joinsAndLeavesTellEveryoneInOrderAndTheLastOneOutFreesTheName() throws {
        var h = harness()
        #expect(h.code(h.reserve(1, "standup")) == nil)
        #expect(h.code(h.reserve(2, "standup")) == SignalingError.Code.meetingExists.rawValue)
        let first = try h.join(1, "standup", ssrc: 100).body(Reply.JoinMeeting.self)
        #expect(first.participants.isEmpty)
        #expect(first.media?.candidates == [MediaCandidate(host: "127.0.0.1", port: 9_000)] && first.media?.srtpProfile == "AEAD_AES_128_GCM")
        let second = try h.join(2, "standup", ssrc: 200).body(Reply.JoinMeeting.self)
        #expect(second.callID == first.callID && second.participants.map(\.account) == ["alice"])
        #expect(second.participants.first?.audioSSRC == 100)
        _ = try h.join(3, "standup", role: .audience, ssrc: 300).body(Reply.JoinMeeting.self)

        let toAlice = h.events(1)
        #expect(toAlice.map(\.type) == [MessageType.userJoined, MessageType.userJoined])
        #expect(try toAlice.map { try $0.body(Event.UserJoined.self).participant.account } == ["bob", "carol"])
        #expect(try toAlice[1].body(Event.UserJoined.self).participant.role == .audience)

        #expect(h.code(h.request(2, MessageType.leaveMeeting, Request.LeaveMeeting(callID: first.callID))) == nil)
        #expect(h.code(h.request(2, MessageType.leaveMeeting, Request.LeaveMeeting(callID: first.callID))) == SignalingError.Code.notInMeeting.rawValue,
                "leaving twice")
        let left = try #require(h.events(1).first)
        #expect(try left.body(Event.UserLeft.self) == Event.UserLeft(callID: first.callID, account: "bob", reason: .left))
        #expect(h.code(h.reserve(4, "standup")) == SignalingError.Code.meetingExists.rawValue, "still in use by alice and carol")

        h.advance(.seconds(60))
        _ = h.request(1, MessageType.leaveMeeting, Request.LeaveMeeting(callID: first.callID))
        _ = h.request(3, MessageType.leaveMeeting, Request.LeaveMeeting(callID: first.callID))
        let record = try #require(h.records.first)
        #expect(record.name == "standup" && record.reservedBy == "alice" && record.duration == 60_000)
        #expect(record.attendance.map(\.account) == ["bob", "alice", "carol"])
        #expect(record.attendance.map(\.role) == [.actor, .actor, .audience])
        #expect(record.attendance.allSatisfy { $0.reason == .left })
        #expect(record.attendance[1].duration == 60_000)
        #expect(h.registry.meetingCount == 0 && h.registry.participantCount == 0)
        #expect(h.code(h.reserve(4, "standup")) == nil, "free again once everyone left")
    }

    @Test func joiningAnUnreservedNameTwiceOrAFullMeetingAreTypedErrors() throws {
        var configuration = MeetingRegistry.Configuration()
        configuration.maximumParticipants = 2
        configuration.maximumMeetings = 2
        var h = harness(configuration)
        #expect(h.code(h.join(1, "nowhere", ssrc: 1)) == SignalingError.Code.meetingNotFound.rawValue)
        _ = h.reserve(1, "a")
        _ = h.join(1, "a", ssrc: 1)
        #expect(h.code(h.join(1, "a", ssrc: 5)) == SignalingError.Code.alreadyInMeeting.rawValue)
        #expect(h.code(h.join(2, "a", ssrc: 1)) == SignalingError.Code.invalidRequest.rawValue, "alice's SSRC")
        _ = h.join(2, "a", ssrc: 2)
        #expect(h.code(h.join(3, "a", ssrc: 3)) == SignalingError.Code.meetingFull.rawValue)
        _ = h.reserve(3, "b")
        #expect(h.code(h.reserve(4, "c")) == SignalingError.Code.tooManyMeetings.rawValue)
        #expect(h.code(h.reserve(4, "")) == SignalingError.Code.invalidRequest.rawValue)
    }

    /// A key the media plane could not use is the joining participant's typed error: no
    /// leg opens (one that did would only time out, the participant never told why).
    @Test(arguments: [("not base64!", "not valid base64"), ("c2hvcnQ=", "needs 28 bytes")])
    func aJoinWithAKeyThatDoesNotParseIsRefusedAndOpensNoLeg(key: String, message: String) throws {
        var h = harness()
        _ = h.reserve(1, "a")
        _ = h.takeCommands()
        var media = MeetingHarness.media(1)
        media.srtpKey = key
        let reply = h.request(1, MessageType.joinMeeting, Request.JoinMeeting(name: "a", role: .actor, type: .audio, media: media))
        #expect(h.code(reply) == SignalingError.Code.invalidRequest.rawValue)
        let error = try reply.body(ErrorBody.self).error
        #expect(error.message.contains("joinMeeting: media.srtpKey") && error.message.contains(message), "\(error.message)")
        #expect(h.takeCommands().isEmpty, "no leg for a key that does not parse")
        #expect(h.code(h.join(1, "a", ssrc: 1)) == nil, "the same participant joins with a good key")
    }

    /// An RTX payload type must be one the leg's media does not use: refused, naming it; a
    /// good one goes into the leg's setup. A video's RTX SSRC is nobody's SSRC either.
    @Test func aJoinsRTXPayloadTypeIsCheckedAndItsVideosRTXSSRCIsKeptApart() throws {
        var h = harness()
        _ = h.reserve(1, "a")
        _ = h.takeCommands()
        for bad: UInt8 in [96, 111, 20, 128] {
            var media = MeetingHarness.media(1, video: true)
            media.rtxPayloadType = bad
            let reply = h.request(1, MessageType.joinMeeting, Request.JoinMeeting(name: "a", role: .actor, type: .video, media: media))
            #expect(h.code(reply) == SignalingError.Code.invalidRequest.rawValue)
            #expect(try reply.body(ErrorBody.self).error.message.contains("media.rtxPayloadType \(bad)"))
        }
        #expect(h.takeCommands().isEmpty)
        var media = MeetingHarness.media(1, video: true)
        media.rtxPayloadType = 97
        #expect(h.code(h.request(1, MessageType.joinMeeting, Request.JoinMeeting(name: "a", role: .actor, type: .video, media: media))) == nil)
        let setups = h.takeCommands().compactMap { command -> ForwardingRouter.LegSetup? in
            if case .addLeg(let setup) = command { return setup }
            return nil
        }
        #expect(setups.map(\.media.videoRTXPayloadType) == [97])
        // Alice's video is SSRC 2: its RTX SSRC is taken, as her SSRCs are.
        let rtx = RTXStream.ssrc(forVideo: 2)
        #expect(h.code(h.join(2, "a", ssrc: rtx)) == SignalingError.Code.invalidRequest.rawValue)
        #expect(h.code(h.join(2, "a", ssrc: 5)) == nil)
    }

    /// A simulcast joiner's layers: refused (naming the field) unless two or three, the
    /// first under the video SSRC, each larger than the last; their SSRCs are kept apart
    /// from everyone's. Good ones reach the leg's setup.
    @Test func aJoinsSimulcastLayersAreCheckedAndTheirSSRCsKeptApart() throws {
        var h = harness()
        _ = h.reserve(1, "a")
        _ = h.takeCommands()
        typealias Layer = MediaEndpoint.VideoLayer
        let good = [Layer(ssrc: 2, width: 160, height: 90), Layer(ssrc: 20, width: 320, height: 180), Layer(ssrc: 21, width: 640, height: 360)]
        let bad: [[Layer]] = [
            [good[0]],
            good + [Layer(ssrc: 22, width: 1280, height: 720)],
            [Layer(ssrc: 20, width: 160, height: 90), Layer(ssrc: 2, width: 320, height: 180)],
            [good[1], good[0]],
            [good[0], Layer(ssrc: 20, width: 160, height: 180)],
            [good[0], Layer(ssrc: 20, width: 100_000, height: 180)],
            [good[0], Layer(ssrc: 1, width: 320, height: 180)],
        ]
        for layers in bad {
            var media = MeetingHarness.media(1, video: true)
            media.videoLayers = layers
            let reply = h.request(1, MessageType.joinMeeting, Request.JoinMeeting(name: "a", role: .actor, type: .video, media: media))
            #expect(h.code(reply) == SignalingError.Code.invalidRequest.rawValue, "\(layers)")
            let message = try reply.body(ErrorBody.self).error.message
            #expect(message.contains("media.videoLayers") || message.contains("SSRC"), "\(message)")
        }
        #expect(h.takeCommands().isEmpty)
        var media = MeetingHarness.media(1, video: true)
        media.videoLayers = good
        #expect(h.code(h.request(1, MessageType.joinMeeting, Request.JoinMeeting(name: "a", role: .actor, type: .video, media: media))) == nil)
        let setups = h.takeCommands().compactMap { command -> ForwardingRouter.LegSetup? in
            if case .addLeg(let setup) = command { return setup }
            return nil
        }
        #expect(setups.first?.videoLayers.map(\.ssrc) == [2, 20, 21])
        #expect(setups.first?.videoLayers.map(\.width) == [160, 320, 640])
        #expect(h.code(h.join(2, "a", ssrc: 21)) == SignalingError.Code.invalidRequest.rawValue, "a layer's SSRC is taken")
        #expect(h.code(h.join(2, "a", ssrc: 5)) == nil)
    }

    /// The size a member shows another's video at goes to the media plane; a size out of
    /// range, or a user not in the meeting, is refused.
    @Test func aShownVideoSizeReachesTheMediaPlane() throws {
        var h = harness()
        _ = h.reserve(1, "a")
        let id = try h.join(1, "a", ssrc: 1).body(Reply.JoinMeeting.self).callID
        _ = h.join(2, "a", ssrc: 5)
        _ = h.takeCommands()
        #expect(h.code(h.request(2, MessageType.setVideoSize, Request.SetVideoSize(callID: id, user: "alice", width: 320, height: 180))) == nil)
        let commands = h.takeCommands()
        #expect(commands.contains { if case .setVideoSize(_, _, 320, 180) = $0 { true } else { false } }, "\(commands)")
        #expect(h.code(h.request(2, MessageType.setVideoSize, Request.SetVideoSize(callID: id, user: "alice", width: -1, height: 180)))
            == SignalingError.Code.invalidRequest.rawValue)
        #expect(h.code(h.request(2, MessageType.setVideoSize, Request.SetVideoSize(callID: id, user: "carol", width: 320, height: 180)))
            == SignalingError.Code.notInMeeting.rawValue)
        #expect(h.code(h.request(2, MessageType.setVideoSize, Request.SetVideoSize(callID: id, user: "bob", width: 320, height: 180)))
            == SignalingError.Code.notInMeeting.rawValue, "not one's own")
        #expect(h.takeCommands().isEmpty)
    }

    @Test func anUnjoinedReservationLapses() {
        var configuration = MeetingRegistry.Configuration()
        configuration.reservationLifetime = .seconds(60)
        var h = harness(configuration)
        _ = h.reserve(1, "later")
        #expect(h.registry.nextDeadline == h.time.monotonic + .seconds(60))
        h.advance(.seconds(59))
        h.collect(h.registry.tick(at: h.time))
        #expect(h.code(h.reserve(2, "later")) == SignalingError.Code.meetingExists.rawValue)
        h.advance(.seconds(1))
        h.collect(h.registry.tick(at: h.time))
        #expect(h.registry.meetingCount == 0 && h.records.isEmpty, "nobody joined: no record")
        #expect(h.code(h.reserve(2, "later")) == nil)
    }

    @Test func grantsLimitNamesAndPublishing() {
        var h = harness()
        h.login(5, "eve", grants: Grants(meetings: ["open"], publish: false))
        #expect(h.code(h.reserve(5, "secret")) == SignalingError.Code.forbidden.rawValue)
        #expect(h.code(h.reserve(5, "open")) == nil)
        #expect(h.code(h.join(5, "open", role: .actor, ssrc: 7)) == SignalingError.Code.forbidden.rawValue)
        let joined = h.join(5, "open", role: .audience, ssrc: 7)
        #expect(h.code(joined) == nil)
        let id = (try? joined.body(Reply.JoinMeeting.self).callID) ?? 0
        #expect(h.code(h.request(5, MessageType.setMeetingRole, Request.SetMeetingRole(callID: id, role: .actor)))
            == SignalingError.Code.forbidden.rawValue)
    }

    @Test func theMediaPlaneFollowsJoinsMutesRolesAndLeaves() throws {
        var h = harness()
        _ = h.reserve(1, "m")
        let id = try h.join(1, "m", ssrc: 10).body(Reply.JoinMeeting.self).callID
        let aliceLeg = try #require(h.takeCommands().compactMap { if case .addLeg(let leg) = $0 { leg } else { nil } }.first)
        #expect(aliceLeg.publishing && aliceLeg.inboundKeying == MeetingHarness.key(0, 10) && aliceLeg.ice.ufrag.hasPrefix("ufrag"))
        _ = h.join(2, "m", role: .audience, ssrc: 20)
        let commands = h.takeCommands()
        guard case .addLeg(let bobLeg) = commands.first else { Issue.record("no leg for bob"); return }
        #expect(!bobLeg.publishing)
        #expect(commands.dropFirst() == [.setForwarding(subscriber: aliceLeg.id, publisher: bobLeg.id, audio: true, video: true),
                                         .setForwarding(subscriber: bobLeg.id, publisher: aliceLeg.id, audio: true, video: true)])

        #expect(h.code(h.request(2, MessageType.setMeetingMute, Request.SetMeetingMute(callID: id, user: "alice", audio: true))) == nil)
        #expect(h.takeCommands() == [.setForwarding(subscriber: bobLeg.id, publisher: aliceLeg.id, audio: false, video: true)])
        #expect(h.code(h.request(2, MessageType.setMeetingMute, Request.SetMeetingMute(callID: id, user: "carol", audio: true)))
            == SignalingError.Code.notInMeeting.rawValue, "muting a user who is not there")
        #expect(h.code(h.request(3, MessageType.setMeetingMute, Request.SetMeetingMute(callID: id, user: "alice", audio: true)))
            == SignalingError.Code.notInMeeting.rawValue, "carol is not in the meeting")

        _ = h.events(1)
        #expect(h.code(h.request(2, MessageType.setMeetingRole, Request.SetMeetingRole(callID: id, role: .actor))) == nil)
        #expect(h.takeCommands() == [.setPublishing(leg: bobLeg.id, true)])
        #expect(try h.events(1).first?.body(Event.MeetingRoleChanged.self) == Event.MeetingRoleChanged(callID: id, account: "bob", role: .actor))

        _ = h.request(2, MessageType.leaveMeeting, Request.LeaveMeeting(callID: id))
        #expect(h.takeCommands() == [.removeLeg(bobLeg.id)])
    }

    @Test func aParticipantWhoseConnectionOrLegIsLostTimesOut() throws {
        var configuration = MeetingRegistry.Configuration()
        configuration.reconnectGrace = .seconds(10)
        var h = harness(configuration)
        _ = h.reserve(1, "m")
        let id = try h.join(1, "m", ssrc: 10).body(Reply.JoinMeeting.self).callID
        _ = h.join(2, "m", ssrc: 20)
        _ = h.join(3, "m", ssrc: 30)
        _ = h.events(1)

        // bob's signaling drops and comes back in time: nothing happens.
        h.registry.disconnected(ConnectionID(2), at: h.time)
        h.advance(.seconds(5))
        h.login(12, "bob")
        h.advance(.seconds(10))
        h.collect(h.registry.tick(at: h.time))
        #expect(h.events(1).isEmpty)

        // carol's does not.
        h.registry.disconnected(ConnectionID(3), at: h.time)
        h.advance(.seconds(10))
        h.collect(h.registry.tick(at: h.time))
        #expect(try h.events(1).map { try $0.body(Event.UserLeft.self) } == [Event.UserLeft(callID: id, account: "carol", reason: .timedOut)])
        #expect(try h.events(12).map { try $0.body(Event.UserLeft.self).account } == ["carol"], "bob hears it on his new connection")

        // bob's media leg is lost.
        _ = h.takeCommands()
        let bobLeg: UInt64 = 2
        #expect(h.registry.owner(ofLeg: bobLeg)?.account == "bob")
        h.collect(h.registry.legLost(bobLeg, at: h.time))
        #expect(h.takeCommands() == [.removeLeg(bobLeg)])
        #expect(try h.events(1).map { try $0.body(Event.UserLeft.self) } == [Event.UserLeft(callID: id, account: "bob", reason: .timedOut)])
    }

    @Test func shutdownTellsEveryParticipantAndKeepsTheRecords() throws {
        var h = harness()
        _ = h.reserve(1, "m")
        let id = try h.join(1, "m", ssrc: 10).body(Reply.JoinMeeting.self).callID
        _ = h.join(2, "m", ssrc: 20)
        _ = h.events(1)
        h.advance(.seconds(3))
        h.collect(h.registry.shutdown(at: h.time))
        for connection: UInt64 in [1, 2] {
            let events = h.events(connection)
            #expect(events.map(\.type) == [MessageType.meetingError], "no userLeft, just the error")
            #expect(try events.first?.body(Event.MeetingError.self).error.code == .serverUnavailable)
        }
        let record = try #require(h.records.first)
        #expect(record.callID == id && record.attendance.count == 2 && record.attendance.allSatisfy { $0.reason == .kicked })
        #expect(h.registry.meetingCount == 0)
    }

    @Test func roleChangesSplitTheAttendance() throws {
        var h = harness()
        _ = h.reserve(1, "m")
        let id = try h.join(1, "m", role: .audience, ssrc: 10).body(Reply.JoinMeeting.self).callID
        h.advance(.seconds(2))
        _ = h.request(1, MessageType.setMeetingRole, Request.SetMeetingRole(callID: id, role: .actor))
        h.advance(.seconds(3))
        _ = h.request(1, MessageType.leaveMeeting, Request.LeaveMeeting(callID: id))
        let record = try #require(h.records.first)
        #expect(record.attendance.map(\.role) == [.audience, .actor])
        #expect(record.attendance.map(\.duration) == [2_000, 3_000])
        #expect(record.attendance.map(\.reason) == [nil, .left])
    }
}

@Suite struct MeetingRecordStore {
    @Test func meetingRecordsSurviveAReopenWithTheirAttendanceInOrder() async throws {
        let path = FileManager.default.temporaryDirectory.appendingPathComponent("meetings-\(UInt32.random(in: 0 ... .max)).sqlite").path
        defer { try? FileManager.default.removeItem(atPath: path) }
        let record = MeetingRecord(callID: 1 << 52 | 5, name: "weekly", reservedBy: "alice", startedAt: 1_000, endedAt: 61_000, attendance: [
            .init(account: "bob", device: "phone", role: .audience, joinedAt: 1_000, leftAt: 3_000, reason: nil),
            .init(account: "bob", device: "phone", role: .actor, joinedAt: 3_000, leftAt: 61_000, reason: .timedOut),
            .init(account: "alice", device: "d", role: .actor, joinedAt: 2_000, leftAt: 61_000, reason: .left),
        ])
        do {
            let store = try SQLiteCallStore(path: path)
            try await store.saveMeeting(record)
            try await store.saveMeeting(record)
        }
        let reopened = try SQLiteCallStore(path: path)
        #expect(try await reopened.meetingRecords(of: "bob", limit: 10) == [record], "saved twice, stored once")
        #expect(try await reopened.meetingRecords(of: nil, limit: 10) == [record])
        #expect(try await reopened.meetingRecords(of: "carol", limit: 10).isEmpty)
    }
}
