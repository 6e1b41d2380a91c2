/// An RTCP receiver report, RR (RFC 3550 section 6.4.2): reception reports from a
/// participant that is not sending.
public struct ReceiverReport: Sendable, Hashable {
    /// The packet type of every receiver report.
    public static let packetType = RTCPHeader.PacketType.receiverReport

    private static let ssrcSize = 4

    /// SSRC of the sender of this report.
    public var ssrc: UInt32
    /// Reception report blocks, at most 31; none is valid (nothing received yet).
    public var reports: [ReceptionReport]
    /// Profile-specific extension bytes after the report blocks; a multiple of 4 bytes.
    public var profileExtensions: [UInt8]
    /// Padding octets after the packet, 0 for none, else a multiple of 4.
    public var paddingSize: UInt8

    /// Creates a receiver report from its fields.
    ///
    /// - Parameters:
    ///   - ssrc: The reporter.
    ///   - reports: Up to 31 report blocks.
    ///   - profileExtensions: Extension bytes, a multiple of 4.
    ///   - paddingSize: Padding octets, 0 or a multiple of 4.
    public init(ssrc: UInt32, reports: [ReceptionReport] = [], profileExtensions: [UInt8] = [], paddingSize: UInt8 = 0) {
        self.ssrc = ssrc
        self.reports = reports
        self.profileExtensions = profileExtensions
        self.paddingSize = paddingSize
    }

    /*
             0                   1                   2                   3
             0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1
            +-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
     header |V=2|P|    RC   |   PT=RR=201   |             length            |
            +-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
            |                     SSRC of packet sender                     |
            +=+=+=+=+=+=+=+=+=+=+=+=+=+=+=+=+=+=+=+=+=+=+=+=+=+=+=+=+=+=+=+=+
     report |                 report block 1 (24 bytes)                     |
     blocks :                              ...                              :
            +=+=+=+=+=+=+=+=+=+=+=+=+=+=+=+=+=+=+=+=+=+=+=+=+=+=+=+=+=+=+=+=+
            |                  profile-specific extensions                  |
            +-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
    */

    /// Parses one receiver report.
    ///
    /// - Parameter bytes: Exactly one RTCP packet of type 201.
    /// - Throws: `PacketError` if the header is malformed or another type, the length
    ///   disagrees with `bytes`, the padding is invalid, or RC blocks do not fit.
    public init(parsing bytes: UnsafeRawBufferPointer) throws(PacketError) {
        let (header, body, paddingSize) = try RTCPHeader.parsePacket(bytes, type: Self.packetType, name: "receiver report")
        guard body.count >= Self.ssrcSize else {
            throw PacketError(.tooShort, "receiver report too short: \(body.count) < \(Self.ssrcSize) bytes after the header")
        }
        ssrc = body.uint32(at: 0)
        reports = try ReceptionReport.parseList(body, at: Self.ssrcSize, count: header.count, name: "receiver report")
        profileExtensions = Array(body[(Self.ssrcSize + reports.count * ReceptionReport.size)...])
        self.paddingSize = paddingSize
    }

    /// Parses one receiver report.
    ///
    /// - Parameter bytes: Exactly one RTCP packet of type 201.
    /// - Throws: `PacketError`, as `init(parsing:)` on a raw buffer.
    public init(parsing bytes: [UInt8]) throws(PacketError) {
        self = try rtcpParse(bytes) { (buffer) throws(PacketError) in try ReceiverReport(parsing: buffer) }
    }

    /// Bytes `serialize(into:)` writes.
    public var serializedSize: Int {
        RTCPHeader.size + Self.ssrcSize + reports.count * ReceptionReport.size + profileExtensions.count + Int(paddingSize)
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
            name: "receiver report"
        )
        buffer.store(ssrc, at: 4)
        let reportsStart = RTCPHeader.size + Self.ssrcSize
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
