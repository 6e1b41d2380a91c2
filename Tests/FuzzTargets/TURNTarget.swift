import MediaEngine

/// The TURN client's receive path (RFC 8656 over UDP): ChannelData, Data indications and
/// responses, driven on a client that already holds an allocation, a permission and a
/// bound channel, as a relayed call's client does.
enum TURNTarget {
    static let target = FuzzTarget(
        name: "turn",
        summary: "TURNChannelData.parse, then a script of datagrams (raw, ChannelData, Data indications, responses signed for the pending request), requests and time on an allocated TURNClient"
    ) { bytes in
        checkChannelData(bytes)
        var script = Script(input: FuzzInput(bytes))
        script.run()
        return script.taken > 0
    }

    static let server = SocketAddress(addressBytes: [203, 0, 113, 1], port: 3_478)!
    static let stranger = SocketAddress(addressBytes: [203, 0, 113, 66], port: 3_478)!
    static let peers = [
        SocketAddress(addressBytes: [192, 0, 2, 10], port: 5_000)!,  // a permission
        SocketAddress(addressBytes: [192, 0, 2, 20], port: 6_000)!,  // a bound channel
        SocketAddress(addressBytes: [192, 0, 2, 30], port: 7_000)!,  // nothing
        SocketAddress(addressBytes: [0x20, 0x01, 0x0D, 0xB8] + [UInt8](repeating: 0, count: 11) + [1], port: 8_000)!,
    ]
    static let credentials = TURNCredentials(username: "1700000000:fuzz", password: "c2VjcmV0")
    static let realm = "fuzz.example"
    static let key = try! STUNIntegrityKey.longTerm(username: credentials.username, realm: realm, password: credentials.password)

    /// A payload range that parses lies after the 4-byte header, inside the datagram.
    private static func checkChannelData(_ bytes: UnsafeRawBufferPointer) {
        guard let (channel, payload) = try? TURNChannelData.parse(bytes) else { return }
        FuzzCheck.require(TURNChannelData.channelNumbers.contains(channel), "ChannelData on channel \(channel)")
        FuzzCheck.require(payload.lowerBound == TURNChannelData.headerSize && payload.upperBound <= bytes.count,
                          "ChannelData payload \(payload) in \(bytes.count) bytes")
        FuzzCheck.require(TURNChannelData.looksLikeChannelData(bytes), "parsed ChannelData fails looksLikeChannelData")
    }

    /// The client the script starts from: allocated after a 401 challenge, with a
    /// permission for peer 0 and a channel bound to peer 1. A value, copied per input.
    static let allocated: TURNClient = {
        var client = TURNClient(configuration: TURNClient.Configuration(server: server, credentials: credentials))
        client.start(now: .zero)
        func answer(_ client: inout TURNClient, _ build: (STUNMessage) -> [UInt8]) {
            var requests: [STUNMessage] = []
            while let action = client.nextAction() {
                if case .transmit(let bytes) = action, let message = try? STUNMessage(parsing: bytes) { requests.append(message) }
            }
            for request in requests {
                precondition(client.receive(build(request), from: server, now: .zero) == .handled, "scripted TURN server not understood")
            }
        }
        answer(&client) { request in
            STUNMessage(type: .init(method: request.type.method, messageClass: .errorResponse), transactionID: request.transactionID,
                        attributes: [.errorCode(code: 401, reason: "Unauthorized"), .realm(realm), .nonce("nonce-1")])
                .serialized(fingerprint: true)
        }
        answer(&client) { request in
            success(request, [.xorRelayedAddress(SocketAddress(addressBytes: [203, 0, 113, 1], port: 49_200)!),
                              .xorMappedAddress(SocketAddress(addressBytes: [198, 51, 100, 7], port: 40_000)!), .lifetime(600)])
        }
        precondition(client.state == .allocated, "scripted TURN allocation failed: \(client.state)")
        try! client.createPermission(for: peers[0], now: .zero)
        try! client.bindChannel(to: peers[1], now: .zero)
        answer(&client) { success($0, []) }
        while client.nextAction() != nil {}
        precondition(client.boundChannel(for: peers[1]) != nil, "scripted channel bind failed")
        return client
    }()

    static func success(_ request: STUNMessage, _ attributes: [STUNMessage.Attribute]) -> [UInt8] {
        STUNMessage(type: .init(method: request.type.method, messageClass: .successResponse), transactionID: request.transactionID,
                    attributes: attributes).serialized(integrity: key, fingerprint: true)
    }

    /// Runs the input as a script against a copy of `allocated`.
    struct Script {
        var input: FuzzInput
        var client = TURNTarget.allocated
        var now = Duration.zero
        /// The last request the client sent, which a scripted response answers.
        var pending: STUNMessage?
        /// Datagrams from the server the client delivered or handled.
        var taken = 0

        mutating func run() {
            var steps = 0
            while !input.isAtEnd && steps < 1_024 {
                steps += 1
                step(input.byte())
                drain()
            }
        }

        mutating func step(_ opcode: UInt8) {
            switch opcode % 10 {
            case 0: deliver(input.chunk(), from: TURNTarget.server)
            case 1:
                let datagram = input.chunk()
                let result = datagram.withUnsafeBytes { client.receive($0, from: TURNTarget.stranger, now: now) }
                FuzzCheck.require(result == .ignored, "TURN took a datagram from a stranger: \(result)")
            case 2: respond(opcode)
            case 3:
                let channel = 0x4000 | UInt16(input.byte() & 0x03)
                let payload = input.chunk()
                var frame = [UInt8](repeating: 0, count: TURNChannelData.size(payloadSize: payload.count))
                _ = payload.withUnsafeBytes { payload in frame.withUnsafeMutableBytes { try? TURNChannelData.write(channel: channel, payload: payload, into: $0) } }
                frame.removeLast(Int(input.byte() % 4) % (frame.count - 3))  // padding is optional on receipt
                deliver(frame, from: TURNTarget.server)
            case 4:
                let peer = TURNTarget.peers[Int(input.byte()) % TURNTarget.peers.count]
                let indication = STUNMessage(type: .dataIndication, transactionID: STUNTransactionID(Array((input.bytes(12) + [UInt8](repeating: 0, count: 12)).prefix(12)))!,
                                             attributes: [.xorPeerAddress(peer), .data(input.chunk())])
                deliver(indication.serialized(fingerprint: opcode & 0x10 != 0), from: TURNTarget.server)
            case 5:
                now += .milliseconds(100 * Int(input.byte()))
                client.update(now: now)
            case 6: try? client.createPermission(for: TURNTarget.peers[Int(input.byte()) % TURNTarget.peers.count], now: now)
            case 7: _ = try? client.bindChannel(to: TURNTarget.peers[Int(input.byte()) % TURNTarget.peers.count], now: now)
            case 8:
                let peer = TURNTarget.peers[Int(input.byte()) % TURNTarget.peers.count]
                let payload = input.chunk()
                if let framed = try? client.data(payload, to: peer) {
                    FuzzCheck.require(framed.count <= payload.count + 52, "TURN framed \(payload.count) bytes as \(framed.count)")
                }
            default: client.close(now: now)
            }
        }

        /// A response to the pending request, built from the input's STUN message: its
        /// transaction ID replaced, signed with the allocation's key (unless opcode bit 4 says
        /// not to) and fingerprinted.
        mutating func respond(_ opcode: UInt8) {
            let chunk = input.chunk()
            guard let pending, var message = try? STUNMessage(parsing: chunk) else { return deliver(chunk, from: TURNTarget.server) }
            let responseClass: STUNMessage.MessageType.Class = opcode & 0x20 == 0 ? .successResponse : .errorResponse
            message.type = .init(method: pending.type.method, messageClass: responseClass)
            message.transactionID = pending.transactionID
            let signed = opcode & 0x10 == 0
            guard message.serializedSize(integrity: signed ? TURNTarget.key : nil, fingerprint: true) - 20 <= 65_532,
                  message.attributes.count <= STUNMessage.maximumAttributeCount - 2 else { return }
            deliver(message.serialized(integrity: signed ? TURNTarget.key : nil, fingerprint: true), from: TURNTarget.server)
        }

        mutating func deliver(_ datagram: [UInt8], from source: SocketAddress) {
            let result = datagram.withUnsafeBytes { client.receive($0, from: source, now: now) }
            if result != .ignored { taken += 1 }
            if case .data(let peer, let payload) = result {
                FuzzCheck.require(payload.lowerBound >= 4 && payload.upperBound <= datagram.count, "TURN payload \(payload) in \(datagram.count) bytes")
                // Permissions are per IP (RFC 8656 section 9): a Data indication from another
                // port of a permitted peer is delivered.
                FuzzCheck.require(TURNTarget.peers.contains { $0.with(port: 0) == peer.with(port: 0) },
                                  "TURN delivered data from \(peer), whose IP the script never named")
            }
        }

        /// Takes the client's actions; what it sends must be STUN or ChannelData.
        mutating func drain() {
            while let action = client.nextAction() {
                guard case .transmit(let bytes) = action else { continue }
                if let message = try? STUNMessage(parsing: bytes) {
                    if message.type.messageClass == .request { pending = message }
                } else {
                    FuzzCheck.require(bytes.withUnsafeBytes { (try? TURNChannelData.parse($0)) != nil }, "TURN sent neither STUN nor ChannelData")
                }
            }
        }
    }
}
