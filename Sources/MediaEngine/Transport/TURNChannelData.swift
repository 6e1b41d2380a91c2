/*
 ChannelData message (RFC 8656 section 12.4):

  0                   1                   2                   3
  0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1
 +-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
 |         Channel Number        |            Length             |
 +-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
 |                                                               |
 /                       Application Data                        /
 /                                                               /
 |                                                               |
 |                               +-------------------------------+
 |                               |
 +-------------------------------+

 Channel Number 0x4000...0x4FFF, so the first two bits are 01 where STUN's are 00.
 Length counts the application data without padding; over UDP the message is padded to a
 multiple of 4, and the receiver ignores the padding.
*/

/// TURN ChannelData framing: application data for a bound channel behind a 4-byte header,
/// which is how a TURN client and server exchange data once a channel is bound (RFC 8656
/// section 12). Stateless functions on caller-provided buffers; they allocate nothing.
public enum TURNChannelData {
    /// The header's size.
    public static let headerSize = 4
    /// Valid channel numbers.
    public static let channelNumbers: ClosedRange<UInt16> = 0x4000...0x4FFF

    /// Whether `bytes` starts like ChannelData: at least a header and the first two bits 01
    /// (RFC 7983's demultiplexing puts 64...79 in the first byte for TURN channels).
    public static func looksLikeChannelData(_ bytes: UnsafeRawBufferPointer) -> Bool {
        bytes.count >= headerSize && bytes[0] & 0xC0 == 0x40
    }

    /// Bytes `write` uses for `payloadSize` bytes of data: header, data, padding to 4.
    public static func size(payloadSize: Int) -> Int { headerSize + STUNMessage.padded(payloadSize) }

    /// Writes a ChannelData message into the start of `buffer`, padded with zeros to a
    /// multiple of 4 as UDP requires.
    ///
    /// - Parameters:
    ///   - channel: The bound channel, 0x4000...0x4FFF.
    ///   - payload: At most 65535 bytes.
    ///   - buffer: At least `size(payloadSize: payload.count)` bytes.
    /// - Returns: The number of bytes written.
    /// - Throws: `PacketError` `.badField` for a channel outside the range, `.badLength` for
    ///   an oversized payload, `.bufferTooSmall`.
    public static func write(
        channel: UInt16, payload: UnsafeRawBufferPointer, into buffer: UnsafeMutableRawBufferPointer
    ) throws(PacketError) -> Int {
        guard channelNumbers.contains(channel) else {
            throw PacketError(.badField, "TURN channel \(STUNMessage.hex(channel)) outside 0x4000...0x4FFF")
        }
        guard payload.count <= Int(UInt16.max) else {
            throw PacketError(.badLength, "TURN ChannelData payload of \(payload.count) bytes > 65535")
        }
        let total = size(payloadSize: payload.count)
        guard buffer.count >= total else {
            throw PacketError(.bufferTooSmall, "TURN ChannelData buffer too small: \(buffer.count) < \(total)")
        }
        buffer.store(channel, at: 0)
        buffer.store(UInt16(payload.count), at: 2)
        if !payload.isEmpty {
            UnsafeMutableRawBufferPointer(rebasing: buffer[headerSize..<(headerSize + payload.count)]).copyMemory(from: payload)
        }
        for index in (headerSize + payload.count)..<total { buffer[index] = 0 }
        return total
    }

    /// Reads a ChannelData message.
    ///
    /// - Parameter bytes: One datagram.
    /// - Returns: The channel and the range of `bytes` holding the application data.
    /// - Throws: `PacketError` `.tooShort` under 4 bytes, `.badField` for a channel number
    ///   outside 0x4000...0x4FFF, `.badLength` when the length runs past the end or more
    ///   than 3 bytes of padding follow.
    public static func parse(_ bytes: UnsafeRawBufferPointer) throws(PacketError) -> (channel: UInt16, payload: Range<Int>) {
        guard bytes.count >= headerSize else {
            throw PacketError(.tooShort, "TURN ChannelData too short: \(bytes.count) < \(headerSize)")
        }
        let channel = bytes.uint16(at: 0)
        guard channelNumbers.contains(channel) else {
            throw PacketError(.badField, "TURN channel \(STUNMessage.hex(channel)) outside 0x4000...0x4FFF")
        }
        let length = Int(bytes.uint16(at: 2))
        guard length <= bytes.count - headerSize else {
            throw PacketError(.badLength, "TURN ChannelData length \(length) > \(bytes.count - headerSize) bytes after the header")
        }
        // Padding is optional on receipt (a TCP-minded sender may omit it) but never more
        // than three bytes: anything longer is not one ChannelData message.
        guard bytes.count - headerSize - length <= 3 else {
            throw PacketError(.badLength, "TURN ChannelData length \(length) leaves \(bytes.count - headerSize - length) trailing bytes > 3")
        }
        return (channel, headerSize..<(headerSize + length))
    }
}
