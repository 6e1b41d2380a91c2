import Foundation
import Signaling
import Testing
@testable import MediaServer

/// The live-room rules (NIM's) on the meeting state machine: host alice (1), co-hosts bob
/// (2), carol (3), dave (4), one too many erin (5); frank (6) joins plainly.
@Suite struct LiveRoomRegistryRules {
    static let url = "rtmp://127.0.0.1:1935/live/secret-key"

    func harness() -> MeetingHarness {
        var harness = MeetingHarness()
        for (connection, account) in [(1, "alice"), (2, "bob"), (3, "carol"), (4, "dave"), (5, "erin"), (6, "frank")] {
            harness.login(UInt64(connection), account)
        }
        return harness
    }

    func join(_ h: inout MeetingHarness, _ connection: UInt64, ssrc: UInt32, bypass: BypassStreaming?, role: MeetingRole = .actor,
              name: String = "show") -> RegistryHarness.Message {
        h.request(connection, MessageType.joinMeeting,
                  Request.JoinMeeting(name: name, role: role, type: .video, media: MeetingHarness.media(ssrc, video: true), bypass: bypass))
    }

    /// A live room with alice hosting: its callID.
    func hosted(_ h: inout MeetingHarness, mixMode: Int? = nil) throws -> UInt64 {
        _ = h.reserve(1, "show")
        let reply = try join(&h, 1, ssrc: 100, bypass: BypassStreaming(url: Self.url, mixMode: mixMode)).body(Reply.JoinMeeting.self)
        return reply.callID
    }

    @Test func theHostStartsTheComposerOnAHiddenLegWithKeysOfItsOwn() throws {
        var h = harness()
        let id = try hosted(&h)
        let commands = h.takeCommands()
        guard case .addLeg(let host) = commands.first, case .addLeg(let composer) = commands.dropFirst().first else {
            Issue.record("expected the host's leg, then the composer's: \(commands)")
            return
        }
        #expect(host.account == "alice" && composer.account == "" && !composer.publishing && composer.videoSSRC == nil)
        #expect(composer.inboundKeying == MeetingHarness.key(2, 2) && composer.outboundKeying == MeetingHarness.key(3, 2)
                    && composer.ice.ufrag == "composerUfrag2",
                "the join's (request 2) composer credentials")
        #expect(commands.contains(.setForwarding(subscriber: composer.id, publisher: host.id, audio: true, video: true)))
        guard case .start(let setup) = h.liveCommands.first else {
            Issue.record("no start: \(h.liveCommands)")
            return
        }
        #expect(setup.meeting == id && setup.leg == composer.id && setup.url == Self.url && setup.mixMode == 0)
        #expect(setup.participants.map(\.account) == ["alice"] && setup.audioSSRC == composer.audioSSRC)
        #expect(!setup.description.contains("secret-key") && !setup.description.contains("composer2"), "keys and URL stay out of logs")
        #expect(h.events(1).isEmpty, "nobody hears of the composer")
    }

    @Test func coHostsJoinInOrderAndTheLayoutFollowsThem() throws {
        var h = harness()
        let id = try hosted(&h)
        h.liveCommands = []
        #expect(h.code(join(&h, 2, ssrc: 200, bypass: BypassStreaming())) == nil)
        #expect(h.code(join(&h, 3, ssrc: 300, bypass: BypassStreaming())) == nil)
        #expect(h.liveCommands.last == .participants(meeting: id, [participant("alice", 100), participant("bob", 200), participant("carol", 300)]))
        #expect(h.events(1).map(\.type) == [MessageType.userJoined, MessageType.userJoined], "the host sees co-hosts join")
    }

    @Test func aFifthParticipantGetsTheUserCountLimit() throws {
        var h = harness()
        _ = try hosted(&h)
        for (connection, ssrc) in [(UInt64(2), UInt32(200)), (3, 300), (4, 400)] {
            #expect(h.code(join(&h, connection, ssrc: ssrc, bypass: BypassStreaming())) == nil)
        }
        let refused = join(&h, 5, ssrc: 500, bypass: BypassStreaming())
        #expect(h.code(refused) == 508)
        #expect(try refused.body(ErrorBody.self).message.contains("holds its host and 3 co-hosts"))
    }

    @Test func withoutALivePlaneLiveJoinsAndControlsAreRefused() throws {
        var h = harness()
        h.registry.liveRoomsAvailable = false
        _ = h.reserve(1, "show")
        #expect(h.code(join(&h, 1, ssrc: 100, bypass: BypassStreaming(url: Self.url))) == SignalingError.Code.serverUnavailable.rawValue)
        #expect(h.code(h.request(1, MessageType.setBypassStreamingEnabled, Request.SetBypassStreamingEnabled(callID: 1, enabled: false)))
            == SignalingError.Code.serverUnavailable.rawValue)
        #expect(h.code(join(&h, 1, ssrc: 100, bypass: nil)) == nil, "a plain join still works")
    }

    @Test func aCoHostCannotJoinBeforeTheHost() throws {
        var h = harness()
        _ = h.reserve(1, "show")
        let refused = join(&h, 2, ssrc: 200, bypass: BypassStreaming())
        #expect(h.code(refused) == SignalingError.Code.liveRoomHostAbsent.rawValue)
        #expect(try refused.body(ErrorBody.self).message.contains("has no host yet"))
        #expect(h.liveCommands.isEmpty)
    }

    @Test func mismatchedJoinsRolesAndASecondHostAreRefused() throws {
        var h = harness()
        _ = try hosted(&h)
        #expect(h.code(join(&h, 6, ssrc: 600, bypass: nil)) == SignalingError.Code.liveRoomMismatch.rawValue, "a plain join of a live room")
        #expect(h.code(join(&h, 2, ssrc: 200, bypass: BypassStreaming(url: Self.url))) == SignalingError.Code.liveRoomHasHost.rawValue)
        #expect(h.code(join(&h, 3, ssrc: 300, bypass: BypassStreaming(), role: .audience)) == SignalingError.Code.liveRoomRole.rawValue)
        #expect(h.code(join(&h, 4, ssrc: 0x4C49_5645, bypass: BypassStreaming())) == SignalingError.Code.invalidRequest.rawValue,
                "the composer's SSRC")

        _ = h.reserve(6, "plain")
        #expect(h.code(join(&h, 6, ssrc: 600, bypass: nil, name: "plain")) == nil)
        #expect(h.code(join(&h, 5, ssrc: 500, bypass: BypassStreaming(url: Self.url), name: "plain")) == SignalingError.Code.liveRoomMismatch.rawValue,
                "a running plain meeting does not become a live room")
    }

    @Test func badURLsAndLayoutsAreTypedErrorsNamingTheProblem() throws {
        var h = harness()
        _ = h.reserve(1, "show")
        let scheme = join(&h, 1, ssrc: 100, bypass: BypassStreaming(url: "ftp://example.com/live"))
        #expect(h.code(scheme) == SignalingError.Code.bypassInvalidURL.rawValue)
        let mode = join(&h, 1, ssrc: 100, bypass: BypassStreaming(url: Self.url, mixMode: 7))
        #expect(h.code(mode) == SignalingError.Code.bypassLayout.rawValue)
        #expect(try mode.body(ErrorBody.self).message.contains("mix mode 7"))
        let missing = join(&h, 1, ssrc: 100, bypass: BypassStreaming(url: Self.url, mixMode: 4))
        #expect(try missing.body(ErrorBody.self).message.contains("custom layout"))
        let outside = #"{"areas":[{"account":"alice","x":0.5,"y":0,"width":0.7,"height":1}]}"#
        let refused = join(&h, 1, ssrc: 100, bypass: BypassStreaming(url: Self.url, mixMode: 4, customLayout: outside))
        #expect(h.code(refused) == SignalingError.Code.bypassLayout.rawValue)
        #expect(try refused.body(ErrorBody.self).message.contains("alice"))
        #expect(h.liveCommands.isEmpty && h.registry.participantCount == 0, "nothing started")
    }

    @Test func onlyTheHostControlsThePushAndBadSwitchesKeepTheOldURL() throws {
        var h = harness()
        let id = try hosted(&h)
        #expect(h.code(join(&h, 2, ssrc: 200, bypass: BypassStreaming())) == nil)
        h.liveCommands = []
        let second = "rtmp://127.0.0.1:1935/live/second"
        #expect(h.code(h.request(2, MessageType.switchBypassStreamingURL, Request.SwitchBypassStreamingURL(callID: id, url: second)))
            == SignalingError.Code.liveRoomNotHost.rawValue)
        #expect(h.code(h.request(2, MessageType.setBypassStreamingEnabled, Request.SetBypassStreamingEnabled(callID: id, enabled: false)))
            == SignalingError.Code.liveRoomNotHost.rawValue)
        #expect(h.code(h.request(1, MessageType.switchBypassStreamingURL, Request.SwitchBypassStreamingURL(callID: id, url: "nonsense")))
            == SignalingError.Code.bypassInvalidURL.rawValue)
        #expect(h.liveCommands.isEmpty, "refused controls reach no composer")

        #expect(h.code(h.request(1, MessageType.switchBypassStreamingURL, Request.SwitchBypassStreamingURL(callID: id, url: second))) == nil)
        #expect(h.code(h.request(1, MessageType.setBypassStreamingEnabled, Request.SetBypassStreamingEnabled(callID: id, enabled: false))) == nil)
        #expect(h.code(h.request(1, MessageType.setBypassStreamingMixMode, Request.SetBypassStreamingMixMode(callID: id, mixMode: 2))) == nil)
        let custom = #"{"areas":[{"account":"zed","x":0,"y":0,"width":1,"height":1}]}"#
        let unknown = h.request(1, MessageType.setBypassStreamingMixMode, Request.SetBypassStreamingMixMode(callID: id, mixMode: 4, customLayout: custom))
        #expect(h.code(unknown) == SignalingError.Code.bypassLayout.rawValue)
        #expect(try unknown.body(ErrorBody.self).message.contains("zed"), "an area for someone not in the room")
        #expect(h.liveCommands == [.switchURL(meeting: id, url: second), .setEnabled(meeting: id, false), .setLayout(meeting: id, mixMode: 2, customLayout: nil)])
        #expect(h.code(h.request(1, MessageType.setMeetingRole, Request.SetMeetingRole(callID: id, role: .audience)))
            == SignalingError.Code.liveRoomRole.rawValue)
    }

    @Test func theLivePlanesReportsReachTheHostOnly() throws {
        var h = harness()
        let id = try hosted(&h)
        #expect(h.code(join(&h, 2, ssrc: 200, bypass: BypassStreaming())) == nil)
        _ = h.events(1)
        h.collect(h.registry.liveReported(.status(meeting: id, output: "push", status: 505, error: nil)))
        h.collect(h.registry.liveReported(.switched(meeting: id, error: SignalingError(.bypassConnectFailed, "no answer"))))
        h.collect(h.registry.liveReported(.enabled(meeting: id, true, error: nil)))
        let events = h.events(1)
        #expect(events.map(\.type) == [MessageType.bypassStreamingStatus, MessageType.bypassStreamingURLSwitched, MessageType.bypassStreamingEnabled])
        #expect(try events[0].body(Event.BypassStreamingStatus.self).status == 505)
        #expect(try events[1].body(Event.BypassStreamingResult.self).error?.code == .bypassConnectFailed)
        #expect(try events[2].body(Event.BypassStreamingResult.self).enabled == true)
        #expect(h.events(2).isEmpty)
    }

    @Test func theHostLeavingEndsThePushAndACoHostLeavingClosesItsPlace() throws {
        var h = harness()
        let id = try hosted(&h)
        let composer = h.takeCommands().compactMap { command -> UInt64? in
            if case .addLeg(let leg) = command, leg.account.isEmpty { return leg.id }
            return nil
        }.first
        for (connection, ssrc) in [(UInt64(2), UInt32(200)), (3, 300)] {
            #expect(h.code(join(&h, connection, ssrc: ssrc, bypass: BypassStreaming())) == nil)
        }
        h.liveCommands = []
        #expect(h.code(h.request(2, MessageType.leaveMeeting, Request.LeaveMeeting(callID: id))) == nil)
        #expect(h.liveCommands == [.participants(meeting: id, [participant("alice", 100), participant("carol", 300)])])
        h.liveCommands = []
        _ = h.takeCommands()
        _ = h.events(3)
        #expect(h.code(h.request(1, MessageType.leaveMeeting, Request.LeaveMeeting(callID: id))) == nil)
        #expect(h.liveCommands == [.stop(meeting: id)])
        #expect(h.takeCommands().contains(.removeLeg(try #require(composer))))
        #expect(try h.events(3).first?.body(Event.UserLeft.self).account == "alice", "the co-hosts hear the host left")
        #expect(h.code(join(&h, 4, ssrc: 400, bypass: BypassStreaming())) == SignalingError.Code.liveRoomHostAbsent.rawValue,
                "no host: no new co-hosts")
        h.liveCommands = []
        #expect(h.code(join(&h, 5, ssrc: 500, bypass: BypassStreaming(url: Self.url))) == nil, "a new host restarts the push")
        guard case .start(let setup) = h.liveCommands.first else {
            Issue.record("no restart: \(h.liveCommands)")
            return
        }
        #expect(setup.participants.map(\.account) == ["erin", "carol"])
    }

    func participant(_ account: String, _ ssrc: UInt32) -> MeetingParticipant {
        MeetingParticipant(account: account, role: .actor, type: .video, audioSSRC: ssrc, videoSSRC: ssrc + 1)
    }
}
