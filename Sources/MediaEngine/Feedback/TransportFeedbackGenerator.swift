/// The receiving side of transport-wide congestion control: records the arrival time of
/// every RTP packet by its transport-wide sequence number and, every `interval`, turns
/// what arrived since the last report into `TransportFeedback` packets for the sender's
/// `SendSideBandwidthEstimator`.
///
/// Sans-I/O: the caller passes arrival times and asks for feedback with `feedback(now:)`
/// (at or after `nextFeedbackTime`), then sends what it returns. Memory is a fixed ring of
/// `historySize` arrivals. Sequence numbers are unwrapped, so the 65535 -> 0 wrap is
/// seamless; a duplicate keeps its first arrival; a packet that arrives after the report
/// that called it lost is reported again, as received, in the next feedback. A stream
/// that jumps back further than the ring (a restarted sender) is followed after
/// `restartThreshold` such packets. Not thread-safe.
public struct TransportFeedbackGenerator: Sendable {
    /// Generator settings.
    public struct Configuration: Sendable, Hashable {
        /// SSRC the feedback is sent from (the receiver's).
        public var senderSSRC: UInt32
        /// SSRC of the media source put in the feedback (transport-wide, so any of the
        /// sender's SSRCs, or 0).
        public var mediaSSRC: UInt32
        /// Time between feedback packets; 50 to 100 ms is usual.
        public var interval: Duration = .milliseconds(50)
        /// Largest feedback packet in bytes; more statuses go into further packets.
        public var maximumPacketSize = 1_200
        /// Arrivals remembered, in sequence numbers: the reordering and lateness window.
        public var historySize = 4_096
        /// Consecutive packets older than the window after which the stream is taken to
        /// have restarted.
        public var restartThreshold = 16

        /// Creates settings.
        ///
        /// - Parameters:
        ///   - senderSSRC: The receiver's SSRC.
        ///   - mediaSSRC: The media source, or 0.
        public init(senderSSRC: UInt32, mediaSSRC: UInt32 = 0) {
            self.senderSSRC = senderSSRC
            self.mediaSSRC = mediaSSRC
        }
    }

    /// Counts of what the generator saw and sent.
    public struct Statistics: Sendable, Hashable {
        /// Packets recorded.
        public var packetsRecorded = 0
        /// Packets whose sequence number was already recorded (the first arrival is kept).
        public var duplicates = 0
        /// Packets older than the history window, dropped.
        public var tooOld = 0
        /// Times the history was cleared because the stream jumped back past the window.
        public var restarts = 0
        /// Feedback packets produced.
        public var feedbackPackets = 0
        /// Statuses reported over all feedback packets (a re-reported packet counts again).
        public var statusesReported = 0
    }

    /// The settings in force.
    public let configuration: Configuration
    /// What happened so far.
    public private(set) var statistics = Statistics()
    /// The media source SSRC each feedback packet names (`Configuration.mediaSSRC` at
    /// first). A receiver sets it to the SSRC of the latest packet, as libwebrtc's does:
    /// libwebrtc's sender takes transport-wide feedback only when this names one of its own
    /// streams, and ignores feedback about SSRC 0.
    public var mediaSSRC: UInt32
    /// When `feedback(now:)` next has something to send; nil while nothing new arrived.
    public private(set) var nextFeedbackTime: Duration?

    private struct Slot: Sendable {
        var sequence: Int64 = .min
        var arrival: Duration = .zero
    }

    private static let ticksPerReference: Int64 = 256  // 64 ms / 250 µs
    private static let headerSize = 20
    private static let worstAlignment = 3

    private var slots: [Slot]
    private var unwrapper = SequenceNumberUnwrapper()
    private var highest: Int64?
    private var nextToReport: Int64?
    private var feedbackPacketCount: UInt8 = 0
    private var lastReference: Int64 = 0
    private var tooOldInARow = 0

    /// Creates a generator.
    ///
    /// - Parameter configuration: Its settings; `historySize` is raised to at least 64
    ///   and `maximumPacketSize` to at least 32 bytes.
    public init(configuration: Configuration) {
        var configuration = configuration
        configuration.historySize = max(64, configuration.historySize)
        configuration.maximumPacketSize = max(32, configuration.maximumPacketSize)
        configuration.restartThreshold = max(1, configuration.restartThreshold)
        self.configuration = configuration
        mediaSSRC = configuration.mediaSSRC
        // The slots are made with the first arrival: a side that never receives (an SFU
        // leg of the audience, a send-only session) holds none.
        slots = []
    }

    /// Records the arrival of one RTP packet.
    ///
    /// - Parameters:
    ///   - transportSequenceNumber: The packet's transport-wide sequence number.
    ///   - now: When it arrived, on the receiver's monotonic clock (a socket receive
    ///     timestamp if there is one).
    public mutating func packetReceived(transportSequenceNumber: UInt16, now arrival: Duration) {
        var sequence = unwrapper.unwrap(transportSequenceNumber)
        let window = Int64(configuration.historySize)
        if let highest, sequence <= highest - window {
            statistics.tooOld += 1
            tooOldInARow += 1
            guard tooOldInARow >= configuration.restartThreshold else { return }
            restart()
            sequence = unwrapper.unwrap(transportSequenceNumber)
        }
        tooOldInARow = 0
        if slots.isEmpty { slots = Array(repeating: Slot(), count: configuration.historySize) }
        let index = slotIndex(sequence)
        if slots[index].sequence == sequence {
            statistics.duplicates += 1
            return
        }
        slots[index] = Slot(sequence: sequence, arrival: arrival)
        statistics.packetsRecorded += 1
        let newest = max(highest ?? sequence, sequence)
        highest = newest
        // A late packet moves the start back, so it is reported again, now as received.
        let start = min(nextToReport ?? sequence, sequence)
        nextToReport = max(start, newest - window + 1)
        if nextFeedbackTime == nil { nextFeedbackTime = arrival + configuration.interval }
    }

    /// The feedback due at `now`: empty before `nextFeedbackTime` or when nothing arrived
    /// since the last report, else one or more packets covering every sequence number from
    /// the last report's end to the newest arrival (lost ones as not received).
    ///
    /// - Parameter now: The current time, on the clock of the arrival times.
    /// - Returns: Feedback packets to send, in order.
    public mutating func feedback(now: Duration) -> [TransportFeedback] {
        guard let due = nextFeedbackTime, now >= due else { return [] }
        guard var sequence = nextToReport, let highest, sequence <= highest else {
            nextFeedbackTime = nil
            return []
        }
        // Keep the cadence, unless the caller was so late that it would fire at once again.
        let next = due + configuration.interval
        nextFeedbackTime = next > now ? next : now + configuration.interval
        var packets: [TransportFeedback] = []
        while sequence <= highest {
            let (packet, next) = buildPacket(from: sequence, through: highest)
            packets.append(packet)
            sequence = next
        }
        nextToReport = highest + 1
        return packets
    }

    /// One feedback packet from `start`, as many statuses as fit; returns the next start.
    private mutating func buildPacket(from start: Int64, through end: Int64) -> (TransportFeedback, Int64) {
        var encoder = TransportFeedback.ChunkEncoder()
        var deltas: [Int16] = []
        var deltaBytes = 0
        var reference: Int64?
        var previousTicks: Int64 = 0
        var sequence = start
        while sequence <= end, encoder.statusCount < Int(UInt16.max) {
            let slot = slots[slotIndex(sequence)]
            var delta: Int16?
            if slot.sequence == sequence {
                let ticks = Self.ticks(slot.arrival)
                if reference == nil {
                    let first = Self.floorDivide(ticks, Self.ticksPerReference)
                    reference = first
                    previousTicks = first * Self.ticksPerReference
                }
                // A delta beyond 16 bits (over 8 s) starts a new packet with its own reference.
                guard let fitting = Int16(exactly: ticks - previousTicks) else { break }
                delta = fitting
            }
            let symbol = TransportFeedback.symbol(for: delta)
            let size = Self.headerSize + 2 * encoder.chunkCount(adding: symbol) + deltaBytes + symbol.deltaSize
                + Self.worstAlignment
            if size > configuration.maximumPacketSize, encoder.statusCount > 0 { break }
            encoder.add(symbol)
            if let delta {
                deltas.append(delta)
                deltaBytes += symbol.deltaSize
                previousTicks += Int64(delta)
            }
            sequence += 1
        }
        // A packet of losses only has no arrival to refer to: repeat the last reference.
        let chosen = reference ?? lastReference
        lastReference = chosen
        let referenceTime = Int32(truncatingIfNeeded: (chosen << 40) >> 40)
        let packet = TransportFeedback(
            senderSSRC: configuration.senderSSRC, mediaSSRC: mediaSSRC,
            baseSequenceNumber: UInt16(truncatingIfNeeded: start), packetStatusCount: UInt16(encoder.statusCount),
            referenceTime: referenceTime, feedbackPacketCount: feedbackPacketCount,
            chunks: encoder.finished(), receiveDeltas: deltas
        )
        feedbackPacketCount &+= 1
        statistics.feedbackPackets += 1
        statistics.statusesReported += encoder.statusCount
        return (packet, sequence)
    }

    private mutating func restart() {
        statistics.restarts += 1
        slots = Array(repeating: Slot(), count: configuration.historySize)
        unwrapper = SequenceNumberUnwrapper()
        highest = nil
        nextToReport = nil
        tooOldInARow = 0
    }

    private func slotIndex(_ sequence: Int64) -> Int {
        Int(sequence.modulo(Int64(configuration.historySize)))
    }

    /// `time` in 250 µs ticks, rounded to the nearest.
    private static func ticks(_ time: Duration) -> Int64 {
        let (seconds, attoseconds) = time.components
        let tickAttoseconds: Int64 = 250_000_000_000_000
        return seconds * 4_000 + floorDivide(attoseconds + tickAttoseconds / 2, tickAttoseconds)
    }

    private static func floorDivide(_ value: Int64, _ divisor: Int64) -> Int64 {
        let quotient = value / divisor
        return value % divisor < 0 ? quotient - 1 : quotient
    }
}

extension Int64 {
    /// The non-negative remainder of division by a positive `divisor`.
    fileprivate func modulo(_ divisor: Int64) -> Int64 {
        let remainder = self % divisor
        return remainder < 0 ? remainder + divisor : remainder
    }
}
