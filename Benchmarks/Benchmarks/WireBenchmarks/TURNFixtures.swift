import BenchmarkSupport
import MediaEngine
import SRTPFixtures

/// The relay's addresses. Nothing is sent: the client's datagrams go nowhere and the
/// server's answers are made here.
enum TURNSettings {
    static let server = try! SocketAddress(host: "192.0.2.1", port: 3_478)
    static let relayed = try! SocketAddress(host: "192.0.2.1", port: 49_200)
    static let peer = try! SocketAddress(host: "198.51.100.20", port: 40_000)
}

/// A `TURNClient` with a channel bound to `TURNSettings.peer`, brought there by answering
/// its requests as coturn does: the 401 challenge, then Allocate and ChannelBind successes
/// signed with the long-term key.
func boundTURNClient() throws -> TURNClient {
    let credentials = TURNCredentials(username: "1700000000:bench", password: "c2VjcmV0")
    let realm = "bench.test"
    let key = try STUNIntegrityKey.longTerm(username: credentials.username, realm: realm, password: credentials.password)
    var client = TURNClient(configuration: .init(server: TURNSettings.server, credentials: credentials))

    func request() throws -> STUNMessage {
        var request: STUNMessage?
        while let action = client.nextAction() {
            if case .transmit(let bytes) = action { request = try STUNMessage(parsing: bytes) }
        }
        guard let request else { throw BenchmarkFailure("TURN: the client sent no request") }
        return request
    }
    func answer(_ request: STUNMessage, _ messageClass: STUNMessage.MessageType.Class, _ attributes: [STUNMessage.Attribute],
                key: STUNIntegrityKey?) throws {
        let type = STUNMessage.MessageType(method: request.type.method, messageClass: messageClass)
        let bytes = STUNMessage(type: type, transactionID: request.transactionID, attributes: attributes)
            .serialized(integrity: key, fingerprint: true)
        guard client.receive(bytes, from: TURNSettings.server, now: .zero) == .handled else {
            throw BenchmarkFailure("TURN: the client did not take the answer to \(request.type)")
        }
    }

    client.start(now: .zero)
    try answer(try request(), .errorResponse, [.errorCode(code: 401, reason: "Unauthorized"), .realm(realm), .nonce("bench")], key: nil)
    try answer(try request(), .successResponse, [.xorRelayedAddress(TURNSettings.relayed), .lifetime(600)], key: key)
    try client.bindChannel(to: TURNSettings.peer, now: .zero)
    try answer(try request(), .successResponse, [], key: key)
    guard client.boundChannel(for: TURNSettings.peer) != nil else { throw BenchmarkFailure("TURN: no channel bound") }
    return client
}

/// A client's relayed pair on the SRTP pairs' workload: protect, frame as ChannelData
/// (`TURNClient.writeData`), unwrap what the server would send back (`TURNClient.receive`
/// of the same bytes: ChannelData is alike both ways), unprotect in place.
final class RelayedSRTPRoundTrip {
    let srtp: SwiftSRTPRoundTrip
    private var turn: TURNClient
    let frame: UnsafeMutableRawBufferPointer

    init(profile: SRTPProfile, size: Int) throws {
        srtp = try SwiftSRTPRoundTrip(profile: profile, size: size)
        turn = try boundTURNClient()
        frame = .allocate(byteCount: TURNChannelData.size(payloadSize: srtp.workload.work.count), alignment: 16)
        frame.initializeMemory(as: UInt8.self, repeating: 0)
    }

    deinit { frame.deallocate() }

    /// One iteration; returns the RTP length.
    @inline(__always)
    func roundTripNext() throws -> Int {
        let length = try srtp.protectNext()
        let framed = try turn.writeData(UnsafeRawBufferPointer(rebasing: srtp.workload.work[0..<length]), to: TURNSettings.peer, into: frame)
        guard case .data(_, let payload) = turn.receive(UnsafeRawBufferPointer(rebasing: frame[0..<framed]), from: TURNSettings.server, now: .zero)
        else { throw BenchmarkFailure("TURN: the client did not unwrap its own ChannelData") }
        return try srtp.unprotect(UnsafeMutableRawBufferPointer(rebasing: frame[payload]), length: payload.count)
    }
}

/// TURN's part alone: an SRTP-sized payload framed as ChannelData and unwrapped again.
final class ChannelDataRoundTrip {
    private var turn: TURNClient
    private let payload: UnsafeMutableRawBufferPointer
    private let frame: UnsafeMutableRawBufferPointer

    /// - Parameter size: The payload: an RTP packet of the SRTP pairs' size with its SRTP tag.
    init(size: Int) throws {
        turn = try boundTURNClient()
        payload = .allocate(byteCount: size, alignment: 16)
        payload.copyBytes(from: pseudoRandomBytes(count: size, seed: UInt32(size)))
        frame = .allocate(byteCount: TURNChannelData.size(payloadSize: size), alignment: 16)
        frame.initializeMemory(as: UInt8.self, repeating: 0)
    }

    deinit {
        payload.deallocate()
        frame.deallocate()
    }

    /// One iteration; returns the unwrapped payload's length.
    @inline(__always)
    func roundTripNext() throws -> Int {
        let framed = try turn.writeData(UnsafeRawBufferPointer(payload), to: TURNSettings.peer, into: frame)
        guard case .data(_, let unwrapped) = turn.receive(UnsafeRawBufferPointer(rebasing: frame[0..<framed]), from: TURNSettings.server, now: .zero),
              unwrapped.count == payload.count
        else { throw BenchmarkFailure("TURN: the client did not unwrap its own ChannelData") }
        return unwrapped.count
    }
}

/// Throws unless 512 relayed round trips give back the plain packets byte for byte, in
/// ChannelData frames of the size RFC 8656 gives.
func checkRelayedRoundTrip(profile: SRTPProfile, size: Int) throws {
    let relayed = try RelayedSRTPRoundTrip(profile: profile, size: size)
    for packet in 0..<512 {
        let length = try relayed.roundTripNext()
        let plain = relayed.frame[TURNChannelData.headerSize..<(TURNChannelData.headerSize + size)]
        guard length == size, plain.elementsEqual(relayed.srtp.workload.prepared) else {
            throw BenchmarkFailure("relay \(profile) \(size) B: packet \(packet) did not come back as sent")
        }
    }
}
