/// One RFC 8285 header extension element: a local ID and its value.
public struct RTPHeaderExtension: Sendable, Hashable {
    /// 1...14 in the one-byte form, 1...255 in the two-byte form.
    public var id: UInt8
    /// 1...16 bytes in the one-byte form, 0...255 in the two-byte form.
    public var value: [UInt8]

    public init(id: UInt8, value: [UInt8]) {
        self.id = id
        self.value = value
    }
}

/// The two RFC 8285 element layouts, named by their "defined by profile" values.
public enum RTPHeaderExtensionForm: Sendable, Hashable {
    /// `0xBEDE`: 4-bit ID, 4-bit length-minus-one.
    case oneByte
    /// `0x100x`: 8-bit ID, 8-bit length.
    case twoByte

    /// The "defined by profile" value written for this form.
    public var profile: UInt16 { self == .oneByte ? 0xBEDE : 0x1000 }

    /// The form a profile value announces, or nil for a non-RFC 8285 extension.
    public init?(profile: UInt16) {
        if profile == 0xBEDE {
            self = .oneByte
        } else if profile & 0xFFF0 == 0x1000 {
            self = .twoByte
        } else {
            return nil
        }
    }
}

/// Walks RFC 8285 element lists in place.
enum RTPHeaderExtensionElements {
    /// Checks that every element fits inside `range`.
    static func validate(_ bytes: UnsafeRawBufferPointer, range: Range<Int>, profile: UInt16) throws(PacketError) {
        guard let form = RTPHeaderExtensionForm(profile: profile) else { return }
        var offset = range.lowerBound
        while offset < range.upperBound {
            let (id, length, headerSize) = element(bytes, at: offset, form: form, end: range.upperBound)
            if id == 0 && form == .oneByte || headerSize == 0 {
                offset += 1  // padding byte
                continue
            }
            if form == .oneByte && id == 15 { return }  // "stop parsing" per RFC 8285 4.2
            let end = offset + headerSize + length
            guard end <= range.upperBound else {
                throw PacketError(.badExtension,
                                  "RTP extension element \(id) of \(length) bytes at \(offset) ends at \(end), past the block end \(range.upperBound)")
            }
            offset = end
        }
    }

    /// The value of element `id`, or nil.
    static func value(id: UInt8, in bytes: UnsafeRawBufferPointer, range: Range<Int>, profile: UInt16) -> UnsafeRawBufferPointer? {
        guard let form = RTPHeaderExtensionForm(profile: profile), id != 0 else { return nil }
        var offset = range.lowerBound
        while offset < range.upperBound {
            let (elementID, length, headerSize) = element(bytes, at: offset, form: form, end: range.upperBound)
            if elementID == 0 && form == .oneByte || headerSize == 0 {
                offset += 1
                continue
            }
            if form == .oneByte && elementID == 15 { return nil }
            let start = offset + headerSize
            guard start + length <= range.upperBound else { return nil }
            if elementID == id { return UnsafeRawBufferPointer(rebasing: bytes[start..<(start + length)]) }
            offset = start + length
        }
        return nil
    }

    /// Decodes every element of a block.
    static func decode(_ bytes: UnsafeRawBufferPointer, range: Range<Int>, form: RTPHeaderExtensionForm) -> [RTPHeaderExtension] {
        var elements: [RTPHeaderExtension] = []
        var offset = range.lowerBound
        while offset < range.upperBound {
            let (id, length, headerSize) = element(bytes, at: offset, form: form, end: range.upperBound)
            if id == 0 && form == .oneByte || headerSize == 0 {
                offset += 1
                continue
            }
            if form == .oneByte && id == 15 { break }
            let start = offset + headerSize
            guard start + length <= range.upperBound else { break }
            elements.append(RTPHeaderExtension(id: id, value: Array(bytes[start..<(start + length)])))
            offset = start + length
        }
        return elements
    }

    /// ID, value length and element-header size at `offset`; a header size of 0 means a
    /// two-byte-form padding byte (ID 0).
    @inline(__always)
    private static func element(_ bytes: UnsafeRawBufferPointer, at offset: Int, form: RTPHeaderExtensionForm,
                                end: Int) -> (UInt8, Int, Int) {
        switch form {
        case .oneByte:
            let byte = bytes[offset]
            return (byte >> 4, Int(byte & 0x0F) + 1, 1)
        case .twoByte:
            let id = bytes[offset]
            if id == 0 { return (0, 0, 0) }
            // A two-byte element header cut by the block end reads as past the end.
            guard offset + 1 < end else { return (id, end, 2) }
            return (id, Int(bytes[offset + 1]), 2)
        }
    }
}
