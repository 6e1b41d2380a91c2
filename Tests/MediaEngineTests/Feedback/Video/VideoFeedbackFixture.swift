import Testing
@testable import MediaEngine

/// Real VP8 frames and RTP packets for the video feedback tests, and a driver that runs a
/// `VideoReceiveStream` on a manual clock.
enum VideoFeedbackFixture {
    /// One RTP packet as a sender built it.
    struct Packet {
        var bytes: [UInt8]
        /// Index of the frame it belongs to.
        var frame: Int
        var sequenceNumber: UInt16
    }

    /// `count` frames of a 160x120 test pattern; keyframes at the indices in `keyframesAt`
    /// (the first frame always is one).
    static func frames(_ count: Int, keyframesAt: Set<Int> = [0]) throws -> [VP8.EncodedFrame] {
        var configuration = VP8.Configuration(width: 160, height: 120, bitrate: 300_000)
        configuration.keyframeInterval = 100_000
        let encoder = try VP8.Encoder(configuration: configuration)
        var pattern = TestPattern(width: 160, height: 120, frameRate: 30)
        var frames: [VP8.EncodedFrame] = []
        for index in 0..<count {
            let picture = pattern.nextFrame()
            guard let frame = try encoder.encode(picture, forceKeyframe: keyframesAt.contains(index)) else { continue }
            frames.append(frame)
        }
        return frames
    }

    /// The RTP packets of `frames` (payloads of at most `maximumPayloadSize` bytes, so
    /// every frame spans several packets), numbered from `firstSequence` (near the wrap by
    /// default), timestamps `timestampStep` apart.
    static func packets(_ frames: [VP8.EncodedFrame], ssrc: UInt32 = 0x1111_2222, firstSequence: UInt16 = 65_530,
                        firstTimestamp: UInt32 = 1_000, timestampStep: UInt32 = 3_000,
                        maximumPayloadSize: Int = 300) throws -> [Packet] {
        var payloader = VP8Payloader(maximumPayloadSize: maximumPayloadSize)
        var packets: [Packet] = []
        var sequence = firstSequence
        for (index, frame) in frames.enumerated() {
            let timestamp = firstTimestamp &+ UInt32(index) &* timestampStep
            for fragment in payloader.fragments(frameSize: frame.data.count) {
                var payload = [UInt8](repeating: 0, count: fragment.payloadSize)
                _ = try frame.data.withUnsafeBytes { source in
                    try payload.withUnsafeMutableBytes { try VP8Payloader.write(fragment, of: source, into: $0) }
                }
                let header = RTPHeader(marker: fragment.isLast, payloadType: 96, sequenceNumber: sequence, timestamp: timestamp,
                                       ssrc: ssrc)
                packets.append(Packet(bytes: try RTPPacket(header: header, payload: payload).serialized(), frame: index,
                                      sequenceNumber: sequence))
                sequence &+= 1
            }
        }
        return packets
    }

    /// A padding-only RTP packet (no payload).
    static func padding(sequenceNumber: UInt16, timestamp: UInt32, ssrc: UInt32 = 0x1111_2222) throws -> [UInt8] {
        try RTPPacket(header: RTPHeader(payloadType: 96, sequenceNumber: sequenceNumber, timestamp: timestamp, ssrc: ssrc),
                      payload: []).serialized()
    }
}

/// Runs a `VideoReceiveStream` on a manual clock and collects what it asks for.
struct VideoStreamDriver {
    var stream: VideoReceiveStream
    var now: Duration = .zero
    var frames: [VideoReceiveStream.Frame] = []
    var nacks: [[UInt16]] = []
    var pliCount = 0
    var firNumbers: [UInt8] = []

    init(configuration: VideoReceiveStream.Configuration = VideoReceiveStream.Configuration(), rtt: Duration = .milliseconds(100)) {
        stream = VideoReceiveStream(configuration: configuration)
        stream.roundTripTime = rtt
    }

    /// Every sequence number NACKed so far, in order.
    var nackedSequenceNumbers: [UInt16] { nacks.flatMap { $0 } }

    /// Inserts one packet at the current time and processes.
    @discardableResult
    mutating func insert(_ bytes: [UInt8]) throws -> VideoReceiveStream.InsertResult {
        let result = try bytes.withUnsafeBytes { buffer in
            stream.insert(try RTPPacketView(buffer), arrival: now)
        }
        process()
        return result
    }

    /// Moves the clock forward in `step`s to `time`, processing at each step.
    mutating func advance(to time: Duration, step: Duration = .milliseconds(5)) {
        while now < time {
            now = min(now + step, time)
            process()
        }
    }

    mutating func process() {
        for action in stream.process(now: now) {
            switch action {
            case .decode(let frame): frames.append(frame)
            case .sendNACK(let numbers): nacks.append(numbers)
            case .sendPLI: pliCount += 1
            case .sendFIR(let number): firNumbers.append(number)
            }
        }
    }

    /// Decodes the collected frames in order.
    /// - Returns: how many decoded without error.
    func decodeAll() throws -> Int {
        let decoder = try VP8.Decoder()
        var picture = VideoFrame(width: 2, height: 2)
        var decoded = 0
        for frame in frames {
            if (try? frame.data.withUnsafeBytes({ try decoder.decode($0, into: &picture) })) == true { decoded += 1 }
        }
        return decoded
    }

    /// Whether every delta frame directly follows the frame before it.
    var deltaFramesFollowTheirReferences: Bool {
        zip(frames, frames.dropFirst()).allSatisfy { previous, frame in
            frame.isKeyframe || frame.firstSequenceNumber == previous.lastSequenceNumber &+ 1
        } && (frames.first?.isKeyframe ?? true)
    }
}
