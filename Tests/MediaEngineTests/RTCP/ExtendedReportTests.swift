import Testing
@testable import MediaEngine

extension ExtendedReport: RTCPTests.WireFormat {}

extension RTCPTests {
    @Suite struct ExtendedReportTests {
        static let receiverReferenceTime = ExtendedReport.Block.receiverReferenceTime(ntp: 0xE98C_3B2F_4000_0000)
        static let twoSubBlocks = ExtendedReport.Block.dlrr([
            ExtendedReport.DLRRSubBlock(ssrc: 0x902F_9E2E, lastReceiverReport: 0x3B2F_4000, delaySinceLastReceiverReport: 0x0001_8000),
            ExtendedReport.DLRRSubBlock(ssrc: 42, lastReceiverReport: 0, delaySinceLastReceiverReport: 0),
        ])

        static let valid: [Vector<ExtendedReport>] = [
            Vector("RRTR and DLRR with two sub-blocks", [
                0x80,                    // V=2 P=0 reserved 0
                0xCF,                    // PT=207 XR
                0x00, 0x0B,              // length 11 (48 bytes)
                0x12, 0x34, 0x56, 0x78,  // SSRC of packet sender 0x12345678
                0x04,                    // BT=4 receiver reference time
                0x00,                    // reserved
                0x00, 0x02,              // block length 2 (12 bytes)
                0xE9, 0x8C, 0x3B, 0x2F,  // NTP timestamp, most significant word
                0x40, 0x00, 0x00, 0x00,  // NTP timestamp, least significant word (0.25 s)
                0x05,                    // BT=5 DLRR
                0x00,                    // reserved
                0x00, 0x06,              // block length 6 (28 bytes, two sub-blocks)
                0x90, 0x2F, 0x9E, 0x2E,  // SSRC_1
                0x3B, 0x2F, 0x40, 0x00,  // LRR_1, the middle 32 bits of an RRTR NTP timestamp
                0x00, 0x01, 0x80, 0x00,  // DLRR_1, 1.5 s in 1/65536 s
                0x00, 0x00, 0x00, 0x2A,  // SSRC_2 42
                0x00, 0x00, 0x00, 0x00,  // LRR_2, no RRTR received yet
                0x00, 0x00, 0x00, 0x00,  // DLRR_2
            ], ExtendedReport(senderSSRC: 0x1234_5678, blocks: [receiverReferenceTime, twoSubBlocks])),
            Vector("unknown block kept raw between known ones", [
                0x80, 0xCF, 0x00, 0x08,  // V=2 P=0, XR, length 8 (36 bytes)
                0x12, 0x34, 0x56, 0x78,  // SSRC of packet sender
                0x01,                    // BT=1 loss RLE, not modelled
                0x03,                    // type-specific: thinning T=3
                0x00, 0x03,              // block length 3 (16 bytes)
                0x90, 0x2F, 0x9E, 0x2E,  // SSRC of source
                0x00, 0x10, 0x00, 0x20,  // begin_seq 16, end_seq 32
                0x40, 0x0F, 0x00, 0x00,  // run-length chunk, null chunk
                0x04, 0x00, 0x00, 0x02,  // BT=4, block length 2
                0xE9, 0x8C, 0x3B, 0x2F,  // NTP timestamp, most significant word
                0x40, 0x00, 0x00, 0x00,  // NTP timestamp, least significant word
            ], ExtendedReport(senderSSRC: 0x1234_5678, blocks: [
                .unknown(type: 1, typeSpecific: 3, body: [
                    0x90, 0x2F, 0x9E, 0x2E, 0x00, 0x10, 0x00, 0x20, 0x40, 0x0F, 0x00, 0x00,
                ]),
                receiverReferenceTime,
            ])),
            Vector("unknown block with an empty body", [
                0x80, 0xCF, 0x00, 0x02,  // V=2 P=0, XR, length 2 (12 bytes)
                0x12, 0x34, 0x56, 0x78,  // SSRC of packet sender
                0xFF, 0xA5, 0x00, 0x00,  // BT=255, type-specific 0xA5, block length 0
            ], ExtendedReport(senderSSRC: 0x1234_5678, blocks: [.unknown(type: 255, typeSpecific: 0xA5, body: [])])),
            Vector("DLRR without sub-blocks", [
                0x80, 0xCF, 0x00, 0x02,  // V=2 P=0, XR, length 2 (12 bytes)
                0x12, 0x34, 0x56, 0x78,  // SSRC of packet sender
                0x05, 0x00, 0x00, 0x00,  // BT=5, block length 0
            ], ExtendedReport(senderSSRC: 0x1234_5678, blocks: [.dlrr([])])),
            Vector("no blocks", [
                0x80, 0xCF, 0x00, 0x01,  // V=2 P=0, XR, length 1 (8 bytes)
                0x12, 0x34, 0x56, 0x78,  // SSRC of packet sender
            ], ExtendedReport(senderSSRC: 0x1234_5678, blocks: [])),
            Vector("RRTR with padding", [
                0xA0, 0xCF, 0x00, 0x05,  // V=2 P=1, XR, length 5 (24 bytes)
                0x12, 0x34, 0x56, 0x78,  // SSRC of packet sender
                0x04, 0x00, 0x00, 0x02,  // BT=4, block length 2
                0xE9, 0x8C, 0x3B, 0x2F,  // NTP timestamp, most significant word
                0x40, 0x00, 0x00, 0x00,  // NTP timestamp, least significant word
                0x00, 0x00, 0x00, 0x04,  // padding, count 4
            ], ExtendedReport(senderSSRC: 0x1234_5678, blocks: [receiverReferenceTime], paddingSize: 4)),
        ]

        @Test(arguments: valid)
        func parseThenSerializeGivesTheBytesBack(vector: Vector<ExtendedReport>) throws {
            try checkRoundTrip(vector)
            let packets: [RTCPPacket] = try RTCPPacket.parseCompound(vector.bytes)
            let expected: [RTCPPacket] = [.extendedReport(vector.packet)]
            #expect(packets == expected)
            let single: RTCPPacket = try RTCPPacket(parsing: vector.bytes)
            #expect(single == .extendedReport(vector.packet))
            #expect(single.serialized() == vector.bytes)
        }

        @Test func blockAccessorsMatchTheWire() {
            let rrtr: ExtendedReport.Block = Self.receiverReferenceTime
            #expect(rrtr.type == 4)
            #expect(rrtr.serializedSize == 12)
            let dlrr: ExtendedReport.Block = Self.twoSubBlocks
            #expect(dlrr.type == 5)
            #expect(dlrr.serializedSize == 28)
            let raw = ExtendedReport.Block.unknown(type: 7, typeSpecific: 1, body: [1, 2, 3, 4])
            #expect(raw.type == 7)
            #expect(raw.serializedSize == 8)
            // The LRR a sender echoes is the compact form of the RRTR timestamp.
            #expect(NTPTime.compact(0xE98C_3B2F_4000_0000) == 0x3B2F_4000)
        }

        @Test func insideACompoundAfterAReceiverReport() throws {
            let report = ReceiverReportTests.valid[1]
            let extended = Self.valid[0]
            let bytes: [UInt8] = report.bytes + extended.bytes
            let expected: [RTCPPacket] = [.receiverReport(report.packet), .extendedReport(extended.packet)]
            let parsed: [RTCPPacket] = try RTCPPacket.parseCompound(bytes)
            #expect(parsed == expected)
            #expect(RTCPPacket.compoundSize(of: expected) == bytes.count)
            let serialized: [UInt8] = RTCPPacket.serializedCompound(expected)
            #expect(serialized == bytes)
            // A truncated XR at the end spoils the datagram, whatever the cut.
            for length in (report.bytes.count + 1)..<bytes.count {
                let error = #expect(throws: PacketError.self, "\(length) bytes") {
                    try RTCPPacket.parseCompound(Array(bytes[..<length]))
                }
                let code: PacketError.Code? = error?.code
                #expect(code == .tooShort || code == .badLength, "\(length) bytes: \(String(describing: error))")
            }
        }

        @Test func reservedBitsAreIgnoredAndSentAsZero() throws {
            var bytes: [UInt8] = Self.valid[0].bytes
            bytes[0] |= 0x1F   // header reserved bits
            bytes[9] = 0xFF    // RRTR reserved octet
            bytes[21] = 0x01   // DLRR reserved octet
            let parsed = try ExtendedReport(parsing: bytes)
            #expect(parsed == Self.valid[0].packet)
            let serialized: [UInt8] = parsed.serialized()
            #expect(serialized == Self.valid[0].bytes)
        }

        static let malformed: [ErrorRow] = [
            ErrorRow("truncated header", [0x80, 0xCF], .tooShort, mentions: ["2 < 4"]),
            ErrorRow("header only, no SSRC", [0x80, 0xCF, 0x00, 0x00], .tooShort, mentions: ["0 < 4"]),
            ErrorRow("RTCP length past the end", [
                0x80, 0xCF, 0x00, 0x02,  // XR, length 2 (12 bytes)
                0x12, 0x34, 0x56, 0x78,  // SSRC, then nothing
            ], .badLength, mentions: ["12", "8"]),
            ErrorRow("block length past the end", [
                0x80, 0xCF, 0x00, 0x05,  // XR, length 5 (24 bytes)
                0x12, 0x34, 0x56, 0x78,  // SSRC
                0x05, 0x00, 0x00, 0x06,  // BT=5, block length 6 (28 bytes), 16 left
                0x90, 0x2F, 0x9E, 0x2E,  // SSRC_1
                0x3B, 0x2F, 0x40, 0x00,  // LRR_1
                0x00, 0x01, 0x80, 0x00,  // DLRR_1, then the packet ends
            ], .badLength, mentions: ["type 5", "offset 8", "length 6", "28 bytes", "16 remain"]),
            ErrorRow("second block length past the end", [
                0x80, 0xCF, 0x00, 0x05,  // XR, length 5 (24 bytes)
                0x12, 0x34, 0x56, 0x78,  // SSRC
                0x04, 0x00, 0x00, 0x02,  // BT=4, block length 2
                0xE9, 0x8C, 0x3B, 0x2F,  // NTP timestamp, most significant word
                0x40, 0x00, 0x00, 0x00,  // NTP timestamp, least significant word
                0x07, 0x00, 0xFF, 0xFF,  // BT=7, block length 65535 (262144 bytes), 4 left
            ], .badLength, mentions: ["type 7", "offset 20", "65535", "262144 bytes", "4 remain"]),
            ErrorRow("RRTR with block length 3", [
                0x80, 0xCF, 0x00, 0x05,  // XR, length 5 (24 bytes)
                0x12, 0x34, 0x56, 0x78,  // SSRC
                0x04, 0x00, 0x00, 0x03,  // BT=4, block length 3 (16 bytes)
                0xE9, 0x8C, 0x3B, 0x2F,  // NTP timestamp, most significant word
                0x40, 0x00, 0x00, 0x00,  // NTP timestamp, least significant word
                0x00, 0x00, 0x00, 0x00,  // a word RRTR does not have
            ], .badLength, mentions: ["receiver reference time", "3 != 2"]),
            ErrorRow("RRTR with block length 0", [
                0x80, 0xCF, 0x00, 0x02,  // XR, length 2 (12 bytes)
                0x12, 0x34, 0x56, 0x78,  // SSRC
                0x04, 0x00, 0x00, 0x00,  // BT=4, block length 0: no timestamp
            ], .badLength, mentions: ["receiver reference time", "0 != 2"]),
            ErrorRow("DLRR with block length 4", [
                0x80, 0xCF, 0x00, 0x06,  // XR, length 6 (28 bytes)
                0x12, 0x34, 0x56, 0x78,  // SSRC
                0x05, 0x00, 0x00, 0x04,  // BT=5, block length 4 (20 bytes)
                0x90, 0x2F, 0x9E, 0x2E,  // SSRC_1
                0x3B, 0x2F, 0x40, 0x00,  // LRR_1
                0x00, 0x01, 0x80, 0x00,  // DLRR_1
                0x00, 0x00, 0x00, 0x2A,  // a third of a sub-block
            ], .badLength, mentions: ["DLRR", "length 4", "multiple of 3"]),
            ErrorRow("padding bigger than the body", [
                0xA0, 0xCF, 0x00, 0x01,  // P=1, XR, length 1 (8 bytes)
                0x00, 0x00, 0x00, 0x08,  // "SSRC" whose last octet claims 8 padding octets
            ], .badPadding, mentions: ["8 > 4"]),
            ErrorRow("version 1", [
                0x40, 0xCF, 0x00, 0x01,  // V=1
                0x12, 0x34, 0x56, 0x78,
            ], .badVersion, mentions: ["1 != 2"]),
        ]

        @Test(arguments: malformed)
        func malformedExtendedReportsAreTypedErrors(row: ErrorRow) {
            checkRejects(ExtendedReport.self, row)
            checkCompoundRejects(row)
        }

        @Test func anotherTypeIsNotAnExtendedReport() {
            let rr = ReceiverReportTests.valid[0].bytes
            checkRejects(ExtendedReport.self, ErrorRow("RR", rr, .badField, mentions: ["201", "207"]))
        }

        @Test func limitsAreCheckedWhenSerializing() {
            var buffer = [UInt8](repeating: 0, count: 64)
            let ragged = ExtendedReport(senderSSRC: 1, blocks: [.unknown(type: 9, typeSpecific: 0, body: [1, 2, 3])])
            let raggedError = #expect(throws: PacketError.self) { try buffer.withUnsafeMutableBytes { try ragged.serialize(into: $0) } }
            #expect(raggedError?.code == .badLength)
            #expect(raggedError?.message.contains("type 9 body of 3 bytes") == true)

            let huge = ExtendedReport(senderSSRC: 1, blocks: [.unknown(type: 9, typeSpecific: 0, body: Array(repeating: 0, count: RTCPHeader.maximumPacketSize))])
            var big = [UInt8](repeating: 0, count: huge.serializedSize)
            let hugeError = #expect(throws: PacketError.self) { try big.withUnsafeMutableBytes { try huge.serialize(into: $0) } }
            #expect(hugeError?.code == .badLength)
            #expect(hugeError?.message.contains("\(RTCPHeader.maximumPacketSize)") == true)

            let padded = ExtendedReport(senderSSRC: 1, blocks: [], paddingSize: 3)
            let paddingError = #expect(throws: PacketError.self) { try buffer.withUnsafeMutableBytes { try padded.serialize(into: $0) } }
            #expect(paddingError?.code == .badPadding)
        }

        @Test func theLargestPacketTheLengthAllowsRoundTrips() throws {
            // 65535 words after the header: SSRC, then one DLRR of 21844 sub-blocks and
            // an unknown block filling the last word.
            let subBlocks = (0..<21_844).map {
                ExtendedReport.DLRRSubBlock(ssrc: UInt32($0), lastReceiverReport: UInt32($0) &* 3, delaySinceLastReceiverReport: 7)
            }
            let packet = ExtendedReport(senderSSRC: 1, blocks: [.dlrr(subBlocks), .unknown(type: 0, typeSpecific: 0, body: [])])
            #expect(packet.serializedSize == RTCPHeader.maximumPacketSize)
            let bytes: [UInt8] = packet.serialized()
            #expect(bytes[2] == 0xFF && bytes[3] == 0xFF)
            #expect(bytes[10] == 0xFF && bytes[11] == 0xFC)   // DLRR block length 65532
            let parsed = try ExtendedReport(parsing: bytes)
            #expect(parsed == packet)
        }

        /// Whether the bits a parse drops (header and known-block reserved bits, padding
        /// contents) are all zero in `bytes`, so the packet must serialize back exactly.
        static func keepsAllItsBytes(_ bytes: [UInt8], _ packet: ExtendedReport) -> Bool {
            guard packet.paddingSize == 0, bytes[0] & RTCPHeader.maximumCount == 0 else { return false }
            var offset = RTCPHeader.size + 4
            for block in packet.blocks {
                if case .unknown = block {} else if bytes[offset + 1] != 0 { return false }
                offset += block.serializedSize
            }
            return true
        }

        @Test func truncationsAndMutationsNeverCrashAndRoundTripWhenTheyParse() {
            var outcomes = (parsed: 0, rejected: 0)
            func run(_ input: [UInt8]) {
                let packet: ExtendedReport
                do {
                    packet = try ExtendedReport(parsing: input)
                } catch {
                    #expect(!error.message.isEmpty)
                    outcomes.rejected += 1
                    return
                }
                outcomes.parsed += 1
                let again: [UInt8] = packet.serialized()
                #expect(again.count == input.count, "\(input)")
                let reparsed = try? ExtendedReport(parsing: again)
                #expect(reparsed == packet, "\(input)")
                if Self.keepsAllItsBytes(input, packet) {
                    #expect(again == input, "\(input)")
                }
            }
            for vector in Self.valid + [ExtendedReportTests.mutationBase] {
                for length in 0..<vector.bytes.count { run(Array(vector.bytes[..<length])) }
                for position in vector.bytes.indices {
                    for bit in 0..<8 {
                        var flipped = vector.bytes
                        flipped[position] ^= 1 << bit
                        run(flipped)
                    }
                }
                // Every small block length in the first block.
                if vector.bytes.count >= 12 {
                    for length in 0...20 {
                        var changed = vector.bytes
                        changed[10] = 0
                        changed[11] = UInt8(length)
                        run(changed)
                    }
                }
            }
            #expect(outcomes.parsed > 800, "\(outcomes)")
            #expect(outcomes.rejected > 500, "\(outcomes)")
        }

        /// A packet whose every block is unknown, so mutations of the block types reach
        /// the modelled parsers with odd lengths.
        static let mutationBase = Vector("blocks of type 3 and 6", [
            0x80, 0xCF, 0x00, 0x07,  // XR, length 7 (32 bytes)
            0x12, 0x34, 0x56, 0x78,  // SSRC
            0x03, 0x00, 0x00, 0x02,  // BT=3, block length 2
            0x00, 0x00, 0x00, 0x01, 0x00, 0x00, 0x00, 0x02,
            0x06, 0x00, 0x00, 0x02,  // BT=6, block length 2
            0x00, 0x00, 0x00, 0x03, 0x00, 0x00, 0x00, 0x04,
        ], ExtendedReport(senderSSRC: 0x1234_5678, blocks: [
            .unknown(type: 3, typeSpecific: 0, body: [0, 0, 0, 1, 0, 0, 0, 2]),
            .unknown(type: 6, typeSpecific: 0, body: [0, 0, 0, 3, 0, 0, 0, 4]),
        ]))

        @Test func theMutationBaseIsValid() throws {
            try checkRoundTrip(Self.mutationBase)
        }
    }
}
