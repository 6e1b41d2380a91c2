import MediaEngine

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Runs a whole Opus audio stream through an `ImpairmentModel` into an
/// `AudioJitterBuffer` on a virtual clock, and reports what a listener would get:
/// concealment, playout delay, FEC recoveries.
///
/// Pure and deterministic: a real encoder on a synthetic speech-like signal (talkspurts
/// of tones with pauses), a seeded network, no threads, sockets or sleeps; the same
/// options give the same report on every machine.
public enum AudioNetworkSimulation {
    /// What to simulate besides the network.
    public struct Options: Sendable, Hashable {
        /// Length of the stream.
        public var seconds: Double = 60
        /// Opus in-band FEC, planned for the network's loss rate.
        public var fec = false
        /// Discontinuous transmission in the encoder.
        public var dtx = false
        /// Whether every DTX packet (1-2 bytes) is sent. When false the sender sends only the
        /// first of each run, as WebRTC senders do, leaving timestamp gaps with consecutive
        /// sequence numbers.
        public var sendsEveryDTXPacket = true
        /// Encoder bitrate, bits per second.
        public var bitrate = 32_000
        /// Duration of each packet.
        public var packetDuration: Opus.FrameDuration = .ms20
        /// The signal encoded.
        public var signal = Signal.speechLike
        /// How much faster the sender's clock runs than the receiver's: 0.005 sends 0.5 %
        /// more audio per second than is played; negative is slower.
        public var senderClockSkew = 0.0
        /// Network changes during the run: from `at` on, packets see `settings`.
        public var networkChanges: [NetworkChange] = []
        /// The jitter buffer under test.
        public var jitterBuffer = AudioJitterBuffer.Configuration()

        /// The defaults: 60 s of speech-like audio at 32 kb/s in 20 ms packets, no FEC or
        /// DTX, no clock skew, a default jitter buffer.
        public init() {}
    }

    /// A change of network settings at a point of the run.
    public struct NetworkChange: Sendable, Hashable {
        /// Time from the start of the run.
        public var at: Duration
        /// The network from then on.
        public var settings: ImpairmentSettings

        /// Creates a change.
        public init(at: Duration, settings: ImpairmentSettings) {
            self.at = at
            self.settings = settings
        }
    }

    /// The signal the sender encodes.
    public enum Signal: Sendable, Hashable {
        /// Talkspurts of 0.8 to 2 s of tones at a syllable-like 4 Hz envelope, separated by
        /// 0.3 to 1 s of silence, from a fixed seed.
        case speechLike
        /// Continuous tones, never quiet.
        case tones
    }

    /// The state of the buffer at one point of the run.
    public struct TimelinePoint: Sendable, Hashable {
        /// Time from the start of the run.
        public var time: Duration
        /// The buffer's target delay.
        public var targetDelay: Duration
        /// The buffer's playout delay.
        public var currentDelay: Duration
        /// Packets held.
        public var packetsHeld: Int
        /// Statistics so far, for windowed figures.
        public var statistics: AudioJitterBuffer.Statistics
    }

    /// What the run gave.
    public struct Report: Sendable, Hashable {
        /// Pulls made; each produced one full frame (checked).
        public var framesPulled = 0
        /// Pulls that produced digital silence because playout had not started.
        public var framesBeforeStart = 0
        /// Packets the sender sent (DTX packets it skipped not included).
        public var packetsSent = 0
        /// Share of sent packets the network lost or dropped, %.
        public var networkLossPercent = 0.0
        /// Concealed samples as a share of samples played, %.
        public var concealmentPercent = 0.0
        /// Mean time a played sample waited in the buffer (W3C jitterBufferDelay per emitted sample).
        public var meanPlayoutDelay: Duration = .zero
        /// Mean target delay over played samples.
        public var meanTargetDelay: Duration = .zero
        /// Most packets the buffer held at once.
        public var maximumPacketsHeld = 0
        /// The buffer's final statistics.
        public var statistics = AudioJitterBuffer.Statistics()
        /// The buffer's state once a second.
        public var timeline: [TimelinePoint] = []
    }

    /// Runs `seconds` of speech-like audio (32 kb/s Opus, 20 ms packets) through
    /// `settings` into a jitter buffer with the default configuration.
    /// - Parameters:
    ///   - settings: the network, seeded.
    ///   - seconds: stream length, 0...86400.
    ///   - fec: Opus in-band FEC, planned for the network's loss rate.
    /// - Returns: concealment, playout delay and the buffer's statistics.
    /// - Throws: `ImpairmentError` for settings out of range.
    public static func run(settings: ImpairmentSettings, seconds: Double, fec: Bool) throws -> Report {
        var options = Options()
        options.seconds = seconds
        options.fec = fec
        return try run(settings: settings, options: options)
    }

    /// Runs the stream `options` describe through `settings` (and its changes).
    /// - Throws: `ImpairmentError` for network settings, a length outside 0...86400 s or a
    ///   clock skew outside -0.5...0.5; `CodecError` for encoder or buffer settings.
    public static func run(settings: ImpairmentSettings, options: Options) throws -> Report {
        guard options.seconds.isFinite, (0...86_400).contains(options.seconds) else {
            throw ImpairmentError("simulation length \(options.seconds) s is outside 0...86400")
        }
        guard options.senderClockSkew.isFinite, (-0.5...0.5).contains(options.senderClockSkew) else {
            throw ImpairmentError("sender clock skew \(options.senderClockSkew) is outside -0.5...0.5")
        }
        var encoderConfiguration = Opus.Configuration()
        encoderConfiguration.layout = options.jitterBuffer.layout
        encoderConfiguration.bitrate = options.bitrate
        encoderConfiguration.frameDuration = options.packetDuration
        encoderConfiguration.inbandFEC = options.fec
        encoderConfiguration.expectedPacketLossPercent = options.fec ? max(1, min(100, Int(settings.lossPercent.rounded()))) : 0
        encoderConfiguration.discontinuousTransmission = options.dtx
        let encoder = try Opus.Encoder(configuration: encoderConfiguration)
        try options.jitterBuffer.validate()
        var changes = options.networkChanges.sorted { $0.at < $1.at }[...]
        for change in changes { try change.settings.validate() }
        let path = try AudioSimulationPath(settings: settings, options: options)

        let channels = options.jitterBuffer.layout.count
        let packetSamples = options.packetDuration.samplesPerChannel()
        let frame = options.jitterBuffer.samplesPerFrame
        let frameDuration = AudioFrame.duration(samplesPerChannel: frame)
        let packetSeconds = Double(packetSamples) / Double(AudioFrame.sampleRate) / (1 + options.senderClockSkew)
        let pulls = Int((options.seconds * Double(AudioFrame.sampleRate) / Double(frame)).rounded())

        var source = SpeechLikeSignal(signal: options.signal, layout: options.jitterBuffer.layout)
        var pcm = [Int16](repeating: 0, count: packetSamples * channels)
        var packet = [UInt8](repeating: 0, count: Opus.maxPacketSize)
        var output = [Int16](repeating: 0, count: frame * channels)
        // The media clock; the stream's offset (near the top) makes it wrap during the run.
        var timestamp: UInt32 = 0
        var sent = 0
        var previousWasDTX = false
        var report = Report()

        for pull in 0..<pulls {
            let now = frameDuration * pull
            while let change = changes.first, change.at <= now {
                try path.link.change(.a, to: change.settings)
                changes.removeFirst()
            }
            // The sender encodes every packet due by now, each entering the network when made.
            while Duration.seconds(Double(sent) * packetSeconds) <= now {
                let sendTime = Duration.seconds(Double(sent) * packetSeconds)
                sent += 1
                pcm.withUnsafeMutableBufferPointer { source.fill($0) }
                let length = try pcm.withUnsafeBufferPointer { input in
                    try packet.withUnsafeMutableBytes { try encoder.encode(input, into: $0) }
                }
                defer {
                    timestamp &+= UInt32(packetSamples)
                    previousWasDTX = length <= 2
                }
                if length <= 2, previousWasDTX, !options.sendsEveryDTXPacket { continue }
                report.packetsSent += 1
                path.link.deliverEach(until: sendTime)
                packet.withUnsafeBytes {
                    _ = path.sender.sendAudio(path.sendStream, payload: UnsafeRawBufferPointer(rebasing: $0[0..<length]),
                                              mediaTimestamp: timestamp, now: sendTime)
                }
                path.link.flush(now: sendTime)
            }
            path.link.deliverEach(until: now)
            path.sender.handleTimeout(now: now)
            path.receiver.handleTimeout(now: now)
            path.link.flush(now: now)

            let result = output.withUnsafeMutableBufferPointer { path.receiver.pullAudio(path.receiveStream, now: now, into: $0) }
            if result?.samplesPerChannel == frame { report.framesPulled += 1 }
            if result?.sources.contains(.silence) == true { report.framesBeforeStart += 1 }
            if (pull + 1) % max(1, AudioFrame.sampleRate / frame) == 0, let buffer = path.buffer {
                report.timeline.append(TimelinePoint(time: now + frameDuration, targetDelay: buffer.targetDelay,
                                                     currentDelay: buffer.currentDelay, packetsHeld: buffer.packetsHeld,
                                                     statistics: buffer.statistics))
            }
        }

        guard let buffer = path.buffer else { return report }
        let statistics = buffer.statistics
        report.statistics = statistics
        report.maximumPacketsHeld = buffer.maximumPacketsHeld
        let lost = report.packetsSent - statistics.packetsReceived
        report.networkLossPercent = report.packetsSent == 0 ? 0 : Double(lost) * 100 / Double(report.packetsSent)
        report.concealmentPercent = statistics.concealmentRatio * 100
        report.meanPlayoutDelay = .seconds(statistics.meanPlayoutDelay)
        report.meanTargetDelay = .seconds(statistics.meanTargetDelay)
        return report
    }
}

/// The audio simulation's two media cores (the sender's and the receiver's, SRTP both
/// ways) and the virtual link between them; the return path is clean.
private final class AudioSimulationPath {
    static let keying = try! SRTPKeyingMaterial(profile: .aesCM128HMACSHA1_80, bytes: (0..<30).map { UInt8(truncatingIfNeeded: $0 &* 11 &+ 5) })

    let sender: MediaCore
    let receiver: MediaCore
    var link: VirtualLink
    let sendStream: SendStreamID
    let receiveStream: ReceiveStreamID

    init(settings: ImpairmentSettings, options: AudioNetworkSimulation.Options) throws {
        var sending = MediaCore.Configuration()
        sending.outboundKeying = Self.keying
        sending.inboundKeying = Self.keying
        sending.rtcpSSRC = 0xA0D1_0001
        sending.seed = 0xA0D1_0002
        sending.ntpEpoch = NTPTime.from(seconds: 1_700_000_000, nanoseconds: 0)
        var receiving = sending
        receiving.rtcpSSRC = 0xA0D1_0003
        receiving.seed = 0xA0D1_0004
        sender = try MediaCore(configuration: sending)
        receiver = try MediaCore(configuration: receiving)
        var back = ImpairmentSettings()
        back.delay = settings.delay
        link = try VirtualLink(a: sender, b: receiver, forward: settings, backward: back)
        var stream = SendStreamConfiguration.opus(ssrc: 0xA0D1_0005)
        // Odd starting points, so sequence numbers and timestamps wrap during the run.
        stream.firstSequenceNumber = 65_000
        stream.timestampOffset = 4_294_000_000
        sendStream = try sender.addSendStream(stream)
        var incoming = ReceiveStreamConfiguration.opus(ssrc: 0xA0D1_0005)
        incoming.layout = options.jitterBuffer.layout
        incoming.jitterBuffer = options.jitterBuffer
        receiveStream = try receiver.addReceiveStream(incoming)
        sender.selectPath(link.addressB, pinned: true, now: .zero)
        receiver.selectPath(link.addressA, pinned: true, now: .zero)
    }

    /// The receiver's jitter buffer.
    var buffer: AudioJitterBuffer? { receiver.jitterBuffer(of: receiveStream) }
}

/// The simulation's sender signal: talkspurts of tones and pauses, deterministic.
struct SpeechLikeSignal {
    private static let frequencies: [Double] = [180, 360, 540, 730, 1_130, 2_250]
    private let signal: AudioNetworkSimulation.Signal
    private let channels: Int
    private var tones: ToneGenerator
    private var random = SeededRandom(seed: 0x5EED_A0D1)
    private var talking = true
    private var remaining = 0
    private var position = 0

    init(signal: AudioNetworkSimulation.Signal, layout: ChannelLayout) {
        self.signal = signal
        channels = layout.count
        tones = ToneGenerator(.multiTone(Self.frequencies), layout: layout, amplitude: 0.5)
        remaining = 48_000
    }

    /// Fills `buffer` (interleaved) with the next samples.
    mutating func fill(_ buffer: UnsafeMutableBufferPointer<Int16>) {
        tones.fill(buffer)
        guard signal == .speechLike else { return }
        let instants = buffer.count / channels
        for instant in 0..<instants {
            if remaining == 0 {
                talking.toggle()
                let seconds = talking ? 0.8 + 1.2 * random.unit() : 0.3 + 0.7 * random.unit()
                remaining = Int(seconds * 48_000)
                position = 0
            }
            remaining -= 1
            position += 1
            var gain = 0.0
            if talking {
                // A 4 Hz syllable envelope between 30 % and 100 %, with 10 ms ramps at the ends.
                let syllable = 0.65 + 0.35 * sin(2 * Double.pi * 4 * Double(position) / 48_000)
                let edge = min(1, Double(min(position, remaining)) / 480)
                gain = syllable * edge
            }
            for channel in 0..<channels {
                let index = instant * channels + channel
                buffer[index] = Int16((Double(buffer[index]) * gain).rounded())
            }
        }
    }
}
