import Testing
@testable import MediaEngine

extension STUNMessage: RTCPTests.WireFormat {}

@Suite struct STUNMessageTests {
    typealias Vector = RTCPTests.Vector<STUNMessage>
    typealias ErrorRow = RTCPTests.ErrorRow

    // MARK: - RFC 5769 test vectors

    /// The transaction ID of all three RFC 5769 samples.
    static let rfcTransactionID: [UInt8] = [0xB7, 0xE7, 0xA7, 0x01, 0xBC, 0x34, 0xD6, 0x86, 0xFA, 0x87, 0xDF, 0xAE]

    /// RFC 5769 section 2.1, "Sample Request": a Binding request as ICE sends it.
    static let sampleRequest: [UInt8] = [
        0x00, 0x01, 0x00, 0x58,  // Binding request, length 88
        0x21, 0x12, 0xA4, 0x42,  // magic cookie
        0xB7, 0xE7, 0xA7, 0x01,  // transaction ID
        0xBC, 0x34, 0xD6, 0x86,
        0xFA, 0x87, 0xDF, 0xAE,
        0x80, 0x22, 0x00, 0x10,  // SOFTWARE, length 16
        0x53, 0x54, 0x55, 0x4E,  // "STUN test client"
        0x20, 0x74, 0x65, 0x73,
        0x74, 0x20, 0x63, 0x6C,
        0x69, 0x65, 0x6E, 0x74,
        0x00, 0x24, 0x00, 0x04,  // PRIORITY, length 4
        0x6E, 0x00, 0x01, 0xFF,  // priority 0x6E0001FF
        0x80, 0x29, 0x00, 0x08,  // ICE-CONTROLLED, length 8
        0x93, 0x2F, 0xF9, 0xB1,  // tie breaker
        0x51, 0x26, 0x3B, 0x36,
        0x00, 0x06, 0x00, 0x09,  // USERNAME, length 9
        0x65, 0x76, 0x74, 0x6A,  // "evtj:h6vY"
        0x3A, 0x68, 0x36, 0x76,
        0x59, 0x20, 0x20, 0x20,  // "Y", then 3 padding bytes: spaces, not zeros
        0x00, 0x08, 0x00, 0x14,  // MESSAGE-INTEGRITY, length 20
        0x9A, 0xEA, 0xA7, 0x0C,  // HMAC-SHA1
        0xBF, 0xD8, 0xCB, 0x56,
        0x78, 0x1E, 0xF2, 0xB5,
        0xB2, 0xD3, 0xF2, 0x49,
        0xC1, 0xB5, 0x71, 0xA2,
        0x80, 0x28, 0x00, 0x04,  // FINGERPRINT, length 4
        0xE5, 0x7A, 0x3B, 0xCF,  // CRC-32 XOR 0x5354554E
    ]

    /// RFC 5769 section 2.2, "Sample IPv4 Response".
    static let sampleIPv4Response: [UInt8] = [
        0x01, 0x01, 0x00, 0x3C,  // Binding success response, length 60
        0x21, 0x12, 0xA4, 0x42,  // magic cookie
        0xB7, 0xE7, 0xA7, 0x01,  // transaction ID
        0xBC, 0x34, 0xD6, 0x86,
        0xFA, 0x87, 0xDF, 0xAE,
        0x80, 0x22, 0x00, 0x0B,  // SOFTWARE, length 11
        0x74, 0x65, 0x73, 0x74,  // "test vector"
        0x20, 0x76, 0x65, 0x63,
        0x74, 0x6F, 0x72, 0x20,  // then 1 padding byte: a space
        0x00, 0x20, 0x00, 0x08,  // XOR-MAPPED-ADDRESS, length 8
        0x00, 0x01, 0xA1, 0x47,  // IPv4, port 32853 XOR 0x2112
        0xE1, 0x12, 0xA6, 0x43,  // 192.0.2.1 XOR magic cookie
        0x00, 0x08, 0x00, 0x14,  // MESSAGE-INTEGRITY, length 20
        0x2B, 0x91, 0xF5, 0x99,  // HMAC-SHA1
        0xFD, 0x9E, 0x90, 0xC3,
        0x8C, 0x74, 0x89, 0xF9,
        0x2A, 0xF9, 0xBA, 0x53,
        0xF0, 0x6B, 0xE7, 0xD7,
        0x80, 0x28, 0x00, 0x04,  // FINGERPRINT, length 4
        0xC0, 0x7D, 0x4C, 0x96,  // CRC-32 XOR 0x5354554E
    ]

    /// RFC 5769 section 2.3, "Sample IPv6 Response".
    static let sampleIPv6Response: [UInt8] = [
        0x01, 0x01, 0x00, 0x48,  // Binding success response, length 72
        0x21, 0x12, 0xA4, 0x42,  // magic cookie
        0xB7, 0xE7, 0xA7, 0x01,  // transaction ID
        0xBC, 0x34, 0xD6, 0x86,
        0xFA, 0x87, 0xDF, 0xAE,
        0x80, 0x22, 0x00, 0x0B,  // SOFTWARE, length 11
        0x74, 0x65, 0x73, 0x74,  // "test vector"
        0x20, 0x76, 0x65, 0x63,
        0x74, 0x6F, 0x72, 0x20,  // then 1 padding byte: a space
        0x00, 0x20, 0x00, 0x14,  // XOR-MAPPED-ADDRESS, length 20
        0x00, 0x02, 0xA1, 0x47,  // IPv6, port 32853 XOR 0x2112
        0x01, 0x13, 0xA9, 0xFA,  // 2001:db8:1234:5678:11:2233:4455:6677
        0xA5, 0xD3, 0xF1, 0x79,  //   XOR magic cookie and transaction ID
        0xBC, 0x25, 0xF4, 0xB5,
        0xBE, 0xD2, 0xB9, 0xD9,
        0x00, 0x08, 0x00, 0x14,  // MESSAGE-INTEGRITY, length 20
        0xA3, 0x82, 0x95, 0x4E,  // HMAC-SHA1
        0x4B, 0xE6, 0x7B, 0xF1,
        0x17, 0x84, 0xC9, 0x7C,
        0x82, 0x92, 0xC2, 0x75,
        0xBF, 0xE3, 0xED, 0x41,
        0x80, 0x28, 0x00, 0x04,  // FINGERPRINT, length 4
        0xC8, 0xFB, 0x0B, 0x4C,  // CRC-32 XOR 0x5354554E
    ]

    static let rfcVectors = [sampleRequest, sampleIPv4Response, sampleIPv6Response]

    static func software(_ text: String) -> STUNMessage.Attribute { .software(text) }

    static func messageIntegrity(_ bytes: [UInt8]) -> STUNMessage.Attribute { .messageIntegrity(bytes) }

    static func fingerprint(_ bytes: [UInt8]) -> STUNMessage.Attribute {
        .fingerprint(bytes.reduce(0) { $0 << 8 | UInt32($1) })
    }

    static func parse(_ bytes: [UInt8]) throws -> STUNMessage { try STUNMessage(parsing: bytes) }

    /// Checks what only byte-exact vectors from elsewhere need: the raw-buffer parser agrees,
    /// the parsed message gives the bytes back, and the same message built in code writes
    /// the same bytes except for padding, which it zeroes.
    static func checkRFCVector(
        _ bytes: [UInt8], _ expected: STUNMessage, paddingAt padding: [Int], sourceLocation: SourceLocation = #_sourceLocation
    ) throws {
        let parsed = try parse(bytes)
        #expect(parsed == expected, sourceLocation: sourceLocation)
        let parsedRaw = try bytes.withUnsafeBufferPointer { (buffer) throws(PacketError) in
            try STUNMessage(parsing: UnsafeRawBufferPointer(buffer))
        }
        #expect(parsedRaw == parsed, sourceLocation: sourceLocation)
        #expect(parsed.serializedSize == bytes.count, sourceLocation: sourceLocation)
        let again: [UInt8] = parsed.serialized()
        #expect(again == bytes, sourceLocation: sourceLocation)
        let looksLike = bytes.withUnsafeBytes { STUNMessage.looksLikeSTUN($0) }
        #expect(looksLike, sourceLocation: sourceLocation)
        let kind = bytes.withUnsafeBytes { DatagramKind($0) }
        #expect(kind == .stun, sourceLocation: sourceLocation)

        var zeroPadded = bytes
        for index in padding {
            #expect(zeroPadded[index] == 0x20, "padding at \(index)", sourceLocation: sourceLocation)
            zeroPadded[index] = 0
        }
        let built: [UInt8] = expected.serialized()
        #expect(built == zeroPadded, sourceLocation: sourceLocation)
        // Any change to the attributes drops the received padding.
        var changed = parsed
        changed.attributes.append(.software(""))
        let changedBytes: [UInt8] = changed.serialized()
        let changedBody: [UInt8] = Array(changedBytes[4...].dropLast(4)), paddedBody: [UInt8] = Array(zeroPadded[4...])
        #expect(changedBody == paddedBody, sourceLocation: sourceLocation)
    }

    @Test func rfc5769SampleRequest() throws {
        let transactionID = try #require(STUNTransactionID(Self.rfcTransactionID))
        let expected = STUNMessage(type: .bindingRequest, transactionID: transactionID, attributes: [
            Self.software("STUN test client"),
            .priority(0x6E00_01FF),
            .iceControlled(0x932F_F9B1_5126_3B36),
            .username("evtj:h6vY"),
            Self.messageIntegrity(Array(Self.sampleRequest[80..<100])),
            Self.fingerprint([0xE5, 0x7A, 0x3B, 0xCF]),
        ])
        try Self.checkRFCVector(Self.sampleRequest, expected, paddingAt: [73, 74, 75])

        let message = try Self.parse(Self.sampleRequest)
        #expect(message.type == .bindingRequest)
        #expect(message.transactionID == transactionID)
        #expect(message.transactionID.bytes == Self.rfcTransactionID)
        #expect(message.transactionID.description == "b7e7a701bc34d686fa87dfae")
        #expect(message.username == "evtj:h6vY")
        #expect(message.xorMappedAddress == nil)
        #expect(message.errorCode == nil)
        let types: [UInt16] = message.attributes.map(\.type)
        #expect(types == [0x8022, 0x0024, 0x8029, 0x0006, 0x0008, 0x8028])
    }

    @Test func rfc5769SampleIPv4Response() throws {
        let transactionID = try #require(STUNTransactionID(Self.rfcTransactionID))
        let address = try SocketAddress(host: "192.0.2.1", port: 32_853)
        let expected = STUNMessage(type: .bindingSuccess, transactionID: transactionID, attributes: [
            Self.software("test vector"),
            .xorMappedAddress(address),
            Self.messageIntegrity(Array(Self.sampleIPv4Response[52..<72])),
            Self.fingerprint([0xC0, 0x7D, 0x4C, 0x96]),
        ])
        try Self.checkRFCVector(Self.sampleIPv4Response, expected, paddingAt: [35])

        let mapped = try #require(try Self.parse(Self.sampleIPv4Response).xorMappedAddress)
        #expect(mapped.description == "192.0.2.1:32853")
        #expect(!mapped.isIPv6)
    }

    @Test func rfc5769SampleIPv6Response() throws {
        let transactionID = try #require(STUNTransactionID(Self.rfcTransactionID))
        let address = try SocketAddress(host: "2001:db8:1234:5678:11:2233:4455:6677", port: 32_853)
        let expected = STUNMessage(type: .bindingSuccess, transactionID: transactionID, attributes: [
            Self.software("test vector"),
            .xorMappedAddress(address),
            Self.messageIntegrity(Array(Self.sampleIPv6Response[64..<84])),
            Self.fingerprint([0xC8, 0xFB, 0x0B, 0x4C]),
        ])
        try Self.checkRFCVector(Self.sampleIPv6Response, expected, paddingAt: [35])

        let mapped = try #require(try Self.parse(Self.sampleIPv6Response).xorMappedAddress)
        #expect(mapped.host == "2001:db8:1234:5678:11:2233:4455:6677")
        #expect(mapped.port == 32_853)
        #expect(mapped.isIPv6)
    }

    // MARK: - Messages built in code

    /// Transaction ID 00 01 02 ... 0B.
    static let countingID = STUNTransactionID([UInt8](0..<12))!

    static let valid: [Vector] = [
        Vector("Binding request with USERNAME", [
            0x00, 0x01, 0x00, 0x10,  // Binding request, length 16
            0x21, 0x12, 0xA4, 0x42,  // magic cookie
            0x00, 0x01, 0x02, 0x03,  // transaction ID
            0x04, 0x05, 0x06, 0x07,
            0x08, 0x09, 0x0A, 0x0B,
            0x00, 0x06, 0x00, 0x09,  // USERNAME, length 9
            0x61, 0x6C, 0x69, 0x63,  // "alice:bob"
            0x65, 0x3A, 0x62, 0x6F,
            0x62, 0x00, 0x00, 0x00,  // "b", then 3 zero padding bytes
        ], STUNMessage(type: .bindingRequest, transactionID: countingID, attributes: [.username("alice:bob")])),
        Vector("Binding success, IPv4", [
            0x01, 0x01, 0x00, 0x0C,  // Binding success response, length 12
            0x21, 0x12, 0xA4, 0x42,  // magic cookie
            0x00, 0x01, 0x02, 0x03,  // transaction ID
            0x04, 0x05, 0x06, 0x07,
            0x08, 0x09, 0x0A, 0x0B,
            0x00, 0x20, 0x00, 0x08,  // XOR-MAPPED-ADDRESS, length 8
            0x00, 0x01, 0x32, 0x9E,  // IPv4, port 5004 XOR 0x2112
            0x2B, 0x12, 0xA4, 0x43,  // 10.0.0.1 XOR magic cookie
        ], STUNMessage(type: .bindingSuccess, transactionID: countingID, attributes: [
            .xorMappedAddress(try! SocketAddress(host: "10.0.0.1", port: 5_004)),
        ])),
        Vector("Binding success, IPv6", [
            0x01, 0x01, 0x00, 0x18,  // Binding success response, length 24
            0x21, 0x12, 0xA4, 0x42,  // magic cookie
            0x00, 0x01, 0x02, 0x03,  // transaction ID
            0x04, 0x05, 0x06, 0x07,
            0x08, 0x09, 0x0A, 0x0B,
            0x00, 0x20, 0x00, 0x14,  // XOR-MAPPED-ADDRESS, length 20
            0x00, 0x02, 0x32, 0x9C,  // IPv6, port 5006 XOR 0x2112
            0x01, 0x13, 0xA9, 0xFA,  // 2001:db8::1 XOR magic cookie and transaction ID
            0x00, 0x01, 0x02, 0x03,
            0x04, 0x05, 0x06, 0x07,
            0x08, 0x09, 0x0A, 0x0A,
        ], STUNMessage(type: .bindingSuccess, transactionID: countingID, attributes: [
            .xorMappedAddress(try! SocketAddress(host: "2001:db8::1", port: 5_006)),
        ])),
        Vector("Binding error 401", [
            0x01, 0x11, 0x00, 0x14,  // Binding error response, length 20
            0x21, 0x12, 0xA4, 0x42,  // magic cookie
            0x00, 0x01, 0x02, 0x03,  // transaction ID
            0x04, 0x05, 0x06, 0x07,
            0x08, 0x09, 0x0A, 0x0B,
            0x00, 0x09, 0x00, 0x10,  // ERROR-CODE, length 16
            0x00, 0x00, 0x04, 0x01,  // class 4, number 1
            0x55, 0x6E, 0x61, 0x75,  // "Unauthorized"
            0x74, 0x68, 0x6F, 0x72,
            0x69, 0x7A, 0x65, 0x64,
        ], STUNMessage(type: .bindingError, transactionID: countingID, attributes: [
            .errorCode(code: 401, reason: "Unauthorized"),
        ])),
        Vector("Binding indication, no attributes", [
            0x00, 0x11, 0x00, 0x00,  // Binding indication, length 0
            0x21, 0x12, 0xA4, 0x42,  // magic cookie
            0x00, 0x01, 0x02, 0x03,  // transaction ID
            0x04, 0x05, 0x06, 0x07,
            0x08, 0x09, 0x0A, 0x0B,
        ], STUNMessage(type: .bindingIndication, transactionID: countingID)),
        Vector("Unknown attributes, empty and padded", [
            0x00, 0x01, 0x00, 0x0C,  // Binding request, length 12
            0x21, 0x12, 0xA4, 0x42,  // magic cookie
            0x00, 0x01, 0x02, 0x03,  // transaction ID
            0x04, 0x05, 0x06, 0x07,
            0x08, 0x09, 0x0A, 0x0B,
            0x00, 0x25, 0x00, 0x00,  // USE-CANDIDATE, length 0
            0xC0, 0x57, 0x00, 0x01,  // comprehension-optional 0xC057, length 1
            0x07, 0x00, 0x00, 0x00,  // 7, then 3 zero padding bytes
        ], STUNMessage(type: .bindingRequest, transactionID: countingID, attributes: [
            .useCandidate, .unknown(type: 0xC057, value: [7]),
        ])),
    ]

    @Test(arguments: valid)
    func parseThenSerializeGivesTheBytesBack(vector: Vector) throws {
        try RTCPTests.checkRoundTrip(vector)
        let looksLike = vector.bytes.withUnsafeBytes { STUNMessage.looksLikeSTUN($0) }
        #expect(looksLike)
    }

    @Test func accessorsFindTheirAttributes() throws {
        let request = try Self.parse(Self.valid[0].bytes)
        #expect(request.username == "alice:bob")
        let success = try Self.parse(Self.valid[1].bytes)
        #expect(success.xorMappedAddress?.description == "10.0.0.1:5004")
        let successIPv6 = try Self.parse(Self.valid[2].bytes)
        #expect(successIPv6.xorMappedAddress?.description == "[2001:db8::1]:5006")
        let failure = try Self.parse(Self.valid[3].bytes)
        let errorCode = try #require(failure.errorCode)
        #expect(errorCode.code == 401)
        #expect(errorCode.reason == "Unauthorized")
        #expect(failure.type == .bindingError)
    }

    @Test func aCheckAndItsAnswerRoundTrip() throws {
        var random = RTCPTests.SplitMix64(seed: 5)
        let id = STUNTransactionID.random(using: &random)
        let request = STUNMessage(type: .bindingRequest, transactionID: id, attributes: [
            .username("remoteUfrag:localUfrag"), .priority(0x6E00_01FF), .useCandidate,
        ])
        let requestAgain = try Self.parse(request.serialized())
        #expect(requestAgain == request)
        #expect(requestAgain.username == "remoteUfrag:localUfrag")

        let mappedV4 = try SocketAddress(host: "198.51.100.7", port: 61_000)
        let mappedV6 = try SocketAddress(host: "fe80::1234:5678:9abc:def0", port: 1)
        let response = STUNMessage(type: .bindingSuccess, transactionID: requestAgain.transactionID, attributes: [
            .xorMappedAddress(mappedV4), .xorMappedAddress(mappedV6),
        ])
        let responseAgain = try Self.parse(response.serialized())
        #expect(responseAgain == response)
        #expect(responseAgain.transactionID == id)
        #expect(responseAgain.xorMappedAddress == mappedV4)
        #expect(responseAgain.attributes.last == .xorMappedAddress(mappedV6))

        let failure = STUNMessage(type: .bindingError, transactionID: id, attributes: [
            .errorCode(code: 487, reason: "Role Conflict"), .errorCode(code: 300, reason: ""),
            .errorCode(code: 699, reason: "é"),
        ])
        #expect(try Self.parse(failure.serialized()) == failure)
    }

    // MARK: - Malformed input

    /// A Binding request header (transaction ID 00...0B) with `body` after it and
    /// `length` (default: the body's size) in the length field.
    static func message(_ body: [UInt8], length: Int? = nil, type: UInt16 = 0x0001) -> [UInt8] {
        let length = length ?? body.count
        let header: [UInt8] = [UInt8(type >> 8), UInt8(type & 0xFF), UInt8(length >> 8), UInt8(length & 0xFF)]
        let cookie: [UInt8] = [0x21, 0x12, 0xA4, 0x42]
        let transactionID: [UInt8] = [UInt8](0..<12)
        return header + cookie + transactionID + body
    }

    static let malformed: [ErrorRow] = [
        ErrorRow("19 bytes", Array(sampleRequest.prefix(19)), .tooShort, mentions: ["STUN message too short: 19 < 20"]),
        ErrorRow("empty", [], .tooShort, mentions: ["0 < 20"]),
        ErrorRow("wrong magic cookie", [
            0x00, 0x01, 0x00, 0x00,  // Binding request, length 0
            0x21, 0x12, 0xA4, 0x43,  // cookie off by one
            0x00, 0x01, 0x02, 0x03, 0x04, 0x05, 0x06, 0x07, 0x08, 0x09, 0x0A, 0x0B,
        ], .badField, mentions: ["cookie", "0x2112A443", "0x2112A442"]),
        ErrorRow("length not a multiple of 4", message([
            0x80, 0x22, 0x00, 0x02, 0x41, 0x42,  // SOFTWARE "AB", unpadded
        ]), .badLength, mentions: ["length 6", "multiple of 4"]),
        ErrorRow("length larger than the message", message([
            0x00, 0x25, 0x00, 0x00,  // USE-CANDIDATE
        ], length: 8), .badLength, mentions: ["8 != 4"]),
        ErrorRow("length smaller than the message", message([
            0x00, 0x25, 0x00, 0x00, 0x00, 0x25, 0x00, 0x00,  // two USE-CANDIDATE
        ], length: 4), .badLength, mentions: ["4 != 8"]),
        ErrorRow("attribute past the end", message([
            0x00, 0x06, 0x00, 0x09,  // USERNAME, length 9
            0x61, 0x6C, 0x69, 0x63,  // but only 4 bytes follow
        ]), .badLength, mentions: ["0x0006", "length 9", "12 padded", "4 bytes left"]),
        ErrorRow("attribute padding past the end", message([
            0x80, 0x22, 0x00, 0x05,  // SOFTWARE, length 5 (8 padded)
            0x41, 0x42, 0x43, 0x44,  // 4 bytes, the 5th is missing
        ]), .badLength, mentions: ["length 5", "8 padded", "4 bytes left"]),
        ErrorRow("XOR-MAPPED-ADDRESS family 3", message([
            0x00, 0x20, 0x00, 0x08,  // XOR-MAPPED-ADDRESS, length 8
            0x00, 0x03, 0xA1, 0x47,  // family 3
            0xE1, 0x12, 0xA6, 0x43,
        ], type: 0x0101), .badField, mentions: ["family 3"]),
        ErrorRow("XOR-MAPPED-ADDRESS IPv4 of IPv6 length", message([
            0x00, 0x20, 0x00, 0x14,  // XOR-MAPPED-ADDRESS, length 20
            0x00, 0x01, 0xA1, 0x47,  // family IPv4
        ] + [UInt8](repeating: 0, count: 16), type: 0x0101), .badLength, mentions: ["family 1 length 20 != 8"]),
        ErrorRow("XOR-MAPPED-ADDRESS too short for its family", message([
            0x00, 0x20, 0x00, 0x02,  // XOR-MAPPED-ADDRESS, length 2
            0x00, 0x01, 0x00, 0x00,  // reserved, family, padding
        ], type: 0x0101), .badLength, mentions: ["2 < 4"]),
        ErrorRow("USERNAME not UTF-8", message([
            0x00, 0x06, 0x00, 0x04,  // USERNAME, length 4
            0x61, 0xFF, 0xC0, 0x62,  // 'a', two bytes no UTF-8 holds, 'b'
        ]), .badField, mentions: ["USERNAME", "4 bytes", "UTF-8"]),
        ErrorRow("USERNAME of 764 bytes", message([
            0x00, 0x06, 0x02, 0xFC,  // USERNAME, length 764
        ] + [UInt8](repeating: 0x61, count: 764)), .badLength, mentions: ["USERNAME", "764 bytes > 763"]),
        ErrorRow("65 attributes", message(
            Array([[UInt8]](repeating: [0x00, 0x25, 0x00, 0x00], count: 65).joined())  // 65 USE-CANDIDATE
        ), .badField, mentions: ["over 64 attributes"]),
        ErrorRow("ERROR-CODE class 7", message([
            0x00, 0x09, 0x00, 0x04,  // ERROR-CODE, length 4
            0x00, 0x00, 0x07, 0x00,  // class 7, number 0
        ], type: 0x0111), .badField, mentions: ["class 7", "3...6"]),
        ErrorRow("ERROR-CODE class 2", message([
            0x00, 0x09, 0x00, 0x04,  // ERROR-CODE, length 4
            0x00, 0x00, 0x02, 0x00,  // class 2: a success is no error
        ], type: 0x0111), .badField, mentions: ["class 2"]),
        ErrorRow("ERROR-CODE number 100", message([
            0x00, 0x09, 0x00, 0x04,  // ERROR-CODE, length 4
            0x00, 0x00, 0x04, 0x64,  // class 4, number 100
        ], type: 0x0111), .badField, mentions: ["number 100 > 99"]),
        ErrorRow("ERROR-CODE without its fixed part", message([
            0x00, 0x09, 0x00, 0x02,  // ERROR-CODE, length 2
            0x00, 0x00, 0x00, 0x00,
        ], type: 0x0111), .badLength, mentions: ["2 < 4"]),
        ErrorRow("ERROR-CODE reason not UTF-8", message([
            0x00, 0x09, 0x00, 0x05,  // ERROR-CODE, length 5
            0x00, 0x00, 0x04, 0x01,  // 401
            0x80, 0x00, 0x00, 0x00,  // a lone continuation byte, padding
        ], type: 0x0111), .badField, mentions: ["reason", "UTF-8"]),
        ErrorRow("RTP packet", [
            0x80, 0x60, 0x00, 0x01,  // V=2, PT 96, sequence 1
            0x00, 0x00, 0x00, 0xA0,  // timestamp
            0x12, 0x34, 0x56, 0x78,  // SSRC
            0xDE, 0xAD, 0xBE, 0xEF, 0xDE, 0xAD, 0xBE, 0xEF, 0xDE, 0xAD, 0xBE, 0xEF,  // payload
        ], .badField, mentions: ["0x8060", "top two bits"]),
        ErrorRow("type with bit 14 set", message([], type: 0x4001), .badField, mentions: ["0x4001", "top two bits"]),
    ]

    @Test(arguments: malformed)
    func malformedMessagesAreTypedErrors(row: ErrorRow) {
        RTCPTests.checkRejects(STUNMessage.self, row)
    }

    @Test func sixtyFourAttributesAreAllowed() throws {
        let bytes = Self.message(Array([[UInt8]](repeating: [0x00, 0x25, 0x00, 0x00], count: 64).joined()))
        let parsed = try Self.parse(bytes)
        #expect(parsed.attributes.count == STUNMessage.maximumAttributeCount)
        #expect(parsed.serialized() == bytes)
    }

    @Test func looksLikeSTUNIsCheap() {
        func looks(_ bytes: [UInt8]) -> Bool { bytes.withUnsafeBytes { STUNMessage.looksLikeSTUN($0) } }
        for vector in Self.rfcVectors { #expect(looks(vector)) }
        #expect(!looks(Array(Self.sampleRequest.prefix(19))))
        #expect(!looks(Array(Self.sampleRequest.dropLast(4))))
        #expect(!looks(Self.malformed[2].bytes))                 // wrong cookie
        #expect(!looks(Self.malformed[3].bytes))                 // length 6
        #expect(!looks(Self.malformed.last(where: { $0.name == "RTP packet" })!.bytes))
        // It does not look at attributes.
        #expect(looks(Self.malformed.first(where: { $0.name == "XOR-MAPPED-ADDRESS family 3" })!.bytes))
    }

    @Test func serializeRefusesWhatWouldNotParseBack() {
        let tooLong = String(repeating: "a", count: 764)
        let rows: [(STUNMessage.Attribute, String)] = [
            (.username(tooLong), "764 bytes > 763"),
            (.errorCode(code: 700, reason: ""), "700 outside 300...699"),
            (.errorCode(code: 299, reason: ""), "299"),
            (.errorCode(code: 400, reason: tooLong), "764 bytes > 763"),
            (.unknown(type: 0x0006, value: [0x61]), "0x0006"),
            (.unknown(type: 0x0020, value: []), "0x0020"),
            (.unknown(type: 0x0009, value: []), "0x0009"),
        ]
        for (attribute, mention) in rows {
            let message = STUNMessage(type: .bindingRequest, transactionID: Self.countingID, attributes: [attribute])
            var buffer = [UInt8](repeating: 0, count: 1_024)
            let error = #expect(throws: PacketError.self) { try buffer.withUnsafeMutableBytes { try message.serialize(into: $0) } }
            #expect(error?.code == .badField)
            #expect(error?.message.contains(mention) == true, "\(String(describing: error))")
        }

        let many = STUNMessage(
            type: .bindingRequest, transactionID: Self.countingID,
            attributes: Array(repeating: .useCandidate, count: 65)
        )
        var buffer = [UInt8](repeating: 0, count: 1_024)
        let error = #expect(throws: PacketError.self) { try buffer.withUnsafeMutableBytes { try many.serialize(into: $0) } }
        #expect(error?.message.contains("65 attributes > 64") == true, "\(String(describing: error))")

        let huge = STUNMessage(
            type: .bindingRequest, transactionID: Self.countingID,
            attributes: [.data([UInt8](repeating: 0, count: 65_535))]
        )
        var hugeBuffer = [UInt8](repeating: 0, count: 70_000)
        let hugeError = #expect(throws: PacketError.self) { try hugeBuffer.withUnsafeMutableBytes { try huge.serialize(into: $0) } }
        #expect(hugeError?.code == .badLength)
        #expect(hugeError?.message.contains("65540 bytes > 65532") == true, "\(String(describing: hugeError))")
    }

    // MARK: - Types and addresses

    @Test func messageTypesSplitIntoMethodAndClass() {
        #expect(STUNMessage.MessageType.bindingRequest.rawValue == 0x0001)
        #expect(STUNMessage.MessageType.bindingIndication.rawValue == 0x0011)
        #expect(STUNMessage.MessageType.bindingSuccess.rawValue == 0x0101)
        #expect(STUNMessage.MessageType.bindingError.rawValue == 0x0111)
        let error = STUNMessage.MessageType(rawValue: 0x0111)
        #expect(error == STUNMessage.MessageType.bindingError)
        #expect(error?.method == 1)
        #expect(error?.messageClass == .errorResponse)
        #expect(STUNMessage.MessageType(rawValue: 0xC001) == nil)
        #expect(STUNMessage.MessageType(rawValue: 0x8000) == nil)
        let widest = STUNMessage.MessageType(method: 0xFFF, messageClass: .errorResponse)
        #expect(widest.rawValue == 0x3FFF)
        for method: UInt16 in [0, 1, 2, 3, 0x00F, 0x010, 0x07F, 0x080, 0xABC, 0xFFF] {
            for messageClass in [STUNMessage.MessageType.Class.request, .indication, .successResponse, .errorResponse] {
                let type = STUNMessage.MessageType(method: method, messageClass: messageClass)
                #expect(type.method == method)
                #expect(type.messageClass == messageClass)
                #expect(STUNMessage.MessageType(rawValue: type.rawValue) == type)
            }
        }
        #expect(STUNMessage.MessageType.bindingSuccess.description == "Binding success response")
    }

    @Test func transactionIDs() {
        #expect(STUNTransactionID([UInt8](0..<11)) == nil)
        #expect(STUNTransactionID([UInt8](0..<13)) == nil)
        #expect(Self.countingID.bytes == [UInt8](0..<12))
        #expect(Self.countingID.description == "000102030405060708090a0b")
        let a = STUNTransactionID.random()
        let b = STUNTransactionID.random()
        #expect(a != b)
        #expect(STUNTransactionID(a.bytes) == a)
    }

    @Test func socketAddressesFromRawBytes() throws {
        let v4 = try #require(SocketAddress(addressBytes: [192, 0, 2, 1], port: 32_853))
        let resolved = try SocketAddress(host: "192.0.2.1", port: 32_853)
        #expect(v4 == resolved)
        #expect(v4.addressBytes == [192, 0, 2, 1])
        let v6Bytes: [UInt8] = [0x20, 0x01, 0x0D, 0xB8] + [UInt8](repeating: 0, count: 11) + [1]
        let v6 = try #require(SocketAddress(addressBytes: v6Bytes, port: 0))
        #expect(v6.description == "[2001:db8::1]:0")
        #expect(v6.addressBytes == v6Bytes)
        #expect(SocketAddress(addressBytes: [1, 2, 3], port: 1) == nil)
        #expect(SocketAddress(addressBytes: [1, 2, 3, 4], port: 65_536) == nil)
        #expect(SocketAddress(addressBytes: [1, 2, 3, 4], port: -1) == nil)
    }

    // MARK: - Fuzzing

    /// Parses `input` through both entry points; what parses must serialize to as many bytes
    /// and parse back to an equal message.
    @discardableResult
    static func exercise(_ input: [UInt8]) -> Bool {
        let viaRaw = try? input.withUnsafeBufferPointer { (buffer) throws(PacketError) in
            try STUNMessage(parsing: UnsafeRawBufferPointer(buffer))
        }
        let message: STUNMessage
        do {
            message = try STUNMessage(parsing: input)
        } catch {
            #expect(!error.message.isEmpty)
            #expect(viaRaw == nil)
            return false
        }
        #expect(viaRaw == message)
        #expect(message.serializedSize == input.count, "\(input)")
        let again: [UInt8] = message.serialized()
        #expect(again.count == input.count, "\(input)")
        #expect((try? STUNMessage(parsing: again)) == message, "\(input)")
        return true
    }

    static var corpus: [[UInt8]] { rfcVectors + valid.map(\.bytes) }

    @Test func everyTruncationIsRejectedWithoutACrash() {
        for vector in Self.corpus {
            for count in 0..<vector.count {
                // A shorter message disagrees with its length field.
                #expect(!Self.exercise(Array(vector.prefix(count))), "\(count) of \(vector.count)")
            }
        }
    }

    @Test func everySingleBitFlipIsSafe() {
        var parsed = 0
        var flips = 0
        for vector in Self.corpus {
            for bit in 0..<(vector.count * 8) {
                var input = vector
                input[bit / 8] ^= 1 << UInt8(bit % 8)
                flips += 1
                if Self.exercise(input) { parsed += 1 }
            }
        }
        // Flips inside raw attribute values, padding and the transaction ID still parse.
        #expect(parsed > flips / 4)
        #expect(parsed < flips)
    }

    @Test func randomBodiesBehindAValidHeaderNeverCrash() {
        var random = RTCPTests.SplitMix64(seed: 7)
        let interesting: [UInt16] = [0x0006, 0x0009, 0x0020, 0x0008, 0x8028, 0x8022]
        var parsed = 0
        for _ in 0..<4_000 {
            var body: [UInt8] = []
            for _ in 0..<Int.random(in: 0...4, using: &random) {
                let type = interesting.randomElement(using: &random)!
                let size = Int.random(in: 0...24, using: &random)
                body += [UInt8(type >> 8), UInt8(type & 0xFF), 0, UInt8(size)]
                body += (0..<size).map { _ in UInt8.random(in: 0...255, using: &random) }
                // Sometimes pad, sometimes not.
                if Bool.random(using: &random) { body += [UInt8](repeating: 0, count: (4 - size % 4) % 4) }
            }
            if Self.exercise(Self.message(body, length: body.count)) { parsed += 1 }
        }
        #expect(parsed > 0)
    }

    @Test func randomBytesNeverCrashTheParser() {
        var random = RTCPTests.SplitMix64(seed: 8)
        for _ in 0..<4_000 {
            let input = (0..<Int.random(in: 0...64, using: &random)).map { _ in UInt8.random(in: 0...255, using: &random) }
            Self.exercise(input)
        }
    }
}
