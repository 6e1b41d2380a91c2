/// The media of one peer transport, sans-I/O: any number of local send streams and remote
/// receive streams over one path (bundle and rtcp-mux), SRTP and SRTCP in both
/// directions, and everything that keeps media up: retransmission history and NACK,
/// keyframe requests, jitter buffers and frame assembly, RTCP reports and RTT, lip sync,
/// transport-wide feedback and the bandwidth estimate, connectivity and consent checks.
///
/// It owns no socket, thread or clock. The caller feeds it datagrams
/// (`handleDatagram`), encoded media (`sendAudio`, `sendVideo`) and the time
/// (`handleTimeout` at `nextTimeout`), and carries out what it asks: datagrams to send
/// (`pollTransmit`) and events (`pollEvent`). The engine's peer transport drives it over
/// real sockets; the simulations drive the same code over a virtual network.
///
/// Security: every RTCP packet it sends is SRTCP when it holds a key, and RTCP that does not
/// authenticate (plain, forged, replayed) is counted and ignored. Once a path is selected
/// and pinned, RTP and RTCP from any other address are counted and dropped. Per media
/// packet it allocates nothing once warm (RTCP is parsed into values). Not thread-safe:
/// one owner at a time.
public final class MediaCore {
    /// The transport's settings.
    public struct Configuration: Sendable {
        /// The key this side protects everything it sends with (RTP and RTCP); nil sends plain.
        public var outboundKeying: SRTPKeyingMaterial?
        /// The key the peer protects with (its RTP and RTCP); nil receives plain.
        public var inboundKeying: SRTPKeyingMaterial?
        /// The SSRC of this side's receiver reports and feedback.
        public var rtcpSSRC = UInt32.random(in: 1 ... .max)
        /// RTCP CNAME.
        public var cname = "mediaengine"
        /// Header extension IDs stamped and read.
        public var extensions = RTPExtensionMap.standard
        /// Sender reports follow RFC 3550's 5 s minimum (SDP profile RTP/SAVP; ffmpeg also
        /// re-derives its timing from every SR), from this session bandwidth.
        public var sendBandwidth = 1_000_000
        /// Receiver reports (with RRTR, for this side's RTT) use the reduced minimum.
        public var receiveBandwidth = 1_000_000
        /// Bounds of the bandwidth estimate; the start is the sum of the send streams' rates.
        public var bandwidth = SendSideBandwidthEstimator.Configuration()
        /// The RTT assumed until one is measured.
        public var initialRoundTripTime: Duration = .milliseconds(100)
        /// Consent freshness on the selected path (when the peer's token is known).
        public var consent = ConsentFreshness.Configuration()
        /// SRTP replay window of the inbound contexts.
        public var replayWindow = 1_024
        /// Outgoing datagrams queued at most.
        public var transmitCapacity = 512
        /// NTP time at `now == 0`, for sender reports and round trips.
        public var ntpEpoch = NTPTime.now()
        /// Seeds the core's random choices (RTCP intervals, numbering); the same seed gives
        /// the same run in a simulation.
        public var seed = UInt64.random(in: 0 ... .max)
        /// ICE-lite, for a server's end of a leg: this side checks nothing; each binding
        /// request signed for `localICE` is answered and selects and pins its source as the path.
        public var learnsPathFromChecks = false

        public init() {}
    }

    /// What happened that the caller acts on.
    public enum Event {
        /// ICE selected a pair: its remote address is the path (pinned); the round trip is
        /// its check's.
        case connected(pair: ICECandidatePair, roundTripTime: Duration)
        /// ICE selected a better pair later (renomination): media moves to it.
        case pathChanged(ICECandidatePair)
        /// No pair worked in time (why).
        case connectFailed(String)
        /// Gathering found a server-reflexive candidate of this side (through `server`):
        /// tell the peer (trickle).
        case localCandidate(ICECandidate, server: SocketAddress)
        /// Gathering ended: every STUN server answered or gave up, and the TURN allocation
        /// succeeded or failed.
        case gatheringComplete
        /// The TURN allocation failed or was lost (why): no relayed candidate.
        case relayFailed(String)
        /// The peer stopped answering consent checks (RFC 7675): it is gone.
        case consentExpired
        /// A video frame is complete and its references are decoded: decode it, then call
        /// `videoDecoded` (or `decoderReportedCorruption`).
        case videoFrame(ReceiveStreamID, VideoReceiveStream.Frame)
        /// The stream's sender said BYE (authenticated).
        case goodbye(ReceiveStreamID)
        /// A stream announced without an SSRC was bound to one by its MID.
        case streamBound(ReceiveStreamID, ssrc: UInt32)
        /// The DTLS handshake agreed keys with this profile: media flows from now on.
        case dtlsConnected(SRTPProfile)
        /// The DTLS handshake failed (a certificate matching no fingerprint, no common
        /// profile, no answer within its deadline): no media flows on this transport.
        case dtlsFailed(DTLSError)
        /// The peer closed the DTLS association (close_notify): it has left.
        case dtlsClosed
    }

    /// The bandwidth estimate to follow, once feedback changed it.
    public struct BandwidthUpdate: Sendable, Hashable {
        /// Total bitrate the path carries, b/s.
        public var targetBitrate: Int
        /// The loss Opus should plan its in-band FEC for, 0...100.
        public var opusExpectedLossPercent: Int
    }

    public let configuration: Configuration
    /// The peer's address once a path is selected.
    public var path: SocketAddress? { paths.path }
    /// Whether packets from other addresses are dropped.
    public var isPathPinned: Bool { paths.isPinned }
    /// This side's ICE credentials: binding requests signed for them are answered; nil
    /// answers none.
    public var localICE: ICECredentials? {
        get { paths.localICE }
        set { paths.localICE = newValue }
    }
    /// The key the peer protects with, for streams added without one of their own.
    public var inboundKeying: SRTPKeyingMaterial? { receive.inboundKeying }
    /// The round-trip estimate in use.
    public internal(set) var roundTripTime: Duration
    /// When the peer last proved itself: an authenticated RTP or RTCP packet, or a check
    /// signed for this side's credentials.
    public var lastAuthenticatedArrival: Duration? {
        switch (receive.lastAuthenticatedArrival, lastAuthenticatedControl) {
        case (let media?, let control?): max(media, control)
        case (let media, let control): media ?? control
        }
    }
    /// When authenticated RTCP or a signed check last came.
    var lastAuthenticatedControl: Duration?
    /// This side's key once DTLS agreed it: streams added later protect with it.
    var dtlsLocalKeying: SRTPKeyingMaterial?
    /// The core's own counters (what the pipelines and the path count is merged in
    /// `transportStatistics`).
    var counters = TransportStatistics()
    var random: SeededRandom
    var nextStreamID = 0

    /// Datagrams and events, as the parts make them.
    let output: CoreOutput
    /// ICE, TURN, consent: everything about reaching the peer.
    var paths: PathController
    /// What this side sends.
    @exclusivity(unchecked) var send: SendPipeline
    /// What this side receives.
    @exclusivity(unchecked) var receive: ReceivePipeline

    /// Sees every Opus packet a jitter buffer accepts (stream, payload, RTP timestamp), as
    /// received: recordings tap here.
    public var acceptedAudio: ((ReceiveStreamID, UnsafeRawBufferPointer, UInt32) -> Void)? {
        get { receive.acceptedAudio }
        set { receive.acceptedAudio = newValue }
    }

    /// Creates a core with no streams.
    /// - Throws: `SRTPError` when a key is refused.
    public init(configuration: Configuration) throws(SRTPError) {
        self.configuration = configuration
        random = SeededRandom(seed: configuration.seed)
        paths = PathController(consent: configuration.consent, learnsFromChecks: configuration.learnsPathFromChecks,
                               seed: configuration.seed)
        roundTripTime = configuration.initialRoundTripTime
        output = CoreOutput(transmitCapacity: configuration.transmitCapacity)
        if let keying = configuration.outboundKeying { _ = try output.key(for: keying) }
        send = SendPipeline(configuration: configuration, output: output)
        receive = try ReceivePipeline(configuration: configuration, output: output)
    }

    /// Sets the key the peer protects with (a call learns it from signaling after the core
    /// exists); streams added from now on use it.
    /// - Throws: `MediaCoreError` when libsrtp refuses it.
    public func setInboundKeying(_ keying: SRTPKeyingMaterial) throws(MediaCoreError) {
        do {
            try receive.setInboundKeying(keying)
        } catch {
            throw MediaCoreError(.srtp, "inbound key: \(error.message)")
        }
    }

    /// Where media goes: the path, once there is one and (with DTLS) its keys are agreed.
    /// Until then media is not sent (`packetsWithoutPath`), so nothing leaves unprotected.
    var mediaPath: SocketAddress? { paths.awaitsKeys ? nil : paths.path }

    /// The path as the pipelines need it.
    var selectedPath: SelectedPath { SelectedPath(address: mediaPath, isPinned: paths.isPinned) }

    // MARK: Streams

    /// Adds a stream this side sends; its packets go out from the next `sendAudio` or
    /// `sendVideo` on.
    /// - Throws: `MediaCoreError` when the SSRC is already one of this side's streams, or
    ///   SRTP cannot start.
    public func addSendStream(_ stream: SendStreamConfiguration) throws(MediaCoreError) -> SendStreamID {
        let key: Int?
        do {
            key = try (dtlsLocalKeying ?? configuration.outboundKeying).map { (keying) throws(SRTPError) in try output.key(for: keying) }
        } catch {
            throw MediaCoreError(.srtp, "send stream \(stream.ssrc): \(error.message)")
        }
        let id = SendStreamID(value: nextStreamID)
        try send.add(stream, id: id, key: key, random: &random)
        nextStreamID += 1
        return id
    }

    /// Removes a send stream: a BYE for its SSRC goes out (when it sent anything) and
    /// feedback about it is ignored from now on.
    public func removeSendStream(_ id: SendStreamID, now: Duration) {
        send.remove(id, now: now, path: mediaPath)
    }

    /// Adds a stream the peer sends.
    /// - Throws: `MediaCoreError` when its SSRC or MID is already taken by another receive
    ///   stream, or its key or jitter buffer cannot be set up.
    public func addReceiveStream(_ stream: ReceiveStreamConfiguration) throws(MediaCoreError) -> ReceiveStreamID {
        let id = ReceiveStreamID(value: nextStreamID)
        try receive.add(stream, id: id, feedbackKeying: dtlsLocalKeying ?? configuration.outboundKeying)
        nextStreamID += 1
        return id
    }

    /// Removes a receive stream: its packets are counted as unknown from now on.
    public func removeReceiveStream(_ id: ReceiveStreamID) {
        receive.remove(id)
    }

    /// The IDs of the streams, in the order they were added.
    public var sendStreamIDs: [SendStreamID] { send.streams.map(\.id) }
    public var receiveStreamIDs: [ReceiveStreamID] { receive.streams.map(\.id) }

    /// The configuration a receive stream was added with.
    public func configuration(of id: ReceiveStreamID) -> ReceiveStreamConfiguration? { receive.stream(id)?.configuration }

    // MARK: Output

    /// The next datagram to send, or nil; its bytes stay valid until the next call into the core.
    public func pollTransmit() -> Transmit? {
        guard var transmit = output.transmits.dequeue() else { return nil }
        if paths.hasRelay { transmit = paths.relayed(transmit) }
        counters.datagramsSent += 1
        counters.bytesSent += transmit.bytes.count
        return transmit
    }

    /// The next event, or nil.
    public func pollEvent() -> Event? { output.nextEvent() }

    /// When `handleTimeout` (or `playAudio`) next has work, or nil when nothing is scheduled.
    public var nextTimeout: Duration? {
        func earlier(_ first: Duration?, _ second: Duration?) -> Duration? {
            guard let first else { return second }
            guard let second else { return first }
            return min(first, second)
        }
        return earlier(earlier(send.nextSenderReport, paths.nextDeadline), receive.nextTimeout)
    }

    /// Runs everything due at `now`: connectivity and consent checks, reports,
    /// transport-wide feedback, video deadlines, NACK and keyframe requests, lip sync.
    /// (Audio playout is `playAudio`.)
    public func handleTimeout(now: Duration) {
        runPathChecks(now: now)
        send.handleTimeout(now: now, path: mediaPath, random: &random)
        receive.handleTimeout(now: now, path: selectedPath, random: &random)
    }

    /// Ends every send stream: BYE for each that sent anything.
    public func close(now: Duration) {
        for stream in send.streams { close(only: stream.id, now: now) }
    }

    /// Ends one send stream (its source ended): a BYE for it, if it sent anything; its
    /// figures stay readable, nothing more is sent on it.
    public func close(only id: SendStreamID, now: Duration) {
        send.close(id, now: now, path: mediaPath)
    }

    // MARK: Statistics

    /// The transport's counters.
    public var transportStatistics: TransportStatistics {
        var statistics = counters
        statistics.add(receive.counters)
        statistics.add(send.counters)
        statistics.transmitOverflows = output.transmits.overflows
        statistics.rtcpSent = output.rtcpSent
        let path = paths.counters
        statistics.stunAnswered += path.stunAnswered
        statistics.stunRefused += path.stunRefused
        statistics.unknownDatagrams += path.unknownDatagrams
        statistics.consentRequestsSent += path.consentRequestsSent
        statistics.consentAnswersReceived += path.consentAnswersReceived
        statistics.dtlsFromStrangers += path.dtlsFromStrangers
        if let dtls = paths.dtls {
            statistics.dtlsDatagramsReceived += dtls.statistics.datagramsReceived
            statistics.dtlsMalformed += dtls.statistics.malformedDatagrams
        }
        return statistics
    }

    /// The bandwidth estimator, for its figures.
    public var bandwidthEstimator: SendSideBandwidthEstimator { send.estimator }

    /// Raises the bandwidth estimate to what a probe showed the link carries
    /// (`SendSideBandwidthEstimator.applyProbeResult`).
    public func applyProbeResult(_ bitrate: Int, now: Duration) { send.applyProbeResult(bitrate, now: now) }

    /// The latest estimate the encoders should follow, when it changed since the last call
    /// (and feedback has arrived: peers that send none get the configured rates).
    public func takeBandwidthUpdate() -> BandwidthUpdate? { send.takeBandwidthUpdate() }

    /// Sets the bounds of the bandwidth estimate (the sum of what the encoders may use).
    public func setBandwidthLimits(start: Int? = nil, minimum: Int, maximum: Int) {
        send.setBandwidthLimits(start: start, minimum: minimum, maximum: maximum)
    }

    /// A send stream's counters.
    public func statistics(of id: SendStreamID) -> OutboundRTPStreamStatistics? { send.statistics(of: id) }

    /// A receive stream's counters.
    public func statistics(of id: ReceiveStreamID) -> InboundRTPStreamStatistics? { receive.statistics(of: id) }

    /// A video receive stream's recovery state, for its detailed counters.
    public func videoState(of id: ReceiveStreamID) -> VideoReceiveStream? { receive.stream(id)?.video }

    /// An audio receive stream's jitter buffer, for its detailed figures.
    public func jitterBuffer(of id: ReceiveStreamID) -> AudioJitterBuffer? { receive.stream(id)?.jitter }

    /// A video send stream's feedback responder, for its detailed counters.
    public func feedbackResponder(of id: SendStreamID) -> VideoFeedbackResponder? { send.stream(id)?.responder }
}

/// A packet of a forwarding receive stream, authenticated and decrypted in place.
public struct ForwardedPacket {
    public var stream: ReceiveStreamID
    public var packet: RTPPacketView
}

/// Why the core refused a stream or a setting.
public struct MediaCoreError: CodedError {
    public typealias Code = ErrorCode<MediaCoreError>

    public let code: Code
    public let message: String

    public init(_ code: Code, _ message: String) {
        self.code = code
        self.message = message
    }
}

extension ErrorCode where Domain == MediaCoreError {
    /// The SSRC (or MID) is already taken.
    public static var ssrcCollision: Self { Self("SSRC collision") }
    /// The key was refused.
    public static var srtp: Self { Self("SRTP") }
    /// A stream's settings are invalid.
    public static var configuration: Self { Self("configuration") }
}
