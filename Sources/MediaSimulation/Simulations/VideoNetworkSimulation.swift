import MediaEngine

/// A deterministic end-to-end run of the video loss-recovery path in virtual time, over
/// the engine's own media core: a `TestPattern` encoded by `VP8.Encoder` goes into a
/// sending `MediaCore` (payloader, SRTP, retransmission history), crosses an
/// `ImpairmentModel` each way (`VirtualLink`), and a receiving `MediaCore` assembles it,
/// asks for lost packets and keyframes (NACK, PLI, FIR as SRTCP) and releases frames to
/// `VP8.Decoder`. The cores exchange reports and measure their RTT as in a real session.
///
/// No threads, sockets or sleeps: the same settings give the same report on every machine.
/// Both cores start from the configured links' delays as their RTT estimate.
public enum VideoNetworkSimulation {
    /// Runs `seconds` of video at `bitrate` through the given links, with defaults otherwise.
    ///
    /// - Throws: `ImpairmentError` for bad link settings, `CodecError` for a bad picture size
    ///   or bitrate.
    public static func run(forward: ImpairmentSettings, backward: ImpairmentSettings, seconds: Double,
                           bitrate: Int) throws -> Report {
        var settings = Settings(forward: forward, backward: backward)
        settings.duration = .seconds(seconds)
        settings.bitrate = bitrate
        return try run(settings)
    }

    /// Runs one simulation.
    ///
    /// - Throws: `ImpairmentError` for bad link settings, `CodecError` for a bad picture
    ///   size, rate or bitrate, `SRTPError` if SRTP cannot start.
    public static func run(_ settings: Settings) throws -> Report {
        let run = try VideoSimulationRun(settings)
        try run.run()
        return run.report()
    }
}

/// One simulation's state: the encoder and decoder at the two ends of a virtual link
/// between two media cores, and the measurements.
private final class VideoSimulationRun {
    private static let senderSSRC: UInt32 = 0x5EED_0001
    private static let firstSequenceNumber: UInt16 = 65_500  // wraps early in every run
    private static let timestampOffset: UInt32 = 0xFFFF_0000
    private static let keying = try! SRTPKeyingMaterial(profile: .aesCM128HMACSHA1_80, bytes: (0..<30).map { UInt8($0 &* 7 &+ 3) })

    let settings: Settings
    private var now: Duration = .zero
    private var link: VirtualLink
    /// The link's two cores, held apart from it: the link's callbacks use them while the
    /// link itself is being mutated.
    private let sender: MediaCore
    private let receiver: MediaCore
    private let sendStream: SendStreamID
    private let receiveStream: ReceiveStreamID

    // Sender.
    private var pattern: TestPattern
    private var picture: VideoFrame
    private let encoder: VP8.Encoder
    private var encoded: [UInt8]

    // Receiver.
    private let decoder: VP8.Decoder
    private var decoded = VideoFrame(width: 2, height: 2)

    // Measurements.
    private var result = Report()
    private var lostOriginals = Set<UInt16>()
    private var decodeTimes: [Duration] = []
    private var frameDelays: [Duration] = []
    private var lastDecoded: VideoReceiveStream.Frame?

    typealias Settings = VideoNetworkSimulation.Settings
    typealias Report = VideoNetworkSimulation.Report

    init(_ settings: Settings) throws {
        self.settings = settings
        guard settings.frameRate >= 1 else { throw CodecError(.invalidConfiguration, "vp8: frame rate \(settings.frameRate) is below 1") }
        var configuration = VP8.Configuration(width: settings.width, height: settings.height, bitrate: settings.bitrate)
        configuration.frameRate = settings.frameRate
        configuration.keyframeInterval = 1_000_000  // keyframes only when asked for, to test exactly that
        encoder = try VP8.Encoder(configuration: configuration)
        encoded = [UInt8](repeating: 0, count: encoder.maximumFrameSize)
        pattern = TestPattern(width: settings.width, height: settings.height, frameRate: settings.frameRate)
        picture = VideoFrame(width: settings.width, height: settings.height)
        decoder = try VP8.Decoder()

        var sending = MediaCore.Configuration()
        sending.outboundKeying = settings.protectsWithSRTP ? Self.keying : nil
        sending.inboundKeying = sending.outboundKeying
        sending.rtcpSSRC = 0x5EED_0003
        sending.initialRoundTripTime = settings.roundTripTime
        sending.seed = 0x5EED_0004
        sending.ntpEpoch = NTPTime.from(seconds: 1_700_000_000, nanoseconds: 0)
        sending.bandwidth = SendSideBandwidthEstimator.Configuration(startBitrate: settings.bitrate, minimumBitrate: settings.bitrate,
                                                                     maximumBitrate: settings.bitrate)
        var receiving = sending
        receiving.rtcpSSRC = 0x5EED_0002
        receiving.seed = 0x5EED_0005
        receiving.ntpEpoch = NTPTime.from(seconds: 1_700_000_500, nanoseconds: 0)
        sender = try MediaCore(configuration: sending)
        receiver = try MediaCore(configuration: receiving)
        link = try VirtualLink(a: sender, b: receiver, forward: settings.forward, backward: settings.backward)
        link.outages = settings.outages
        var stream = SendStreamConfiguration.vp8(ssrc: Self.senderSSRC)
        stream.firstSequenceNumber = Self.firstSequenceNumber
        stream.timestampOffset = Self.timestampOffset
        stream.maximumPayloadSize = min(max(8, settings.maximumPayloadSize), 1_400)
        stream.feedback = settings.sender
        sendStream = try sender.addSendStream(stream)
        var incoming = ReceiveStreamConfiguration.vp8(ssrc: Self.senderSSRC)
        incoming.video = settings.receiver
        receiveStream = try receiver.addReceiveStream(incoming)
        sender.selectPath(link.addressB, pinned: true, now: .zero)
        receiver.selectPath(link.addressA, pinned: true, now: .zero)
        link.observer = { [unowned self] sent in observe(sent) }
        link.delivery = { [unowned self] side, kind, bytes, handOver in deliver(to: side, kind: kind, bytes: bytes, handOver) }
    }

    func run() throws {
        let frameInterval = Duration.seconds(1) / settings.frameRate
        let end = settings.duration + settings.drainTime
        let never = end + .seconds(1)
        var frameIndex = 0
        var previous = Duration.zero - .seconds(1)
        var stalls = 0
        while true {
            let nextFrame = frameInterval * frameIndex < settings.duration ? frameInterval * frameIndex : never
            let next = [nextFrame, link.nextDelivery ?? never, sender.nextTimeout ?? never, receiver.nextTimeout ?? never].min()!
            guard next <= end else { break }
            // A core that asks for the same instant again and again would hang the run.
            stalls = next == previous ? stalls + 1 : 0
            guard stalls < 1_000 else { throw ImpairmentError("the simulation stopped advancing at \(next)") }
            previous = next
            now = max(now, next)
            link.deliver(now: now)
            if nextFrame == now {
                try sendFrame(index: frameIndex)
                frameIndex += 1
            }
            sender.handleTimeout(now: now)
            receiver.handleTimeout(now: now)
            decodeReleasedFrames()
            link.flush(now: now)
        }
    }

    // MARK: Sender

    private func sendFrame(index: Int) throws {
        pattern.render(into: &picture)
        let force = sender.shouldForceKeyframe(sendStream, now: now)
        let encodedFrame = try encoded.withUnsafeMutableBytes { try encoder.encode(picture, forceKeyframe: force, into: $0) }
        guard let info = encodedFrame else { return }
        result.framesSent += 1
        if info.isKeyframe { result.keyframesSent += 1 }
        let timestamp = UInt32(truncatingIfNeeded: index * VP8.clockRate / settings.frameRate)
        encoded.withUnsafeBytes { bytes in
            _ = sender.sendVideo(sendStream, frame: UnsafeRawBufferPointer(rebasing: bytes[0..<info.byteCount]),
                                 mediaTimestamp: timestamp, isKeyframe: info.isKeyframe, now: now)
        }
        link.flush(now: now)
    }

    /// Counts what the sender puts on the link: originals (and whether the network loses
    /// them) and retransmissions.
    private func observe(_ sent: VirtualLink.Sent) {
        guard sent.from == .a, sent.bytes.count >= 12 else {
            if sent.from == .b, sent.kind == .rtcp { countFeedback(sent.bytes) }
            return
        }
        let sequenceNumber = UInt16(sent.bytes[2]) << 8 | UInt16(sent.bytes[3])
        switch sent.kind {
        case .rtp:
            result.packetsSent += 1
            lostOriginals.remove(sequenceNumber)
            if !sent.delivered {
                lostOriginals.insert(sequenceNumber)
                result.packetsLost += 1
            }
        case .retransmission:
            result.retransmissionsSent += 1
        default:
            break
        }
    }

    /// The receiver's NACK, PLI and FIR, counted as it sends them (SRTCP: the header is clear).
    private func countFeedback(_ bytes: [UInt8]) {
        guard bytes.count >= 8 else { return }
        let format = bytes[0] & 0x1F
        switch (bytes[1], format) {
        case (205, 1): result.nacksSent += 1
        case (206, 1): result.pliSent += 1
        case (206, 4): result.firSent += 1
        default: break
        }
    }

    // MARK: Receiver

    /// A lost original counts as recovered when its retransmission is stored while its
    /// frame is still awaited.
    private func deliver(to side: VirtualLink.Side, kind: Transmit.Kind, bytes: [UInt8], _ handOver: () -> Void) {
        guard side == .b, kind == .retransmission, bytes.count >= 12 else {
            handOver()
            return
        }
        let sequenceNumber = UInt16(bytes[2]) << 8 | UInt16(bytes[3])
        let stored = receiver.videoState(of: receiveStream)?.statistics.packetsStored ?? 0
        handOver()
        if (receiver.videoState(of: receiveStream)?.statistics.packetsStored ?? 0) > stored, lostOriginals.remove(sequenceNumber) != nil {
            result.packetsRecovered += 1
        }
    }

    private func decodeReleasedFrames() {
        while let event = receiver.pollEvent() {
            guard case .videoFrame(let id, let frame) = event else { continue }
            decode(frame, stream: id)
        }
    }

    private func decode(_ frame: VideoReceiveStream.Frame, stream id: ReceiveStreamID) {
        if !frame.isKeyframe, let previous = lastDecoded {
            let followsPicture = frame.pictureID.map { $0 == (previous.pictureID.map { ($0 + 1) & 0x7FFF } ?? $0) } ?? true
            if !followsPicture || frame.firstSequenceNumber != previous.lastSequenceNumber &+ 1 { result.referenceGaps += 1 }
        }
        do {
            guard try frame.data.withUnsafeBytes({ try decoder.decode($0, into: &decoded) }) else { return }
        } catch {
            result.decodeErrors += 1
            receiver.decoderReportedCorruption(id, now: now)
            return
        }
        receiver.videoDecoded(id, timestamp: frame.timestamp, isKeyframe: frame.isKeyframe, shownAt: now)
        lastDecoded = frame
        result.framesDecoded += 1
        if frame.isKeyframe { result.keyframesDecoded += 1 }
        decodeTimes.append(now)
        let mediaTime = Int64(frame.timestamp &- Self.timestampOffset)
        frameDelays.append(now - Duration.seconds(1) * mediaTime / VP8.clockRate)
    }

    func report() -> Report {
        var report = result
        report.receiver = receiver.videoState(of: receiveStream)?.statistics ?? VideoReceiveStream.Statistics()
        report.history = sender.feedbackResponder(of: sendStream)?.history.statistics ?? RetransmissionHistory.Statistics()
        report.replaysRefused = receiver.statistics(of: receiveStream)?.replays ?? 0
        var previous = Duration.zero
        for time in decodeTimes + [settings.duration] {
            let gap = time - previous
            if gap > settings.freezeThreshold { report.freezeCount += 1 }
            report.longestGap = max(report.longestGap, gap)
            previous = max(previous, time)
        }
        report.recoveryTimes = settings.outages.map { outage in
            decodeTimes.first { $0 >= outage.upperBound }.map { $0 - outage.upperBound }
        }
        let delays = frameDelays.sorted()
        if !delays.isEmpty {
            report.medianFrameDelay = delays[delays.count / 2]
            report.frameDelay95 = delays[min(delays.count - 1, delays.count * 95 / 100)]
        }
        return report
    }
}
