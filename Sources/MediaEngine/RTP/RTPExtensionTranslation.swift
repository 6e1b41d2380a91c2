/// How a relayed packet's header extension IDs become its receiver's (RFC 8285): each ID
/// the sender's map gives a URI becomes the ID the receiver's map gives it; an element
/// whose URI the receiver did not negotiate, or that is erased (the sender's MID, which
/// names a media section of the sender's description, not the receiver's), becomes
/// padding: its bytes are zeroed, which both forms read as padding bytes. Rewritten in
/// place, never allocating.
///
/// IDs above 15 (two-byte form only) are erased: WebRTC peers map what they negotiate to
/// 1...14, so a map with more is not one this side made.
public struct RTPExtensionTranslation: Sendable, Hashable {
    /// Index: the sender's ID; value: the receiver's, 0 to erase.
    private var table = SIMD16<UInt8>(repeating: 0)

    /// - Parameters:
    ///   - source: The sender's map (what arrives).
    ///   - destination: The receiver's map (what it expects).
    ///   - erasing: URIs never passed on.
    public init(from source: RTPExtensionMap, to destination: RTPExtensionMap, erasing: Set<String> = [RTPExtensionMap.midURI]) {
        for (uri, id) in source.ids where (1...14).contains(id) && !erasing.contains(uri) {
            if let target = destination.id(for: uri), (1...14).contains(target) { table[Int(id)] = target }
        }
    }

    /// The receiver's ID for the sender's `id`, or nil when it is erased.
    public func destinationID(of id: UInt8) -> UInt8? {
        guard id < 16, table[Int(id)] != 0 else { return nil }
        return table[Int(id)]
    }

    /// The sender's ID that becomes the receiver's `id`, or nil.
    public func sourceID(of id: UInt8) -> UInt8? {
        guard id != 0 else { return nil }
        for source in 1..<16 where table[source] == id { return UInt8(source) }
        return nil
    }

    /// Rewrites the element list at `range` of `bytes` (a packet whose extension profile is
    /// `profile`; a non-RFC 8285 block is left alone).
    public func apply(to bytes: UnsafeMutableRawBufferPointer, range: Range<Int>, profile: UInt16) {
        guard let form = RTPHeaderExtensionForm(profile: profile) else { return }
        var offset = range.lowerBound
        while offset < range.upperBound {
            let id: UInt8
            let length: Int
            let headerSize: Int
            switch form {
            case .oneByte:
                id = bytes[offset] >> 4
                length = Int(bytes[offset] & 0x0F) + 1
                headerSize = 1
                if id == 15 { return }
            case .twoByte:
                id = bytes[offset]
                guard offset + 1 < range.upperBound else { return }
                length = Int(bytes[offset + 1])
                headerSize = 2
            }
            if id == 0 {
                offset += 1
                continue
            }
            let end = offset + headerSize + length
            guard end <= range.upperBound else { return }
            if let target = destinationID(of: id) {
                switch form {
                case .oneByte: bytes[offset] = target << 4 | bytes[offset] & 0x0F
                case .twoByte: bytes[offset] = target
                }
            } else {
                for index in offset..<end { bytes[index] = 0 }
            }
            offset = end
        }
    }
}
