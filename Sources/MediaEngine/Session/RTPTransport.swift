/// The sending side of one UDP socket: RTP and RTCP to a peer, SRTP-protected when a key
/// is set, with the transport-wide sequence number every packet carries.
///
/// Buffers are the caller's (RTP) or preallocated (RTCP): sending allocates nothing per
/// packet. Not thread-safe.
public final class RTPTransport {
    public let socket: UDPSocket
    let protection: SRTPContext?
    private var rtcpBuffer = [UInt8](repeating: 0, count: 1_500 + SRTPContext.trailerCapacity)
    /// The next transport-wide sequence number (draft-holmer-rmcat-transport-wide-cc).
    public private(set) var nextTransportSequence: UInt16 = 0
    public private(set) var datagramsSent = 0
    public private(set) var bytesSent = 0

    /// - Parameter keying: the key to protect with, or nil for plain RTP.
    public init(socket: UDPSocket, keying: SRTPKeyingMaterial?) throws(SRTPError) {
        self.socket = socket
        protection = try keying.map { (keying) throws(SRTPError) in try SRTPContext(keying: keying, direction: .outbound) }
    }

    /// Takes the next transport-wide sequence number.
    func takeTransportSequence() -> UInt16 {
        defer { nextTransportSequence &+= 1 }
        return nextTransportSequence
    }

    /// Protects the RTP packet in `buffer[0..<length]` in place and sends it.
    /// - Returns: the size on the wire (after SRTP).
    @discardableResult
    func sendRTP(_ buffer: UnsafeMutableRawBufferPointer, length: Int, to address: SocketAddress) throws -> Int {
        let size = try protection?.protect(buffer, length: length) ?? length
        try socket.send(UnsafeRawBufferPointer(rebasing: buffer[0..<size]), to: address)
        datagramsSent += 1
        bytesSent += size
        return size
    }

    /// Sends bytes already on their final form (a stored SRTP packet being retransmitted).
    func sendRaw(_ bytes: UnsafeRawBufferPointer, to address: SocketAddress) throws {
        try socket.send(bytes, to: address)
        datagramsSent += 1
        bytesSent += bytes.count
    }

    /// Serializes `packets` as one compound packet, protects it and sends it.
    public func sendRTCP(_ packets: [RTCPPacket], to address: SocketAddress) throws {
        let length = RTCPPacket.compoundSize(of: packets)
        guard length + SRTPContext.trailerCapacity <= rtcpBuffer.count else {
            throw PacketError(.bufferTooSmall, "RTCP compound of \(length) bytes exceeds one datagram")
        }
        try rtcpBuffer.withUnsafeMutableBytes { buffer in
            let written = try RTCPPacket.serializeCompound(packets, into: buffer)
            let size = try protection?.protectRTCP(buffer, length: written) ?? written
            try socket.send(UnsafeRawBufferPointer(rebasing: buffer[0..<size]), to: address)
            datagramsSent += 1
            bytesSent += size
        }
    }
}
