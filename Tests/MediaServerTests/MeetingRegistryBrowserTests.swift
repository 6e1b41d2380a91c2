import Foundation
import MediaEngine
import MediaRouting
import Signaling
import Testing
@testable import MediaServer

/// Browsers in meetings through signaling: a join carries a JSEP offer, the answer places
/// the actors in the page's receiving sections, a renegotiation places newcomers and keeps
/// everyone where they were, and forwarding follows the placement and mute-for-me.
@Suite struct MeetingRegistryBrowser {
    static let fingerprint = "sha-256 " + (0..<32).map { String(format: "%02X", $0 * 7 % 256) }.joined(separator: ":")

    /// A browser's offer: its camera and microphone (send-only, when it publishes) and
    /// `pairs` receive-only audio and video sections, one BUNDLE transport.
    /// - Parameter simulcast: The camera as simulcast streams with these RIDs (no `a=ssrc`).
    static func offer(publishing: Bool = true, pairs: Int, ufrag: String = "br0w", simulcast: [String] = []) -> String {
        var sections: [String] = []
        var mids: [String] = []
        func section(_ kind: String, direction: String, ssrc: UInt32?) {
            let mid = "\(sections.count)"
            mids.append(mid)
            let payloadType = kind == "audio" ? 111 : 96
            var lines = ["m=\(kind) 9 UDP/TLS/RTP/SAVPF \(payloadType)", "c=IN IP4 0.0.0.0", "a=ice-ufrag:\(ufrag)",
                         "a=ice-pwd:0123456789abcdefghijklmn", "a=fingerprint:\(Self.fingerprint)", "a=setup:actpass", "a=mid:\(mid)",
                         "a=extmap:4 urn:ietf:params:rtp-hdrext:sdes:mid", "a=\(direction)", "a=rtcp-mux",
                         "a=rtpmap:\(payloadType) \(kind == "audio" ? "opus/48000/2" : "VP8/90000")"]
            if kind == "video", direction == "sendonly", !simulcast.isEmpty {
                lines += ["a=extmap:10 urn:ietf:params:rtp-hdrext:sdes:rtp-stream-id", "a=msid:me video"]
                    + simulcast.map { "a=rid:\($0) send" } + ["a=simulcast:send " + simulcast.joined(separator: ";")]
            } else if let ssrc {
                lines += ["a=msid:me \(kind)", "a=ssrc:\(ssrc) cname:page"]
            }
            sections.append(lines.joined(separator: "\r\n"))
        }
        if publishing {
            section("audio", direction: "sendonly", ssrc: 500)
            section("video", direction: "sendonly", ssrc: 501)
        }
        for _ in 0..<pairs {
            section("audio", direction: "recvonly", ssrc: nil)
            section("video", direction: "recvonly", ssrc: nil)
        }
        let head = ["v=0", "o=- 1 2 IN IP4 127.0.0.1", "s=-", "t=0 0", "a=group:BUNDLE " + mids.joined(separator: " ")]
        return (head + sections).joined(separator: "\r\n") + "\r\n"
    }

    static func forwarding(_ commands: [MediaPlaneCommand]) -> [[UInt64]: (Bool, Bool)] {
        var forwarding: [[UInt64]: (Bool, Bool)] = [:]
        for case .setForwarding(let subscriber, let publisher, let audio, let video) in commands { forwarding[[subscriber, publisher]] = (audio, video) }
        return forwarding
    }

    /// A client of ours joins with audio and video (SSRCs 100 and 101).
    static func joinWithVideo(_ meeting: inout MeetingHarness, _ connection: UInt64) -> RegistryHarness.Message {
        meeting.request(connection, MessageType.joinMeeting,
                        Request.JoinMeeting(name: "room", role: .actor, type: .video, media: MeetingHarness.media(100, video: true)))
    }

    static func leg(_ commands: [MediaPlaneCommand]) -> ForwardingRouter.LegSetup? {
        for case .addLeg(let setup) in commands { return setup }
        return nil
    }

    @Test func aBrowserGetsTheActorsInItsReceivingSectionsAndNewcomersWithItsNextOffer() throws {
        var meeting = MeetingHarness()
        meeting.login(1, "alice")
        meeting.login(2, "bob", device: "web")
        meeting.login(3, "carol")
        #expect(meeting.code(meeting.reserve(1, "room")) == nil)
        #expect(meeting.code(Self.joinWithVideo(&meeting, 1)) == nil)
        let alice = try #require(Self.leg(meeting.takeCommands())).id

        // bob's page: its camera and microphone, and one receiving pair (for alice).
        let joined = meeting.request(2, MessageType.joinMeeting,
                                     Request.JoinMeeting(name: "room", role: .actor, type: .video, sdp: Self.offer(pairs: 1)))
        let reply = try joined.body(Reply.JoinMeeting.self)
        let answer = try #require(reply.sdp)
        #expect(reply.media == nil && reply.participants.map(\.account) == ["alice"])
        #expect(reply.receiving == ["2": "alice", "3": "alice"], "\(String(describing: reply.receiving))")
        #expect(answer.contains("a=ice-lite") && answer.contains("a=setup:passive") && answer.contains("a=ssrc:100 cname:alice") && answer.contains("a=ssrc:101 cname:alice")
                && answer.contains("a=fingerprint:\(MeetingHarness.certificate.fingerprint)"), "\(answer)")
        var commands = meeting.takeCommands()
        let bob = try #require(Self.leg(commands))
        #expect(bob.audioSSRC == 500 && bob.videoSSRC == 501 && bob.publishing && bob.media.audioPayloadType == 111)
        guard case .dtls(.server, _, let fingerprints) = bob.keying else {
            Issue.record("bob's leg is keyed by DTLS, the server its DTLS server: \(bob.keying)")
            return
        }
        #expect(fingerprints.map(\.description) == [Self.fingerprint])
        var forwarding = Self.forwarding(commands)
        #expect(forwarding[[alice, bob.id]].map { $0 == (true, true) } == true && forwarding[[bob.id, alice]].map { $0 == (true, true) } == true)

        // carol arrives: bob hears of it, and gets her only once his next offer has room.
        #expect(meeting.code(meeting.join(3, "room", ssrc: 300)) == nil)
        commands = meeting.takeCommands()
        let carol = try #require(Self.leg(commands)).id
        #expect(Self.forwarding(commands)[[bob.id, carol]] == nil, "nothing for bob before his page has a place for carol")
        #expect(meeting.events(2).contains { $0.type == MessageType.userJoined })
        var renegotiated = meeting.request(2, MessageType.renegotiateMeeting, Request.RenegotiateMeeting(callID: reply.callID, sdp: Self.offer(pairs: 2)))
        var answered = try renegotiated.body(Reply.RenegotiateMeeting.self)
        #expect(answered.receiving == ["2": "alice", "3": "alice", "4": "carol"], "alice stays where she was: \(answered.receiving)")
        #expect(answered.sdp.contains("o=- ") && answered.sdp.contains(" 2 IN IP4"), "the answer's version rises: \(answered.sdp)")
        forwarding = Self.forwarding(meeting.takeCommands())
        #expect(forwarding[[bob.id, carol]].map { $0 == (true, true) } == true, "\(forwarding)")

        // Mute-for-me stays with the placement; alice leaving frees her sections.
        #expect(meeting.code(meeting.request(2, MessageType.setMeetingMute,
                                             Request.SetMeetingMute(callID: reply.callID, user: "carol", audio: true))) == nil)
        #expect(Self.forwarding(meeting.takeCommands())[[bob.id, carol]].map { $0 == (false, true) } == true)
        _ = meeting.request(1, MessageType.leaveMeeting, Request.LeaveMeeting(callID: reply.callID))
        _ = meeting.takeCommands()
        renegotiated = meeting.request(2, MessageType.renegotiateMeeting, Request.RenegotiateMeeting(callID: reply.callID, sdp: Self.offer(pairs: 2)))
        answered = try renegotiated.body(Reply.RenegotiateMeeting.self)
        #expect(answered.receiving == ["4": "carol"], "\(answered.receiving)")
        #expect(answered.sdp.components(separatedBy: "a=inactive").count == 4, "alice's pair and the spare video go inactive: \(answered.sdp)")
        #expect(Self.forwarding(meeting.takeCommands()).isEmpty, "carol's forwarding (audio muted) is unchanged")
    }

    @Test func aSimulcastPageIsTakenByItsRIDsAndSubscribersGetItUnderAServerSSRC() throws {
        var meeting = MeetingHarness()
        meeting.login(1, "alice")
        meeting.login(2, "bob", device: "web")
        #expect(meeting.code(meeting.reserve(1, "room")) == nil)
        #expect(meeting.code(Self.joinWithVideo(&meeting, 1)) == nil)
        _ = meeting.takeCommands()
        let reply = try meeting.request(2, MessageType.joinMeeting, Request.JoinMeeting(
            name: "room", role: .actor, type: .video, sdp: Self.offer(pairs: 1, simulcast: ["q", "h", "f"]))).body(Reply.JoinMeeting.self)
        let answer = try #require(reply.sdp)
        #expect(answer.contains("a=rid:q recv\r\na=rid:h recv\r\na=rid:f recv\r\na=simulcast:recv q;h;f"), "\(answer)")
        let bob = try #require(Self.leg(meeting.takeCommands()))
        #expect(bob.videoRIDs == ForwardingRouter.LegSetup.RIDLayers(mid: "1", rids: ["q", "h", "f"]) && bob.videoLayers.isEmpty)
        let served = try #require(bob.videoSSRC)
        #expect(bob.audioSSRC == 500 && (95_000..<96_000).contains(served), "the server's SSRC (the leg's spare): \(served)")
        #expect(bob.media.extensions.id(for: RTPExtensionMap.ridURI) == 10)

        // carol (ours) is told bob's video under that SSRC.
        meeting.login(3, "carol")
        let carol = try meeting.join(3, "room", ssrc: 300).body(Reply.JoinMeeting.self)
        #expect(carol.participants.first { $0.account == "bob" }?.videoSSRC == served)

        // A renegotiation keeps the RIDs: the same goes, other RIDs or an SSRC instead are refused.
        func renegotiate(_ simulcast: [String]) -> RegistryHarness.Message {
            meeting.request(2, MessageType.renegotiateMeeting,
                            Request.RenegotiateMeeting(callID: reply.callID, sdp: Self.offer(pairs: 2, simulcast: simulcast)))
        }
        #expect(meeting.code(renegotiate(["q", "h", "f"])) == nil)
        #expect(try renegotiate(["q", "h"]).body(ErrorBody.self).message.contains("simulcast RIDs"))
        // One stream by SSRC instead: the RID extension is gone from the answer, refused as such.
        #expect(try renegotiate([]).body(ErrorBody.self).message.contains("header extension IDs stay those of the join"))
    }

    @Test func whatARenegotiationCannotChangeAndWhoCannotRenegotiateAreTypedErrors() throws {
        var meeting = MeetingHarness()
        meeting.login(1, "alice")
        meeting.login(2, "bob", device: "web")
        #expect(meeting.code(meeting.reserve(1, "room")) == nil)
        #expect(meeting.code(meeting.join(1, "room", ssrc: 100)) == nil)
        let reply = try meeting.request(2, MessageType.joinMeeting,
                                        Request.JoinMeeting(name: "room", role: .actor, type: .video, sdp: Self.offer(pairs: 1))).body(Reply.JoinMeeting.self)
        func refusal(_ connection: UInt64, _ sdp: String) throws -> String {
            let message = meeting.request(connection, MessageType.renegotiateMeeting, Request.RenegotiateMeeting(callID: reply.callID, sdp: sdp))
            return try message.body(ErrorBody.self).message
        }
        #expect(try refusal(2, Self.offer(pairs: 1, ufrag: "r3st")).contains("ICE restarts are not supported"))
        #expect(try refusal(2, Self.offer(publishing: false, pairs: 1)).contains("keeps sending its audio and video"))
        #expect(try refusal(2, "v=0\r\n").contains("the offer"))
        #expect(try refusal(1, Self.offer(pairs: 1)).contains("only a participant that joined with an SDP offer"))
        #expect(try refusal(2, String(repeating: "a", count: SignalingHub.maximumOfferSize + 1)).contains("larger than"))

        // A join with both an SDES endpoint and an offer, or with neither.
        meeting.login(3, "carol")
        var both = Request.JoinMeeting(name: "room", role: .actor, type: .audio, media: MeetingHarness.media(300))
        both.sdp = Self.offer(pairs: 1)
        #expect(try meeting.request(3, MessageType.joinMeeting, both).body(ErrorBody.self).message.contains("not both"))
        var neither = both
        neither.sdp = nil
        neither.media = nil
        #expect(try meeting.request(3, MessageType.joinMeeting, neither).body(ErrorBody.self).message.contains("is required"))
        // An actor whose offer sends nothing.
        let silent = Request.JoinMeeting(name: "room", role: .actor, type: .audio, sdp: Self.offer(publishing: false, pairs: 1))
        #expect(try meeting.request(3, MessageType.joinMeeting, silent).body(ErrorBody.self).message.contains("an actor's offer sends Opus audio"))
    }

    @Test func anAudiencePageSendsNothingAndItsLegHasNumbersOfItsOwn() throws {
        var meeting = MeetingHarness()
        meeting.login(1, "alice")
        meeting.login(2, "dave", device: "web")
        #expect(meeting.code(meeting.reserve(1, "room")) == nil)
        #expect(meeting.code(Self.joinWithVideo(&meeting, 1)) == nil)
        _ = meeting.takeCommands()
        let reply = try meeting.request(2, MessageType.joinMeeting, Request.JoinMeeting(name: "room", role: .audience, type: .audio,
                                                                                        sdp: Self.offer(publishing: false, pairs: 1)))
            .body(Reply.JoinMeeting.self)
        #expect(reply.receiving == ["0": "alice", "1": "alice"])
        let dave = try #require(Self.leg(meeting.takeCommands()))
        #expect(!dave.publishing && dave.audioSSRC > 90_000 && dave.videoSSRC == nil)
        // Its leg has nothing to publish: becoming an actor takes a new join.
        let promoted = meeting.request(2, MessageType.setMeetingRole, Request.SetMeetingRole(callID: reply.callID, role: .actor))
        #expect(try promoted.body(ErrorBody.self).message.contains("join again as an actor"))
        #expect(meeting.takeCommands().isEmpty)
    }
}
