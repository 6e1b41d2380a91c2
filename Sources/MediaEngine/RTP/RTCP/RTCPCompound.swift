/// One RTCP packet of any type: the unit a compound RTCP datagram (RFC 3550 section
/// 6.1) is made of.
///
/// Types and feedback messages this module does not model (APP, SLI, other
/// application-layer feedback, ...) parse as `.unknown` when their header and length are
/// well formed, so the rest of a compound datagram is not lost with them.
public enum RTCPPacket: Sendable, Hashable {
    /// SR, type 200.
    case senderReport(SenderReport)
    /// RR, type 201.
    case receiverReport(ReceiverReport)
    /// SDES, type 202.
    case sourceDescription(SourceDescription)
    /// BYE, type 203.
    case goodbye(Goodbye)
    /// Generic NACK, type 205 FMT 1.
    case genericNACK(GenericNACK)
    /// Transport-wide congestion control feedback, type 205 FMT 15.
    case transportFeedback(TransportFeedback)
    /// PLI, type 206 FMT 1.
    case pictureLossIndication(PictureLossIndication)
    /// FIR, type 206 FMT 4.
    case fullIntraRequest(FullIntraRequest)
    /// REMB, type 206 FMT 15 with the "REMB" identifier.
    case receiverEstimatedMaxBitrate(ReceiverEstimatedMaxBitrate)
    /// XR, type 207.
    case extendedReport(ExtendedReport)
    /// A well-formed packet of another type or FMT: its header fields, the bytes between
    /// header and padding (a multiple of 4), and the padding octet count (0 for none).
    case unknown(type: RTCPHeader.PacketType, count: UInt8, body: [UInt8], paddingSize: UInt8)

    /// Parses the single packet that fills `bytes`, choosing the case from its header.
    ///
    /// - Parameter bytes: Exactly one RTCP packet.
    /// - Throws: `PacketError` if the header is malformed, the length disagrees with
    ///   `bytes`, the padding is invalid, or a packet of a modelled type is malformed.
    public init(parsing bytes: UnsafeRawBufferPointer) throws(PacketError) {
        let header = try RTCPHeader(parsing: bytes)
        switch (header.packetType, header.count) {
        case (.senderReport, _):
            self = .senderReport(try SenderReport(parsing: bytes))
        case (.receiverReport, _):
            self = .receiverReport(try ReceiverReport(parsing: bytes))
        case (.sourceDescription, _):
            self = .sourceDescription(try SourceDescription(parsing: bytes))
        case (.goodbye, _):
            self = .goodbye(try Goodbye(parsing: bytes))
        case (GenericNACK.packetType, GenericNACK.format):
            self = .genericNACK(try GenericNACK(parsing: bytes))
        case (TransportFeedback.packetType, TransportFeedback.format):
            self = .transportFeedback(try TransportFeedback(parsing: bytes))
        case (PictureLossIndication.packetType, PictureLossIndication.format):
            self = .pictureLossIndication(try PictureLossIndication(parsing: bytes))
        case (FullIntraRequest.packetType, FullIntraRequest.format):
            self = .fullIntraRequest(try FullIntraRequest(parsing: bytes))
        case (ReceiverEstimatedMaxBitrate.packetType, ReceiverEstimatedMaxBitrate.format)
        where ReceiverEstimatedMaxBitrate.hasIdentifier(UnsafeRawBufferPointer(rebasing: bytes[RTCPHeader.size...])):
            self = .receiverEstimatedMaxBitrate(try ReceiverEstimatedMaxBitrate(parsing: bytes))
        case (.extendedReport, _):
            self = .extendedReport(try ExtendedReport(parsing: bytes))
        default:
            guard header.packetSize == bytes.count else {
                throw PacketError(
                    .badLength, "RTCP type \(header.packetType): length \(header.length) is \(header.packetSize) bytes, packet is \(bytes.count)"
                )
            }
            let paddingSize = try header.paddingSize(in: bytes)
            let body = Array(bytes[RTCPHeader.size..<(bytes.count - Int(paddingSize))])
            self = .unknown(type: header.packetType, count: header.count, body: body, paddingSize: paddingSize)
        }
    }

    /// Parses the single packet that fills `bytes`.
    ///
    /// - Parameter bytes: Exactly one RTCP packet.
    /// - Throws: `PacketError`, as `init(parsing:)` on a raw buffer.
    public init(parsing bytes: [UInt8]) throws(PacketError) {
        self = try rtcpParse(bytes) { (buffer) throws(PacketError) in try RTCPPacket(parsing: buffer) }
    }

    /// Bytes `serialize(into:)` writes.
    public var serializedSize: Int {
        switch self {
        case .senderReport(let packet): packet.serializedSize
        case .receiverReport(let packet): packet.serializedSize
        case .sourceDescription(let packet): packet.serializedSize
        case .goodbye(let packet): packet.serializedSize
        case .genericNACK(let packet): packet.serializedSize
        case .transportFeedback(let packet): packet.serializedSize
        case .pictureLossIndication(let packet): packet.serializedSize
        case .fullIntraRequest(let packet): packet.serializedSize
        case .receiverEstimatedMaxBitrate(let packet): packet.serializedSize
        case .extendedReport(let packet): packet.serializedSize
        case .unknown(_, _, let body, let paddingSize): RTCPHeader.size + body.count + Int(paddingSize)
        }
    }

    /// Writes the packet into the start of `buffer`.
    ///
    /// - Parameter buffer: At least `serializedSize` bytes.
    /// - Returns: The number of bytes written, `serializedSize`.
    /// - Throws: `PacketError` as the packet type's `serialize(into:)` does; for `.unknown`,
    ///   `.badField` for a count over 31 and `.badLength` for a body not a multiple of 4.
    public func serialize(into buffer: UnsafeMutableRawBufferPointer) throws(PacketError) -> Int {
        switch self {
        case .senderReport(let packet): return try packet.serialize(into: buffer)
        case .receiverReport(let packet): return try packet.serialize(into: buffer)
        case .sourceDescription(let packet): return try packet.serialize(into: buffer)
        case .goodbye(let packet): return try packet.serialize(into: buffer)
        case .genericNACK(let packet): return try packet.serialize(into: buffer)
        case .transportFeedback(let packet): return try packet.serialize(into: buffer)
        case .pictureLossIndication(let packet): return try packet.serialize(into: buffer)
        case .fullIntraRequest(let packet): return try packet.serialize(into: buffer)
        case .receiverEstimatedMaxBitrate(let packet): return try packet.serialize(into: buffer)
        case .extendedReport(let packet): return try packet.serialize(into: buffer)
        case .unknown(let type, let count, let body, let paddingSize):
            let size = serializedSize
            try RTCPHeader.writePacket(
                into: buffer, size: size, type: type, count: Int(count), paddingSize: paddingSize, name: "RTCP packet"
            )
            for (index, byte) in body.enumerated() { buffer[RTCPHeader.size + index] = byte }
            return size
        }
    }

    /// The packet's bytes.
    ///
    /// - Precondition: The fields are within the limits `serialize(into:)` lists; a
    ///   parsed packet always is.
    public func serialized() -> [UInt8] {
        rtcpSerialized(size: serializedSize) { (buffer) throws(PacketError) in try serialize(into: buffer) }
    }
}

// Compound datagrams: packets back to back, each framed by its own length field.
extension RTCPPacket {
    /// Parses a compound RTCP datagram into its packets, in order.
    ///
    /// Each packet's length field is checked against the bytes left before anything in it
    /// is read. The first packet need not be SR or RR (reduced-size RTCP, RFC 5506).
    ///
    /// - Parameter bytes: The whole datagram (after SRTCP unprotect, if any).
    /// - Returns: At least one packet.
    /// - Throws: `PacketError` if the datagram is empty or shorter than a header, a length
    ///   runs past its end, or any packet is malformed.
    public static func parseCompound(_ bytes: UnsafeRawBufferPointer) throws(PacketError) -> [RTCPPacket] {
        guard bytes.count >= RTCPHeader.size else {
            throw PacketError(.tooShort, "RTCP packet too short: \(bytes.count) < \(RTCPHeader.size)")
        }
        var packets: [RTCPPacket] = []
        var offset = 0
        while offset < bytes.count {
            let remaining = bytes.count - offset
            guard remaining >= RTCPHeader.size else {
                throw PacketError(.tooShort, "RTCP packet at offset \(offset) too short: \(remaining) < \(RTCPHeader.size)")
            }
            let header = try RTCPHeader(parsing: UnsafeRawBufferPointer(rebasing: bytes[offset...]))
            guard header.packetSize <= remaining else {
                throw PacketError(
                    .badLength,
                    "RTCP length \(header.length) at offset \(offset) is \(header.packetSize) bytes, \(remaining) remain"
                )
            }
            let end = offset + header.packetSize
            packets.append(try RTCPPacket(parsing: UnsafeRawBufferPointer(rebasing: bytes[offset..<end])))
            offset = end
        }
        return packets
    }

    /// Parses a compound RTCP datagram into its packets, in order.
    ///
    /// - Parameter bytes: The whole datagram.
    /// - Returns: At least one packet.
    /// - Throws: `PacketError`, as `parseCompound(_:)` on a raw buffer.
    public static func parseCompound(_ bytes: [UInt8]) throws(PacketError) -> [RTCPPacket] {
        try rtcpParse(bytes) { (buffer) throws(PacketError) in try parseCompound(buffer) }
    }

    /// Bytes `serializeCompound(_:into:)` writes for `packets`.
    ///
    /// - Parameter packets: The packets of one datagram.
    /// - Returns: The sum of their sizes.
    public static func compoundSize(of packets: [RTCPPacket]) -> Int {
        packets.reduce(0) { $0 + $1.serializedSize }
    }

    /// Writes `packets` back to back into the start of `buffer`, as one datagram.
    ///
    /// The order is the caller's: RFC 3550 wants SR or RR first and an SDES with CNAME in
    /// every full compound packet; reduced-size RTCP (RFC 5506) may send feedback alone.
    ///
    /// - Parameters:
    ///   - packets: The packets of one datagram.
    ///   - buffer: At least `compoundSize(of:)` bytes.
    /// - Returns: The number of bytes written.
    /// - Throws: `PacketError` `.bufferTooSmall`, or what a packet's `serialize(into:)` throws.
    public static func serializeCompound(
        _ packets: [RTCPPacket], into buffer: UnsafeMutableRawBufferPointer
    ) throws(PacketError) -> Int {
        let size = compoundSize(of: packets)
        guard buffer.count >= size else {
            throw PacketError(.bufferTooSmall, "RTCP compound buffer too small: \(buffer.count) < \(size)")
        }
        var offset = 0
        for packet in packets {
            offset += try packet.serialize(into: UnsafeMutableRawBufferPointer(rebasing: buffer[offset...]))
        }
        return offset
    }

    /// The datagram holding `packets` back to back.
    ///
    /// - Parameter packets: The packets of one datagram.
    /// - Returns: Their bytes.
    /// - Precondition: Every packet is within the limits its `serialize(into:)` lists; a
    ///   parsed packet always is.
    public static func serializedCompound(_ packets: [RTCPPacket]) -> [UInt8] {
        rtcpSerialized(size: compoundSize(of: packets)) { (buffer) throws(PacketError) in
            try serializeCompound(packets, into: buffer)
        }
    }
}
