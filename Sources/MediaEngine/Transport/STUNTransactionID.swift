/// The 96-bit transaction ID of a STUN message (RFC 8489 section 5): chosen at random by
/// the client and echoed in the response, which is how a response finds its request.
public struct STUNTransactionID: Sendable, Hashable, CustomStringConvertible {
    /// The ID's size on the wire.
    public static let size = 12

    /// The first 4 bytes, most significant first.
    private let high: UInt32
    /// The last 8 bytes, most significant first.
    private let low: UInt64

    private init(high: UInt32, low: UInt64) {
        self.high = high
        self.low = low
    }

    /// An ID from its 12 bytes on the wire.
    ///
    /// - Returns: `nil` unless `bytes` holds exactly 12 bytes.
    public init?(_ bytes: some Collection<UInt8>) {
        guard bytes.count == Self.size else { return nil }
        var high: UInt32 = 0
        var low: UInt64 = 0
        for (index, byte) in bytes.enumerated() {
            if index < 4 { high = high << 8 | UInt32(byte) } else { low = low << 8 | UInt64(byte) }
        }
        self.init(high: high, low: low)
    }

    /// Reads the 12 bytes at `offset`; the caller has checked they are there.
    init(_ bytes: UnsafeRawBufferPointer, at offset: Int) {
        let low = UInt64(bytes.uint32(at: offset + 4)) << 32 | UInt64(bytes.uint32(at: offset + 8))
        self.init(high: bytes.uint32(at: offset), low: low)
    }

    /// A fresh ID from the system's cryptographically secure generator, as RFC 8489
    /// section 6 asks of requests.
    public static func random() -> STUNTransactionID {
        var generator = SystemRandomNumberGenerator()
        return random(using: &generator)
    }

    /// A fresh ID from `generator` (a seeded generator gives repeatable tests).
    public static func random(using generator: inout some RandomNumberGenerator) -> STUNTransactionID {
        STUNTransactionID(high: UInt32.random(in: .min ... .max, using: &generator), low: generator.next())
    }

    /// The byte at `index` in 0..<12.
    @inline(__always) func byte(_ index: Int) -> UInt8 {
        index < 4
            ? UInt8(truncatingIfNeeded: high >> (24 - 8 * index))
            : UInt8(truncatingIfNeeded: low >> (56 - 8 * (index - 4)))
    }

    /// The 12 bytes on the wire.
    public var bytes: [UInt8] { (0..<Self.size).map(byte) }

    /// Writes the 12 bytes at `offset`; the caller has checked they fit.
    func write(into buffer: UnsafeMutableRawBufferPointer, at offset: Int) {
        buffer.store(high, at: offset)
        buffer.store(UInt32(truncatingIfNeeded: low >> 32), at: offset + 4)
        buffer.store(UInt32(truncatingIfNeeded: low), at: offset + 8)
    }

    /// 24 lowercase hex digits.
    public var description: String {
        (0..<Self.size).map { index in
            let digits = String(byte(index), radix: 16)
            return digits.count == 1 ? "0" + digits : digits
        }.joined()
    }
}
