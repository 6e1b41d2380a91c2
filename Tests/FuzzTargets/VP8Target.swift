import MediaEngine

/// The VP8 payload descriptor (RFC 7741) and frame assembly (`VideoReceiveStream`).
enum VP8Target {
    static let target = FuzzTarget(
        name: "vp8",
        summary: "VP8PayloadDescriptor parse/serialize/parse on the input, then VideoReceiveStream fed RTP packets cut from it, with time passing"
    ) { bytes in
        let parsed = checkDescriptor(bytes)
        let frames = assemble(bytes)
        return parsed || frames > 0
    }

    /// A descriptor that parses serializes to `size` bytes and parses back to itself;
    /// returns whether it parsed. (An X byte with no field flagged reads as 2 bytes but is
    /// not written, so the parsed length may exceed `size` by one.)
    private static func checkDescriptor(_ bytes: UnsafeRawBufferPointer) -> Bool {
        guard let (descriptor, length) = try? VP8PayloadDescriptor.parse(bytes) else { return false }
        FuzzCheck.require(length >= 1 && length <= bytes.count, "VP8 descriptor of \(length) bytes in \(bytes.count)")
        FuzzCheck.require(descriptor.size == length || (descriptor.size == 1 && length == 2),
                          "VP8 descriptor reads \(length) bytes but says it takes \(descriptor.size)")
        var written = [UInt8](repeating: 0, count: 8)
        let count = written.withUnsafeMutableBytes { (try? descriptor.serialize(into: $0)) ?? -1 }
        FuzzCheck.require(count == descriptor.size, "VP8 descriptor of \(descriptor.size) bytes serializes to \(count)")
        let again = written.withUnsafeBytes { try? VP8PayloadDescriptor.parse(UnsafeRawBufferPointer(rebasing: $0[0..<max(0, count)])) }
        FuzzCheck.require(again?.0 == descriptor && again?.1 == count, "VP8 descriptor parses back to another value")
        return true
    }

    /// Feeds a video receive stream as the media core does. The input is a script of
    /// records: an opcode byte, then for a packet its sequence step (signed), timestamp
    /// step and a payload (16-bit length first) which starts with the VP8 descriptor.
    /// Opcode bit 7 set: time passes (low bits, ms) and the stream is processed. Returns
    /// how many frames came out.
    private static func assemble(_ bytes: UnsafeRawBufferPointer) -> Int {
        var input = FuzzInput(bytes)
        // A small ring (the default holds 1,024 packets of 1,500 bytes, whose zeroing took
        // most of each input's time) fills sooner, which is the bound worth reaching.
        var configuration = VideoReceiveStream.Configuration()
        configuration.packetCapacity = 64
        var stream = VideoReceiveStream(configuration: configuration)
        var now = Duration.zero
        var sequence: UInt16 = 1_000
        var timestamp: UInt32 = 90_000
        var payloadBytes = 0
        var actions: [VideoReceiveStream.Action] = []
        var packet = [UInt8](repeating: 0, count: 12 + 65_535)
        var steps = 0
        while !input.isAtEnd && steps < 4_096 {
            steps += 1
            let opcode = input.byte()
            if opcode & 0x80 != 0 {
                now += .milliseconds(Int(opcode & 0x7F))
                actions.removeAll(keepingCapacity: true)
                stream.process(now: now, into: &actions)
                check(actions, stream, payloadBytes: payloadBytes)
                continue
            }
            sequence &+= UInt16(bitPattern: Int16(Int8(bitPattern: input.byte())))
            timestamp &+= UInt32(input.byte()) * 100
            let payload = input.chunk()
            let ssrc: UInt32 = opcode & 0x01 == 0 ? 0x1234 : 0x5678
            let header = RTPHeader(marker: opcode & 0x02 != 0, payloadType: 96, sequenceNumber: sequence, timestamp: timestamp, ssrc: ssrc)
            let size = packet.withUnsafeMutableBytes { buffer -> Int in
                guard let headerSize = try? header.serialize(into: buffer) else { return 0 }
                payload.withUnsafeBytes { UnsafeMutableRawBufferPointer(rebasing: buffer[headerSize...]).copyMemory(from: $0) }
                return headerSize + payload.count
            }
            packet.withUnsafeBytes { buffer in
                guard let view = try? RTPPacketView(UnsafeRawBufferPointer(rebasing: buffer[0..<size])) else { return }
                stream.insert(view, arrival: now)
                payloadBytes += payload.count
            }
            FuzzCheck.require(stream.heldPackets <= stream.configuration.packetCapacity,
                              "video stream holds \(stream.heldPackets) packets, capacity \(stream.configuration.packetCapacity)")
        }
        now += .seconds(2)
        actions.removeAll(keepingCapacity: true)
        stream.process(now: now, into: &actions)
        check(actions, stream, payloadBytes: payloadBytes)
        return stream.statistics.framesAssembled
    }

    /// No frame holds more than every payload byte that went in; NACK lists stay bounded.
    private static func check(_ actions: [VideoReceiveStream.Action], _ stream: VideoReceiveStream, payloadBytes: Int) {
        for action in actions {
            switch action {
            case .decode(let frame):
                FuzzCheck.require(frame.data.count <= payloadBytes, "a \(frame.data.count)-byte frame from \(payloadBytes) payload bytes")
            case .sendNACK(let numbers):
                let limit = stream.configuration.nack.maximumListSize
                FuzzCheck.require(!numbers.isEmpty && numbers.count <= limit, "a NACK of \(numbers.count) numbers, limit \(limit)")
            case .sendPLI, .sendFIR:
                break
            }
        }
    }
}
