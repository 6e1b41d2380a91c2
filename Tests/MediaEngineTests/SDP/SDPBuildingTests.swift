import Testing
@testable import MediaEngine

/// Descriptions built in code, as `mediaengine send` builds them.
@Suite struct SDPBuilding {
    private typealias ExtensionMap = MediaDescription.ExtensionMap
    private static let videoKey = (0..<30).map { UInt8(0xA0 + $0) }

    /// Opus with SRTP and two header extensions, and VP8: the shape `send` writes. This
    /// exact text was opened by `ffmpeg -protocol_whitelist file,udp,rtp,srtp -i built.sdp`
    /// by hand (two streams, opus 48000 Hz stereo and vp8, SRTP set up).
    static func sendDescription() throws -> SessionDescription {
        let audio = MediaDescription(
            kind: .audio, port: 5004, transportProtocol: .rtpSAVP, payloadTypes: [111],
            bandwidths: [.applicationSpecific(kilobitsPerSecond: 64)],
            attributes: [
                .rtpMap(.init(payloadType: 111, encodingName: "opus", clockRate: 48_000, channels: 2)),
                .formatParameters(.init(payloadType: 111, parameters: ["minptime": "10", "useinbandfec": "1"])),
                .crypto(try .init(suite: .aesCM128HMACSHA1_80, keyAndSalt: SDPFixtures.keyBytes)),
                .extensionMap(.init(id: 1, uri: ExtensionMap.audioLevelURI)),
                .extensionMap(.init(id: 3, uri: ExtensionMap.transportWideSequenceNumberURI)),
                .ssrc(.cname("mediaengine", ssrc: 0x1122_3344)),
                .direction(.sendOnly),
            ])
        let video = MediaDescription(
            kind: .video, port: 5006, transportProtocol: .rtpSAVP, payloadTypes: [96],
            attributes: [
                .rtpMap(.init(payloadType: 96, encodingName: "VP8", clockRate: 90_000)),
                .crypto(try .init(keyAndSalt: videoKey)),
                .extensionMap(.init(id: 3, uri: ExtensionMap.transportWideSequenceNumberURI)),
                .ssrc(.cname("mediaengine", ssrc: 0x5566_7788)),
                .direction(.sendOnly),
            ])
        return SessionDescription(
            origin: .init(sessionID: 1_234, sessionVersion: 1), name: "mediaengine send",
            connection: .ip4("127.0.0.1"), media: [audio, video])
    }

    @Test func sendDescriptionText() throws {
        let text = try Self.sendDescription().text
        #expect(text == [
            "v=0",
            "o=- 1234 1 IN IP4 127.0.0.1",
            "s=mediaengine send",
            "c=IN IP4 127.0.0.1",
            "t=0 0",
            "m=audio 5004 RTP/SAVP 111",
            "b=AS:64",
            "a=rtpmap:111 opus/48000/2",
            "a=fmtp:111 minptime=10;useinbandfec=1",
            "a=crypto:1 AES_CM_128_HMAC_SHA1_80 inline:+7XSRyuAsdI9YBW6dE2U+p0OLH+C4DcAY7wu7cAi",
            "a=extmap:1 urn:ietf:params:rtp-hdrext:ssrc-audio-level",
            "a=extmap:3 http://www.ietf.org/id/draft-holmer-rmcat-transport-wide-cc-extensions-01",
            "a=ssrc:287454020 cname:mediaengine",
            "a=sendonly",
            "m=video 5006 RTP/SAVP 96",
            "a=rtpmap:96 VP8/90000",
            "a=crypto:1 AES_CM_128_HMAC_SHA1_80 inline:oKGio6SlpqeoqaqrrK2ur7CxsrO0tba3uLm6u7y9",
            "a=extmap:3 http://www.ietf.org/id/draft-holmer-rmcat-transport-wide-cc-extensions-01",
            "a=ssrc:1432778632 cname:mediaengine",
            "a=sendonly",
        ].map { $0 + "\r\n" }.joined())
    }

    @Test func sendDescriptionParsesBackWithEveryValue() throws {
        let built = try Self.sendDescription()
        let parsed = try SessionDescription(parsing: built.text)
        #expect(parsed == built)
        let audio = parsed.media[0]
        #expect(parsed.effectiveConnection(for: audio) == .ip4("127.0.0.1"))
        #expect(audio.rtpMap(for: 111)?.channels == 2)
        #expect(audio.formatParameters(for: 111)?.parameters == ["minptime": "10", "useinbandfec": "1"])
        #expect(audio.crypto.map(\.keyAndSalt) == [SDPFixtures.keyBytes])
        #expect(audio.extensionID(for: ExtensionMap.audioLevelURI) == 1)
        #expect(audio.extensionID(for: ExtensionMap.transportWideSequenceNumberURI) == 3)
        #expect(audio.cname(ofSSRC: 0x1122_3344) == "mediaengine")
        #expect(parsed.effectiveDirection(for: audio) == .sendOnly)
        let video = parsed.media[1]
        #expect(video.rtpMap(for: 96) == .init(payloadType: 96, encodingName: "VP8", clockRate: 90_000))
        #expect(video.crypto.first?.keyAndSalt == Self.videoKey)
        #expect(video.ssrcs == [0x5566_7788])
    }

    @Test func defaultsMatchFFmpegsSessionLines() {
        let text = SessionDescription(name: "No Name").text
        #expect(text == "v=0\r\no=- 0 0 IN IP4 127.0.0.1\r\ns=No Name\r\nt=0 0\r\n")
    }

    @Test func gcmKeyIs28Bytes() throws {
        let crypto = try MediaDescription.Crypto(tag: 2, suite: .aeadAES128GCM, keyAndSalt: SDPFixtures.gcmKeyBytes)
        #expect(crypto.attributeValue == "2 AEAD_AES_128_GCM inline:AAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGw==")
        #expect(try MediaDescription.Crypto(attributeValue: crypto.attributeValue) == crypto)
    }

    @Test(arguments: [
        (MediaDescription.Crypto.Suite.aesCM128HMACSHA1_80, 16, "AES_CM_128_HMAC_SHA1_80 key and salt are 16 bytes, the suite needs 30"),
        (.aesCM128HMACSHA1_32, 28, "AES_CM_128_HMAC_SHA1_32 key and salt are 28 bytes, the suite needs 30"),
        (.aeadAES128GCM, 30, "AEAD_AES_128_GCM key and salt are 30 bytes, the suite needs 28"),
    ])
    func wrongKeyLengthIsRefused(suite: MediaDescription.Crypto.Suite, length: Int, message: String) {
        let key = (0..<length).map { UInt8(truncatingIfNeeded: $0 * 7) }
        #expect(throws: SDPError(.badCrypto, message)) { try MediaDescription.Crypto(suite: suite, keyAndSalt: key) }
    }

    @Test func unknownSuiteKeepsAnyKeyLength() throws {
        let crypto = try MediaDescription.Crypto(suite: .init(rawValue: "FUTURE_SUITE_9"), keyAndSalt: [1, 2, 3])
        #expect(crypto.suite.keyLength == nil)
        #expect(try MediaDescription.Crypto(attributeValue: crypto.attributeValue).keyAndSalt == [1, 2, 3])
    }

    @Test func lineBreaksInValuesCannotInjectLines() throws {
        var sdp = SessionDescription(name: "evil\r\nm=audio 1 RTP/AVP 0", connection: .ip4("127.0.0.1"))
        sdp.media = [MediaDescription(kind: .audio, port: 5004, payloadTypes: [0], attributes: [.init(name: "note", value: "a\nc=IN IP4 10.0.0.1")])]
        let parsed = try SessionDescription(parsing: sdp.text)
        #expect(parsed.media.count == 1)
        #expect(parsed.name == "evil  m=audio 1 RTP/AVP 0")
        #expect(parsed.media[0].connection == nil)
        #expect(parsed.media[0].attributes == [.init(name: "note", value: "a c=IN IP4 10.0.0.1")])
    }

    @Test func emptyNameIsWrittenAsOneSpace() throws {
        let sdp = SessionDescription(name: "")
        #expect(sdp.text.contains("\r\ns= \r\n"))
        #expect(try SessionDescription(parsing: sdp.text) == sdp)
    }
}
