/// What a datagram on a media port is, from its first two bytes (RFC 7983 for the first
/// byte, RFC 5761 section 4 to tell RTCP from RTP on a muxed port).
public enum DatagramKind: Sendable, Hashable {
    case rtp
    case rtcp
    case stun
    case dtls
    /// Anything else: counted and dropped by receivers.
    case unknown

    public init(_ bytes: UnsafeRawBufferPointer) {
        guard let first = bytes.first else {
            self = .unknown
            return
        }
        switch first {
        case 0...3: self = .stun
        case 20...63: self = .dtls
        case 128...191:
            guard bytes.count >= 2 else {
                self = .unknown
                return
            }
            // RTCP packet types 192...223 (SR 200, RR 201, ...) would be RTP payload types
            // 64...95 with the marker set, which RFC 5761 keeps out of use for RTP.
            self = (192...223).contains(bytes[1]) ? .rtcp : .rtp
        default: self = .unknown
        }
    }
}
