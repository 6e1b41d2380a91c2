/// A TURN client over UDP (RFC 8656), sans-I/O: it builds the datagrams to send to the
/// TURN server and reads the ones that come back, and its owner moves them through a
/// socket and tells it the time. No sockets, threads or clocks inside.
///
/// Flow: `start(now:)` allocates (an unauthenticated Allocate, the 401 challenge, then a
/// request signed with the long-term key; a 438 stale nonce is retried with the new
/// nonce). Once `.allocated`, `createPermission(for:now:)` and `bindChannel(to:now:)`
/// open the relay to peers, `writeData(_:to:into:)` frames a payload for a peer (ChannelData
/// when a channel is bound, else a Send indication) and `receive(_:from:now:)` returns
/// a peer's payloads from Data indications and ChannelData. `update(now:)` retransmits and
/// refreshes the allocation (at lifetime - 60 s, at least half), permissions (every
/// 240 s) and channels (every 540 s); `close(now:)` deletes the allocation.
///
/// After each call, drain `nextAction()`: datagrams to send to the server and events.
///
/// Not thread-safe: one owner calls everything. The data path (`writeData`, `receive` of
/// data) allocates nothing.
public struct TURNClient: Sendable {
    /// What the client needs to know.
    public struct Configuration: Sendable {
        /// The TURN server; datagrams from elsewhere are ignored.
        public var server: SocketAddress
        /// Long-term credentials (see `TURNCredentials.restAPI` for coturn's REST form).
        public var credentials: TURNCredentials
        /// The allocation lifetime asked for; the server may grant another.
        public var requestedLifetime: Duration = .seconds(600)
        /// The most peers with a permission (and so with a channel).
        public var maximumPeers = 64
        /// SOFTWARE sent in requests; nil sends none.
        public var software: String? = "MediaEngine"
        /// The first retransmission timeout (RFC 8489: 500 ms), doubled per retransmission.
        public var initialRetransmissionTimeout: Duration = .milliseconds(500)
        /// The cap on the doubling, which keeps a transaction's total under 12 s.
        public var maximumRetransmissionTimeout: Duration = .seconds(2)
        /// Transmissions of one request before it times out (RFC 8489's Rc: 7).
        public var maximumTransmissions = 7

        /// A configuration with the defaults above.
        public init(server: SocketAddress, credentials: TURNCredentials) {
            self.server = server
            self.credentials = credentials
        }
    }

    /// Where the allocation is.
    public enum State: Sendable, Hashable {
        /// `start(now:)` not called yet.
        case idle
        /// Allocate sent, no success yet.
        case allocating
        /// The relayed address is usable.
        case allocated
        /// `close(now:)` sent Refresh with LIFETIME 0.
        case closing
        /// Deleted or abandoned after `close`.
        case closed
        /// Allocation failed or was lost.
        case failed(TURNError)
    }

    /// Something the owner should know about.
    public enum Event: Sendable, Hashable {
        /// The allocation exists: the relayed address to give peers, the server-reflexive
        /// address the server saw (a free srflx candidate), and the granted lifetime.
        case allocated(relayed: SocketAddress, mapped: SocketAddress?, lifetime: Duration)
        /// A Refresh extended the allocation.
        case refreshed(lifetime: Duration)
        /// The server installed a permission for `peer`'s IP address.
        case permissionCreated(peer: SocketAddress)
        /// The server bound `channel` to `peer`; data to it now goes as ChannelData.
        case channelBound(peer: SocketAddress, channel: UInt16)
        /// CreatePermission for `peer` failed; its entry is gone.
        case permissionFailed(peer: SocketAddress, TURNError)
        /// ChannelBind for `peer` failed; its channel is gone.
        case channelBindFailed(peer: SocketAddress, TURNError)
        /// The allocation failed or was lost; the client is in `.failed`.
        case failed(TURNError)
        /// The allocation was deleted (or given up on) after `close(now:)`.
        case closed
    }

    /// What to do next.
    public enum Action: Sendable, Hashable {
        /// Send these bytes to the server.
        case transmit([UInt8])
        /// Tell the application.
        case event(Event)
    }

    /// What a datagram from the server was.
    public enum Received: Sendable, Hashable {
        /// A peer's payload, at `payload` in the datagram.
        case data(peer: SocketAddress, payload: Range<Int>)
        /// A response the client consumed; check `nextAction()`.
        case handled
        /// Not from the server, malformed, unexpected or unauthenticated: dropped and counted.
        case ignored
    }

    public let configuration: Configuration
    /// The allocation's state.
    public internal(set) var state: State = .idle
    /// Counters since creation.
    public internal(set) var statistics = TURNStatistics()
    /// The relayed address, once allocated.
    public internal(set) var relayedAddress: SocketAddress?
    /// The server-reflexive address from the Allocate response, once allocated.
    public internal(set) var mappedAddress: SocketAddress?

    var actions: [Action] = []
    var actionIndex = 0
    var transactions: [Transaction] = []
    var realm: String?
    var nonce: String?
    var key: STUNIntegrityKey?
    var allocationRefreshAt: Duration?
    /// Keyed by the peer's IP address with port 0.
    var permissions: [SocketAddress: PeerTimer] = [:]
    var channels: [SocketAddress: Channel] = [:]
    var peersByChannel: [UInt16: SocketAddress] = [:]
    var nextChannelNumber = TURNChannelData.channelNumbers.lowerBound

    /// A client that has sent nothing yet.
    public init(configuration: Configuration) {
        self.configuration = configuration
    }

    /// Sends the first Allocate request. Does nothing unless `.idle`.
    public mutating func start(now: Duration) {
        guard state == .idle else { return }
        state = .allocating
        send(.allocate, now: now)
    }

    /// Deletes the allocation: Refresh with LIFETIME 0, then `.closed` on its answer or
    /// timeout. Before an allocation exists it just stops.
    public mutating func close(now: Duration) {
        switch state {
        case .allocated:
            state = .closing
            transactions.removeAll()
            send(.refresh(lifetime: 0), now: now)
        case .idle, .allocating:
            transactions.removeAll()
            state = .closed
            emit(.closed)
        case .closing, .closed, .failed:
            break
        }
    }

    /// The next datagram to send or event to handle, in order; nil when there is none.
    public mutating func nextAction() -> Action? {
        guard actionIndex < actions.count else {
            if !actions.isEmpty { actions.removeAll(keepingCapacity: true); actionIndex = 0 }
            return nil
        }
        defer { actionIndex += 1 }
        return actions[actionIndex]
    }

    /// Asks the server to let `peer`'s IP address send to the relayed address (and
    /// keeps the permission refreshed). Ports do not matter to permissions.
    ///
    /// - Throws: `TURNError` `.notAllocated`, or `.tooManyPeers` past `maximumPeers`.
    public mutating func createPermission(for peer: SocketAddress, now: Duration) throws(TURNError) {
        guard state == .allocated else { throw TURNError(.notAllocated, "TURN permission for \(peer) without an allocation") }
        let ip = peer.with(port: 0)
        guard permissions[ip] == nil else { return }
        guard permissions.count < configuration.maximumPeers else {
            throw TURNError(.tooManyPeers, "TURN permission table full: \(configuration.maximumPeers) peers")
        }
        permissions[ip] = PeerTimer(installed: false, pending: true, refreshAt: nil)
        send(.createPermission(peer: peer), now: now)
    }

    /// Binds a channel to `peer` (which also installs a permission for its IP address),
    /// so that data goes as 4-byte-header ChannelData instead of 36-byte Send indications.
    ///
    /// - Returns: The channel number, 0x4000 upward; the same one if already bound.
    /// - Throws: `TURNError` `.notAllocated`, or `.tooManyPeers` when the permission or
    ///   channel table is full.
    @discardableResult
    public mutating func bindChannel(to peer: SocketAddress, now: Duration) throws(TURNError) -> UInt16 {
        guard state == .allocated else { throw TURNError(.notAllocated, "TURN channel to \(peer) without an allocation") }
        if let channel = channels[peer] { return channel.number }
        let ip = peer.with(port: 0)
        guard channels.count < configuration.maximumPeers,
              permissions[ip] != nil || permissions.count < configuration.maximumPeers,
              let number = freeChannelNumber()
        else { throw TURNError(.tooManyPeers, "TURN channel table full: \(configuration.maximumPeers) peers") }
        if permissions[ip] == nil { permissions[ip] = PeerTimer(installed: false, pending: false, refreshAt: nil) }
        channels[peer] = Channel(number: number, timer: PeerTimer(installed: false, pending: true, refreshAt: nil))
        peersByChannel[number] = peer
        nextChannelNumber = number == TURNChannelData.channelNumbers.upperBound ? TURNChannelData.channelNumbers.lowerBound : number + 1
        send(.channelBind(peer: peer, channel: number), now: now)
        return number
    }

    /// The channel bound to `peer`, once the server confirmed it.
    public func boundChannel(for peer: SocketAddress) -> UInt16? {
        channels[peer].flatMap { $0.timer.installed ? $0.number : nil }
    }

    /// Frames `payload` for `peer`: ChannelData on a bound channel, else a Send indication.
    /// Allocates nothing.
    ///
    /// - Parameters:
    ///   - payload: The application data.
    ///   - peer: Its destination, which needs a permission (or channel) first.
    ///   - buffer: Where to write; 40 bytes more than the payload always suffice for IPv4
    ///     peers, 52 for IPv6.
    /// - Returns: The number of bytes to send to the server.
    /// - Throws: `TURNError` `.notAllocated`, `.noPermission`, `.bufferTooSmall`.
    public mutating func writeData(
        _ payload: UnsafeRawBufferPointer, to peer: SocketAddress, into buffer: UnsafeMutableRawBufferPointer
    ) throws(TURNError) -> Int {
        guard state == .allocated else { throw TURNError(.notAllocated, "TURN data to \(peer) without an allocation") }
        let written: Int
        if let channel = channels[peer], channel.timer.installed {
            do {
                written = try TURNChannelData.write(channel: channel.number, payload: payload, into: buffer)
            } catch {
                throw TURNError(.bufferTooSmall, "TURN ChannelData: \(error)")
            }
        } else {
            guard permissions[peer.with(port: 0)] != nil else {
                throw TURNError(.noPermission, "TURN data to \(peer) without a permission")
            }
            written = try Self.writeSendIndication(payload, to: peer, into: buffer)
        }
        statistics.bytesSent += payload.count
        statistics.packetsSent += 1
        return written
    }

    /// `writeData(_:to:into:)` on arrays, for tests and control paths; allocates.
    public mutating func data(_ payload: [UInt8], to peer: SocketAddress) throws(TURNError) -> [UInt8] {
        var output = [UInt8](repeating: 0, count: payload.count + 64)
        let result = payload.withUnsafeBytes { payload in
            output.withUnsafeMutableBytes { buffer in
                Result { () throws(TURNError) in try writeData(payload, to: peer, into: buffer) }
            }
        }
        return Array(output[0..<(try result.get())])
    }

    /// Reads one datagram that arrived from `source`.
    ///
    /// - Returns: `.data` with a peer's payload inside `datagram`, `.handled` for a
    ///   response, `.ignored` for anything dropped (counted in `statistics`).
    public mutating func receive(_ datagram: UnsafeRawBufferPointer, from source: SocketAddress, now: Duration) -> Received {
        guard source == configuration.server else { return ignore() }
        if TURNChannelData.looksLikeChannelData(datagram) {
            guard let (channel, payload) = try? TURNChannelData.parse(datagram),
                  let peer = peersByChannel[channel], channels[peer]?.timer.installed == true
            else { return ignore() }
            return delivered(peer: peer, payload: payload)
        }
        guard STUNMessage.looksLikeSTUN(datagram) else { return ignore() }
        if datagram.uint16(at: 0) == STUNMessage.MessageType.dataIndication.rawValue {
            guard let (peer, payload) = Self.readDataIndication(datagram),
                  permissions[peer.with(port: 0)]?.installed == true
            else { return ignore() }
            return delivered(peer: peer, payload: payload)
        }
        guard let message = try? STUNMessage(parsing: datagram) else { return ignore() }
        return handleResponse(message, bytes: datagram, now: now) ? .handled : ignore()
    }

    /// `receive(_:from:now:)` on an array.
    public mutating func receive(_ datagram: [UInt8], from source: SocketAddress, now: Duration) -> Received {
        datagram.withUnsafeBytes { receive($0, from: source, now: now) }
    }

    private mutating func delivered(peer: SocketAddress, payload: Range<Int>) -> Received {
        statistics.bytesReceived += payload.count
        statistics.packetsReceived += 1
        return .data(peer: peer, payload: payload)
    }

    mutating func ignore() -> Received {
        statistics.ignoredDatagrams += 1
        return .ignored
    }

    mutating func emit(_ event: Event) { actions.append(.event(event)) }

    private func freeChannelNumber() -> UInt16? {
        var candidate = nextChannelNumber
        for _ in TURNChannelData.channelNumbers {
            if peersByChannel[candidate] == nil { return candidate }
            candidate = candidate == TURNChannelData.channelNumbers.upperBound ? TURNChannelData.channelNumbers.lowerBound : candidate + 1
        }
        return nil
    }
}
