import Foundation
import MediaEngine
import TestSupport
import Testing

/// ffmpeg as a real peer nobody here wrote: it must decode our SRTP, and we must decode its.
@Suite(.serialized) struct FFmpegInterop {
    /// ffmpeg's arguments to send `seconds` of a 440 Hz tone and 320x240 test video as
    /// SRTP to `port` (audio) and `port + 2` (video), writing the SDP.
    func ffmpegSender(key: String, port: Int, seconds: String, sdp: String) -> [String] {
        let srtp = ["-f", "rtp", "-srtp_out_suite", "AES_CM_128_HMAC_SHA1_80", "-srtp_out_params", key]
        return ["-hide_banner", "-loglevel", "error", "-re",
                "-f", "lavfi", "-i", "sine=f=440:r=48000", "-f", "lavfi", "-i", "testsrc=size=320x240:rate=30",
                "-map", "0:a", "-c:a", "libopus", "-b:a", "64k", "-t", seconds] + srtp + ["srtp://127.0.0.1:\(port)",
                "-map", "1:v", "-c:v", "libvpx", "-g", "30", "-deadline", "realtime", "-b:v", "500k", "-t", seconds]
            + srtp + ["srtp://127.0.0.1:\(port + 2)", "-sdp_file", sdp]
    }

    /// Alone (no other heavy test beside it): the sender is ffmpeg encoding VP8 in real
    /// time with `-re`, and starved of CPU it sends its audio in bursts. One CI run with two
    /// heavy tests beside it: 151 packets, none lost, jitter 17.5 ms, 30.7 % concealed,
    /// 4.46 s recorded of 3, the receiver filling the sender's gaps as it should.
    @Test func receiveDecodesWhatFFmpegSends() async throws {
        try await Heavy.runAlone {
            let directory = try temporaryDirectory("ffmpeg-in")
            defer { try? FileManager.default.removeItem(at: directory) }
            let port = try freePortBlock()
            let key = randomKey().base64
            let sdp = directory.appendingPathComponent("ffmpeg.sdp").path
            let wav = directory.appendingPathComponent("audio.wav").path
            let y4m = directory.appendingPathComponent("video.y4m").path

            // A short first run writes the SDP (the same text the real run writes), so the
            // receiver can listen before the real stream starts.
            let prepare = try BackgroundProcess(program: "ffmpeg", arguments: ffmpegSender(key: key, port: port, seconds: "0.2", sdp: sdp))
            #expect(try prepare.wait(timeout: 30).status == 0)
            let sdpText = try String(contentsOfFile: sdp, encoding: .utf8)
            #expect(sdpText.contains("a=crypto:1 AES_CM_128_HMAC_SHA1_80"), "ffmpeg wrote an SRTP SDP")

            let receiver = try CLI.start(["receive", "--sdp", sdp, "--record", wav, "--record", y4m, "--duration", "30"])
            #expect(receiver.waitForOutput(containing: "for video", timeout: 10))
            let sender = try BackgroundProcess(program: "ffmpeg", arguments: ffmpegSender(key: key, port: port, seconds: "3", sdp: sdp))
            #expect(try sender.wait(timeout: 30).status == 0)
            // The receiver has played what was on its way once it wrote the pictures (the last
            // may wait in the writer's buffer), or it ended at ffmpeg's BYE.
            await eventually { framesWritten(toY4M: y4m, width: 320, height: 240) >= 89 || !receiver.isRunning }
            receiver.interrupt()
            let run = try receiver.wait(timeout: 10)
            #expect(run.status == 0, "\(run.stderr)")
            print("ffmpeg -> receive: \(run.stdout)")

            let frequency = try toneFrequency(ofWAV: wav)
            #expect(abs((frequency ?? 0) - 440) <= 2, "tone at \(frequency ?? 0) Hz")
            // 3 s were sent; the jitter buffer may stretch or shorten the playout a little to
            // follow the delay (more on a loaded machine), so allow half a second either way.
            let seconds = try duration(ofWAV: wav)
            #expect(abs(seconds - 3) < 0.5, "\(seconds) s recorded")
            let video = try frames(ofY4M: y4m)
            #expect(video.width == 320 && video.height == 240)
            #expect(abs(video.count - 90) <= 4, "\(video.count) of 90 frames")
            #expect(run.stdout.contains("auth_failures=0"))
        }
    }

    @Test func ffmpegDecodesWhatSendSends() async throws {
        try await Heavy.run {
            let directory = try temporaryDirectory("ffmpeg-out")
            defer { try? FileManager.default.removeItem(at: directory) }
            let port = try freePortBlock()
            let key = randomKey().base64
            let sdp = directory.appendingPathComponent("send.sdp").path
            let wav = directory.appendingPathComponent("audio.wav").path
            let y4m = directory.appendingPathComponent("video.y4m").path
            let arguments = ["send", "--to", "127.0.0.1:\(port)", "--audio", "sine:440", "--video", "testsrc:320x240@30", "--sdp", sdp]
            let keyEnvironment = ["MEDIAENGINE_SRTP_KEY": key]

            let prepared = try CLI.run(arguments + ["--sdp-only"], environment: keyEnvironment)
            #expect(prepared.status == 0, "\(prepared.stderr)")
            let receiver = try BackgroundProcess(program: "ffmpeg", arguments: [
                "-hide_banner", "-loglevel", "error", "-protocol_whitelist", "file,udp,rtp,srtp", "-i", sdp,
                "-map", "0:a", "-c:a", "pcm_s16le", "-y", wav, "-map", "0:v", "-pix_fmt", "yuv420p", "-f", "yuv4mpegpipe", "-y", y4m,
            ])
            #expect(waitUntilUDPPortIsBound(port, timeout: 20) && waitUntilUDPPortIsBound(port + 2, timeout: 20),
                     "ffmpeg listens on the SDP's ports")
            let sent = try CLI.run(arguments + ["--duration", "3"], environment: keyEnvironment)
            #expect(sent.status == 0, "\(sent.stderr)")
            // ffmpeg has decoded what was on its way once it wrote the pictures (the last may
            // wait in its buffer), or it ended at the BYEs.
            let sentPictures = sentVideoFrames(sent.stdout) ?? 0
            await eventually { framesWritten(toY4M: y4m, width: 320, height: 240) >= sentPictures - 1 || !receiver.isRunning }
            receiver.interrupt()
            let run = try receiver.wait(timeout: 15)
            #expect(run.status == 0 || run.status == 255, "\(run.stderr)")
            print("send -> ffmpeg: \(sent.stdout)")

            let frequency = try toneFrequency(ofWAV: wav)
            #expect(abs((frequency ?? 0) - 440) <= 2, "tone at \(frequency ?? 0) Hz")
            let sentFrames = try #require(sentVideoFrames(sent.stdout))
            let video = try frames(ofY4M: y4m)
            #expect(video.width == 320 && video.height == 240)
            #expect(abs(video.count - sentFrames) <= sentFrames / 20, "ffmpeg decoded \(video.count) of \(sentFrames) frames")
        }
    }
}
