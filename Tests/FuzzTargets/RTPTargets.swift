import MediaEngine

/// RTP packets (`RTPPacketView`, `RTPPacket`) and RFC 8285 header extensions.
enum RTPTargets {
    static let packet = FuzzTarget(
        name: "rtp",
        summary: "RTPPacketView, its extension values (IDs 0...15, 255) and CSRCs; RTPPacket gives back the bytes and parses again to itself"
    ) { bytes in
        _ = DatagramKind(bytes)
        guard let view = try? RTPPacketView(bytes) else { return false }
        checkInside(view, bytes)
        for index in 0..<view.csrcCount { _ = view.csrc(at: index) }
        for id in Array(0...15) + [255] {
            guard let value = view.extensionValue(id: UInt8(id)) else { continue }
            checkSlice(value, of: bytes, within: view.extensionRange, "extension \(id)")
        }

        let packet = RTPPacket(view)
        let serialized: [UInt8]
        do {
            serialized = try packet.serialized()
        } catch {
            FuzzCheck.require(false, "a parsed RTP packet does not serialize: \(error)")
            return true
        }
        // Padding is written as zeros with the count last; everything else comes back as it was.
        let kept = bytes.count - view.paddingLength
        FuzzCheck.require(serialized.count == bytes.count, "RTP serialized to \(serialized.count) bytes, parsed \(bytes.count)")
        FuzzCheck.require(serialized[0..<kept].elementsEqual(bytes[0..<kept]), "RTP header or payload bytes changed")
        FuzzCheck.require(view.paddingLength == 0 || serialized.last == bytes.last, "RTP padding count changed")
        let again = try? RTPPacket(parsing: serialized)
        FuzzCheck.require(again == packet, "RTP packet parses back to another value")

        if let block = packet.header.extensionBlock, let form = block.form {
            let elements = block.elements
            for element in elements {
                let value = view.extensionValue(id: element.id).map(Array.init)
                let first = elements.first { $0.id == element.id }?.value
                FuzzCheck.require(value == first, "extension \(element.id): the view and the block disagree")
            }
            // Elements re-encoded (padding dropped) decode to the same list.
            if let rebuilt = try? RTPHeaderExtensionBlock(form: form, elements: elements) {
                FuzzCheck.require(rebuilt.elements == elements, "re-encoded extension elements differ")
            }
        }
        return true
    }

    static let headerExtensions = FuzzTarget(
        name: "rtp-header-extensions",
        summary: "an RFC 8285 block from the input (profile, data): elements, values, in-place overwrite, re-encoding, and the same block inside an RTP packet"
    ) { bytes in
        var input = FuzzInput(bytes)
        let profile = input.uint16()
        var data = input.rest()
        data.removeLast(data.count % 4)
        var block = RTPHeaderExtensionBlock(profile: profile, data: data)
        let elements = block.elements
        FuzzCheck.require(elements.allSatisfy { !$0.value.isEmpty || block.form == .twoByte }, "an empty one-byte element")
        for id in 0...15 {
            let value = block.value(id: UInt8(id))
            FuzzCheck.require(value == elements.first { $0.id == id }?.value, "value(id: \(id)) disagrees with elements")
        }

        // The same block inside a packet: the view validates it and reads the same values.
        let header = RTPHeader(payloadType: 96, sequenceNumber: 1, timestamp: 2, ssrc: 3, extensionBlock: block)
        if let packet = try? RTPPacket(header: header, payload: [0xAB]).serialized(),
           let parsed = packet.withUnsafeBytes({ bytes in
               (try? RTPPacketView(bytes)).map { view in (0...15).map { view.extensionValue(id: UInt8($0)).map(Array.init) } }
           }) {
            for id in 0...15 where block.form != nil {
                FuzzCheck.require(parsed[id] == block.value(id: UInt8(id)), "extension \(id): packet view and block disagree")
            }
        }

        // Overwriting a value with as many bytes changes only that value.
        if let first = elements.first {
            let replacement = first.value.map { ~$0 }
            let replaced = replacement.withUnsafeBytes { block.overwrite(id: first.id, with: $0) }
            FuzzCheck.require(replaced, "overwrite of present extension \(first.id) refused")
            FuzzCheck.require(block.data.count == data.count, "overwrite changed the block size")
            FuzzCheck.require(block.value(id: first.id) == replacement, "overwrite of extension \(first.id) did not take")
        }
        if let form = block.form, let rebuilt = try? RTPHeaderExtensionBlock(form: form, elements: block.elements) {
            FuzzCheck.require(rebuilt.elements == block.elements, "re-encoded extension elements differ")
        }
        return !elements.isEmpty
    }

    /// The view's ranges lie in the packet, in order.
    private static func checkInside(_ view: RTPPacketView, _ bytes: UnsafeRawBufferPointer) {
        FuzzCheck.require(view.headerSize >= RTPPacketView.fixedHeaderSize + 4 * view.csrcCount, "RTP header smaller than its CSRCs")
        FuzzCheck.require(view.extensionRange.upperBound <= view.payloadRange.lowerBound, "RTP extension overlaps the payload")
        FuzzCheck.require(view.payloadRange.upperBound + view.paddingLength == bytes.count, "RTP payload and padding do not end the packet")
        FuzzCheck.require(view.payload.count == view.payloadRange.count, "RTP payload size")
    }

    /// `slice` points into `bytes` inside `range`.
    static func checkSlice(_ slice: UnsafeRawBufferPointer, of bytes: UnsafeRawBufferPointer, within range: Range<Int>, _ what: String) {
        guard let base = bytes.baseAddress else { return FuzzCheck.require(slice.isEmpty, "\(what) outside an empty input") }
        guard let start = slice.baseAddress else { return }
        let offset = start - base
        FuzzCheck.require(offset >= range.lowerBound && offset + slice.count <= range.upperBound,
                          "\(what) at \(offset)..<\(offset + slice.count) outside \(range)")
    }
}
