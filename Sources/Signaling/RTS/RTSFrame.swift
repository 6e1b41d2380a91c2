import NIOCore

/// A data message on the data connection: one binary WebSocket message,
/// `| kind 1 (1 byte) | channel ID (8 bytes, big-endian) | peer length (1 byte) | peer | data |`.
///
/// From a client, `peer` is the account the data is for (empty: every other member); from
/// the server, the account that sent it. Everything else on the data connection is text (the
/// signaling envelope).
public struct RTSFrame: Sendable, Hashable {
    /// The only kind so far.
    public static let dataKind: UInt8 = 1
    /// Bytes before the peer's name.
    public static let fixedHeaderSize = 10
    /// Longest peer name (an account).
    public static let maximumPeerLength = 255

    public var channelID: UInt64
    /// The target (from a client; empty: everyone) or the sender (from the server).
    public var peer: String
    public var payload: ByteBuffer

    public init(channelID: UInt64, peer: String, payload: ByteBuffer) {
        self.channelID = channelID
        self.peer = peer
        self.payload = payload
    }

    /// Writes a frame's header into `buffer`; the payload follows.
    public static func writeHeader(into buffer: inout ByteBuffer, channelID: UInt64, peer: String) {
        let bytes = peer.utf8.prefix(maximumPeerLength)
        buffer.writeInteger(dataKind)
        buffer.writeInteger(channelID, endianness: .big)
        buffer.writeInteger(UInt8(bytes.count))
        buffer.writeBytes(bytes)
    }

    /// Parses one binary message; the payload is a slice of `buffer` (no copy).
    /// - Throws: `malformedMessage` naming what is wrong: a message shorter than its header,
    ///   an unknown kind, a peer name that is not UTF-8.
    public static func decode(_ buffer: ByteBuffer) throws(SignalingError) -> RTSFrame {
        var buffer = buffer
        guard buffer.readableBytes >= fixedHeaderSize, let kind = buffer.readInteger(as: UInt8.self),
              let channelID = buffer.readInteger(endianness: .big, as: UInt64.self),
              let length = buffer.readInteger(as: UInt8.self) else {
            throw SignalingError(.malformedMessage, "data message of \(buffer.readableBytes) bytes is shorter than its \(fixedHeaderSize)-byte header")
        }
        guard kind == dataKind else { throw SignalingError(.malformedMessage, "data message of unknown kind \(kind)") }
        guard let peerBytes = buffer.readSlice(length: Int(length)) else {
            throw SignalingError(.malformedMessage, "data message ends inside its \(length)-byte peer name")
        }
        guard let peer = peerBytes.getString(at: peerBytes.readerIndex, length: peerBytes.readableBytes),
              peer.utf8.elementsEqual(peerBytes.readableBytesView) else {
            throw SignalingError(.malformedMessage, "data message's peer name is not UTF-8")
        }
        return RTSFrame(channelID: channelID, peer: peer, payload: buffer)
    }
}
