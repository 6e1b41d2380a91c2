import MediaEngine

extension VideoNetworkSimulation {
    /// What to simulate.
    public struct Settings: Sendable, Hashable {
        /// The media direction (sender to receiver): RTP, including retransmissions.
        public var forward: ImpairmentSettings
        /// The feedback direction (receiver to sender): NACK, PLI, FIR.
        public var backward: ImpairmentSettings
        /// How long the sender sends.
        public var duration: Duration = .seconds(10)
        /// Time after the last frame for recovery to finish before the run ends.
        public var drainTime: Duration = .seconds(1)
        /// Target video bitrate, bits per second.
        public var bitrate = 600_000
        /// Picture width (even).
        public var width = 320
        /// Picture height (even).
        public var height = 240
        /// Frames per second.
        public var frameRate = 30
        /// Windows during which both directions lose every packet.
        public var outages: [Range<Duration>] = []
        /// Protect RTP with SRTP (fixed test key), so retransmissions are the identical
        /// protected packets and pass the receiver's replay check.
        public var protectsWithSRTP = true
        /// A gap between decoded frames longer than this is a freeze.
        public var freezeThreshold: Duration = .milliseconds(200)
        /// Largest RTP payload the sender's payloader writes (kept within 8...1400).
        public var maximumPayloadSize = 1_200
        /// The receiver's settings.
        public var receiver = VideoReceiveStream.Configuration()
        /// The sender's feedback settings.
        public var sender = VideoFeedbackResponder.Configuration()

        /// Settings with the given links and defaults otherwise.
        public init(forward: ImpairmentSettings, backward: ImpairmentSettings) {
            self.forward = forward
            self.backward = backward
        }

        /// The RTT both ends assume until they measure one: the two links' delays (never below 1 ms).
        public var roundTripTime: Duration { max(forward.delay + backward.delay, .milliseconds(1)) }
    }

    /// What happened in one run. Counts are of the whole run, drain included.
    public struct Report: Sendable, Hashable, CustomStringConvertible {
        /// Frames the sender encoded and sent.
        public var framesSent = 0
        /// Keyframes among them.
        public var keyframesSent = 0
        /// Original RTP packets sent (retransmissions not included).
        public var packetsSent = 0
        /// Original packets that never arrived (random loss, queue drops, outages).
        public var packetsLost = 0
        /// Lost originals whose retransmission arrived while their frame was still awaited.
        public var packetsRecovered = 0
        /// Retransmissions the sender sent.
        public var retransmissionsSent = 0
        /// NACK packets the receiver sent.
        public var nacksSent = 0
        /// PLIs the receiver sent.
        public var pliSent = 0
        /// FIRs the receiver sent.
        public var firSent = 0
        /// Frames decoded.
        public var framesDecoded = 0
        /// Keyframes among them.
        public var keyframesDecoded = 0
        /// Frames the decoder refused or flagged corrupt.
        public var decodeErrors = 0
        /// Decoded delta frames that did not directly follow the previous decoded frame
        /// (PictureID or sequence number gap): must be 0.
        public var referenceGaps = 0
        /// Gaps between decoded frames longer than the freeze threshold, counting the start
        /// (first capture to first decode) and the end (last decode to end of sending).
        public var freezeCount = 0
        /// The longest such gap.
        public var longestGap: Duration = .zero
        /// Per outage: from its end to the first frame decoded after it; nil if none was.
        public var recoveryTimes: [Duration?] = []
        /// Median capture-to-decode delay.
        public var medianFrameDelay: Duration = .zero
        /// 95th percentile capture-to-decode delay.
        public var frameDelay95: Duration = .zero
        /// Retransmitted copies the receiver's SRTP refused as replays (the original had arrived).
        public var replaysRefused = 0
        /// The receive stream's counters at the end.
        public var receiver = VideoReceiveStream.Statistics()
        /// The sender's packet store counters at the end.
        public var history = RetransmissionHistory.Statistics()

        /// Keyframes the receiver asked for (PLI and FIR).
        public var keyframesRequested: Int { pliSent + firSent }

        /// Lost packets recovered in time, as a share of lost packets (1 when none were lost).
        public var recoveredRatio: Double {
            packetsLost == 0 ? 1 : Double(packetsRecovered) / Double(packetsLost)
        }

        /// A few lines for people.
        public var description: String {
            let recovery = recoveryTimes.map { $0.map { "\(Int($0 / .milliseconds(1))) ms" } ?? "never" }
            return """
                frames sent \(framesSent) (\(keyframesSent) key), decoded \(framesDecoded) (\(keyframesDecoded) key), \
                decode errors \(decodeErrors), reference gaps \(referenceGaps)
                packets sent \(packetsSent), lost \(packetsLost), recovered \(packetsRecovered) \
                (\(Int((recoveredRatio * 1000).rounded()) / 10) %), retransmissions \(retransmissionsSent), NACKs \(nacksSent)
                keyframes requested \(keyframesRequested) (PLI \(pliSent), FIR \(firSent)), freezes \(freezeCount), \
                longest gap \(Int(longestGap / .milliseconds(1))) ms, frame delay median \
                \(Int(medianFrameDelay / .milliseconds(1))) ms, p95 \(Int(frameDelay95 / .milliseconds(1))) ms
                recovery after outages: \(recovery.isEmpty ? "none" : recovery.joined(separator: ", "))
                """
        }
    }
}
