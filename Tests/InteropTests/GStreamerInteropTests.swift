import Foundation
import MediaEngine
import TestSupport
import Testing

/// GStreamer's srtpenc/srtpdec with rtpopuspay and rtpvp8pay as the other real peer.
@Suite(.serialized) struct GStreamerInterop {
    func srtpCaps(_ hex: String) -> String {
        "srtp-key=(buffer)\(hex),srtp-cipher=(string)aes-128-icm,srtp-auth=(string)hmac-sha1-80,"
            + "srtcp-cipher=(string)aes-128-icm,srtcp-auth=(string)hmac-sha1-80"
    }

    func srtpEncoder(_ hex: String) -> [String] {
        ["srtpenc", "key=\(hex)", "rtp-cipher=aes-128-icm", "rtp-auth=hmac-sha1-80", "rtcp-cipher=aes-128-icm",
         "rtcp-auth=hmac-sha1-80"]
    }

    @Test func receiveDecodesWhatGStreamerSends() async throws {
        try await Heavy.run {
            let directory = try temporaryDirectory("gst-in")
            defer { try? FileManager.default.removeItem(at: directory) }
            let port = try freePortBlock()
            let key = randomKey()
            let sdp = directory.appendingPathComponent("gst.sdp").path
            let wav = directory.appendingPathComponent("audio.wav").path
            let y4m = directory.appendingPathComponent("video.y4m").path
            // GStreamer writes no SDP; this one describes what the pipeline below sends.
            try """
            v=0
            o=- 0 0 IN IP4 127.0.0.1
            s=gstreamer
            c=IN IP4 127.0.0.1
            t=0 0
            m=audio \(port) RTP/SAVP 97
            a=rtpmap:97 OPUS/48000/2
            a=crypto:1 AES_CM_128_HMAC_SHA1_80 inline:\(key.base64)
            m=video \(port + 2) RTP/SAVP 96
            a=rtpmap:96 VP8/90000
            a=crypto:1 AES_CM_128_HMAC_SHA1_80 inline:\(key.base64)

            """.write(toFile: sdp, atomically: true, encoding: .utf8)

            let receiver = try CLI.start(["receive", "--sdp", sdp, "--record", wav, "--record", y4m, "--duration", "30"])
            #expect(receiver.waitForOutput(containing: "for video", timeout: 10))
            let pipeline = ["-q",
                "audiotestsrc", "freq=440", "num-buffers=150", "samplesperbuffer=960", "is-live=true", "!",
                "audio/x-raw,rate=48000,channels=1", "!", "opusenc", "!", "rtpopuspay", "pt=97", "ssrc=1111", "!",
                "application/x-rtp,ssrc=(uint)1111", "!"] + srtpEncoder(key.hex) + ["!",
                "udpsink", "host=127.0.0.1", "port=\(port)",
                "videotestsrc", "num-buffers=90", "is-live=true", "!", "video/x-raw,width=320,height=240,framerate=30/1", "!",
                "vp8enc", "deadline=1", "keyframe-max-dist=30", "!", "rtpvp8pay", "pt=96", "ssrc=2222", "!",
                "application/x-rtp,ssrc=(uint)2222", "!"] + srtpEncoder(key.hex) + ["!",
                "udpsink", "host=127.0.0.1", "port=\(port + 2)"]
            let sender = try BackgroundProcess(program: "gst-launch-1.0", arguments: pipeline)
            let sent = try sender.wait(timeout: 30)
            #expect(sent.status == 0, "\(sent.stderr)")
            // The receiver has played what was on its way once it wrote the pictures (the last
            // may wait in the writer's buffer).
            await eventually { framesWritten(toY4M: y4m, width: 320, height: 240) >= 89 }
            receiver.interrupt()
            let run = try receiver.wait(timeout: 10)
            #expect(run.status == 0, "\(run.stderr)")
            print("gstreamer -> receive: \(run.stdout)")

            let frequency = try toneFrequency(ofWAV: wav)
            #expect(abs((frequency ?? 0) - 440) <= 2, "tone at \(frequency ?? 0) Hz")
            let video = try frames(ofY4M: y4m)
            #expect(video.width == 320 && video.height == 240)
            #expect(abs(video.count - 90) <= 4, "\(video.count) of 90 frames")
        }
    }

    @Test func gstreamerDecodesWhatSendSends() async throws {
        try await Heavy.run {
            let directory = try temporaryDirectory("gst-out")
            defer { try? FileManager.default.removeItem(at: directory) }
            let port = try freePortBlock()
            let key = randomKey()
            let wav = directory.appendingPathComponent("audio.wav").path
            let y4m = directory.appendingPathComponent("video.y4m").path
            let receiver = try BackgroundProcess(program: "gst-launch-1.0", arguments: ["-e",
                "udpsrc", "port=\(port)",
                "caps=application/x-srtp,media=(string)audio,clock-rate=(int)48000,encoding-name=(string)OPUS,payload=(int)111,ssrc=(uint)1111,\(srtpCaps(key.hex))",
                "!", "srtpdec", "!", "rtpopusdepay", "!", "opusdec", "!", "audioconvert", "!", "audio/x-raw,channels=1", "!",
                "wavenc", "!", "filesink", "location=\(wav)",
                "udpsrc", "port=\(port + 2)",
                "caps=application/x-srtp,media=(string)video,clock-rate=(int)90000,encoding-name=(string)VP8,payload=(int)96,ssrc=(uint)2222,\(srtpCaps(key.hex))",
                "!", "srtpdec", "!", "rtpvp8depay", "!", "vp8dec", "!", "y4menc", "!", "filesink", "location=\(y4m)",
            ])
            #expect(receiver.waitForOutput(containing: "PLAYING", timeout: 20))
            #expect(waitUntilUDPPortIsBound(port, timeout: 10) && waitUntilUDPPortIsBound(port + 2, timeout: 10))
            let sent = try CLI.run(["send", "--to", "127.0.0.1:\(port)", "--audio", "sine:440", "--video", "testsrc:320x240@30",
                                    "--audio-ssrc", "1111", "--video-ssrc", "2222", "--duration", "3"],
                                   environment: ["MEDIAENGINE_SRTP_KEY": key.base64])
            #expect(sent.status == 0, "\(sent.stderr)")
            // GStreamer has decoded what was on its way once it wrote the pictures (the last
            // may wait in its buffer).
            let sentPictures = sentVideoFrames(sent.stdout) ?? 0
            await eventually { framesWritten(toY4M: y4m, width: 320, height: 240) >= sentPictures - 1 }
            receiver.interrupt()
            let run = try receiver.wait(timeout: 15)
            #expect(run.status == 0, "\(run.stdout) \(run.stderr)")
            print("send -> gstreamer: \(sent.stdout)")

            let frequency = try toneFrequency(ofWAV: wav)
            #expect(abs((frequency ?? 0) - 440) <= 2, "tone at \(frequency ?? 0) Hz")
            let sentFrames = try #require(sentVideoFrames(sent.stdout))
            let video = try frames(ofY4M: y4m)
            #expect(abs(video.count - sentFrames) <= sentFrames / 20, "GStreamer decoded \(video.count) of \(sentFrames) frames")
        }
    }
}
