import Testing
@testable import MediaEngine

/// The hand-written `SDPFixtures.everyField`: each line type and each typed accessor,
/// then parse -> text -> parse.
@Suite struct SDPRoundTrip {
    private typealias Attribute = SessionDescription.Attribute

    @Test func sessionLevelFields() throws {
        let sdp = try SessionDescription(parsing: SDPFixtures.everyField)
        #expect(sdp.origin == SessionDescription.Origin(username: "engine", sessionID: 4_611_731_400_430_051_336, sessionVersion: 2, networkType: "IN", addressType: .ip4, address: "192.0.2.10"))
        #expect(sdp.name == "Call 42")
        #expect(sdp.information == "A call with every field")
        #expect(sdp.uri == "https://example.com/call/42")
        #expect(sdp.emailAddresses == ["ops@example.com"])
        #expect(sdp.phoneNumbers == ["+1 555 0100"])
        #expect(sdp.connection == .ip4("192.0.2.10"))
        #expect(sdp.bandwidths == [SessionDescription.Bandwidth(type: "CT", value: 1_000)])
        #expect(sdp.timings == [
            SessionDescription.Timing(start: 3_034_423_619, stop: 3_042_462_419, repeats: ["604800 3600 0 90000"]),
            SessionDescription.Timing(start: 0, stop: 0),
        ])
        #expect(sdp.timeZoneAdjustments == "2882844526 -1h 2898848070 0")
        #expect(sdp.attributes == [Attribute(name: "recvonly"), Attribute(name: "group", value: "BUNDLE a v"), Attribute(name: "extmap-allow-mixed")])
        #expect(sdp.direction == .receiveOnly)
        #expect(sdp.otherLines == [SessionDescription.Line(type: "x", value: "an unknown line type")])
        #expect(sdp.media.map(\.kind) == [.audio, .video, .application])
    }

    @Test func audioSectionAccessors() throws {
        let sdp = try SessionDescription(parsing: SDPFixtures.everyField)
        let audio = sdp.media[0]
        #expect(audio.port == 49_170 && audio.transportProtocol == .rtpSAVP && audio.transportProtocol.isSecure)
        #expect(audio.payloadTypes == [111, 0, 101])
        #expect(audio.information == "Microphone")
        #expect(audio.connection == nil && sdp.effectiveConnection(for: audio) == .ip4("192.0.2.10"))
        #expect(audio.bandwidths == [.applicationSpecific(kilobitsPerSecond: 64), .transportIndependent(bitsPerSecond: 64_000)])
        #expect(audio.mid == "a")
        #expect(audio.direction == .sendOnly)
        #expect(sdp.effectiveDirection(for: audio) == .sendOnly)  // overrides the session's recvonly

        #expect(audio.rtpMaps.map(\.payloadType) == [111, 101])
        #expect(audio.rtpMap(for: 111) == MediaDescription.RTPMap(payloadType: 111, encodingName: "opus", clockRate: 48_000, channels: 2))
        #expect(audio.rtpMap(for: 101) == MediaDescription.RTPMap(payloadType: 101, encodingName: "telephone-event", clockRate: 8_000))
        #expect(audio.rtpMap(for: 0)?.encodingName == "PCMU")
        #expect(audio.formatParameters(for: 111)?.parameters == ["minptime": "10", "useinbandfec": "1", "stereo": "0"])
        #expect(audio.formatParameters(for: 101)?.parameters == ["0-15": ""])
        #expect(audio.formatParameters(for: 0) == nil)

        #expect(audio.rtcp == MediaDescription.RTCPEndpoint(port: 49_171, connection: .ip4("198.51.100.7")))
        #expect(audio.rtcpMux)

        #expect(audio.extensionMaps == [
            MediaDescription.ExtensionMap(id: 1, uri: MediaDescription.ExtensionMap.audioLevelURI, extensionAttributes: "vad=on"),
            MediaDescription.ExtensionMap(id: 3, direction: .sendOnly, uri: MediaDescription.ExtensionMap.transportWideSequenceNumberURI),
        ])
        #expect(audio.extensionID(for: MediaDescription.ExtensionMap.transportWideSequenceNumberURI) == 3)
        #expect(audio.extensionMaps.allSatisfy { $0.fitsOneByteHeader })

        #expect(audio.crypto.count == 2)
        let sdes = audio.crypto[0]
        #expect(sdes.tag == 1 && sdes.suite == .aesCM128HMACSHA1_80)
        #expect(sdes.keys == [try MediaDescription.Crypto.KeyParameters(base64Key: SDPFixtures.key, lifetime: 1 << 31, mki: .init(value: 1, length: 4))])
        #expect(sdes.keyAndSalt == SDPFixtures.keyBytes)
        #expect(sdes.sessionParameters == ["KDR=1"])
        let gcm = audio.crypto[1]
        #expect(gcm.tag == 2 && gcm.suite == .aeadAES128GCM && gcm.suite.keyLength == 28)
        #expect(gcm.keyAndSalt == SDPFixtures.gcmKeyBytes)

        #expect(audio.ssrcs == [3_735_928_559, 16_909_060])
        #expect(audio.cname(ofSSRC: 3_735_928_559) == "engine@host")
        #expect(audio.cname(ofSSRC: 16_909_060) == "other")
        #expect(audio.ssrcAttributes[1] == MediaDescription.SSRCAttribute(ssrc: 3_735_928_559, name: "msid", value: "stream0 audio0"))

        // Unknown attributes stay, in place, and no accessor reads them.
        #expect(audio.attributes.last == Attribute(name: "x-vendor-thing", value: "opaque value"))
        #expect(audio.attributes(named: "x-vendor-thing").count == 1)
    }

    @Test func videoAndApplicationSections() throws {
        let sdp = try SessionDescription(parsing: SDPFixtures.everyField)
        let video = sdp.media[1]
        #expect(video.port == 49_172 && video.portCount == 2 && video.transportProtocol == .rtpAVPF)
        #expect(video.connection == .ip6("2001:db8::7"))
        #expect(sdp.effectiveConnection(for: video) == .ip6("2001:db8::7"))
        #expect(video.direction == nil && sdp.effectiveDirection(for: video) == .receiveOnly)
        #expect(video.mid == "v")
        #expect(video.attributes(named: "rtcp-fb") == [Attribute(name: "rtcp-fb", value: "96 nack pli")])
        let twoByte = try #require(video.extensionMaps.first)
        #expect(twoByte.id == 200 && !twoByte.fitsOneByteHeader)

        let data = sdp.media[2]
        #expect(data.kind == .application && !data.transportProtocol.isRTP)
        #expect(data.formats == ["webrtc-datachannel"] && data.payloadTypes.isEmpty)
        #expect(data.direction == .inactive)
        #expect(data.formatParameters.first?.format == "webrtc-datachannel")
        #expect(data.formatParameters.first?.payloadType == nil)
        #expect(data.formatParameters.first?.parameters == ["max-message-size": "262144"])
        #expect(data.otherLines == [SessionDescription.Line(type: "y", value: "another unknown line")])
    }

    @Test func textIsTheInputWithCRLF() throws {
        let sdp = try SessionDescription(parsing: SDPFixtures.everyField)
        let crlf = SDPFixtures.everyField.split(separator: "\n").map { $0 + "\r\n" }.joined()
        #expect(sdp.text == crlf)
        #expect(try SessionDescription(parsing: sdp.text) == sdp)
    }

    @Test func editsSurviveTheRoundTrip() throws {
        var sdp = try SessionDescription(parsing: SDPFixtures.ffmpegSRTP)
        sdp.origin.sessionVersion += 1
        sdp.media[0].attributes.append(.rtcpMux)
        sdp.media[0].attributes.append(.mid("0"))
        sdp.media[1].port = 6_000
        let reparsed = try SessionDescription(parsing: sdp.text)
        #expect(reparsed == sdp)
        #expect(reparsed.origin.sessionVersion == 1 && reparsed.media[0].rtcpMux && reparsed.media[0].mid == "0" && reparsed.media[1].port == 6_000)
    }
}
