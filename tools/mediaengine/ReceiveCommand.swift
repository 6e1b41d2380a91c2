import ArgumentParser
import Foundation
import Synchronization
import MediaEngine

struct ReceiveCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "receive",
        abstract: "Receive the Opus and VP8 streams an SDP file describes, decrypt, decode and record them.",
        discussion: """
        Listens on the address and ports the SDP gives (any local address if that one is not local), using its \
        a=crypto keys. Works with SDP files written by `mediaengine send` and by ffmpeg's -sdp_file. Stops after \
        --duration, when every stream has sent RTCP BYE, or on Ctrl-C, and prints one stats line per stream.
        """
    )

    @Option(help: "SDP file describing the streams.")
    var sdp: String

    @Option(help: "Record audio to a .wav, video to a .y4m, or both as received (Opus and VP8, not re-encoded) to a .webm file; repeat for several.")
    var record: [String] = []

    @Option(help: "Seconds to receive (default: until BYE or Ctrl-C).")
    var duration: Double?

    @Option(help: "Play the audio: alsa:NAME (a playback PCM, e.g. alsa:default) or null.")
    var play: String?

    @Flag(help: "Print the statistics (W3C webrtc-stats names) once a second.")
    var stats = false

    func validate() throws {
        for path in record {
            guard path.hasSuffix(".wav") || path.hasSuffix(".y4m") || path.hasSuffix(".webm") else {
                throw ValidationError("--record \(path): use a .wav (audio), .y4m (video) or .webm (both, as received) file")
            }
            try requireDirectory(of: path, option: "--record")
        }
        if [".wav", ".y4m", ".webm"].contains(where: { suffix in record.filter { $0.hasSuffix(suffix) }.count > 1 }) {
            throw ValidationError("--record takes at most one .wav, one .y4m and one .webm file")
        }
        if let duration, !(duration > 0 && duration <= 86_400) {
            throw ValidationError("--duration \(duration) must be more than 0 and at most 86400 seconds")
        }
        if let play, play != "null" && !play.hasPrefix("alsa:") {
            throw ValidationError("--play: audio sink '\(play)' is not one of null, alsa:NAME")
        }
    }

    func run() throws {
        let text: String
        do {
            text = try String(contentsOfFile: sdp, encoding: .utf8)
        } catch {
            throw ValidationError("cannot read the SDP file \(sdp): \(error.localizedDescription)")
        }
        let description: SessionDescription
        let plan: MediaReceiver.Plan
        do {
            description = try SessionDescription(parsing: text)
            plan = try MediaReceiver.plan(for: description)
        } catch {
            throw ValidationError("\(sdp): \(error.message)")
        }
        let receiver: MediaReceiver
        do {
            receiver = try MediaReceiver(streams: plan.streams, host: plan.host)
        } catch let error as TransportError where error.systemError == EADDRNOTAVAIL {
            // The SDP names an address of this host as seen from elsewhere; listen on all.
            receiver = try MediaReceiver(streams: plan.streams, host: plan.host.contains(":") ? "::" : "0.0.0.0")
        }

        var webm: MediaRecorder?
        if let path = record.first(where: { $0.hasSuffix(".webm") }) {
            let keyframeWanted = Atomic<Bool>(false)
            let recorder = try MediaRecorder(path: path, audioChannels: plan.streams.first { $0.kind == .audio }?.layout.count,
                                             video: plan.streams.contains { $0.kind == .video }) { notice in
                switch notice {
                case .keyframeNeeded: keyframeWanted.store(true, ordering: .relaxed)
                case .failed(let error): printError("recording stopped: \(error.message)")
                case .videoSizeChanged(let width, let height): printError("recording: the video is now \(width)x\(height)")
                }
            }
            receiver.encodedMedia = { recorder.offer($0) }
            receiver.keyframeWanted = { keyframeWanted.exchange(false, ordering: .relaxed) }
            webm = recorder
        }
        let wavPath = record.first { $0.hasSuffix(".wav") }
        let y4mPath = record.first { $0.hasSuffix(".y4m") }
        let audioLayout = plan.streams.first { $0.kind == .audio }?.layout ?? .mono
        let wav = try wavPath.map { try WAVWriter(path: $0, layout: audioLayout) }
        let speaker = try play.map { try MediaSources.audioSink($0, layout: audioLayout) }
        var y4m: Y4M.Writer?
        var scaled: VideoFrame?
        let videoRate = 30

        for stream in plan.streams {
            printError("listening on \(plan.host):\(stream.port) for \(stream.kind) (payload type \(stream.payloadType)"
                + (stream.keying.map { ", SRTP \($0.profile)" } ?? ", plain RTP") + ")")
        }
        Interruption.install()
        let statistics = try receiver.run(duration: duration.map { .milliseconds(Int64($0 * 1_000)) },
                                          stop: { Interruption.requested },
                                          audio: { samples in
            try wav?.write(samples)
            try speaker?.write(samples)
        },
                                          video: { frame in
            guard let y4mPath else { return }
            if y4m == nil {
                y4m = try Y4M.Writer(path: y4mPath, width: frame.width, height: frame.height, frameRate: videoRate)
            }
            guard let writer = y4m else { return }
            if frame.width == writer.width && frame.height == writer.height {
                try writer.write(frame)
            } else {
                // Keep the file valid when the sender changes resolution: scale to the first size.
                if scaled == nil { scaled = VideoFrame(width: writer.width, height: writer.height) }
                frame.scale(into: &scaled!)
                try writer.write(scaled!)
            }
        }, report: stats ? { elapsed, statistics in
            // Written at once (not through print's buffer) so a pipe sees each second live.
            let text = Self.statisticsLines(statistics, at: elapsed).joined(separator: "\n") + "\n"
            FileHandle.standardOutput.write(Data(text.utf8))
        } : nil)
        if let summary = webm?.stop() {
            printError("recorded \(summary.path): \(summary.audioPackets) audio packets, \(summary.videoFrames) video frames, "
                + "\(String(format: "%.1f", summary.duration)) s" + (summary.failure.map { "; \($0.message)" } ?? ""))
        }
        try wav?.close()
        try y4m?.close()
        try speaker?.close()
        for line in Self.summary(statistics) { print(line) }
    }

    /// One line per stream with the W3C webrtc-stats names, for `--stats`.
    static func statisticsLines(_ statistics: MediaReceiver.Statistics, at elapsed: Duration) -> [String] {
        let time = String(format: "%.1f", elapsed / .seconds(1))
        var lines = statistics.streams.map { s in
            var fields = ["packetsReceived=\(s.packetsReceived)", "packetsLost=\(s.packetsLost)",
                          "packetsDiscarded=\(s.packetsDiscarded)", "jitter=\(String(format: "%.4f", s.jitter))"]
            if s.kind == .audio {
                fields += ["jitterBufferDelay=\(String(format: "%.3f", s.jitterBufferDelay))",
                           "jitterBufferEmittedCount=\(s.jitterBufferEmittedCount)",
                           "jitterBufferTargetDelay=\(String(format: "%.3f", s.jitterBufferTargetDelay))",
                           "totalSamplesReceived=\(s.totalSamplesReceived)", "concealedSamples=\(s.concealedSamples)",
                           "concealmentEvents=\(s.concealmentEvents)",
                           "insertedSamplesForDeceleration=\(s.insertedSamplesForDeceleration)",
                           "removedSamplesForAcceleration=\(s.removedSamplesForAcceleration)",
                           "fecRecoveredFrames=\(s.fecRecoveredFrames)"]
            } else {
                fields += ["framesDecoded=\(s.framesDecoded)", "keyFramesDecoded=\(s.keyFramesDecoded)",
                           "nackCount=\(s.nackSent)", "pliCount=\(s.pliSent)", "firCount=\(s.firSent)",
                           "retransmittedPacketsReceived=\(s.packetsRecovered)"]
                if let rtt = statistics.roundTripTime { fields.append("roundTripTime=\(String(format: "%.3f", rtt))") }
            }
            return "stats \(time)s \(s.kind): " + fields.joined(separator: " ")
        }
        if let offset = statistics.audioVideoOffset {
            lines.append("stats \(time)s sync: audioVideoOffset=\(String(format: "%.3f", offset))"
                + " audioDelay=\(String(format: "%.3f", statistics.synchronizationDelays.audio))"
                + " videoDelay=\(String(format: "%.3f", statistics.synchronizationDelays.video))")
        }
        return lines
    }

    static func summary(_ statistics: MediaReceiver.Statistics) -> [String] {
        statistics.streams.map { s in
            var line = "received \(s.kind): packets=\(s.packetsReceived) bytes=\(s.bytesReceived) lost=\(s.packetsLost)"
                + " auth_failures=\(s.authenticationFailures) jitter=\(milliseconds(s.jitter))"
                + " frames=\(s.framesDecoded)"
            if s.kind == .audio {
                let concealed = s.totalSamplesReceived > 0 ? Double(s.concealedSamples) * 100 / Double(s.totalSamplesReceived) : 0
                line = line.replacingOccurrences(of: " frames=\(s.framesDecoded)", with: "")
                line += " concealed=\(String(format: "%.1f", concealed))% fec_recovered=\(s.fecRecoveredFrames)"
                    + " playout_delay=\(milliseconds(s.meanJitterBufferDelay))"
            } else {
                line += " keyframes=\(s.keyFramesDecoded)"
            }
            line += " replays=\(s.replays) malformed=\(s.malformedPackets) discarded=\(s.packetsDiscarded)"
            return line
        } + (statistics.unknownDatagrams + statistics.malformedRTCP + statistics.unknownStreamPackets > 0
            ? ["received other: unknown_datagrams=\(statistics.unknownDatagrams) unknown_stream=\(statistics.unknownStreamPackets)"
                + " bad_rtcp=\(statistics.malformedRTCP)"] : [])
    }
}
