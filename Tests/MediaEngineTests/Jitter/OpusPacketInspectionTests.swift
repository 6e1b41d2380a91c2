import Testing
@testable import MediaEngine

@Suite struct OpusPacketInspectionTests {
    private static func hasLBRR(_ packet: [UInt8]) -> Bool {
        packet.withUnsafeBytes { Opus.PacketInspection.hasLBRR($0) }
    }

    @Test(arguments: [Opus.FrameDuration.ms20, .ms40, .ms60], ChannelLayout.allCases)
    func fecPacketsCarryLBRRAndOthersDoNot(duration: Opus.FrameDuration, layout: ChannelLayout) throws {
        let protected = try OpusStream(packets: 30, duration: duration, layout: layout, fec: true)
        let plain = try OpusStream(packets: 30, duration: duration, layout: layout, fec: false)
        // The first packet has no previous frame to protect; how many of the others carry
        // LBRR is the encoder's choice (it stops for a steady tone after a while).
        #expect(!Self.hasLBRR(protected.packets[0]))
        let flagged = protected.packets.filter(Self.hasLBRR).count
        #expect(flagged >= 10, "\(duration) \(layout): LBRR in \(flagged) of 30")
        #expect(!plain.packets.contains(where: Self.hasLBRR))
    }

    @Test(arguments: [Opus.FrameDuration.ms20, .ms40, .ms60], ChannelLayout.allCases)
    func theFlagMatchesWhatTheDecoderRecovers(duration: Opus.FrameDuration, layout: ChannelLayout) throws {
        // decodeFEC from a SILK packet without LBRR falls back to concealment; with LBRR it
        // decodes the copy, which sounds different. Check the flag against libopus.
        var checked = (flagged: 0, plain: 0)
        for fec in [true, false] {
            // Without FEC, 16 kb/s keeps the encoder in SILK-only mode, where the fallback is
            // exact; with FEC it needs more to afford the LBRR copies.
            let stream = try OpusStream(packets: 30, duration: duration, layout: layout, fec: fec,
                                        bitrate: fec ? 32_000 : 16_000)
            for index in 2..<stream.packets.count {
                let concealing = try Opus.Decoder(layout: layout)
                let recovering = try Opus.Decoder(layout: layout)
                for packet in stream.packets[0..<(index - 1)] {
                    _ = try concealing.decode(packet)
                    _ = try recovering.decode(packet)
                }
                let packet = stream.packets[index]
                let concealed = try concealing.decodeLost(samplesPerChannel: stream.packetSamples).samples
                let recovered = try recovering.decodeFEC(from: packet, samplesPerChannel: stream.packetSamples).samples
                let difference = zip(concealed, recovered).map { abs(Int($0) - Int($1)) }.max() ?? 0
                if Self.hasLBRR(packet) {
                    #expect(difference > 100, "\(duration) \(layout) FEC \(fec), packet \(index): differs by \(difference)")
                    checked.flagged += 1
                } else if packet[0] >> 3 < 12 {
                    // The same concealment, to rounding (stereo unmixing). Hybrid packets
                    // (configurations 12...15) also run CELT in the FEC path, so they differ.
                    #expect(difference <= 4, "\(duration) \(layout) FEC \(fec), packet \(index): differs by \(difference)")
                    checked.plain += 1
                }
            }
        }
        print("LBRR flag vs decoder, \(duration) \(layout): \(checked)")
        #expect(checked.flagged >= 10 && checked.plain >= 10, "checked \(checked)")
    }

    @Test func celtPacketsNeverCarryLBRR() throws {
        let stream = try OpusStream(packets: 30, fec: true, application: .restrictedLowDelay)
        #expect(stream.packets.allSatisfy { $0[0] >> 3 >= 16 }, "restricted low delay codes CELT only")
        #expect(!stream.packets.contains(where: Self.hasLBRR))
    }

    @Test func shortAndMalformedPacketsHaveNoLBRR() {
        let packets: [[UInt8]] = [
            [],
            [0x08],                 // SILK TOC alone (a DTX packet)
            [0x0B, 0x00],           // code 3 with zero frames
            [0x09, 0xFF],           // code 1: two equal frames of an odd total length
            [0x0A, 0xFC, 0xFF],     // code 2 whose first frame length runs past the end
        ]
        for packet in packets {
            #expect(!Self.hasLBRR(packet), "\(packet)")
        }
    }
}
