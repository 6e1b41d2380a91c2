/// One outgoing RTP stream (one SSRC): numbers packets, stamps header extensions, keeps
/// the counts an RTCP sender report needs, and writes each packet into one reused
/// buffer. Not thread-safe.
public final class RTPSendStream {
    public let ssrc: UInt32
    public let payloadType: UInt8
    /// RTP clock rate (48 000 for Opus, 90 000 for VP8).
    public let clockRate: Int
    /// Where RTP goes.
    public let destination: SocketAddress
    /// Where RTCP goes (the RTP address when muxed, else the next port).
    public let rtcpDestination: SocketAddress
    /// Random start of the RTP timestamp (RFC 3550 5.1).
    public let timestampOffset: UInt32
    public private(set) var packetsSent: UInt32 = 0
    /// Payload octets sent, as RTCP SR counts them.
    public private(set) var octetsSent: UInt32 = 0
    private var sequenceNumber: UInt16
    private var header: RTPHeader
    private let audioLevelID: UInt8?
    private let transportSequenceID: UInt8?
    private var buffer = [UInt8](repeating: 0, count: 1_500 + SRTPContext.trailerCapacity)
    /// Called after each packet leaves, with its transport-wide sequence number (if
    /// stamped), its bytes as sent (SRTP applied) and the send time: feeds the
    /// retransmission history and the bandwidth estimator. Set once; allocates nothing
    /// per call.
    public var packetSent: ((_ transportSequence: UInt16?, _ bytes: UnsafeRawBufferPointer, _ now: Duration) -> Void)?
    /// Largest RTP packet written, before SRTP.
    public static let maximumPacketSize = 1_500 - 28 - 16

    /// - Parameters:
    ///   - extensions: the IDs to stamp; audio level only for audio streams.
    public init(ssrc: UInt32, payloadType: UInt8, clockRate: Int, destination: SocketAddress,
                rtcpDestination: SocketAddress, extensions: RTPExtensionMap, audio: Bool) {
        var random = SystemRandomNumberGenerator()
        self.ssrc = ssrc
        self.payloadType = payloadType
        self.clockRate = clockRate
        self.destination = destination
        self.rtcpDestination = rtcpDestination
        timestampOffset = UInt32.random(in: 0 ... .max, using: &random)
        sequenceNumber = UInt16.random(in: 0 ... .max, using: &random)
        audioLevelID = audio ? extensions.id(for: RTPExtensionMap.audioLevelURI) : nil
        transportSequenceID = extensions.id(for: RTPExtensionMap.transportSequenceNumberURI)
        var elements: [RTPHeaderExtension] = []
        if let audioLevelID { elements.append(RTPHeaderExtension(id: audioLevelID, value: [0x7F])) }
        if let transportSequenceID { elements.append(RTPHeaderExtension(id: transportSequenceID, value: [0, 0])) }
        let form: RTPHeaderExtensionForm = elements.allSatisfy { $0.id <= 14 } ? .oneByte : .twoByte
        header = RTPHeader(payloadType: payloadType, sequenceNumber: 0, timestamp: 0, ssrc: ssrc,
                           extensionBlock: elements.isEmpty ? nil : try? RTPHeaderExtensionBlock(form: form, elements: elements))
    }

    /// Payload bytes that fit in one packet after this stream's header.
    public var payloadCapacity: Int { RTPSendStream.maximumPacketSize - header.size }

    /// Builds, protects and sends one packet; allocates nothing.
    /// - Parameters:
    ///   - writePayload: writes the payload into the buffer it is given and returns its
    ///     size, the media timestamp (clock-rate units since the stream started) and the
    ///     marker bit; payloaders decide the last two from what they wrote.
    public func send(now: Duration, over transport: RTPTransport, audioLevel: AudioLevel? = nil,
                     writePayload: (UnsafeMutableRawBufferPointer) throws -> (size: Int, timestamp: UInt32, marker: Bool)) throws {
        if let audioLevelID, let audioLevel {
            withUnsafeBytes(of: audioLevel.byte) { _ = header.extensionBlock?.overwrite(id: audioLevelID, with: $0) }
        }
        var transportSequence: UInt16?
        if let transportSequenceID {
            let number = transport.takeTransportSequence()
            transportSequence = number
            withUnsafeBytes(of: number.bigEndian) { _ = header.extensionBlock?.overwrite(id: transportSequenceID, with: $0) }
        }
        let headerSize = header.size
        var timestamp: UInt32 = 0
        try buffer.withUnsafeMutableBytes { bytes in
            let (payloadSize, mediaTimestamp, marker) = try writePayload(
                UnsafeMutableRawBufferPointer(rebasing: bytes[headerSize..<(headerSize + payloadCapacity)]))
            timestamp = timestampOffset &+ mediaTimestamp
            header.marker = marker
            header.sequenceNumber = sequenceNumber
            header.timestamp = timestamp
            _ = try header.serialize(into: bytes)
            let size = try transport.sendRTP(bytes, length: headerSize + payloadSize, to: destination)
            octetsSent &+= UInt32(truncatingIfNeeded: payloadSize)
            packetSent?(transportSequence, UnsafeRawBufferPointer(rebasing: bytes[0..<size]), now)
        }
        sequenceNumber &+= 1
        packetsSent &+= 1
    }

    /// A sender report: `mediaTime` is the stream's media clock now (the time since the
    /// stream's media timestamp 0, which is what the sender's schedule counts), so the RTP
    /// timestamp comes from the same clock as the packets' and receivers get an exact
    /// NTP/RTP mapping for lip sync — not one that wobbles with encoding and send delays.
    public func senderReport(ntp: UInt64, mediaTime: Duration) -> SenderReport {
        let ticks = Int64(mediaTime / .seconds(1) * Double(clockRate))
        let rtp = timestampOffset &+ UInt32(truncatingIfNeeded: ticks)
        return SenderReport(ssrc: ssrc, ntpTimestamp: ntp, rtpTimestamp: rtp, packetCount: packetsSent,
                            octetCount: octetsSent)
    }
}
