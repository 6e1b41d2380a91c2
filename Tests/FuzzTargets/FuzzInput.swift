/// Reads a fuzz input as a sequence of small decisions and byte strings, for targets that
/// drive a state machine rather than one parser. Reading past the end yields zeros and
/// empty strings, so every input, however short, is a valid script.
struct FuzzInput {
    private let bytes: UnsafeRawBufferPointer
    private var offset = 0

    init(_ bytes: UnsafeRawBufferPointer) { self.bytes = bytes }

    /// Whether every byte has been read.
    var isAtEnd: Bool { offset >= bytes.count }

    /// The next byte, or 0 past the end.
    mutating func byte() -> UInt8 {
        guard offset < bytes.count else { return 0 }
        defer { offset += 1 }
        return bytes[offset]
    }

    /// The next two bytes, big-endian.
    mutating func uint16() -> UInt16 { UInt16(byte()) << 8 | UInt16(byte()) }

    /// The next `count` bytes (fewer at the end).
    mutating func bytes(_ count: Int) -> [UInt8] {
        let end = min(bytes.count, offset + max(0, count))
        defer { offset = end }
        return Array(bytes[offset..<end])
    }

    /// A string of bytes with a 16-bit big-endian length in front, cut at the end.
    mutating func chunk() -> [UInt8] { bytes(Int(uint16())) }

    /// Everything not read yet.
    mutating func rest() -> [UInt8] { bytes(bytes.count - offset) }
}

/// Big-endian reads of a raw buffer, for the few checks targets make on the bytes
/// themselves; the callers keep offsets inside the buffer.
extension UnsafeRawBufferPointer {
    func fuzzUInt16(at offset: Int) -> UInt16 { UInt16(self[offset]) << 8 | UInt16(self[offset + 1]) }
}
