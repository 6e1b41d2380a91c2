/// The receive side of one VP8 video stream with loss recovery, sans-I/O: holds RTP
/// packets, rebuilds frames (RFC 7741), asks for lost packets (`NACKGenerator`) and for
/// keyframes (`KeyframeRequester`), and hands out frames to decode in order, never one
/// whose references are missing.
///
/// Use: `insert(_:arrival:)` each RTP packet of the stream (after SRTP), then call
/// `process(now:)` after arrivals and on a timer (`nextProcessTime` says when it next has
/// work; every 5-10 ms is fine) and carry out the actions it returns, in order.
///
/// Policies (defaults in `Configuration`):
/// - Order and references: VP8 without temporal layers, so a delta frame is handed out
///   only when it directly follows the last frame handed out (its first sequence number is
///   one past that frame's last); a keyframe that is complete is handed out at once, and
///   the frames before it are dropped.
/// - Reordering and retransmissions: several frames stay in flight (up to
///   `packetCapacity` packets); a frame completes whenever its last missing packet arrives.
/// - Deadline: the stream waits for a missing packet at most `frameDelay(rtt:)` =
///   3 x RTT clamped to 400 ms...1 s, counted from the arrival of the earliest packet
///   waiting behind the gap (about the first packet of the blocked frame). Then it gives
///   up: everything before the newest keyframe start it holds (or everything) is dropped
///   and a keyframe is requested. It gives up at once when the NACK generator has given
///   up the missing packet (after a silence longer than its `maximumAge`, e.g. an outage).
/// - Keyframes are requested when a frame misses its deadline, the decoder reports
///   corruption, the NACK list overflows or gives packets up, the packet window overflows,
///   the stream restarts, or no keyframe completes within `keyframeWait` (200 ms) of the
///   stream's first packet; at most once per max(RTT, 300 ms) (see `KeyframeRequester`).
/// - Bad input: duplicates and packets before the window are counted and dropped; a
///   sequence number more than `maximumSequenceJump` (1000) away from the newest is
///   dropped unless `resynchronizationPackets` (4) such packets arrive in sequence, which
///   restarts the stream. A new SSRC takes over (a restart) at once when the current one
///   has been silent for `sourceTimeout` (500 ms), else only after 4 of its packets arrive
///   in sequence (then a keyframe is asked for at once: its first packets were dropped), so
///   a stray packet cannot hijack a live stream; the previous SSRC cannot take the stream
///   back while the new one is live. RTP timestamps only group packets into frames, so
///   jumps do not matter.
///
/// Bounds: `packetCapacity` (1024) packets of `maximumPayloadSize` (1500) bytes,
/// allocated in `init` (about 1.5 MB); the NACK list (1000 entries) and 16 keyframe
/// candidates, reserved up front. `insert` allocates nothing. `process(now:into:)`
/// reuses the caller's action array and the last frame's buffer (once its taker let go
/// of it), so a steady stream allocates nothing per frame; `process(now:)` allocates the
/// array it returns.
/// Not thread-safe.
public struct VideoReceiveStream: Sendable {
    /// Settings.
    public struct Configuration: Sendable, Hashable {
        /// Packets held at once; rounded up to a power of two, 16...32768.
        public var packetCapacity = 1_024
        /// Largest VP8 payload (after the payload descriptor) held; larger packets are dropped.
        public var maximumPayloadSize = 1_500
        /// Shortest wait for a missing packet before giving its frame up.
        public var minimumFrameDelay: Duration = .milliseconds(400)
        /// The wait for a missing packet in RTTs, within the bounds.
        public var frameDelayInRoundTrips = 3.0
        /// Longest wait for a missing packet.
        public var maximumFrameDelay: Duration = .seconds(1)
        /// How long after a stream starts a keyframe may take before one is requested.
        public var keyframeWait: Duration = .milliseconds(200)
        /// Largest distance from the newest sequence number accepted as the same stream.
        public var maximumSequenceJump = 1_000
        /// In-sequence packets that restart the stream: beyond `maximumSequenceJump`, or
        /// from a new SSRC while the current one is live.
        public var resynchronizationPackets = 4
        /// Silence of the current SSRC after which a new SSRC takes over with its first packet.
        public var sourceTimeout: Duration = .milliseconds(500)
        /// Keyframe starts remembered while waiting for their frames to complete.
        public var maximumKeyframeCandidates = 16
        /// The RTT assumed until `roundTripTime` is set.
        public var initialRoundTripTime: Duration = .milliseconds(100)
        /// NACK timing and bounds.
        public var nack = NACKGenerator.Configuration()
        /// Keyframe request pacing and FIR use.
        public var keyframeRequests = KeyframeRequester.Configuration()

        /// The defaults.
        public init() {}
    }

    /// One complete frame to decode.
    public struct Frame: Sendable, Hashable {
        /// The encoded VP8 frame.
        public var data: [UInt8]
        /// The RTP timestamp.
        public var timestamp: UInt32
        /// Whether it decodes without earlier frames.
        public var isKeyframe: Bool
        /// The VP8 PictureID, when the sender includes one.
        public var pictureID: UInt16?
        /// Sequence number of its first packet.
        public var firstSequenceNumber: UInt16
        /// Sequence number of its last (marker) packet.
        public var lastSequenceNumber: UInt16
        /// Arrival of its earliest-arriving packet.
        public var firstArrival: Duration
    }

    /// What the caller should do, in the order given.
    public enum Action: Sendable, Hashable {
        /// Decode this frame.
        case decode(Frame)
        /// Send a Generic NACK for these sequence numbers of `ssrc`.
        case sendNACK([UInt16])
        /// Send a PLI for `ssrc`.
        case sendPLI
        /// Send a FIR for `ssrc` with this command sequence number.
        case sendFIR(sequenceNumber: UInt8)
    }

    /// What `insert` did with a packet.
    public enum InsertResult: Sendable, Hashable {
        /// Held.
        case stored
        /// Held, and it had been asked for by NACK.
        case recovered
        /// Already held.
        case duplicate
        /// Before the window: its frame was handed out or given up.
        case late
        /// Too far from the stream's sequence numbers (see `maximumSequenceJump`).
        case outOfRange
        /// From an SSRC other than the stream's, not (yet) taking over.
        case otherSource
        /// A VP8 payload descriptor that does not parse.
        case malformed
        /// A payload above `maximumPayloadSize`.
        case oversized
    }

    /// Counters over the stream's life.
    public struct Statistics: Sendable, Hashable {
        public init() {}

        /// Packets given to `insert`.
        public var packetsReceived = 0
        /// Packets held.
        public var packetsStored = 0
        /// Held packets that had been asked for by NACK.
        public var packetsRecovered = 0
        /// Padding-only packets.
        public var paddingPackets = 0
        /// Packets already held.
        public var duplicatePackets = 0
        /// Packets before the window.
        public var latePackets = 0
        /// Packets too far from the stream's sequence numbers.
        public var outOfRangePackets = 0
        /// Packets of other SSRCs that did not take over.
        public var otherSourcePackets = 0
        /// Packets whose VP8 descriptor did not parse.
        public var malformedPackets = 0
        /// Packets above `maximumPayloadSize`.
        public var oversizedPackets = 0
        /// Held packets dropped without being handed out in a frame.
        public var packetsDiscarded = 0
        /// Frames handed out.
        public var framesAssembled = 0
        /// Keyframes among them.
        public var keyframesAssembled = 0
        /// Times the stream gave up a frame (deadline, abandoned packet, window overflow).
        public var framesGivenUp = 0
        /// Times a far-ahead packet pushed held packets out of the window.
        public var windowOverflows = 0
        /// SSRC changes.
        public var sourceChanges = 0
        /// Restarts after a run of far-away sequence numbers.
        public var resynchronizations = 0
        /// `decoderReportedCorruption` calls.
        public var decoderCorruptions = 0
        /// Most packets held at once.
        public var peakHeldPackets = 0
    }

    /// The settings in force (`packetCapacity` rounded up).
    public let configuration: Configuration
    /// Counters so far.
    public internal(set) var statistics = Statistics()
    /// The round-trip estimate used for NACK and keyframe pacing and the frame deadline.
    public var roundTripTime: Duration
    /// The SSRC of the stream, once a packet arrived.
    public internal(set) var ssrc: UInt32?

    var ring: VideoPacketRing
    var nack: NACKGenerator
    var keyframes: KeyframeRequester
    var previousSSRC: UInt32?
    /// Newest sequence number seen (the reference for unwrapping).
    var highest: Int64?
    /// Lowest sequence number of interest: packets before it are late.
    var floor: Int64?
    /// The sequence number the next delta frame must start at; nil while waiting for a keyframe.
    var decodeFrom: Int64?
    /// Set once a frame was handed out or given up: from then on the floor only rises.
    var floorIsFixed = false
    /// When the stream (re)started waiting for its first keyframe, and why, for `keyframeWait`.
    var awaitingSince: Duration?
    var awaitingReason = KeyframeRequester.Reason.missingKeyframe
    /// Arrival of the earliest packet waiting behind a gap, while blocked.
    var blockedSince: Duration?
    var keyframeCandidates: [Int64] = []
    var resynchronization: (last: UInt16, count: Int)?
    /// An SSRC trying to take over a live stream: its last sequence number and run length.
    var sourceCandidate: (ssrc: UInt32, last: UInt16, count: Int)?
    var nackNumbers: [UInt16] = []
    var lastArrival: Duration?
    /// The bytes of the last frame handed out, reused for the next one once its taker let
    /// go of it.
    var frameBuffer: [UInt8] = []

    /// Creates a stream and allocates its buffers.
    /// - Precondition: `packetCapacity` is 16...32768 and `maximumPayloadSize` positive.
    public init(configuration: Configuration = Configuration()) {
        precondition((16...32_768).contains(configuration.packetCapacity), "packet capacity must be 16...32768")
        precondition(configuration.maximumPayloadSize > 0, "payloads need room")
        var configuration = configuration
        var capacity = 16
        while capacity < configuration.packetCapacity { capacity <<= 1 }
        configuration.packetCapacity = capacity
        configuration.maximumSequenceJump = max(1, configuration.maximumSequenceJump)
        configuration.resynchronizationPackets = max(1, configuration.resynchronizationPackets)
        configuration.maximumKeyframeCandidates = max(1, configuration.maximumKeyframeCandidates)
        self.configuration = configuration
        roundTripTime = configuration.initialRoundTripTime
        ring = VideoPacketRing(capacity: capacity, slotSize: configuration.maximumPayloadSize)
        nack = NACKGenerator(configuration: configuration.nack)
        keyframes = KeyframeRequester(configuration: configuration.keyframeRequests)
        keyframeCandidates.reserveCapacity(configuration.maximumKeyframeCandidates)
        nackNumbers.reserveCapacity(configuration.nack.maximumListSize)
    }

    /// The NACK generator's counters.
    public var nackStatistics: NACKGenerator.Statistics { nack.statistics }
    /// The keyframe requester's counters.
    public var keyframeRequestStatistics: KeyframeRequester.Statistics { keyframes.statistics }
    /// Packets held now.
    public var heldPackets: Int { ring.count }
    /// Missing packets the NACK generator tracks now.
    public var missingPackets: Int { nack.missingCount }
    /// Whether only a keyframe can be handed out next.
    public var isAwaitingKeyframe: Bool { decodeFrom == nil }

    /// How long the stream waits for a missing packet before giving its frame up.
    public func frameDelay(rtt: Duration) -> Duration {
        let scaled = Duration.nanoseconds(Int64((max(0, rtt / .nanoseconds(1)) * configuration.frameDelayInRoundTrips).rounded()))
        return min(max(scaled, configuration.minimumFrameDelay), configuration.maximumFrameDelay)
    }

    /// Takes one RTP packet of the stream; allocates nothing.
    ///
    /// - Parameters:
    ///   - packet: A parsed RTP packet (after SRTP unprotect).
    ///   - now: Its arrival time.
    ///   - retransmitted: It came on the sender's RTX stream: an answer to a NACK for
    ///     certain, however soon it came (a plain retransmission is told from reordering by
    ///     its timing).
    /// - Returns: What was done with it.
    @discardableResult
    public mutating func insert(_ packet: RTPPacketView, arrival now: Duration, retransmitted: Bool = false) -> InsertResult {
        statistics.packetsReceived += 1
        if let current = ssrc, packet.ssrc != current, !takesOver(packet, from: current, now: now) {
            statistics.otherSourcePackets += 1
            return .otherSource
        }
        ssrc = packet.ssrc
        if let lastArrival, now - lastArrival > keyframes.interval(rtt: roundTripTime) {
            // Requests sent while nothing arrived probably went into a dead path.
            keyframes.pathResumed()
        }
        lastArrival = now
        guard let sequence = unwrap(packet.sequenceNumber, now: now) else {
            statistics.outOfRangePackets += 1
            return .outOfRange
        }
        if highest == nil, awaitingSince == nil { awaitingSince = now }

        let payload = packet.payload
        var descriptorSize = 0
        var descriptor = VP8PayloadDescriptor(startOfPartition: false)
        let isFiller = payload.isEmpty
        if isFiller {
            statistics.paddingPackets += 1
        } else {
            do {
                (descriptor, descriptorSize) = try VP8PayloadDescriptor.parse(payload)
            } catch {
                return reject(sequence, now: now, as: .malformed)
            }
        }
        let data = UnsafeRawBufferPointer(rebasing: payload[descriptorSize...])
        guard data.count <= configuration.maximumPayloadSize else { return reject(sequence, now: now, as: .oversized) }

        if let floor, sequence < floor {
            if floorIsFixed || (highest ?? sequence) - sequence >= Int64(ring.capacity) {
                statistics.latePackets += 1
                return .late
            }
            // Nothing handed out or given up yet: the stream may begin before its first arrival.
            self.floor = sequence
        }
        if ring.contains(sequence) {
            statistics.duplicatePackets += 1
            return .duplicate
        }
        if let floor, sequence - floor >= Int64(ring.capacity) { makeRoom(for: sequence, now: now) }
        if floor == nil { floor = sequence }
        highest = max(highest ?? sequence, sequence)

        let startsFrame = !isFiller && descriptor.startsFrame
        let startsKeyframe = startsFrame && Self.isKeyframeStart(data)
        let arrival = nack.insert(sequence, startsKeyframe: startsKeyframe, retransmitted: retransmitted, now: now)
        ring.store(VideoPacketRing.Packet(sequence: sequence, timestamp: packet.timestamp, arrival: now, length: data.count,
                                          isFiller: isFiller, startsFrame: startsFrame, startsKeyframe: startsKeyframe,
                                          marker: packet.marker, pictureID: descriptor.pictureID?.value),
                   payload: data)
        statistics.packetsStored += 1
        statistics.peakHeldPackets = max(statistics.peakHeldPackets, ring.count)
        if startsKeyframe {
            if keyframeCandidates.count >= configuration.maximumKeyframeCandidates { keyframeCandidates.removeFirst() }
            keyframeCandidates.append(sequence)
        }
        if arrival == .recovered {
            statistics.packetsRecovered += 1
            return .recovered
        }
        return .stored
    }

    /// Hands out what is due: frames that became decodable, then a NACK, then a keyframe
    /// request.
    public mutating func process(now: Duration) -> [Action] {
        var actions: [Action] = []
        process(now: now, into: &actions)
        return actions
    }

    /// `process(now:)` into the caller's array (appended to): with an array the caller
    /// empties and reuses, and frames it lets go of before the next call, nothing is
    /// allocated per frame.
    public mutating func process(now: Duration, into actions: inout [Action]) {
        assembleFrames(now: now, into: &actions)
        if giveUpIfBlocked(now: now) { assembleFrames(now: now, into: &actions) }
        if decodeFrom == nil { discardStalePackets(now: now) }
        if decodeFrom == nil, let since = awaitingSince, now - since >= configuration.keyframeWait {
            keyframes.request(awaitingReason, now: now)
            awaitingSince = nil
        }
        let events = nack.process(now: now, rtt: roundTripTime, into: &nackNumbers)
        if events.overflowed { keyframes.request(.nackListOverflow, now: now) }
        if events.givenUp > 0 { keyframes.request(.packetsGivenUp, now: now) }
        if !nackNumbers.isEmpty { actions.append(.sendNACK(nackNumbers)) }
        switch keyframes.process(now: now, rtt: roundTripTime) {
        case .pli: actions.append(.sendPLI)
        case .fir(let sequenceNumber): actions.append(.sendFIR(sequenceNumber: sequenceNumber))
        case nil: break
        }
    }

    /// Records that the decoder found a frame corrupt: no delta frame is handed out until a
    /// keyframe, which is requested.
    public mutating func decoderReportedCorruption(now: Duration) {
        statistics.decoderCorruptions += 1
        decodeFrom = nil
        blockedSince = nil
        keyframes.request(.decoderCorruption, now: now)
    }

    /// When `process` next has work that no new packet triggers (a NACK, a deadline, a
    /// keyframe request), or nil when it has none.
    public func nextProcessTime() -> Duration? {
        func earliest(_ a: Duration?, _ b: Duration?) -> Duration? {
            guard let a else { return b }
            guard let b else { return a }
            return min(a, b)
        }
        var next = earliest(nack.nextProcessTime(rtt: roundTripTime), keyframes.nextRequestTime(rtt: roundTripTime))
        next = earliest(next, blockedSince.map { $0 + frameDelay(rtt: roundTripTime) })
        if decodeFrom == nil { next = earliest(next, awaitingSince.map { $0 + configuration.keyframeWait }) }
        return next
    }

    /// Whether a packet of another SSRC replaces the current one (see the type's policies).
    private mutating func takesOver(_ packet: RTPPacketView, from current: UInt32, now: Duration) -> Bool {
        let silent = lastArrival.map { now - $0 > configuration.sourceTimeout } ?? true
        if !silent {
            guard packet.ssrc != previousSSRC else { return false }
            if let candidate = sourceCandidate, candidate.ssrc == packet.ssrc,
               (1...16).contains(packet.sequenceNumber &- candidate.last) {
                sourceCandidate = (packet.ssrc, packet.sequenceNumber, candidate.count + 1)
            } else {
                sourceCandidate = (packet.ssrc, packet.sequenceNumber, 1)
            }
            guard let candidate = sourceCandidate, candidate.count >= configuration.resynchronizationPackets else { return false }
        }
        statistics.sourceChanges += 1
        previousSSRC = current
        restart(now: now, reason: .streamRestart)
        if !silent { keyframes.request(.streamRestart, now: now) }
        return true
    }

    private mutating func reject(_ sequence: Int64, now: Duration, as result: InsertResult) -> InsertResult {
        // Still counts as arrived, so it is not asked for again: the retransmission would be the same bytes.
        if floor.map({ sequence >= $0 }) ?? true {
            nack.insert(sequence, now: now)
            highest = max(highest ?? sequence, sequence)
        }
        if result == .malformed { statistics.malformedPackets += 1 } else { statistics.oversizedPackets += 1 }
        return result
    }

    /// VP8 frame tag (RFC 6386 9.1): bit 0 of the first byte is 0 for a keyframe, whose
    /// start code 9d 01 2a follows the 3-byte tag.
    static func isKeyframeStart(_ data: UnsafeRawBufferPointer) -> Bool {
        data.count >= 6 && data[0] & 0x01 == 0 && data[3] == 0x9D && data[4] == 0x01 && data[5] == 0x2A
    }
}
