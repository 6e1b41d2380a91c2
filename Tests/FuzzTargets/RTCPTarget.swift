import MediaEngine

/// Compound RTCP: every packet type (SR, RR, SDES, BYE, NACK, TWCC, PLI, FIR, REMB, XR and
/// unknown ones), through `RTCPPacket.parseCompound` and each single-packet parser.
enum RTCPTarget {
    static let target = FuzzTarget(
        name: "rtcp",
        summary: "RTCPPacket.parseCompound and RTCPPacket(parsing:); parsed packets serialize to as many bytes, parse back equal and give the input back where nothing is dropped"
    ) { bytes in
        // The single-packet entry point must be as robust as the compound one.
        if let single = try? RTCPPacket(parsing: bytes) {
            FuzzCheck.require(single.serializedSize == bytes.count, "single RTCP packet of \(bytes.count) bytes serializes to \(single.serializedSize)")
        }
        guard let packets = try? RTCPPacket.parseCompound(bytes) else { return false }
        FuzzCheck.require(!packets.isEmpty, "a parsed compound RTCP datagram has no packets")
        for packet in packets { inspect(packet) }
        let again = RTCPPacket.serializedCompound(packets)
        FuzzCheck.require(again.count == bytes.count, "compound RTCP of \(bytes.count) bytes serializes to \(again.count)")
        FuzzCheck.require((try? RTCPPacket.parseCompound(again)) == packets, "compound RTCP parses back to other packets")
        if !packets.contains(where: keepsLessThanItsBytes) {
            FuzzCheck.require(again.elementsEqual(bytes), "compound RTCP serializes to other bytes")
        }
        return true
    }

    /// Reads what receivers read of each packet: the derived views must agree with the fields.
    private static func inspect(_ packet: RTCPPacket) {
        switch packet {
        case .transportFeedback(let feedback):
            let symbols = feedback.statusSymbols
            FuzzCheck.require(symbols.count == Int(feedback.packetStatusCount), "TWCC: \(symbols.count) symbols for \(feedback.packetStatusCount) statuses")
            let results = feedback.packets
            FuzzCheck.require(results.count == symbols.count, "TWCC: \(results.count) results for \(symbols.count) symbols")
            let received = results.count { $0.receiveOffset != nil }
            FuzzCheck.require(received == feedback.receiveDeltas.count, "TWCC: \(received) received, \(feedback.receiveDeltas.count) deltas")
            _ = feedback.referenceTimestamp
        case .genericNACK(let nack):
            // A NACK names at most 17 sequence numbers per entry.
            FuzzCheck.require(nack.lostSequenceNumbers.count <= 17 * nack.entries.count, "NACK lists more numbers than its entries hold")
        case .receiverEstimatedMaxBitrate(let remb):
            _ = remb.bitrate
        case .goodbye(let bye):
            _ = bye.reasonText
        case .senderReport, .receiverReport, .sourceDescription, .pictureLossIndication, .fullIntraRequest,
             .extendedReport, .unknown:
            break
        }
    }

    /// Packets whose serialization does not keep every input byte: padding contents and
    /// the reserved bits of FIR and XR are written as zero.
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
}
