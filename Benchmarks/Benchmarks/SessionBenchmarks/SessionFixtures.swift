import BenchmarkSupport
import MediaEngine

/// Two media cores back to back on one thread, keyed as a call (each protects with its
/// own key): what one queues is handed straight to the other, no socket in between.
/// Virtual time moves only when the fixture says so.
final class CorePair {
    static let keyA = try! SRTPKeyingMaterial(profile: .aesCM128HMACSHA1_80, bytes: pseudoRandomBytes(count: 30, seed: 0xA1))
    static let keyB = try! SRTPKeyingMaterial(profile: .aesCM128HMACSHA1_80, bytes: pseudoRandomBytes(count: 30, seed: 0xB2))
    static let addressA = SocketAddress(addressBytes: [198, 51, 100, 1], port: 5_000)!
    static let addressB = SocketAddress(addressBytes: [198, 51, 100, 2], port: 5_000)!

    let sender: MediaCore
    let receiver: MediaCore
    var now: Duration = .zero
    /// Where an arriving datagram is copied (the receive buffer a socket would fill).
    let arrival = UnsafeMutableRawBufferPointer.allocate(byteCount: 2_048, alignment: 16)
    /// Bytes and packets the sender put on the wire.
    private(set) var packetsCarried = 0
    private(set) var bytesCarried = 0

    init() throws {
        var a = MediaCore.Configuration()
        a.outboundKeying = Self.keyA
        a.inboundKeying = Self.keyB
        a.rtcpSSRC = 0xA0
        a.seed = 1
        var b = a
        b.outboundKeying = Self.keyB
        b.inboundKeying = Self.keyA
        b.rtcpSSRC = 0xB0
        b.seed = 2
        sender = try MediaCore(configuration: a)
        receiver = try MediaCore(configuration: b)
        sender.selectPath(Self.addressB, pinned: true, now: .zero)
        receiver.selectPath(Self.addressA, pinned: true, now: .zero)
    }

    deinit { arrival.deallocate() }

    /// Hands one queued datagram of `from` to the other core; false when none waits.
    @inline(__always)
    func carryOne(from: MediaCore) -> Bool {
        guard let transmit = from.pollTransmit() else { return false }
        let count = transmit.bytes.count
        UnsafeMutableRawBufferPointer(rebasing: arrival[0..<count]).copyMemory(from: transmit.bytes)
        let to = from === sender ? receiver : sender
        to.handleDatagram(UnsafeMutableRawBufferPointer(rebasing: arrival[0..<count]), from: from === sender ? Self.addressA : Self.addressB,
                          now: now)
        if from === sender, transmit.kind == .rtp {
            packetsCarried += 1
            bytesCarried += count
        }
        return true
    }

    /// Hands everything queued either way across.
    @inline(__always)
    func carryAll() {
        while carryOne(from: sender) || carryOne(from: receiver) {}
    }
}

/// The audio path per packet: an Opus packet into the sending core (RTP header and
/// extensions, SRTP, transmit queue), out and into the receiving core (demux, SRTP,
/// parse, reception statistics, transport-wide sequence, jitter buffer insert). No
/// decoding: nothing is pulled. After each sample the receive stream is replaced, so
/// its jitter buffer never fills (outside the measured window).
final class CoreAudioPath {
    let pair: CorePair
    private let sendStream: SendStreamID
    private var receiveStream: ReceiveStreamID
    private let packets: PacketSequence
    private var index = 0
    private static let ssrc: UInt32 = 0x0A0D_10

    init() throws {
        pair = try CorePair()
        sendStream = try pair.sender.addSendStream(.opus(ssrc: Self.ssrc))
        receiveStream = try pair.receiver.addReceiveStream(Self.receiving)
        // One second of a 440 Hz tone at 32 kb/s, encoded once.
        let encoder = try Opus.Encoder(configuration: Opus.Configuration())
        var tone = ToneGenerator(.sine(440))
        packets = PacketSequence(try (0..<50).map { _ in try encoder.encode(tone.nextFrame()) })
        // The first packet's sender report, and the binding, happen before measuring.
        sendNext()
        pair.carryAll()
    }

    private static var receiving: ReceiveStreamConfiguration {
        var stream = ReceiveStreamConfiguration.opus(ssrc: ssrc)
        stream.jitterBuffer.maximumPackets = 4_096
        return stream
    }

    /// One packet, sender to receiver.
    @inline(__always)
    func sendNext() {
        let payload = packets[index % packets.count]
        _ = pair.sender.sendAudio(sendStream, payload: payload, mediaTimestamp: UInt32(truncatingIfNeeded: index * 960),
                                  audioLevel: AudioLevel(level: 30, voiceActivity: true), now: pair.now)
        _ = pair.carryOne(from: pair.sender)
        index += 1
        pair.now += .milliseconds(20)
    }

    /// Replaces the receive stream (an empty jitter buffer), outside the measured window.
    func afterSample() throws {
        pair.receiver.removeReceiveStream(receiveStream)
        receiveStream = try pair.receiver.addReceiveStream(Self.receiving)
        pair.carryAll()
    }

    /// Packets the receiver took into its jitter buffer so far.
    var packetsReceived: Int { pair.receiver.statistics(of: receiveStream)?.packetsReceived ?? 0 }
}

/// The video path per packet: 640x480 VP8 at 1 Mb/s, encoded once (30 frames, one
/// keyframe). When the previous frame's packets are all across, the next frame goes into
/// the sending core (payloader, RTP, SRTP, retransmission history, bandwidth estimator)
/// and both cores run their timers (receiver reports, transport-wide feedback, which
/// cross back and are parsed and acted on); each iteration then hands one packet to the
/// receiving core (SRTP, demux, frame assembly, NACK bookkeeping), whose complete
/// frames are taken as events and dropped (no decoding).
final class CoreVideoPath {
    let pair: CorePair
    private let sendStream: SendStreamID
    private let receiveStream: ReceiveStreamID
    private var frames: [(bytes: [UInt8], isKeyframe: Bool)] = []
    private var index = 0
    private static let ssrc: UInt32 = 0x0B1D_E0
    /// Whether the cores run their timers (reports and transport-wide feedback) each frame.
    private let feedback: Bool

    init(feedback: Bool = true) throws {
        self.feedback = feedback
        pair = try CorePair()
        sendStream = try pair.sender.addSendStream(.vp8(ssrc: Self.ssrc))
        receiveStream = try pair.receiver.addReceiveStream(.vp8(ssrc: Self.ssrc))
        var settings = VP8.Configuration(width: 640, height: 480, bitrate: 1_000_000)
        settings.keyframeInterval = 30
        let encoder = try VP8.Encoder(configuration: settings)
        var pattern = TestPattern(width: 640, height: 480)
        for _ in 0..<30 {
            if let frame = try encoder.encode(pattern.nextFrame()) { frames.append((frame.data, frame.isKeyframe)) }
        }
        guard !frames.isEmpty else { throw BenchmarkFailure("video: the encoder produced no frame") }
        for _ in 0..<frames.count { sendNext() }
    }

    /// One packet, sender to receiver; a new frame (and the timers) when none is waiting.
    @inline(__always)
    func sendNext() {
        if !pair.carryOne(from: pair.sender) {
            let frame = frames[index % frames.count]
            frame.bytes.withUnsafeBytes {
                _ = pair.sender.sendVideo(sendStream, frame: $0, mediaTimestamp: UInt32(truncatingIfNeeded: index * 3_000),
                                          isKeyframe: frame.isKeyframe, now: pair.now)
            }
            index += 1
            pair.now += .microseconds(33_333)
            if feedback {
                pair.sender.handleTimeout(now: pair.now)
                pair.receiver.handleTimeout(now: pair.now)
                while pair.carryOne(from: pair.receiver) {}
            }
            _ = pair.carryOne(from: pair.sender)
        }
        while pair.receiver.pollEvent() != nil {}
    }

    /// Frames the receiver completed so far.
    var framesAssembled: Int { pair.receiver.videoState(of: receiveStream)?.statistics.framesAssembled ?? 0 }
}
