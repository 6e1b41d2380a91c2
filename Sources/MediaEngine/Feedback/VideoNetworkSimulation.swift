/// A deterministic end-to-end run of the video loss-recovery path in virtual time: a
/// `TestPattern` encoded by `VP8.Encoder`, packetized by `VP8Payloader`, SRTP-protected
/// and stored in a `VideoFeedbackResponder`; an `ImpairmentModel` each way; a
/// `VideoReceiveStream` feeding `VP8.Decoder`, whose NACK, PLI and FIR go back over the
/// impaired return link and are answered with retransmissions and forced keyframes.
///
/// No threads, sockets or sleeps: the same settings give the same report on every
/// machine. Both ends use the configured links' delays as their RTT estimate.
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
        var run = try VideoSimulationRun(settings)
        try run.run()
        return run.report()
    }
}

/// One simulation's state: the sender, the two links, the receiver and the measurements.
private struct VideoSimulationRun {
    private enum Payload {
        case media([UInt8], isRetransmission: Bool)
        case feedback([UInt8])
    }

    private static let senderSSRC: UInt32 = 0x5EED_0001
    private static let receiverSSRC: UInt32 = 0x5EED_0002
    private static let firstSequenceNumber: UInt16 = 65_500  // wraps early in every run
    private static let timestampOffset: UInt32 = 0xFFFF_0000
    private static let payloadType: UInt8 = 96

    let settings: Settings
    private var now: Duration = .zero
    private var forwardLink: ImpairmentModel
    private var backwardLink: ImpairmentModel
    private var pending = DeliveryHeap<Payload>()

    // Sender.
    private var pattern: TestPattern
    private var picture: VideoFrame
    private let encoder: VP8.Encoder
    private var encoded: [UInt8]
    private var payloader: VP8Payloader
    private var sequenceNumber = firstSequenceNumber
    private var responder: VideoFeedbackResponder
    private let protection: SRTPContext?
    private var packetBuffer = [UInt8](repeating: 0, count: 1_500 + SRTPContext.trailerCapacity)

    // Receiver.
    private var stream: VideoReceiveStream
    private let unprotection: SRTPContext?
    private let decoder: VP8.Decoder
    private var decoded = VideoFrame(width: 2, height: 2)
    private var receiveBuffer = [UInt8](repeating: 0, count: 1_500 + SRTPContext.trailerCapacity)

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
        forwardLink = try ImpairmentModel(settings: settings.forward)
        backwardLink = try ImpairmentModel(settings: settings.backward)
        guard settings.frameRate >= 1 else { throw CodecError(.invalidConfiguration, "vp8: frame rate \(settings.frameRate) is below 1") }
        var configuration = VP8.Configuration(width: settings.width, height: settings.height, bitrate: settings.bitrate)
        configuration.frameRate = settings.frameRate
        configuration.keyframeInterval = 1_000_000  // keyframes only when asked for, to test exactly that
        encoder = try VP8.Encoder(configuration: configuration)
        encoded = [UInt8](repeating: 0, count: encoder.maximumFrameSize)
        pattern = TestPattern(width: settings.width, height: settings.height, frameRate: settings.frameRate)
        picture = VideoFrame(width: settings.width, height: settings.height)
        payloader = VP8Payloader(maximumPayloadSize: min(max(8, settings.maximumPayloadSize), 1_400))
        responder = VideoFeedbackResponder(ssrc: Self.senderSSRC, configuration: settings.sender)
        if settings.protectsWithSRTP {
            let keying = try SRTPKeyingMaterial(profile: .aesCM128HMACSHA1_80, bytes: (0..<30).map { UInt8($0 &* 7 &+ 3) })
            protection = try SRTPContext(keying: keying, direction: .outbound)
            unprotection = try SRTPContext(keying: keying, direction: .inbound)
        } else {
            protection = nil
            unprotection = nil
        }
        stream = VideoReceiveStream(configuration: settings.receiver)
        stream.roundTripTime = settings.roundTripTime
        decoder = try VP8.Decoder()
    }

    mutating func run() throws {
        let frameInterval = Duration.seconds(1) / settings.frameRate
        let end = settings.duration + settings.drainTime
        let never = end + .seconds(1)
        var frameIndex = 0
        var nextTick = Duration.zero
        while true {
            let nextFrame = frameInterval * frameIndex < settings.duration ? frameInterval * frameIndex : never
            let next = min(nextFrame, nextTick, pending.nextDue ?? never)
            guard next <= end else { break }
            now = next
            while let (payload, _) = pending.popDue(now: now) { try deliver(payload) }
            if nextFrame == now {
                try sendFrame(index: frameIndex)
                frameIndex += 1
            }
            if nextTick == now {
                try processReceiver()
                nextTick += settings.processInterval
            }
        }
    }

    private func inOutage(_ time: Duration) -> Bool { settings.outages.contains { $0.contains(time) } }

    // MARK: Sender

    private mutating func sendFrame(index: Int) throws {
        pattern.render(into: &picture)
        let force = responder.shouldForceKeyframe(now: now)
        let encodedFrame = try encoded.withUnsafeMutableBytes { try encoder.encode(picture, forceKeyframe: force, into: $0) }
        guard let info = encodedFrame else { return }
        result.framesSent += 1
        if info.isKeyframe {
            result.keyframesSent += 1
            responder.keyframeSent(now: now)
        }
        let timestamp = Self.timestampOffset &+ UInt32(truncatingIfNeeded: index * VP8.clockRate / settings.frameRate)
        for fragment in payloader.fragments(frameSize: info.byteCount) {
            let header = RTPHeader(marker: fragment.isLast, payloadType: Self.payloadType, sequenceNumber: sequenceNumber,
                                   timestamp: timestamp, ssrc: Self.senderSSRC)
            let packet = try encoded.withUnsafeBytes { frame in
                try packetBuffer.withUnsafeMutableBytes { buffer in
                    let headerSize = try header.serialize(into: buffer)
                    let payloadSize = try VP8Payloader.write(fragment, of: UnsafeRawBufferPointer(rebasing: frame[0..<info.byteCount]),
                                                             into: UnsafeMutableRawBufferPointer(rebasing: buffer[headerSize...]))
                    let size = try protection?.protect(buffer, length: headerSize + payloadSize) ?? headerSize + payloadSize
                    return Array(buffer[0..<size])
                }
            }
            packet.withUnsafeBytes { _ = responder.packetSent($0, now: now) }
            result.packetsSent += 1
            lostOriginals.remove(sequenceNumber)
            if !sendForward(packet, isRetransmission: false) {
                lostOriginals.insert(sequenceNumber)
                result.packetsLost += 1
            }
            sequenceNumber &+= 1
        }
    }

    /// - Returns: whether the packet will arrive.
    @discardableResult
    private mutating func sendForward(_ packet: [UInt8], isRetransmission: Bool) -> Bool {
        if isRetransmission { result.retransmissionsSent += 1 }
        guard !inOutage(now) else { return false }
        guard case .delivered(let at, let duplicateAt) = forwardLink.process(size: packet.count, now: now) else { return false }
        pending.insert(.media(packet, isRetransmission: isRetransmission), due: at)
        if let duplicateAt { pending.insert(.media(packet, isRetransmission: isRetransmission), due: duplicateAt) }
        return true
    }

    private mutating func receiveFeedback(_ datagram: [UInt8]) {
        guard let packets = try? RTCPPacket.parseCompound(datagram) else { return }
        let rtt = settings.roundTripTime
        for packet in packets {
            var resent: [[UInt8]] = []
            responder.handle(packet, now: now, rtt: rtt) { resent.append(Array($0)) }
            for copy in resent { sendForward(copy, isRetransmission: true) }
        }
    }

    // MARK: Receiver

    private mutating func deliver(_ payload: Payload) throws {
        switch payload {
        case .feedback(let datagram):
            receiveFeedback(datagram)
        case .media(let datagram, let isRetransmission):
            try receiveMedia(datagram, isRetransmission: isRetransmission)
            try processReceiver()
        }
    }

    private mutating func receiveMedia(_ datagram: [UInt8], isRetransmission: Bool) throws {
        let count = datagram.count
        guard count <= receiveBuffer.count else { return }
        receiveBuffer.withUnsafeMutableBytes { buffer in datagram.withUnsafeBytes { buffer.copyMemory(from: $0) } }
        var length = count
        if let unprotection {
            do {
                length = try receiveBuffer.withUnsafeMutableBytes { try unprotection.unprotect($0, length: count) }
            } catch {
                result.replaysRefused += 1
                return
            }
        }
        let outcome = try receiveBuffer.withUnsafeBytes { bytes in
            let packet = try RTPPacketView(UnsafeRawBufferPointer(rebasing: bytes[0..<length]))
            return (stream.insert(packet, arrival: now), packet.sequenceNumber)
        }
        if isRetransmission, outcome.0 == .stored || outcome.0 == .recovered, lostOriginals.remove(outcome.1) != nil {
            result.packetsRecovered += 1
        }
    }

    private mutating func processReceiver() throws {
        for action in stream.process(now: now) {
            switch action {
            case .decode(let frame):
                decode(frame)
            case .sendNACK(let numbers):
                // At most 256 numbers per NACK keeps each datagram under 1100 bytes.
                var start = 0
                while start < numbers.count {
                    let chunk = numbers[start..<min(numbers.count, start + 256)]
                    sendFeedback(.genericNACK(GenericNACK(senderSSRC: Self.receiverSSRC, mediaSSRC: stream.ssrc ?? 0,
                                                          lostSequenceNumbers: chunk)))
                    start += 256
                }
                result.nacksSent += 1
            case .sendPLI:
                result.pliSent += 1
                sendFeedback(.pictureLossIndication(PictureLossIndication(senderSSRC: Self.receiverSSRC, mediaSSRC: stream.ssrc ?? 0)))
            case .sendFIR(let number):
                result.firSent += 1
                sendFeedback(.fullIntraRequest(FullIntraRequest(
                    senderSSRC: Self.receiverSSRC, entries: [FullIntraRequest.Entry(ssrc: stream.ssrc ?? 0, sequenceNumber: number)])))
            }
        }
    }

    private mutating func sendFeedback(_ packet: RTCPPacket) {
        let datagram = RTCPPacket.serializedCompound([packet])
        guard !inOutage(now) else { return }
        guard case .delivered(let at, let duplicateAt) = backwardLink.process(size: datagram.count, now: now) else { return }
        pending.insert(.feedback(datagram), due: at)
        if let duplicateAt { pending.insert(.feedback(datagram), due: duplicateAt) }
    }

    private mutating func decode(_ frame: VideoReceiveStream.Frame) {
        if !frame.isKeyframe, let previous = lastDecoded {
            let followsPicture = frame.pictureID.map { $0 == (previous.pictureID.map { ($0 + 1) & 0x7FFF } ?? $0) } ?? true
            if !followsPicture || frame.firstSequenceNumber != previous.lastSequenceNumber &+ 1 { result.referenceGaps += 1 }
        }
        do {
            guard try frame.data.withUnsafeBytes({ try decoder.decode($0, into: &decoded) }) else { return }
        } catch {
            result.decodeErrors += 1
            stream.decoderReportedCorruption(now: now)
            return
        }
        lastDecoded = frame
        result.framesDecoded += 1
        if frame.isKeyframe { result.keyframesDecoded += 1 }
        decodeTimes.append(now)
        let mediaTime = Int64(frame.timestamp &- Self.timestampOffset)
        frameDelays.append(now - Duration.seconds(1) * mediaTime / VP8.clockRate)
    }

    func report() -> Report {
        var report = result
        report.receiver = stream.statistics
        report.history = responder.history.statistics
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
