import MediaEngine

/// Session descriptions (RFC 8866) as `mediaengine receive` reads them from a file.
enum SDPTarget {
    static let target = FuzzTarget(
        name: "sdp",
        summary: "SessionDescription(parsing:) on the input as UTF-8; every typed accessor; text parses back to an equal description; MediaReceiver.plan"
    ) { bytes in
        let text = String(decoding: bytes, as: UTF8.self)
        guard let description = try? SessionDescription(parsing: text) else { return false }
        _ = description.description
        _ = description.direction
        for media in description.media {
            // After a successful parse the typed accessors cannot fail.
            _ = media.payloadTypes
            _ = media.rtpMaps
            for parameters in media.formatParameters {
                _ = parameters.payloadType
                _ = parameters.parameters
            }
            _ = media.crypto
            _ = media.extensionMaps
            _ = media.ssrcAttributes
            _ = media.ssrcs
            _ = media.rtcp
            _ = media.mid
            _ = media.applicationSpecificBandwidth
            _ = media.rtcpMux
            _ = description.effectiveConnection(for: media)
            _ = description.effectiveDirection(for: media)
        }
        let written = description.text
        let again: SessionDescription
        do {
            again = try SessionDescription(parsing: written)
        } catch {
            FuzzCheck.require(false, "SDP text of a parsed description does not parse: \(error)")
            return true
        }
        FuzzCheck.require(again == description, "SDP parses back to another description")
        FuzzCheck.require(again.text == written, "SDP writes differently the second time")
        _ = try? MediaReceiver.plan(for: description)
        return true
    }
}

/// A WebRTC peer's offer (JSEP) as WHIP, WHEP and the browsers' signaling will hand it in.
enum WebRTCOfferTarget {
    static let local: WebRTCAnswerer.Local? = {
        guard let address = try? SocketAddress(host: "192.0.2.10", port: 40_000) else { return nil }
        return WebRTCAnswerer.Local(
            iceUfrag: "fuzz", icePassword: "fuzz-password-of-24-chars", iceLite: true,
            fingerprint: DTLSFingerprint(bytes: Array(repeating: 0xAB, count: 32)),
            candidates: [ICECandidate.local(.host, address: address, localPreference: 65_535)],
            tracks: [WebRTCAnswerer.Track(kind: .audio, ssrc: 1, stream: "s", id: "a", cname: "c"),
                     WebRTCAnswerer.Track(kind: .video, ssrc: 2, stream: "s", id: "v", cname: "c")],
            sessionID: 1)
    }()

    static let target = FuzzTarget(
        name: "webrtc-offer",
        summary: "WebRTCDescription(parsing:) and WebRTCAnswerer.answer on the input as UTF-8; the answer parses, has a section per offered one, bundles exactly the sections taken"
    ) { bytes in
        guard let local else { return false }
        let text = String(decoding: bytes, as: UTF8.self)
        guard let offer = try? WebRTCDescription(parsing: text) else { return false }
        let negotiation: WebRTCNegotiation
        do {
            negotiation = try WebRTCAnswerer.answer(offer, local: local)
        } catch {
            return true  // refused with a typed error: that is the handling
        }
        guard let answer = try? WebRTCDescription(parsing: negotiation.answer.text) else {
            FuzzCheck.require(false, "the answer to an offer does not parse")
            return true
        }
        FuzzCheck.require(answer.sections.count == offer.sections.count, "the answer has \(answer.sections.count) sections for \(offer.sections.count)")
        FuzzCheck.require(answer.bundle == negotiation.sections.map(\.mid), "the answer bundles other sections than it took")
        FuzzCheck.require(negotiation.sections.count + negotiation.refusals.count == offer.sections.count,
                          "a section neither taken nor refused")
        return true
    }
}

/// ICE candidates (RFC 8839 `candidate` attribute) as they arrive trickled over signaling.
enum ICECandidateTarget {
    static let target = FuzzTarget(
        name: "ice-candidate",
        summary: "ICECandidate(attribute:) on the input as UTF-8; attribute parses back to an equal candidate"
    ) { bytes in
        let text = String(decoding: bytes, as: UTF8.self)
        guard let candidate = try? ICECandidate(attribute: text) else { return false }
        let written = candidate.attribute
        let again = try? ICECandidate(attribute: written)
        FuzzCheck.require(again == candidate, "candidate '\(written)' parses back to another candidate")
        _ = candidate.isUsable()
        return true
    }
}
