/// One reception report block of a sender or receiver report (RFC 3550 section 6.4.1):
/// what the reporter received from one source.
public struct ReceptionReport: Sendable, Hashable {
    /// Bytes in one report block.
    public static let size = 24
    /// The values the 24-bit signed cumulative loss field holds; RFC 3550 A.3 clamps to it.
    public static let cumulativeLostRange: ClosedRange<Int32> = -0x80_0000...0x7F_FFFF

    private static let signBit: UInt32 = 0x80_0000
    private static let signExtension: UInt32 = 0xFF00_0000
    private static let low24Bits: UInt32 = 0xFF_FFFF

    /// SSRC of the source this block reports on.
    public var ssrc: UInt32
    /// Fraction of packets lost since the previous report, in 1/256 units.
    public var fractionLost: UInt8
    /// Packets lost since the start, expected minus received; negative with duplicates.
    /// Must lie in `cumulativeLostRange`.
    public var cumulativeLost: Int32
    /// Cycle count (high 16 bits) and highest sequence number received (low 16 bits).
    public var extendedHighestSequenceNumber: UInt32
    /// Interarrival jitter estimate in RTP timestamp units.
    public var jitter: UInt32
    /// Middle 32 bits of the NTP timestamp of the last SR from this source (LSR), or 0.
    public var lastSenderReport: UInt32
    /// Delay since that SR was received, in 1/65536 seconds (DLSR), or 0.
    public var delaySinceLastSenderReport: UInt32

    /// Creates a report block from its fields.
    ///
    /// - Parameters:
    ///   - ssrc: The reported source.
    ///   - fractionLost: Loss fraction since the last report, in 1/256 units.
    ///   - cumulativeLost: Cumulative loss, in `cumulativeLostRange`.
    ///   - extendedHighestSequenceNumber: Cycles and highest sequence number received.
    ///   - jitter: Interarrival jitter in RTP timestamp units.
    ///   - lastSenderReport: LSR, middle 32 bits of the last SR's NTP timestamp.
    ///   - delaySinceLastSenderReport: DLSR in 1/65536 seconds.
    public init(
        ssrc: UInt32, fractionLost: UInt8 = 0, cumulativeLost: Int32 = 0, extendedHighestSequenceNumber: UInt32 = 0,
        jitter: UInt32 = 0, lastSenderReport: UInt32 = 0, delaySinceLastSenderReport: UInt32 = 0
    ) {
        self.ssrc = ssrc
        self.fractionLost = fractionLost
        self.cumulativeLost = cumulativeLost
        self.extendedHighestSequenceNumber = extendedHighestSequenceNumber
        self.jitter = jitter
        self.lastSenderReport = lastSenderReport
        self.delaySinceLastSenderReport = delaySinceLastSenderReport
    }

    /*
      0                   1                   2                   3
      0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1
     +=+=+=+=+=+=+=+=+=+=+=+=+=+=+=+=+=+=+=+=+=+=+=+=+=+=+=+=+=+=+=+=+
     |                 SSRC_1 (SSRC of first source)                 |
     +-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
     | fraction lost |       cumulative number of packets lost       |
     +-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
     |           extended highest sequence number received           |
     +-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
     |                      interarrival jitter                      |
     +-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
     |                         last SR (LSR)                         |
     +-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
     |                   delay since last SR (DLSR)                  |
     +=+=+=+=+=+=+=+=+=+=+=+=+=+=+=+=+=+=+=+=+=+=+=+=+=+=+=+=+=+=+=+=+
    */

    /// Parses one report block.
    ///
    /// - Parameter bytes: Exactly 24 bytes.
    /// - Throws: `PacketError` `.tooShort` or `.badLength` if `bytes` is not 24 bytes.
    public init(parsing bytes: UnsafeRawBufferPointer) throws(PacketError) {
        guard bytes.count >= Self.size else {
            throw PacketError(.tooShort, "RTCP report block too short: \(bytes.count) < \(Self.size)")
        }
        guard bytes.count == Self.size else {
            throw PacketError(.badLength, "RTCP report block is \(bytes.count) bytes, not \(Self.size)")
        }
        self.init(unchecked: bytes, at: 0)
    }

    /// Parses one report block.
    ///
    /// - Parameter bytes: Exactly 24 bytes.
    /// - Throws: `PacketError`, as `init(parsing:)` on a raw buffer.
    public init(parsing bytes: [UInt8]) throws(PacketError) {
        self = try rtcpParse(bytes) { (buffer) throws(PacketError) in try ReceptionReport(parsing: buffer) }
    }

    /// Reads a block the caller has checked lies inside `bytes`.
    init(unchecked bytes: UnsafeRawBufferPointer, at offset: Int) {
        ssrc = bytes.uint32(at: offset)
        fractionLost = bytes[offset + 4]
        var lost = bytes.uint24(at: offset + 5)
        if lost & Self.signBit != 0 { lost |= Self.signExtension }
        cumulativeLost = Int32(bitPattern: lost)
        extendedHighestSequenceNumber = bytes.uint32(at: offset + 8)
        jitter = bytes.uint32(at: offset + 12)
        lastSenderReport = bytes.uint32(at: offset + 16)
        delaySinceLastSenderReport = bytes.uint32(at: offset + 20)
    }

    /// Bytes `serialize(into:)` writes: always 24.
    public var serializedSize: Int { Self.size }

    /// Writes the block into the start of `buffer`.
    ///
    /// - Parameter buffer: At least 24 bytes.
    /// - Returns: The number of bytes written, 24.
    /// - Throws: `PacketError` `.bufferTooSmall`, or `.badField` if `cumulativeLost` is
    ///   outside `cumulativeLostRange`.
    public func serialize(into buffer: UnsafeMutableRawBufferPointer) throws(PacketError) -> Int {
        guard buffer.count >= Self.size else {
            throw PacketError(.bufferTooSmall, "RTCP report block buffer too small: \(buffer.count) < \(Self.size)")
        }
        try serialize(unchecked: buffer, at: 0)
        return Self.size
    }

    /// Writes the block at `offset`, which the caller has checked has 24 bytes after it.
    func serialize(unchecked buffer: UnsafeMutableRawBufferPointer, at offset: Int) throws(PacketError) {
        guard Self.cumulativeLostRange.contains(cumulativeLost) else {
            throw PacketError(.badField, "RTCP cumulative lost \(cumulativeLost) does not fit 24 signed bits")
        }
        buffer.store(ssrc, at: offset)
        buffer[offset + 4] = fractionLost
        buffer.store24(UInt32(bitPattern: cumulativeLost) & Self.low24Bits, at: offset + 5)
        buffer.store(extendedHighestSequenceNumber, at: offset + 8)
        buffer.store(jitter, at: offset + 12)
        buffer.store(lastSenderReport, at: offset + 16)
        buffer.store(delaySinceLastSenderReport, at: offset + 20)
    }

    /// The 24 bytes of the block.
    ///
    /// - Precondition: `cumulativeLost` is in `cumulativeLostRange`.
    public func serialized() -> [UInt8] {
        rtcpSerialized(size: serializedSize) { (buffer) throws(PacketError) in try serialize(into: buffer) }
    }
}

// Report lists shared by sender and receiver reports.
extension ReceptionReport {
    /// Reads `count` blocks starting at `offset` of `body`, after checking they fit.
    static func parseList(
        _ body: UnsafeRawBufferPointer, at offset: Int, count: UInt8, name: String
    ) throws(PacketError) -> [ReceptionReport] {
        let needed = offset + Int(count) * size
        guard needed <= body.count else {
            throw PacketError(
                .badLength, "\(name): \(count) report blocks need \(needed) bytes after the header, length gives \(body.count)"
            )
        }
        var reports: [ReceptionReport] = []
        reports.reserveCapacity(Int(count))
        for index in 0..<Int(count) {
            reports.append(ReceptionReport(unchecked: body, at: offset + index * size))
        }
        return reports
    }

    /// Writes `reports` one after another from `offset`, which the caller has sized.
    static func serializeList(
        _ reports: [ReceptionReport], into buffer: UnsafeMutableRawBufferPointer, at offset: Int
    ) throws(PacketError) {
        for (index, report) in reports.enumerated() {
            try report.serialize(unchecked: buffer, at: offset + index * size)
        }
    }
}
