/// An RTCP sender report, SR (RFC 3550 section 6.4.1): what an active sender sent, plus
/// reception reports on the sources it receives.
public struct SenderReport: Sendable, Hashable {
    /// The packet type of every sender report.
    public static let packetType = RTCPHeader.PacketType.senderReport

    private static let senderInfoSize = 24

    /// SSRC of the sender of this report.
    public var ssrc: UInt32
    /// Wallclock time the report was sent, 64-bit NTP format (seconds since 1900 in the
    /// high word, fraction in the low word).
    public var ntpTimestamp: UInt64
    /// The same instant in the sender's RTP timestamp units.
    public var rtpTimestamp: UInt32
    /// RTP data packets sent since the sender started (wraps).
    public var packetCount: UInt32
    /// RTP payload octets sent since the sender started (wraps).
    public var octetCount: UInt32
    /// Reception report blocks, at most 31.
    public var reports: [ReceptionReport]
    /// Profile-specific extension bytes after the report blocks; a multiple of 4 bytes.
    public var profileExtensions: [UInt8]
    /// Padding octets after the packet, 0 for none, else a multiple of 4 (written as zeros
    /// ending in the count).
    public var paddingSize: UInt8

    /// Creates a sender report from its fields.
    ///
    /// - Parameters:
    ///   - ssrc: The sender.
    ///   - ntpTimestamp: Send time in 64-bit NTP format.
    ///   - rtpTimestamp: Send time in RTP timestamp units.
    ///   - packetCount: Packets sent so far.
    ///   - octetCount: Payload octets sent so far.
    ///   - reports: Up to 31 report blocks.
    ///   - profileExtensions: Extension bytes, a multiple of 4.
    ///   - paddingSize: Padding octets, 0 or a multiple of 4.
    public init(
        ssrc: UInt32, ntpTimestamp: UInt64, rtpTimestamp: UInt32, packetCount: UInt32, octetCount: UInt32,
        reports: [ReceptionReport] = [], profileExtensions: [UInt8] = [], paddingSize: UInt8 = 0
    ) {
        self.ssrc = ssrc
        self.ntpTimestamp = ntpTimestamp
        self.rtpTimestamp = rtpTimestamp
        self.packetCount = packetCount
        self.octetCount = octetCount
        self.reports = reports
        self.profileExtensions = profileExtensions
        self.paddingSize = paddingSize
    }

    /*
             0                   1                   2                   3
             0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1
            +-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
     header |V=2|P|    RC   |   PT=SR=200   |             length            |
            +-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
            |                         SSRC of sender                        |
            +=+=+=+=+=+=+=+=+=+=+=+=+=+=+=+=+=+=+=+=+=+=+=+=+=+=+=+=+=+=+=+=+
     sender |              NTP timestamp, most significant word             |
     info   +-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
            |             NTP timestamp, least significant word             |
            +-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
            |                         RTP timestamp                         |
            +-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
            |                     sender's packet count                     |
            +-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
            |                      sender's octet count                     |
            +=+=+=+=+=+=+=+=+=+=+=+=+=+=+=+=+=+=+=+=+=+=+=+=+=+=+=+=+=+=+=+=+
     report |                 report block 1 (24 bytes)                     |
     blocks :                              ...                              :
            +=+=+=+=+=+=+=+=+=+=+=+=+=+=+=+=+=+=+=+=+=+=+=+=+=+=+=+=+=+=+=+=+
            |                  profile-specific extensions                  |
            +-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
    */

    /// Parses one sender report.
    ///
    /// - Parameter bytes: Exactly one RTCP packet of type 200.
    /// - Throws: `PacketError` if the header is malformed or another type, the length
    ///   disagrees with `bytes`, the padding is invalid, or RC blocks do not fit.
    public init(parsing bytes: UnsafeRawBufferPointer) throws(PacketError) {
        let (header, body, paddingSize) = try RTCPHeader.parsePacket(bytes, type: Self.packetType, name: "sender report")
        guard body.count >= Self.senderInfoSize else {
            throw PacketError(.tooShort, "sender report too short: \(body.count) < \(Self.senderInfoSize) bytes after the header")
        }
        ssrc = body.uint32(at: 0)
        ntpTimestamp = UInt64(body.uint32(at: 4)) << 32 | UInt64(body.uint32(at: 8))
        rtpTimestamp = body.uint32(at: 12)
        packetCount = body.uint32(at: 16)
        octetCount = body.uint32(at: 20)
        reports = try ReceptionReport.parseList(body, at: Self.senderInfoSize, count: header.count, name: "sender report")
        profileExtensions = Array(body[(Self.senderInfoSize + reports.count * ReceptionReport.size)...])
        self.paddingSize = paddingSize
    }

    /// Parses one sender report.
    ///
    /// - Parameter bytes: Exactly one RTCP packet of type 200.
    /// - Throws: `PacketError`, as `init(parsing:)` on a raw buffer.
    public init(parsing bytes: [UInt8]) throws(PacketError) {
        self = try rtcpParse(bytes) { (buffer) throws(PacketError) in try SenderReport(parsing: buffer) }
    }

    /// Bytes `serialize(into:)` writes.
    public var serializedSize: Int {
        RTCPHeader.size + Self.senderInfoSize + reports.count * ReceptionReport.size + profileExtensions.count
            + Int(paddingSize)
    }

    /// Writes the packet into the start of `buffer`.
    ///
    /// - Parameter buffer: At least `serializedSize` bytes.
    /// - Returns: The number of bytes written, `serializedSize`.
    /// - Throws: `PacketError` `.bufferTooSmall`; `.badField` for more than 31 reports or
    ///   a cumulative loss outside 24 bits; `.badLength` if the extensions are not a
    ///   multiple of 4 bytes; `.badPadding` for padding not a multiple of 4.
    public func serialize(into buffer: UnsafeMutableRawBufferPointer) throws(PacketError) -> Int {
        let size = serializedSize
        try RTCPHeader.writePacket(
            into: buffer, size: size, type: Self.packetType, count: reports.count, paddingSize: paddingSize,
            name: "sender report"
        )
        buffer.store(ssrc, at: 4)
        buffer.store(UInt32(truncatingIfNeeded: ntpTimestamp >> 32), at: 8)
        buffer.store(UInt32(truncatingIfNeeded: ntpTimestamp), at: 12)
        buffer.store(rtpTimestamp, at: 16)
        buffer.store(packetCount, at: 20)
        buffer.store(octetCount, at: 24)
        let reportsStart = RTCPHeader.size + Self.senderInfoSize
        try ReceptionReport.serializeList(reports, into: buffer, at: reportsStart)
        let extensionsStart = reportsStart + reports.count * ReceptionReport.size
        for (index, byte) in profileExtensions.enumerated() { buffer[extensionsStart + index] = byte }
        return size
    }

    /// The packet's bytes.
    ///
    /// - Precondition: The fields are within the limits `serialize(into:)` lists; a
    ///   parsed packet always is.
    public func serialized() -> [UInt8] {
        rtcpSerialized(size: serializedSize) { (buffer) throws(PacketError) in try serialize(into: buffer) }
    }
}
