/// Receives (S)RTP audio and video described by the caller (usually from an SDP file),
/// decodes it and hands PCM and pictures to sinks. A one-way session over the engine's
/// media core: Opus goes through the adaptive jitter buffer (FEC, concealment, delay
/// convergence) on a playout clock, VP8 through frame assembly with NACK and PLI/FIR;
/// transport-wide feedback and receiver reports go back at the RFC 3550 interval, and
/// audio and video play in sync from the senders' SR mappings.
///
/// Feedback is SRTCP under the stream's SDP key (RFC 3711 allows one master key for
/// several SSRCs; this side's RTCP SSRC is its own), and RTCP that does not authenticate
/// is counted and ignored. Every bad datagram is counted and dropped. Runs on the calling
/// thread; allocates nothing per packet once warm, except for parsed RTCP.
public final class MediaReceiver {
    /// One stream to receive, as an SDP media section describes it.
    public struct StreamDescription: Sendable {
        public typealias Kind = MediaKind
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
    public typealias StreamStatistics = InboundRTPStreamStatistics

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
        /// The transport's own counters.
        public var transport = TransportStatistics()

        public init(streams: [StreamStatistics], audioVideoOffset: Double? = nil, synchronizationDelays: (audio: Double, video: Double) = (0, 0),
                    unknownDatagrams: Int = 0, malformedRTCP: Int = 0, unknownStreamPackets: Int = 0, roundTripTime: Double? = nil,
                    transport: TransportStatistics = TransportStatistics()) {
            self.streams = streams
            self.audioVideoOffset = audioVideoOffset
            self.synchronizationDelays = synchronizationDelays
            self.unknownDatagrams = unknownDatagrams
            self.malformedRTCP = malformedRTCP
            self.unknownStreamPackets = unknownStreamPackets
            self.roundTripTime = roundTripTime
            self.transport = transport
        }

        /// What `core` received so far on `streams` (all of its streams when nil), with the
        /// first participant's lip sync.
        init(_ core: MediaCore, streams: [ReceiveStreamID]? = nil) {
            let transport = core.transportStatistics
            let (audioDelay, videoDelay) = core.synchronizationDelays()
            self.init(streams: (streams ?? core.receiveStreamIDs).compactMap { core.statistics(of: $0) },
                      audioVideoOffset: core.audioVideoOffset().map { $0 / .seconds(1) },
                      synchronizationDelays: (audioDelay / .seconds(1), videoDelay / .seconds(1)),
                      unknownDatagrams: transport.unknownDatagrams,
                      malformedRTCP: transport.malformedRTCP + transport.rtcpAuthenticationFailures + transport.rtcpReplays,
                      unknownStreamPackets: transport.unknownStreamPackets + transport.ssrcCollisions,
                      roundTripTime: transport.roundTripTime, transport: transport)
        }
    }

    public let sockets: [UDPSocket]
    /// The SSRC this side's RTCP (reports, PLI) carries.
    public let ssrc: UInt32
    private let transport: PeerTransport
    private let streamIDs: [ReceiveStreamID]

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
        var placed: [(StreamDescription, socket: Int?)] = []
        for description in descriptions {
            let rtp = try socket(for: description.port)
            _ = try socket(for: description.rtcpPort)
            placed.append((description, rtp))
        }
        // With several sockets, each stream's RTP comes on its own port.
        try self.init(sockets: sockets, streams: sockets.count > 1 ? placed : placed.map { ($0.0, nil) })
    }

    /// Receives every stream on one socket the caller bound (bundled, RTCP muxed); the
    /// descriptions' ports are not used.
    public convenience init(streams descriptions: [StreamDescription], socket: UDPSocket) throws {
        try self.init(sockets: [socket], streams: descriptions.map { ($0, nil) })
    }

    private init(sockets: [UDPSocket], streams: [(StreamDescription, socket: Int?)]) throws {
        // Only the extensions the SDP maps are read: feedback goes only to senders that asked.
        var configuration = MediaCore.Configuration()
        configuration.extensions = RTPExtensionMap(ids: [RTPExtensionMap.audioLevelURI: 1])
        for (description, _) in streams {
            if let id = description.transportSequenceExtensionID {
                configuration.extensions.set(RTPExtensionMap.transportSequenceNumberURI, id: id)
            }
        }
        let core = try MediaCore(configuration: configuration)
        var ids: [ReceiveStreamID] = []
        for (description, socket) in streams {
            var stream = ReceiveStreamConfiguration(kind: description.kind, payloadType: description.payloadType,
                                                    clockRate: description.clockRate, ssrc: description.ssrc)
            stream.layout = description.layout
            stream.keying = description.keying
            stream.socket = socket
            ids.append(try core.addReceiveStream(stream))
        }
        self.sockets = sockets
        ssrc = core.configuration.rtcpSSRC
        streamIDs = ids
        transport = PeerTransport(core: core, sockets: sockets)
    }

    /// Sees every Opus packet the jitter buffer accepts and every VP8 frame that decodes,
    /// as received (for recordings), on the receive thread.
    public var encodedMedia: ((EncodedMedia) -> Void)?
    /// Polled each turn of the loop; true sends a PLI for every video stream (a recording
    /// starting mid-call needs a keyframe).
    public var keyframeWanted: (() -> Bool)?

    /// Round trip to the sender, from DLRR answers to this side's RRTRs; nil until one arrives.
    public var roundTripTime: Duration? {
        transport.withCore { core, _ in core.transportStatistics.roundTripTime.map { .nanoseconds(Int64($0 * 1e9)) } }
    }

    /// Transport-wide feedback packets sent.
    public var transportFeedbackSent: Int { transport.withCore { core, _ in core.transportStatistics.transportFeedbackSent } }

    /// The statistics so far.
    public var statistics: Statistics { transport.withCore { core, _ in statistics(of: core) } }

    private func statistics(of core: MediaCore) -> Statistics { Statistics(core, streams: streamIDs) }

    /// Receives until `duration` passes, every stream has said BYE, or `stop()`.
    /// - Parameters:
    ///   - audio: gets decoded audio (interleaved Int16 at 48 kHz) in order, concealment included.
    ///   - video: gets each decoded picture.
    ///   - report: when given, gets the statistics once a second (`receive --stats`).
    public func run(duration: Duration?, stop: () -> Bool = { false },
                    audio: (UnsafeBufferPointer<Int16>) throws -> Void,
                    video: (VideoFrame) throws -> Void,
                    report: ((Duration, Statistics) -> Void)? = nil) throws -> Statistics {
        var pcm = [Int16](repeating: 0, count: Opus.maxSamplesPerPacket * 2)
        let decoding = VideoDecoding()
        var nextReport = Duration.seconds(1)
        let started = transport.now
        let encodedMedia = self.encodedMedia
        transport.withCore { core, _ in
            core.acceptedAudio = encodedMedia.map { tap in
                { _, payload, timestamp in tap(EncodedMedia(kind: .audio, data: payload, rtpTimestamp: timestamp, time: .now)) }
            }
        }
        try transport.run(stop: { stop() || duration.map { transport.now - started >= $0 } == true },
                          wake: { decoding.nextRelease }, locked: { core, now in
            if now - started >= nextReport {
                report?(now - started, statistics(of: core))
                nextReport = now - started + .seconds(1)
            }
            if keyframeWanted?() == true { streamIDs.forEach(core.requestKeyframe) }
            try decoding.handleEvents(of: core, now: now, video: { _, frame in try video(frame) },
                                      encodedMedia: encodedMedia.map { tap in { _, media in tap(media) } })
            try pcm.withUnsafeMutableBufferPointer { scratch in
                try core.playAudio(now: now, scratch: scratch, block: { _, block in try audio(block) }, tickEnded: { _ in })
            }
            return !streamIDs.allSatisfy { core.statistics(of: $0)?.endedByGoodbye == true }
        })
        return try transport.withCore { core, _ in
            try pcm.withUnsafeMutableBufferPointer { scratch in
                try core.drainAudio(scratch: scratch) { _, block in try audio(block) }
            }
            try decoding.releaseAll { _, frame in try video(frame) }
            core.acceptedAudio = nil
            return statistics(of: core)
        }
    }
}
