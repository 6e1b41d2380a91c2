/// The relay candidate (RFC 8656 through `TURNClient`, RFC 8445 §5.1.1.2), held by the
/// `PathController`: it allocates on the TURN server from socket 0, offers the relayed
/// address as a candidate, binds a channel to each of the peer's candidates, sends checks
/// through the relay when a pair's local candidate is the relayed one, and unwraps what
/// the relay delivers as if it came from the peer. When ICE selects a relayed pair, every datagram to the peer is
/// framed as ChannelData into one scratch buffer at `pollTransmit`: nothing is allocated
/// per packet.
final class RelayState {
    var client: TURNClient
    /// The relayed address, once allocated.
    var relayed: SocketAddress?
    /// Whether the allocation resolved (allocated or failed): gathering waits for it.
    var resolved = false
    /// Where a relayed datagram is framed for sending.
    let scratch = UnsafeMutableRawBufferPointer.allocate(byteCount: TransmitQueue.slotSize + 64, alignment: 16)

    init(configuration: TURNClient.Configuration) {
        client = TURNClient(configuration: configuration)
    }

    deinit { scratch.deallocate() }

    var server: SocketAddress { client.configuration.server }
}
