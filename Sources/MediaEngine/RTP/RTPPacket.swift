/// An RTP header extension block as it travels: the "defined by profile" value and the
/// data after the 4-byte extension header (a multiple of 4 bytes). Kept as raw bytes so
/// parse then serialize gives back the exact input, padding bytes included.
public struct RTPHeaderExtensionBlock: Sendable, Hashable {
    public var profile: UInt16
    /// Extension data, a multiple of 4 bytes.
    public private(set) var data: [UInt8]

    /// A block with raw data.
    /// - Precondition: `data.count` is a multiple of 4 and at most 262 140 bytes.
    public init(profile: UInt16, data: [UInt8]) {
        precondition(data.count % 4 == 0 && data.count / 4 <= 0xFFFF, "extension data must be whole 32-bit words")
        self.profile = profile
        self.data = data
    }

    /// Builds an RFC 8285 block from `elements`, zero-padded to a 32-bit boundary.
    /// - Throws: `PacketError.badExtension` when an ID or length does not fit the form.
    public init(form: RTPHeaderExtensionForm, elements: [RTPHeaderExtension]) throws(PacketError) {
        var data: [UInt8] = []
        for element in elements {
            switch form {
            case .oneByte:
                guard (1...14).contains(element.id), (1...16).contains(element.value.count) else {
                    throw PacketError(.badExtension,
                                      "one-byte extension element needs ID 1...14 and 1...16 bytes, got ID \(element.id) with \(element.value.count)")
                }
                data.append(element.id << 4 | UInt8(element.value.count - 1))
            case .twoByte:
                guard element.id >= 1, element.value.count <= 255 else {
                    throw PacketError(.badExtension,
                                      "two-byte extension element needs ID 1...255 and at most 255 bytes, got ID \(element.id) with \(element.value.count)")
                }
                data.append(element.id)
                data.append(UInt8(element.value.count))
            }
            data.append(contentsOf: element.value)
        }
        while data.count % 4 != 0 { data.append(0) }
        self.init(profile: form.profile, data: data)
    }

    /// The RFC 8285 form, or nil for another profile.
    public var form: RTPHeaderExtensionForm? { RTPHeaderExtensionForm(profile: profile) }

    /// The elements of an RFC 8285 block (empty for other profiles).
    public var elements: [RTPHeaderExtension] {
        guard let form else { return [] }
        return data.withUnsafeBytes { RTPHeaderExtensionElements.decode($0, range: 0..<$0.count, form: form) }
    }

    /// The value of element `id`, or nil.
    public func value(id: UInt8) -> [UInt8]? {
        data.withUnsafeBytes { bytes in
            RTPHeaderExtensionElements.value(id: id, in: bytes, range: 0..<bytes.count, profile: profile).map(Array.init)
        }
    }

    /// Overwrites the value of element `id` in place; allocates nothing.
    /// - Returns: false when the element is absent or its length differs.
    @discardableResult
    public mutating func overwrite(id: UInt8, with value: UnsafeRawBufferPointer) -> Bool {
        let profile = self.profile
        let start: Int? = data.withUnsafeBytes { bytes in
            guard let found = RTPHeaderExtensionElements.value(id: id, in: bytes, range: 0..<bytes.count, profile: profile),
                  found.count == value.count, let base = bytes.baseAddress, let foundBase = found.baseAddress else { return nil }
            return foundBase - base
        }
        guard let start else { return false }
        data.withUnsafeMutableBytes { bytes in
            for index in 0..<value.count { bytes[start + index] = value[index] }
        }
        return true
    }
}

/// The RTP header as a value: fixed fields, CSRCs and an optional extension block.
public struct RTPHeader: Sendable, Hashable {
    public var marker: Bool
    /// 0...127.
    public var payloadType: UInt8
    public var sequenceNumber: UInt16
    public var timestamp: UInt32
    public var ssrc: UInt32
    /// Up to 15 contributing sources.
    public var csrcs: [UInt32]
    public var extensionBlock: RTPHeaderExtensionBlock?

    public init(marker: Bool = false, payloadType: UInt8, sequenceNumber: UInt16, timestamp: UInt32, ssrc: UInt32,
                csrcs: [UInt32] = [], extensionBlock: RTPHeaderExtensionBlock? = nil) {
        self.marker = marker
        self.payloadType = payloadType
        self.sequenceNumber = sequenceNumber
        self.timestamp = timestamp
        self.ssrc = ssrc
        self.csrcs = csrcs
        self.extensionBlock = extensionBlock
    }

    /// Bytes the header occupies when serialized.
    public var size: Int { 12 + 4 * csrcs.count + (extensionBlock.map { 4 + $0.data.count } ?? 0) }

    /// Writes the header into `buffer`; allocates nothing.
    /// - Parameter padding: whether the packet this header starts carries padding (the P bit).
    /// - Returns: bytes written.
    public func serialize(into buffer: UnsafeMutableRawBufferPointer, padding: Bool = false) throws(PacketError) -> Int {
        guard csrcs.count <= 15 else { throw PacketError(.badField, "RTP header has \(csrcs.count) CSRCs, at most 15 allowed") }
        guard payloadType <= 127 else { throw PacketError(.badField, "RTP payload type \(payloadType) is above 127") }
        let size = self.size
        guard buffer.count >= size else {
            throw PacketError(.bufferTooSmall, "RTP header needs \(size) bytes, buffer has \(buffer.count)")
        }
        buffer[0] = 0x80 | (padding ? 0x20 : 0) | (extensionBlock != nil ? 0x10 : 0) | UInt8(csrcs.count)
        buffer[1] = (marker ? 0x80 : 0) | payloadType
        buffer.store(sequenceNumber, at: 2)
        buffer.store(timestamp, at: 4)
        buffer.store(ssrc, at: 8)
        var offset = 12
        for csrc in csrcs {
            buffer.store(csrc, at: offset)
            offset += 4
        }
        if let extensionBlock {
            buffer.store(extensionBlock.profile, at: offset)
            buffer.store(UInt16(extensionBlock.data.count / 4), at: offset + 2)
            offset += 4
            extensionBlock.data.withUnsafeBytes { data in
                UnsafeMutableRawBufferPointer(rebasing: buffer[offset..<(offset + data.count)]).copyMemory(from: data)
            }
            offset += extensionBlock.data.count
        }
        return offset
    }
}

/// An RTP packet that owns its bytes: header, payload and padding. Parse then serialize
/// gives the input back.
public struct RTPPacket: Sendable, Hashable {
    public var header: RTPHeader
    public var payload: [UInt8]
    /// Padding bytes to append, including the count byte (0 for none, at most 255).
    public var paddingLength: Int

    public init(header: RTPHeader, payload: [UInt8], paddingLength: Int = 0) {
        self.header = header
        self.payload = payload
        self.paddingLength = paddingLength
    }

    /// Parses and copies one packet.
    public init(parsing bytes: UnsafeRawBufferPointer) throws(PacketError) {
        let view = try RTPPacketView(bytes)
        self.init(view)
    }

    /// Parses and copies one packet.
    public init(parsing bytes: [UInt8]) throws(PacketError) {
        self = try bytes.withUnsafeBufferPointer { (buffer) throws(PacketError) in
            try RTPPacket(parsing: UnsafeRawBufferPointer(buffer))
        }
    }

    /// Copies a validated view.
    public init(_ view: RTPPacketView) {
        let block = view.extensionProfile.map {
            RTPHeaderExtensionBlock(profile: $0, data: Array(view.bytes[view.extensionRange]))
        }
        header = RTPHeader(marker: view.marker, payloadType: view.payloadType, sequenceNumber: view.sequenceNumber,
                           timestamp: view.timestamp, ssrc: view.ssrc,
                           csrcs: (0..<view.csrcCount).map { view.csrc(at: $0) }, extensionBlock: block)
        payload = Array(view.payload)
        paddingLength = view.paddingLength
    }

    /// Bytes the packet occupies when serialized.
    public var size: Int { header.size + payload.count + paddingLength }

    /// Writes the packet into `buffer`; allocates nothing.
    /// - Returns: bytes written.
    public func serialize(into buffer: UnsafeMutableRawBufferPointer) throws(PacketError) -> Int {
        guard (0...255).contains(paddingLength) else {
            throw PacketError(.badPadding, "RTP padding of \(paddingLength) bytes is outside 0...255")
        }
        guard buffer.count >= size else {
            throw PacketError(.bufferTooSmall, "RTP packet needs \(size) bytes, buffer has \(buffer.count)")
        }
        var offset = try header.serialize(into: buffer, padding: paddingLength > 0)
        payload.withUnsafeBytes { data in
            UnsafeMutableRawBufferPointer(rebasing: buffer[offset..<(offset + data.count)]).copyMemory(from: data)
        }
        offset += payload.count
        if paddingLength > 0 {
            for index in offset..<(offset + paddingLength - 1) { buffer[index] = 0 }
            buffer[offset + paddingLength - 1] = UInt8(paddingLength)
            offset += paddingLength
        }
        return offset
    }

    /// The packet's bytes.
    public func serialized() throws(PacketError) -> [UInt8] {
        var bytes = [UInt8](repeating: 0, count: size)
        let count = try bytes.withUnsafeMutableBufferPointer { (buffer) throws(PacketError) in
            try serialize(into: UnsafeMutableRawBufferPointer(buffer))
        }
        precondition(count == bytes.count)
        return bytes
    }
}
