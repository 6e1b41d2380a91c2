/// A malformed RTP or RTCP packet, or payload header. The receive path counts these
/// and drops the packet; they are never fatal.
///
/// Messages carry the numbers involved ("RTP packet too short: 7 < 12") and never the
/// packet's contents.
public struct PacketError: CodedError {
    /// What was wrong. New kinds may be added without breaking callers.
    public typealias Code = ErrorCode<PacketError>

    public let code: Code
    public let message: String

    public init(_ code: Code, _ message: String) {
        self.code = code
        self.message = message
    }
}

extension ErrorCode where Domain == PacketError {
    /// Fewer bytes than the fixed part of the header needs.
    public static var tooShort: Self { Self("too short") }
    /// The version field is not 2.
    public static var badVersion: Self { Self("bad version") }
    /// A length field (RTCP length, CSRC count, extension length) points past the end.
    public static var badLength: Self { Self("bad length") }
    /// The padding count is zero or larger than the payload.
    public static var badPadding: Self { Self("bad padding") }
    /// An RFC 8285 extension element is malformed.
    public static var badExtension: Self { Self("bad header extension") }
    /// A field holds a value the format forbids.
    public static var badField: Self { Self("bad field") }
    /// Well-formed, but a kind this code does not handle (an unknown RTCP type).
    public static var unsupported: Self { Self("unsupported") }
    /// An output buffer cannot hold the serialized packet.
    public static var bufferTooSmall: Self { Self("buffer too small") }
}

/// Big-endian reads and writes on raw buffers, bounds-checked by the callers' length
/// checks (each parser validates lengths before reading).
extension UnsafeRawBufferPointer {
    @inline(__always) func uint16(at offset: Int) -> UInt16 {
        UInt16(self[offset]) << 8 | UInt16(self[offset + 1])
    }

    @inline(__always) func uint24(at offset: Int) -> UInt32 {
        UInt32(self[offset]) << 16 | UInt32(self[offset + 1]) << 8 | UInt32(self[offset + 2])
    }

    @inline(__always) func uint32(at offset: Int) -> UInt32 {
        UInt32(self[offset]) << 24 | UInt32(self[offset + 1]) << 16 | UInt32(self[offset + 2]) << 8 | UInt32(self[offset + 3])
    }
}

extension UnsafeMutableRawBufferPointer {
    @inline(__always) func store(_ value: UInt16, at offset: Int) {
        self[offset] = UInt8(truncatingIfNeeded: value >> 8)
        self[offset + 1] = UInt8(truncatingIfNeeded: value)
    }

    @inline(__always) func store24(_ value: UInt32, at offset: Int) {
        self[offset] = UInt8(truncatingIfNeeded: value >> 16)
        self[offset + 1] = UInt8(truncatingIfNeeded: value >> 8)
        self[offset + 2] = UInt8(truncatingIfNeeded: value)
    }

    @inline(__always) func store(_ value: UInt32, at offset: Int) {
        self[offset] = UInt8(truncatingIfNeeded: value >> 24)
        self[offset + 1] = UInt8(truncatingIfNeeded: value >> 16)
        self[offset + 2] = UInt8(truncatingIfNeeded: value >> 8)
        self[offset + 3] = UInt8(truncatingIfNeeded: value)
    }
}
