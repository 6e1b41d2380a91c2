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
    public private(set) var inboundKeying: SRTPKeyingMaterial?
    /// The round-trip estimate in use.
    public internal(set) var roundTripTime: Duration
    /// When the peer last proved itself: an authenticated RTP or RTCP packet, or a check
    /// signed for this side's credentials.
    public internal(set) var lastAuthenticatedArrival: Duration?
    var counters = TransportStatistics()
    var random: SeededRandom

    var sendStreams: [SendStreamState] = []
    var receiveStreams: [ReceiveStreamState] = []
    var receiveBySSRC: [UInt32: ReceiveStreamState] = [:]
    var nextStreamID = 0

    var outbound: [(keying: SRTPKeyingMaterial, context: SRTPContext)] = []
    var inbound: [(keying: SRTPKeyingMaterial, context: SRTPContext)] = []
    let transmits: TransmitQueue
    var events: [Event] = []
    var eventHead = 0
    /// Scratch for trying one SRTCP packet against several keys.
    var rtcpScratch = [UInt8](repeating: 0, count: TransmitQueue.slotSize)

    // Sending.
    var nextTransportSequence: UInt16 = 0
    var estimator: SendSideBandwidthEstimator
    var followsEstimate = false
    var estimateUpdated = false
    var senderReports: RTCPInterval
    var nextSenderReport: Duration?

    // Receiving.
    var feedback: TransportFeedbackGenerator
    var feedbackDestination: (address: SocketAddress, socket: Int)?
    var receiverReports: RTCPInterval
    var nextReceiverReport: Duration?
    var lipSyncs: [String: LipSync] = [:]
    /// Reused for every video stream's actions, so releasing frames allocates nothing.
    var videoActions: [VideoReceiveStream.Action] = []
    /// Reused for forwarding streams' NACK lists.
    var forwardingNACKs: [UInt16] = []
    var nextSynchronization: Duration?

    /// ICE, TURN, consent: everything about reaching the peer.
    var paths: PathController

    /// Sees every Opus packet a jitter buffer accepts (stream, payload, RTP timestamp), as
    /// received: recordings tap here.
    public var acceptedAudio: ((ReceiveStreamID, UnsafeRawBufferPointer, UInt32) -> Void)?

    /// Creates a core with no streams.
    /// - Throws: `SRTPError` when a key is refused.
    public init(configuration: Configuration) throws(SRTPError) {
        self.configuration = configuration
        random = SeededRandom(seed: configuration.seed)
        paths = PathController(consent: configuration.consent, learnsFromChecks: configuration.learnsPathFromChecks,
                               seed: configuration.seed)
        roundTripTime = configuration.initialRoundTripTime
        transmits = TransmitQueue(capacity: configuration.transmitCapacity)
        estimator = SendSideBandwidthEstimator(configuration: configuration.bandwidth)
        senderReports = RTCPInterval(sessionBandwidth: max(configuration.sendBandwidth, 8_000), weSent: true, reducedMinimum: false)
        receiverReports = RTCPInterval(sessionBandwidth: max(configuration.receiveBandwidth, 8_000), weSent: false)
        feedback = TransportFeedbackGenerator(configuration: TransportFeedbackGenerator.Configuration(senderSSRC: configuration.rtcpSSRC))
        events.reserveCapacity(64)
        videoActions.reserveCapacity(16)
        forwardingNACKs.reserveCapacity(256)
        if let keying = configuration.outboundKeying { _ = try outboundKey(for: keying) }
        if let keying = configuration.inboundKeying { _ = try inboundKey(for: keying) }
        inboundKeying = configuration.inboundKeying
    }

    /// Sets the key the peer protects with (a call learns it from signaling after the core
    /// exists); streams added from now on use it.
    /// - Throws: `MediaCoreError` when libsrtp refuses it.
    public func setInboundKeying(_ keying: SRTPKeyingMaterial) throws(MediaCoreError) {
        do {
            _ = try inboundKey(for: keying)
        } catch {
            throw MediaCoreError(.srtp, "inbound key: \(error.message)")
        }
        inboundKeying = keying
    }

    // MARK: Keys

    func outboundKey(for keying: SRTPKeyingMaterial) throws(SRTPError) -> Int {
        if let index = outbound.firstIndex(where: { $0.keying == keying }) { return index }
        outbound.append((keying, try SRTPContext(keying: keying, direction: .outbound)))
        return outbound.count - 1
    }

    func inboundKey(for keying: SRTPKeyingMaterial) throws(SRTPError) -> Int {
        if let index = inbound.firstIndex(where: { $0.keying == keying }) { return index }
        inbound.append((keying, try SRTPContext(keying: keying, direction: .inbound, replayWindow: configuration.replayWindow)))
        return inbound.count - 1
    }

    // MARK: Streams

    /// Adds a stream this side sends; its packets go out from the next `sendAudio` or
    /// `sendVideo` on.
    /// - Throws: `MediaCoreError` when the SSRC is already one of this side's streams, or
    ///   SRTP cannot start.
    public func addSendStream(_ stream: SendStreamConfiguration) throws(MediaCoreError) -> SendStreamID {
        guard stream.ssrc != 0, !sendStreams.contains(where: { $0.configuration.ssrc == stream.ssrc }),
              stream.ssrc != configuration.rtcpSSRC else {
            throw MediaCoreError(.ssrcCollision, "send stream SSRC \(stream.ssrc) is already in use on this side")
        }
        let key: Int?
        do {
            key = try configuration.outboundKeying.map { (keying) throws(SRTPError) in try outboundKey(for: keying) }
        } catch {
            throw MediaCoreError(.srtp, "send stream \(stream.ssrc): \(error.message)")
        }
        let id = SendStreamID(value: nextStreamID)
        nextStreamID += 1
        sendStreams.append(SendStreamState(id: id, configuration: stream, outboundKey: key, extensions: configuration.extensions,
                                           midID: configuration.extensions.id(for: RTPExtensionMap.midURI), random: &random))
        return id
    }

    /// Removes a send stream: a BYE for its SSRC goes out (when it sent anything) and
    /// feedback about it is ignored from now on.
    public func removeSendStream(_ id: SendStreamID, now: Duration) {
        guard let index = sendStreams.firstIndex(where: { $0.id == id }) else { return }
        let stream = sendStreams.remove(at: index)
        if stream.packetsSent > 0 { queueSenderReport(for: stream, now: now, goodbye: true) }
    }

    /// Adds a stream the peer sends.
    /// - Throws: `MediaCoreError` when its SSRC or MID is already taken by another receive
    ///   stream, or its key or jitter buffer cannot be set up.
    public func addReceiveStream(_ stream: ReceiveStreamConfiguration) throws(MediaCoreError) -> ReceiveStreamID {
        if let ssrc = stream.ssrc, receiveBySSRC[ssrc] != nil {
            throw MediaCoreError(.ssrcCollision, "receive stream SSRC \(ssrc) is already bound to another stream")
        }
        if let mid = stream.mid, receiveStreams.contains(where: { $0.configuration.mid == mid }) {
            throw MediaCoreError(.ssrcCollision, "receive stream MID '\(mid)' is already used by another stream")
        }
        let inboundKey: Int?
        let feedbackKey: Int?
        do {
            inboundKey = try (stream.keying ?? inboundKeying).map { (keying) throws(SRTPError) in try self.inboundKey(for: keying) }
            feedbackKey = try (stream.keying ?? configuration.outboundKeying).map { (keying) throws(SRTPError) in try outboundKey(for: keying) }
        } catch {
            throw MediaCoreError(.srtp, "receive stream: \(error.message)")
        }
        let id = ReceiveStreamID(value: nextStreamID)
        let state: ReceiveStreamState
        do {
            state = try ReceiveStreamState(id: id, configuration: stream, inboundKey: inboundKey, feedbackKey: feedbackKey)
        } catch {
            throw MediaCoreError(.configuration, "receive stream: \(error.message)")
        }
        nextStreamID += 1
        state.video?.roundTripTime = roundTripTime
        receiveStreams.append(state)
        if let ssrc = stream.ssrc { receiveBySSRC[ssrc] = state }
        return id
    }

    /// Removes a receive stream: its packets are counted as unknown from now on.
    public func removeReceiveStream(_ id: ReceiveStreamID) {
        guard let index = receiveStreams.firstIndex(where: { $0.id == id }) else { return }
        let stream = receiveStreams.remove(at: index)
        if let ssrc = stream.ssrc, receiveBySSRC[ssrc] === stream { receiveBySSRC[ssrc] = nil }
        let participant = stream.configuration.participant
        if !receiveStreams.contains(where: { $0.configuration.participant == participant }) { lipSyncs[participant] = nil }
    }

    /// The IDs of the streams, in the order they were added.
    public var sendStreamIDs: [SendStreamID] { sendStreams.map(\.id) }
    public var receiveStreamIDs: [ReceiveStreamID] { receiveStreams.map(\.id) }

    func sendStream(_ id: SendStreamID) -> SendStreamState? { sendStreams.first { $0.id == id } }
    func receiveStream(_ id: ReceiveStreamID) -> ReceiveStreamState? { receiveStreams.first { $0.id == id } }

    /// The configuration a receive stream was added with.
    public func configuration(of id: ReceiveStreamID) -> ReceiveStreamConfiguration? { receiveStream(id)?.configuration }

    // MARK: Output

    /// The next datagram to send, or nil; its bytes stay valid until the next call into the core.
    public func pollTransmit() -> Transmit? {
        guard var transmit = transmits.dequeue() else { return nil }
        if paths.hasRelay { transmit = paths.relayed(transmit) }
        counters.datagramsSent += 1
        counters.bytesSent += transmit.bytes.count
        return transmit
    }

    /// The next event, or nil.
    public func pollEvent() -> Event? {
        guard eventHead < events.count else {
            if eventHead > 0 {
                events.removeAll(keepingCapacity: true)
                eventHead = 0
            }
            return nil
        }
        defer { eventHead += 1 }
        return events[eventHead]
    }

    func emit(_ event: Event) { events.append(event) }

    /// When `handleTimeout` (or `playAudio`) next has work, or nil when nothing is scheduled.
    public var nextTimeout: Duration? {
        var next: Duration?
        func consider(_ time: Duration?) {
            guard let time else { return }
            next = next.map { min($0, time) } ?? time
        }
        consider(nextSenderReport)
        consider(nextReceiverReport)
        consider(nextSynchronization)
        consider(feedback.nextFeedbackTime)
        consider(paths.nextDeadline)
        for stream in receiveStreams {
            consider(stream.nextPull)
            consider(stream.video?.nextProcessTime())
            consider(stream.nacks?.nextProcessTime(rtt: roundTripTime))
        }
        return next
    }

    /// Runs everything due at `now`: connectivity and consent checks, reports,
    /// transport-wide feedback, video deadlines, NACK and keyframe requests, lip sync.
    /// (Audio playout is `playAudio`.)
    public func handleTimeout(now: Duration) {
        runPathChecks(now: now)
        if let due = nextSenderReport, now >= due {
            for stream in sendStreams where stream.packetsSent > 0 && !stream.isEnded {
                queueSenderReport(for: stream, now: now, goodbye: false)
            }
            nextSenderReport = now + senderReports.nextInterval(using: &random)
        }
        if let due = nextReceiverReport, now >= due {
            queueReceiverReports(now: now)
            nextReceiverReport = now + receiverReports.nextInterval(using: &random)
        }
        if let due = nextSynchronization, now >= due {
            synchronize()
            nextSynchronization = due + .seconds(1)
        }
        queueTransportFeedback(now: now)
        for stream in receiveStreams where stream.video?.nextProcessTime().map({ $0 <= now }) == true {
            processVideo(stream, now: now)
        }
        for stream in receiveStreams where stream.nacks?.nextProcessTime(rtt: roundTripTime).map({ $0 <= now }) == true {
            processForwardingLosses(stream, now: now)
        }
    }

    /// Ends every send stream: BYE for each that sent anything.
    public func close(now: Duration) {
        for stream in sendStreams { close(only: stream.id, now: now) }
    }

    /// Ends one send stream (its source ended): a BYE for it, if it sent anything; its
    /// figures stay readable, nothing more is sent on it.
    public func close(only id: SendStreamID, now: Duration) {
        guard let stream = sendStream(id), !stream.isEnded else { return }
        stream.isEnded = true
        if stream.packetsSent > 0 { queueSenderReport(for: stream, now: now, goodbye: true) }
    }

    // MARK: Statistics

    /// The transport's counters.
    public var transportStatistics: TransportStatistics {
        var statistics = counters
        statistics.transmitOverflows = transmits.overflows
        let path = paths.counters
        statistics.stunAnswered += path.stunAnswered
        statistics.stunRefused += path.stunRefused
        statistics.unknownDatagrams += path.unknownDatagrams
        statistics.consentRequestsSent += path.consentRequestsSent
        statistics.consentAnswersReceived += path.consentAnswersReceived
        return statistics
    }

    /// The bandwidth estimator, for its figures.
    public var bandwidthEstimator: SendSideBandwidthEstimator { estimator }

    /// The latest estimate the encoders should follow, when it changed since the last call
    /// (and feedback has arrived: peers that send none get the configured rates).
    public func takeBandwidthUpdate() -> BandwidthUpdate? {
        guard followsEstimate, estimateUpdated else { return nil }
        estimateUpdated = false
        return BandwidthUpdate(targetBitrate: estimator.targetBitrate, opusExpectedLossPercent: estimator.opusExpectedLossPercent)
    }

    /// Sets the bounds of the bandwidth estimate (the sum of what the encoders may use).
    public func setBandwidthLimits(start: Int? = nil, minimum: Int, maximum: Int) {
        if let start {
            var settings = configuration.bandwidth
            settings.startBitrate = start
            settings.minimumBitrate = minimum
            settings.maximumBitrate = maximum
            estimator = SendSideBandwidthEstimator(configuration: settings)
            estimator.setRoundTripTime(roundTripTime)
        } else {
            estimator.setBitrateLimits(minimum: minimum, maximum: maximum)
        }
    }

    /// A send stream's counters.
    public func statistics(of id: SendStreamID) -> OutboundRTPStreamStatistics? {
        guard let stream = sendStream(id) else { return nil }
        var statistics = stream.statistics
        if let responder = stream.responder {
            statistics.pliCount = responder.statistics.pliReceived
            statistics.firCount = responder.statistics.firReceived
            statistics.keyframesForced = responder.statistics.keyframesForced
            statistics.retransmittedPacketsSent = responder.history.statistics.packetsRetransmitted
        }
        return statistics
    }

    /// A receive stream's counters.
    public func statistics(of id: ReceiveStreamID) -> InboundRTPStreamStatistics? {
        guard let stream = receiveStream(id) else { return nil }
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
        if let level = stream.audioLevel { statistics.audioLevel = level.level.amplitude }
        return statistics
    }

    /// A video receive stream's recovery state, for its detailed counters.
    public func videoState(of id: ReceiveStreamID) -> VideoReceiveStream? { receiveStream(id)?.video }

    /// An audio receive stream's jitter buffer, for its detailed figures.
    public func jitterBuffer(of id: ReceiveStreamID) -> AudioJitterBuffer? { receiveStream(id)?.jitter }

    /// A video send stream's feedback responder, for its detailed counters.
    public func feedbackResponder(of id: SendStreamID) -> VideoFeedbackResponder? { sendStream(id)?.responder }
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
