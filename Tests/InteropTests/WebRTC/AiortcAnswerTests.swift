import Foundation
import MediaEngine
import Testing
import TestSupport

/// aiortc (a real JSEP implementation) offers, `WebRTCAnswerer` answers, and aiortc must
/// take the answer: the sections, codecs and directions it then reports are what the
/// negotiation says. The SDP half of a WebRTC leg, against a peer that is not ours.
@Suite struct AiortcAnswers {
    static let ourAudio = WebRTCAnswerer.Track(kind: .audio, ssrc: 0x1111_0001, stream: "me", id: "me-audio", cname: "me")
    static let ourVideo = WebRTCAnswerer.Track(kind: .video, ssrc: 0x1111_0002, stream: "me", id: "me-video", cname: "me")

    /// aiortc's offer for `direction`, our answer with `tracks`, and what aiortc printed
    /// once it applied it.
    static func negotiate(direction: String, tracks: [WebRTCAnswerer.Track])
        throws -> (offer: WebRTCDescription, negotiation: WebRTCNegotiation, peer: CLIRun) {
        let peer = try Aiortc.start("offer_answer.py", ["--direction", direction])
        guard peer.waitForOutput(containing: "-----END OFFER-----", timeout: 30),
              let text = Aiortc.block("OFFER", in: peer.stdout) else {
            let run = try peer.wait(timeout: 5)
            throw ToolFailure("aiortc made no offer: \(run.stdout) \(run.stderr)")
        }
        let offer = try WebRTCDescription(parsing: text)
        let certificate = try DTLSCertificate()
        let local = WebRTCAnswerer.Local(
            iceUfrag: "srvU", icePassword: "server-password-of-24ch", iceLite: true, fingerprint: certificate.fingerprint,
            candidates: [ICECandidate.local(.host, address: try SocketAddress(host: "127.0.0.1", port: 40_000), localPreference: 65_535)],
            tracks: tracks)
        let negotiation = try WebRTCAnswerer.answer(offer, local: local)
        try peer.write(negotiation.answer.text + "-----END ANSWER-----\n")
        return (offer, negotiation, try peer.wait(timeout: 20))
    }

    @Test func aiortcTakesOurAnswerToASendReceiveOffer() async throws {
        try await Heavy.run {
            let (offer, negotiation, peer) = try Self.negotiate(direction: "sendrecv", tracks: [Self.ourAudio, Self.ourVideo])
            // Its offer as NOTES.md describes it: BUNDLE, three fingerprints, every candidate.
            #expect(offer.bundle == ["0", "1"])
            #expect(offer.sections.map(\.transport.fingerprints.count) == [3, 3])
            #expect(offer.sections.allSatisfy { !$0.candidates.isEmpty && $0.endOfCandidates })
            #expect(negotiation.sections.map(\.codec.name) == ["opus", "VP8"])
            // No transport-cc and no ccm fir in aiortc: nack and pli are all video shares.
            #expect(negotiation.sections[1].feedback == ["nack", "nack pli"])
            #expect(negotiation.dtlsRole == .client)
            #expect(peer.status == 0, "aiortc refused the answer: \(peer.stdout) \(peer.stderr)\n\(negotiation.answer.text)")
            #expect(peer.stdout.contains("transceiver 0 audio sendrecv audio/opus"), "\(peer.stdout)")
            #expect(peer.stdout.contains("transceiver 1 video sendrecv video/VP8"), "\(peer.stdout)")
        }
    }

    @Test func aPublisherIsAnsweredReceiveOnlyAndAViewerSendOnly() async throws {
        try await Heavy.run {
            // WHIP: aiortc only sends; we only receive, whatever we have.
            let publisher = try Self.negotiate(direction: "sendonly", tracks: [Self.ourAudio, Self.ourVideo])
            #expect(publisher.negotiation.sections.map(\.direction) == [.receiveOnly, .receiveOnly])
            #expect(publisher.peer.status == 0, "\(publisher.peer.stdout) \(publisher.peer.stderr)")
            #expect(publisher.peer.stdout.contains("transceiver 0 audio sendonly audio/opus"), "\(publisher.peer.stdout)")
            #expect(publisher.peer.stdout.contains("transceiver 1 video sendonly video/VP8"), "\(publisher.peer.stdout)")
            // WHEP: aiortc only receives; we send what we have.
            let viewer = try Self.negotiate(direction: "recvonly", tracks: [Self.ourAudio, Self.ourVideo])
            #expect(viewer.negotiation.sections.map(\.direction) == [.sendOnly, .sendOnly])
            #expect(viewer.peer.status == 0, "\(viewer.peer.stdout) \(viewer.peer.stderr)")
            #expect(viewer.peer.stdout.contains("transceiver 0 audio recvonly audio/opus"), "\(viewer.peer.stdout)")
            #expect(viewer.peer.stdout.contains("transceiver 1 video recvonly video/VP8"), "\(viewer.peer.stdout)")
        }
    }
}
