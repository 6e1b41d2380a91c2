/// One layer of a simulcast video as it is sent: its SSRC and picture size. A session's
/// endpoint, a meeting join and a forwarding server's leg all describe layers with it.
public struct SimulcastStream: Sendable, Hashable, Codable {
    public var ssrc: UInt32
    public var width: Int
    public var height: Int

    public init(ssrc: UInt32, width: Int, height: Int) {
        self.ssrc = ssrc
        self.width = width
        self.height = height
    }
}
