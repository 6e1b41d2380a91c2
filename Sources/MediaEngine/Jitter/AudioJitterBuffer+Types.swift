extension AudioJitterBuffer {
    /// Settings of a jitter buffer, validated when it is created.
    ///
    /// Memory is bounded by `maximumPackets * maximumPayloadSize` bytes of payload plus
    /// one 120 ms packet and one frame of decoded samples; with the defaults that is
    /// 150 kB for 2 s of 20 ms packets (1 s of 10 ms ones).
    public struct Configuration: Sendable, Hashable {
        /// Output channel layout (the decoder up- or down-mixes packets to it).
        public var layout: ChannelLayout = .mono
        /// Length of the frame each `pull` produces: 10, 20, 40 or 60 ms. Packets may
        /// have any Opus duration; each packet's own sample count is read from it.
        public var frameDuration: Opus.FrameDuration = .ms20
        /// Lowest target delay.
        public var minimumTargetDelay: Duration = .milliseconds(20)
        /// Highest target delay. The effective ceiling is also kept to two thirds of what
        /// `maximumPackets` packets of the current duration span, so the ring never fills
        /// at the target.
        public var maximumTargetDelay: Duration = .milliseconds(1_000)
        /// Target before enough arrivals have been measured (50 packets).
        public var initialTargetDelay: Duration = .milliseconds(80)
        /// Share of packets the target delay should have arrived in time for, 0.5...0.999.
        public var delayQuantile: Double = 0.97
        /// Most packets held at once (2...4096); a packet beyond that window restarts the
        /// buffer rather than growing it.
        public var maximumPackets: Int = 100
        /// Largest payload accepted, bytes (1...65535); larger ones are counted malformed.
        public var maximumPayloadSize: Int = 1_500

        /// The defaults: mono, 20 ms frames, 20...1000 ms target starting at 80 ms, 100 packets.
        public init() {}

        /// Samples per channel in one output frame (48 kHz).
        public var samplesPerFrame: Int { frameDuration.samplesPerChannel() }

        /// Throws `CodecError.invalidConfiguration` naming the first value out of range.
        public func validate() throws(CodecError) {
            guard [.ms10, .ms20, .ms40, .ms60].contains(frameDuration) else {
                throw CodecError(.invalidConfiguration, "jitter buffer: frame duration \(frameDuration) is not 10, 20, 40 or 60 ms")
            }
            guard minimumTargetDelay >= .zero, minimumTargetDelay <= maximumTargetDelay,
                  maximumTargetDelay <= .seconds(10) else {
                throw CodecError(.invalidConfiguration,
                                 "jitter buffer: target delay range \(minimumTargetDelay)...\(maximumTargetDelay) is not within 0...10 s")
            }
            guard initialTargetDelay >= .zero, initialTargetDelay <= .seconds(10) else {
                throw CodecError(.invalidConfiguration, "jitter buffer: initial target delay \(initialTargetDelay) is not within 0...10 s")
            }
            guard delayQuantile.isFinite, (0.5...0.999).contains(delayQuantile) else {
                throw CodecError(.invalidConfiguration, "jitter buffer: delay quantile \(delayQuantile) is outside 0.5...0.999")
            }
            guard (2...4_096).contains(maximumPackets) else {
                throw CodecError(.invalidConfiguration, "jitter buffer: maximum packets \(maximumPackets) is outside 2...4096")
            }
            guard (1...65_535).contains(maximumPayloadSize) else {
                throw CodecError(.invalidConfiguration,
                                 "jitter buffer: maximum payload size \(maximumPayloadSize) is outside 1...65535 bytes")
            }
        }
    }

    /// What `insert` did with a packet.
    public enum InsertOutcome: Sendable, Hashable {
        /// Held for playout.
        case accepted
        /// Seen before; counted in `packetsDuplicated` and dropped.
        case duplicate
        /// Behind the playout point; counted in `packetsDiscarded` and dropped.
        case late
        /// Far from the stream (a stray packet, or the first of a restarted stream, which
        /// the next packet confirms); counted in `packetsDiscarded` and dropped.
        case outOfRange
        /// Started a new timeline: a confirmed stream restart, or a packet too far ahead to
        /// hold. Packets held before were dropped and counted in `packetsDiscarded`.
        case restarted
        /// Empty, oversized or not a valid Opus packet, or a reordered packet whose
        /// timestamp contradicts its neighbours'; counted in `packetsMalformed`.
        case malformed
    }

    /// What one `pull` produced.
    public struct PullResult: Sendable, Hashable {
        /// Samples per channel written: always the configured frame.
        public var samplesPerChannel: Int
        /// Where the frame's samples came from (several sources when packets are shorter
        /// than the frame).
        public var sources: Sources
        /// Packets held after the pull.
        public var packetsHeld: Int

        /// Where a pulled frame's samples came from.
        public struct Sources: OptionSet, Sendable, Hashable {
            /// The bits of the set.
            public let rawValue: UInt8
            /// A set from its bits.
            public init(rawValue: UInt8) { self.rawValue = rawValue }

            /// Decoded from packets.
            public static let decoded = Sources(rawValue: 1 << 0)
            /// Recovered from the in-band FEC of the following packet.
            public static let recoveredByFEC = Sources(rawValue: 1 << 1)
            /// Concealed: a packet was lost or late, or the buffer ran dry.
            public static let concealed = Sources(rawValue: 1 << 2)
            /// Comfort noise for a DTX silence.
            public static let comfortNoise = Sources(rawValue: 1 << 3)
            /// Digital silence before the stream started playing.
            public static let silence = Sources(rawValue: 1 << 4)
            /// A quiet chunk was dropped to shorten the delay.
            public static let accelerated = Sources(rawValue: 1 << 5)
            /// A quiet chunk was inserted to lengthen the delay.
            public static let decelerated = Sources(rawValue: 1 << 6)
        }
    }

    /// Counters named as W3C webrtc-stats names them (`RTCInboundRtpStreamStats`), plus a
    /// few of this buffer's own. Cumulative over `reset()` and restarts.
    public struct Statistics: Sendable, Hashable {
        /// Unique packets received (duplicates excluded, late ones included).
        public var packetsReceived = 0
        /// Expected minus received (RFC 3550), over every stream since creation.
        public var packetsLost = 0
        /// Packets received but never played: late, too far ahead, or flushed by a restart.
        public var packetsDiscarded = 0
        /// Packets received more than once.
        public var packetsDuplicated = 0
        /// RFC 3550 interarrival jitter of the current stream, seconds.
        public var jitter = 0.0
        /// Packets carrying in-band FEC (Opus LBRR).
        public var fecPacketsReceived = 0
        /// FEC packets whose redundancy was not needed.
        public var fecPacketsDiscarded = 0
        /// Lost frames recovered from the next packet's FEC (not W3C).
        public var fecRecoveredFrames = 0
        /// Samples per channel recovered by FEC (not W3C).
        public var fecRecoveredSamples = 0
        /// Sum over emitted samples of the time each spent from its packet's arrival to
        /// its playout, seconds (W3C `jitterBufferDelay`).
        public var jitterBufferDelay = 0.0
        /// Samples per channel decoded from packets and played.
        public var jitterBufferEmittedCount = 0
        /// Sum over emitted samples of the target delay when each was played, seconds.
        public var jitterBufferTargetDelay = 0.0
        /// Samples per channel played since the stream started, concealment included.
        public var totalSamplesReceived = 0
        /// Samples per channel synthesised for lost or late packets or an empty buffer.
        public var concealedSamples = 0
        /// Concealed samples that were silent or near silent (below -45 dBFS).
        public var silentConcealedSamples = 0
        /// Runs of concealed samples.
        public var concealmentEvents = 0
        /// Samples per channel inserted to lengthen the delay.
        public var insertedSamplesForDeceleration = 0
        /// Samples per channel dropped to shorten the delay.
        public var removedSamplesForAcceleration = 0
        /// Samples per channel of DTX comfort noise (not W3C; not concealment).
        public var comfortNoiseSamples = 0
        /// Packets refused as malformed: empty, oversized, not Opus, failing to decode, or
        /// reordered with a timestamp that contradicts their neighbours' (not W3C).
        public var packetsMalformed = 0
        /// Timelines restarted: confirmed stream restarts, overflows, `reset()` (not W3C).
        public var streamRestarts = 0
        /// Timestamp discontinuities rebased onto the sequence numbers (not W3C).
        public var timestampJumps = 0

        /// All counters at zero.
        public init() {}

        /// Mean time an emitted sample waited in the buffer (`jitterBufferDelay /
        /// jitterBufferEmittedCount`), seconds; 0 before any.
        public var meanPlayoutDelay: Double {
            jitterBufferEmittedCount == 0 ? 0 : jitterBufferDelay / Double(jitterBufferEmittedCount)
        }

        /// Mean target delay over emitted samples, seconds.
        public var meanTargetDelay: Double {
            jitterBufferEmittedCount == 0 ? 0 : jitterBufferTargetDelay / Double(jitterBufferEmittedCount)
        }

        /// `concealedSamples / totalSamplesReceived`, 0...1.
        public var concealmentRatio: Double {
            totalSamplesReceived == 0 ? 0 : Double(concealedSamples) / Double(totalSamplesReceived)
        }
    }
}
