import Testing
@testable import MediaEngine

/// The TURN and ICE attributes: byte-exact vectors, one malformed row per attribute type,
/// and TURN ChannelData framing.
@Suite struct STUNAttributeTests {
    typealias Vector = RTCPTests.Vector<STUNMessage>
    typealias ErrorRow = RTCPTests.ErrorRow

    static let id = STUNMessageTests.countingID
    static func message(_ body: [UInt8], type: UInt16 = 0x0003) -> [UInt8] { STUNMessageTests.message(body, type: type) }

    static let valid: [Vector] = [
        Vector("Allocate request", message([
            0x00, 0x19, 0x00, 0x04,  // REQUESTED-TRANSPORT, length 4
            0x11, 0x00, 0x00, 0x00,  // UDP (17), 3 reserved bytes
            0x00, 0x0D, 0x00, 0x04,  // LIFETIME, length 4
            0x00, 0x00, 0x02, 0x58,  // 600 s
            0x80, 0x22, 0x00, 0x02,  // SOFTWARE, length 2
            0x4D, 0x45, 0x00, 0x00,  // "ME", 2 padding bytes
        ]), STUNMessage(type: .allocateRequest, transactionID: id, attributes: [
            .requestedTransport(17), .lifetime(600), .software("ME"),
        ])),
        Vector("Allocate success", message([
            0x00, 0x16, 0x00, 0x08,  // XOR-RELAYED-ADDRESS, length 8
            0x00, 0x01, 0xE1, 0x13,  // IPv4, port 49153 XOR 0x2112
            0xE1, 0x12, 0xA6, 0x43,  // 192.0.2.1 XOR magic cookie
            0x00, 0x20, 0x00, 0x08,  // XOR-MAPPED-ADDRESS, length 8
            0x00, 0x01, 0x32, 0x9E,  // IPv4, port 5004 XOR 0x2112
            0x2B, 0x12, 0xA4, 0x43,  // 10.0.0.1 XOR magic cookie
            0x00, 0x0D, 0x00, 0x04,  // LIFETIME, length 4
            0x00, 0x00, 0x0E, 0x10,  // 3600 s
        ], type: 0x0103), STUNMessage(type: .allocateSuccess, transactionID: id, attributes: [
            .xorRelayedAddress(try! SocketAddress(host: "192.0.2.1", port: 49_153)),
            .xorMappedAddress(try! SocketAddress(host: "10.0.0.1", port: 5_004)),
            .lifetime(3_600),
        ])),
        Vector("Allocate error 401 with REALM and NONCE", message([
            0x00, 0x09, 0x00, 0x04,  // ERROR-CODE, length 4
            0x00, 0x00, 0x04, 0x01,  // 401, no reason
            0x00, 0x14, 0x00, 0x01,  // REALM, length 1
            0x72, 0x00, 0x00, 0x00,  // "r"
            0x00, 0x15, 0x00, 0x02,  // NONCE, length 2
            0x6E, 0x31, 0x00, 0x00,  // "n1"
        ], type: 0x0113), STUNMessage(type: .allocateError, transactionID: id, attributes: [
            .errorCode(code: 401, reason: ""), .realm("r"), .nonce("n1"),
        ])),
        Vector("ChannelBind request", message([
            0x00, 0x0C, 0x00, 0x04,  // CHANNEL-NUMBER, length 4
            0x40, 0x01, 0x00, 0x00,  // 0x4001, 2 reserved bytes
            0x00, 0x12, 0x00, 0x08,  // XOR-PEER-ADDRESS, length 8
            0x00, 0x01, 0xA1, 0x47,  // IPv4, port 32853 XOR 0x2112
            0xE1, 0x12, 0xA6, 0x43,  // 192.0.2.1 XOR magic cookie
        ], type: 0x0009), STUNMessage(type: .channelBindRequest, transactionID: id, attributes: [
            .channelNumber(0x4001), .xorPeerAddress(try! SocketAddress(host: "192.0.2.1", port: 32_853)),
        ])),
        Vector("Data indication", message([
            0x00, 0x12, 0x00, 0x08,  // XOR-PEER-ADDRESS, length 8
            0x00, 0x01, 0xA1, 0x47,  // IPv4, port 32853 XOR 0x2112
            0xE1, 0x12, 0xA6, 0x43,  // 192.0.2.1 XOR magic cookie
            0x00, 0x13, 0x00, 0x03,  // DATA, length 3
            0x01, 0x02, 0x03, 0x00,  // payload, 1 padding byte
        ], type: 0x0017), STUNMessage(type: .dataIndication, transactionID: id, attributes: [
            .xorPeerAddress(try! SocketAddress(host: "192.0.2.1", port: 32_853)), .data([1, 2, 3]),
        ])),
        Vector("ICE check attributes", message([
            0x00, 0x24, 0x00, 0x04,  // PRIORITY, length 4
            0x6E, 0x00, 0x01, 0xFF,
            0x00, 0x25, 0x00, 0x00,  // USE-CANDIDATE, length 0
            0x80, 0x2A, 0x00, 0x08,  // ICE-CONTROLLING, length 8
            0x01, 0x02, 0x03, 0x04, 0x05, 0x06, 0x07, 0x08,
            0x80, 0x29, 0x00, 0x08,  // ICE-CONTROLLED, length 8
            0xF1, 0xF2, 0xF3, 0xF4, 0xF5, 0xF6, 0xF7, 0xF8,
            0x00, 0x26, 0x00, 0x02,  // PADDING, length 2
            0x00, 0x00, 0x00, 0x00,
        ], type: 0x0001), STUNMessage(type: .bindingRequest, transactionID: id, attributes: [
            .priority(0x6E00_01FF), .useCandidate, .iceControlling(0x0102_0304_0506_0708),
            .iceControlled(0xF1F2_F3F4_F5F6_F7F8), .padding([0, 0]),
        ])),
        Vector("420 with UNKNOWN-ATTRIBUTES", message([
            0x00, 0x09, 0x00, 0x04,  // ERROR-CODE, length 4
            0x00, 0x00, 0x04, 0x14,  // 420
            0x00, 0x0A, 0x00, 0x06,  // UNKNOWN-ATTRIBUTES, length 6
            0x00, 0x30, 0x00, 0x31,  // 0x0030, 0x0031,
            0x00, 0x32, 0x00, 0x00,  // 0x0032, 2 padding bytes
        ], type: 0x0111), STUNMessage(type: .bindingError, transactionID: id, attributes: [
            .errorCode(code: 420, reason: ""), .unknownAttributes([0x30, 0x31, 0x32]),
        ])),
    ]

    @Test(arguments: valid)
    func parseThenSerializeGivesTheBytesBack(vector: Vector) throws {
        try RTCPTests.checkRoundTrip(vector)
    }

    @Test func turnAccessorsAndTypes() throws {
        let success = try STUNMessage(parsing: Self.valid[1].bytes)
        #expect(success.type.description == "Allocate success response")
        #expect(success.xorRelayedAddress?.description == "192.0.2.1:49153")
        #expect(success.lifetime == 3_600)
        let challenge = try STUNMessage(parsing: Self.valid[2].bytes)
        #expect(challenge.realm == "r")
        #expect(challenge.nonce == "n1")
        let data = try STUNMessage(parsing: Self.valid[4].bytes)
        #expect(data.xorPeerAddress?.port == 32_853)
        #expect(data.data == [1, 2, 3])
        let types: [(STUNMessage.MessageType, UInt16)] = [
            (.allocateRequest, 0x0003), (.allocateSuccess, 0x0103), (.allocateError, 0x0113),
            (.refreshRequest, 0x0004), (.refreshSuccess, 0x0104), (.refreshError, 0x0114),
            (.sendIndication, 0x0016), (.dataIndication, 0x0017),
            (.createPermissionRequest, 0x0008), (.createPermissionSuccess, 0x0108), (.createPermissionError, 0x0118),
            (.channelBindRequest, 0x0009), (.channelBindSuccess, 0x0109), (.channelBindError, 0x0119),
        ]
        for (type, raw) in types { #expect(type.rawValue == raw, "\(type)") }
        #expect(STUNMessage.MessageType.sendIndication.description == "Send indication")
        #expect(STUNMessage.MessageType(method: 0x00A, messageClass: .request).description == "method 10 request")
    }

    @Test func comprehensionRequiredUnknownTypesAreListedOnce() throws {
        let message = STUNMessage(type: .bindingRequest, transactionID: Self.id, attributes: [
            .unknown(type: 0x0030, value: []), .unknown(type: 0xC057, value: [1]), .username("a"),
            .unknown(type: 0x7FFF, value: []), .unknown(type: 0x0030, value: [2]),
        ])
        let parsed = try STUNMessage(parsing: message.serialized())
        #expect(parsed.comprehensionRequiredUnknownTypes == [0x0030, 0x7FFF])
        let answer = STUNMessage(type: .bindingError, transactionID: parsed.transactionID, attributes: [
            .errorCode(code: 420, reason: "Unknown Attribute"), .unknownAttributes(parsed.comprehensionRequiredUnknownTypes),
        ])
        #expect(try STUNMessage(parsing: answer.serialized()).unknownAttributes == [0x0030, 0x7FFF])
    }

    /// One attribute of `type` with a value of `value` (padded with zeros).
    static func attribute(_ type: UInt16, _ value: [UInt8], length: Int? = nil) -> [UInt8] {
        let length = length ?? value.count
        let padding = [UInt8](repeating: 0, count: (4 - value.count % 4) % 4)
        return [UInt8(type >> 8), UInt8(type & 0xFF), UInt8(length >> 8), UInt8(length & 0xFF)] + value + padding
    }

    static let malformed: [ErrorRow] = [
        ErrorRow("MESSAGE-INTEGRITY of 19 bytes", message(attribute(0x0008, .init(repeating: 1, count: 19))),
                 .badLength, mentions: ["MESSAGE-INTEGRITY length 19 != 20"]),
        ErrorRow("MESSAGE-INTEGRITY-SHA256 of 12 bytes", message(attribute(0x001C, .init(repeating: 1, count: 12))),
                 .badLength, mentions: ["MESSAGE-INTEGRITY-SHA256 length 12"]),
        ErrorRow("MESSAGE-INTEGRITY-SHA256 of 18 bytes", message(attribute(0x001C, .init(repeating: 1, count: 18))),
                 .badLength, mentions: ["length 18", "steps of 4"]),
        ErrorRow("FINGERPRINT of 3 bytes", message(attribute(0x8028, [1, 2, 3])), .badLength, mentions: ["FINGERPRINT length 3 != 4"]),
        ErrorRow("REALM not UTF-8", message(attribute(0x0014, [0x61, 0xFF])), .badField, mentions: ["REALM", "UTF-8"]),
        ErrorRow("NONCE of 764 bytes", message(attribute(0x0015, .init(repeating: 0x6E, count: 764))),
                 .badLength, mentions: ["NONCE of 764 bytes > 763"]),
        ErrorRow("SOFTWARE not UTF-8", message(attribute(0x8022, [0xC0])), .badField, mentions: ["SOFTWARE", "UTF-8"]),
        ErrorRow("UNKNOWN-ATTRIBUTES of odd length", message(attribute(0x000A, [0x00, 0x30, 0x00])),
                 .badLength, mentions: ["UNKNOWN-ATTRIBUTES length 3 is odd"]),
        ErrorRow("LIFETIME of 3 bytes", message(attribute(0x000D, [0, 2, 0x58])), .badLength, mentions: ["LIFETIME length 3 != 4"]),
        ErrorRow("LIFETIME of 8 bytes", message(attribute(0x000D, [0, 0, 0, 0, 0, 0, 2, 0x58])), .badLength, mentions: ["LIFETIME length 8"]),
        ErrorRow("XOR-PEER-ADDRESS family 0", message(attribute(0x0012, [0, 0, 0xA1, 0x47, 1, 2, 3, 4])),
                 .badField, mentions: ["XOR-PEER-ADDRESS family 0"]),
        ErrorRow("XOR-PEER-ADDRESS truncated", message(attribute(0x0012, [0, 1, 0xA1, 0x47, 1, 2])),
                 .badLength, mentions: ["XOR-PEER-ADDRESS family 1 length 6 != 8"]),
        ErrorRow("XOR-RELAYED-ADDRESS IPv6 of IPv4 length", message(attribute(0x0016, [0, 2, 0xA1, 0x47, 1, 2, 3, 4])),
                 .badLength, mentions: ["XOR-RELAYED-ADDRESS family 2 length 8 != 20"]),
        ErrorRow("XOR-RELAYED-ADDRESS family 3", message(attribute(0x0016, [0, 3, 0xA1, 0x47, 1, 2, 3, 4])),
                 .badField, mentions: ["XOR-RELAYED-ADDRESS family 3"]),
        ErrorRow("REQUESTED-TRANSPORT of 1 byte", message(attribute(0x0019, [17])), .badLength, mentions: ["REQUESTED-TRANSPORT length 1 != 4"]),
        ErrorRow("CHANNEL-NUMBER 0x3FFF", message(attribute(0x000C, [0x3F, 0xFF, 0, 0])), .badField, mentions: ["0x3FFF", "0x4000...0x4FFF"]),
        ErrorRow("CHANNEL-NUMBER 0x5000", message(attribute(0x000C, [0x50, 0x00, 0, 0])), .badField, mentions: ["0x5000"]),
        ErrorRow("CHANNEL-NUMBER of 2 bytes", message(attribute(0x000C, [0x40, 0x00])), .badLength, mentions: ["CHANNEL-NUMBER length 2 != 4"]),
        ErrorRow("PRIORITY of 2 bytes", message(attribute(0x0024, [1, 2])), .badLength, mentions: ["PRIORITY length 2 != 4"]),
        ErrorRow("USE-CANDIDATE with a value", message(attribute(0x0025, [1, 2, 3, 4])), .badLength, mentions: ["USE-CANDIDATE length 4 != 0"]),
        ErrorRow("ICE-CONTROLLED of 4 bytes", message(attribute(0x8029, [1, 2, 3, 4])), .badLength, mentions: ["ICE-CONTROLLED length 4 != 8"]),
        ErrorRow("ICE-CONTROLLING of 12 bytes", message(attribute(0x802A, .init(repeating: 1, count: 12))),
                 .badLength, mentions: ["ICE-CONTROLLING length 12 != 8"]),
        ErrorRow("DATA past the end", message([0x00, 0x13, 0x00, 0x10, 1, 2, 3, 4]),
                 .badLength, mentions: ["0x0013", "length 16", "4 bytes left"]),
        ErrorRow("PADDING padding past the end", message([0x00, 0x26, 0x00, 0x05, 0, 0, 0, 0]),
                 .badLength, mentions: ["0x0026", "length 5", "8 padded"]),
        ErrorRow("LIFETIME length past the message", message([0x00, 0x0D, 0x00, 0x04]),
                 .badLength, mentions: ["0x000D", "0 bytes left"]),
    ]

    @Test(arguments: malformed)
    func malformedAttributesAreTypedErrors(row: ErrorRow) {
        RTCPTests.checkRejects(STUNMessage.self, row)
    }

    @Test func serializeRefusesBadTURNValues() {
        let rows: [(STUNMessage.Attribute, String)] = [
            (.channelNumber(0x3FFF), "0x3FFF"), (.channelNumber(0x5000), "0x5000"),
            (.messageIntegrity([1, 2]), "2 bytes != 20"), (.messageIntegritySHA256([UInt8](repeating: 0, count: 36)), "36 bytes"),
            (.realm(String(repeating: "r", count: 764)), "764 bytes > 763"), (.unknown(type: 0x0013, value: []), "0x0013"),
            (.unknown(type: 0x8028, value: [0, 0, 0, 0]), "0x8028"),
        ]
        for (attribute, mention) in rows {
            let message = STUNMessage(type: .allocateRequest, transactionID: Self.id, attributes: [attribute])
            var buffer = [UInt8](repeating: 0, count: 1_024)
            let error = #expect(throws: PacketError.self) { try buffer.withUnsafeMutableBytes { try message.serialize(into: $0) } }
            #expect(error?.code == .badField)
            #expect(error?.message.contains(mention) == true, "\(String(describing: error))")
        }
    }

    // MARK: - ChannelData

    @Test func channelDataIsFramedPaddedAndDemultiplexed() throws {
        let payload: [UInt8] = [0x80, 0x60, 0x00, 0x01, 0xAA]  // looks like RTP, 5 bytes
        var buffer = [UInt8](repeating: 0xEE, count: 16)
        let written = try payload.withUnsafeBytes { payload in
            try buffer.withUnsafeMutableBytes { try TURNChannelData.write(channel: 0x4001, payload: payload, into: $0) }
        }
        #expect(written == 12)
        #expect(Array(buffer[0..<12]) == [
            0x40, 0x01, 0x00, 0x05,  // channel 0x4001, length 5
            0x80, 0x60, 0x00, 0x01, 0xAA,  // payload
            0x00, 0x00, 0x00,  // padding to 4
        ])
        let frame = Array(buffer[0..<written])
        let (channel, range) = try frame.withUnsafeBytes { try TURNChannelData.parse($0) }
        #expect(channel == 0x4001)
        #expect(Array(frame[range]) == payload)
        // Unpadded, as a TCP-minded sender writes it, parses the same.
        let unpadded = Array(frame[0..<9])
        #expect(try unpadded.withUnsafeBytes { try TURNChannelData.parse($0) }.payload == 4..<9)

        #expect(frame.withUnsafeBytes { TURNChannelData.looksLikeChannelData($0) })
        #expect(!frame.withUnsafeBytes { STUNMessage.looksLikeSTUN($0) })
        let stun = STUNMessageTests.sampleRequest
        #expect(!stun.withUnsafeBytes { TURNChannelData.looksLikeChannelData($0) })
        #expect(stun.withUnsafeBytes { STUNMessage.looksLikeSTUN($0) })
        #expect(TURNChannelData.size(payloadSize: 0) == 4)
        #expect(TURNChannelData.size(payloadSize: 1_200) == 1_204)
    }

    @Test func malformedChannelDataIsATypedError() {
        let rows: [(String, [UInt8], PacketError.Code, String)] = [
            ("3 bytes", [0x40, 0x00, 0x00], .tooShort, "3 < 4"),
            ("channel 0x3FFF", [0x3F, 0xFF, 0x00, 0x00], .badField, "0x3FFF"),
            ("channel 0x5000", [0x50, 0x00, 0x00, 0x00], .badField, "0x5000"),
            ("channel 0x7FFF", [0x7F, 0xFF, 0x00, 0x00], .badField, "0x7FFF"),
            ("length past the end", [0x40, 0x00, 0x00, 0x05, 1, 2, 3, 4], .badLength, "length 5 > 4"),
            ("4 trailing bytes", [0x40, 0x00, 0x00, 0x00, 0, 0, 0, 0], .badLength, "4 trailing bytes > 3"),
        ]
        for (name, bytes, code, mention) in rows {
            let error = #expect(throws: PacketError.self, "\(name)") { try bytes.withUnsafeBytes { try TURNChannelData.parse($0) } }
            #expect(error?.code == code, "\(name)")
            #expect(error?.message.contains(mention) == true, "\(name): \(String(describing: error))")
        }
        var buffer = [UInt8](repeating: 0, count: 8)
        for channel: UInt16 in [0x0000, 0x3FFF, 0x5000, 0xFFFF] {
            let error = #expect(throws: PacketError.self) {
                try buffer.withUnsafeMutableBytes { try TURNChannelData.write(channel: channel, payload: UnsafeRawBufferPointer(start: nil, count: 0), into: $0) }
            }
            #expect(error?.code == .badField)
        }
        let short = #expect(throws: PacketError.self) {
            try [UInt8](repeating: 1, count: 5).withUnsafeBytes { payload in
                try buffer.withUnsafeMutableBytes { try TURNChannelData.write(channel: 0x4000, payload: payload, into: $0) }
            }
        }
        #expect(short?.code == .bufferTooSmall)
    }
}
