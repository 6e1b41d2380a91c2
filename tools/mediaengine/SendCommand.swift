import ArgumentParser
import Foundation
import MediaEngine

struct SendCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "send",
        abstract: "Send Opus audio and VP8 video as SRTP (or RTP) to HOST:PORT and write an SDP file describing it.",
        discussion: """
        Audio goes to PORT and video to PORT+2, with RTCP on the port above each, as ffmpeg and GStreamer expect; \
        --bundle sends both to PORT with RTCP muxed (for `mediaengine receive`). Open the SDP with \
        `ffmpeg -protocol_whitelist file,udp,rtp,srtp -i OUT.sdp ...`. The SDP holds the SRTP key: keep it private.

        Sources: sine:FREQ, tones:F1,F2, silence, file:PATH (48 kHz WAV/FLAC) or alsa:NAME (a microphone) for audio; \
        testsrc[:WxH[@FPS]], v4l2:/dev/videoN[:WxH[@FPS]] (a webcam) or file:PATH.y4m for video. \
        `mediaengine devices` lists the devices.
        """
    )

    @Option(help: "Destination HOST:PORT (IPv6 as [ADDR]:PORT).")
    var to: String

    @Option(help: "Audio source.")
    var audio: String?

    @Option(help: "Video source.")
    var video: String?

    @Option(help: "Seconds to send (default: until the sources end or Ctrl-C).")
    var duration: Double?

    @Option(help: "Write the SDP describing the streams here.")
    var sdp: String?

    @Flag(help: "Write the SDP and exit without sending (start the receiver with it, then send).")
    var sdpOnly = false

    @Option(help: "File holding the SRTP master key and salt, base64 (30 bytes; 28 for AEAD_AES_128_GCM); or set MEDIAENGINE_SRTP_KEY. Default: a random key.")
    var srtpKeyFile: String?

    @Option(help: "SRTP master key and salt, base64. Every user of this machine sees it in the process list: prefer --srtp-key-file or MEDIAENGINE_SRTP_KEY.")
    var srtpKey: String?

    @Option(help: "SRTP profile: AES_CM_128_HMAC_SHA1_80, AES_CM_128_HMAC_SHA1_32 or AEAD_AES_128_GCM.")
    var srtpProfile: String = SRTPProfile.aesCM128HMACSHA1_80.rawValue

    @Flag(help: "Send plain RTP.")
    var noSrtp = false

    @Option(help: "Fixed audio SSRC (default random); GStreamer's srtpdec needs to know it.")
    var audioSsrc: UInt32?

    @Option(help: "Fixed video SSRC (default random).")
    var videoSsrc: UInt32?

    @Flag(help: "Send audio and video to one port with RTCP muxed.")
    var bundle = false

    @Option(help: "Opus bitrate, b/s (k suffix allowed).")
    var audioBitrate: String = "48k"

    @Option(help: "VP8 bitrate, b/s (k and M suffixes allowed).")
    var videoBitrate: String = "1M"

    @Option(help: "Seconds between keyframes.")
    var keyframeInterval: Double = 2

    @OptionGroup var outputs: LocalOutputOptions
    @OptionGroup var mix: MixOptions

    func validate() throws {
        if audio == nil && video == nil { throw ValidationError("give --audio, --video or both") }
        if audioSsrc == 0 || videoSsrc == 0 { throw ValidationError("an SSRC must not be 0") }
        if noSrtp && (srtpKey != nil || srtpKeyFile != nil) {
            throw ValidationError("\(srtpKey != nil ? "--srtp-key" : "--srtp-key-file") and --no-srtp cannot be combined")
        }
        // MEDIAENGINE_SRTP_KEY counts only for SRTP: with --no-srtp it is left alone.
        let key = noSrtp ? nil : try SecretSource.srtpKey.resolve(argument: srtpKey, file: srtpKeyFile)
        if sdpOnly && sdp == nil { throw ValidationError("--sdp-only needs --sdp FILE") }
        if !noSrtp && key == nil && sdp == nil {
            throw ValidationError("a random SRTP key is only useful with --sdp FILE to hand it to the receiver; add --sdp, --srtp-key-file or --no-srtp")
        }
        if let duration, !(duration > 0 && duration <= 86_400) {
            throw ValidationError("--duration \(duration) must be more than 0 and at most 86400 seconds")
        }
        guard SRTPProfile(rawValue: srtpProfile) != nil else {
            throw ValidationError("--srtp-profile '\(srtpProfile)' is not one of \(SRTPProfile.allCases.map(\.rawValue).joined(separator: ", "))")
        }
        guard SpecValue.bitrate(audioBitrate) != nil else { throw ValidationError("--audio-bitrate '\(audioBitrate)' is not a bitrate") }
        guard SpecValue.bitrate(videoBitrate) != nil else { throw ValidationError("--video-bitrate '\(videoBitrate)' is not a bitrate") }
        guard keyframeInterval > 0 && keyframeInterval <= 3_600 else {
            throw ValidationError("--keyframe-interval \(keyframeInterval) must be more than 0 and at most 3600 seconds")
        }
        try outputs.check()
        try mix.check()
        if mix.mixFile != nil && audio == nil { throw ValidationError("--mix-file needs --audio: the file is mixed into the sent audio") }
        if outputs.recordAudio != nil && audio == nil { throw ValidationError("--record-audio needs --audio") }
        if outputs.snapshot != nil && video == nil { throw ValidationError("--snapshot needs --video") }
    }

    func run() throws {
        let destination = try SocketAddress(parsing: to)
        let profile = SRTPProfile(rawValue: srtpProfile)!
        var configuration = MediaSender.Configuration(
            audio: try audio.map { try MediaSources.audio($0) }, video: try video.map { try MediaSources.video($0) },
            audioDestination: destination, videoDestination: bundle ? destination : destination.with(port: destination.port + 2))
        configuration.rtcpMux = bundle
        configuration.audioSSRC = audioSsrc
        configuration.videoSSRC = videoSsrc
        configuration.audioBitrate = SpecValue.bitrate(audioBitrate)!
        configuration.videoBitrate = SpecValue.bitrate(videoBitrate)!
        configuration.keyframeInterval = keyframeInterval
        if !noSrtp {
            let key = try SecretSource.srtpKey.resolve(argument: srtpKey, file: srtpKeyFile, warn: { _ in })
            configuration.keying = try key.map { try SRTPKeyingMaterial(profile: profile, base64: $0) } ?? .random(profile: profile)
        }
        let controls = SenderControls()
        configuration.controls = controls
        let outputs = try SendOutputs(options: self.outputs, mix: mix, configuration: &configuration, controls: controls)
        let sender = try MediaSender(configuration: configuration)
        if let sdp {
            let text = try sender.sessionDescription().text
            // The file holds the key: readable by its owner only.
            guard FileManager.default.createFile(atPath: sdp, contents: Data(text.utf8), attributes: [.posixPermissions: 0o600]) else {
                throw ValidationError("cannot write the SDP to \(sdp)")
            }
        }
        if sdpOnly { return }
        Interruption.install()
        printError("sending to \(destination)\(bundle ? " (bundled)" : "") from \(sender.localAddress)"
            + (configuration.keying.map { ", SRTP \($0.profile)" } ?? ", plain RTP"))
        let statistics = try sender.run(duration: duration.map { .milliseconds(Int64($0 * 1_000)) }, stop: { Interruption.requested })
        outputs.finish()
        if let failure = statistics.audioFailure { printError("audio stopped: \(failure)") }
        if let failure = statistics.videoFailure { printError("video stopped: \(failure)") }
        print(Self.summary(statistics))
    }

    static func summary(_ s: MediaSender.Statistics) -> String {
        func remote(_ report: MediaSender.RemoteReport?) -> String {
            guard let report else { return "lost=n/a jitter=n/a" }
            return "lost=\(report.packetsLost) jitter=\(milliseconds(report.jitter))"
                + (report.roundTripTime.map { " rtt=\(milliseconds($0))" } ?? "")
        }
        var parts: [String] = []
        if s.audioFrames > 0 || s.audioPackets > 0 {
            parts.append("audio packets=\(s.audioPackets) bytes=\(s.audioBytes) \(remote(s.audioReport))")
        }
        if s.videoFrames > 0 || s.videoPackets > 0 {
            parts.append("video packets=\(s.videoPackets) bytes=\(s.videoBytes) frames=\(s.videoFrames) keyframes=\(s.keyframes) "
                + "nacks=\(s.nacksReceived) retransmitted=\(s.retransmissions) bitrate=\(s.videoBitrate / 1_000)k \(remote(s.videoReport))")
        }
        if let target = s.targetBitrate { parts.append("estimate=\(target / 1_000)k") }
        return "sent: " + (parts.isEmpty ? "nothing" : parts.joined(separator: " | "))
    }
}

/// What `send` writes besides the network: a WebM of what it sends, its audio, a
/// snapshot; and the file it mixes in. Built before sending starts, finished after.
final class SendOutputs: Sendable {
    private let recorder: MediaRecorder?
    private let audio: AudioOutput?

    /// The sent audio to WAV or Ogg Opus; written on the sending thread alone.
    final class AudioOutput: @unchecked Sendable {
        let writer: WAVWriter
        var failure: String?
        init(_ writer: WAVWriter) { self.writer = writer }
    }

    init(options: LocalOutputOptions, mix: MixOptions, configuration: inout MediaSender.Configuration, controls: SenderControls) throws {
        let layout = configuration.audio?.layout ?? .mono
        if let path = options.recordLocal {
            let bitrate = options.recordVideoBitrate.flatMap { $0 == configuration.videoBitrate ? nil : $0 }
            let recorder = try MediaRecorder(path: path, audioChannels: configuration.audio == nil ? nil : layout.count,
                                             video: configuration.video != nil, reencodeVideoAt: bitrate) { notice in
                switch notice {
                case .keyframeNeeded: controls.update { $0.keyframeRequested = true }
                case .failed(let error): printError("recording stopped: \(error.message)")
                case .videoSizeChanged(let width, let height): printError("recording: the video is now \(width)x\(height)")
                }
            }
            configuration.encodedMedia = { recorder.offer($0) }
            self.recorder = recorder
            printError("recording what is sent to \(path)")
        } else {
            recorder = nil
        }
        if let path = options.recordAudio, let container = WAVWriter.Container(path: path) {
            audio = AudioOutput(try WAVWriter(path: path, layout: layout, container: container))
        } else {
            audio = nil
        }
        let snapshot = Locked<String?>(options.snapshot)
        let recorder = self.recorder
        configuration.capturedVideo = { frame in
            recorder?.offerPicture(frame)
            guard let path = snapshot.withLock({ path in defer { path = nil }; return path }) else { return }
            // Saved off the sending thread; the copy shares the picture until the next capture.
            Thread.detachNewThread {
                do {
                    try frame.writePNG(path: path)
                    printError("snapshot \(frame.width)x\(frame.height) saved to \(path)")
                } catch {
                    printError("snapshot failed: \(error)")
                }
            }
        }
        if let audio {
            configuration.capturedAudio = { frame in
                guard audio.failure == nil else { return }
                do {
                    try frame.samples.withUnsafeBufferPointer { try audio.writer.write($0) }
                } catch {
                    audio.failure = "\(error)"
                }
            }
        }
        if let task = try mix.task() {
            var mixer = FrameFileMixer()
            configuration.audioMix = { frame in
                guard !task.isFinished else { return }
                if mixer.mix(task, into: &frame) { printError("mix file finished: \(task.fileURL.path)") }
            }
        }
    }

    /// Closes the recordings and says what they hold.
    func finish() {
        if let recorder {
            let summary = recorder.stop()
            printError("recorded \(summary.path): \(summary.audioPackets) audio packets, \(summary.videoFrames) video frames, "
                + "\(String(format: "%.1f", summary.duration)) s" + (summary.failure.map { "; \($0.message)" } ?? ""))
        }
        if let audio {
            do {
                try audio.writer.close()
            } catch {
                audio.failure = audio.failure ?? "\(error)"
            }
            if let failure = audio.failure { printError("audio recording \(audio.writer.path): \(failure)") }
        }
    }
}
