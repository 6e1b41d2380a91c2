import Foundation
import Signaling
import Testing
@testable import MediaServer

/// The call matrix on the state machine, on a manual clock: alice is connection 1; bob
/// has a phone (2) and a laptop (3); carol is 4.
@Suite struct CallRegistryCalls {
    func harness() throws -> RegistryHarness {
        var harness = RegistryHarness()
        try harness.login(1, "alice")
        try harness.login(2, "bob", device: "phone")
        try harness.login(3, "bob", device: "laptop")
        try harness.login(4, "carol")
        return harness
    }

    @Test func acceptedCallConnectsAndEndsCompletedWithItsDuration() throws {
        var h = try harness()
        let id = try h.start(1, to: "bob")
        #expect(id < 1 << 53)
        for device: UInt64 in [2, 3] {
            let invitation = try #require(h.events(device).first)
            #expect(invitation.type == MessageType.receive)
            let body = try invitation.body(Event.Receive.self)
            #expect(body.callID == id && body.from == "alice" && body.type == .video)
        }
        let accepted = h.request(2, MessageType.response, Request.Response(callID: id, accept: true, media: RegistryHarness.media(6_000)))
        #expect(try accepted.body(Reply.Response.self).media?.candidates.first?.port == 5_000, "the callee learns the caller's media")
        let answer = try #require(h.events(1).first)
        let response = try answer.body(Event.Response.self)
        #expect(response.accepted && response.from == "bob" && response.media?.candidates.first?.port == 6_000)
        let other = try #require(h.events(3).first)
        #expect(other.type == MessageType.responsedByOther)
        #expect(try other.body(Event.ResponsedByOther.self).accepted)
        let late = h.request(3, MessageType.response, Request.Response(callID: id, accept: true, media: RegistryHarness.media(7_000)))
        #expect(h.code(late) == SignalingError.Code.handledElsewhere.rawValue)

        #expect(h.code(h.request(1, MessageType.mediaStatus, Request.MediaStatus(callID: id, connected: true))) == nil)
        h.advance(.seconds(5))
        #expect(h.code(h.request(1, MessageType.hangup, Request.Hangup(callID: id))) == nil)
        let hangup = try #require(h.events(2).first)
        let ended = try hangup.body(Event.Hangup.self)
        #expect(ended.by == "alice" && ended.reason == .completed)
        let record = try #require(h.records.first)
        #expect(record.record.endReason == .completed && record.record.connectedDuration == 5_000)
        #expect(record.record.caller == "alice" && record.record.callee == "bob" && record.record.endedBy == "alice")
        #expect(Set(record.notify) == [ConnectionID(1), ConnectionID(2)])
        #expect(h.registry.callCount == 0)
        #expect(try h.start(1, to: "bob") > id, "both accounts are free again, and IDs grow")
    }

    @Test func rejectionTellsTheCallerAndTheOtherDevices() throws {
        var h = try harness()
        let id = try h.start(1, to: "bob", type: .audio)
        _ = h.events(2)
        _ = h.events(3)
        #expect(h.code(h.request(3, MessageType.response, Request.Response(callID: id, accept: false, media: nil))) == nil)
        let answer = try #require(h.events(1).first)
        #expect(try answer.body(Event.Response.self).accepted == false)
        #expect(try h.events(2).first?.body(Event.ResponsedByOther.self).accepted == false)
        #expect(h.records.map(\.record.endReason) == [.rejected])
        #expect(h.records.first?.record.endedBy == "bob" && h.records.first?.record.type == .audio)
    }

    @Test func unansweredCallIsMissedAtTheRingTimeout() throws {
        var h = try harness()
        let id = try h.start(1, to: "bob")
        h.advance(.seconds(44))
        #expect(h.records.isEmpty)
        h.advance(.seconds(1))
        #expect(h.records.map(\.record.endReason) == [.missed])
        #expect(try h.events(1).first?.body(Event.Hangup.self) == Event.Hangup(callID: id, by: nil, reason: .missed))
        #expect(h.events(2).last?.type == MessageType.hangup, "the ringing devices stop")
    }

    @Test func callingABusyAccountGetsBusyLine() throws {
        var h = try harness()
        _ = try h.start(4, to: "bob")
        let id = try h.start(1, to: "bob")
        let events = h.events(1)
        #expect(events.map(\.type) == [MessageType.control, MessageType.hangup])
        #expect(try events[0].body(Event.Control.self).control == .busyLine)
        #expect(try events[1].body(Event.Hangup.self).reason == .busy)
        #expect(h.records.map(\.record.callID) == [id])
        #expect(h.records.first?.record.endReason == .busy)
        let again = h.request(4, MessageType.start, Request.Start(callee: "alice", type: .audio, media: RegistryHarness.media(1)))
        #expect(h.code(again) == SignalingError.Code.busy.rawValue, "a caller in a call cannot start another")
    }

    @Test func callerHangingUpWhileRingingCancels() throws {
        var h = try harness()
        let id = try h.start(1, to: "bob")
        _ = h.events(2)
        _ = h.events(3)
        #expect(h.code(h.request(1, MessageType.hangup, Request.Hangup(callID: 0))) == nil, "callID 0: the current call")
        #expect(try h.events(2).first?.body(Event.Hangup.self) == Event.Hangup(callID: id, by: "alice", reason: .cancelled))
        #expect(try h.events(3).first?.body(Event.Hangup.self).reason == .cancelled)
        #expect(h.records.map(\.record.endReason) == [.cancelled])
    }

    @Test func everyControlTypeReachesThePeerBothWays() throws {
        var h = try harness()
        let id = try h.start(1, to: "bob")
        _ = h.request(2, MessageType.control, Request.Control(callID: id, control: .feedback))
        #expect(try h.events(1).first?.body(Event.Control.self).control == .feedback, "ringing feedback reaches the caller")
        _ = h.request(2, MessageType.response, Request.Response(callID: id, accept: true, media: RegistryHarness.media(6_000)))
        _ = h.events(1)
        _ = h.events(2)
        _ = h.events(3)
        for control in CallControl.allCases {
            #expect(h.code(h.request(1, MessageType.control, Request.Control(callID: id, control: control))) == nil)
            #expect(h.code(h.request(2, MessageType.control, Request.Control(callID: id, control: control))) == nil)
        }
        let atBob = try h.events(2).map { try $0.body(Event.Control.self) }
        let atAlice = try h.events(1).map { try $0.body(Event.Control.self) }
        #expect(atBob.map(\.control) == CallControl.allCases && atBob.allSatisfy { $0.from == "alice" })
        #expect(atAlice.map(\.control) == CallControl.allCases && atAlice.allSatisfy { $0.from == "bob" })
        #expect(h.events(3).isEmpty, "the device that did not answer hears nothing")
        #expect(h.code(h.request(3, MessageType.control, Request.Control(callID: id, control: .openAudio)))
                == SignalingError.Code.forbidden.rawValue)
    }

    @Test func mediaThatNeverConnectsFails() throws {
        var h = try harness()
        let id = try h.start(1, to: "bob")
        _ = h.request(2, MessageType.response, Request.Response(callID: id, accept: true, media: RegistryHarness.media(6_000)))
        h.advance(.seconds(30))
        #expect(h.records.map(\.record.endReason) == [.failed])
        #expect(h.records.first?.record.connectedDuration == 0)
    }

    @Test func mediaLostEndsTheCallAsFailed() throws {
        var h = try harness()
        let id = try h.connectedCall(1, to: "bob", answeredBy: 2, reportedBy: 2)
        h.advance(.seconds(3))
        _ = h.request(1, MessageType.mediaStatus, Request.MediaStatus(callID: id, connected: false))
        #expect(h.records.first?.record.endReason == .failed && h.records.first?.record.connectedDuration == 3_000)
        #expect(h.events(2).last?.type == MessageType.hangup)
    }
}

@Suite struct CallRegistryFaults {
    @Test func aPartyThatReconnectsInTimeKeepsItsCall() throws {
        var h = RegistryHarness()
        try h.login(1, "alice")
        try h.login(2, "bob")
        let id = try h.connectedCall(1, to: "bob", answeredBy: 2, reportedBy: 1)
        h.disconnect(1)
        h.advance(.seconds(20))
        #expect(h.records.isEmpty, "the media may still flow: the call waits for the reconnect")
        let again = try h.login(11, "alice")
        #expect(again.activeCalls == [id])
        h.advance(.seconds(60))
        #expect(h.records.isEmpty)
        _ = h.request(2, MessageType.hangup, Request.Hangup(callID: id))
        #expect(h.records.first?.record.endReason == .completed && h.records.first?.record.connectedDuration == 80_000)
        #expect(h.records.first?.notify == [ConnectionID(11), ConnectionID(2)])
    }

    @Test func aPartyThatVanishesEndsTheCallAfterTheGrace() throws {
        var h = RegistryHarness()
        try h.login(1, "alice")
        try h.login(2, "bob")
        let id = try h.connectedCall(1, to: "bob", answeredBy: 2, reportedBy: 1)
        h.disconnect(2)
        #expect(h.registry.nextDeadline == h.time.monotonic + .seconds(30))
        h.advance(.seconds(30))
        #expect(h.records.map(\.record.endReason) == [.failed])
        #expect(try h.events(1).last?.body(Event.Hangup.self).reason == .failed)
        #expect(h.registry.deviceCount == 1, "the vanished device is forgotten")
    }

    @Test func aSecondLoginOfTheSameDeviceReplacesTheFirst() throws {
        var h = RegistryHarness()
        try h.login(1, "alice")
        try h.login(2, "alice")
        #expect(h.closed.map(\.0) == [ConnectionID(1)])
        #expect(h.registry.account(of: ConnectionID(1)) == nil)
        try h.login(3, "alice", device: "other")
        #expect(h.registry.deviceCount == 2)
    }

    @Test func shutdownEndsEveryCallWithARecord() throws {
        var h = RegistryHarness()
        try h.login(1, "alice")
        try h.login(2, "bob")
        try h.login(3, "carol")
        try h.login(4, "dave")
        let first = try h.start(1, to: "bob")
        let second = try h.start(3, to: "dave")
        _ = h.request(2, MessageType.response, Request.Response(callID: first, accept: true, media: RegistryHarness.media(6_000)))
        h.collect(h.registry.shutdown(at: h.time))
        #expect(h.records.map(\.record.callID) == [first, second])
        #expect(h.records.allSatisfy { $0.record.endReason == .failed })
        #expect(h.registry.callCount == 0)
    }

    @Test(arguments: [
        ("nobody", SignalingError.Code.calleeOffline, "nobody has no device online"),
        ("alice", .invalidRequest, "cannot call yourself"),
        ("", .invalidRequest, "callee must be"),
    ])
    func badStartsGetTypedErrors(callee: String, code: SignalingError.Code, message: String) throws {
        var h = RegistryHarness()
        try h.login(1, "alice")
        let reply = h.request(1, MessageType.start, Request.Start(callee: callee, type: .audio, media: RegistryHarness.media(1)))
        let error = try reply.body(ErrorBody.self)
        #expect(error.code == code.rawValue)
        #expect(error.message.contains(message), "\(error.message)")
        #expect(h.records.isEmpty, "no call, no record")
    }

    @Test func requestsOutsideOnesCallsAreRefused() throws {
        var h = RegistryHarness()
        try h.login(1, "alice")
        try h.login(2, "bob")
        try h.login(3, "mallory")
        let id = try h.start(1, to: "bob")
        #expect(h.code(h.request(3, MessageType.hangup, Request.Hangup(callID: id))) == SignalingError.Code.forbidden.rawValue)
        #expect(h.code(h.request(3, MessageType.response, Request.Response(callID: id, accept: true, media: RegistryHarness.media(1))))
                == SignalingError.Code.forbidden.rawValue)
        #expect(h.code(h.request(3, MessageType.hangup, Request.Hangup(callID: 12_345))) == SignalingError.Code.callNotFound.rawValue)
        #expect(h.code(h.request(3, MessageType.hangup, Request.Hangup(callID: 0))) == SignalingError.Code.callNotFound.rawValue)
        #expect(h.code(h.request(2, MessageType.response, Request.Response(callID: id, accept: true, media: nil)))
                == SignalingError.Code.invalidRequest.rawValue)
        #expect(h.code(h.request(2, MessageType.mediaStatus, Request.MediaStatus(callID: id, connected: true)))
                == SignalingError.Code.invalidRequest.rawValue, "no media before an answer")
        #expect(h.code(h.request(9, MessageType.start, Request.Start(callee: "bob", type: .audio, media: RegistryHarness.media(1))))
                == SignalingError.Code.unauthorized.rawValue, "a connection that did not log in")
        #expect(h.registry.callCount == 1, "the call survived all of it")
    }

    @Test func malformedBodiesAndUnknownTypesNameTheProblem() throws {
        var h = RegistryHarness()
        try h.login(1, "alice")
        let missing = h.request(1, MessageType.start, ["callee": "bob"])
        #expect(try missing.body(ErrorBody.self).message == "start: missing field 'type'")
        let wrong = h.request(1, MessageType.hangup, ["callID": "x"])
        #expect(try wrong.body(ErrorBody.self).message == "hangup: field 'callID' has the wrong type")
        let control = h.request(1, MessageType.control, Request.Hangup(callID: 1))
        #expect(try control.body(ErrorBody.self).message == "control: missing field 'control'")
        let unknown = h.request(1, "teleport", Reply.Empty())
        #expect(try unknown.body(ErrorBody.self).message == "unknown request type 'teleport'")
        let badMedia = h.request(1, MessageType.start, Request.Start(callee: "bob", type: .audio, media: MediaEndpoint(
            candidates: [], srtpProfile: "AES_CM_128_HMAC_SHA1_80", srtpKey: "k", audioSSRC: 1, videoSSRC: nil, iceUfrag: "ufrag", icePassword: "password-of-twenty-two-chars")))
        #expect(try badMedia.body(ErrorBody.self).message.contains("1 to 16 candidates"))
    }
}
