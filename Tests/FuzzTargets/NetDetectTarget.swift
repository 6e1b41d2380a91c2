import MediaEngine
import MediaRouting

/// Net-detect probes (`ProbePacket`, magic `MEND`): the echo side's decision and the
/// measuring side's bookkeeping of replies.
enum NetDetectTarget {
    static let target = FuzzTarget(
        name: "netdetect-probe",
        summary: "ProbePacket parse/serialize/parse; EchoDecider.shouldAnswer (the reply is never larger); NetDetectMeasurement.received and its result"
    ) { bytes in
        let probe = try? ProbePacket(parsing: bytes)
        if let probe {
            let written = probe.serialized(size: bytes.count)
            FuzzCheck.require(written.count == bytes.count, "probe of \(bytes.count) bytes serializes to \(written.count)")
            let again = written.withUnsafeBytes { try? ProbePacket(parsing: $0) }
            FuzzCheck.require(again == probe, "probe parses back to another value")
        }

        var decider = EchoDecider()
        if decider.shouldAnswer(bytes, from: source, now: .zero) {
            // The reply is the request with its kind changed, in place: never larger.
            var reply = Array(bytes)
            reply.withUnsafeMutableBytes { ProbePacket.markAsReply($0) }
            FuzzCheck.require(reply.count == bytes.count, "echo reply of \(reply.count) bytes to \(bytes.count)")
            let parsed = reply.withUnsafeBytes { try? ProbePacket(parsing: $0) }
            FuzzCheck.require(parsed?.kind == .reply, "an answered request does not turn into a reply")
        }
        FuzzCheck.require(decider.counters.answered + decider.counters.malformed + decider.counters.rateLimited
                          + decider.counters.tableFull == 1, "the echo decider counted \(decider.counters)")

        // The measuring side sent probes 0..<8 with token 7 at times 1000 + 10 * n.
        var measurement = NetDetectMeasurement(token: 7, target: source, count: 8)
        for sequence in 0..<8 { measurement.sent(sequence, at: 1_000 + 10 * UInt64(sequence)) }
        measurement.received(bytes, from: source, at: 5_000)
        measurement.received(bytes, from: source, at: 6_000)
        let info = measurement.info
        FuzzCheck.require(info.received <= 1 && info.received + info.duplicated + info.forged + info.malformed == 2,
                          "two copies of one datagram counted as \(info)")
        let result = measurement.result(taskId: 1)
        FuzzCheck.require((0...100).contains(result.lossRate), "loss rate \(result.lossRate)")
        FuzzCheck.require(result.rttMeanDeviation >= 0, "RTT deviation \(result.rttMeanDeviation)")
        return probe != nil
    }

    static let source = SocketAddress(addressBytes: [192, 0, 2, 1], port: 9_000)!
}
