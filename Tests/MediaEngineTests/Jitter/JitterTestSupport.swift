@testable import MediaEngine

/// Opus packets of a 2-tone signal, and the audio a fresh decoder makes of them in order.
struct OpusStream {
    let packets: [[UInt8]]
    let packetSamples: Int
    let layout: ChannelLayout

    init(packets count: Int, duration: Opus.FrameDuration = .ms20, layout: ChannelLayout = .mono, fec: Bool = false,
         application: Opus.Application = .voip, bitrate: Int = 32_000) throws {
        var configuration = Opus.Configuration()
        configuration.bitrate = bitrate
        configuration.frameDuration = duration
        configuration.layout = layout
        configuration.inbandFEC = fec
        configuration.expectedPacketLossPercent = fec ? 10 : 0
        configuration.application = application
        let encoder = try Opus.Encoder(configuration: configuration)
        var tones = ToneGenerator(.multiTone([330, 1_210]), layout: layout, amplitude: 0.4)
        var packets: [[UInt8]] = []
        for _ in 0..<count {
            packets.append(try encoder.encode(tones.nextFrame(samplesPerChannel: configuration.samplesPerFrame)))
        }
        self.packets = packets
        packetSamples = configuration.samplesPerFrame
        self.layout = layout
    }

    /// What a decoder makes of every packet in order: the output a perfect buffer plays.
    func reference() throws -> [Int16] {
        let decoder = try Opus.Decoder(layout: layout)
        return try packets.flatMap { try decoder.decode($0).samples }
    }
}

/// Drives a buffer on a virtual clock: deliveries at given times, a pull every frame.
struct JitterDriver {
    let buffer: AudioJitterBuffer
    private(set) var output: [Int16] = []
    private(set) var results: [AudioJitterBuffer.PullResult] = []
    private(set) var outcomes: [AudioJitterBuffer.InsertOutcome] = []
    /// Most packets held after any insert or pull.
    private(set) var mostHeld = 0
    private var pending: [(arrival: Duration, sequenceNumber: UInt16, timestamp: UInt32, payload: [UInt8])] = []
    private(set) var now: Duration = .zero

    init(_ configuration: AudioJitterBuffer.Configuration) throws {
        buffer = try AudioJitterBuffer(configuration: configuration)
    }

    /// Schedules a packet to arrive at `arrival`.
    mutating func deliver(_ payload: [UInt8], sequenceNumber: UInt16, timestamp: UInt32, at arrival: Duration) {
        pending.append((arrival, sequenceNumber, timestamp, payload))
    }

    /// Pulls `count` frames, delivering every packet due before each pull.
    mutating func pull(_ count: Int) {
        let frame = buffer.configuration.samplesPerFrame
        let step = AudioFrame.duration(samplesPerChannel: frame)
        var pcm = [Int16](repeating: 0, count: frame * buffer.configuration.layout.count)
        for _ in 0..<count {
            pending.sort { $0.arrival < $1.arrival }
            while let next = pending.first, next.arrival <= now {
                pending.removeFirst()
                let outcome = next.payload.withUnsafeBytes {
                    buffer.insert(sequenceNumber: next.sequenceNumber, timestamp: next.timestamp, payload: $0,
                                  arrival: next.arrival)
                }
                outcomes.append(outcome)
                mostHeld = max(mostHeld, buffer.packetsHeld)
            }
            let result = pcm.withUnsafeMutableBufferPointer { buffer.pull(now: now, into: $0) }
            results.append(result)
            output += pcm
            mostHeld = max(mostHeld, buffer.packetsHeld)
            now += step
        }
    }

    /// Pulls that concealed while the stream was still going (before the last decoded
    /// frame); concealment after the last packet is expected.
    var concealedWhilePlaying: Int {
        guard let last = results.lastIndex(where: { $0.sources.contains(.decoded) }) else { return 0 }
        return results[...last].filter { $0.sources.contains(.concealed) }.count
    }

    /// Pulls that played digital silence before the stream started.
    var silentStart: Int { results.prefix { $0.sources == .silence }.count }
}

/// A buffer configuration with the target pinned, so playout has no reason to stretch.
func pinnedConfiguration(_ delay: Duration = .milliseconds(80), layout: ChannelLayout = .mono) -> AudioJitterBuffer.Configuration {
    var configuration = AudioJitterBuffer.Configuration()
    configuration.layout = layout
    configuration.minimumTargetDelay = delay
    configuration.maximumTargetDelay = delay
    configuration.initialTargetDelay = delay
    return configuration
}

/// Where two sample sequences first differ (a length mismatch counts), or nil when equal.
/// Keeps failure messages short where `#expect(a == b)` would print megabytes.
func firstDifference(_ played: [Int16], _ reference: [Int16]) -> Int? {
    if let index = (0..<min(played.count, reference.count)).first(where: { played[$0] != reference[$0] }) { return index }
    return played.count == reference.count ? nil : min(played.count, reference.count)
}

extension Duration {
    /// Milliseconds as a Double, for messages and comparisons.
    var inMilliseconds: Double { self / .milliseconds(1) }
}
