/// An RTX stream (RFC 4588, SSRC-multiplexed) carrying one video stream's retransmissions:
/// its own SSRC, payload type and sequence numbers. A retransmission on it is a new SRTP
/// packet (the IV covers the SSRC and the index), never the original's index used again,
/// so a forwarding server can build it from one plain copy of the publisher's packet for
/// every subscriber instead of keeping each subscriber's protected packets.
///
/// The payload is the original sequence number (OSN, as this receiver saw it) followed by
/// the original payload; the timestamp, marker, CSRCs and header extensions are the
/// original's, and any padding is left out (RFC 4588 §4).
public struct RTXStream: Sendable, Hashable {
    public var ssrc: UInt32
    /// The `rtx` payload type whose `apt` is the stream's codec.
    public var payloadType: UInt8

    public init(ssrc: UInt32, payloadType: UInt8) {
        self.ssrc = ssrc
        self.payloadType = payloadType
    }

    /// The RTX SSRC a forwarding server uses for a publisher's video: derived from it, so
    /// that the answers signaling writes (`a=ssrc-group:FID`) and the router agree without
    /// telling each other. A meeting refuses a member whose SSRCs meet another's derived one.
    public static func ssrc(forVideo ssrc: UInt32) -> UInt32 { ssrc ^ 0x5254_5800 }

    /// NACKed sequence numbers a stream holds for its forwarding server at most, between
    /// two `takeRetransmissionRequests`; more are counted and dropped.
    public static let maximumPendingRequests = 128
}
