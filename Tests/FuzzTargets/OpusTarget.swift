import MediaEngine

/// Opus payloads as the receive path inspects them before decoding: the TOC and frame
/// count (RFC 7587, RFC 6716 section 3), LBRR and DTX detection, and the jitter buffer that
/// holds and decodes them.
enum OpusTarget {
    static let target = FuzzTarget(
        name: "opus",
        summary: "OpusDepayloader.samples, Opus.PacketInspection.hasLBRR/isDTX and Opus.Decoder on the input, then an AudioJitterBuffer fed packets cut from it and pulled"
    ) { bytes in
        let valid = inspect(bytes)
        let accepted = playOut(bytes)
        return valid || accepted > 0
    }

    /// The TOC inspection and the decoder agree on what a packet holds; returns whether the
    /// TOC makes a valid packet.
    private static func inspect(_ bytes: UnsafeRawBufferPointer) -> Bool {
        let samples = try? OpusDepayloader.samples(in: bytes)
        if let samples {
            // RFC 6716 caps a packet at 120 ms.
            FuzzCheck.require(samples > 0 && samples <= Opus.maxSamplesPerPacket, "Opus packet of \(samples) samples")
        }
        _ = Opus.PacketInspection.hasLBRR(bytes)
        FuzzCheck.require(Opus.PacketInspection.isDTX(bytes) == (1...2).contains(bytes.count), "DTX is 1 or 2 bytes")
        // A decoder per input: no state carries over from one input to the next.
        guard let decoder = try? Opus.Decoder(sampleRate: AudioFrame.sampleRate, layout: .stereo) else {
            FuzzCheck.require(false, "Opus decoder refused")
            return false
        }
        var pcm = [Int16](repeating: 0, count: Opus.maxSamplesPerPacket * 2)
        let decoded = pcm.withUnsafeMutableBufferPointer { try? decoder.decode(bytes, into: $0) }
        if let decoded, !bytes.isEmpty {
            FuzzCheck.require(decoded == samples, "Opus decoded \(decoded) samples, TOC says \(samples.map(String.init) ?? "invalid")")
        }
        return samples != nil
    }

    /// A jitter buffer on a script: opcode bit 7 pulls one frame (low bits: ms late), else a
    /// packet with sequence and timestamp steps and an arrival step in ms. Returns how many
    /// packets the buffer accepted.
    private static func playOut(_ bytes: UnsafeRawBufferPointer) -> Int {
        var input = FuzzInput(bytes)
        guard let buffer = try? AudioJitterBuffer() else {
            FuzzCheck.require(false, "default jitter buffer refused")
            return 0
        }
        var output = [Int16](repeating: 0, count: buffer.configuration.samplesPerFrame * buffer.configuration.layout.count)
        var arrival = Duration.zero
        var playout = Duration.zero
        var sequence: UInt16 = 0
        var timestamp: UInt32 = 0
        var steps = 0
        var accepted = 0
        while !input.isAtEnd && steps < 2_048 {
            steps += 1
            let opcode = input.byte()
            if opcode & 0x80 != 0 {
                playout = max(playout + .milliseconds(20), arrival + .milliseconds(Int(opcode & 0x7F)))
                let result = output.withUnsafeMutableBufferPointer { buffer.pull(now: playout, into: $0) }
                FuzzCheck.require(result.samplesPerChannel == buffer.configuration.samplesPerFrame, "a pull gave \(result.samplesPerChannel) samples")
                FuzzCheck.require(buffer.packetsHeld <= buffer.configuration.maximumPackets, "jitter buffer holds \(buffer.packetsHeld) packets")
                continue
            }
            sequence &+= UInt16(bitPattern: Int16(Int8(bitPattern: input.byte())))
            timestamp &+= UInt32(input.byte()) * 240
            arrival += .milliseconds(Int(opcode))
            let payload = input.bytes(Int(input.byte()))
            let outcome = payload.withUnsafeBytes { buffer.insert(sequenceNumber: sequence, timestamp: timestamp, payload: $0, arrival: arrival) }
            if outcome == .accepted { accepted += 1 }
        }
        return accepted
    }
}
