import Foundation
@testable import MediaEngine
import Testing

/// Offers as WebRTC peers write them (Chromium, aiortc, GStreamer's webrtcbin), answered:
/// what is taken and with what, what is refused and why, and the answer's SDP.
@Suite struct WebRTCAnswers {
    static let fingerprint = "sha-256 " + (0..<32).map { String(format: "%02X", $0 * 7 % 256) }.joined(separator: ":")
    static let password = "bP+XJMM09aR8AiX1jdukzR6Y"

    /// Chromium's offer for a microphone, a camera and a data channel (trimmed of
    /// codecs that change nothing here; the lines kept are as Chromium writes them).
    static let chromium = """
        v=0
        o=- 4611731400430051336 2 IN IP4 127.0.0.1
        s=-
        t=0 0
        a=group:BUNDLE 0 1 2
        a=extmap-allow-mixed
        a=msid-semantic: WMS stream1
        m=audio 9 UDP/TLS/RTP/SAVPF 111 63 9 0 8 110
        c=IN IP4 0.0.0.0
        a=rtcp:9 IN IP4 0.0.0.0
        a=ice-ufrag:EsAw
        a=ice-pwd:\(password)
        a=ice-options:trickle
        a=fingerprint:\(fingerprint)
        a=setup:actpass
        a=mid:0
        a=extmap:1 urn:ietf:params:rtp-hdrext:ssrc-audio-level
        a=extmap:2 http://www.webrtc.org/experiments/rtp-hdrext/abs-send-time
        a=extmap:3 http://www.ietf.org/id/draft-holmer-rmcat-transport-wide-cc-extensions-01
        a=extmap:4 urn:ietf:params:rtp-hdrext:sdes:mid
        a=sendrecv
        a=msid:stream1 track-a
        a=rtcp-mux
        a=rtcp-rsize
        a=rtpmap:111 opus/48000/2
        a=rtcp-fb:111 transport-cc
        a=fmtp:111 minptime=10;useinbandfec=1
        a=rtpmap:63 red/48000/2
        a=fmtp:63 111/111
        a=rtpmap:9 G722/8000
        a=rtpmap:0 PCMU/8000
        a=rtpmap:8 PCMA/8000
        a=rtpmap:110 telephone-event/48000
        a=ssrc:1001 cname:Xb4Ia
        a=ssrc:1001 msid:stream1 track-a
        m=video 9 UDP/TLS/RTP/SAVPF 96 97 102 103
        c=IN IP4 0.0.0.0
        a=rtcp:9 IN IP4 0.0.0.0
        a=ice-ufrag:EsAw
        a=ice-pwd:\(password)
        a=ice-options:trickle
        a=fingerprint:\(fingerprint)
        a=setup:actpass
        a=mid:1
        a=extmap:14 urn:ietf:params:rtp-hdrext:toffset
        a=extmap:2 http://www.webrtc.org/experiments/rtp-hdrext/abs-send-time
        a=extmap:3 http://www.ietf.org/id/draft-holmer-rmcat-transport-wide-cc-extensions-01
        a=extmap:4 urn:ietf:params:rtp-hdrext:sdes:mid
        a=sendrecv
        a=msid:stream1 track-v
        a=rtcp-mux
        a=rtcp-rsize
        a=rtpmap:96 VP8/90000
        a=rtcp-fb:96 goog-remb
        a=rtcp-fb:96 transport-cc
        a=rtcp-fb:96 ccm fir
        a=rtcp-fb:96 nack
        a=rtcp-fb:96 nack pli
        a=rtpmap:97 rtx/90000
        a=fmtp:97 apt=96
        a=rtpmap:102 H264/90000
        a=fmtp:102 level-asymmetry-allowed=1;packetization-mode=1;profile-level-id=42001f
        a=rtpmap:103 rtx/90000
        a=fmtp:103 apt=102
        a=ssrc-group:FID 2001 2002
        a=ssrc:2001 cname:Xb4Ia
        a=ssrc:2002 cname:Xb4Ia
        m=application 9 UDP/DTLS/SCTP webrtc-datachannel
        c=IN IP4 0.0.0.0
        a=ice-ufrag:EsAw
        a=ice-pwd:\(password)
        a=fingerprint:\(fingerprint)
        a=setup:actpass
        a=mid:2
        a=sctp-port:5000
        a=max-message-size:262144

        """

    static func local(tracks: [WebRTCAnswerer.Track] = [], receives: Bool = true) throws -> WebRTCAnswerer.Local {
        let address = try SocketAddress(host: "192.0.2.10", port: 40_000)
        return WebRTCAnswerer.Local(iceUfrag: "srvU", icePassword: "server-password-of-24ch", iceLite: true,
                                    fingerprint: DTLSFingerprint(bytes: Array(repeating: 0xAB, count: 32)),
                                    candidates: [ICECandidate.local(.host, address: address, localPreference: 65_535)],
                                    tracks: tracks, receives: receives, sessionID: 77)
    }

    static let ourAudio = WebRTCAnswerer.Track(kind: .audio, ssrc: 0x1234_5678, stream: "alice", id: "alice-audio", cname: "alice")
    static let ourVideo = WebRTCAnswerer.Track(kind: .video, ssrc: 0x2345_6789, stream: "alice", id: "alice-video", cname: "alice")

    @Test func chromiumsOfferIsAnsweredWithOpusAndVP8OverOneBundleAndItsIDs() throws {
        let offer = try WebRTCDescription(parsing: Self.chromium)
        let negotiation = try WebRTCAnswerer.answer(offer, local: try Self.local(tracks: [Self.ourAudio, Self.ourVideo]))
        #expect(negotiation.sections.map(\.mid) == ["0", "1"])
        let (audio, video) = (negotiation.sections[0], negotiation.sections[1])
        #expect(audio.codec.payloadType == 111 && audio.codec.parameters["useinbandfec"] == "1")
        #expect(video.codec.payloadType == 96)
        // The offer's feedback we do, in its order; REMB we do not.
        #expect(audio.feedback == ["transport-cc"])
        #expect(video.feedback == ["transport-cc", "ccm fir", "nack", "nack pli"])
        // The offer's extension IDs; abs-send-time and toffset left out.
        #expect(audio.extensions.map(\.id) == [1, 3, 4])
        #expect(video.extensions.map(\.id) == [3, 4])
        #expect(audio.remoteSSRCs == [1001] && video.remoteSSRCs == [2001, 2002])
        #expect(video.remoteStream == WebRTCDescription.MediaStreamID(stream: "stream1", track: "track-v"))
        #expect(audio.direction == .sendReceive && audio.track == Self.ourAudio && video.track == Self.ourVideo)
        #expect(negotiation.refusals.map(\.index) == [2])
        #expect(negotiation.refusals.first?.reason.contains("data channels") == true)
        #expect(negotiation.dtlsRole == .client, "actpass is answered active")
        #expect(negotiation.remoteTransport.iceUfrag == "EsAw" && negotiation.remoteTransport.fingerprints.count == 1)

        // The answer is SDP we read back as the peer will.
        let answer = try WebRTCDescription(parsing: negotiation.answer.text)
        #expect(answer.bundle == ["0", "1"])
        #expect(answer.sections.map(\.port) == [40_000, 40_000, 0])
        #expect(answer.sections[2].mid == "2" && answer.sections[2].isRejected)
        #expect(answer.sections[0].codecs.map(\.payloadType) == [111] && answer.sections[1].codecs.map(\.payloadType) == [96])
        #expect(answer.sections[0].transport.setup == .active && answer.sections[0].transport.iceLite)
        #expect(answer.sections[0].transport.fingerprints == [DTLSFingerprint(bytes: Array(repeating: 0xAB, count: 32))])
        #expect(answer.sections[0].candidates.map(\.address.port) == [40_000] && answer.sections[0].endOfCandidates)
        #expect(answer.sections[0].rtcpMux && answer.sections[1].rtcpMux)
        #expect(answer.sections[0].ssrcs == [0x1234_5678] && answer.sections[0].msid?.track == "alice-audio")
        #expect(answer.sections[1].codecs.first?.feedback == ["transport-cc", "ccm fir", "nack", "nack pli"])
        #expect(!negotiation.answer.text.contains("a=crypto"))
    }

    @Test func aPublisherIsReceivedAndAViewerIsSentTo() throws {
        // WHIP: the publisher only sends; this side only receives, whatever it has.
        let publish = Self.chromium.replacingOccurrences(of: "a=sendrecv", with: "a=sendonly")
        let received = try WebRTCAnswerer.answer(try WebRTCDescription(parsing: publish), local: try Self.local(tracks: [Self.ourAudio]))
        #expect(received.sections.map(\.direction) == [.receiveOnly, .receiveOnly])
        #expect(received.sections.allSatisfy { $0.track == nil })
        // WHEP: the viewer only receives; this side sends what it has, and nothing else.
        let view = Self.chromium.replacingOccurrences(of: "a=sendrecv", with: "a=recvonly")
        let sent = try WebRTCAnswerer.answer(try WebRTCDescription(parsing: view), local: try Self.local(tracks: [Self.ourVideo]))
        #expect(sent.sections.map(\.direction) == [.inactive, .sendOnly])
        #expect(sent.sections[1].track == Self.ourVideo)
    }

    @Test func aViewersRTXIsTakenWithItsFIDGroupAndASendersIsNot() throws {
        var video = Self.ourVideo
        video.rtxSSRC = 0x3456_789A
        // A viewer (recvonly): the offer's rtx for VP8 is taken, the track's RTX SSRC announced.
        let view = Self.chromium.replacingOccurrences(of: "a=sendrecv", with: "a=recvonly")
        let sent = try WebRTCAnswerer.answer(try WebRTCDescription(parsing: view), local: try Self.local(tracks: [video]))
        #expect(sent.sections.map(\.rtxPayloadType) == [nil, 97], "audio never; video's rtx whose apt is 96, not H.264's 103")
        let answer = try WebRTCDescription(parsing: sent.answer.text)
        #expect(answer.sections[1].codecs.map(\.payloadType) == [96, 97])
        #expect(answer.sections[1].codecs.last?.parameters["apt"] == "96" && answer.sections[1].codecs.last?.name == "rtx")
        #expect(answer.sections[1].ssrcs == [0x2345_6789, 0x3456_789A])
        #expect(sent.answer.text.contains("a=ssrc-group:FID \(0x2345_6789) \(0x3456_789A)"))
        #expect(sent.answer.text.contains("a=ssrc:\(0x3456_789A) msid:alice alice-video"))
        // A peer that sends video on the section (it would retransmit only on RTX): none.
        let call = try WebRTCAnswerer.answer(try WebRTCDescription(parsing: Self.chromium), local: try Self.local(tracks: [video]))
        #expect(call.sections.allSatisfy { $0.rtxPayloadType == nil })
        #expect(!call.answer.text.contains("rtx/") && !call.answer.text.contains("FID"))
        // Without NACK there is nothing to retransmit.
        let noNACK = view.replacingOccurrences(of: "a=rtcp-fb:96 nack\n", with: "").replacingOccurrences(of: "a=rtcp-fb:96 nack pli\n", with: "")
        let plain = try WebRTCAnswerer.answer(try WebRTCDescription(parsing: noNACK), local: try Self.local(tracks: [video]))
        #expect(plain.sections[1].rtxPayloadType == nil && !plain.answer.text.contains("FID"))
    }

    /// Chromium's video section when it publishes simulcast (`sendEncodings` with rids q,
    /// h and f, f paused): the RID extensions and `a=rid`/`a=simulcast`, and no `a=ssrc`.
    static func simulcastOffer(_ simulcast: String = "a=simulcast:send q;h;~f", rids: [String] = ["q", "h", "f"],
                               ridExtension: Bool = true) -> String {
        let section = (ridExtension ? "a=extmap:10 urn:ietf:params:rtp-hdrext:sdes:rtp-stream-id\n"
            + "a=extmap:11 urn:ietf:params:rtp-hdrext:sdes:repaired-rtp-stream-id\n" : "")
            + rids.map { "a=rid:\($0) send\n" }.joined() + simulcast + "\n"
        return chromium
            .replacingOccurrences(of: "a=ssrc-group:FID 2001 2002\na=ssrc:2001 cname:Xb4Ia\na=ssrc:2002 cname:Xb4Ia\n", with: section)
    }

    @Test func aSimulcastPublisherIsAnsweredWithItsRIDsPausedAsOfferedAndTheRIDExtension() throws {
        let offer = try WebRTCDescription(parsing: Self.simulcastOffer())
        #expect(offer.sections[1].ssrcs.isEmpty)
        #expect(offer.sections[1].simulcast == [.init(rid: "q"), .init(rid: "h"), .init(rid: "f", paused: true)])
        let negotiation = try WebRTCAnswerer.answer(offer, local: try Self.local())
        let video = negotiation.sections[1]
        #expect(video.simulcast.map(\.rid) == ["q", "h", "f"])
        // The RID extension is taken (packets say their layer); the repaired-RID one is not
        // (this side takes no RTX from a publisher).
        #expect(video.extensions.map(\.uri).contains(RTPExtensionMap.ridURI) && video.extensions.map(\.id) == [3, 4, 10])
        #expect(negotiation.extensionMap.id(for: RTPExtensionMap.ridURI) == 10)
        let text = negotiation.answer.text
        #expect(text.contains("a=rid:q recv\r\na=rid:h recv\r\na=rid:f recv\r\na=simulcast:recv q;h;~f\r\n"), "\(text)")
        #expect(!text.contains("repaired-rtp-stream-id"))
        // The answer reads back as what a browser checks: its rids received, f paused.
        let answer = try WebRTCDescription(parsing: text)
        #expect(answer.sections[1].rids == ["q", "h", "f"])
        // Audio sections never take simulcast.
        #expect(negotiation.sections[0].simulcast.isEmpty && !negotiation.sections[0].extensions.map(\.uri).contains(RTPExtensionMap.ridURI))
    }

    @Test func simulcastIsTakenOnlyAsFarAsItCanBeReceived() throws {
        // Four layers: the first three are taken, and the fourth left out of the answer.
        let four = try WebRTCAnswerer.answer(try WebRTCDescription(parsing: Self.simulcastOffer("a=simulcast:send a;b;c;d", rids: ["a", "b", "c", "d"])),
                                             local: try Self.local())
        #expect(four.sections[1].simulcast.map(\.rid) == ["a", "b", "c"] && !four.answer.text.contains("a=rid:d"))
        // Alternatives keep their first; a rid without its a=rid send line, a second
        // mention, or one the header extension cannot carry is left out.
        let odd = try WebRTCDescription(parsing: Self.simulcastOffer("a=simulcast:send q,x;h;q;zz;\(String(repeating: "r", count: 17))",
                                                                     rids: ["q", "x", "h", String(repeating: "r", count: 17)]))
        #expect(odd.sections[1].simulcast.map(\.rid) == ["q", "h"])
        // Without the RID extension packets cannot say their layer: no simulcast is answered.
        let noExtension = try WebRTCAnswerer.answer(try WebRTCDescription(parsing: Self.simulcastOffer(ridExtension: false)), local: try Self.local())
        #expect(noExtension.sections[1].simulcast.isEmpty && !noExtension.answer.text.contains("a=simulcast"))
        // A side that takes no media (a viewer's server) answers none either.
        let viewer = try WebRTCAnswerer.answer(try WebRTCDescription(parsing: Self.simulcastOffer()), local: try Self.local(receives: false))
        #expect(viewer.sections[1].simulcast.isEmpty && !viewer.answer.text.contains("a=rid"))
        // A recv half beside the send half is read past.
        let both = try WebRTCDescription(parsing: Self.simulcastOffer("a=simulcast:recv z send q;h"))
        #expect(both.sections[1].simulcast.map(\.rid) == ["q", "h"])
    }

    @Test func theSetupRoleFollowsTheOffer() throws {
        for (offered, role, written) in [("actpass", DTLSRole.client, "active"), ("active", .server, "passive"), ("passive", .client, "active")] {
            let text = Self.chromium.replacingOccurrences(of: "a=setup:actpass", with: "a=setup:\(offered)")
            let negotiation = try WebRTCAnswerer.answer(try WebRTCDescription(parsing: text), local: try Self.local())
            #expect(negotiation.dtlsRole == role, "offer \(offered)")
            #expect(negotiation.answer.text.contains("a=setup:\(written)\r\n"), "offer \(offered)")
        }
    }

    /// aiortc: every candidate in the offer (it does not trickle), three fingerprints,
    /// session-level setup lines are not written but each section has its own.
    @Test func aiortcsCandidatesAndFingerprintsAreTaken() throws {
        let text = Self.chromium
            .replacingOccurrences(of: "a=fingerprint:\(Self.fingerprint)",
                                  with: "a=fingerprint:\(Self.fingerprint)\na=fingerprint:sha-384 " + Array(repeating: "0A", count: 48).joined(separator: ":")
                                    + "\na=fingerprint:sha-512 " + Array(repeating: "0B", count: 64).joined(separator: ":"))
            .replacingOccurrences(of: "a=mid:0\n", with: """
                a=mid:0
                a=candidate:a1 1 udp 2130706431 192.0.2.20 50000 typ host
                a=candidate:a2 1 tcp 1518280447 192.0.2.20 9 typ host tcptype passive
                a=candidate:a3 1 udp 1686052607 198.51.100.4 61000 typ srflx raddr 192.0.2.20 rport 50000
                a=end-of-candidates

                """)
        let negotiation = try WebRTCAnswerer.answer(try WebRTCDescription(parsing: text), local: try Self.local())
        #expect(negotiation.remoteTransport.fingerprints.map(\.algorithm) == ["sha-256", "sha-384", "sha-512"])
        // TCP is skipped; UDP host and srflx are kept.
        #expect(negotiation.remoteCandidates.map(\.kind) == [.host, .serverReflexive])
        #expect(negotiation.remoteCandidatesComplete)
    }

    /// webrtcbin with max-bundle: later sections have port 0 and a=bundle-only, which is
    /// not a refusal.
    @Test func bundleOnlySectionsAreTaken() throws {
        let text = Self.chromium.replacingOccurrences(of: "m=video 9 ", with: "m=video 0 ")
            .replacingOccurrences(of: "a=mid:1\n", with: "a=mid:1\na=bundle-only\n")
        let negotiation = try WebRTCAnswerer.answer(try WebRTCDescription(parsing: text), local: try Self.local())
        #expect(negotiation.sections.map(\.mid) == ["0", "1"])
    }

    // MARK: Refusals

    @Test func whatOneSectionLacksRefusesThatSectionOnly() throws {
        let cases: [(from: String, to: String, reason: String)] = [
            ("a=mid:1\n", "", "no a=mid"),
            ("a=mid:1\n", "a=mid:one two\n", "token characters"),
            ("a=mid:1\n", "a=mid:0\n", "names an earlier section too"),
            ("a=rtcp-mux\na=rtcp-rsize\na=rtpmap:96", "a=rtcp-rsize\na=rtpmap:96", "rtcp-mux"),
            ("a=group:BUNDLE 0 1 2", "a=group:BUNDLE 0 2", "BUNDLE"),
            ("m=video 9 UDP/TLS/RTP/SAVPF 96 97 102 103", "m=video 9 UDP/TLS/RTP/SAVPF 102 103", "no VP8 among the codecs offered (H264, rtx)"),
        ]
        for (from, to, reason) in cases {
            #expect(Self.chromium.contains(from))
            let offer = try WebRTCDescription(parsing: Self.chromium.replacingOccurrences(of: from, with: to))
            let negotiation = try WebRTCAnswerer.answer(offer, local: try Self.local())
            #expect(negotiation.sections.map(\.index) == [0], "\(reason)")
            #expect(negotiation.refusals.first { $0.index == 1 }?.reason.contains(reason) == true, "\(negotiation.refusals)")
            let answer = try WebRTCDescription(parsing: negotiation.answer.text)
            #expect(answer.sections[1].isRejected && answer.bundle == ["0"], "\(reason)")
        }
    }

    @Test func withoutABundleGroupOnlyOneSectionIsTaken() throws {
        let offer = try WebRTCDescription(parsing: Self.chromium.replacingOccurrences(of: "a=group:BUNDLE 0 1 2\n", with: ""))
        let negotiation = try WebRTCAnswerer.answer(offer, local: try Self.local())
        #expect(negotiation.sections.map(\.mid) == ["0"])
        #expect(negotiation.refusals.contains { $0.index == 1 && $0.reason.contains("no BUNDLE group") })
    }

    @Test func whatTheSharedTransportLacksRefusesTheOfferWithATypedError() throws {
        func code(_ text: String) -> JSEPError.Code? {
            do {
                _ = try WebRTCAnswerer.answer(try WebRTCDescription(parsing: text), local: try Self.local())
                return nil
            } catch let error as JSEPError {
                #expect(!error.message.contains(Self.password), "never echoes credentials")
                return error.code
            } catch {
                return nil
            }
        }
        let noFingerprint = Self.chromium.replacingOccurrences(of: "a=fingerprint:\(Self.fingerprint)\n", with: "")
        #expect(code(noFingerprint) == .noFingerprint)
        let key = "inline:" + Data(repeating: 7, count: 30).base64EncodedString()
        let sdesOnly = noFingerprint.replacingOccurrences(of: "UDP/TLS/RTP/SAVPF", with: "RTP/SAVPF")
            .replacingOccurrences(of: "a=mid:0\n", with: "a=mid:0\na=crypto:1 AES_CM_128_HMAC_SHA1_80 \(key)\n")
        #expect(code(sdesOnly) == .sdesOnly)
        #expect(code(Self.chromium.replacingOccurrences(of: "a=ice-pwd:\(Self.password)\n", with: "")) == .iceCredentials)
        #expect(code(Self.chromium.replacingOccurrences(of: "a=ice-ufrag:EsAw\n", with: "")) == .iceCredentials)
        #expect(code(Self.chromium.replacingOccurrences(of: "a=ice-pwd:\(Self.password)", with: "a=ice-pwd:short")) == .iceCredentials)
        // Unknown codecs only: each section's reason, in one error.
        let unknown = Self.chromium.replacingOccurrences(of: "UDP/TLS/RTP/SAVPF 111 63 9 0 8 110", with: "UDP/TLS/RTP/SAVPF 9 0")
            .replacingOccurrences(of: "UDP/TLS/RTP/SAVPF 96 97 102 103", with: "UDP/TLS/RTP/SAVPF 102 103")
        #expect(code(unknown) == .noUsableMedia)
        let offer = try WebRTCDescription(parsing: unknown)
        let local = try Self.local()
        do throws(JSEPError) {
            _ = try WebRTCAnswerer.answer(offer, local: local)
        } catch {
            #expect(error.message.contains("no opus among the codecs offered (G722, PCMU)"), "\(error.message)")
            #expect(error.message.contains("no VP8 among the codecs offered (H264, rtx)"), "\(error.message)")
        }
    }

    @Test func aMebibyteOfSDPIsRefusedAsMalformed() {
        let huge = Self.chromium + String(repeating: "a=x-padding:" + String(repeating: "z", count: 1_000) + "\n", count: 1_048)
        #expect(huge.utf8.count > 1 << 20)
        do throws(JSEPError) {
            _ = try WebRTCDescription(parsing: huge)
            Issue.record("a 1 MiB offer parsed")
        } catch {
            #expect(error.code == .malformed && error.message.contains("the limit is 65536"), "\(error.message)")
        }
    }
}
