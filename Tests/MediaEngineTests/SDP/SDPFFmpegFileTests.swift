import Testing
@testable import MediaEngine

/// Files ffmpeg wrote with `-sdp_file` (see `SDPFixtures`): every field, then the exact
/// bytes back out.
@Suite struct SDPFFmpegFiles {
    private typealias Connection = SessionDescription.Connection

    /// What every ffmpeg file starts with.
    private func expectFFmpegSession(_ sdp: SessionDescription, address: String = "127.0.0.1", addressType: SessionDescription.AddressType = .ip4) {
        #expect(sdp.version == 0)
        #expect(sdp.origin == SessionDescription.Origin(username: "-", sessionID: 0, sessionVersion: 0, networkType: "IN", addressType: addressType, address: address))
        #expect(sdp.name == "No Name")
        #expect(sdp.timings == [SessionDescription.Timing(start: 0, stop: 0)])
        #expect(sdp.attributes == [SessionDescription.Attribute(name: "tool", value: "libavformat LIBAVFORMAT_VERSION")])
        #expect(sdp.information == nil && sdp.uri == nil && sdp.emailAddresses.isEmpty && sdp.phoneNumbers.isEmpty)
        #expect(sdp.bandwidths.isEmpty && sdp.timeZoneAdjustments == nil && sdp.otherLines.isEmpty)
        #expect(sdp.direction == nil)
    }

    @Test func srtpOpusAndVP8() throws {
        let sdp = try SessionDescription(parsing: SDPFixtures.ffmpegSRTP)
        expectFFmpegSession(sdp)
        #expect(sdp.connection == nil)  // two outputs: ffmpeg writes c= per section
        try #require(sdp.media.count == 2)

        let audio = sdp.media[0]
        #expect(audio.kind == .audio)
        #expect(audio.port == 5004 && audio.portCount == nil)
        #expect(audio.transportProtocol == .rtpAVP)  // not RTP/SAVP, even with a=crypto
        #expect(audio.transportProtocol.isRTP && !audio.transportProtocol.isSecure)
        #expect(audio.formats == ["97"] && audio.payloadTypes == [97])
        #expect(audio.connection == Connection(networkType: "IN", addressType: .ip4, address: "127.0.0.1"))
        #expect(sdp.effectiveConnection(for: audio)?.address == "127.0.0.1")
        #expect(audio.bandwidths == [.applicationSpecific(kilobitsPerSecond: 64)])
        #expect(audio.applicationSpecificBandwidth == 64)
        #expect(audio.rtpMaps == [MediaDescription.RTPMap(payloadType: 97, encodingName: "opus", clockRate: 48_000, channels: 2)])
        #expect(audio.rtpMap(for: 97)?.encodingName == "opus")
        #expect(audio.formatParameters.isEmpty)
        #expect(!audio.rtcpMux && audio.rtcp == nil && audio.mid == nil && audio.direction == nil)
        #expect(sdp.effectiveDirection(for: audio) == .sendReceive)
        #expect(audio.extensionMaps.isEmpty && audio.ssrcAttributes.isEmpty)

        let crypto = try #require(audio.crypto.first)
        #expect(audio.crypto.count == 1)
        #expect(crypto.tag == 1)
        #expect(crypto.suite == .aesCM128HMACSHA1_80 && crypto.suite.keyLength == 30)
        #expect(crypto.keys.count == 1)
        #expect(crypto.keys[0].base64Key == SDPFixtures.key)
        #expect(crypto.keyAndSalt == SDPFixtures.keyBytes)
        #expect(crypto.keys[0].lifetime == nil && crypto.keys[0].mki == nil)
        #expect(crypto.sessionParameters.isEmpty)

        let video = sdp.media[1]
        #expect(video.kind == .video && video.port == 5006 && video.transportProtocol == .rtpAVP)
        #expect(video.payloadTypes == [96])
        #expect(video.connection?.address == "127.0.0.1")
        #expect(video.applicationSpecificBandwidth == 256)
        #expect(video.rtpMap(for: 96) == MediaDescription.RTPMap(payloadType: 96, encodingName: "VP8", clockRate: 90_000))
        #expect(video.crypto.map(\.keyAndSalt) == [SDPFixtures.keyBytes])
    }

    @Test func plainOpusAndVP8() throws {
        let sdp = try SessionDescription(parsing: SDPFixtures.ffmpegPlain)
        expectFFmpegSession(sdp)
        try #require(sdp.media.count == 2)
        #expect(sdp.media.map(\.kind) == [.audio, .video])
        #expect(sdp.media.map(\.port) == [5004, 5006])
        #expect(sdp.media.map(\.payloadTypes) == [[97], [96]])
        #expect(sdp.media.map { $0.rtpMaps.first?.encodingName } == ["opus", "VP8"])
        #expect(sdp.media.map { $0.rtpMaps.first?.clockRate } == [48_000, 90_000])
        #expect(sdp.media.map { $0.rtpMaps.first?.channels } == [2, nil])
        #expect(sdp.media.map(\.applicationSpecificBandwidth) == [64, 256])
        #expect(sdp.media.allSatisfy { $0.crypto.isEmpty && $0.attributes.count == 1 })
        // Same as the SRTP file minus the crypto lines.
        var srtp = try SessionDescription(parsing: SDPFixtures.ffmpegSRTP)
        for index in srtp.media.indices { srtp.media[index].attributes.removeAll { $0.name == "crypto" } }
        #expect(srtp == sdp)
    }

    @Test func staticPCMUWithShortTagAndH264() throws {
        let sdp = try SessionDescription(parsing: SDPFixtures.ffmpegPCMUAndH264)
        expectFFmpegSession(sdp)
        try #require(sdp.media.count == 2)
        let audio = sdp.media[0]
        #expect(audio.port == 5008 && audio.payloadTypes == [0])
        #expect(audio.rtpMaps.isEmpty)  // ffmpeg writes no rtpmap for a static type
        #expect(audio.rtpMap(for: 0) == MediaDescription.RTPMap(payloadType: 0, encodingName: "PCMU", clockRate: 8_000))
        #expect(audio.rtpMap(for: 8) == nil)  // static, but not offered
        let crypto = try #require(audio.crypto.first)
        #expect(crypto.suite == .aesCM128HMACSHA1_32 && crypto.suite.keyLength == 30)
        #expect(crypto.keyAndSalt == SDPFixtures.keyBytes)

        let video = sdp.media[1]
        #expect(video.port == 5010 && video.bandwidths.isEmpty && video.crypto.isEmpty)
        #expect(video.rtpMap(for: 96)?.encodingName == "H264")
        let fmtp = try #require(video.formatParameters(for: 96))
        #expect(fmtp.format == "96" && fmtp.payloadType == 96)
        #expect(fmtp.parameterString == "packetization-mode=1")
        #expect(fmtp.parameters == ["packetization-mode": "1"])
    }

    @Test func ipv6SessionLevelConnection() throws {
        let sdp = try SessionDescription(parsing: SDPFixtures.ffmpegIPv6H264)
        expectFFmpegSession(sdp, address: "::1", addressType: .ip6)
        #expect(sdp.connection == .ip6("::1"))
        let video = try #require(sdp.media.first)
        #expect(sdp.media.count == 1)
        #expect(video.connection == nil)
        #expect(sdp.effectiveConnection(for: video) == Connection(addressType: .ip6, address: "::1"))
        let fmtp = try #require(video.formatParameters(for: 96))
        #expect(fmtp.parameters == [
            "packetization-mode": "1",
            // Split at the first '=' only: base64 padding stays in the value.
            "sprop-parameter-sets": "Z/QADZGbKCg/YCIAAAMAAgAAAwB4HihTLA==,aOvjxEhE",
            "profile-level-id": "F4000D",
        ])
        #expect(video.crypto.first?.keyAndSalt == SDPFixtures.keyBytes)
    }

    @Test func multicastTTL() throws {
        let sdp = try SessionDescription(parsing: SDPFixtures.ffmpegMulticastOpus)
        expectFFmpegSession(sdp)
        #expect(sdp.connection == Connection(addressType: .ip4, address: "239.1.2.3", ttl: 5))
        let audio = try #require(sdp.media.first)
        #expect(audio.port == 5014 && audio.applicationSpecificBandwidth == 96)
        #expect(audio.rtpMap(for: 97)?.channels == 2)
        #expect(audio.formatParameters(for: 97)?.parameters == ["sprop-stereo": "1"])
        #expect(sdp.effectiveConnection(for: audio)?.ttl == 5)
    }

    @Test(arguments: SDPFixtures.allFFmpeg)
    func writesFFmpegFilesBackByteForByte(_ fixture: String) throws {
        let sdp = try SessionDescription(parsing: fixture)
        #expect(sdp.text == fixture)
        #expect(try SessionDescription(parsing: sdp.text) == sdp)
    }
}
