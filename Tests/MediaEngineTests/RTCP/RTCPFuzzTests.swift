import Testing
@testable import MediaEngine

extension RTCPTests {
    /// Deterministic garbage, near-valid packets, truncations and mutations of every valid
    /// vector, all fed to the compound parser. Debug builds bounds-check every raw buffer
    /// read, so a read past a length field traps here instead of passing silently.
    @Suite struct RTCPFuzzTests {
        /// Every valid datagram of the other suites.
        static var corpus: [[UInt8]] {
            SenderReportTests.valid.map(\.bytes) + ReceiverReportTests.valid.map(\.bytes)
                + SourceDescriptionTests.valid.map(\.bytes) + GoodbyeTests.valid.map(\.bytes)
                + GenericNACKTests.valid.map(\.bytes) + TransportFeedbackTests.valid.map(\.bytes)
                + PictureLossIndicationTests.valid.map(\.bytes)
                + FullIntraRequestTests.valid.map(\.bytes) + ReceiverEstimatedMaxBitrateTests.valid.map(\.bytes)
                + ExtendedReportTests.valid.map(\.bytes) + RTCPCompoundTests.valid.map(\.bytes)
        }

        /// What one input did.
        enum Outcome { case parsed, rejected }

        /// Parses `input`; when it parses, the packets must serialize to as many bytes, parse
        /// back to the same values, and (without padding or FIR and XR reserved bits, which
        /// are not kept) give the input back byte for byte.
        static func exercise(_ input: [UInt8]) -> Outcome {
            // The single-packet entry point must be as robust as the compound one.
            if let single = try? RTCPPacket(parsing: input) {
                #expect(single.serializedSize == input.count, "\(input)")
            }
            let packets: [RTCPPacket]
            do {
                packets = try input.withUnsafeBufferPointer { (buffer) throws(PacketError) in
                    try RTCPPacket.parseCompound(UnsafeRawBufferPointer(buffer))
                }
            } catch {
                #expect(!error.message.isEmpty)
                return .rejected
            }
            #expect(!packets.isEmpty)
            let again = RTCPPacket.serializedCompound(packets)
            #expect(again.count == input.count, "\(input)")
            #expect((try? RTCPPacket.parseCompound(again)) == packets, "\(input)")
            if !packets.contains(where: keepsLessThanItsBytes) {
                #expect(again == input, "\(input)")
            }
            return .parsed
        }

        private static func keepsLessThanItsBytes(_ packet: RTCPPacket) -> Bool {
            switch packet {
            case .fullIntraRequest, .extendedReport: true
            case .senderReport(let p): p.paddingSize != 0
            case .receiverReport(let p): p.paddingSize != 0
            case .sourceDescription(let p): p.paddingSize != 0
            case .goodbye(let p): p.paddingSize != 0
            case .genericNACK(let p): p.paddingSize != 0
            case .transportFeedback(let p): p.paddingSize != 0
            case .pictureLossIndication(let p): p.paddingSize != 0
            case .receiverEstimatedMaxBitrate(let p): p.paddingSize != 0
            case .unknown(_, _, _, let paddingSize): paddingSize != 0
            }
        }

        @Test func randomBytesNeverCrashTheParser() {
            var random = SplitMix64(seed: 1)
            var parsed = 0
            for _ in 0..<4_000 {
                let input = (0..<Int.random(in: 0...96, using: &random)).map { _ in UInt8.random(in: 0...255, using: &random) }
                if Self.exercise(input) == .parsed { parsed += 1 }
            }
            // Random first bytes are rarely version 2 with a fitting length; nearly all fail.
            #expect(parsed < 400)
        }

        @Test func nearValidDatagramsNeverCrashTheParser() {
            var random = SplitMix64(seed: 2)
            var outcomes = (parsed: 0, rejected: 0)
            for _ in 0..<4_000 {
                var input: [UInt8] = []
                for _ in 0..<Int.random(in: 1...3, using: &random) {
                    input += Self.nearValidPacket(using: &random)
                }
                switch Self.exercise(input) {
                case .parsed: outcomes.parsed += 1
                case .rejected: outcomes.rejected += 1
                }
            }
            // Both paths must be well exercised, or this test proves little.
            #expect(outcomes.parsed > 300, "\(outcomes)")
            #expect(outcomes.rejected > 300, "\(outcomes)")
        }

        @Test func truncationsAndMutationsOfValidPacketsNeverCrashTheParser() {
            var random = SplitMix64(seed: 3)
            var inputs = 0
            var outcomes = (parsed: 0, rejected: 0)
            func run(_ input: [UInt8]) {
                inputs += 1
                switch Self.exercise(input) {
                case .parsed: outcomes.parsed += 1
                case .rejected: outcomes.rejected += 1
                }
            }
            let corpus = Self.corpus
            for valid in corpus {
                #expect(Self.exercise(valid) == .parsed)
                for length in 0..<valid.count { run(Array(valid[..<length])) }
                for position in valid.indices {
                    for bit in 0..<8 {
                        var flipped = valid
                        flipped[position] ^= 1 << bit
                        run(flipped)
                    }
                    var replaced = valid
                    replaced[position] = UInt8.random(in: 0...255, using: &random)
                    run(replaced)
                }
                // Two valid datagrams back to back are one valid datagram.
                let other = corpus[Int.random(in: corpus.indices, using: &random)]
                #expect(Self.exercise(valid + other) == .parsed)
            }
            #expect(inputs > 10_000)
            #expect(outcomes.parsed > 500, "\(outcomes)")
            #expect(outcomes.rejected > 2_000, "\(outcomes)")
        }

        /// A packet with version 2, a plausible type, count and length, and random contents
        /// that often but not always agree with them.
        static func nearValidPacket(using random: inout SplitMix64) -> [UInt8] {
            let types: [UInt8] = [200, 201, 202, 203, 204, 205, 206, 207, 192]
            let type = types[Int.random(in: types.indices, using: &random)]
            let count: UInt8 = switch type {
            case 205, 206: [1, 4, 15, UInt8.random(in: 0...31, using: &random)][Int.random(in: 0...3, using: &random)]
            default: Bool.random(using: &random) ? UInt8.random(in: 0...2, using: &random) : UInt8.random(in: 0...31, using: &random)
            }
            let words = Int.random(in: 0...12, using: &random)
            var body = (0..<(words * 4)).map { _ in
                // Mostly small octets, so SDES and BYE lengths often land inside the packet.
                Bool.random(using: &random) ? UInt8.random(in: 0...8, using: &random) : UInt8.random(in: 0...255, using: &random)
            }
            if type == 206, count == 15, body.count >= 16, Bool.random(using: &random) {
                body.replaceSubrange(8..<12, with: [0x52, 0x45, 0x4D, 0x42])  // "REMB"
                body[12] = UInt8((body.count - 16) / 4)
            }
            var padded = false
            if body.count >= 4, Int.random(in: 0..<4, using: &random) == 0 {
                padded = true
                body[body.count - 1] = Bool.random(using: &random) ? 4 : UInt8.random(in: 0...255, using: &random)
            }
            var length = UInt16(words)
            if Int.random(in: 0..<8, using: &random) == 0 { length = UInt16.random(in: 0...20, using: &random) }
            return [0x80 | (padded ? 0x20 : 0) | count, type, UInt8(length >> 8), UInt8(length & 0xFF)] + body
        }
    }
}
