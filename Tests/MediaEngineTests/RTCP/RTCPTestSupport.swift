import Testing
@testable import MediaEngine

/// Every RTCP suite nests in here, so `swift test --filter RTCPTests` runs them all.
@Suite struct RTCPTests {
    /// The parse/serialize surface every RTCP wire type offers.
    protocol WireFormat: Hashable {
        init(parsing bytes: UnsafeRawBufferPointer) throws(PacketError)
        init(parsing bytes: [UInt8]) throws(PacketError)
        var serializedSize: Int { get }
        func serialize(into buffer: UnsafeMutableRawBufferPointer) throws(PacketError) -> Int
        func serialized() -> [UInt8]
    }

    /// A byte vector and what it must parse to.
    struct Vector<Packet: WireFormat & Sendable>: Sendable, CustomTestStringConvertible {
        let name: String
        let bytes: [UInt8]
        let packet: Packet

        init(_ name: String, _ bytes: [UInt8], _ packet: Packet) {
            self.name = name
            self.bytes = bytes
            self.packet = packet
        }

        var testDescription: String { name }
    }

    /// Malformed bytes, the error code they must give, and numbers the message must name.
    struct ErrorRow: Sendable, CustomTestStringConvertible {
        let name: String
        let bytes: [UInt8]
        let code: PacketError.Code
        let mentions: [String]

        init(_ name: String, _ bytes: [UInt8], _ code: PacketError.Code, mentions: [String] = []) {
            self.name = name
            self.bytes = bytes
            self.code = code
            self.mentions = mentions
        }

        var testDescription: String { name }
    }

    /// Parses `vector` both ways, checks the value, and checks that every serializer gives
    /// the same bytes back and refuses a buffer one byte short.
    static func checkRoundTrip<Packet: WireFormat>(
        _ vector: Vector<Packet>, sourceLocation: SourceLocation = #_sourceLocation
    ) throws {
        let parsed = try Packet(parsing: vector.bytes)
        #expect(parsed == vector.packet, sourceLocation: sourceLocation)
        let parsedRaw = try vector.bytes.withUnsafeBufferPointer { (buffer) throws(PacketError) in
            try Packet(parsing: UnsafeRawBufferPointer(buffer))
        }
        #expect(parsedRaw == parsed, sourceLocation: sourceLocation)
        #expect(vector.packet.serializedSize == vector.bytes.count, sourceLocation: sourceLocation)
        #expect(vector.packet.serialized() == vector.bytes, sourceLocation: sourceLocation)

        // Into a larger, dirty buffer: only the packet's bytes are written.
        var buffer = [UInt8](repeating: 0xEE, count: vector.bytes.count + 8)
        let written = try buffer.withUnsafeMutableBytes { try vector.packet.serialize(into: $0) }
        #expect(written == vector.bytes.count, sourceLocation: sourceLocation)
        #expect(Array(buffer[..<written]) == vector.bytes, sourceLocation: sourceLocation)
        #expect(buffer[written...].allSatisfy { $0 == 0xEE }, sourceLocation: sourceLocation)

        var short = [UInt8](repeating: 0, count: vector.bytes.count - 1)
        let error = #expect(throws: PacketError.self, sourceLocation: sourceLocation) {
            try short.withUnsafeMutableBytes { try vector.packet.serialize(into: $0) }
        }
        #expect(error?.code == .bufferTooSmall, sourceLocation: sourceLocation)
        #expect(error?.message.contains("\(vector.bytes.count - 1) < \(vector.bytes.count)") == true, sourceLocation: sourceLocation)
    }

    /// Checks that `Packet` refuses `row` with its code and a message naming its numbers.
    static func checkRejects<Packet: WireFormat>(
        _ type: Packet.Type, _ row: ErrorRow, sourceLocation: SourceLocation = #_sourceLocation
    ) {
        let error = #expect(throws: PacketError.self, "\(row.name)", sourceLocation: sourceLocation) {
            try Packet(parsing: row.bytes)
        }
        #expect(error?.code == row.code, "\(row.name): \(String(describing: error))", sourceLocation: sourceLocation)
        for number in row.mentions {
            #expect(
                error?.message.contains(number) == true, "\(row.name): \(String(describing: error)) lacks \(number)",
                sourceLocation: sourceLocation
            )
        }
    }

    /// Checks that the compound parser refuses `row` too, with the same code: a packet
    /// that is malformed alone is malformed inside a datagram.
    static func checkCompoundRejects(_ row: ErrorRow, sourceLocation: SourceLocation = #_sourceLocation) {
        let error = #expect(throws: PacketError.self, "\(row.name)", sourceLocation: sourceLocation) {
            try RTCPPacket.parseCompound(row.bytes)
        }
        #expect(error?.code == row.code, "\(row.name): \(String(describing: error))", sourceLocation: sourceLocation)
    }

    /// Deterministic SplitMix64, so fuzz and property inputs are the same on every run.
    struct SplitMix64: RandomNumberGenerator {
        private var state: UInt64

        init(seed: UInt64) { state = seed }

        mutating func next() -> UInt64 {
            state &+= 0x9E37_79B9_7F4A_7C15
            var z = state
            z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
            z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
            return z ^ (z >> 31)
        }
    }
}

extension RTCPHeader: RTCPTests.WireFormat {}
extension ReceptionReport: RTCPTests.WireFormat {}
extension SenderReport: RTCPTests.WireFormat {}
extension ReceiverReport: RTCPTests.WireFormat {}
extension SourceDescription: RTCPTests.WireFormat {}
extension Goodbye: RTCPTests.WireFormat {}
extension GenericNACK: RTCPTests.WireFormat {}
extension PictureLossIndication: RTCPTests.WireFormat {}
extension FullIntraRequest: RTCPTests.WireFormat {}
extension ReceiverEstimatedMaxBitrate: RTCPTests.WireFormat {}
extension RTCPPacket: RTCPTests.WireFormat {}
