/// Receives (S)RTP audio and video described by the caller (usually from an SDP file),
/// decodes it and hands PCM and pictures to sinks: Opus through the adaptive
/// `AudioJitterBuffer` (FEC, concealment, delay convergence) on a playout clock, VP8
/// through `VideoReceiveStream` (frames in order, NACK, PLI/FIR). It sends transport-wide
/// feedback and receiver reports at the RFC 3550 interval, and plays audio and video in
/// sync from the senders' SR mappings (`LipSync`).
///
/// Every bad datagram (unknown kind, failed SRTP, malformed RTP or RTCP, undecodable
/// payload) is counted and dropped. Runs on the calling thread; allocates nothing per
/// packet once warm, except for parsed RTCP.
public final class MediaReceiver {
    /// One stream to receive, as an SDP media section describes it.
    public struct StreamDescription: Sendable {
        public enum Kind: String, Sendable { case audio, video }
        public var kind: Kind
        public var payloadType: UInt8
        public var clockRate: Int
        /// Decoded channel layout (audio).
        public var layout: ChannelLayout
        public var port: Int
        /// Equal to `port` when RTCP is muxed.
        public var rtcpPort: Int
        /// Key the sender protects with, or nil for plain RTP.
        public var keying: SRTPKeyingMaterial?
        /// The sender's SSRC when the SDP names it (`a=ssrc`); packets from others are
        /// refused. Nil takes any SSRC with the payload type.
        public var ssrc: UInt32?
        /// The local ID of the transport-wide sequence number extension, when the SDP
        /// maps it (`a=extmap`): the receiver then sends transport-wide feedback.
        public var transportSequenceExtensionID: UInt8?

        public init(kind: Kind, payloadType: UInt8, clockRate: Int, layout: ChannelLayout = .mono, port: Int, rtcpPort: Int,
                    keying: SRTPKeyingMaterial?, ssrc: UInt32? = nil, transportSequenceExtensionID: UInt8? = nil) {
            self.ssrc = ssrc
            self.transportSequenceExtensionID = transportSequenceExtensionID
            self.kind = kind
            self.payloadType = payloadType
            self.clockRate = clockRate
            self.layout = layout
            self.port = port
            self.rtcpPort = rtcpPort
            self.keying = keying
        }
    }

    /// Counters for one stream, named after W3C webrtc-stats where one exists.
    public struct StreamStatistics: Sendable {
        public var kind: StreamDescription.Kind
        public var ssrc: UInt32?
        public var packetsReceived = 0
        public var bytesReceived = 0
        public var packetsLost = 0
        /// Interarrival jitter, seconds.
        public var jitter = 0.0
        public var authenticationFailures = 0
        public var replays = 0
        /// RTP packets that did not parse, or had a payload type not described.
        public var malformedPackets = 0
        /// Packets behind the playout point (audio) or for a finished frame (video).
        public var packetsDiscarded = 0
        public var framesDecoded = 0
        public var keyFramesDecoded = 0
        /// Audio samples (per channel) played out, concealment included.
        public var totalSamplesReceived = 0
        /// Audio samples made up by packet loss concealment.
        public var concealedSamples = 0
        public var concealmentEvents = 0
        public var insertedSamplesForDeceleration = 0
        public var removedSamplesForAcceleration = 0
        /// Frames recovered from the next packet's in-band FEC.
        public var fecRecoveredFrames = 0
        /// Total seconds emitted audio samples spent in the jitter buffer (W3C).
        public var jitterBufferDelay = 0.0
        /// Samples emitted by the jitter buffer (W3C).
        public var jitterBufferEmittedCount = 0
        /// Mean time an audio sample spent in the jitter buffer (jitterBufferDelay /
        /// jitterBufferEmittedCount), seconds.
        public var meanJitterBufferDelay = 0.0
        /// The jitter buffer's current target delay, seconds.
        public var jitterBufferTargetDelay = 0.0
        public var decodeErrors = 0
        public var pliSent = 0
        public var firSent = 0
        /// NACK packets sent (each may list several sequence numbers).
        public var nackSent = 0
        /// Video packets that arrived after being NACKed.
        public var packetsRecovered = 0
        public var rtcpReceived = 0
        public var endedByGoodbye = false
    }

    public struct Statistics: Sendable {
        public var streams: [StreamStatistics]
        /// How far video plays behind audio (positive: video late), seconds, once both
        /// streams' sender reports and playout have been seen.
        public var audioVideoOffset: Double?
        /// Extra delay lip sync gives audio and video, seconds.
        public var synchronizationDelays = (audio: 0.0, video: 0.0)
        /// Datagrams that are neither RTP nor RTCP.
        public var unknownDatagrams = 0
        /// RTCP that failed SRTCP or did not parse.
        public var malformedRTCP = 0
        /// RTP whose payload type or SSRC matches no described stream.
        public var unknownStreamPackets = 0
        /// Round trip to the sender, seconds (RRTR/DLRR), once measured.
        public var roundTripTime: Double?
    }

    private final class Stream {
        let description: StreamDescription
        let protection: SRTPContext?
        let rtpSocket: Int
        let rtcpSocket: Int
        var statistics: StreamStatistics
        var reception: RTPReceiveStatistics
        var jitter: AudioJitterBuffer?
        /// Playout time of the next audio frame; nil while the stream is idle.
        var nextPull: Duration?
        var lastArrival: Duration = .zero
        var vp8: VP8.Decoder?
        var video: VideoReceiveStream?
        var source: SocketAddress?
        /// Compact NTP time of the last SR and when it arrived, for LSR/DLSR.
        var lastSenderReport: (ntp: UInt32, arrival: Duration)?

        init(_ description: StreamDescription, rtpSocket: Int, rtcpSocket: Int) throws {
            self.description = description
            self.rtpSocket = rtpSocket
            self.rtcpSocket = rtcpSocket
            protection = try description.keying.map { (keying) throws(SRTPError) in
                try SRTPContext(keying: keying, direction: .inbound)
            }
            statistics = StreamStatistics(kind: description.kind)
            reception = RTPReceiveStatistics(clockRate: description.clockRate)
            switch description.kind {
            case .audio:
                var configuration = AudioJitterBuffer.Configuration()
                configuration.layout = description.layout
                jitter = try AudioJitterBuffer(configuration: configuration)
            case .video:
                vp8 = try VP8.Decoder()
                video = VideoReceiveStream()
            }
        }
    }

    public let sockets: [UDPSocket]
    /// The SSRC this side's RTCP (reports, PLI) carries.
    public let ssrc = UInt32.random(in: 1 ... .max)
    private let streams: [Stream]
    /// Transport-wide feedback for the sender's bandwidth estimate (one sequence space
    /// per sender socket, as the engine's sender uses).
    private var feedback: TransportFeedbackGenerator
    private var feedbackDestination: (socket: Int, address: SocketAddress)?
    private var reportInterval = RTCPInterval(sessionBandwidth: 1_000_000, weSent: false)
    private var random = SystemRandomNumberGenerator()
    /// Round trip to the sender, from DLRR answers to this side's RRTRs; nil until one arrives.
    public private(set) var roundTripTime: Duration?
    /// Transport-wide feedback packets sent.
    public private(set) var transportFeedbackSent = 0
    /// Lip sync between the first audio and the first video stream, from their SRs.
    private var lipSync = LipSync()
    /// Decoded pictures held back so video plays no earlier than its audio.
    private var heldFrames: [(frame: VideoFrame, release: Duration)] = []
    private var videoHold: Duration = .zero
    private var unknownDatagrams = 0
    private var malformedRTCP = 0
    private var unknownStreamPackets = 0

    /// Binds one socket per distinct port on `host`.
    public convenience init(streams descriptions: [StreamDescription], host: String) throws {
        var sockets: [UDPSocket] = []
        var byPort: [Int: Int] = [:]
        func socket(for port: Int) throws -> Int {
            if let index = byPort[port] { return index }
            sockets.append(try UDPSocket(bindTo: SocketAddress(host: host, port: port)))
            byPort[port] = sockets.count - 1
            return sockets.count - 1
        }
        var streams: [Stream] = []
        for description in descriptions {
            streams.append(try Stream(description, rtpSocket: try socket(for: description.port),
                                      rtcpSocket: try socket(for: description.rtcpPort)))
        }
        self.init(sockets: sockets, streams: streams)
    }

    /// Receives every stream on one socket the caller bound (bundled, RTCP muxed); the
    /// descriptions' ports are not used.
    public convenience init(streams descriptions: [StreamDescription], socket: UDPSocket) throws {
        self.init(sockets: [socket], streams: try descriptions.map { try Stream($0, rtpSocket: 0, rtcpSocket: 0) })
    }

    private init(sockets: [UDPSocket], streams: [Stream]) {
        self.sockets = sockets
        self.streams = streams
        feedback = TransportFeedbackGenerator(configuration: TransportFeedbackGenerator.Configuration(senderSSRC: ssrc))
    }

    /// When set, STUN binding requests whose USERNAME is this token are answered (the
    /// peer's connectivity check, which also measures its RTT); others are counted and dropped.
    public var connectivityToken: String?
    /// Sees every Opus packet the jitter buffer accepts and every VP8 frame that decodes,
    /// as received (for recordings), on the receive thread.
    public var encodedMedia: ((EncodedMedia) -> Void)?
    /// Polled each turn of the loop; true sends a PLI for every video stream (a recording
    /// starting mid-call needs a keyframe).
    public var keyframeWanted: (() -> Bool)?
    /// Connectivity checks answered and refused.
    public private(set) var connectivityChecks = (answered: 0, refused: 0)

    private func answerConnectivityCheck(_ datagram: UnsafeRawBufferPointer, socket: Int, from sender: SocketAddress) {
        guard let token = connectivityToken, let request = try? STUNMessage(parsing: datagram),
              request.type == .bindingRequest, request.username == token else {
            // Not a check of ours (or none expected): as good as an unknown datagram.
            connectivityChecks.refused += 1
            unknownDatagrams += 1
            return
        }
        let answer = STUNMessage(type: .bindingSuccess, transactionID: request.transactionID,
                                 attributes: [.xorMappedAddress(sender)]).serialized()
        if (try? answer.withUnsafeBytes({ try sockets[socket].send($0, to: sender) })) != nil {
            connectivityChecks.answered += 1
        }
    }

    /// The statistics so far.
    public var statistics: Statistics {
        Statistics(streams: streams.map { stream in
            var statistics = stream.statistics
            statistics.packetsReceived = stream.reception.packetsReceived
            statistics.bytesReceived = stream.reception.bytesReceived
            statistics.packetsLost = stream.reception.packetsLost
            statistics.jitter = stream.reception.jitter
            if let video = stream.video {
                statistics.packetsDiscarded = video.statistics.packetsDiscarded + video.statistics.latePackets
                    + video.statistics.duplicatePackets
                statistics.malformedPackets += video.statistics.malformedPackets + video.statistics.oversizedPackets
                statistics.packetsRecovered = video.statistics.packetsRecovered
            }
            if let jitter = stream.jitter {
                let audio = jitter.statistics
                statistics.packetsDiscarded = audio.packetsDiscarded
                statistics.malformedPackets += audio.packetsMalformed
                statistics.totalSamplesReceived = audio.totalSamplesReceived
                statistics.concealedSamples = audio.concealedSamples
                statistics.concealmentEvents = audio.concealmentEvents
                statistics.insertedSamplesForDeceleration = audio.insertedSamplesForDeceleration
                statistics.removedSamplesForAcceleration = audio.removedSamplesForAcceleration
                statistics.fecRecoveredFrames = audio.fecRecoveredFrames
                statistics.meanJitterBufferDelay = audio.meanPlayoutDelay
                statistics.jitterBufferDelay = audio.jitterBufferDelay
                statistics.jitterBufferEmittedCount = audio.jitterBufferEmittedCount
                statistics.jitterBufferTargetDelay = jitter.targetDelay / .seconds(1)
            }
            if let protection = stream.protection {
                statistics.authenticationFailures = protection.statistics.authenticationFailures
                statistics.replays = protection.statistics.replays + protection.statistics.tooOld
                // Too short or unparsable for SRTP: malformed as far as the stream is concerned.
                statistics.malformedPackets += protection.statistics.otherFailures
            }
            return statistics
        }, audioVideoOffset: lipSync.offset.map { $0 / .seconds(1) },
           synchronizationDelays: (lipSync.audioExtraDelay / .seconds(1), lipSync.videoExtraDelay / .seconds(1)),
           unknownDatagrams: unknownDatagrams, malformedRTCP: malformedRTCP, unknownStreamPackets: unknownStreamPackets,
           roundTripTime: roundTripTime.map { $0 / .seconds(1) })
    }

    /// Receives until `duration` passes, every stream has said BYE, or `stop()`.
    /// - Parameters:
    ///   - audio: gets decoded audio (interleaved Int16 at 48 kHz) in order, concealment included.
    ///   - video: gets each decoded picture.
    ///   - report: when given, gets the statistics once a second (`receive --stats`).
    public func run(duration: Duration?, stop: () -> Bool = { false },
                    audio: (UnsafeBufferPointer<Int16>) throws -> Void,
                    video: (VideoFrame) throws -> Void,
                    report: ((Duration, Statistics) -> Void)? = nil) throws -> Statistics {
        let clock = ContinuousClock()
        let start = clock.now
        var poller = SocketPoller(sockets: sockets)
        var buffer = [UInt8](repeating: 0, count: 65_536)
        var pcm = [Int16](repeating: 0, count: Opus.maxSamplesPerPacket * 2)
        var picture = VideoFrame(width: 2, height: 2)
        var nextReport = Duration.seconds(1)
        var nextSync = Duration.seconds(1)
        while !stop() {
            let elapsed = clock.now - start
            if let duration, elapsed >= duration { break }
            if elapsed >= nextReport {
                sendReceiverReports(now: elapsed)
                nextReport = elapsed + reportInterval.nextInterval(using: &random)
            }
            if elapsed >= nextSync {
                synchronize()
                report?(elapsed, statistics)
                nextSync = elapsed + .seconds(1)
            }
            while let first = heldFrames.first, first.release <= elapsed {
                heldFrames.removeFirst()
                try video(first.frame)
            }
            sendTransportFeedback(now: elapsed)
            if keyframeWanted?() == true { requestKeyframes() }
            try playAudio(now: elapsed, pcm: &pcm, sink: audio)
            for stream in streams where stream.video?.nextProcessTime().map({ $0 <= elapsed }) == true {
                try processVideo(stream, picture: &picture, now: elapsed, sink: video)
            }
            if streams.allSatisfy(\.statistics.endedByGoodbye) { break }
            // Wake for the next audio frame due, or in 50 ms at the latest.
            let nextDue = (streams.compactMap(\.nextPull) + streams.compactMap { $0.video?.nextProcessTime() }
                + heldFrames.prefix(1).map(\.release)).min()
            let nextFrame = nextDue.map { max(.zero, $0 - elapsed) } ?? .milliseconds(50)
            guard let index = try poller.wait(timeout: min(nextFrame, .milliseconds(50))) else { continue }
            // Drain the ready socket before polling again.
            while let (count, sender) = try buffer.withUnsafeMutableBytes({ try sockets[index].receiveNow(into: $0) }) {
                try buffer.withUnsafeMutableBytes { bytes in
                    let datagram = UnsafeMutableRawBufferPointer(rebasing: bytes[0..<count])
                    switch DatagramKind(UnsafeRawBufferPointer(datagram)) {
                    case .rtp:
                        try handleRTP(datagram, socket: index, from: sender, now: clock.now - start, pcm: &pcm,
                                      picture: &picture, audio: audio, video: video)
                    case .rtcp:
                        handleRTCP(datagram, socket: index, now: clock.now - start)
                    case .stun:
                        answerConnectivityCheck(UnsafeRawBufferPointer(datagram), socket: index, from: sender)
                    default:
                        unknownDatagrams += 1
                    }
                }
            }
        }
        try drainAudio(pcm: &pcm, sink: audio)
        for held in heldFrames { try video(held.frame) }
        heldFrames.removeAll()
        return statistics
    }

    private var firstAudio: Stream? { streams.first { $0.description.kind == .audio } }
    private var firstVideo: Stream? { streams.first { $0.description.kind == .video } }

    /// Moves lip sync one step: audio gets extra jitter-buffer delay when video lags,
    /// video is held back when audio lags.
    private func synchronize() {
        guard firstAudio != nil, firstVideo != nil else { return }
        let (audioDelay, videoDelay) = lipSync.update()
        firstAudio?.jitter?.synchronizationDelay = audioDelay
        videoHold = videoDelay
    }

    private func handleRTP(_ datagram: UnsafeMutableRawBufferPointer, socket: Int, from sender: SocketAddress, now: Duration,
                           pcm: inout [Int16], picture: inout VideoFrame,
                           audio: (UnsafeBufferPointer<Int16>) throws -> Void, video: (VideoFrame) throws -> Void) throws {
        // Payload type and SSRC are in the clear even under SRTP: demultiplex on them.
        let payloadType = datagram[1] & 0x7F
        let ssrc = datagram.count >= 12 ? UnsafeRawBufferPointer(datagram).uint32(at: 8) : 0
        guard let stream = streams.first(where: {
            $0.rtpSocket == socket && $0.description.payloadType == payloadType && ($0.description.ssrc ?? ssrc) == ssrc
        }) else {
            unknownStreamPackets += 1
            return
        }
        var length = datagram.count
        if let protection = stream.protection {
            do {
                length = try protection.unprotect(datagram, length: length)
            } catch {
                return  // counted by the SRTP context
            }
        }
        let packet: RTPPacketView
        do {
            packet = try RTPPacketView(UnsafeRawBufferPointer(rebasing: datagram[0..<length]))
        } catch {
            stream.statistics.malformedPackets += 1
            return
        }
        stream.statistics.ssrc = packet.ssrc
        stream.source = sender
        if let id = stream.description.transportSequenceExtensionID, let value = packet.extensionValue(id: id), value.count == 2 {
            feedback.packetReceived(transportSequenceNumber: value.uint16(at: 0), now: now)
            feedbackDestination = (stream.rtpSocket, sender)
        }
        stream.reception.record(sequenceNumber: packet.sequenceNumber, timestamp: packet.timestamp,
                                payloadBytes: packet.payloadRange.count, arrival: now)
        switch stream.description.kind {
        case .audio: receiveAudio(packet, stream: stream, now: now)
        case .video: try receiveVideo(packet, stream: stream, picture: &picture, now: now, sink: video)
        }
    }

    private func receiveAudio(_ packet: RTPPacketView, stream: Stream, now: Duration) {
        guard let jitter = stream.jitter else { return }
        let outcome = jitter.insert(sequenceNumber: packet.sequenceNumber, timestamp: packet.timestamp,
                                    payload: packet.payload, arrival: now)
        guard outcome == .accepted || outcome == .restarted else { return }
        encodedMedia?(EncodedMedia(kind: .audio, data: packet.payload, rtpTimestamp: packet.timestamp, time: .now))
        stream.lastArrival = now
        // The playout clock starts (or restarts after an idle spell) with the first packet.
        if stream.nextPull == nil { stream.nextPull = now }
    }

    /// Plays every audio frame due by `now` from each stream's jitter buffer. A stream
    /// whose buffer ran dry with no packet for three frames goes idle (no output) until
    /// packets come again, so a paused sender does not fill recordings with concealment.
    private func playAudio(now: Duration, pcm: inout [Int16], sink: (UnsafeBufferPointer<Int16>) throws -> Void) throws {
        for stream in streams {
            guard let jitter = stream.jitter else { continue }
            let frame = jitter.configuration.frameDuration.samplesPerChannel()
            let period = AudioFrame.duration(samplesPerChannel: frame)
            while let due = stream.nextPull, due <= now {
                if jitter.packetsHeld == 0 && now - stream.lastArrival > period * 3 {
                    stream.nextPull = nil
                    break
                }
                if stream === firstAudio, let timestamp = jitter.playoutTimestamp {
                    lipSync.audioPlayed(timestamp: timestamp, localTime: due / .seconds(1))
                }
                let result = pcm.withUnsafeMutableBufferPointer { jitter.pull(now: due, into: $0) }
                try pcm.withUnsafeBufferPointer {
                    try sink(UnsafeBufferPointer(rebasing: $0[0..<(result.samplesPerChannel * stream.description.layout.count)]))
                }
                stream.nextPull = due + period
            }
        }
    }

    /// Plays out what the jitter buffers still hold, so the end of a stream is not lost.
    private func drainAudio(pcm: inout [Int16], sink: (UnsafeBufferPointer<Int16>) throws -> Void) throws {
        for stream in streams {
            guard let jitter = stream.jitter, var due = stream.nextPull else { continue }
            let frame = jitter.configuration.frameDuration.samplesPerChannel()
            let period = AudioFrame.duration(samplesPerChannel: frame)
            var frames = 0
            while jitter.packetsHeld > 0 && frames < 500 {
                let result = pcm.withUnsafeMutableBufferPointer { jitter.pull(now: due, into: $0) }
                try pcm.withUnsafeBufferPointer {
                    try sink(UnsafeBufferPointer(rebasing: $0[0..<(result.samplesPerChannel * stream.description.layout.count)]))
                }
                due += period
                frames += 1
            }
            stream.nextPull = nil
        }
    }

    private func receiveVideo(_ packet: RTPPacketView, stream: Stream, picture: inout VideoFrame, now: Duration,
                              sink: (VideoFrame) throws -> Void) throws {
        _ = stream.video?.insert(packet, arrival: now)
        try processVideo(stream, picture: &picture, now: now, sink: sink)
    }

    /// Runs a video stream's recovery logic: decodes the frames it releases (in order,
    /// references complete) and sends the NACK, PLI and FIR it asks for.
    private func processVideo(_ stream: Stream, picture: inout VideoFrame, now: Duration,
                              sink: (VideoFrame) throws -> Void) throws {
        guard let decoder = stream.vp8, let actions = stream.video?.process(now: now) else { return }
        for action in actions {
            switch action {
            case .decode(let frame):
                do {
                    let shown = try frame.data.withUnsafeBufferPointer {
                        try decoder.decode(UnsafeRawBufferPointer($0), timestamp: .zero, into: &picture)
                    }
                    if let encodedMedia {
                        frame.data.withUnsafeBytes {
                            encodedMedia(EncodedMedia(kind: .video, data: $0, rtpTimestamp: frame.timestamp, isKeyframe: frame.isKeyframe,
                                                      width: picture.width, height: picture.height, time: .now))
                        }
                    }
                    if shown {
                        stream.statistics.framesDecoded += 1
                        if frame.isKeyframe { stream.statistics.keyFramesDecoded += 1 }
                        if stream === firstVideo {
                            lipSync.videoShown(timestamp: frame.timestamp, localTime: (now + videoHold) / .seconds(1))
                        }
                        if videoHold > .zero {
                            heldFrames.append((picture, now + videoHold))
                        } else {
                            try sink(picture)
                        }
                    }
                } catch is CodecError {
                    stream.statistics.decodeErrors += 1
                    stream.video?.decoderReportedCorruption(now: now)
                }
            case .sendNACK(let sequenceNumbers):
                guard let media = stream.statistics.ssrc else { continue }
                if sendFeedback(.genericNACK(GenericNACK(senderSSRC: ssrc, mediaSSRC: media, lostSequenceNumbers: sequenceNumbers)),
                                for: stream) {
                    stream.statistics.nackSent += 1
                }
            case .sendPLI:
                guard let media = stream.statistics.ssrc else { continue }
                if sendFeedback(.pictureLossIndication(PictureLossIndication(senderSSRC: ssrc, mediaSSRC: media)), for: stream) {
                    stream.statistics.pliSent += 1
                }
            case .sendFIR(let sequenceNumber):
                guard let media = stream.statistics.ssrc else { continue }
                let fir = FullIntraRequest(senderSSRC: ssrc, entries: [FullIntraRequest.Entry(ssrc: media, sequenceNumber: sequenceNumber)])
                if sendFeedback(.fullIntraRequest(fir), for: stream) { stream.statistics.firSent += 1 }
            }
        }
    }

    private func requestKeyframes() {
        for stream in streams where stream.description.kind == .video {
            guard let media = stream.statistics.ssrc else { continue }
            if sendFeedback(.pictureLossIndication(PictureLossIndication(senderSSRC: ssrc, mediaSSRC: media)), for: stream) {
                stream.statistics.pliSent += 1
            }
        }
    }

    /// Sends plain RTCP feedback to the sender's RTP address (symmetric RTP). Under SDES
    /// this side holds no key of its own; senders built on this engine read plain RTCP.
    private func sendFeedback(_ packet: RTCPPacket, for stream: Stream) -> Bool {
        guard let source = stream.source else { return false }
        let bytes = RTCPPacket.serializedCompound([packet])
        do {
            try bytes.withUnsafeBytes { try sockets[stream.rtpSocket].send($0, to: source) }
            return true
        } catch {
            return false  // feedback is best effort; the stream asks again
        }
    }

    /// Sends the transport-wide feedback that is due, in plain RTCP, to the sender.
    private func sendTransportFeedback(now: Duration) {
        guard let destination = feedbackDestination else { return }
        for packet in feedback.feedback(now: now) {
            let bytes = RTCPPacket.serializedCompound([.transportFeedback(packet)])
            if (try? bytes.withUnsafeBytes({ try sockets[destination.socket].send($0, to: destination.address) })) != nil {
                transportFeedbackSent += 1
            }
        }
    }

    /// Sends each stream's reception report, in plain RTCP, to where its RTP comes from.
    private func sendReceiverReports(now: Duration) {
        for stream in streams {
            guard let ssrc = stream.statistics.ssrc, let source = stream.source else { continue }
            var delay: UInt32 = 0
            if let last = stream.lastSenderReport {
                delay = UInt32(clamping: Int64((now - last.arrival) / .seconds(1) * 65_536))
            }
            let block = stream.reception.receptionReport(ssrc: ssrc, lastSenderReport: stream.lastSenderReport?.ntp ?? 0,
                                                         delaySinceLastSenderReport: delay)
            // RRTR (RFC 3611 4.4): the sender answers with DLRR, which gives this side,
            // which sends no media and so gets no report blocks, its round-trip time.
            let reference = ExtendedReport(senderSSRC: self.ssrc, blocks: [.receiverReferenceTime(ntp: NTPTime.now())])
            let report = RTCPPacket.serializedCompound([.receiverReport(ReceiverReport(ssrc: self.ssrc, reports: [block])),
                                                        .extendedReport(reference)])
            try? report.withUnsafeBytes { try sockets[stream.rtpSocket].send($0, to: source) }
            reportInterval.reportSent(size: report.count)
        }
    }

    /// RTT from a DLRR answering one of this side's RRTRs: now - LRR - DLRR (RFC 3611 4.5),
    /// given to the video streams' NACK and keyframe timing.
    private func measureRoundTrip(_ report: ExtendedReport) {
        let now = NTPTime.compact(NTPTime.now())
        for case .dlrr(let entries) in report.blocks {
            for entry in entries where entry.ssrc == ssrc && entry.lastReceiverReport != 0 {
                let units = now &- entry.lastReceiverReport &- entry.delaySinceLastReceiverReport
                let seconds = Double(units) / 65_536
                guard seconds >= 0, seconds < 10 else { continue }
                let rtt = Duration.nanoseconds(Int64(seconds * 1e9))
                roundTripTime = rtt
                for stream in streams { stream.video?.roundTripTime = max(rtt, .milliseconds(1)) }
            }
        }
    }

    private func handleRTCP(_ datagram: UnsafeMutableRawBufferPointer, socket: Int, now: Duration) {
        let candidates = streams.filter { $0.rtcpSocket == socket }
        for stream in candidates {
            var length = datagram.count
            if let protection = stream.protection {
                // Each candidate key is tried on a copy, so a failed attempt leaves the bytes intact.
                var copy = Array(datagram)
                guard let unprotected = try? copy.withUnsafeMutableBytes({ try protection.unprotectRTCP($0, length: length) }) else {
                    continue
                }
                length = unprotected
                copy.withUnsafeBytes { datagram.copyMemory(from: UnsafeRawBufferPointer(rebasing: $0[0..<length])) }
            }
            guard let packets = try? RTCPPacket.parseCompound(UnsafeRawBufferPointer(rebasing: datagram[0..<length])) else {
                continue
            }
            stream.statistics.rtcpReceived += 1
            for packet in packets {
                switch packet {
                case .goodbye(let bye):
                    for ended in streams where ended.statistics.ssrc.map(bye.sources.contains) == true {
                        ended.statistics.endedByGoodbye = true
                    }
                case .senderReport(let report):
                    for reported in streams where reported.statistics.ssrc == report.ssrc {
                        reported.lastSenderReport = (NTPTime.compact(report.ntpTimestamp), now)
                        let mapping = SenderClockMapping(ntp: report.ntpTimestamp, rtpTimestamp: report.rtpTimestamp,
                                                         clockRate: reported.description.clockRate)
                        if reported === firstAudio { lipSync.audioSenderReport(mapping) }
                        if reported === firstVideo { lipSync.videoSenderReport(mapping) }
                    }
                case .extendedReport(let report):
                    measureRoundTrip(report)
                default: break
                }
            }
            return
        }
        malformedRTCP += 1
    }
}
