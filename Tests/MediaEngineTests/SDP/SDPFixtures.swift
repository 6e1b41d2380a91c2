/// Session descriptions used as test data. The ffmpeg ones are byte-exact copies of files
/// ffmpeg 5.1.9 (Debian 12, `7:5.1.9-0+deb12u1`) wrote with `-sdp_file`; each comment
/// gives the command. Lines are joined with CRLF as ffmpeg writes them.
enum SDPFixtures {
    private static func crlf(_ lines: [String]) -> String { lines.map { $0 + "\r\n" }.joined() }

    /// The test key all SRTP fixtures use: 30 random bytes (16 master key + 14 salt),
    /// generated with `head -c 30 /dev/urandom | base64`. Not a secret; test data.
    static let key = "+7XSRyuAsdI9YBW6dE2U+p0OLH+C4DcAY7wu7cAi"
    static let keyBytes: [UInt8] = [
        0xfb, 0xb5, 0xd2, 0x47, 0x2b, 0x80, 0xb1, 0xd2, 0x3d, 0x60, 0x15, 0xba, 0x74, 0x4d, 0x94, 0xfa,
        0x9d, 0x0e, 0x2c, 0x7f, 0x82, 0xe0, 0x37, 0x00, 0x63, 0xbc, 0x2e, 0xed, 0xc0, 0x22,
    ]

    /// `ffmpeg -re -f lavfi -i sine=f=440 -f lavfi -i testsrc=size=320x240:rate=30 -t 1
    ///  -map 0:a -c:a libopus -f rtp -srtp_out_suite AES_CM_128_HMAC_SHA1_80 -srtp_out_params KEY
    ///  srtp://127.0.0.1:5004 -map 1:v -c:v libvpx -f rtp -srtp_out_suite AES_CM_128_HMAC_SHA1_80
    ///  -srtp_out_params KEY srtp://127.0.0.1:5006 -sdp_file out.sdp`
    ///
    /// ffmpeg keeps `RTP/AVP` for SRTP streams and writes the key once per section.
    static let ffmpegSRTP = crlf([
        "v=0",
        "o=- 0 0 IN IP4 127.0.0.1",
        "s=No Name",
        "t=0 0",
        "a=tool:libavformat LIBAVFORMAT_VERSION",
        "m=audio 5004 RTP/AVP 97",
        "c=IN IP4 127.0.0.1",
        "b=AS:64",
        "a=rtpmap:97 opus/48000/2",
        "a=crypto:1 AES_CM_128_HMAC_SHA1_80 inline:+7XSRyuAsdI9YBW6dE2U+p0OLH+C4DcAY7wu7cAi",
        "m=video 5006 RTP/AVP 96",
        "c=IN IP4 127.0.0.1",
        "b=AS:256",
        "a=rtpmap:96 VP8/90000",
        "a=crypto:1 AES_CM_128_HMAC_SHA1_80 inline:+7XSRyuAsdI9YBW6dE2U+p0OLH+C4DcAY7wu7cAi",
    ])

    /// The same streams over plain RTP:
    /// `ffmpeg -f lavfi -i sine=f=440:d=1 -f lavfi -i testsrc=size=320x240:rate=30:d=1
    ///  -map 0:a -c:a libopus -f rtp rtp://127.0.0.1:5004 -map 1:v -c:v libvpx -f rtp
    ///  rtp://127.0.0.1:5006 -sdp_file plain.sdp`
    static let ffmpegPlain = crlf([
        "v=0",
        "o=- 0 0 IN IP4 127.0.0.1",
        "s=No Name",
        "t=0 0",
        "a=tool:libavformat LIBAVFORMAT_VERSION",
        "m=audio 5004 RTP/AVP 97",
        "c=IN IP4 127.0.0.1",
        "b=AS:64",
        "a=rtpmap:97 opus/48000/2",
        "m=video 5006 RTP/AVP 96",
        "c=IN IP4 127.0.0.1",
        "b=AS:256",
        "a=rtpmap:96 VP8/90000",
    ])

    /// Static payload type 0 with no rtpmap, the 32-bit-tag suite, and an fmtp:
    /// `ffmpeg -f lavfi -i sine=f=440:d=1 -f lavfi -i testsrc=size=320x240:rate=30:d=1
    ///  -map 0:a -c:a pcm_mulaw -ar 8000 -ac 1 -f rtp -srtp_out_suite AES_CM_128_HMAC_SHA1_32
    ///  -srtp_out_params KEY srtp://127.0.0.1:5008 -map 1:v -c:v libx264 -f rtp
    ///  rtp://127.0.0.1:5010 -sdp_file h264.sdp`
    static let ffmpegPCMUAndH264 = crlf([
        "v=0",
        "o=- 0 0 IN IP4 127.0.0.1",
        "s=No Name",
        "t=0 0",
        "a=tool:libavformat LIBAVFORMAT_VERSION",
        "m=audio 5008 RTP/AVP 0",
        "c=IN IP4 127.0.0.1",
        "b=AS:64",
        "a=crypto:1 AES_CM_128_HMAC_SHA1_32 inline:+7XSRyuAsdI9YBW6dE2U+p0OLH+C4DcAY7wu7cAi",
        "m=video 5010 RTP/AVP 96",
        "c=IN IP4 127.0.0.1",
        "a=rtpmap:96 H264/90000",
        "a=fmtp:96 packetization-mode=1",
    ])

    /// One output: ffmpeg puts `c=` at the session level. IPv6, and an fmtp with `; `
    /// separators and base64 values:
    /// `ffmpeg -f lavfi -i testsrc=size=320x240:rate=30:d=1 -c:v libx264 -flags +global_header
    ///  -f rtp -srtp_out_suite AES_CM_128_HMAC_SHA1_80 -srtp_out_params KEY "srtp://[::1]:5012"
    ///  -sdp_file v6.sdp`
    static let ffmpegIPv6H264 = crlf([
        "v=0",
        "o=- 0 0 IN IP6 ::1",
        "s=No Name",
        "c=IN IP6 ::1",
        "t=0 0",
        "a=tool:libavformat LIBAVFORMAT_VERSION",
        "m=video 5012 RTP/AVP 96",
        "a=rtpmap:96 H264/90000",
        "a=fmtp:96 packetization-mode=1; sprop-parameter-sets=Z/QADZGbKCg/YCIAAAMAAgAAAwB4HihTLA==,aOvjxEhE; profile-level-id=F4000D",
        "a=crypto:1 AES_CM_128_HMAC_SHA1_80 inline:+7XSRyuAsdI9YBW6dE2U+p0OLH+C4DcAY7wu7cAi",
    ])

    /// Multicast with a TTL:
    /// `ffmpeg -f lavfi -i sine=f=440:d=1 -c:a libopus -ac 2 -f rtp "rtp://239.1.2.3:5014?ttl=5"
    ///  -sdp_file mcast.sdp`
    static let ffmpegMulticastOpus = crlf([
        "v=0",
        "o=- 0 0 IN IP4 127.0.0.1",
        "s=No Name",
        "c=IN IP4 239.1.2.3/5",
        "t=0 0",
        "a=tool:libavformat LIBAVFORMAT_VERSION",
        "m=audio 5014 RTP/AVP 97",
        "b=AS:96",
        "a=rtpmap:97 opus/48000/2",
        "a=fmtp:97 sprop-stereo=1",
    ])

    static let allFFmpeg = [ffmpegSRTP, ffmpegPlain, ffmpegPCMUAndH264, ffmpegIPv6H264, ffmpegMulticastOpus]

    /// Hand-written, not from a tool: every line type and every attribute the accessors
    /// read, in RFC 8866 order, with LF endings. The GCM key is 28 bytes 0x00...0x1b.
    static let everyField = [
        "v=0",
        "o=engine 4611731400430051336 2 IN IP4 192.0.2.10",
        "s=Call 42",
        "i=A call with every field",
        "u=https://example.com/call/42",
        "e=ops@example.com",
        "p=+1 555 0100",
        "c=IN IP4 192.0.2.10",
        "b=CT:1000",
        "t=3034423619 3042462419",
        "r=604800 3600 0 90000",
        "t=0 0",
        "z=2882844526 -1h 2898848070 0",
        "a=recvonly",
        "a=group:BUNDLE a v",
        "a=extmap-allow-mixed",
        "x=an unknown line type",
        "m=audio 49170 RTP/SAVP 111 0 101",
        "i=Microphone",
        "b=AS:64",
        "b=TIAS:64000",
        "a=mid:a",
        "a=sendonly",
        "a=rtpmap:111 opus/48000/2",
        "a=fmtp:111 minptime=10;useinbandfec=1; stereo=0",
        "a=rtpmap:101 telephone-event/8000",
        "a=fmtp:101 0-15",
        "a=rtcp:49171 IN IP4 198.51.100.7",
        "a=rtcp-mux",
        "a=extmap:1 urn:ietf:params:rtp-hdrext:ssrc-audio-level vad=on",
        "a=extmap:3/sendonly http://www.ietf.org/id/draft-holmer-rmcat-transport-wide-cc-extensions-01",
        "a=crypto:1 AES_CM_128_HMAC_SHA1_80 inline:+7XSRyuAsdI9YBW6dE2U+p0OLH+C4DcAY7wu7cAi|2^31|1:4 KDR=1",
        "a=crypto:2 AEAD_AES_128_GCM inline:AAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGw==",
        "a=ssrc:3735928559 cname:engine@host",
        "a=ssrc:3735928559 msid:stream0 audio0",
        "a=ssrc:16909060 cname:other",
        "a=x-vendor-thing:opaque value",
        "m=video 49172/2 RTP/AVPF 96",
        "c=IN IP6 2001:db8::7",
        "a=mid:v",
        "a=rtpmap:96 VP8/90000",
        "a=rtcp-fb:96 nack pli",
        "a=extmap:200 urn:example:two-byte-only",
        "m=application 9 UDP/DTLS/SCTP webrtc-datachannel",
        "c=IN IP4 0.0.0.0",
        "a=inactive",
        "a=fmtp:webrtc-datachannel max-message-size=262144",
        "y=another unknown line",
    ].map { $0 + "\n" }.joined()

    /// The AEAD_AES_128_GCM key in `everyField`: bytes 0...27.
    static let gcmKeyBytes = (0..<28).map { UInt8($0) }
}
