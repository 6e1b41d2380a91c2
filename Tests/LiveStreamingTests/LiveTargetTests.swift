@testable import LiveStreaming
@testable import MediaEngine
import Testing

/// Parsing live targets: which container and codecs each picks, which texts are refused
/// and why, and that descriptions and errors never show a stream key or password.
struct LiveTargetTests {
    /// Good targets: text, the case, the container, and the redacted description.
    static let good: [(text: String, target: LiveTarget, container: LiveContainer, shown: String)] = [
        ("rtmp://live.example.com/app/s3cretKey", .rtmp("rtmp://live.example.com/app/s3cretKey"), .flv,
         "rtmp://live.example.com/app/***"),
        ("rtmps://live.example.com:443/app/s3cretKey", .rtmp("rtmps://live.example.com:443/app/s3cretKey"), .flv,
         "rtmps://live.example.com:443/app/***"),
        ("rtmp://127.0.0.1:1935/live/s3cretKey?token=abc", .rtmp("rtmp://127.0.0.1:1935/live/s3cretKey?token=abc"), .flv,
         "rtmp://127.0.0.1:1935/live/***?***"),
        ("rtmp://[::1]:1935/a/b/s3cretKey", .rtmp("rtmp://[::1]:1935/a/b/s3cretKey"), .flv, "rtmp://[::1]:1935/a/b/***"),
        ("  RTMP://host/app/s3cretKey\n", .rtmp("RTMP://host/app/s3cretKey"), .flv, "RTMP://host/app/***"),
        ("icecast://source:hunter2@127.0.0.1:8000/room.webm", .icecast("icecast://source:hunter2@127.0.0.1:8000/room.webm"), .webm,
         "icecast://***@127.0.0.1:8000/room.webm"),
        ("http://source:hunter2@radio.example.org/room.webm", .icecast("http://source:hunter2@radio.example.org/room.webm"), .webm,
         "http://***@radio.example.org/room.webm"),
        ("https://radio.example.org:8443/room", .icecast("https://radio.example.org:8443/room"), .webm, "https://radio.example.org:8443/room"),
        ("/tmp/room.flv", .file("/tmp/room.flv"), .flv, "/tmp/room.flv"),
        ("recordings/Room.MP4", .file("recordings/Room.MP4"), .mp4, "recordings/Room.MP4"),
        ("file:///tmp/room.webm", .file("/tmp/room.webm"), .webm, "/tmp/room.webm"),
    ]

    @Test(arguments: good.indices)
    func parsesGoodTargets(_ index: Int) throws {
        let row = Self.good[index]
        let target = try LiveTarget(row.text)
        #expect(target == row.target)
        #expect(target.container == row.container)
        #expect(target.description == row.shown)
        #expect(!target.description.contains("s3cretKey") && !target.description.contains("hunter2"))
    }

    /// Bad targets and a word their error must contain; none may echo a secret.
    static let bad: [(text: String, mentions: String)] = [
        ("", "empty"),
        ("srt://127.0.0.1:9000?streamid=s3cretKey", "'srt'"),
        ("ftp://host/room.flv", "'ftp'"),
        ("://host/app/s3cretKey", "empty scheme"),
        ("rtmp:///app/s3cretKey", "no host"),
        ("rtmp://user:hunter2@/app/s3cretKey", "no host"),
        ("rtmp://host:99999/app/s3cretKey", "port '99999'"),
        ("rtmp://host:0/app/s3cretKey", "port '0'"),
        ("rtmp://host:12ab/app/s3cretKey", "port '12ab'"),
        ("rtmp://host/app/", "stream key"),
        ("rtmp://host/app", "stream key"),
        ("rtmp://host", "stream key"),
        ("rtmp://host//s3cretKey", "application"),
        ("icecast://source:hunter2@host:8000/", "mount"),
        ("http://source:hunter2@host", "mount"),
        ("icecast://source:hunter2@[::1/room.webm", "IPv6"),
        ("/tmp/room.mkv", "'.mkv'"),
        ("/tmp/room", "no extension"),
        ("/tmp/", "file name"),
    ]

    @Test(arguments: bad.indices)
    func refusesBadTargets(_ index: Int) {
        let row = Self.bad[index]
        let error = #expect(throws: LiveStreamError.self) { try LiveTarget(row.text) }
        guard let error else { return }
        #expect(error.kind == .invalidTarget && error.code == 20202, "\(row.text)")
        #expect(error.message.contains(row.mentions), "\(row.text): \(error.message)")
        #expect(!error.description.contains("s3cretKey") && !error.description.contains("hunter2"), "\(error)")
    }

    @Test func errorKindsHaveStableCodes() {
        #expect(LiveStreamError.Kind.invalidTarget.code == 20202)
        #expect(LiveStreamError.Kind.connectFailed.code == 20203)
        #expect(LiveStreamError.Kind.pushFailed.code == 20204)
        #expect(LiveStreamError.Kind.internalError.code == 20205)
        #expect(LiveStreamStatus.pushFailed.rawValue == 506 && LiveStreamStatus(rawValue: 508) == .userCountLimit)
        let error = LiveStreamError(.connectFailed, "rtmp://host/app/***: cannot open: Connection refused")
        #expect(error.description == "rtmp://host/app/***: cannot open: Connection refused (connect failed, 20203)")
    }

    @Test func icecastTargetsBecomeIcecastURLsWithOptions() throws {
        #expect(try LiveTarget("http://source:pw@h:8000/m.webm").muxerURL == "icecast://source:pw@h:8000/m.webm")
        let secure = try LiveTarget("https://h/m.webm")
        #expect(secure.muxerURL == "icecast://h/m.webm")
        #expect(secure.protocolOptions.map { "\($0.0)=\($0.1)" } == ["content_type=video/webm", "tls=1"])
        #expect(try LiveTarget("rtmp://h/a/k").protocolOptions.isEmpty)
        #expect(try LiveTarget("x.flv").family == .h264AAC && LiveTarget("x.mp4").family == .h264AAC && LiveTarget("x.webm").family == .vp8Opus)
        #expect(try LiveTarget("icecast://h/m").family == .vp8Opus && LiveTarget("rtmp://h/a/k").family == .h264AAC)
    }

    @Test func retryDelaysGrowToTheCeiling() {
        let policy = LiveRetryPolicy.default
        #expect((0..<6).map { policy.delay(retry: $0) } ==
                [.milliseconds(250), .milliseconds(500), .seconds(1), .seconds(2), .seconds(2), .seconds(2)])
        #expect(policy.delay(retry: 1_000_000) == .seconds(2))
    }

    @Test func formatsThatCannotBeEncodedAreRefused() {
        var format = LiveStreamFormat()
        #expect(format.keyframeFrames == 60)
        format.width = 1279
        let error = #expect(throws: LiveStreamError.self) { try LiveStreamer(format: format) { _ in } }
        #expect(error?.code == 20205 && error?.message.contains("1279x720") == true)
        format = LiveStreamFormat()
        format.sampleRate = 44_100
        #expect(throws: LiveStreamError.self) { try LiveStreamer(format: format) { _ in } }
    }
}
