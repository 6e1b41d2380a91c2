/// Splits encoded VP8 frames into RTP payloads (RFC 7741): a descriptor with a 15-bit
/// PictureID, then an equal share of the frame, each payload at most `maximumPayloadSize`
/// bytes. Allocates nothing: `fragments(of:)` describes the pieces and `write` copies one
/// into the caller's packet buffer.
public struct VP8Payloader: Sendable {
    /// Largest RTP payload (descriptor included). RFC 7741 leaves the choice to the
    /// sender; 1200 keeps packets under common path MTUs after SRTP and tunnel overhead.
    public let maximumPayloadSize: Int
    /// The PictureID of the next frame (15-bit, wraps).
    public private(set) var nextPictureID: UInt16
    /// TL0PICIDX of the last base-layer frame (frames with temporal layers only).
    public private(set) var tl0PictureIndex: UInt8 = 0

    /// Creates a payloader.
    /// - Precondition: `maximumPayloadSize` is at least 8 bytes.
    public init(maximumPayloadSize: Int = 1200, firstPictureID: UInt16 = 0) {
        precondition(maximumPayloadSize >= 8, "a VP8 payload needs room for a descriptor and data")
        self.maximumPayloadSize = maximumPayloadSize
        self.nextPictureID = firstPictureID & 0x7FFF
    }

    /// One RTP payload's worth of a frame.
    public struct Fragment: Sendable, Hashable {
        public var descriptor: VP8PayloadDescriptor
        /// The frame bytes this payload carries.
        public var range: Range<Int>
        /// Set the RTP marker bit on this one.
        public var isLast: Bool
        /// Descriptor plus data.
        public var payloadSize: Int { descriptor.size + range.count }
    }

    /// The fragments of one frame of `frameSize` bytes, and advances the PictureID.
    /// - Parameters:
    ///   - temporalLayer: The frame's temporal layer, when the encoder makes layers: the
    ///     descriptors then carry TID, Y (`layerSync`) and TL0PICIDX (RFC 7741).
    public mutating func fragments(frameSize: Int, nonReference: Bool = false, temporalLayer: UInt8? = nil,
                                   layerSync: Bool = false) -> Fragments {
        let pictureID = nextPictureID
        nextPictureID = (nextPictureID + 1) & 0x7FFF
        if temporalLayer == 0 { tl0PictureIndex &+= 1 }
        let template = VP8PayloadDescriptor(nonReference: nonReference, startOfPartition: true, pictureID: .long(pictureID),
                                            tl0PictureIndex: temporalLayer == nil ? nil : tl0PictureIndex,
                                            temporalLayerID: temporalLayer, layerSync: temporalLayer != nil && layerSync)
        let room = maximumPayloadSize - template.size
        let count = max(1, (frameSize + room - 1) / room)
        return Fragments(frameSize: frameSize, count: count, template: template)
    }

    /// The fragments of one frame, computed on demand.
    public struct Fragments: Sequence, Sendable {
        public let frameSize: Int
        public let count: Int
        /// The first fragment's descriptor; the others differ in S only.
        let template: VP8PayloadDescriptor

        public func makeIterator() -> Iterator {
            Iterator(fragments: self)
        }

        /// Yields the fragments in order without allocating.
        public struct Iterator: IteratorProtocol, Sendable {
            let fragments: Fragments
            var index = 0

            public mutating func next() -> Fragment? {
                let (frameSize, count) = (fragments.frameSize, fragments.count)
                guard index < count else { return nil }
                // Sizes differ by at most one byte, larger pieces first.
                let base = frameSize / count
                let extra = frameSize % count
                let start = index * base + Swift.min(index, extra)
                let length = base + (index < extra ? 1 : 0)
                defer { index += 1 }
                var descriptor = fragments.template
                descriptor.startOfPartition = index == 0
                return Fragment(descriptor: descriptor, range: start..<(start + length), isLast: index == count - 1)
            }
        }
    }

    /// Writes `fragment`'s descriptor and data from `frame` into `buffer`.
    /// - Returns: bytes written.
    public static func write(_ fragment: Fragment, of frame: UnsafeRawBufferPointer,
                             into buffer: UnsafeMutableRawBufferPointer) throws(PacketError) -> Int {
        let offset = try fragment.descriptor.serialize(into: buffer)
        guard offset + fragment.range.count <= buffer.count else {
            throw PacketError(.bufferTooSmall, "VP8 payload needs \(offset + fragment.range.count) bytes, buffer has \(buffer.count)")
        }
        UnsafeMutableRawBufferPointer(rebasing: buffer[offset..<(offset + fragment.range.count)])
            .copyMemory(from: UnsafeRawBufferPointer(rebasing: frame[fragment.range]))
        return offset + fragment.range.count
    }
}
