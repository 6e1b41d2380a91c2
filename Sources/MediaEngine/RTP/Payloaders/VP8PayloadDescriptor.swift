/// The VP8 payload descriptor at the start of every VP8 RTP payload (RFC 7741 4.2).
///
/// ```
///       0 1 2 3 4 5 6 7
///      +-+-+-+-+-+-+-+-+
///      |X|R|N|S|R| PID | (REQUIRED)
///      +-+-+-+-+-+-+-+-+
/// X:   |I|L|T|K| RSV   | (OPTIONAL)
///      +-+-+-+-+-+-+-+-+
/// I:   |M| PictureID   | (OPTIONAL)
///      +-+-+-+-+-+-+-+-+
///      |   PictureID   | (second byte when M = 1)
///      +-+-+-+-+-+-+-+-+
/// L:   |   TL0PICIDX   | (OPTIONAL)
///      +-+-+-+-+-+-+-+-+
/// T/K: |TID|Y| KEYIDX  | (OPTIONAL)
///      +-+-+-+-+-+-+-+-+
/// ```
public struct VP8PayloadDescriptor: Sendable, Hashable {
    /// A PictureID in its 7- or 15-bit form.
    public enum PictureID: Sendable, Hashable {
        case short(UInt8)
        case long(UInt16)

        /// The numeric value.
        public var value: UInt16 {
            switch self {
            case .short(let id): UInt16(id)
            case .long(let id): id
            }
        }
    }

    /// N: the frame is not used as a reference; it can be dropped.
    public var nonReference: Bool
    /// S: this packet starts a VP8 partition.
    public var startOfPartition: Bool
    /// PID: the partition index, 0...7.
    public var partitionIndex: UInt8
    public var pictureID: PictureID?
    /// TL0PICIDX: running index of the base temporal layer frames.
    public var tl0PictureIndex: UInt8?
    /// TID (0...3) when T is set.
    public var temporalLayerID: UInt8?
    /// Y: layer sync bit, meaningful with `temporalLayerID`.
    public var layerSync: Bool
    /// KEYIDX (0...31) when K is set.
    public var keyIndex: UInt8?

    public init(nonReference: Bool = false, startOfPartition: Bool, partitionIndex: UInt8 = 0, pictureID: PictureID? = nil,
                tl0PictureIndex: UInt8? = nil, temporalLayerID: UInt8? = nil, layerSync: Bool = false, keyIndex: UInt8? = nil) {
        self.nonReference = nonReference
        self.startOfPartition = startOfPartition
        self.partitionIndex = partitionIndex
        self.pictureID = pictureID
        self.tl0PictureIndex = tl0PictureIndex
        self.temporalLayerID = temporalLayerID
        self.layerSync = layerSync
        self.keyIndex = keyIndex
    }

    /// Whether this packet starts a frame (S set on partition 0).
    public var startsFrame: Bool { startOfPartition && partitionIndex == 0 }

    /// Parses the descriptor at the start of `payload`.
    /// - Returns: the descriptor and its length in bytes.
    /// - Throws: `PacketError.tooShort` when a flagged field is missing.
    public static func parse(_ payload: UnsafeRawBufferPointer) throws(PacketError) -> (VP8PayloadDescriptor, Int) {
        guard payload.count >= 1 else { throw PacketError(.tooShort, "VP8 payload descriptor too short: 0 < 1") }
        let first = payload[0]
        var descriptor = VP8PayloadDescriptor(nonReference: first & 0x20 != 0, startOfPartition: first & 0x10 != 0,
                                              partitionIndex: first & 0x07)
        var offset = 1
        func need(_ count: Int, _ field: String) throws(PacketError) {
            guard offset + count <= payload.count else {
                throw PacketError(.tooShort, "VP8 payload descriptor too short for \(field): \(payload.count) < \(offset + count)")
            }
        }
        if first & 0x80 != 0 {
            try need(1, "the X byte")
            let flags = payload[offset]
            offset += 1
            if flags & 0x80 != 0 {
                try need(1, "PictureID")
                if payload[offset] & 0x80 != 0 {
                    try need(2, "the 15-bit PictureID")
                    descriptor.pictureID = .long(payload.uint16(at: offset) & 0x7FFF)
                    offset += 2
                } else {
                    descriptor.pictureID = .short(payload[offset])
                    offset += 1
                }
            }
            if flags & 0x40 != 0 {
                try need(1, "TL0PICIDX")
                descriptor.tl0PictureIndex = payload[offset]
                offset += 1
            }
            if flags & 0x30 != 0 {
                try need(1, "TID/KEYIDX")
                let byte = payload[offset]
                if flags & 0x20 != 0 {
                    descriptor.temporalLayerID = byte >> 6
                    descriptor.layerSync = byte & 0x20 != 0
                }
                if flags & 0x10 != 0 { descriptor.keyIndex = byte & 0x1F }
                offset += 1
            }
        }
        return (descriptor, offset)
    }

    /// Bytes the descriptor occupies.
    public var size: Int {
        var size = 1
        if hasExtension { size += 1 }
        switch pictureID {
        case .short: size += 1
        case .long: size += 2
        case nil: break
        }
        if tl0PictureIndex != nil { size += 1 }
        if temporalLayerID != nil || keyIndex != nil { size += 1 }
        return size
    }

    private var hasExtension: Bool {
        pictureID != nil || tl0PictureIndex != nil || temporalLayerID != nil || keyIndex != nil
    }

    /// Writes the descriptor; allocates nothing.
    /// - Returns: bytes written.
    public func serialize(into buffer: UnsafeMutableRawBufferPointer) throws(PacketError) -> Int {
        guard buffer.count >= size else {
            throw PacketError(.bufferTooSmall, "VP8 payload descriptor needs \(size) bytes, buffer has \(buffer.count)")
        }
        guard partitionIndex <= 7, (temporalLayerID ?? 0) <= 3, (keyIndex ?? 0) <= 31 else {
            throw PacketError(.badField, "VP8 descriptor field out of range (PID \(partitionIndex), TID \(temporalLayerID ?? 0), KEYIDX \(keyIndex ?? 0))")
        }
        if case .short(let id) = pictureID, id > 0x7F {
            throw PacketError(.badField, "VP8 7-bit PictureID \(id) is above 127")
        }
        if case .long(let id) = pictureID, id > 0x7FFF {
            throw PacketError(.badField, "VP8 15-bit PictureID \(id) is above 32767")
        }
        buffer[0] = (hasExtension ? 0x80 : 0) | (nonReference ? 0x20 : 0) | (startOfPartition ? 0x10 : 0) | partitionIndex
        var offset = 1
        if hasExtension {
            buffer[1] = (pictureID != nil ? 0x80 : 0) | (tl0PictureIndex != nil ? 0x40 : 0)
                | (temporalLayerID != nil ? 0x20 : 0) | (keyIndex != nil ? 0x10 : 0)
            offset = 2
            switch pictureID {
            case .short(let id):
                buffer[offset] = id
                offset += 1
            case .long(let id):
                buffer.store(0x8000 | id, at: offset)
                offset += 2
            case nil: break
            }
            if let tl0PictureIndex {
                buffer[offset] = tl0PictureIndex
                offset += 1
            }
            if temporalLayerID != nil || keyIndex != nil {
                buffer[offset] = ((temporalLayerID ?? 0) << 6) | (layerSync ? 0x20 : 0) | (keyIndex ?? 0)
                offset += 1
            }
        }
        return offset
    }
}
