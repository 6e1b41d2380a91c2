import BenchmarkSupport
import MediaEngine

/// One audio level byte and one transport-wide sequence number, as the sender writes them.
struct RTPExtensionValues: Equatable {
    var audioLevel: UInt8
    var transportSequence: UInt16

    func block() throws(PacketError) -> RTPHeaderExtensionBlock {
        try RTPHeaderExtensionBlock(form: .oneByte, elements: [
            RTPHeaderExtension(id: WireSettings.audioLevelID, value: [audioLevel]),
            RTPHeaderExtension(id: WireSettings.transportSequenceID,
                               value: [UInt8(transportSequence >> 8), UInt8(truncatingIfNeeded: transportSequence)]),
        ])
    }
}

/// One second of 200-byte packets as a sender emits them: 20 ms apart, sequence numbers
/// and transport-wide sequence numbers counting up, audio levels varying, the marker on
/// the first. Serialized once by RTPPacket.
func makeRTPInput() throws -> (packets: [RTPPacket], bytes: PacketSequence) {
    var packets: [RTPPacket] = []
    for index in 0..<WireSettings.rtpPacketCount {
        let values = RTPExtensionValues(audioLevel: UInt8(truncatingIfNeeded: 0x80 | (20 + index % 40)),
                                        transportSequence: UInt16(truncatingIfNeeded: 40_000 + index))
        let header = RTPHeader(marker: index == 0, payloadType: 111, sequenceNumber: UInt16(truncatingIfNeeded: 1_000 + index),
                               timestamp: UInt32(truncatingIfNeeded: 160_000 + 960 * index), ssrc: WireSettings.ssrc,
                               extensionBlock: try values.block())
        let payloadSize = WireSettings.rtpPacketSize - header.size
        packets.append(RTPPacket(header: header, payload: pseudoRandomBytes(count: payloadSize, seed: UInt32(index))))
    }
    let bytes = try packets.map { (packet) throws(PacketError) in try packet.serialized() }
    guard bytes.allSatisfy({ $0.count == WireSettings.rtpPacketSize }) else {
        throw BenchmarkFailure("RTP: input packets are not \(WireSettings.rtpPacketSize) bytes")
    }
    return (packets, PacketSequence(bytes))
}

/// What a forwarding hop does to each packet: parse it with RTPPacketView (marker,
/// sequence number, timestamp, SSRC, payload, the two extension values), then write it
/// out again under its own SSRC and sequence numbering through one reused RTPHeader
/// whose extension values are overwritten in place, followed by the payload, into one
/// reused buffer.
final class RTPForwarding {
    static let outgoingSSRC: UInt32 = 0x0BAD_CAFE
    static let firstOutgoingSequence: UInt16 = 0xFFF0  // wraps during the run
    static let firstOutgoingTransportSequence: UInt16 = 7

    private let input: PacketSequence
    let output = UnsafeMutableRawBufferPointer.allocate(byteCount: 1_500, alignment: 16)
    private var header: RTPHeader
    private var sequenceNumber = RTPForwarding.firstOutgoingSequence
    private var transportSequence = RTPForwarding.firstOutgoingTransportSequence
    private var next = 0

    init() throws {
        input = try makeRTPInput().bytes
        output.initializeMemory(as: UInt8.self, repeating: 0)
        header = RTPHeader(payloadType: 111, sequenceNumber: 0, timestamp: 0, ssrc: RTPForwarding.outgoingSSRC,
                           extensionBlock: try RTPExtensionValues(audioLevel: 0x7F, transportSequence: 0).block())
    }

    deinit { output.deallocate() }

    /// Parses the next input packet and writes the forwarded packet into `output`.
    /// Returns the forwarded packet's length.
    @inline(__always)
    func forwardNext() throws -> Int {
        let view = try RTPPacketView(input[next])
        next = next + 1 == input.count ? 0 : next + 1
        guard view.ssrc == WireSettings.ssrc,
              let audioLevel = view.extensionValue(id: WireSettings.audioLevelID),
              view.extensionValue(id: WireSettings.transportSequenceID) != nil
        else { throw BenchmarkFailure("RTP: input packet lost its SSRC or extensions") }
        let payload = view.payload

        header.marker = view.marker
        header.payloadType = view.payloadType
        header.timestamp = view.timestamp
        header.sequenceNumber = sequenceNumber
        sequenceNumber &+= 1
        // The big-endian bytes of the outgoing transport-wide sequence number.
        let transport = transportSequence
        transportSequence &+= 1
        let written = withUnsafeBytes(of: transport.bigEndian) { transportBytes in
            header.extensionBlock!.overwrite(id: WireSettings.transportSequenceID, with: transportBytes)
        }
        guard written, header.extensionBlock!.overwrite(id: WireSettings.audioLevelID, with: audioLevel) else {
            throw BenchmarkFailure("RTP: extension element missing from the reused header")
        }

        let headerSize = try header.serialize(into: output)
        UnsafeMutableRawBufferPointer(rebasing: output[headerSize..<(headerSize + payload.count)]).copyMemory(from: payload)
        return headerSize + payload.count
    }
}

/// Throws unless RTPForwarding writes, for two passes over the input, exactly the
/// packets RTPPacket.serialized() gives for the expected headers.
func checkRTPForwarding() throws {
    let (packets, _) = try makeRTPInput()
    let forwarding = try RTPForwarding()
    var sequenceNumber = RTPForwarding.firstOutgoingSequence
    var transportSequence = RTPForwarding.firstOutgoingTransportSequence
    for index in 0..<2 * packets.count {
        let input = packets[index % packets.count]
        let length = try forwarding.forwardNext()
        var expected = input
        expected.header.ssrc = RTPForwarding.outgoingSSRC
        expected.header.sequenceNumber = sequenceNumber
        expected.header.extensionBlock = try RTPExtensionValues(
            audioLevel: input.header.extensionBlock!.value(id: WireSettings.audioLevelID)![0],
            transportSequence: transportSequence).block()
        sequenceNumber &+= 1
        transportSequence &+= 1
        let expectedBytes = try expected.serialized()
        guard length == expectedBytes.count, forwarding.output[..<length].elementsEqual(expectedBytes) else {
            throw BenchmarkFailure("RTP: forwarded packet \(index) differs from RTPPacket.serialized() "
                                   + "(\(length) vs \(expectedBytes.count) bytes)")
        }
    }
}
