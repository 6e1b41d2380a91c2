/*
 Send and Data indications (RFC 8656 sections 10-11): a STUN indication with
 XOR-PEER-ADDRESS and DATA, no MESSAGE-INTEGRITY. Written and read here directly on the
 caller's buffers rather than through `STUNMessage`, which would copy the payload into an
 array: this is the per-packet path for peers without a channel.
*/
extension TURNClient {
    /// Writes a Send indication carrying `payload` to `peer`.
    static func writeSendIndication(
        _ payload: UnsafeRawBufferPointer, to peer: SocketAddress, into buffer: UnsafeMutableRawBufferPointer
    ) throws(TURNError) -> Int {
        let addressSize = peer.isIPv6 ? STUNMessage.xorAddressIPv6Size : STUNMessage.xorAddressIPv4Size
        let header = STUNMessage.headerSize
        let attributeHeader = STUNMessage.attributeHeaderSize
        let size = header + attributeHeader + addressSize + attributeHeader + STUNMessage.padded(payload.count)
        guard size - header <= STUNMessage.maximumLength else {
            throw TURNError(.bufferTooSmall, "TURN Send indication of \(payload.count) payload bytes exceeds STUN's 65535")
        }
        guard buffer.count >= size else {
            throw TURNError(.bufferTooSmall, "TURN Send indication buffer too small: \(buffer.count) < \(size)")
        }
        let id = STUNTransactionID.random()
        buffer.store(STUNMessage.MessageType.sendIndication.rawValue, at: 0)
        buffer.store(UInt16(size - header), at: 2)
        buffer.store(STUNMessage.magicCookie, at: 4)
        id.write(into: buffer, at: 8)
        var offset = header
        buffer.store(STUNMessage.Attribute.xorPeerAddressType, at: offset)
        buffer.store(UInt16(addressSize), at: offset + 2)
        STUNMessage.writeXORAddress(peer, into: buffer, at: offset + attributeHeader, transactionID: id)
        offset += attributeHeader + addressSize
        buffer.store(STUNMessage.Attribute.dataType, at: offset)
        buffer.store(UInt16(payload.count), at: offset + 2)
        offset += attributeHeader
        if !payload.isEmpty {
            UnsafeMutableRawBufferPointer(rebasing: buffer[offset..<(offset + payload.count)]).copyMemory(from: payload)
        }
        for index in (offset + payload.count)..<size { buffer[index] = 0 }
        return size
    }

    /// Reads a Data indication that `looksLikeSTUN` accepted: the peer and the DATA value's
    /// range, or nil when either attribute is missing or malformed.
    static func readDataIndication(_ bytes: UnsafeRawBufferPointer) -> (SocketAddress, Range<Int>)? {
        let transactionID = STUNTransactionID(bytes, at: 8)
        var peer: SocketAddress?
        var payload: Range<Int>?
        var offset = STUNMessage.headerSize
        while offset + STUNMessage.attributeHeaderSize <= bytes.count {
            let type = bytes.uint16(at: offset)
            let size = Int(bytes.uint16(at: offset + 2))
            let start = offset + STUNMessage.attributeHeaderSize
            guard STUNMessage.padded(size) <= bytes.count - start else { return nil }
            switch type {
            case STUNMessage.Attribute.xorPeerAddressType where peer == nil:
                let value = UnsafeRawBufferPointer(rebasing: bytes[start..<(start + size)])
                guard let address = try? STUNMessage.xorAddress(value, transactionID, name: "XOR-PEER-ADDRESS") else { return nil }
                peer = address
            case STUNMessage.Attribute.dataType where payload == nil:
                payload = start..<(start + size)
            default:
                break
            }
            offset = start + STUNMessage.padded(size)
        }
        guard let peer, let payload else { return nil }
        return (peer, payload)
    }
}
