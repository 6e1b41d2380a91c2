import Foundation
import MediaEngine
import MediaRouting
import Signaling
import Testing
@testable import MediaServer

/// WHIP publishers and WHEP viewers in the meeting registry: whom each gets, how they
/// leave, and that no signaling login can take their place.
@Suite struct MeetingRegistryWebRTC {
    static let certificate = try! DTLSCertificate()

    static func join(_ kind: MeetingRegistry.WebRTCJoin.Kind, session: String, ssrc: UInt32) -> MeetingRegistry.WebRTCJoin {
        MeetingRegistry.WebRTCJoin(kind: kind, meeting: "room", session: session, audioSSRC: ssrc, videoSSRC: ssrc + 1,
                                   keying: .dtls(role: .client, certificate: certificate, remoteFingerprints: [certificate.fingerprint]),
                                   media: ForwardingRouter.LegSetup.Media(audioPayloadType: 109, videoPayloadType: 120),
                                   ice: ICECredentials(ufrag: "u\(session)", password: "p\(session)-0123456789abcdef"))
    }

    /// (subscriber, publisher) legs the media plane was told to forward between.
    static func forwarding(_ commands: [MediaPlaneCommand]) -> Set<[UInt64]> {
        Set(commands.compactMap { command in
            if case .setForwarding(let subscriber, let publisher, true, true) = command { return [subscriber, publisher] }
            return nil
        })
    }

    static func legs(_ commands: [MediaPlaneCommand]) -> [ForwardingRouter.LegSetup] {
        commands.compactMap { command in
            if case .addLeg(let setup) = command { return setup }
            return nil
        }
    }

    @Test func aPublisherIsForwardedToEveryoneAndGetsNothingAViewerGetsItsOnePublisherAgainWhenItRejoins() throws {
        var meeting = MeetingHarness()
        meeting.login(1, "alice")
        meeting.login(2, "carol")
        #expect(meeting.code(meeting.reserve(1, "room")) == nil)
        #expect(meeting.code(meeting.join(1, "room", ssrc: 100)) == nil)
        let alice = try #require(Self.legs(meeting.takeCommands()).first).id

        let (_, whip) = try meeting.registry.joinWebRTC(Self.join(.publisher, session: "s1", ssrc: 200), account: "bob", grants: .all,
                                                         at: meeting.time)
        meeting.collect(whip)
        var commands = meeting.takeCommands()
        let bob = try #require(Self.legs(commands).first)
        #expect(bob.publishing && bob.media.audioPayloadType == 109 && bob.audioSSRC == 200 && bob.videoSSRC == 201)
        if case .dtls(let role, _, _) = bob.keying { #expect(role == .client) } else { Issue.record("bob's leg is keyed by DTLS") }
        #expect(Self.forwarding(commands) == [[alice, bob.id]], "alice gets bob; bob gets nobody")
        let joined = meeting.events(1).filter { $0.type == MessageType.userJoined }
        #expect(joined.count == 1 && String(decoding: joined[0].data, as: UTF8.self).contains("\"bob\""))

        meeting.collect(try meeting.registry.joinWebRTC(Self.join(.viewer(of: "alice"), session: "s2", ssrc: 300), account: "dave",
                                                         grants: .all, at: meeting.time).outputs)
        commands = meeting.takeCommands()
        let dave = try #require(Self.legs(commands).first)
        #expect(!dave.publishing)
        #expect(Self.forwarding(commands) == [[dave.id, alice], [alice, dave.id]], "dave gets alice only (and is audience to her)")

        // carol joins later: she gets bob (and dave's nothing); dave does not get her.
        #expect(meeting.code(meeting.join(2, "room", ssrc: 400)) == nil)
        commands = meeting.takeCommands()
        let carol = try #require(Self.legs(commands).first).id
        #expect(Self.forwarding(commands) == [[alice, carol], [carol, alice], [carol, bob.id], [carol, dave.id]])

        // alice leaves and comes back: dave gets her new leg.
        _ = meeting.request(1, MessageType.leaveMeeting, Request.LeaveMeeting(callID: bob.meeting))
        #expect(meeting.code(meeting.join(1, "room", ssrc: 500)) == nil)
        commands = meeting.takeCommands()
        let again = try #require(Self.legs(commands).first).id
        #expect(Self.forwarding(commands).contains([dave.id, again]))

        // A login as bob on device "whip" does not take his place (he has no connection).
        meeting.login(3, "bob", device: "whip")
        #expect(meeting.events(3).isEmpty)

        // Only bob ends his session; then everyone hears he left.
        #expect(throws: SignalingError.self) { try meeting.registry.endWebRTC(session: "s1", account: "carol", at: meeting.time) }
        #expect(throws: SignalingError.self) { try meeting.registry.endWebRTC(session: "nope", account: "bob", at: meeting.time) }
        meeting.collect(try meeting.registry.endWebRTC(session: "s1", account: "bob", at: meeting.time))
        #expect(meeting.takeCommands().contains(.removeLeg(bob.id)))
        #expect(meeting.events(2).contains { $0.type == MessageType.userLeft && String(decoding: $0.data, as: UTF8.self).contains("\"bob\"") })
        // The viewer's leg lost: it leaves as timed out.
        meeting.collect(meeting.registry.legLost(dave.id, at: meeting.time))
        #expect(meeting.events(2).contains { $0.type == MessageType.userLeft && String(decoding: $0.data, as: UTF8.self).contains("timedOut") })
    }

    @Test func webRTCJoinsFollowTheMeetingRules() throws {
        var meeting = MeetingHarness()
        meeting.login(1, "alice")
        #expect(meeting.code(meeting.reserve(1, "room")) == nil)
        func refusal(_ join: MeetingRegistry.WebRTCJoin, account: String = "bob", grants: Grants = .all) -> SignalingError.Code? {
            do {
                _ = try meeting.registry.joinWebRTC(join, account: account, grants: grants, at: meeting.time)
                return nil
            } catch {
                return error.code
            }
        }
        #expect(refusal(Self.join(.publisher, session: "a", ssrc: 10), grants: Grants(publish: false)) == .forbidden)
        #expect(refusal(Self.join(.publisher, session: "a", ssrc: 10), grants: Grants(meetings: ["x"])) == .forbidden)
        var elsewhere = Self.join(.publisher, session: "a", ssrc: 10)
        elsewhere.meeting = "nowhere"
        #expect(refusal(elsewhere) == .meetingNotFound)
        #expect(refusal(Self.join(.viewer(of: "zed"), session: "a", ssrc: 10)) == .notInMeeting)
        #expect(refusal(Self.join(.publisher, session: "a", ssrc: 0)) == .invalidRequest)
        #expect(refusal(Self.join(.publisher, session: "a", ssrc: 10)) == nil)
        #expect(refusal(Self.join(.publisher, session: "b", ssrc: 10), account: "carol") == .invalidRequest, "bob's SSRCs")
        #expect(refusal(Self.join(.publisher, session: "b", ssrc: 20)) == .alreadyInMeeting)
    }
}
