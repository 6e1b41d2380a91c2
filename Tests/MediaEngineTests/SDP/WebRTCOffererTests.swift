import Foundation
@testable import MediaEngine
import Testing

/// This side as the JSEP offerer: the offer a browser is called with, and what its answer
/// agreed (the peer here is `WebRTCAnswerer` answering as a browser does, and answers
/// changed to be unusable).
@Suite struct WebRTCOffers {
    static func local(video: Bool = true) throws -> WebRTCOfferer.Local {
        let address = try SocketAddress(host: "192.0.2.20", port: 41_000)
        return WebRTCOfferer.Local(iceUfrag: "offU", icePassword: "offererPasswordOf24Chars", fingerprint: DTLSFingerprint(bytes: Array(repeating: 0xCD, count: 32)),
                                   candidates: [ICECandidate.local(.host, address: address, localPreference: 65_535)], candidatesComplete: false,
                                   audioSSRC: 1_111, videoSSRC: video ? 2_222 : nil, cname: "alice", sessionID: 9)
    }

    /// A browser's answer: the offer answered with its own transport, active (as browsers
    /// answer), sending its microphone and camera.
    static func browserAnswer(to offer: SessionDescription) throws -> String {
        let address = try SocketAddress(host: "192.0.2.30", port: 42_000)
        let browser = WebRTCAnswerer.Local(iceUfrag: "brwU", icePassword: "browserPasswordOf24Chars", fingerprint: DTLSFingerprint(bytes: Array(repeating: 0xEF, count: 32)),
                                           candidates: [ICECandidate.local(.host, address: address, localPreference: 65_535)],
                                           tracks: [WebRTCAnswerer.Track(kind: .audio, ssrc: 3_333, stream: "page", id: "page-audio", cname: "page"),
                                                    WebRTCAnswerer.Track(kind: .video, ssrc: 4_444, stream: "page", id: "page-video", cname: "page")],
                                           sessionID: 10)
        return try WebRTCAnswerer.answer(WebRTCDescription(offer), local: browser).answer.text
    }

    @Test func theOfferIsOpusAndVP8WithTheEnginesNumbersOverOneBundleAndActpass() throws {
        let offer = WebRTCOfferer.offer(try Self.local()).text
        for line in ["a=group:BUNDLE 0 1", "m=audio 41000 UDP/TLS/RTP/SAVPF 111", "m=video 41000 UDP/TLS/RTP/SAVPF 96", "a=setup:actpass",
                     "a=ice-ufrag:offU", "a=rtpmap:111 opus/48000/2", "a=fmtp:111 minptime=10;useinbandfec=1", "a=rtpmap:96 VP8/90000",
                     "a=rtcp-fb:96 nack pli", "a=rtcp-fb:96 transport-cc", "a=extmap:1 urn:ietf:params:rtp-hdrext:ssrc-audio-level",
                     "a=extmap:3 http://www.ietf.org/id/draft-holmer-rmcat-transport-wide-cc-extensions-01", "a=ssrc:1111 cname:alice",
                     "a=ssrc:2222 cname:alice", "typ host", "a=sendrecv", "a=rtcp-mux"] {
            #expect(offer.contains(line), "the offer has \(line): \(offer)")
        }
        #expect(!offer.contains("a=end-of-candidates"), "more candidates come by trickle")
        #expect(!WebRTCOfferer.offer(try Self.local(video: false)).text.contains("m=video"), "an audio call offers no video")
    }

    @Test func aBrowsersAnswerGivesItsTransportItsStreamsAndThisSideTheServerRole() throws {
        let offer = WebRTCOfferer.offer(try Self.local())
        let negotiation = try WebRTCOfferer.accept(WebRTCDescription(parsing: try Self.browserAnswer(to: offer)), to: offer)
        #expect(negotiation.dtlsRole == .server, "an active answerer is the DTLS client")
        #expect(negotiation.remoteTransport.iceUfrag == "brwU" && negotiation.remoteTransport.fingerprints.count == 1)
        #expect(negotiation.remoteCandidates.map(\.address.port) == [42_000])
        let audio = try #require(negotiation.sections.first { $0.kind == .audio })
        let video = try #require(negotiation.sections.first { $0.kind == .video })
        #expect(audio.codec.payloadType == 111 && audio.remoteSSRCs == [3_333] && audio.direction == .sendReceive)
        #expect(video.codec.payloadType == 96 && video.remoteSSRCs == [4_444] && video.mid == "1")
    }

    @Test func answersThatDoNotAnswerTheOfferAreTypedErrors() throws {
        let offer = WebRTCOfferer.offer(try Self.local())
        let answer = try Self.browserAnswer(to: offer)
        func code(_ text: String) -> JSEPError.Code? {
            do {
                _ = try WebRTCOfferer.accept(WebRTCDescription(parsing: text), to: offer)
                return nil
            } catch {
                return error.code
            }
        }
        #expect(code(answer) == nil)
        #expect(code(answer.replacingOccurrences(of: "a=setup:active", with: "a=setup:actpass")) == .malformed, "an answer decides the role")
        let withoutFingerprint = answer.split(separator: "\r\n").filter { !$0.hasPrefix("a=fingerprint") }.joined(separator: "\r\n") + "\r\n"
        #expect(code(withoutFingerprint) == .noFingerprint)
        let withoutPassword = answer.split(separator: "\r\n").filter { !$0.hasPrefix("a=ice-pwd") }.joined(separator: "\r\n") + "\r\n"
        #expect(code(withoutPassword) == .iceCredentials)
        #expect(code(answer.replacingOccurrences(of: "m=audio 42000", with: "m=audio 0")) == .noUsableMedia, "no audio taken")
        let audioOnly = WebRTCOfferer.offer(try Self.local(video: false))
        #expect(throws: JSEPError.self) { try WebRTCOfferer.accept(WebRTCDescription(parsing: answer), to: audioOnly) }
        // The video section refused alone: the call goes on with audio.
        let refusedVideo = try WebRTCOfferer.accept(WebRTCDescription(parsing: answer.replacingOccurrences(of: "m=video 42000", with: "m=video 0")), to: offer)
        #expect(refusedVideo.sections.map(\.kind) == [.audio] && refusedVideo.refusals.count == 1)
    }
}
