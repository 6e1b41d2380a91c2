import Signaling

/// The server's media plane (the SFU) as the signaling side drives it. `apply` never
/// waits: the forwarding thread takes commands between batches, so signaling never holds
/// up media, and media never holds up signaling.
public protocol MediaPlane: Sendable {
    func apply(_ command: MediaPlaneCommand)
}

/// What the media plane tells the signaling side.
public enum MediaPlaneReport: Sendable, Hashable {
    /// No check or media came over the leg for the plane's leg timeout.
    case legLost(UInt64)
    /// The levels (0...1 of full scale) of a meeting's speaking participants, by account;
    /// empty once everyone fell silent.
    case speaking(meeting: UInt64, levels: [String: Double])
    /// The simulcast layers a publishing leg should send (`ForwardingRouter.Report.videoLayers`).
    case videoLayers(leg: UInt64, active: [Bool])
}
