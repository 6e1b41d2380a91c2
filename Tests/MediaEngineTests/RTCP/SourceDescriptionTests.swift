import Testing
@testable import MediaEngine

extension RTCPTests {
    @Suite struct SourceDescriptionTests {
        typealias Chunk = SourceDescription.Chunk
        typealias Item = SourceDescription.Item

        static let valid: [Vector<SourceDescription>] = [
            Vector("CNAME ending the chunk on a word boundary", [
                0x81,                    // V=2 P=0 SC=1
                0xCA,                    // PT=202 SDES
                0x00, 0x06,              // length 6 (28 bytes)
                0x11, 0x22, 0x33, 0x44,  // SSRC 0x11223344
                0x01, 0x11,              // CNAME, 17 octets
            ] + Array("alice@example.org".utf8) + [
                0x00,                    // END; the chunk is 24 bytes already
            ], SourceDescription(ssrc: 0x1122_3344, cname: "alice@example.org")),
            Vector("short CNAME, END and two null octets", [
                0x81, 0xCA, 0x00, 0x03,  // V=2 P=0 SC=1, SDES, length 3 (16 bytes)
                0x11, 0x22, 0x33, 0x44,  // SSRC
                0x01, 0x03,              // CNAME, 3 octets
                0x62, 0x6F, 0x62,        // "bob"
                0x00,                    // END
                0x00, 0x00,              // null octets to the word boundary
            ], SourceDescription(ssrc: 0x1122_3344, cname: "bob")),
            Vector("items end on a boundary, so END takes a whole word", [
                0x81, 0xCA, 0x00, 0x03,  // V=2 P=0 SC=1, SDES, length 3 (16 bytes)
                0x11, 0x22, 0x33, 0x44,  // SSRC
                0x01, 0x02, 0x61, 0x62,  // CNAME "ab"
                0x00, 0x00, 0x00, 0x00,  // END and three null octets
            ], SourceDescription(ssrc: 0x1122_3344, cname: "ab")),
            Vector("two chunks, several items", [
                0x82, 0xCA, 0x00, 0x09,  // V=2 P=0 SC=2, SDES, length 9 (40 bytes)
                0xAA, 0xAA, 0x00, 0x01,  // chunk 1: SSRC 0xAAAA0001
                0x01, 0x03, 0x62, 0x6F, 0x62,        // CNAME "bob"
                0x02, 0x03, 0x42, 0x6F, 0x62,        // NAME "Bob"
                0x06, 0x04, 0x6D, 0x65, 0x2F, 0x31,  // TOOL "me/1"
                0x00, 0x00, 0x00, 0x00,  // END and three null octets
                0xAA, 0xAA, 0x00, 0x02,  // chunk 2: CSRC 0xAAAA0002
                0x01, 0x05, 0x63, 0x61, 0x72, 0x6F, 0x6C,  // CNAME "carol"
                0x00,                    // END
            ], SourceDescription(chunks: [
                Chunk(source: 0xAAAA_0001, items: [
                    Item(type: .cname, text: "bob"), Item(type: .name, text: "Bob"), Item(type: .tool, text: "me/1"),
                ]),
                Chunk(source: 0xAAAA_0002, items: [Item(type: .cname, text: "carol")]),
            ])),
            Vector("chunk without items", [
                0x81, 0xCA, 0x00, 0x02,  // V=2 P=0 SC=1, SDES, length 2 (12 bytes)
                0x00, 0x00, 0x00, 0x05,  // SSRC 5
                0x00, 0x00, 0x00, 0x00,  // END and three null octets
            ], SourceDescription(chunks: [Chunk(source: 5, items: [])])),
            Vector("no chunks", [
                0x80, 0xCA, 0x00, 0x00,  // V=2 P=0 SC=0, SDES, length 0 (4 bytes)
            ], SourceDescription(chunks: [])),
            Vector("PRIV, an unassigned type and an empty EMAIL", [
                0x81, 0xCA, 0x00, 0x05,  // V=2 P=0 SC=1, SDES, length 5 (24 bytes)
                0x00, 0x00, 0x00, 0x06,  // SSRC 6
                0x08, 0x05,              // PRIV, 5 octets
                0x03, 0x78, 0x2D, 0x61,  // prefix length 3, prefix "x-a"
                0x31,                    // value "1"
                0x0C, 0x01, 0x30,        // type 12 (MID, RFC 8843), "0"
                0x03, 0x00,              // EMAIL, 0 octets
                0x00, 0x00, 0x00, 0x00,  // END and three null octets
            ], SourceDescription(chunks: [Chunk(source: 6, items: [
                Item(type: .privateExtension, value: [0x03, 0x78, 0x2D, 0x61, 0x31]),
                Item(type: SourceDescription.ItemType(rawValue: 12), text: "0"),
                Item(type: .email, value: []),
            ])])),
            Vector("packet padding after the chunk", [
                0xA1, 0xCA, 0x00, 0x04,  // V=2 P=1 SC=1, SDES, length 4 (20 bytes)
                0x11, 0x22, 0x33, 0x44,  // SSRC
                0x01, 0x02, 0x61, 0x62,  // CNAME "ab"
                0x00, 0x00, 0x00, 0x00,  // END and three null octets
                0x00, 0x00, 0x00, 0x04,  // padding, count 4
            ], SourceDescription(chunks: [Chunk(source: 0x1122_3344, items: [Item(type: .cname, text: "ab")])], paddingSize: 4)),
            Vector("255-octet item", [
                0x81, 0xCA, 0x00, 0x42,  // V=2 P=0 SC=1, SDES, length 66 (268 bytes)
                0x11, 0x22, 0x33, 0x44,  // SSRC
                0x07, 0xFF,              // NOTE, 255 octets
            ] + Array(repeating: 0x78, count: 255) + [
                0x00,                    // END
                0x00, 0x00,              // null octets to the word boundary
            ], SourceDescription(chunks: [Chunk(source: 0x1122_3344, items: [
                Item(type: .note, value: Array(repeating: 0x78, count: 255)),
            ])])),
        ]

        @Test(arguments: valid)
        func parseThenSerializeGivesTheBytesBack(vector: Vector<SourceDescription>) throws {
            try checkRoundTrip(vector)
            #expect(try RTCPPacket.parseCompound(vector.bytes) == [.sourceDescription(vector.packet)])
        }

        @Test func cnameAndTextAreReadable() throws {
            let packet = try SourceDescription(parsing: Self.valid[3].bytes)
            #expect(packet.chunks.map(\.cname) == ["bob", "carol"])
            #expect(packet.chunks[0].items[1].text == "Bob")
            #expect(SourceDescription(chunks: [Chunk(source: 1, items: [Item(type: .name, text: "x")])]).chunks[0].cname == nil)
            // Invalid UTF-8 is kept byte for byte and only replaced when read as text.
            let odd = SourceDescription(chunks: [Chunk(source: 1, items: [Item(type: .cname, value: [0xFF, 0x41])])])
            #expect(try SourceDescription(parsing: odd.serialized()) == odd)
            #expect(odd.chunks[0].cname == "\u{FFFD}A")
        }

        static let malformed: [ErrorRow] = [
            ErrorRow("item length past the end", [
                0x81, 0xCA, 0x00, 0x02,  // SC=1, length 2 (12 bytes)
                0x11, 0x22, 0x33, 0x44,  // SSRC
                0x01, 0x14, 0x61, 0x62,  // CNAME claiming 20 octets, 2 present
            ], .badLength, mentions: ["20", "26 > 8"]),
            ErrorRow("items fill the chunk, no END", [
                0x81, 0xCA, 0x00, 0x02,  // SC=1, length 2 (12 bytes)
                0x11, 0x22, 0x33, 0x44,  // SSRC
                0x01, 0x02, 0x61, 0x62,  // CNAME "ab", then nothing
            ], .badLength, mentions: ["no END", "8"]),
            ErrorRow("type octet without its length", [
                0x81, 0xCA, 0x00, 0x03,  // SC=1, length 3 (16 bytes)
                0x11, 0x22, 0x33, 0x44,  // SSRC
                0x01, 0x05, 0x61, 0x62, 0x63, 0x64, 0x65,  // CNAME "abcde"
                0x03,                    // EMAIL type in the last octet
            ], .badLength, mentions: ["11"]),
            ErrorRow("alignment octet not null", [
                0x81, 0xCA, 0x00, 0x02,  // SC=1, length 2 (12 bytes)
                0x11, 0x22, 0x33, 0x44,  // SSRC
                0x01, 0x00,              // CNAME, empty
                0x00,                    // END
                0x01,                    // should be a null octet
            ], .badField, mentions: ["7"]),
            ErrorRow("source count 2, one chunk", [
                0x82, 0xCA, 0x00, 0x03,  // SC=2, length 3 (16 bytes)
                0x11, 0x22, 0x33, 0x44,  // SSRC
                0x01, 0x02, 0x61, 0x62,  // CNAME "ab"
                0x00, 0x00, 0x00, 0x00,  // END
            ], .badLength, mentions: ["chunk 1", "12"]),
            ErrorRow("source count 1, two chunks", [
                0x81, 0xCA, 0x00, 0x04,  // SC=1, length 4 (20 bytes)
                0x11, 0x22, 0x33, 0x44,  // chunk 1 SSRC
                0x00, 0x00, 0x00, 0x00,  // END
                0x55, 0x66, 0x77, 0x88,  // chunk 2 SSRC, not counted
                0x00, 0x00, 0x00, 0x00,  // END
            ], .badLength, mentions: ["8 bytes", "1 chunks"]),
            ErrorRow("source count 1, no room for the SSRC", [
                0x81, 0xCA, 0x00, 0x00,  // SC=1, length 0 (4 bytes)
            ], .badLength, mentions: ["chunk 0", "0"]),
            ErrorRow("length past the end", [
                0x81, 0xCA, 0x00, 0x06,  // SC=1, length 6 (28 bytes)
                0x11, 0x22, 0x33, 0x44,  // SSRC
                0x01, 0x02, 0x61, 0x62,  // CNAME "ab"
            ], .badLength, mentions: ["28", "12"]),
        ]

        @Test(arguments: malformed)
        func malformedDescriptionsAreTypedErrors(row: ErrorRow) {
            checkRejects(SourceDescription.self, row)
            checkCompoundRejects(row)
        }

        @Test func limitsAreCheckedWhenSerializing() throws {
            var buffer = [UInt8](repeating: 0, count: 2_048)
            let cases: [(SourceDescription, String)] = [
                (SourceDescription(chunks: [Chunk(source: 1, items: [Item(type: .cname, value: Array(repeating: 0x61, count: 256))])]), "256 octets"),
                (SourceDescription(chunks: [Chunk(source: 1, items: [Item(type: .end, value: [])])]), "type 0"),
                (SourceDescription(chunks: Array(repeating: Chunk(source: 1, items: []), count: 32)), "32 > 31"),
            ]
            for (packet, named) in cases {
                let error = #expect(throws: PacketError.self) { try buffer.withUnsafeMutableBytes { try packet.serialize(into: $0) } }
                #expect(error?.code == .badField)
                #expect(error?.message.contains(named) == true, "\(String(describing: error))")
            }
        }
    }
}
