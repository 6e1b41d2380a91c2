import Foundation
@testable import MediaEngine
import Testing

/// What a session that answers a WebRTC offer takes from it, and the offers it refuses
/// (the media itself runs against aiortc in InteropTests' `AiortcCalls`).
@Suite struct WebRTCSessions {
    static func configuration(video: Bool = true) throws -> MediaSession.Configuration {
        var configuration = MediaSession.Configuration(audio: try MediaSources.audio("sine:440"),
                                                       video: video ? try MediaSources.video("testsrc:160x120@15") : nil)
        configuration.host = "127.0.0.1"
        return configuration
    }

    @Test func theAnswerKeepsTheOffersPayloadTypesMIDsAndExtensionIDsAndCarriesOurCertificate() throws {
        let session = try MediaSession(configuration: try Self.configuration(), answering: WebRTCAnswers.chromium)
        let leg = try #require(session.webRTC)
        let answer = try #require(session.webRTCAnswer)
        // Chromium's Opus is 111 and its VP8 96, with MIDs 0 and 1; the data channel is refused.
        #expect(session.streamPlan.audio.payloadType == 111 && session.streamPlan.audio.mid == "0")
        #expect(session.streamPlan.video.payloadType == 96 && session.streamPlan.video.mid == "1")
        #expect(leg.extensions.id(for: RTPExtensionMap.audioLevelURI) == 1)
        #expect(leg.extensions.id(for: RTPExtensionMap.transportSequenceNumberURI) == 3)
        #expect(leg.extensions.id(for: RTPExtensionMap.midURI) == 4)
        #expect(answer.contains("a=fingerprint:\(leg.certificate.fingerprint)"))
        #expect(answer.contains("a=ice-ufrag:\(session.local.ice.ufrag)") && answer.contains("a=setup:active"))
        let videoSSRC = try #require(session.local.videoSSRC)
        #expect(answer.contains("a=ssrc:\(session.local.audioSSRC) ") && answer.contains("a=ssrc:\(videoSSRC) "))
        #expect(session.webRTCNegotiation?.refusals.count == 1)
        // Chromium's announced SSRC binds its audio; the offerer controls ICE.
        #expect(leg.receivedAudio?.ssrc == 1001)
        #expect(session.parts.configuration.iceControlling == false)
    }

    @Test func withoutACameraTheVideoSectionOnlyReceives() throws {
        let session = try MediaSession(configuration: try Self.configuration(video: false), answering: WebRTCAnswers.chromium)
        #expect(session.local.videoSSRC == nil && !session.sendsVideo)
        #expect(session.webRTCNegotiation?.sections.first { $0.kind == .video }?.direction == .receiveOnly)
        #expect(session.webRTC?.receivedVideo != nil)
    }

    @Test func aPeerThatOnlyReceivesVideoGetsOursAndSendsNone() throws {
        let offer = WebRTCAnswers.chromium.replacingOccurrences(of: "a=mid:1\n", with: "a=mid:1\na=recvonly\n")
            .replacingOccurrences(of: "a=sendrecv\na=msid:stream1 track-v", with: "a=msid:stream1 track-v")
        let session = try MediaSession(configuration: try Self.configuration(), answering: offer)
        let video = try #require(session.webRTCNegotiation?.sections.first { $0.kind == .video })
        #expect(video.direction == .sendOnly, "\(video.direction)")
        #expect(session.sendsVideo && session.webRTC?.receivedVideo == nil)
    }

    @Test func offersWeCannotAnswerAreTypedNegotiationErrors() throws {
        let cases: [(offer: String, reason: String)] = [
            ("v=0\nthis is not SDP\n", "does not parse"),
            (WebRTCAnswers.chromium.replacingOccurrences(of: "a=fingerprint:\(WebRTCAnswers.fingerprint)\n", with: ""), "fingerprint"),
            // Audio the peer only sends: a call sends its microphone.
            (WebRTCAnswers.chromium.replacingOccurrences(of: "a=sendrecv\na=msid:stream1 track-a", with: "a=sendonly\na=msid:stream1 track-a"),
             "no audio section this side can send in"),
        ]
        for (offer, reason) in cases {
            #expect { _ = try MediaSession(configuration: try Self.configuration(), answering: offer) } throws: { error in
                let typed = error as? MediaSessionError
                return typed?.code == .negotiation && typed?.message.localizedCaseInsensitiveContains(reason) == true
            }
        }
        // A 1 MiB offer is refused by the SDP limits before anything is parsed further.
        let huge = WebRTCAnswers.chromium + String(repeating: "a=x\n", count: 262_144)
        #expect { _ = try MediaSession(configuration: try Self.configuration(), answering: huge) } throws: { error in
            (error as? MediaSessionError)?.code == .negotiation
        }
    }

    @Test func anSDESSessionIsNotStartedAsAWebRTCOne() throws {
        let session = try MediaSession(configuration: try Self.configuration())
        #expect(session.webRTCAnswer == nil)
        #expect { try session.start { _ in } } throws: { error in
            (error as? MediaCoreError)?.code == .configuration
        }
    }
}
