#if canImport(Glibc)
import Glibc
#endif

/// Sends synthetic, file or device media as (S)RTP to a peer, paced to the wall clock:
/// Opus audio in 20 ms frames and VP8 video at the source's rate, RTCP sender reports at
/// the RFC 3550 interval, BYE at the end. Answers NACK from a retransmission history and
/// PLI/FIR with a keyframe; once transport-wide feedback arrives, follows the
/// `SendSideBandwidthEstimator` (VP8 bitrate, Opus expected loss) within the set maximum.
///
/// Runs on the calling thread until the duration passes, the sources end or `stop`
/// returns true. Per packet it allocates nothing.
public final class MediaSender {
    /// What to send and where.
    public struct Configuration {
        public var audio: (any AudioSource)?
        public var video: (any VideoSource)?
        /// RTP destination of the audio.
        public var audioDestination: SocketAddress
        /// RTP destination of the video (the audio's when bundled).
        public var videoDestination: SocketAddress
        /// Send RTCP to the RTP port (RFC 5761) instead of the next port up.
        public var rtcpMux = false
        /// SRTP key, or nil for plain RTP.
        public var keying: SRTPKeyingMaterial?
        /// Fixed SSRCs (for receivers such as GStreamer's srtpdec that key by SSRC);
        /// random when nil.
        public var audioSSRC: UInt32?
        public var videoSSRC: UInt32?
        public var audioPayloadType: UInt8 = 111
        public var videoPayloadType: UInt8 = 96
        public var audioBitrate = 48_000
        public var videoBitrate = 1_000_000
        /// Seconds between periodic keyframes, for receivers that join late and never
        /// send PLI.
        public var keyframeInterval: Double = 2
        public var extensions = RTPExtensionMap.standard
        /// RTCP CNAME.
        public var cname = "mediaengine"
        /// Local address to send from (port 0 picks one).
        public var localAddress: SocketAddress?
        /// A bound socket to send from instead (one that already ran connectivity checks).
        public var socket: UDPSocket?
        /// Live mute, video pause, bitrate cap and keyframe requests.
        public var controls: SenderControls?
        /// Mixes more audio into each captured frame (after muting), on the sending thread:
        /// audio-file mixing.
        public var audioMix: ((inout AudioFrame) -> Void)?
        /// Sees each captured audio frame as it will be sent (after muting and mixing), on
        /// the sending thread: for level meters.
        public var capturedAudio: ((AudioFrame) -> Void)?
        /// Sees each picture about to be encoded (after the video hook), on the sending
        /// thread: for previews and snapshots.
        public var capturedVideo: ((VideoFrame) -> Void)?
        /// The app's audio and video hooks, run between capture and encoding.
        public var captureHooks: CaptureHooks?
        /// Sees each Opus packet and VP8 frame as encoded, on the sending thread: for recordings.
        public var encodedMedia: ((EncodedMedia) -> Void)?

        public init(audio: (any AudioSource)?, video: (any VideoSource)?, audioDestination: SocketAddress,
                    videoDestination: SocketAddress) {
            self.audio = audio
            self.video = video
            self.audioDestination = audioDestination
            self.videoDestination = videoDestination
        }
    }

    /// What was sent.
    public struct Statistics: Sendable, Hashable {
        public var audioPackets = 0
        public var audioBytes = 0
        public var audioFrames = 0
        public var videoPackets = 0
        public var videoBytes = 0
        public var videoFrames = 0
        public var keyframes = 0
        public var rtcpSent = 0
        /// PLI and FIR requests answered.
        public var keyframeRequests = 0
        /// The receiver's latest report on the audio stream, if it sent one.
        public var audioReport: RemoteReport?
        /// The receiver's latest report on the video stream, if it sent one.
        public var videoReport: RemoteReport?
        /// Why the audio source stopped early (a device that failed), if it did.
        public var audioFailure: String?
        /// Why the video source stopped early, if it did.
        public var videoFailure: String?
        /// Video packets sent again in answer to NACKs.
        public var retransmissions = 0
        /// RRTR blocks answered with DLRR (the receiver's round-trip measurement).
        public var referenceTimesAnswered = 0
        /// NACK packets received.
        public var nacksReceived = 0
        /// Transport-wide feedback packets received (bandwidth estimation is active once
        /// the first arrives).
        public var transportFeedbackReceived = 0
        /// The bandwidth estimate the encoders last followed, b/s (nil without feedback).
        public var targetBitrate: Int?
        /// The VP8 target bitrate in force at the end, b/s.
        public var videoBitrate = 0
        /// Times the video source was replaced by one of another size.
        public var videoResolutionChanges = 0
    }

    /// What a receiver's RTCP report block said.
    public struct RemoteReport: Sendable, Hashable {
        public var packetsLost: Int
        /// Interarrival jitter, seconds.
        public var jitter: Double
        /// Round trip from LSR/DLSR, seconds; nil before the receiver has seen an SR.
        public var roundTripTime: Double?
    }

    public let configuration: Configuration
    public let transport: RTPTransport
    public private(set) var statistics = Statistics()
    public let audioStream: RTPSendStream?
    public let videoStream: RTPSendStream?
    private let opus: Opus.Encoder?
    private var opusPayloader = OpusPayloader()
    private let vp8: VP8.Encoder?
    /// Answers NACK (from the retransmission history), PLI and FIR for the video stream.
    private var responder: VideoFeedbackResponder?
    /// GCC-style estimate from transport-wide feedback and receiver reports.
    private var estimator: SendSideBandwidthEstimator
    /// Follow the estimate only once the receiver sends transport-wide feedback: peers
    /// that give none (ffmpeg, GStreamer) get the configured bitrate.
    private var followsEstimate = false
    /// Feedback changed the estimate since the encoders last followed it.
    private var estimateUpdated = false
    private var roundTripTime: Duration = .milliseconds(100)
    /// The live cap and target from `controls`, as last applied.
    private var bitrateCap: Int?
    private var bitrateTarget: Int?
    /// Where pictures come from (the configured source until `controls` replaces it).
    private var videoSource: (any VideoSource)?
    /// Video was paused by `controls` at the last frame.
    private var videoPaused = false
    private var reportInterval: RTCPInterval
    private var random = SystemRandomNumberGenerator()

    public init(configuration: Configuration) throws {
        self.configuration = configuration
        videoSource = configuration.video
        let local = try configuration.localAddress
            ?? SocketAddress(host: configuration.audioDestination.isIPv6 ? "::" : "0.0.0.0", port: 0)
        transport = try RTPTransport(socket: configuration.socket ?? UDPSocket(bindTo: local), keying: configuration.keying)
        var random = SystemRandomNumberGenerator()
        func rtcp(_ address: SocketAddress) -> SocketAddress {
            configuration.rtcpMux ? address : address.with(port: address.port + 1)
        }
        if let audio = configuration.audio {
            var settings = Opus.Configuration()
            settings.layout = audio.layout
            settings.bitrate = configuration.audioBitrate
            settings.inbandFEC = true
            opus = try Opus.Encoder(configuration: settings)
            audioStream = RTPSendStream(ssrc: configuration.audioSSRC ?? UInt32.random(in: 1 ... .max, using: &random),
                                        payloadType: configuration.audioPayloadType, clockRate: 48_000,
                                        destination: configuration.audioDestination,
                                        rtcpDestination: rtcp(configuration.audioDestination),
                                        extensions: configuration.extensions, audio: true)
        } else {
            opus = nil
            audioStream = nil
        }
        if let video = configuration.video {
            var settings = VP8.Configuration(width: video.width, height: video.height, bitrate: configuration.videoBitrate)
            settings.frameRate = video.frameRate
            settings.keyframeInterval = max(1, Int(configuration.keyframeInterval * Double(video.frameRate)))
            vp8 = try VP8.Encoder(configuration: settings)
            videoStream = RTPSendStream(ssrc: configuration.videoSSRC ?? UInt32.random(in: 1 ... .max, using: &random),
                                        payloadType: configuration.videoPayloadType, clockRate: VP8.clockRate,
                                        destination: configuration.videoDestination,
                                        rtcpDestination: rtcp(configuration.videoDestination),
                                        extensions: configuration.extensions, audio: false)
        } else {
            vp8 = nil
            videoStream = nil
        }
        let audioRate = configuration.audio != nil ? configuration.audioBitrate : 0
        let videoRate = configuration.video != nil ? configuration.videoBitrate : 0
        estimator = SendSideBandwidthEstimator(configuration: SendSideBandwidthEstimator.Configuration(
            startBitrate: audioRate + videoRate, minimumBitrate: audioRate + (videoRate > 0 ? 50_000 : 0),
            maximumBitrate: audioRate + videoRate))
        // The SDP profile is RTP/SAVP, not AVPF: RFC 3550's 5 s minimum applies. (ffmpeg
        // also re-derives its timing from every SR, and SRs a few hundred ms apart make its
        // frame-rate guess wrong.) Feedback travels separately (NACK, PLI, transport-wide).
        reportInterval = RTCPInterval(sessionBandwidth: max(audioRate + videoRate, 8_000), weSent: true, reducedMinimum: false)
        responder = videoStream.map { VideoFeedbackResponder(ssrc: $0.ssrc) }
        statistics.videoBitrate = videoRate
        let observe: (UInt16?, UnsafeRawBufferPointer, Duration) -> Void = { [unowned self] sequence, bytes, now in
            if let sequence { self.estimator.packetSent(transportSequenceNumber: sequence, size: bytes.count, now: now) }
        }
        audioStream?.packetSent = observe
        videoStream?.packetSent = { [unowned self] sequence, bytes, now in
            observe(sequence, bytes, now)
            _ = self.responder?.packetSent(bytes, now: now)
        }
    }

    /// Sends until `duration` has passed (nil: until the sources end) or `stop()`.
    public func run(duration: Duration?, stop: () -> Bool = { false }) throws -> Statistics {
        let clock = ContinuousClock()
        let start = clock.now
        let frameSamples = 960
        var audioFrame = AudioFrame(layout: configuration.audio?.layout ?? .mono, samplesPerChannel: frameSamples)
        var videoFrame = VideoFrame(width: configuration.video?.width ?? 2, height: configuration.video?.height ?? 2)
        var encoded = [UInt8](repeating: 0, count: vp8?.maximumFrameSize ?? 0)
        var receiveBuffer = [UInt8](repeating: 0, count: 1_500)
        var audioIndex = 0
        var videoIndex = 0
        var audioLive = configuration.audio != nil
        var videoLive = configuration.video != nil
        var forceKeyframe = false
        let videoPeriod = Duration.nanoseconds(1_000_000_000 / Int64(max(1, configuration.video?.frameRate ?? 30)))
        var nextReport = Duration.zero

        while audioLive || videoLive {
            let elapsed = clock.now - start
            if let duration, elapsed >= duration { break }
            if stop() { break }
            let nextAudio = audioLive ? Duration.milliseconds(20 * audioIndex) : .seconds(1 << 40)
            let nextVideo = videoLive ? videoPeriod * videoIndex : .seconds(1 << 40)
            let due = min(nextAudio, nextVideo, nextReport)
            if due > elapsed {
                // Sleep in short steps so PLI is answered promptly and stop() is honoured.
                forceKeyframe = try pollFeedback(buffer: &receiveBuffer, now: elapsed) || forceKeyframe
                Self.sleep(min(due - elapsed, .milliseconds(5)))
                continue
            }
            if audioLive && nextAudio <= elapsed, let source = configuration.audio, let opus, let stream = audioStream {
                if readAudio(source, into: &audioFrame) {
                    configuration.captureHooks?.process(&audioFrame)
                    if configuration.controls?.current.audioMuted == true {
                        for index in audioFrame.samples.indices { audioFrame.samples[index] = 0 }
                    }
                    configuration.audioMix?(&audioFrame)
                    configuration.capturedAudio?(audioFrame)
                    try sendAudio(audioFrame, index: audioIndex, encoder: opus, stream: stream, now: elapsed)
                    // A sender report right behind the first packet gives receivers the
                    // RTP/NTP mapping from the start (ffmpeg derives timing from it).
                    if audioIndex == 0 { try sendReports(for: [stream], now: elapsed, goodbye: false) }
                    audioIndex += 1
                } else {
                    // A source that ends or fails ends only its own track.
                    audioLive = false
                    try sendReports(for: [stream], now: elapsed, goodbye: true)
                }
            }
            if videoLive && nextVideo <= elapsed, let vp8, let stream = videoStream {
                if let replacement = configuration.controls?.takeVideoSource() {
                    try switchVideoSource(to: replacement, encoder: vp8, frame: &videoFrame, buffer: &encoded)
                    forceKeyframe = true
                }
                if let source = videoSource, readVideo(source, into: &videoFrame) {
                    let controls = configuration.controls?.current ?? SenderControls.State()
                    if configuration.controls?.takeKeyframeRequest() == true { forceKeyframe = true }
                    try applyVideoBitrate(controls)
                    // With a video hook, what is sent is the latest picture it handed back, if any.
                    let hooked = configuration.captureHooks?.process(&videoFrame) ?? true
                    let encodable = hooked && videoFrame.width == vp8.configuration.width && videoFrame.height == vp8.configuration.height
                    if hooked { configuration.capturedVideo?(videoFrame) }
                    if controls.videoPaused {
                        // Resuming starts with a keyframe: the receiver's decoder lost its references.
                        videoPaused = true
                    } else if encodable {
                        let keyframe = forceKeyframe || statistics.videoFrames == 0 || videoPaused
                        forceKeyframe = false
                        videoPaused = false
                        if keyframe { responder?.keyframeSent(now: elapsed) }
                        try sendVideo(videoFrame, index: videoIndex, keyframe: keyframe, encoder: vp8, stream: stream,
                                      buffer: &encoded, now: elapsed)
                    }
                    if videoIndex == 0 { try sendReports(for: [stream], now: elapsed, goodbye: false) }
                    videoIndex += 1
                } else {
                    videoLive = false
                    try sendReports(for: [stream], now: elapsed, goodbye: true)
                }
            }
            if nextReport <= elapsed {
                try sendReports(for: liveStreams(audio: audioLive, video: videoLive), now: elapsed, goodbye: false)
                nextReport = elapsed + reportInterval.nextInterval(using: &random)
            }
        }
        try sendReports(for: liveStreams(audio: audioLive, video: videoLive), now: clock.now - start, goodbye: true)
        return statistics
    }

    private func liveStreams(audio: Bool, video: Bool) -> [RTPSendStream] {
        (audio ? [audioStream] : []).compactMap { $0 } + (video ? [videoStream] : []).compactMap { $0 }
    }

    /// The highest VP8 bitrate allowed now: the configured one, or the live target and cap.
    private var videoCeiling: Int {
        min(configuration.videoBitrate, bitrateTarget ?? .max, bitrateCap ?? .max)
    }

    /// Applies a changed live target or cap at once (the estimate may be above them).
    private func applyVideoBitrate(_ controls: SenderControls.State) throws {
        let cap = controls.maximumVideoBitrate.map { max(50_000, $0) }
        let target = controls.videoBitrate.map { max(50_000, $0) }
        guard cap != bitrateCap || target != bitrateTarget, let vp8 else { return }
        bitrateCap = cap
        bitrateTarget = target
        // Under an estimate, a lower ceiling applies now and a higher one with the next feedback.
        try vp8.setBitrate(followsEstimate ? min(videoCeiling, vp8.configuration.bitrate) : videoCeiling)
        statistics.videoBitrate = vp8.configuration.bitrate
    }

    /// Reads from another source from now on; a new size rebuilds the encoder (a new libvpx
    /// context) and the buffers for it.
    private func switchVideoSource(to source: any VideoSource, encoder: VP8.Encoder, frame: inout VideoFrame,
                                   buffer: inout [UInt8]) throws {
        videoSource = source
        guard source.width != frame.width || source.height != frame.height else { return }
        try encoder.setResolution(width: source.width, height: source.height)
        frame.reshape(width: source.width, height: source.height)
        if buffer.count < encoder.maximumFrameSize { buffer = [UInt8](repeating: 0, count: encoder.maximumFrameSize) }
        statistics.videoResolutionChanges += 1
    }

    /// Reads the next audio frame; false at the end of the source or when it failed,
    /// with the failure recorded in `statistics`.
    private func readAudio(_ source: any AudioSource, into frame: inout AudioFrame) -> Bool {
        do {
            return try source.read(into: &frame)
        } catch {
            statistics.audioFailure = "\(error)"
            return false
        }
    }

    /// Reads the next picture; false at the end of the source or when it failed.
    private func readVideo(_ source: any VideoSource, into frame: inout VideoFrame) -> Bool {
        do {
            return try source.read(into: &frame)
        } catch {
            statistics.videoFailure = "\(error)"
            return false
        }
    }

    private func sendAudio(_ frame: AudioFrame, index: Int, encoder: Opus.Encoder, stream: RTPSendStream, now: Duration) throws {
        let level = frame.samples.withUnsafeBufferPointer { AudioLevel(samples: $0) }
        var size = 0
        try frame.samples.withUnsafeBufferPointer { pcm in
            try stream.send(now: now, over: transport, audioLevel: level) { payload in
                size = try encoder.encode(pcm, into: payload)
                let (timestamp, marker) = opusPayloader.next(samples: frame.samplesPerChannel, payloadSize: size)
                configuration.encodedMedia?(EncodedMedia(kind: .audio, data: UnsafeRawBufferPointer(rebasing: payload[0..<size]),
                                                         rtpTimestamp: timestamp, time: .now))
                return (size, timestamp, marker)
            }
        }
        statistics.audioFrames += 1
        statistics.audioPackets += 1
        statistics.audioBytes += size
    }

    private func sendVideo(_ frame: VideoFrame, index: Int, keyframe: Bool, encoder: VP8.Encoder, stream: RTPSendStream,
                           buffer: inout [UInt8], now: Duration) throws {
        guard let info = try buffer.withUnsafeMutableBytes({ try encoder.encode(frame, forceKeyframe: keyframe, into: $0) }) else {
            return
        }
        let rate = configuration.video?.frameRate ?? 30
        let timestamp = UInt32(truncatingIfNeeded: index * VP8.clockRate / rate)
        var payloader = VP8Payloader(maximumPayloadSize: stream.payloadCapacity, firstPictureID: UInt16(truncatingIfNeeded: index))
        try buffer.withUnsafeBytes { bytes in
            let frameBytes = UnsafeRawBufferPointer(rebasing: bytes[0..<info.byteCount])
            configuration.encodedMedia?(EncodedMedia(kind: .video, data: frameBytes, rtpTimestamp: timestamp, isKeyframe: info.isKeyframe,
                                                     width: frame.width, height: frame.height, time: .now))
            for fragment in payloader.fragments(frameSize: info.byteCount) {
                try stream.send(now: now, over: transport) { payload in
                    (try VP8Payloader.write(fragment, of: frameBytes, into: payload), timestamp, fragment.isLast)
                }
                statistics.videoPackets += 1
            }
        }
        statistics.videoFrames += 1
        statistics.videoBytes += info.byteCount
        if info.isKeyframe { statistics.keyframes += 1 }
    }

    private func sendReports(for streams: [RTPSendStream], now: Duration, goodbye: Bool) throws {
        let ntp = NTPTime.now()
        for stream in streams where stream.packetsSent > 0 || goodbye {
            var packets: [RTCPPacket] = [.senderReport(stream.senderReport(ntp: ntp, mediaTime: now)),
                                         .sourceDescription(SourceDescription(ssrc: stream.ssrc, cname: configuration.cname))]
            if goodbye { packets.append(.goodbye(Goodbye(sources: [stream.ssrc]))) }
            try transport.sendRTCP(packets, to: stream.rtcpDestination)
            reportInterval.reportSent(size: RTCPPacket.compoundSize(of: packets))
            statistics.rtcpSent += 1
        }
    }

    /// Sets the encoders to the bandwidth estimate: VP8 gets what audio leaves (changed
    /// only when it moves by 5 % or more), Opus the loss to plan FEC for.
    private func followEstimate() throws {
        guard followsEstimate else { return }
        let target = estimator.targetBitrate
        statistics.targetBitrate = target
        let audioRate = configuration.audio != nil ? configuration.audioBitrate : 0
        if let vp8 {
            let video = min(videoCeiling, max(50_000, target - audioRate))
            if abs(video - vp8.configuration.bitrate) * 20 >= vp8.configuration.bitrate {
                try vp8.setBitrate(video)
            }
            statistics.videoBitrate = vp8.configuration.bitrate
        }
        if let opus {
            try opus.setExpectedPacketLoss(percent: estimator.opusExpectedLossPercent)
        }
    }

    /// Reads RTCP the receivers sent back: reports (loss, jitter, round trip), transport
    /// feedback (bandwidth estimate), NACK (retransmissions from the history), PLI and
    /// FIR. Returns true when a keyframe is due.
    private func pollFeedback(buffer: inout [UInt8], now: Duration) throws -> Bool {
        while let (count, _) = try buffer.withUnsafeMutableBytes({ try transport.socket.receiveNow(into: $0) }) {
            // Only plain RTCP can be read: a peer protecting its RTCP uses its own SDES key,
            // which this one-way session never learns. Anything unreadable is ignored.
            let packets = buffer.withUnsafeBytes { bytes in
                try? RTCPPacket.parseCompound(UnsafeRawBufferPointer(rebasing: bytes[0..<count]))
            }
            for packet in packets ?? [] {
                switch packet {
                case .receiverReport(let report):
                    record(report.reports, now: now)
                case .senderReport(let report):
                    record(report.reports, now: now)
                case .extendedReport(let report):
                    try answerReferenceTimes(report)
                case .transportFeedback(let feedback):
                    statistics.transportFeedbackReceived += 1
                    followsEstimate = true
                    _ = estimator.handle(feedback, now: now)
                    estimateUpdated = true
                case .genericNACK, .pictureLossIndication, .fullIntraRequest:
                    if case .genericNACK = packet { statistics.nacksReceived += 1 }
                    guard var responder, let destination = videoStream?.destination else { continue }
                    responder.handle(packet, now: now, rtt: roundTripTime) { bytes in
                        do {
                            try transport.sendRaw(bytes, to: destination)
                            statistics.retransmissions += 1
                        } catch {
                            // A retransmission that cannot be sent is as good as lost; the receiver asks again.
                        }
                    }
                    self.responder = responder
                default:
                    break
                }
            }
        }
        // The encoders follow each new estimate at once, not at the next report: a queue
        // building up at a bottleneck must be relieved within a round trip or two.
        if estimateUpdated {
            estimateUpdated = false
            try followEstimate()
        }
        guard var responder else { return false }
        defer { self.responder = responder }
        if responder.shouldForceKeyframe(now: now) {
            statistics.keyframeRequests += 1
            return true
        }
        return false
    }

    /// Answers each RRTR block (RFC 3611 4.4) at once with a DLRR whose delay is zero, so
    /// the receiver, which sends no media and so gets no report blocks, learns its RTT.
    /// Sent alone (reduced-size RTCP, RFC 5506) to where that side's RTCP goes.
    private func answerReferenceTimes(_ report: ExtendedReport) throws {
        for case .receiverReferenceTime(let ntp) in report.blocks {
            guard let stream = videoStream ?? audioStream else { return }
            let answer = ExtendedReport(senderSSRC: stream.ssrc, blocks: [.dlrr([ExtendedReport.DLRRSubBlock(
                ssrc: report.senderSSRC, lastReceiverReport: NTPTime.compact(ntp), delaySinceLastReceiverReport: 0)])])
            try transport.sendRTCP([.extendedReport(answer)], to: stream.rtcpDestination)
            statistics.referenceTimesAnswered += 1
        }
    }

    private func record(_ blocks: [ReceptionReport], now elapsed: Duration) {
        let now = NTPTime.compact(NTPTime.now())
        for block in blocks {
            var rtt: Double?
            if block.lastSenderReport != 0 {
                let units = now &- block.lastSenderReport &- block.delaySinceLastSenderReport
                rtt = Double(units) / 65_536
                if let rtt, rtt >= 0, rtt < 10 {
                    roundTripTime = .nanoseconds(Int64(rtt * 1e9))
                    estimator.setRoundTripTime(roundTripTime)
                }
            }
            // Loss from reports only while no transport-wide feedback has come: that feedback
            // carries the same losses per packet, and the estimator takes one source.
            if statistics.transportFeedbackReceived == 0, block.ssrc == videoStream?.ssrc || block.ssrc == audioStream?.ssrc {
                _ = estimator.handleReceiverReport(fractionLost: block.fractionLost, now: elapsed)
                followsEstimate = true
                estimateUpdated = true
            }
            if let audio = audioStream, block.ssrc == audio.ssrc {
                statistics.audioReport = RemoteReport(packetsLost: Int(block.cumulativeLost), jitter: Double(block.jitter) / 48_000,
                                                      roundTripTime: rtt)
            }
            if let video = videoStream, block.ssrc == video.ssrc {
                statistics.videoReport = RemoteReport(packetsLost: Int(block.cumulativeLost),
                                                      jitter: Double(block.jitter) / Double(VP8.clockRate), roundTripTime: rtt)
            }
        }
    }

    private static func sleep(_ duration: Duration) {
        let (seconds, attoseconds) = duration.components
        var request = timespec(tv_sec: Int(seconds), tv_nsec: Int(attoseconds / 1_000_000_000))
        var remaining = timespec()
        while nanosleep(&request, &remaining) != 0 && errno == EINTR { request = remaining }
    }
}
