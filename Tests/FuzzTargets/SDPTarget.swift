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
