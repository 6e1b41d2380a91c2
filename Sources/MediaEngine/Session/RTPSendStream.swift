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
    private var lastTimestamp: UInt32 = 0
    private var lastSendTime: Duration = .zero
    private var sequenceNumber: UInt16
    private var header: RTPHeader
    private let audioLevelID: UInt8?
    private let transportSequenceID: UInt8?
    private var buffer = [UInt8](repeating: 0, count: 1_500 + SRTPContext.trailerCapacity)
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
        if let transportSequenceID {
            let wide = transport.takeTransportSequence().bigEndian
            withUnsafeBytes(of: wide) { _ = header.extensionBlock?.overwrite(id: transportSequenceID, with: $0) }
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
            try transport.sendRTP(bytes, length: headerSize + payloadSize, to: destination)
            octetsSent &+= UInt32(truncatingIfNeeded: payloadSize)
        }
        sequenceNumber &+= 1
        packetsSent &+= 1
        lastTimestamp = timestamp
        lastSendTime = now
    }

    /// A sender report for now: the RTP timestamp is extrapolated from the last packet
    /// sent, so receivers can map it to the NTP time for lip sync.
    public func senderReport(ntp: UInt64, now: Duration) -> SenderReport {
        let elapsed = (now - lastSendTime) / .seconds(1)
        let rtp = lastTimestamp &+ UInt32(truncatingIfNeeded: Int64(elapsed * Double(clockRate)))
        return SenderReport(ssrc: ssrc, ntpTimestamp: ntp, rtpTimestamp: rtp, packetCount: packetsSent,
                            octetCount: octetsSent)
    }
}
