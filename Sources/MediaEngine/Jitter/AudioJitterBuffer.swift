import COpus

/// An adaptive audio jitter buffer for one Opus stream, in the manner of WebRTC's NetEq:
/// packets go in as they arrive, and the playout clock takes exactly one frame out per
/// `pull`, decoded, recovered from in-band FEC, concealed, or comfort noise.
///
/// Sans-I/O: no threads, no sleeps, no clock of its own. Every call takes `now` on the
/// caller's monotonic clock; the caller pulls once per frame duration.
///
/// - Target delay: arrivals are measured against their RTP timestamps (see
///   `ArrivalDelayEstimator`); the target is the 97th percentile of the relative arrival
///   delay plus one packet, clamped to the configured range.
/// - Delay convergence: the playout delay is compared with the target at every step. Above
///   it by more than three quarters of a frame, a decoded chunk is dropped, but only when
///   it is quiet (or the excess is large), with a 2.5 ms cross-fade over the cut; below it
///   by as much, a concealment frame is inserted after a quiet one (or when far below).
///   DTX silences are shortened or lengthened instead. This also absorbs clock drift
///   between sender and receiver.
/// - Loss: a missing packet is declared lost when a later one is held; it is recovered
///   from the next packet's LBRR when that packet follows it directly and carries LBRR,
///   otherwise concealed. With nothing held, the buffer conceals (or plays comfort noise
///   after a DTX packet) and plays the missing packet when it arrives.
/// - Bounds: at most `maximumPackets` packets of at most `maximumPayloadSize` bytes, in
///   storage allocated once; a packet too far ahead restarts the timeline instead.
///
/// `pull` and `insert` allocate nothing in steady state. Owns an `Opus.Decoder`: one owner
/// at a time, not thread-safe.
public final class AudioJitterBuffer {
    /// The settings in force.
    public let configuration: Configuration

    // Internal rather than private only so the playout half (AudioJitterBuffer+Playout.swift)
    // can reach it.
    let decoder: Opus.Decoder
    let ring: PacketRing
    let queue: PlayoutQueue
    var estimator: ArrivalDelayEstimator
    var counters = Statistics()
    var reception = RTPReceiveStatistics(clockRate: sampleRate)
    var earlierStreams = (received: 0, lost: 0, duplicated: 0)

    // The current stream's numbering. Sequence numbers and timestamps are unwrapped
    // against the newest packet without state, so a stray packet cannot disturb them.
    var newest: (sequence: Int64, rawTimestamp: Int64, timestamp: Int64, samples: Int)?
    var timestampOffset: Int64 = 0
    var jumpBoundary: (sequence: Int64, previousOffset: Int64)?
    var restartCandidate: UInt16?

    enum Phase { case idle, buffering, playing }
    var phase = Phase.idle
    /// Lowest sequence number that may be held; the ring holds `windowStart ..< windowStart + capacity`.
    var windowStart: Int64 = 0
    /// Sequence number of the next packet to decode (playing phase).
    var nextSequence: Int64 = 0
    /// Rebased timestamp of the next sample to decode (playing phase).
    var decodeTimestamp: Int64 = 0
    var lastPacketSamples: Int
    var inDTX = false
    var concealing = false
    var lastChunkQuiet = true
    /// Since when the delay has stayed above the dead band (nil while it is not).
    var excessSince: Duration?
    var activeLevel = 0.0
    var fadeOutRemaining = 0
    var targetSeconds: Double
    /// Extra delay lip sync asks for, on top of the jitter-driven target.
    public var synchronizationDelay: Duration = .zero {
        didSet { applySynchronizationDelay() }
    }
    var delaySeconds = 0.0
    var fecUsedSequence: Int64?
    /// Most packets held at once since creation.
    public private(set) var maximumPacketsHeld = 0

    static let sampleRate = AudioFrame.sampleRate
    /// A timestamp more than this far from where sequence numbers and arrival times put it
    /// is a discontinuity, not a DTX pause (1 s).
    static let maximumGap: Int64 = Int64(sampleRate)
    /// Smallest unit Opus can conceal: 2.5 ms.
    static let quantum = sampleRate / 400
    /// Packets accepted below the first one while buffering (start-up reordering).
    static let startSlack: Int64 = 8
    /// Concealment played after a restart before falling silent (100 ms), so the old
    /// stream fades instead of stopping dead.
    static let restartFadeOut = sampleRate / 10
    /// A delay above the target for this long is shortened even through sound that is
    /// never quiet (a steady tone, music), rather than kept: one frame at a time, at most
    /// one per `sustainedInterval`.
    static let sustainedExcess = Duration.milliseconds(300)
    static let sustainedInterval = Duration.milliseconds(200)
    /// Mean square of -50 dBFS (RMS 103.6 of 32767): concealment at or below it counts as silent.
    static let silentLevel = 10_737.0
    /// Mean square of -45 dBFS (RMS 184.3): chunks at or below it may always be dropped or stretched.
    static let quietLevel = 33_953.0

    /// Creates an empty buffer and its decoder.
    /// - Throws: `CodecError.invalidConfiguration` naming a value out of range.
    public init(configuration: Configuration = Configuration()) throws(CodecError) {
        try configuration.validate()
        self.configuration = configuration
        decoder = try Opus.Decoder(sampleRate: Self.sampleRate, layout: configuration.layout)
        ring = PacketRing(capacity: configuration.maximumPackets, maximumPayloadSize: configuration.maximumPayloadSize)
        queue = PlayoutQueue(channels: configuration.layout.count,
                             capacity: configuration.samplesPerFrame + Opus.maxSamplesPerPacket)
        estimator = ArrivalDelayEstimator(range: (configuration.maximumTargetDelay / .seconds(1)) + 0.1,
                                          quantile: configuration.delayQuantile)
        lastPacketSamples = configuration.samplesPerFrame
        targetSeconds = 0
        targetSeconds = clampedTarget(configuration.initialTargetDelay / .seconds(1))
    }

    // MARK: - Observing

    /// Counters so far, cumulative over restarts.
    public var statistics: Statistics {
        var statistics = counters
        statistics.packetsReceived += earlierStreams.received + reception.packetsReceived
        statistics.packetsLost = earlierStreams.lost + reception.packetsLost
        statistics.packetsDuplicated = earlierStreams.duplicated + reception.packetsDuplicated
        statistics.jitter = reception.jitter
        return statistics
    }

    /// The delay the buffer is steering towards now.
    public var targetDelay: Duration { .seconds(targetSeconds) }

    /// How long the sample played by the latest `pull` waited after its expected arrival:
    /// the playout delay the buffer steers towards `targetDelay`.
    public var currentDelay: Duration { .seconds(delaySeconds) }

    /// Packets held now; never more than `configuration.maximumPackets`.
    public var packetsHeld: Int { ring.count }

    // MARK: - Insert

    /// Copies one received packet into the buffer.
    ///
    /// Handles reordering, duplicates, late packets (behind the playout point), packets
    /// far ahead or far behind (a stray packet is dropped; two consecutive ones confirm a
    /// restarted stream, which restarts the timeline), and timestamp discontinuities
    /// (rebased onto the sequence numbers). Allocates nothing.
    /// - Parameters:
    ///   - sequenceNumber: the RTP sequence number.
    ///   - timestamp: the RTP timestamp (48 kHz for Opus, RFC 7587).
    ///   - payload: the Opus packet (RTP payload); copied, so the caller may reuse it.
    ///   - now: arrival time on the caller's monotonic clock.
    /// - Returns: what happened to the packet; every outcome is also counted.
    @discardableResult
    public func insert(sequenceNumber: UInt16, timestamp: UInt32, payload: UnsafeRawBufferPointer,
                       arrival now: Duration) -> InsertOutcome {
        guard let samples = packetSamples(payload) else {
            counters.packetsMalformed += 1
            return .malformed
        }
        guard let reference = newest else {
            startStream(sequenceNumber, timestamp, payload, samples: samples, now: now)
            return .accepted
        }
        let sequence = unwrap(sequenceNumber, near: reference.sequence)
        let rawTimestamp = reference.rawTimestamp
            + Int64(Int32(bitPattern: timestamp &- UInt32(truncatingIfNeeded: reference.rawTimestamp)))
        let distance = sequence - windowStart
        if distance < -max(100, Int64(ring.capacity)) || distance >= Int64(ring.capacity) {
            return insertOutOfRange(sequenceNumber, timestamp, payload, samples: samples, sequence: sequence,
                                    rawTimestamp: rawTimestamp, reference: reference, now: now)
        }
        restartCandidate = nil

        var rebased = rawTimestamp + offset(for: sequence)
        if sequence > reference.sequence {
            let expected = reference.timestamp + (sequence - reference.sequence) * Int64(reference.samples)
            let transit = now / .seconds(1) - Double(rebased) / Double(Self.sampleRate)
            let jumped = rebased - expected > Self.maximumGap || rebased <= reference.timestamp
            if jumped, abs(estimator.relativeDelay(transit: transit)) > Double(Self.maximumGap) / Double(Self.sampleRate) {
                // The timestamps jumped but the packets kept coming: follow the sequence numbers.
                jumpBoundary = (sequence, timestampOffset)
                timestampOffset += expected - rebased
                rebased = expected
                counters.timestampJumps += 1
            }
        } else {
            let expected = reference.timestamp - (reference.sequence - sequence) * Int64(reference.samples)
            if abs(rebased - expected) > Self.maximumGap {
                // Reordered across a jump: the first packet after it may come after the
                // second, which set the boundary. Then the boundary moves down to it.
                guard let boundary = jumpBoundary, sequence < boundary.sequence,
                      abs(rawTimestamp + timestampOffset - expected) <= Self.maximumGap else {
                    counters.packetsMalformed += 1
                    return .malformed
                }
                jumpBoundary = (sequence, boundary.previousOffset)
                rebased = rawTimestamp + timestampOffset
            }
        }

        let duplicatesBefore = reception.packetsDuplicated
        reception.record(sequenceNumber: sequenceNumber, timestamp: timestamp, payloadBytes: payload.count, arrival: now)
        if reception.packetsDuplicated > duplicatesBefore || ring.contains(sequence) { return .duplicate }

        estimator.record(transit: now / .seconds(1) - Double(rebased) / Double(Self.sampleRate))
        updateTarget(packetSamples: samples)
        if sequence > reference.sequence {
            newest = (sequence, rawTimestamp, rebased, samples)
        }
        if distance < 0 {
            counters.packetsDiscarded += 1
            return .late
        }
        let hasLBRR = Opus.PacketInspection.hasLBRR(payload)
        if hasLBRR { counters.fecPacketsReceived += 1 }
        ring.store(PacketRing.Entry(sequence: sequence, timestamp: rebased, arrival: now,
                                    samplesPerChannel: samples, hasLBRR: hasLBRR), payload: payload)
        maximumPacketsHeld = max(maximumPacketsHeld, ring.count)
        return .accepted
    }

    /// Forgets the current stream, as for a new SSRC: held packets are dropped (counted
    /// as discarded), the next packet starts a new timeline after the target delay, and
    /// the old audio fades out meanwhile. Statistics and the learned jitter are kept.
    public func reset() {
        restartTimeline()
    }

    private func packetSamples(_ payload: UnsafeRawBufferPointer) -> Int? {
        guard let base = payload.baseAddress, !payload.isEmpty, payload.count <= ring.maximumPayloadSize else { return nil }
        let samples = Int(opus_packet_get_nb_samples(base.assumingMemoryBound(to: UInt8.self), Int32(payload.count),
                                                     Int32(Self.sampleRate)))
        guard samples > 0, samples <= Opus.maxSamplesPerPacket, samples % Self.quantum == 0 else { return nil }
        return samples
    }

    private func offset(for sequence: Int64) -> Int64 {
        if let jumpBoundary, sequence < jumpBoundary.sequence { return jumpBoundary.previousOffset }
        return timestampOffset
    }

    /// A packet outside the window: the first of an outage's survivors or of a restarted
    /// stream, or a stray one.
    private func insertOutOfRange(_ sequenceNumber: UInt16, _ timestamp: UInt32, _ payload: UnsafeRawBufferPointer,
                                  samples: Int, sequence: Int64, rawTimestamp: Int64,
                                  reference: (sequence: Int64, rawTimestamp: Int64, timestamp: Int64, samples: Int),
                                  now: Duration) -> InsertOutcome {
        // Ahead, with a timestamp where the sequence numbers put it: the same stream after an
        // outage, or a flood while playout stalled. Holding it would overrun the ring.
        let expected = reference.timestamp + (sequence - reference.sequence) * Int64(reference.samples)
        let consistent = sequence > reference.sequence && abs(rawTimestamp + timestampOffset - expected) <= Self.maximumGap
        let confirmed = restartCandidate.map { abs(sequenceDistance(from: Int64($0), to: sequenceNumber)) <= 2 } ?? false
        guard consistent || confirmed else {
            // RFC 3550 A.1: wait for the next packet to confirm a restart.
            restartCandidate = sequenceNumber &+ 1
            counters.packetsReceived += 1
            counters.packetsDiscarded += 1
            return .outOfRange
        }
        restartTimeline()
        startStream(sequenceNumber, timestamp, payload, samples: samples, now: now)
        return .restarted
    }

    private func restartTimeline() {
        counters.packetsDiscarded += ring.removeAll()
        earlierStreams.received += reception.packetsReceived
        earlierStreams.lost += reception.packetsLost
        earlierStreams.duplicated += reception.packetsDuplicated
        reception = RTPReceiveStatistics(clockRate: Self.sampleRate)
        newest = nil
        timestampOffset = 0
        jumpBoundary = nil
        restartCandidate = nil
        estimator.restartTransit()
        if phase == .playing { fadeOutRemaining = Self.restartFadeOut }
        phase = .idle
        inDTX = false
        counters.streamRestarts += 1
    }

    private func startStream(_ sequenceNumber: UInt16, _ timestamp: UInt32, _ payload: UnsafeRawBufferPointer,
                             samples: Int, now: Duration) {
        let sequence = Int64(sequenceNumber)
        let rawTimestamp = Int64(timestamp)
        newest = (sequence, rawTimestamp, rawTimestamp, samples)
        windowStart = sequence - Self.startSlack
        phase = .buffering
        reception.record(sequenceNumber: sequenceNumber, timestamp: timestamp, payloadBytes: payload.count, arrival: now)
        estimator.record(transit: now / .seconds(1) - Double(rawTimestamp) / Double(Self.sampleRate))
        updateTarget(packetSamples: samples)
        let hasLBRR = Opus.PacketInspection.hasLBRR(payload)
        if hasLBRR { counters.fecPacketsReceived += 1 }
        ring.store(PacketRing.Entry(sequence: sequence, timestamp: rawTimestamp, arrival: now,
                                    samplesPerChannel: samples, hasLBRR: hasLBRR), payload: payload)
        maximumPacketsHeld = max(maximumPacketsHeld, ring.count)
    }

    private func updateTarget(packetSamples samples: Int) {
        lastPacketSamples = samples
        guard let quantile = estimator.delayQuantile else {
            targetSeconds = clampedTarget(configuration.initialTargetDelay / .seconds(1))
            return
        }
        // One packet (or frame, when pulls take more than a packet) on top of the quantile:
        // the packet being decoded must be whole.
        let unit = Double(max(samples, configuration.samplesPerFrame)) / Double(Self.sampleRate)
        targetSeconds = clampedTarget(quantile + unit)
    }

    private func clampedTarget(_ seconds: Double) -> Double {
        let ringSpan = Double(ring.capacity * lastPacketSamples) / Double(Self.sampleRate) * 2 / 3
        let ceiling = min(configuration.maximumTargetDelay / .seconds(1), ringSpan)
        // Lip sync may ask for more delay than jitter needs; it raises the floor.
        let floor = min(ceiling, configuration.minimumTargetDelay / .seconds(1) + synchronizationDelay / .seconds(1))
        return max(floor, min(ceiling, seconds))
    }

    /// The RTP timestamp of the next sample `pull` emits while playing (nil while
    /// buffering or idle): what lip sync compares with the sender's clock.
    public var playoutTimestamp: UInt32? {
        guard phase == .playing else { return nil }
        return UInt32(truncatingIfNeeded: decodeTimestamp - Int64(queue.count) - timestampOffset)
    }

    /// Re-applies the target bounds after `synchronizationDelay` changed.
    func applySynchronizationDelay() {
        targetSeconds = clampedTarget(targetSeconds)
    }
}
