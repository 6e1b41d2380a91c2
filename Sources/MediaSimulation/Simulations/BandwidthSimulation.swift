import MediaEngine

/// A deterministic end-to-end run of bandwidth estimation in virtual time, no sockets
/// and no sleeps: a video-like sender (a frame every 1/30 s at the estimator's target,
/// split into packets of at most 1200 payload bytes, paced at 2.5 × the target) sends
/// through an `ImpairmentModel`; a `TransportFeedbackGenerator` reports arrivals; the
/// feedback is serialized, crosses a return path (the same one-way delay by default) and
/// is parsed again before `SendSideBandwidthEstimator` handles it.
///
/// `run(for:frameSize:)` lets a real encoder size the frames (give it the target, return
/// the bytes it produced); the static `run(settings:seconds:startBitrate:maxBitrate:)`
/// uses frames of exactly target / 30. Not thread-safe.
public struct BandwidthSimulation {
    /// How the simulated sender and receiver behave.
    public struct Options: Sendable, Hashable {
        /// Video frames per second.
        public var frameRate = 30
        /// Largest RTP payload per packet, bytes.
        public var maximumPayloadSize = 1_200
        /// RTP header and header extension bytes added to every packet.
        public var headerSize = 20
        /// Pacing rate as a multiple of the target; 0 sends each frame's packets at once.
        public var pacingFactor = 2.5
        /// Time between feedback packets.
        public var feedbackInterval = Duration.milliseconds(50)
        /// One-way delay of the feedback path; nil for the forward path's delay.
        public var returnDelay: Duration?
        /// Time between report samples.
        public var sampleInterval = Duration.milliseconds(100)
        /// The estimator's minimum bitrate.
        public var minimumBitrate = 30_000

        /// Default options.
        public init() {}
    }

    /// The state of the run at one sample time, and what was sent since the last one.
    public struct Sample: Sendable, Hashable {
        /// Virtual time of the sample.
        public var time: Duration
        /// The estimator's target, bits per second.
        public var targetBitrate: Int
        /// The delay-based estimate, bits per second.
        public var delayBasedBitrate: Int
        /// The loss-based estimate, bits per second.
        public var lossBasedBitrate: Int
        /// The acknowledged bitrate, once measured.
        public var acknowledgedBitrate: Int?
        /// Bits per second handed to the link since the last sample.
        public var sentBitrate: Int
        /// Packets handed to the link since the last sample.
        public var packetsSent: Int
        /// Of those, lost or dropped by the link's queue.
        public var packetsLost: Int
    }

    /// What a run measured.
    public struct Report: Sendable, Hashable {
        /// The link it ran over.
        public var settings: ImpairmentSettings
        /// One sample per `sampleInterval`.
        public var samples: [Sample]
        /// The estimator's counters at the end.
        public var estimator: SendSideBandwidthEstimator.Statistics
        /// The feedback generator's counters at the end.
        public var generator: TransportFeedbackGenerator.Statistics
        /// The target at the end, bits per second.
        public var finalTargetBitrate: Int

        /// With a rate cap: the first sample time from which the target never again
        /// exceeds the cap by more than `tolerance` (a fraction); nil without a cap or if it
        /// never settles. AIMD probes a few per cent above the capacity before each
        /// back-off (that is how it finds it), so a tolerance of 0 would rarely settle.
        ///
        /// - Parameter tolerance: Allowed excess over the cap, 0.1 for 10 %.
        /// - Returns: The settle time, or nil.
        public func settleTime(tolerance: Double = 0.1) -> Duration? {
            guard let cap = settings.rateKbps else { return nil }
            let limit = Double(cap * 1_000) * (1 + tolerance)
            var settled: Duration?
            for sample in samples {
                if Double(sample.targetBitrate) > limit {
                    settled = nil
                } else if settled == nil {
                    settled = sample.time
                }
            }
            return settled
        }

        /// The first sample time the target reached 95 % of `maximum`, or nil.
        public func rampTime(to maximum: Int) -> Duration? {
            samples.first { Double($0.targetBitrate) >= 0.95 * Double(maximum) }?.time
        }

        /// Share of packets lost or queue-dropped among those sent at or after `time`.
        public func lossFraction(after time: Duration) -> Double {
            let later = samples.filter { $0.time > time }
            let sent = later.reduce(0) { $0 + $1.packetsSent }
            return sent == 0 ? 0 : Double(later.reduce(0) { $0 + $1.packetsLost }) / Double(sent)
        }

        /// Mean target of the samples after `time`, bits per second.
        public func meanTarget(after time: Duration) -> Int {
            let later = samples.filter { $0.time > time }
            return later.isEmpty ? 0 : later.reduce(0) { $0 + $1.targetBitrate } / later.count
        }

        /// Highest target among the samples after `time`, bits per second.
        public func peakTarget(after time: Duration) -> Int {
            samples.filter { $0.time > time }.map(\.targetBitrate).max() ?? 0
        }

        /// Lowest target among the samples after `time`, bits per second.
        public func lowestTarget(after time: Duration) -> Int {
            samples.filter { $0.time > time }.map(\.targetBitrate).min() ?? 0
        }

        /// Share of packets lost after `settleTime()` (or over the whole run without one).
        public var lossAfterSettling: Double { lossFraction(after: settleTime() ?? .zero) }
    }

    /// The options in force.
    public let options: Options
    /// The link settings in force.
    public let settings: ImpairmentSettings
    /// The estimator under test, as it is now.
    public private(set) var estimator: SendSideBandwidthEstimator
    /// The receiver's feedback generator, as it is now.
    public private(set) var generator: TransportFeedbackGenerator
    /// Virtual time reached.
    public private(set) var now = Duration.zero
    private(set) var samples: [Sample] = []

    private var forward: ImpairmentModel
    private var backward: ImpairmentModel
    private var toReceiver = DeliveryHeap<UInt16>()
    private var toSender = DeliveryHeap<[UInt8]>()
    private var pacerQueue: [Int] = []
    private var pacerHead = 0
    private var nextPacerSend = Duration.zero
    private var nextFrame = Duration.zero
    private var frameIndex = 0
    private var nextSample: Duration
    private var transportSequence: UInt16 = 0
    private var interval = (bits: 0, sent: 0, lost: 0)

    /// Sets up a run.
    ///
    /// - Parameters:
    ///   - settings: The forward link (loss, delay, rate cap, ...).
    ///   - startBitrate: The estimator's first target, bits per second.
    ///   - maxBitrate: The estimator's maximum, bits per second.
    ///   - options: Sender and receiver behaviour.
    /// - Throws: `ImpairmentError` for settings out of range.
    public init(
        settings: ImpairmentSettings, startBitrate: Int, maxBitrate: Int, options: Options = Options()
    ) throws(ImpairmentError) {
        self.settings = settings
        self.options = options
        forward = try ImpairmentModel(settings: settings)
        var back = ImpairmentSettings()
        back.delay = options.returnDelay ?? settings.delay
        back.seed = settings.seed &+ 1
        backward = try ImpairmentModel(settings: back)
        estimator = SendSideBandwidthEstimator(configuration: .init(
            startBitrate: startBitrate, minimumBitrate: options.minimumBitrate, maximumBitrate: maxBitrate
        ))
        var feedback = TransportFeedbackGenerator.Configuration(senderSSRC: 0x5EC0_0001, mediaSSRC: 0x5EC0_0002)
        feedback.interval = options.feedbackInterval
        generator = TransportFeedbackGenerator(configuration: feedback)
        nextSample = options.sampleInterval
    }

    /// Runs a whole simulation with synthetic frames of exactly target / frame rate.
    ///
    /// - Parameters:
    ///   - settings: The forward link.
    ///   - seconds: Virtual seconds to run.
    ///   - startBitrate: The first target, bits per second.
    ///   - maxBitrate: The maximum target, bits per second.
    ///   - options: Sender and receiver behaviour.
    /// - Returns: The samples and figures of the run.
    /// - Throws: `ImpairmentError` for settings out of range.
    public static func run(
        settings: ImpairmentSettings, seconds: Double, startBitrate: Int, maxBitrate: Int, options: Options = Options()
    ) throws(ImpairmentError) -> Report {
        var simulation = try BandwidthSimulation(settings: settings, startBitrate: startBitrate, maxBitrate: maxBitrate, options: options)
        let frameRate = options.frameRate
        simulation.run(for: .nanoseconds(Int64(seconds * 1e9))) { target, _ in target / 8 / frameRate }
        return simulation.report
    }

    /// The figures so far.
    public var report: Report {
        Report(
            settings: settings, samples: samples, estimator: estimator.statistics, generator: generator.statistics,
            finalTargetBitrate: estimator.targetBitrate
        )
    }

    /// Advances virtual time by `duration`, handling every event before its end.
    ///
    /// - Parameters:
    ///   - duration: How much longer to run.
    ///   - frameSize: Called once per frame with the current target (bits per second) and
    ///     the frame time; returns the encoded frame's size in bytes (0 for a dropped frame).
    /// - Throws: What `frameSize` throws.
    public mutating func run(for duration: Duration, frameSize: (_ targetBitrate: Int, _ time: Duration) throws -> Int) rethrows {
        let end = now + duration
        while true {
            var next = min(nextFrame, nextSample)
            if pacerHead < pacerQueue.count { next = min(next, nextPacerSend) }
            if let arrival = toReceiver.nextDue { next = min(next, arrival) }
            if let arrival = toSender.nextDue { next = min(next, arrival) }
            if let due = generator.nextFeedbackTime { next = min(next, due) }
            // Events at `end` belong to the next run, so runs of 1 s hold 30 frames each.
            guard next < end else { break }
            now = max(now, next)
            while let (sequence, arrival) = toReceiver.popDue(now: now) {
                generator.packetReceived(transportSequenceNumber: sequence, now: arrival)
            }
            for feedback in generator.feedback(now: now) {
                let bytes = RTCPPacket.serializedCompound([.transportFeedback(feedback)])
                if case .delivered(let at, _) = backward.process(size: bytes.count, now: now) { toSender.insert(bytes, due: at) }
            }
            while let (bytes, _) = toSender.popDue(now: now) {
                for packet in (try? RTCPPacket.parseCompound(bytes)) ?? [] { estimator.handle(packet, now: now) }
            }
            if now >= nextSample { takeSample() }
            if now >= nextFrame { try queueFrame(bytes: frameSize(estimator.targetBitrate, now)) }
            sendPaced()
        }
        now = end
    }

    private mutating func queueFrame(bytes: Int) {
        frameIndex += 1
        nextFrame = .nanoseconds(Int64(frameIndex) * 1_000_000_000 / Int64(max(1, options.frameRate)))
        guard bytes > 0 else { return }
        if pacerHead == pacerQueue.count {
            pacerQueue.removeAll(keepingCapacity: true)
            pacerHead = 0
            nextPacerSend = max(nextPacerSend, now)
        }
        let payload = max(1, options.maximumPayloadSize)
        let count = (bytes + payload - 1) / payload
        for index in 0..<count {
            // Even split, as the payloaders do: sizes differ by at most one byte.
            let size = bytes / count + (index < bytes % count ? 1 : 0)
            pacerQueue.append(size + options.headerSize)
        }
    }

    private mutating func sendPaced() {
        while pacerHead < pacerQueue.count, nextPacerSend <= now {
            let size = pacerQueue[pacerHead]
            pacerHead += 1
            let sequence = transportSequence
            transportSequence &+= 1
            estimator.packetSent(transportSequenceNumber: sequence, size: size, now: now)
            interval.bits += size * 8
            interval.sent += 1
            switch forward.process(size: size, now: now) {
            case .delivered(let at, let duplicateAt):
                toReceiver.insert(sequence, due: at)
                if let duplicateAt { toReceiver.insert(sequence, due: duplicateAt) }
            case .lost, .queueDropped:
                interval.lost += 1
            }
            let rate = options.pacingFactor * Double(estimator.targetBitrate)
            if rate > 0 { nextPacerSend = now + .nanoseconds(Int64(Double(size * 8) / rate * 1e9)) }
        }
    }

    private mutating func takeSample() {
        let seconds = options.sampleInterval / .seconds(1)
        samples.append(Sample(
            time: now, targetBitrate: estimator.targetBitrate, delayBasedBitrate: estimator.delayBasedBitrate,
            lossBasedBitrate: estimator.lossBasedBitrate, acknowledgedBitrate: estimator.acknowledgedBitrate,
            sentBitrate: Int(Double(interval.bits) / seconds), packetsSent: interval.sent, packetsLost: interval.lost
        ))
        interval = (0, 0, 0)
        nextSample += options.sampleInterval
    }
}
