/// An RTCP Full Intra Request (RFC 5104 section 4.3.1, PSFB FMT 4): the sender of this
/// packet asks each listed media sender for a decoder refresh point (a keyframe).
public struct FullIntraRequest: Sendable, Hashable {
    /// The packet type of every FIR (PSFB).
    public static let packetType = RTCPHeader.PacketType.payloadSpecificFeedback
    /// The feedback message type of FIR.
    public static let format: UInt8 = 4

    private static let ssrcsSize = 8
    private static let entrySize = 8

    /// One FCI entry: a request to one media sender.
    public struct Entry: Sendable, Hashable {
        /// SSRC of the media sender asked for a refresh.
        public var ssrc: UInt32
        /// Command sequence number; the requester increments it for each new request and
        /// repeats it on retransmissions.
        public var sequenceNumber: UInt8

        /// Creates an entry.
        ///
        /// - Parameters:
        ///   - ssrc: The media sender.
        ///   - sequenceNumber: The command sequence number.
        public init(ssrc: UInt32, sequenceNumber: UInt8) {
            self.ssrc = ssrc
            self.sequenceNumber = sequenceNumber
        }
    }

    /// SSRC of the packet's sender.
    public var senderSSRC: UInt32
    /// SSRC of the media source; RFC 5104 says it SHALL be 0 (the entries name the
    /// targets), kept here so a packet re-serializes byte for byte.
    public var mediaSSRC: UInt32
    /// The FCI entries; at least one on the wire.
    public var entries: [Entry]
    /// Padding octets after the packet, 0 for none, else a multiple of 4.
    public var paddingSize: UInt8

    /// Creates a FIR.
    ///
    /// - Parameters:
    ///   - senderSSRC: The packet's sender.
    ///   - mediaSSRC: 0, as RFC 5104 asks.
    ///   - entries: At least one request.
    ///   - paddingSize: Padding octets, 0 or a multiple of 4.
    public init(senderSSRC: UInt32, mediaSSRC: UInt32 = 0, entries: [Entry], paddingSize: UInt8 = 0) {
        self.senderSSRC = senderSSRC
        self.mediaSSRC = mediaSSRC
        self.entries = entries
        self.paddingSize = paddingSize
    }

    /*
      0                   1                   2                   3
      0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1
     +-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
     |V=2|P| FMT=4   |   PT=PSFB=206 |          length               |
     +-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
     |                  SSRC of packet sender                        |
     +-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
     |                  SSRC of media source (0)                     |
     +-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
     |                              SSRC                             |  FCI, one or
     +-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+  more entries
     | Seq nr.       |    Reserved                                   |
     +-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
     :                              ...                              :

     Reserved bits are sent as 0 and ignored on receipt (RFC 5104 4.3.1.1).
    */

    /// Parses one FIR.
    ///
    /// - Parameter bytes: Exactly one RTCP packet of type 206, FMT 4.
    /// - Throws: `PacketError` if the header is malformed or another type/FMT, the length
    ///   disagrees with `bytes`, the padding is invalid, or the FCI is not a positive
    ///   number of 8-byte entries.
    public init(parsing bytes: UnsafeRawBufferPointer) throws(PacketError) {
        let (_, body, paddingSize) = try RTCPHeader.parsePacket(
            bytes, type: Self.packetType, format: Self.format, name: "FIR"
        )
        guard body.count >= Self.ssrcsSize + Self.entrySize else {
            throw PacketError(
                .tooShort, "FIR too short: \(body.count) < \(Self.ssrcsSize + Self.entrySize) bytes after the header"
            )
        }
        let fciSize = body.count - Self.ssrcsSize
        guard fciSize % Self.entrySize == 0 else {
            throw PacketError(.badLength, "FIR FCI of \(fciSize) bytes is not a whole number of \(Self.entrySize)-byte entries")
        }
        senderSSRC = body.uint32(at: 0)
        mediaSSRC = body.uint32(at: 4)
        var entries: [Entry] = []
        entries.reserveCapacity(fciSize / Self.entrySize)
        for index in 0..<(fciSize / Self.entrySize) {
            let offset = Self.ssrcsSize + index * Self.entrySize
            entries.append(Entry(ssrc: body.uint32(at: offset), sequenceNumber: body[offset + 4]))
        }
        self.entries = entries
        self.paddingSize = paddingSize
    }

    /// Parses one FIR.
    ///
    /// - Parameter bytes: Exactly one RTCP packet of type 206, FMT 4.
    /// - Throws: `PacketError`, as `init(parsing:)` on a raw buffer.
    public init(parsing bytes: [UInt8]) throws(PacketError) {
        self = try rtcpParse(bytes) { (buffer) throws(PacketError) in try FullIntraRequest(parsing: buffer) }
    }

    /// Bytes `serialize(into:)` writes.
    public var serializedSize: Int {
        RTCPHeader.size + Self.ssrcsSize + entries.count * Self.entrySize + Int(paddingSize)
    }

    /// Writes the packet into the start of `buffer`, reserved bits zero.
    ///
    /// - Parameter buffer: At least `serializedSize` bytes.
    /// - Returns: The number of bytes written, `serializedSize`.
    /// - Throws: `PacketError` `.bufferTooSmall`; `.badField` without entries; `.badLength`
    ///   past the RTCP length limit; `.badPadding`.
    public func serialize(into buffer: UnsafeMutableRawBufferPointer) throws(PacketError) -> Int {
        guard !entries.isEmpty else {
            throw PacketError(.badField, "FIR needs at least 1 FCI entry, has 0")
        }
        let size = serializedSize
        try RTCPHeader.writePacket(
            into: buffer, size: size, type: Self.packetType, count: Int(Self.format), paddingSize: paddingSize, name: "FIR"
        )
        buffer.store(senderSSRC, at: 4)
        buffer.store(mediaSSRC, at: 8)
        for (index, entry) in entries.enumerated() {
            let offset = RTCPHeader.size + Self.ssrcsSize + index * Self.entrySize
            buffer.store(entry.ssrc, at: offset)
            buffer[offset + 4] = entry.sequenceNumber
            buffer.store24(0, at: offset + 5)
        }
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
