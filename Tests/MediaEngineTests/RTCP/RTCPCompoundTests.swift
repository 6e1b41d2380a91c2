import Testing
@testable import MediaEngine

extension RTCPTests {
    @Suite struct RTCPCompoundTests {
        static let senderReport = SenderReportTests.valid[0]          // 28 bytes
        static let receiverReport = ReceiverReportTests.valid[1]      // 32 bytes
        static let emptyReceiverReport = ReceiverReportTests.valid[0] // 8 bytes
        static let cname = SourceDescriptionTests.valid[1]            // 16 bytes, "bob"
        static let longCNAME = SourceDescriptionTests.valid[0]        // 28 bytes
        static let goodbye = GoodbyeTests.valid[0]                    // 8 bytes
        static let nack = GenericNACKTests.valid[0]                   // 16 bytes
        static let remb = ReceiverEstimatedMaxBitrateTests.valid[0]   // 24 bytes

        static let app: [UInt8] = [
            0x81,                    // V=2 P=0 subtype 1
            0xCC,                    // PT=204 APP
            0x00, 0x03,              // length 3 (16 bytes)
            0x0B, 0xAD, 0xF0, 0x0D,  // SSRC
            0x54, 0x45, 0x53, 0x54,  // name "TEST"
            0x00, 0x00, 0x00, 0x2A,  // application data
        ]

        static let extendedReport: [UInt8] = [
            0x80,                    // V=2 P=0 reserved
            0xCF,                    // PT=207 XR
            0x00, 0x04,              // length 4 (20 bytes)
            0x0B, 0xAD, 0xF0, 0x0D,  // SSRC
            0x04, 0x00, 0x00, 0x02,  // block type 4 (receiver reference time), length 2
            0xE9, 0x8C, 0x3B, 0x2F,  // NTP timestamp, seconds
            0x40, 0x00, 0x00, 0x00,  // NTP timestamp, fraction
        ]

        static let paddedGoodbye: [UInt8] = [
            0xA1, 0xCB, 0x00, 0x02,  // V=2 P=1 SC=1, BYE, length 2 (12 bytes)
            0x90, 0x2F, 0x9E, 0x2E,  // SSRC
            0x00, 0x00, 0x00, 0x04,  // padding, count 4
        ]

        struct Compound: Sendable, CustomTestStringConvertible {
            let name: String
            let bytes: [UInt8]
            let packets: [RTCPPacket]
            var testDescription: String { name }
        }

        static let valid: [Compound] = [
            Compound(
                name: "SR then SDES, the usual", bytes: senderReport.bytes + cname.bytes,
                packets: [.senderReport(senderReport.packet), .sourceDescription(cname.packet)]
            ),
            Compound(
                name: "RR, SDES, BYE", bytes: receiverReport.bytes + longCNAME.bytes + goodbye.bytes,
                packets: [.receiverReport(receiverReport.packet), .sourceDescription(longCNAME.packet), .goodbye(goodbye.packet)]
            ),
            Compound(
                name: "reduced size: NACK and REMB without a report", bytes: nack.bytes + remb.bytes,
                packets: [.genericNACK(nack.packet), .receiverEstimatedMaxBitrate(remb.packet)]
            ),
            Compound(
                name: "APP kept as an unknown packet, XR parsed", bytes: emptyReceiverReport.bytes + app + extendedReport + cname.bytes,
                packets: [
                    .receiverReport(emptyReceiverReport.packet),
                    .unknown(type: .applicationDefined, count: 1, body: Array(app[4...]), paddingSize: 0),
                    .extendedReport(ExtendedReport(senderSSRC: 0x0BAD_F00D, blocks: [.receiverReferenceTime(ntp: 0xE98C_3B2F_4000_0000)])),
                    .sourceDescription(cname.packet),
                ]
            ),
            Compound(
                name: "padding on the last packet", bytes: emptyReceiverReport.bytes + paddedGoodbye,
                packets: [
                    .receiverReport(emptyReceiverReport.packet), .goodbye(Goodbye(sources: [0x902F_9E2E], paddingSize: 4)),
                ]
            ),
            Compound(
                name: "unknown packet with padding", bytes: [
                    0xA5, 0xCC, 0x00, 0x03,  // V=2 P=1 subtype 5, APP, length 3 (16 bytes)
                    0x0B, 0xAD, 0xF0, 0x0D,  // SSRC
                    0x54, 0x45, 0x53, 0x54,  // name "TEST"
                    0x00, 0x00, 0x00, 0x04,  // padding, count 4
                ],
                packets: [.unknown(type: .applicationDefined, count: 5, body: [0x0B, 0xAD, 0xF0, 0x0D, 0x54, 0x45, 0x53, 0x54], paddingSize: 4)]
            ),
        ]

        @Test(arguments: valid)
        func compoundsParseIntoTheirPacketsAndSerializeBack(compound: Compound) throws {
            #expect(try RTCPPacket.parseCompound(compound.bytes) == compound.packets)
            #expect(RTCPPacket.compoundSize(of: compound.packets) == compound.bytes.count)
            #expect(RTCPPacket.serializedCompound(compound.packets) == compound.bytes)

            var buffer = [UInt8](repeating: 0xEE, count: compound.bytes.count + 4)
            let written = try buffer.withUnsafeMutableBytes { try RTCPPacket.serializeCompound(compound.packets, into: $0) }
            #expect(written == compound.bytes.count)
            #expect(Array(buffer[..<written]) == compound.bytes)

            var short = [UInt8](repeating: 0, count: compound.bytes.count - 1)
            let error = #expect(throws: PacketError.self) {
                try short.withUnsafeMutableBytes { try RTCPPacket.serializeCompound(compound.packets, into: $0) }
            }
            #expect(error?.code == .bufferTooSmall)

            // Each packet alone, through the enum.
            var offset = 0
            for packet in compound.packets {
                let size = packet.serializedSize
                #expect(try RTCPPacket(parsing: Array(compound.bytes[offset..<(offset + size)])) == packet)
                #expect(packet.serialized() == Array(compound.bytes[offset..<(offset + size)]))
                offset += size
            }
        }

        @Test(arguments: valid)
        func everyTruncationFailsUnlessItEndsOnAPacketBoundary(compound: Compound) throws {
            var boundaries: [Int: Int] = [:]
            var end = 0
            for (index, packet) in compound.packets.enumerated() {
                end += packet.serializedSize
                boundaries[end] = index + 1
            }
            for length in 0..<compound.bytes.count {
                let prefix = Array(compound.bytes[..<length])
                if let count = boundaries[length] {
                    #expect(try RTCPPacket.parseCompound(prefix) == Array(compound.packets[..<count]), "\(length) bytes")
                } else {
                    let error = #expect(throws: PacketError.self, "\(length) bytes") { try RTCPPacket.parseCompound(prefix) }
                    #expect(error?.code == .tooShort || error?.code == .badLength, "\(length) bytes: \(String(describing: error))")
                }
            }
        }

        static let malformed: [ErrorRow] = [
            ErrorRow("empty datagram", [], .tooShort, mentions: ["0 < 4"]),
            ErrorRow("two stray bytes after the packets", senderReport.bytes + cname.bytes + [0x80, 0xC9], .tooShort, mentions: ["offset 44", "2 < 4"]),
            ErrorRow("second length past the end", senderReport.bytes + [
                0x81, 0xCA, 0x00, 0x04,  // SDES, length 4 (20 bytes) but 16 follow
            ] + cname.bytes[4...], .badLength, mentions: ["offset 28", "20 bytes", "16 remain"]),
            ErrorRow("second packet version 1", senderReport.bytes + [0x41] + cname.bytes[1...], .badVersion, mentions: ["1 != 2"]),
            ErrorRow("garbage after the packets", senderReport.bytes + [0x00, 0x00, 0x00, 0x00], .badVersion, mentions: ["0 != 2"]),
            ErrorRow("unknown type with bad padding", [
                0xA0, 0xCC, 0x00, 0x01,  // P=1, APP, length 1 (8 bytes)
                0x00, 0x00, 0x00, 0x06,  // padding count 6
            ], .badPadding, mentions: ["6"]),
            ErrorRow("malformed packet inside", emptyReceiverReport.bytes + [
                0x82, 0xCB, 0x00, 0x01,  // BYE SC=2, length 1 (8 bytes)
                0x90, 0x2F, 0x9E, 0x2E,  // one SSRC
            ], .badLength, mentions: ["2 sources"]),
        ]

        @Test(arguments: malformed)
        func malformedCompoundsAreTypedErrors(row: ErrorRow) {
            checkCompoundRejects(row)
            for number in row.mentions {
                let error = #expect(throws: PacketError.self) { try RTCPPacket.parseCompound(row.bytes) }
                #expect(error?.message.contains(number) == true, "\(row.name): \(String(describing: error)) lacks \(number)")
            }
        }

        @Test func singlePacketParsingWantsExactlyOnePacket() {
            let twoPackets = Self.senderReport.bytes + Self.cname.bytes
            checkRejects(RTCPPacket.self, ErrorRow("two packets", twoPackets, .badLength, mentions: ["28", "44"]))
            checkRejects(RTCPPacket.self, ErrorRow("unknown, short", [0x80, 0xCC, 0x00, 0x02, 0, 0, 0, 0], .badLength, mentions: ["12", "8"]))
        }

        @Test func unknownPacketsCheckTheirLimitsWhenSerializing() {
            var buffer = [UInt8](repeating: 0, count: 64)
            let ragged = RTCPPacket.unknown(type: .applicationDefined, count: 0, body: [1, 2, 3], paddingSize: 0)
            let lengthError = #expect(throws: PacketError.self) { try buffer.withUnsafeMutableBytes { try ragged.serialize(into: $0) } }
            #expect(lengthError?.code == .badLength)
            let counted = RTCPPacket.unknown(type: .applicationDefined, count: 32, body: [], paddingSize: 0)
            let countError = #expect(throws: PacketError.self) { try buffer.withUnsafeMutableBytes { try counted.serialize(into: $0) } }
            #expect(countError?.code == .badField)
        }
    }
}
