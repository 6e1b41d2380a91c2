import Foundation
import Testing
@testable import Signaling

@Suite struct Envelopes {
    @Test func requestRoundTripsThroughJSON() throws {
        let envelope = Envelope(id: 7, type: "start", body: .object(["callee": .string("bob"), "type": .number(2)]))
        let decoded = try Envelope.decode(envelope.encoded(), maximumSize: 4_096)
        #expect(decoded == envelope)
        #expect(decoded.body["callee"] == .string("bob"))
    }

    @Test func eventWithoutIdOrBodyDecodes() throws {
        let decoded = try Envelope.decode(Data(#"{"v":1,"type":"hangup"}"#.utf8), maximumSize: 1_024)
        #expect(decoded.id == nil)
        #expect(decoded.body == .object([:]))
    }

    @Test(arguments: [
        (#"not json"#, SignalingError.Code.malformedMessage, "not valid JSON"),
        (#"{"v":1}"#, .malformedMessage, "missing field 'type'"),
        (#"{"v":1,"type":5}"#, .malformedMessage, "field 'type' has the wrong type"),
        (#"{"v":1,"id":-3,"type":"start"}"#, .malformedMessage, "field 'id'"),
        (#"{"v":2,"type":"start"}"#, .unsupportedVersion, "version 2"),
        (#"{"v":1,"type":""}"#, .malformedMessage, "message type"),
        (#"{"v":1,"type":"a b"}"#, .malformedMessage, "message type"),
        (#"[1,2,3]"#, .malformedMessage, "not a valid envelope"),
    ])
    func malformedMessagesGetTypedErrors(text: String, code: SignalingError.Code, mentions: String) {
        let error = #expect(throws: SignalingError.self) { try Envelope.decode(Data(text.utf8), maximumSize: 1_024) }
        #expect(error?.code == code)
        #expect(error?.message.contains(mentions) == true, "\(String(describing: error))")
    }

    @Test func oversizedMessageIsRefusedBeforeParsing() {
        let text = #"{"v":1,"type":"start","body":{"pad":""# + String(repeating: "x", count: 2_000) + #""}}"#
        let error = #expect(throws: SignalingError.self) { try Envelope.decode(Data(text.utf8), maximumSize: 1_024) }
        #expect(error?.code == .messageTooLarge)
        #expect(error?.code.rawValue == 413)
        #expect(error?.message.contains("1024") == true)
    }

    @Test func errorsNeverEchoTheContent() {
        let secret = "eyJhbGciOiJIUzI1NiJ9.secret-token"
        let text = #"{"v":1,"type":"login","body":{"token":""# + secret + #""#  // truncated JSON
        let error = #expect(throws: SignalingError.self) { try Envelope.decode(Data(text.utf8), maximumSize: 1_024) }
        #expect(error?.message.contains("secret") == false)
    }
}
